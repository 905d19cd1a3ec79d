"""Reciprocal rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009; ranx ``fuse(method="rrf")``).

``score(d) = sum_i 1 / (k + rank_i(d))``, ranks from 1 in each canonical, cut input list; a list that lacks ``d``
contributes 0. Names: ``rrf`` (k = 60), ``rrf:k=<number >= 0>``, with inputs ``rrf:bm25+mine`` (default
``bm25+vector``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from pydantic import Field

from harness.ranking import Ranking, canonical_ranking
from harness.retrieve.fusion.base import FusionMethod, FusionOptions, Pairs, finite, fmt

__all__ = ["METHOD", "RRFOptions", "rrf"]


def rrf(lists: Sequence[Pairs], *, k: float = 60, depth: int | None = None) -> Ranking:
    """Reciprocal rank fusion.

    Args:
        lists: one ranked list of ``(id, score)`` per system, higher score better, in any order.
        k: the RRF constant, finite and >= 0 (0 allowed: the top item then scores 1 per list).
        depth: each input list is cut to its first ``depth`` canonical entries (``None``: whole list).

    Returns:
        ``[(id, sum_i 1/(k + rank_i))]`` in canonical order, over the union of the cut lists (not cut again).
        Scores lie in (0, n_lists / (k + 1)]. Sums are ``math.fsum``, so they do not depend on list order.

    Raises:
        ValueError: ``k`` outside [0, :data:`MAX_K`] or not finite; ``depth`` negative.
        harness.errors.MetricError: a NaN score.
    """
    kf = finite("rrf k", k)
    if not 0 <= kf <= MAX_K:
        raise ValueError(f"rrf k must be in [0, {MAX_K:g}], got {k!r}")
    parts: dict[str, list[float]] = {}
    for lst in lists:
        for rank, (item, _) in enumerate(canonical_ranking(lst, depth), start=1):
            parts.setdefault(item, []).append(1.0 / (kf + rank))
    return canonical_ranking((item, math.fsum(v)) for item, v in parts.items())


MAX_K = 1e9
"""Largest RRF constant: beyond it ``1/(k + r)`` and ``1/(k + r + 1)`` stop being distinct in float64 for the ranks
a run holds, so the fused order degenerates into a count of the lists holding an id (``k = 1e308`` gave every id
the same score, exit 0). Published values are 60 (Cormack et al.) and tuned ones lie in 1..1000."""


class RRFOptions(FusionOptions):
    """Options of an ``rrf`` system: ``k``, the RRF constant (finite, in [0, :data:`MAX_K`]; default 60)."""

    k: float = Field(60.0, ge=0, le=MAX_K, allow_inf_nan=False)


def _formula(o: RRFOptions, inputs: Sequence[str]) -> str:
    return (
        f"score(d) = sum_i 1/({fmt(o.k)} + rank_i(d)) over {', '.join(inputs)}; rank_i from 1; absent = 0; "
        "each list canonical (score desc, id asc) and cut at depth [RRF, Cormack, Clarke & Buettcher 2009]"
    )


METHOD = FusionMethod(
    name="rrf",
    head=re.compile(r"rrf"),
    options=RRFOptions,
    fuse=lambda lists, o, depth: rrf(lists, k=o.k, depth=depth),
    formula=_formula,
    params=lambda o: {"k": o.k},
    canonical_head=lambda o: "rrf" if o.k == 60 else f"rrf:k={fmt(o.k)}",
    reference="Cormack, Clarke & Buettcher, SIGIR 2009; ranx fuse(method='rrf')",
)
