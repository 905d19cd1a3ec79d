"""``P@k``: precision at k over the qrels (ir_measures ``P@k``, trec_eval ``P_k``)."""

from __future__ import annotations

from harness.metrics.relevance import ChunkJudgement, DocumentJudgement
from harness.metrics.standard import relevant_ranks

__all__ = ["TOOLS", "p"]

TOOLS = ("`|{r <= k : rel(d_r) >= 1}| / k` (k also when fewer are ranked; never clamped)", "P_k", "P@k", "precision@k")
"""``(formula, trec_eval, ir_measures, ranx)`` for ``docs/metrics.md`` (:func:`harness.metrics.standard.doc`)."""


def p(j: DocumentJudgement | ChunkJudgement, k: int) -> float:
    """Number of relevant ids (rel >= 1) in the top k, over k (also when fewer than k ids are ranked).

    ``P@k = |{r <= k : rel(d_r) >= 1}| / k``: trec_eval ``P_k``, ir_measures ``P@k``, ranx ``precision@k``. A gold
    document and its alternative both in the top k count twice (the harness's ``precision@k`` counts them once).
    """
    return len(relevant_ranks(j, k)) / k
