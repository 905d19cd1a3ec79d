"""``Success@k``: a relevant id in the top k (ir_measures ``Success@k``, trec_eval ``success_k``)."""

from __future__ import annotations

from harness.metrics.relevance import ChunkJudgement, DocumentJudgement
from harness.metrics.standard import relevant_ranks

__all__ = ["TOOLS", "success"]

TOOLS = ("1 if some `r <= k` has `rel(d_r) >= 1`, else 0", "success_k", "Success@k", "hit_rate@k")
"""``(formula, trec_eval, ir_measures, ranx)`` for ``docs/metrics.md`` (:func:`harness.metrics.standard.doc`)."""


def success(j: DocumentJudgement | ChunkJudgement, k: int) -> float:
    """1 if any id of the top k is relevant (rel >= 1), else 0.

    trec_eval ``success_k``, ir_measures ``Success@k``, ranx ``hit_rate@k``. The harness's ``hit@k`` asks for a
    *required* (grade 2) gold document: ``Success(rel=2)@k`` in ir_measures.
    """
    return 1.0 if relevant_ranks(j, k) else 0.0
