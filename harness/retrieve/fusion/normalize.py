"""Score normalisation of one ranked list before a score-based fusion (as ``ranx.normalization``).

Only min-max (Lee 1997) is used today; another normalisation is one more function here.
"""

from __future__ import annotations

import math

from harness.ranking import canonical_ranking
from harness.retrieve.fusion.base import Pairs

__all__ = ["minmax"]


def minmax(ranking: Pairs) -> dict[str, float]:
    """Min-max normalisation of one list's scores to [0, 1] (Lee 1997): ``(s - min) / (max - min)``.

    Args:
        ranking: ``(id, score)`` pairs, higher better (orient scores first: e.g. negated Hamming distances).
            Duplicate ids keep their best score.

    Returns:
        ``{id: normalised score}``: the best item maps to 1 and the worst to 0. A list whose scores are all
        equal, or with a single result, maps every item to 1 (ranx divides by ``max(max - min, 1e-9)`` and maps it
        to 0). Empty list: ``{}``.

    Raises:
        ValueError: an infinite score. harness.errors.MetricError: a NaN score.
    """
    ranked = canonical_ranking(ranking)
    if not ranked:
        return {}
    hi, lo = ranked[0][1], ranked[-1][1]
    if not (math.isfinite(hi) and math.isfinite(lo)):
        raise ValueError("minmax: scores must be finite")
    if hi == lo:
        return {item: 1.0 for item, _ in ranked}
    span = hi - lo
    if math.isinf(span):  # overflow of max - min: halve everything (exact up to subnormals)
        return {item: (s / 2 - lo / 2) / (hi / 2 - lo / 2) for item, s in ranked}
    return {item: (s - lo) / span for item, s in ranked}
