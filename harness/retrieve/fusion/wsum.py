"""Weighted CombSUM of min-max normalised scores (Fox & Shaw 1994 CombSUM; Lee 1997 min-max; ranx ``wsum`` with
``norm="min-max"``).

``score(d) = sum_i w_i * minmax_i(d)``; a list that lacks ``d`` contributes 0. Names: ``w<weight in [0, 1]>`` with
exactly two inputs, the weight on the first (``w0.25`` = ``0.25 * bm25 + 0.75 * vector``; ``w0.6:bm25+mine``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from pydantic import Field

from harness.ranking import Ranking, canonical_ranking
from harness.retrieve.fusion.base import NUMBER, FusionMethod, FusionOptions, Pairs, finite, fmt
from harness.retrieve.fusion.normalize import minmax

__all__ = ["METHOD", "WSumOptions", "weighted_fusion", "wsum"]


def wsum(lists: Sequence[Pairs], weights: Sequence[float], *, depth: int | None = None) -> Ranking:
    """Weighted CombSUM of min-max normalised scores; each list is cut at ``depth``, then normalised by
    :func:`~harness.retrieve.fusion.normalize.minmax` over what is left.

    Args:
        lists: one ranked list per system (higher better).
        weights: one finite weight >= 0 per list (they need not sum to 1).
        depth: cut of each input list (``None``: whole list).

    Returns:
        ``[(id, sum_i w_i * minmax_i(id))]`` in canonical order over the union of the cut lists; a list lacking
        the id contributes 0. Scores lie in [0, sum(weights)].

    Raises:
        ValueError: ``len(weights) != len(lists)``; a negative or non-finite weight; an infinite score.
    """
    if len(weights) != len(lists):
        raise ValueError(f"wsum: {len(weights)} weights for {len(lists)} lists")
    ws = [finite("wsum weight", w) for w in weights]
    if any(w < 0 for w in ws):
        raise ValueError(f"wsum: weights must be >= 0, got {list(weights)!r}")
    parts: dict[str, list[float]] = {}
    for lst, w in zip(lists, ws, strict=True):
        for item, v in minmax(canonical_ranking(lst, depth)).items():
            parts.setdefault(item, []).append(w * v)
    return canonical_ranking((item, math.fsum(v)) for item, v in parts.items())


def weighted_fusion(bm25: Pairs, vector: Pairs, w: float, depth: int | None = None) -> Ranking:
    """``w * minmax(bm25) + (1 - w) * minmax(vector)`` (the ``w<float>`` systems), via :func:`wsum`.

    Args:
        bm25: the first list (higher better), e.g. BM25.
        vector: the second list, already oriented higher-is-better (e.g. negated Hamming distances).
        w: weight of the first list, in [0, 1].
        depth: cut of each input list.

    Raises:
        ValueError: ``w`` outside [0, 1].
    """
    wf = finite("weighted_fusion w", w)
    if not 0.0 <= wf <= 1.0:
        raise ValueError(f"weighted_fusion: w must lie in [0, 1], got {w!r}")
    return wsum([bm25, vector], [wf, 1.0 - wf], depth=depth)


class WSumOptions(FusionOptions):
    """Options of a ``w<weight>`` system: ``w``, the weight of the first input in [0, 1] (the second gets
    ``1 - w``); written in the name itself."""

    w: float = Field(ge=0, le=1, allow_inf_nan=False)


def _formula(o: WSumOptions, inputs: Sequence[str]) -> str:
    a, b = inputs
    return (
        f"score(d) = {fmt(o.w)}*minmax({a})(d) + {fmt(1.0 - o.w)}*minmax({b})(d); "
        "minmax = (s - min)/(max - min), constant list -> 1; absent = 0; each list canonical (score desc, id asc) "
        "and cut at depth [CombSUM, Fox & Shaw 1994; min-max, Lee 1997]"
    )


METHOD = FusionMethod(
    name="wsum",
    head=re.compile(rf"w({NUMBER})"),
    options=WSumOptions,
    from_head=lambda m: {"w": float(m.group(1))},
    fuse=lambda lists, o, depth: wsum(lists, [o.w, 1.0 - o.w], depth=depth),
    formula=_formula,
    params=lambda o: {"weights": [o.w, 1.0 - o.w]},
    canonical_head=lambda o: f"w{fmt(o.w)}",
    n_inputs=2,
    reference="Fox & Shaw 1994 (CombSUM); Lee 1997 (min-max); ranx fuse(method='wsum', norm='min-max')",
)
