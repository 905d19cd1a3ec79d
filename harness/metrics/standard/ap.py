"""``AP`` / ``AP@k``: average precision (ir_measures ``AP``, trec_eval ``map`` / ``map_cut_k``)."""

from __future__ import annotations

from harness.metrics.relevance import ChunkJudgement, DocumentJudgement
from harness.metrics.standard import qrels, relevant_ranks

__all__ = ["TOOLS", "ap"]

TOOLS = (
    "`(1/R) * sum_{i} i / r_i` over the ranks `r_1 < r_2 < ...` <= k of relevant ids; R = relevant ids in the "
    "qrels (not min(R, k)); without `@k`, k = the depth",
    "map_cut_k (map)",
    "AP@k (AP)",
    "map@k (map)",
)
"""``(formula, trec_eval, ir_measures, ranx)`` for ``docs/metrics.md`` (:func:`harness.metrics.standard.doc`)."""


def ap(j: DocumentJudgement | ChunkJudgement, k: int | None = None) -> float:
    """Average precision: the sum of precision at the rank of each relevant id in the top k, over |relevant|.

    ``AP@k = (1 / R) * sum_{i=1..n} i / r_i`` where ``r_1 < ... < r_n`` are the ranks <= k of relevant ids
    (rel >= 1) and ``R`` is the number of relevant ids in the qrels (not ``min(R, k)``): trec_eval ``map_cut_k``
    (``map`` without k; Buckley & Voorhees 2000), ir_measures ``AP@k``, ranx ``map@k``. 0 without relevant ids.
    Range [0, 1].
    """
    n_rel = sum(1 for v in qrels(j).values() if v >= 1)
    if not n_rel:
        return 0.0
    total = 0.0
    for i, r in enumerate(relevant_ranks(j, k), start=1):  # added in rank order, as trec_eval adds them
        total += i / r
    return total / n_rel
