"""Document-level metric families: one function each, ``(judgement, k) -> value in [0, 1]``.

Each reads a :class:`~harness.metrics.relevance.DocumentJudgement` (the canonical document ranking cut at the
document depth, with the rank at which each gold document is satisfied) and a cut-off ``k`` already clamped to the
corpus size (``None`` for the families without ``@k``). A missing ranking (``None``) scores 0: the registry loop
does not call them for it. Registered in :data:`harness.metrics.METRICS`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from harness.metrics.family import MetricDoc
from harness.metrics.relevance import DocumentJudgement, credited_ranks

__all__ = [
    "ALL_HOP_DOC",
    "HIT_DOC",
    "MRR_DOC",
    "NDCG_DOC",
    "RECALL_DOC",
    "all_hop",
    "hit",
    "mrr",
    "ndcg",
    "no_required",
]

_ALT = "a gold document is satisfied at the best rank of itself and its alternatives"
_ALT_OWN = _ALT + "; grade 2 (required) only counts"

MRR_DOC = MetricDoc(
    "`1 / min rank` of a document satisfying any gold document (grade 1 or 2) within the document depth, else 0",
    "grades 1 and 2 both count; " + _ALT,
    "0",
    "recip_rank",
    "RR",
    "mrr",
    "none on the exports (an alternative is relevant in the qrels too, so the first relevant rank is the same)",
)
RECALL_DOC = MetricDoc(
    "`|required gold documents satisfied within the top k| / |required|`",
    _ALT_OWN,
    "0, undefined (no required gold document)",
    "recall_k at -l 2",
    "R(rel=2)@k",
    "recall@k-l2",
    "with alternatives the tools count each alternative as one more relevant document (docs/rankings.md); "
    "`R@k` is the ir_measures measure (rel >= 1, alternatives as documents)",
)
ALL_HOP_DOC = MetricDoc(
    "1 if every required gold document is satisfied within the top k, else 0",
    _ALT_OWN,
    "0, undefined",
    "- (recall_k at -l 2 = 1)",
    "- (R(rel=2)@k = 1)",
    "-",
    "from the tools' recall it would need every alternative too",
)
HIT_DOC = MetricDoc(
    "1 if any required gold document is satisfied within the top k, else 0",
    _ALT_OWN,
    "0, undefined",
    "success_k at -l 2",
    "Success(rel=2)@k",
    "hit_rate@k-l2",
    "none on the exports; `Success@k` is the ir_measures measure at rel >= 1",
)
NDCG_DOC = MetricDoc(
    "`DCG@k / IDCG@k`, gain = grade (not 2^grade - 1), discount `log2(r + 1)`; each gold document credited once "
    "at the rank of its best satisfier (one ranked document credits at most one gold document); the ideal from "
    "the gold grades",
    "grades are the gains; an alternative earns its gold document's gain once",
    "0, undefined",
    "ndcg_cut_k",
    "nDCG@k",
    "ndcg@k",
    "with alternatives the tools credit every relevant document found and build the ideal over the alternatives "
    "too; `nDCG@k` is that measure",
)


def no_required(j: DocumentJudgement) -> bool:
    """Undefined-case test of recall/all_hop/hit: the record has no required (grade 2) gold document."""
    return not j.required


def mrr(j: DocumentJudgement, k: int | None = None) -> float:
    """1/rank of the first document that satisfies any gold document (grade 1 or 2) within the depth, else 0.

    trec_eval ``recip_rank`` with the ranking cut at the document depth (``k`` is unused: the depth is the cut-off).
    """
    found = [r for r in j.gold_ranks.values() if r is not None]
    return 1.0 / min(found) if found else 0.0


def recall(j: DocumentJudgement, k: int) -> float:
    """Share of required (grade 2) gold documents satisfied within the top k; 0 without required ones.

    trec_eval ``recall_k`` at relevance level 2 (apart from alternatives and the tie rule).
    """
    return j.n_required_within(k) / len(j.required) if j.required else 0.0


def all_hop(j: DocumentJudgement, k: int) -> float:
    """1 if every required gold document is satisfied within the top k, else 0 (0 without required ones)."""
    return 1.0 if j.required and j.n_required_within(k) == len(j.required) else 0.0


def hit(j: DocumentJudgement, k: int) -> float:
    """1 if any required gold document is satisfied within the top k, else 0 (success@k at relevance level 2)."""
    return 1.0 if j.n_required_within(k) > 0 else 0.0


def _dcg(gains: Iterable[tuple[int, float]]) -> float:
    """sum of gain / log2(rank + 1) over ``(rank, gain)``."""
    return math.fsum(g / math.log2(r + 1) for r, g in gains)


def ndcg(j: DocumentJudgement, k: int) -> float:
    """Graded nDCG@k: gain = grade, discount log2(rank + 1), the ideal built from the gold grades.

    trec_eval ``ndcg_cut_k`` (gain = rel, not 2^rel - 1; Järvelin & Kekäläinen 2002). Each gold document is credited
    once and each ranked document credits at most one (:func:`~harness.metrics.relevance.credited_ranks`), so with
    alternatives it stays <= 1 (the credited gains sit at distinct ranks, so their DCG is at most the ideal one).
    """
    if j.ranking is None:
        return 0.0
    gains = [(rank, float(j.targets[gid][0])) for rank, gid in credited_ranks(j.ranking, j.targets, k)]
    ideal = sorted((grade for grade, _ in j.targets.values()), reverse=True)[:k]
    idcg = _dcg(enumerate(map(float, ideal), start=1))
    return _dcg(gains) / idcg if idcg > 0 else 0.0
