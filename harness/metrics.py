"""Per-question retrieval metrics over one canonical ranking, and their means over a whole gold set.

Every metric of the project is computed here, from one canonical ranking per (system, question, level):
:func:`canonical_ranking` (score descending, then id ascending) is the project's single tie rule.

Metric ids (used in tables, JSON and the gate; parsed by :class:`MetricSpec`):

=====================  ======  ==============================================================================
id                     level   definition (rank counted from 1 in the canonical ranking, cut at the depth)
=====================  ======  ==============================================================================
``mrr``                docs    1/rank of the first document that satisfies any gold document (grade 1 or 2)
                               within ``doc_depth``, else 0 (trec_eval ``recip_rank`` with a cut-off).
``recall@k``           docs    share of *required* gold documents (grade 2) satisfied within the top k.
``all_hop@k``          docs    1 if every required gold document is satisfied within the top k, else 0.
``hit@k``              docs    1 if any required gold document is satisfied within the top k, else 0.
``ndcg@k``             docs    graded nDCG with gain = grade and a log2(rank + 1) discount, the ideal built
                               from the gold grades (trec_eval ``ndcg_cut``: gain = rel, not 2^rel - 1;
                               Järvelin & Kekäläinen 2002). ``ndcg@10`` is the reported one.
``evidence_recall@k``  chunks  share of the record's evidence chunks (``GoldRecord.evidence_chunks()``)
                               within the top k of the chunk ranking.
``evidence_mrr``       chunks  1/rank of the first evidence chunk within ``chunk_depth``, else 0.
=====================  ======  ==============================================================================

Relevance (see :mod:`harness.goldset.schema`): a gold document is *satisfied* at rank r when it, or one of its
``alternatives``, is at rank r; its rank is the best (smallest) rank among itself and its alternatives. Grade 2
(the default) is *required*; grade 1 (*useful*) counts for ``mrr`` and ``ndcg`` only. Alternatives do not apply
to evidence chunks: an alternative document's chunks are not evidence.

Undefined cases: a record with no required gold document has recall/all_hop/hit 0, and one without evidence
chunks has evidence metrics 0; both are listed in :attr:`QuestionResult.undefined` (a validator should reject
such records). A ranking of ``None`` (the system returned nothing for that level) scores 0 on that level's
metrics and is flagged as not evaluated. A cut-off larger than the corpus is clamped to the corpus size and
recorded in :attr:`QuestionResult.clamped`.

Means (:func:`aggregate`) run over the WHOLE gold set: a missing question or ranking counts 0 and is reported.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from harness.errors import MetricError
from harness.goldset.schema import CATEGORIES, GoldRecord
from harness.ranking import canonical_ranking

__all__ = [
    "DEFAULT_KS",
    "METRICS",
    "MetricError",
    "MetricInfo",
    "MetricSpec",
    "QuestionResult",
    "aggregate",
    "canonical_ranking",
    "parse_metrics",
    "question_metrics",
]

_Ranking = list[tuple[str, float]]
Level = Literal["docs", "chunks"]

DEFAULT_KS: tuple[int, ...] = (1, 5, 10, 20)
"""Cut-offs of recall@k, all_hop@k, hit@k and evidence_recall@k computed by default."""


# --------------------------------------------------------------------------------------------------------------
# Metric ids


@dataclass(frozen=True)
class MetricInfo:
    """A metric family of the registry: its level, whether it takes ``@k``, and a one-line definition."""

    name: str
    level: Level
    takes_k: bool
    description: str


METRICS: dict[str, MetricInfo] = {
    m.name: m
    for m in (
        MetricInfo("mrr", "docs", False, "1/rank of the first document satisfying any gold document, within doc_depth"),
        MetricInfo("recall", "docs", True, "share of required gold documents satisfied in the top k"),
        MetricInfo("all_hop", "docs", True, "1 if every required gold document is satisfied in the top k"),
        MetricInfo("hit", "docs", True, "1 if any required gold document is satisfied in the top k"),
        MetricInfo("ndcg", "docs", True, "graded nDCG (gain = grade, log2 discount), trec_eval ndcg_cut"),
        MetricInfo("evidence_recall", "chunks", True, "share of evidence chunks in the top k of the chunk ranking"),
        MetricInfo("evidence_mrr", "chunks", False, "1/rank of the first evidence chunk, within chunk_depth"),
    )
}
"""The metric registry: ``{family name: MetricInfo}``."""

_METRIC_RE = re.compile(r"([a-z_]+)(?:@([0-9]+))?")


@dataclass(frozen=True)
class MetricSpec:
    """One metric id such as ``recall@10`` or ``mrr``.

    Attributes:
        name: family name, a key of :data:`METRICS`.
        k: the cut-off (>= 1) for families that take one, else ``None``.
    """

    name: str
    k: int | None = None

    def __post_init__(self) -> None:
        info = METRICS.get(self.name)
        if info is None:
            raise MetricError(f"unknown metric {self.name!r}; known: {_known()}")
        if info.takes_k and (isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1):
            raise MetricError(f"metric {self.name!r} needs a cut-off k >= 1 ({self.name}@10), got {self.k!r}")
        if not info.takes_k and self.k is not None:
            raise MetricError(f"metric {self.name!r} takes no @k (its cut-off is the ranking depth)")

    @classmethod
    def parse(cls, text: str | MetricSpec) -> MetricSpec:
        """Parse ``"recall@10"``, ``"mrr"``... (a ``MetricSpec`` passes through).

        Raises:
            MetricError: unknown family, missing or spurious ``@k``, malformed text.
        """
        if isinstance(text, MetricSpec):
            return text
        m = _METRIC_RE.fullmatch(text.strip()) if isinstance(text, str) else None
        if m is None:
            raise MetricError(f"malformed metric id {text!r}; expected e.g. 'recall@10' or 'mrr'; known: {_known()}")
        return cls(m.group(1), None if m.group(2) is None else int(m.group(2)))

    @property
    def id(self) -> str:
        """The canonical id: ``name@k`` or ``name``."""
        return self.name if self.k is None else f"{self.name}@{self.k}"

    @property
    def level(self) -> Level:
        """``"docs"`` or ``"chunks"``: the ranking the metric reads."""
        return METRICS[self.name].level

    def __str__(self) -> str:
        return self.id


def _known() -> str:
    return ", ".join(f"{n}@k" if i.takes_k else n for n, i in METRICS.items())


def parse_metrics(ids: Iterable[str | MetricSpec]) -> list[MetricSpec]:
    """Parse metric ids in order, dropping repeats.

    Raises:
        MetricError: for the first unknown or malformed id.
    """
    if isinstance(ids, str | MetricSpec):
        ids = [ids]
    specs = [MetricSpec.parse(i) for i in ids]
    return list(dict.fromkeys(specs))


# --------------------------------------------------------------------------------------------------------------
# Per-question metrics


@dataclass(frozen=True)
class QuestionResult:
    """The metrics of one question for one system.

    Attributes:
        qid: question id (``GoldRecord.qid``).
        category: the record's category.
        metrics: ``{metric id: value in [0, 1]}`` (``mrr``, ``recall@k``, ``all_hop@k``, ``hit@k``, ``ndcg@k``,
            ``evidence_recall@k``, ``evidence_mrr``); metric ids keep the requested k even when it was clamped.
        evaluated_docs: a document ranking was given (``False``: doc metrics are 0 and the question is missing).
        evaluated_chunks: a chunk ranking was given (``False``: evidence metrics are 0).
        doc_depth: the document depth used, after clamping to the corpus size.
        chunk_depth: the chunk depth used, after clamping.
        clamped: ``{metric id or "doc_depth"/"chunk_depth": cut-off actually used}`` for every cut-off that
            exceeded the corpus size.
        gold_doc_ranks: ``{gold doc id: rank of it or its best alternative within doc_depth, or None}``.
        gold_chunk_ranks: ``{evidence chunk id: rank within chunk_depth, or None}``.
        undefined: metric ids set to 0 because they are undefined for this record (no required gold document,
            no evidence chunk).
    """

    qid: str
    category: str
    metrics: dict[str, float]
    evaluated_docs: bool
    evaluated_chunks: bool
    doc_depth: int
    chunk_depth: int
    clamped: dict[str, int] = field(default_factory=dict)
    gold_doc_ranks: dict[str, int | None] = field(default_factory=dict)
    gold_chunk_ranks: dict[str, int | None] = field(default_factory=dict)
    undefined: tuple[str, ...] = ()

    @property
    def flags(self) -> dict:
        """``{"evaluated_docs", "evaluated_chunks"}`` plus ``"clamped"`` and ``"undefined"`` when not empty."""
        out: dict = {"evaluated_docs": self.evaluated_docs, "evaluated_chunks": self.evaluated_chunks}
        if self.clamped:
            out["clamped"] = dict(self.clamped)
        if self.undefined:
            out["undefined"] = list(self.undefined)
        return out

    def evaluated(self, level: Level) -> bool:
        """Whether the ranking of ``level`` was given."""
        return self.evaluated_docs if level == "docs" else self.evaluated_chunks

    def to_dict(self) -> dict:
        """A JSON-ready dict (a copy)."""
        return {
            "qid": self.qid,
            "category": self.category,
            "metrics": dict(self.metrics),
            "evaluated_docs": self.evaluated_docs,
            "evaluated_chunks": self.evaluated_chunks,
            "doc_depth": self.doc_depth,
            "chunk_depth": self.chunk_depth,
            "clamped": dict(self.clamped),
            "gold_doc_ranks": dict(self.gold_doc_ranks),
            "gold_chunk_ranks": dict(self.gold_chunk_ranks),
            "undefined": list(self.undefined),
        }


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    return value


def _gold_targets(record: GoldRecord) -> dict[str, tuple[int, tuple[str, ...]]]:
    """``{gold doc id: (grade, ids that satisfy it: itself then its alternatives)}``.

    A gold document listed twice is merged (highest grade, union of alternatives).
    """
    out: dict[str, tuple[int, tuple[str, ...]]] = {}
    for g in record.gold_documents:
        gid = str(g.document_id)
        ids = (gid, *(str(a.document_id) for a in g.alternatives))
        if gid in out:
            grade, prev = out[gid]
            out[gid] = (max(grade, g.effective_grade), tuple(dict.fromkeys(prev + ids)))
        else:
            out[gid] = (g.effective_grade, tuple(dict.fromkeys(ids)))
    return out


def _dcg(gains: Iterable[tuple[int, float]]) -> float:
    """sum of gain / log2(rank + 1) over ``(rank, gain)``."""
    return math.fsum(g / math.log2(r + 1) for r, g in gains)


def _ndcg(ranking: _Ranking, targets: dict[str, tuple[int, tuple[str, ...]]], k: int) -> float:
    """Graded nDCG@k; each gold document is credited once, and each ranked document credits at most one.

    Walking the ranking top-down, a document credits the highest-graded gold document it satisfies that is not
    yet credited (ties: gold id ascending). Without alternatives this is trec_eval ``ndcg_cut_k``; with them it
    stays <= 1 (the credited gains sit at distinct ranks, so their DCG is at most the ideal one).
    """
    satisfies: dict[str, list[str]] = {}
    for gid, (_, ids) in targets.items():
        for i in ids:
            satisfies.setdefault(i, []).append(gid)
    credited: set[str] = set()
    gains: list[tuple[int, float]] = []
    for rank, (doc, _) in enumerate(ranking[:k], start=1):
        open_ = [g for g in satisfies.get(doc, ()) if g not in credited]
        if open_:
            gid = min(open_, key=lambda g: (-targets[g][0], g))
            credited.add(gid)
            gains.append((rank, float(targets[gid][0])))
    ideal = sorted((grade for grade, _ in targets.values()), reverse=True)[:k]
    idcg = _dcg(enumerate(map(float, ideal), start=1))
    return _dcg(gains) / idcg if idcg > 0 else 0.0


def question_metrics(
    record: GoldRecord,
    doc_ranking: Iterable[tuple[str | int, float]] | None,
    chunk_ranking: Iterable[tuple[str | int, float]] | None,
    *,
    doc_depth: int = 50,
    chunk_depth: int = 200,
    ks: Sequence[int] = DEFAULT_KS,
    ndcg_ks: Sequence[int] = (10,),
    n_docs_in_corpus: int | None = None,
    n_chunks_in_corpus: int | None = None,
) -> QuestionResult:
    """All metrics of one question (definitions in the module docstring).

    Both rankings are first made canonical (:func:`canonical_ranking`: duplicates keep their best score, score
    descending then id ascending), then cut at their depth, so the input order of the pairs does not matter.

    Args:
        record: the gold record.
        doc_ranking: ``(doc_id, score)`` pairs, higher better; ``None`` when the system returned nothing
            (all document metrics 0, ``evaluated_docs=False``). An empty list is a ranking with no hit.
        chunk_ranking: ``(chunk_id, score)`` pairs, or ``None`` (evidence metrics 0, ``evaluated_chunks=False``).
        doc_depth: document cut-off (>= 1), also the cut-off of ``mrr``.
        chunk_depth: chunk cut-off (>= 1), also the cut-off of ``evidence_mrr``.
        ks: cut-offs of recall/all_hop/hit/evidence_recall; each must be <= doc_depth and <= chunk_depth.
        ndcg_ks: cut-offs of ndcg (each <= doc_depth).
        n_docs_in_corpus: when given, document cut-offs above it are clamped to it (and recorded).
        n_chunks_in_corpus: the same for chunk cut-offs.

    Returns:
        A :class:`QuestionResult`; every metric lies in [0, 1].

    Raises:
        ValueError: a depth, k or corpus size is not an int >= 1, or a k exceeds its depth.
        MetricError: a score is NaN.
    """
    doc_depth = _positive_int("doc_depth", doc_depth)
    chunk_depth = _positive_int("chunk_depth", chunk_depth)
    ks = sorted({_positive_int("k", k) for k in ks})
    ndcg_ks = sorted({_positive_int("ndcg k", k) for k in ndcg_ks})
    for k in ks:
        if k > doc_depth or k > chunk_depth:
            raise ValueError(f"k={k} exceeds doc_depth={doc_depth} or chunk_depth={chunk_depth}")
    for k in ndcg_ks:
        if k > doc_depth:
            raise ValueError(f"ndcg k={k} exceeds doc_depth={doc_depth}")
    n_docs = None if n_docs_in_corpus is None else _positive_int("n_docs_in_corpus", n_docs_in_corpus)
    n_chunks = None if n_chunks_in_corpus is None else _positive_int("n_chunks_in_corpus", n_chunks_in_corpus)

    clamped: dict[str, int] = {}

    def clamp(label: str, value: int, n: int | None) -> int:
        if n is not None and value > n:
            clamped[label] = n
            return n
        return value

    qid = record.qid
    metrics: dict[str, float] = {}
    undefined: list[str] = []

    # Documents.
    targets = _gold_targets(record)
    required = [gid for gid, (grade, _) in targets.items() if grade == 2]
    d_depth = clamp("doc_depth", doc_depth, n_docs)
    docs = None if doc_ranking is None else canonical_ranking(doc_ranking, d_depth)
    if docs is None:
        gold_doc_ranks: dict[str, int | None] = dict.fromkeys(targets)
    else:
        pos = {doc: r for r, (doc, _) in enumerate(docs, start=1)}
        gold_doc_ranks = {
            gid: min((pos[i] for i in ids if i in pos), default=None) for gid, (_, ids) in targets.items()
        }
    found = [r for r in gold_doc_ranks.values() if r is not None]
    metrics["mrr"] = 1.0 / min(found) if found else 0.0
    for k in ks:
        ke = clamp(f"recall@{k}", k, n_docs)
        if ke != k:
            clamped[f"all_hop@{k}"] = clamped[f"hit@{k}"] = ke
        n_in = sum(1 for gid in required if (r := gold_doc_ranks[gid]) is not None and r <= ke)
        metrics[f"recall@{k}"] = n_in / len(required) if required else 0.0
        metrics[f"all_hop@{k}"] = 1.0 if required and n_in == len(required) else 0.0
        metrics[f"hit@{k}"] = 1.0 if n_in > 0 else 0.0
        if not required:
            undefined += [f"recall@{k}", f"all_hop@{k}", f"hit@{k}"]
    for k in ndcg_ks:
        ke = clamp(f"ndcg@{k}", k, n_docs)
        metrics[f"ndcg@{k}"] = 0.0 if docs is None else _ndcg(docs, targets, ke)

    # Chunks.
    evidence = record.evidence_chunks()
    c_depth = clamp("chunk_depth", chunk_depth, n_chunks)
    chunks = None if chunk_ranking is None else canonical_ranking(chunk_ranking, c_depth)
    if chunks is None:
        gold_chunk_ranks: dict[str, int | None] = dict.fromkeys(evidence)
    else:
        cpos = {c: r for r, (c, _) in enumerate(chunks, start=1)}
        gold_chunk_ranks = {c: cpos.get(c) for c in evidence}
    for k in ks:
        ke = clamp(f"evidence_recall@{k}", k, n_chunks)
        n_in = sum(1 for r in gold_chunk_ranks.values() if r is not None and r <= ke)
        metrics[f"evidence_recall@{k}"] = n_in / len(evidence) if evidence else 0.0
        if not evidence:
            undefined.append(f"evidence_recall@{k}")
    cfound = [r for r in gold_chunk_ranks.values() if r is not None]
    metrics["evidence_mrr"] = 1.0 / min(cfound) if cfound else 0.0
    if not evidence:
        undefined.append("evidence_mrr")

    return QuestionResult(
        qid=qid,
        category=record.category,
        metrics=metrics,
        evaluated_docs=docs is not None,
        evaluated_chunks=chunks is not None,
        doc_depth=d_depth,
        chunk_depth=c_depth,
        clamped=clamped,
        gold_doc_ranks=gold_doc_ranks,
        gold_chunk_ranks=gold_chunk_ranks,
        undefined=tuple(undefined),
    )


# --------------------------------------------------------------------------------------------------------------
# Means over the gold set


def _category_order(cats: Iterable[str]) -> list[str]:
    present = set(cats)
    return [c for c in CATEGORIES if c in present] + sorted(present - set(CATEGORIES))


def aggregate(
    results: Sequence[QuestionResult],
    metric_ids: Iterable[str | MetricSpec],
    *,
    gold: Iterable[GoldRecord] | None = None,
) -> dict:
    """Means of per-question metrics over the whole gold set, overall and per category.

    A question counts as *evaluated* when every ranking level the requested metrics read (docs, chunks) was
    given; otherwise it is *missing* and its metrics (0) still count in the means. With ``gold``, a gold
    question that has no result at all also counts 0 and is missing.

    Args:
        results: one :class:`QuestionResult` per question (qids distinct).
        metric_ids: ids such as ``"mrr"``, ``"recall@10"`` (or :class:`MetricSpec`); each must be present in
            every result's ``metrics``.
        gold: optional: the whole gold set; ``results`` must then be a subset of it.

    Returns:
        ``{"metrics": [ids], "n_questions", "n_evaluated", "n_missing", "missing_qids": [...],
        "by_level": {level: {"n_evaluated", "n_missing"}}, "overall": {id: mean},
        "per_category": {category: {"n_questions", "n_evaluated", "n_missing", "metrics": {id: mean}}},
        "undefined": {id: [qids]}}``. Means are ``math.fsum(values) / n``; categories are in the eval v4 order,
        then any others sorted.

    Raises:
        MetricError: unknown metric id, a metric absent from a result, duplicate qids, a result not in ``gold``,
            or no question at all.
    """
    specs = parse_metrics(metric_ids)
    ids = [s.id for s in specs]
    levels: list[Level] = [lv for lv in ("docs", "chunks") if any(s.level == lv for s in specs)]

    rows: dict[str, tuple[str, dict[str, float], dict[str, bool], tuple[str, ...]]] = {}
    for res in results:
        if res.qid in rows:
            raise MetricError(f"aggregate: question {res.qid!r} has more than one result")
        absent = [i for i in ids if i not in res.metrics]
        if absent:
            raise MetricError(
                f"aggregate: question {res.qid!r}: metric {absent[0]} was not computed "
                f"(computed: {', '.join(res.metrics)})"
            )
        rows[res.qid] = (
            res.category,
            {i: res.metrics[i] for i in ids},
            {lv: res.evaluated(lv) for lv in levels},
            res.undefined,
        )
    if gold is not None:
        gold_ids: dict[str, str] = {}
        for rec in gold:
            gold_ids[rec.qid] = rec.category
        extra = [q for q in rows if q not in gold_ids]
        if extra:
            raise MetricError(f"aggregate: question {extra[0]!r} has a result but is not in the gold set")
        for q, cat in gold_ids.items():
            if q not in rows:
                rows[q] = (cat, dict.fromkeys(ids, 0.0), dict.fromkeys(levels, False), ())
            elif rows[q][0] != cat:
                raise MetricError(f"aggregate: question {q!r}: category {rows[q][0]!r} differs from gold {cat!r}")
    if not rows:
        raise MetricError("aggregate: no questions to aggregate")

    def summary(qids: list[str]) -> dict:
        evaluated = [q for q in qids if all(rows[q][2].values())]
        return {
            "n_questions": len(qids),
            "n_evaluated": len(evaluated),
            "n_missing": len(qids) - len(evaluated),
            "metrics": {i: math.fsum(rows[q][1][i] for q in qids) / len(qids) for i in ids},
        }

    all_q = list(rows)
    top = summary(all_q)
    by_cat: dict[str, list[str]] = {}
    for q in all_q:
        by_cat.setdefault(rows[q][0], []).append(q)
    return {
        "metrics": ids,
        "n_questions": top["n_questions"],
        "n_evaluated": top["n_evaluated"],
        "n_missing": top["n_missing"],
        "missing_qids": [q for q in all_q if not all(rows[q][2].values())],
        "by_level": {
            lv: {
                "n_evaluated": sum(1 for q in all_q if rows[q][2][lv]),
                "n_missing": sum(1 for q in all_q if not rows[q][2][lv]),
            }
            for lv in levels
        },
        "overall": top["metrics"],
        "per_category": {c: summary(by_cat[c]) for c in _category_order(by_cat)},
        "undefined": {i: qs for i in ids if (qs := [q for q in all_q if i in rows[q][3]])},
    }
