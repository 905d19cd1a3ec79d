"""What one question's gold set says about one ranking: gold targets, grades, alternatives, rank maps, clamping.

Every metric family (:mod:`harness.metrics.documents`, :mod:`harness.metrics.evidence`) reads one *judgement*:
the canonical ranking of one level cut at its depth, together with the gold set's targets at that level and the rank
at which each target is satisfied. :func:`question_metrics <harness.metrics.question_metrics>` builds the two
judgements of a question once and hands each family the one of its level.

Relevance (see :mod:`harness.goldset.schema`): a gold document is *satisfied* at rank r when it, or one of its
``alternatives``, is at rank r; its rank is the best (smallest) rank among itself and its alternatives. Grade 2
(the default) is *required*; grade 1 (*useful*) counts for the families that read every gold document (``mrr``,
``ndcg``, ``precision``). Alternatives do not apply to evidence chunks: an alternative document's chunks are not
evidence.

Rankings are made canonical by :func:`harness.ranking.canonical_ranking`, the project's one tie rule (score
descending, then id ascending).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from harness.goldset.schema import GoldRecord
from harness.ranking import Ranking, canonical_ranking

__all__ = [
    "ChunkJudgement",
    "Clamp",
    "DocumentJudgement",
    "GoldTargets",
    "Level",
    "credited_ranks",
    "gold_targets",
    "positive_int",
    "rank_map",
]

Level = Literal["docs", "chunks"]
"""The ranking a metric reads: ``"docs"`` (document ranking) or ``"chunks"`` (chunk ranking)."""

GoldTargets = dict[str, tuple[int, tuple[str, ...]]]
"""``{gold doc id: (grade 1 or 2, ids that satisfy it: itself, then its alternatives)}``."""


# --------------------------------------------------------------------------------------------------------------
# Gold targets and rank maps


def positive_int(name: str, value: object) -> int:
    """``value`` when it is an int >= 1 (not a bool).

    Raises:
        ValueError: anything else, naming ``name``.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    return value


def gold_targets(record: GoldRecord) -> GoldTargets:
    """``{gold doc id: (grade, ids that satisfy it: itself then its alternatives)}``, in record order.

    A gold document listed twice is merged (highest grade, union of alternatives).
    """
    out: GoldTargets = {}
    for g in record.gold_documents:
        gid = str(g.document_id)
        ids = (gid, *(str(a.document_id) for a in g.alternatives))
        if gid in out:
            grade, prev = out[gid]
            out[gid] = (max(grade, g.effective_grade), tuple(dict.fromkeys(prev + ids)))
        else:
            out[gid] = (g.effective_grade, tuple(dict.fromkeys(ids)))
    return out


def rank_map(ranking: Ranking) -> dict[str, int]:
    """``{id: rank}`` of a canonical ranking, ranks counted from 1."""
    return {item: r for r, (item, _) in enumerate(ranking, start=1)}


def credited_ranks(ranking: Ranking, targets: GoldTargets, k: int) -> list[tuple[int, str]]:
    """The one-to-one matching of ranked documents to gold documents within the top ``k``.

    Walking the ranking top-down, a document credits the highest-graded gold document it satisfies that is not yet
    credited (ties: gold id ascending); each gold document is credited once and each ranked document credits at most
    one. Without alternatives this is exactly "the relevant documents in the top k" of trec_eval; with them, a
    gold document and its alternative ranked together count once.

    Returns:
        ``[(rank, gold doc id), ...]`` in rank order.
    """
    satisfies: dict[str, list[str]] = {}
    for gid, (_, ids) in targets.items():
        for i in ids:
            satisfies.setdefault(i, []).append(gid)
    credited: set[str] = set()
    out: list[tuple[int, str]] = []
    for rank, (doc, _) in enumerate(ranking[:k], start=1):
        open_ = [g for g in satisfies.get(doc, ()) if g not in credited]
        if open_:
            gid = min(open_, key=lambda g: (-targets[g][0], g))
            credited.add(gid)
            out.append((rank, gid))
    return out


# --------------------------------------------------------------------------------------------------------------
# Judgements: what each metric family reads


@dataclass(frozen=True)
class DocumentJudgement:
    """The document ranking of one question, judged against its gold documents.

    Attributes:
        ranking: the canonical ranking cut at ``depth``, or ``None`` when the system returned no document ranking.
        targets: the gold targets (:func:`gold_targets`).
        required: ids of the required (grade 2) gold documents, in record order.
        gold_ranks: ``{gold doc id: rank of it or its best alternative within depth, or None}``.
        depth: the document depth used (after clamping to the corpus size).
    """

    ranking: Ranking | None
    targets: GoldTargets
    required: tuple[str, ...]
    gold_ranks: dict[str, int | None]
    depth: int

    @classmethod
    def of(cls, record: GoldRecord, items: Iterable[tuple[str | int, float]] | None, depth: int) -> DocumentJudgement:
        """Judge ``items`` (any order; made canonical and cut at ``depth``) against ``record``'s gold documents."""
        targets = gold_targets(record)
        required = tuple(gid for gid, (grade, _) in targets.items() if grade == 2)
        ranking = None if items is None else canonical_ranking(items, depth)
        if ranking is None:
            ranks: dict[str, int | None] = dict.fromkeys(targets)
        else:
            pos = rank_map(ranking)
            ranks = {gid: min((pos[i] for i in ids if i in pos), default=None) for gid, (_, ids) in targets.items()}
        return cls(ranking, targets, required, ranks, depth)

    def n_required_within(self, k: int) -> int:
        """Number of required gold documents satisfied within the top ``k``."""
        return sum(1 for gid in self.required if (r := self.gold_ranks[gid]) is not None and r <= k)


@dataclass(frozen=True)
class ChunkJudgement:
    """The chunk ranking of one question, judged against its evidence chunks.

    Attributes:
        ranking: the canonical ranking cut at ``depth``, or ``None`` when the system returned no chunk ranking.
        evidence: the record's distinct evidence chunk ids (``GoldRecord.evidence_chunks()``).
        gold_ranks: ``{evidence chunk id: rank within depth, or None}``.
        depth: the chunk depth used (after clamping).
    """

    ranking: Ranking | None
    evidence: tuple[str, ...]
    gold_ranks: dict[str, int | None]
    depth: int

    @classmethod
    def of(cls, record: GoldRecord, items: Iterable[tuple[str | int, float]] | None, depth: int) -> ChunkJudgement:
        """Judge ``items`` (any order; made canonical and cut at ``depth``) against ``record``'s evidence."""
        evidence = tuple(record.evidence_chunks())
        ranking = None if items is None else canonical_ranking(items, depth)
        if ranking is None:
            ranks: dict[str, int | None] = dict.fromkeys(evidence)
        else:
            pos = rank_map(ranking)
            ranks = {c: pos.get(c) for c in evidence}
        return cls(ranking, evidence, ranks, depth)


# --------------------------------------------------------------------------------------------------------------
# Clamping


@dataclass
class Clamp:
    """Cut-offs clamped to the corpus size, recorded by label (``"doc_depth"``, ``"recall@50"``...).

    Attributes:
        clamped: ``{label: cut-off actually used}`` for every cut-off that exceeded its corpus size.
    """

    clamped: dict[str, int] = field(default_factory=dict)

    def __call__(self, label: str, value: int, n: int | None) -> int:
        """``min(value, n)`` (``value`` when ``n`` is None), recording ``label`` when it was clamped."""
        if n is not None and value > n:
            self.clamped[label] = n
            return n
        return value
