"""``R@k``: recall at k over the qrels (ir_measures ``R@k``, trec_eval ``recall_k``)."""

from __future__ import annotations

from harness.metrics.relevance import ChunkJudgement, DocumentJudgement
from harness.metrics.standard import qrels, relevant_ranks

__all__ = ["TOOLS", "r"]

TOOLS = ("`|{r <= k : rel(d_r) >= 1}| / R`", "recall_k", "R@k", "recall@k")
"""``(formula, trec_eval, ir_measures, ranx)`` for ``docs/metrics.md`` (:func:`harness.metrics.standard.doc`)."""


def r(j: DocumentJudgement | ChunkJudgement, k: int) -> float:
    """Number of relevant ids (rel >= 1) in the top k over the number of relevant ids in the qrels; 0 without any.

    ``R@k = |{r <= k : rel(d_r) >= 1}| / R``: trec_eval ``recall_k`` at ``-l 1``, ir_measures ``R@k``, ranx
    ``recall@k``. Useful (grade 1) documents and every alternative are relevant, so it differs from the harness's
    ``recall@k`` (required documents, each satisfied once through any alternative).
    """
    n_rel = sum(1 for v in qrels(j).values() if v >= 1)
    return len(relevant_ranks(j, k)) / n_rel if n_rel else 0.0
