"""``RR`` / ``RR@k``: reciprocal rank of the first relevant id (ir_measures ``RR``, trec_eval ``recip_rank``)."""

from __future__ import annotations

from harness.metrics.relevance import ChunkJudgement, DocumentJudgement
from harness.metrics.standard import relevant_ranks

__all__ = ["TOOLS", "rr"]

TOOLS = (
    "`1 / min{r <= k : rel(d_r) >= 1}`, else 0; without `@k`, k = the depth",
    "recip_rank (of the run cut at k)",
    "RR, RR@k",
    "mrr, mrr@k",
)
"""``(formula, trec_eval, ir_measures, ranx)`` for ``docs/metrics.md`` (:func:`harness.metrics.standard.doc`)."""


def rr(j: DocumentJudgement | ChunkJudgement, k: int | None = None) -> float:
    """1 / rank of the first relevant id (rel >= 1) within the top k (the depth without k), else 0.

    ``RR = 1 / min{r <= k : rel(d_r) >= 1}``; trec_eval ``recip_rank`` of the ranking cut at k (ir_measures ``RR@k``,
    ranx ``mrr@k``). Range [0, 1].
    """
    ranks = relevant_ranks(j, k)
    return 1.0 / ranks[0] if ranks else 0.0
