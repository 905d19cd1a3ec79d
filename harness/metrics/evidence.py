"""Evidence (chunk-level) metric families: one function each, ``(judgement, k) -> value in [0, 1]``.

Each reads a :class:`~harness.metrics.relevance.ChunkJudgement` (the canonical chunk ranking cut at the chunk depth,
with the rank of each evidence chunk, ``GoldRecord.evidence_chunks()``) and a cut-off ``k`` already clamped to the
corpus's chunk count (``None`` for ``evidence_mrr``). Alternatives do not apply: an alternative document's chunks
are not evidence. Registered in :data:`harness.metrics.METRICS`.
"""

from __future__ import annotations

from harness.metrics.family import MetricDoc
from harness.metrics.relevance import ChunkJudgement

__all__ = ["MRR_DOC", "RECALL_DOC", "evidence_mrr", "evidence_recall", "no_evidence"]

RECALL_DOC = MetricDoc(
    "`|evidence chunks within the top k of the chunk ranking| / |evidence chunks|`",
    "the record's evidence chunks (`GoldRecord.evidence_chunks()`); grades and alternatives do not apply",
    "0, undefined (a documents-only gold set: mean `None` with a note)",
    "recall_k (chunk qrels)",
    "R@k (chunk qrels) = chunk.R@k",
    "recall@k",
    "none on the chunk exports; counts chunks, so not comparable across chunkers",
)
MRR_DOC = MetricDoc(
    "`1 / min rank` of an evidence chunk within the chunk depth, else 0",
    "evidence chunks only",
    "0, undefined",
    "recip_rank (chunk qrels)",
    "RR (chunk qrels) = chunk.RR",
    "mrr",
    "none on the chunk exports; counts chunks, so not comparable across chunkers",
)


def no_evidence(j: ChunkJudgement) -> bool:
    """Undefined-case test of the evidence families: the record cites no evidence chunk."""
    return not j.evidence


def evidence_recall(j: ChunkJudgement, k: int) -> float:
    """Share of the record's evidence chunks within the top k of the chunk ranking; 0 without evidence.

    trec_eval ``recall_k`` with the evidence chunks as the relevant set.
    """
    n_in = sum(1 for r in j.gold_ranks.values() if r is not None and r <= k)
    return n_in / len(j.evidence) if j.evidence else 0.0


def evidence_mrr(j: ChunkJudgement, k: int | None = None) -> float:
    """1/rank of the first evidence chunk within the chunk depth, else 0 (trec_eval ``recip_rank``; ``k`` unused)."""
    found = [r for r in j.gold_ranks.values() if r is not None]
    return 1.0 / min(found) if found else 0.0
