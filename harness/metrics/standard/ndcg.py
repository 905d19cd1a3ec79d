"""``nDCG`` / ``nDCG@k``: graded nDCG over the qrels (ir_measures ``nDCG``, trec_eval ``ndcg`` / ``ndcg_cut_k``)."""

from __future__ import annotations

import math

from harness.metrics.relevance import ChunkJudgement, DocumentJudgement
from harness.metrics.standard import qrels, top

__all__ = ["TOOLS", "ndcg"]

TOOLS = (
    "`DCG@k / IDCG@k`, `DCG@k = sum_{r <= k} rel(d_r) / log2(r + 1)` (gain = rel, not 2^rel - 1), the "
    "ideal = every qrels rel in descending order cut at k; without `@k`, the whole ranking and every rel",
    "ndcg_cut_k (ndcg)",
    "nDCG@k (nDCG)",
    "ndcg@k (ndcg)",
)
"""``(formula, trec_eval, ir_measures, ranx)`` for ``docs/metrics.md`` (:func:`harness.metrics.standard.doc`)."""


def ndcg(j: DocumentJudgement | ChunkJudgement, k: int | None = None) -> float:
    """DCG of the top k over the DCG of the ideal ranking of the qrels cut at k, gain = rel, discount log2(rank + 1).

    ``DCG@k = sum_{r <= k} rel(d_r) / log2(r + 1)``; ``nDCG@k = DCG@k / IDCG@k`` where the ideal lists every
    qrels rel in descending order (without k: all of them). trec_eval ``ndcg_cut_k`` / ``ndcg`` (gain = rel, not
    ``2^rel - 1``; Järvelin & Kekäläinen 2002), ir_measures ``nDCG@k``, ranx ``ndcg@k``. Every occurrence of a
    relevant id earns its gain (an alternative too, unlike the harness's ``ndcg@k``). 0 without relevant ids.
    """
    rel = qrels(j)
    ideal = sorted((v for v in rel.values() if v > 0), reverse=True)
    idcg = _dcg(ideal if k is None else ideal[:k])
    return _dcg([rel.get(i, 0) for i in top(j, k)]) / idcg if idcg > 0 else 0.0


def _dcg(gains: list[int]) -> float:
    """``sum gain_r / log2(r + 1)``, added in rank order as trec_eval adds it (so the float result is the same)."""
    total = 0.0
    for r, g in enumerate(gains, start=1):
        if g:
            total += g / math.log2(r + 1)
    return total
