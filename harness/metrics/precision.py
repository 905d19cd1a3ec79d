"""precision@k: the share of the top k documents that satisfy a gold document.

trec_eval ``P_k`` at relevance level 1 (every gold document, grade 1 or 2, is relevant), with the project's two
conventions made explicit:

* **alternatives** — a ranked document counts when it satisfies a gold document (it is the gold document or one
  of its ``alternatives``), through the same one-to-one matching as nDCG
  (:func:`~harness.metrics.relevance.credited_ranks`): each gold document is counted once, so a gold document and
  its alternative both in the top k count 1, not 2. Without alternatives this is exactly trec_eval's count of
  relevant documents in the top k;
* **denominator** — always k, also when the ranking holds fewer than k documents (as trec_eval); only a k larger
  than the corpus is clamped to the corpus size (the project's clamping rule, recorded in ``clamped``), where
  trec_eval would still divide by k.

Ties are broken by the project's tie rule (id ascending), trec_eval's by id descending. Not in the run summary;
available by id (``precision@5``) to every verb that takes metric ids.
"""

from __future__ import annotations

from harness.metrics.family import MetricDoc
from harness.metrics.relevance import DocumentJudgement, credited_ranks

__all__ = ["DOC", "no_gold", "precision"]

DOC = MetricDoc(
    "`|credited ranks <= k| / k`: ranked documents satisfying a gold document (grade 1 or 2), each gold document "
    "counted once; k clamped to the corpus size",
    "grades 1 and 2 count; a gold document and its alternative both ranked count once",
    "0, undefined",
    "P_k",
    "P@k",
    "precision@k",
    "with alternatives the tools count both; k above the corpus size: the harness divides by the corpus size; "
    "`P@k` is the tools' measure",
)


def no_gold(j: DocumentJudgement) -> bool:
    """Undefined-case test of precision: the record has no gold document at all."""
    return not j.targets


def precision(j: DocumentJudgement, k: int) -> float:
    """Share of the top k documents that satisfy a gold document, each gold document counted once (trec_eval P_k).

    Args:
        j: the judged document ranking.
        k: the cut-off (>= 1, already clamped to the corpus size).

    Returns:
        ``|credited ranks <= k| / k`` in [0, 1]; 0 for a missing ranking.
    """
    if j.ranking is None:
        return 0.0
    return len(credited_ranks(j.ranking, j.targets, k)) / k
