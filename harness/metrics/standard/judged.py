"""``Judged@k``: the share of the top k that the qrels judge (ir_measures ``Judged@k``)."""

from __future__ import annotations

from harness.metrics.relevance import ChunkJudgement, DocumentJudgement
from harness.metrics.standard import qrels, top

__all__ = ["TOOLS", "judged"]

TOOLS = (
    "ids of the top k present in the qrels over `min(k, ranked)`; 0 for an empty ranking (the qrels "
    "hold relevant ids only)",
    "-",
    "Judged@k",
    "-",
)
"""``(formula, trec_eval, ir_measures, ranx)`` for ``docs/metrics.md`` (:func:`harness.metrics.standard.doc`)."""


def judged(j: DocumentJudgement | ChunkJudgement, k: int) -> float:
    """Ids of the top k present in the qrels, over ``min(k, ranking length)``; 0 for an empty ranking.

    ir_measures ``Judged@k`` (its ``judged`` provider, after OpenNIR; not in trec_eval). The harness's qrels list
    relevant ids only (gold documents, alternatives, evidence chunks; no judged non-relevant ones), so here it is
    the share of relevant ids among the ranked top k; a measure of how much of a ranking the gold set can speak to.
    """
    ids = top(j, k)
    if not ids:
        return 0.0
    rel = qrels(j)
    return sum(1 for i in ids if i in rel) / len(ids)
