"""Per-question retrieval metrics over one canonical ranking, and their means over a whole gold set.

Every metric of the project is computed here, from one canonical ranking per (system, question, level):
:func:`~harness.ranking.canonical_ranking` (score descending, then id ascending; re-exported here) is the project's
single tie rule.

The registry :data:`METRICS` maps each metric *family* to its level, whether it takes ``@k``, its compute function
(one small function per family, in :mod:`~harness.metrics.documents` and :mod:`~harness.metrics.evidence`, in the
style of ranx's ``metric_switch`` and ir_measures' registered measures) and whether run summaries include it.
:func:`question_metrics` loops over the registry; :func:`summary_metric_ids` and the named lists of
:data:`METRIC_SETS` are what every summary, table, comparison and CLI default reads. A new family is one module
plus one registry line.

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
                               Järvelin & Kekäläinen 2002). ``ndcg@10`` is the summarised one.
``precision@k``        docs    share of the top k that satisfy a gold document (grade 1 or 2), each gold document
                               counted once, divided by k (trec_eval ``P_k``; see :mod:`~harness.metrics.precision`).
                               Not summarised; available by id.
``evidence_recall@k``  chunks  share of the record's evidence chunks (``GoldRecord.evidence_chunks()``)
                               within the top k of the chunk ranking.
``evidence_mrr``       chunks  1/rank of the first evidence chunk within ``chunk_depth``, else 0.
``evidence_recall@Bw`` chunks  share of the question's quoted evidence characters covered by the longest prefix
                               of the chunk ranking that fits a budget of B words (no skipping, no truncated
                               chunk; :mod:`~harness.metrics.budget`). Comparable across chunkers; summarised at
                               B = 250, 500, 1000, 2000. A question without a located quote is excluded (no value,
                               counted); without chunk extents the family is not applicable.
=====================  ======  ==============================================================================

ir_measures names (:mod:`harness.metrics.standard`; ``summary`` false: computed when asked, ``--metrics``): ``RR``,
``RR@k``, ``AP``, ``AP@k``, ``nDCG``, ``nDCG@k``, ``P@k``, ``R@k``, ``Success@k``, ``Judged@k`` at the document level
and ``chunk.<name>`` at the chunk level, with trec_eval semantics over the record's qrels (relevant = rel >= 1; an
alternative is one more relevant document). Every formula: ``docs/metrics.md`` (:mod:`harness.metrics.catalog`).

Across chunkers: ``evidence_recall@k`` and ``evidence_mrr`` count chunks, so their values under two chunkers are
not comparable (:attr:`MetricFamily.cross_chunker` is false); every other family is.

Relevance (see :mod:`harness.metrics.relevance`): a gold document is *satisfied* at rank r when it, or one of its
``alternatives``, is at rank r; its rank is the best (smallest) rank among itself and its alternatives. Grade 2
(the default) is *required*; grade 1 (*useful*) counts for ``mrr``, ``ndcg`` and ``precision`` only. Alternatives
do not apply to evidence chunks: an alternative document's chunks are not evidence.

Undefined cases: a record with no required gold document has recall/all_hop/hit 0, one without any gold document
has precision 0, and one without evidence chunks has evidence metrics 0; all are listed in
:attr:`QuestionResult.undefined` (a validator should reject such records). A ranking of ``None`` (the system
returned nothing for that level) scores 0 on that level's metrics and is flagged as not evaluated. A cut-off
larger than the corpus is clamped to the corpus size and recorded in :attr:`QuestionResult.clamped`.

Means (:func:`aggregate`) run over the WHOLE gold set: a missing question or ranking counts 0 and is reported.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from harness.defaults import DEFAULT_CHUNK_DEPTH, DEFAULT_DOC_DEPTH, DEFAULT_KS
from harness.errors import MetricError
from harness.goldset.schema import GoldRecord
from harness.metrics import budget, documents, evidence, means, precision, standard
from harness.metrics.family import MetricFamily
from harness.metrics.means import Aggregate
from harness.metrics.quoted import ChunkExtent, QuotedEvidence
from harness.metrics.relevance import ChunkJudgement, Clamp, DocumentJudgement, Level, positive_int
from harness.metrics.standard import ap, judged, ndcg, no_relevant, p, r, rr, success
from harness.ranking import canonical_ranking

__all__ = [
    "DEFAULT_CHUNK_DEPTH",
    "DEFAULT_DOC_DEPTH",
    "DEFAULT_KS",
    "METRICS",
    "METRIC_SETS",
    "Aggregate",
    "ChunkExtent",
    "Level",
    "MetricError",
    "MetricFamily",
    "MetricSpec",
    "QuestionResult",
    "QuotedEvidence",
    "aggregate",
    "canonical_ranking",
    "outcome_of",
    "parse_metrics",
    "question_metrics",
    "register",
    "summary_metric_ids",
    "unregister",
]


# --------------------------------------------------------------------------------------------------------------
# The registry


METRICS: dict[str, MetricFamily] = {}
"""The metric registry: ``{family key: MetricFamily}`` (:attr:`MetricFamily.key`), in display order."""


def register(family: MetricFamily) -> MetricFamily:
    """Add ``family`` to :data:`METRICS` (its one declaration: compute, outcome class, documentation); adding a metric
    is one module plus one call. Raises ValueError for a key registered twice."""
    if family.key in METRICS:
        raise ValueError(f"metric family {family.key!r} registered twice")
    METRICS[family.key] = family
    return family


def unregister(key: str) -> None:
    """Remove the family ``key`` from :data:`METRICS` (a plugin's or a test's; KeyError when absent)."""
    del METRICS[key]


def outcome_of(metric: str | MetricSpec) -> str:
    """The outcome class a metric id's family declares (:attr:`MetricFamily.outcome`); ``"continuous"`` for an id
    no registered family parses (a difference, a statistic), whose values may be any real number."""
    try:
        return MetricSpec.parse(metric).family.outcome
    except MetricError:
        return "continuous"


# fmt: off
for _f in (
    MetricFamily("mrr", "docs", documents.mrr, outcome="unit", doc=documents.MRR_DOC),
    MetricFamily("recall", "docs", documents.recall, takes_k=True, undefined=documents.no_required, outcome="unit",
                 doc=documents.RECALL_DOC),
    MetricFamily("all_hop", "docs", documents.all_hop, takes_k=True, undefined=documents.no_required,
                 outcome="binary", doc=documents.ALL_HOP_DOC),
    MetricFamily("hit", "docs", documents.hit, takes_k=True, undefined=documents.no_required, outcome="binary",
                 doc=documents.HIT_DOC),
    MetricFamily("ndcg", "docs", documents.ndcg, takes_k=True, summary_ks=(10,), outcome="unit",
                 doc=documents.NDCG_DOC),
    MetricFamily("precision", "docs", precision.precision, takes_k=True, undefined=precision.no_gold, summary=False,
                 outcome="unit", doc=precision.DOC),
    MetricFamily("evidence_recall", "chunks", evidence.evidence_recall, takes_k=True, undefined=evidence.no_evidence,
                 cross_chunker=False, outcome="unit", doc=evidence.RECALL_DOC),
    MetricFamily("evidence_mrr", "chunks", evidence.evidence_mrr, undefined=evidence.no_evidence, cross_chunker=False,
                 outcome="unit", doc=evidence.MRR_DOC),
    MetricFamily("evidence_recall", "chunks", budget.evidence_recall_at_budget, takes_k=True,
                 summary_ks=budget.BUDGETS, unit="w", omitted=budget.omitted, outcome="unit", doc=budget.DOC),
    # ir_measures names, trec_eval semantics over the record's qrels (harness.metrics.standard); the chunk-level
    # form of each is "chunk." + name (chunk.AP@100)
    *(
        MetricFamily(pre + name, lv, getattr(mod, mod.__name__.rsplit(".", 1)[1]), takes_k=True,
                     undefined=no_relevant, summary=False, optional_k=opt, clamps=False, cross_chunker=lv == "docs",
                     outcome=outcome, doc=standard.doc(mod.TOOLS, chunk=lv == "chunks", judged=mod is judged))
        for name, mod, opt, outcome in (("RR", rr, True, "unit"), ("AP", ap, True, "unit"),
                                        ("nDCG", ndcg, True, "unit"), ("P", p, False, "unit"), ("R", r, False, "unit"),
                                        ("Success", success, False, "binary"), ("Judged", judged, False, "unit"))
        for pre, lv in (("", "docs"), ("chunk.", "chunks"))
    ),
):
    register(_f)
# fmt: on

_TOOL_NAMES = {"map": "AP", "map_cut": "AP", "recip_rank": "RR", "ndcg": "nDCG", "ndcg_cut": "nDCG",
               "success": "Success", "P": "P", "recall": "R"}  # fmt: skip
"""trec_eval's measure names (``-m``; with a cut-off ``name_k``: ``ndcg_cut_10``, ``P_5``) -> the ir_measures family
they are here (trec_eval semantics over the record's qrels, :mod:`harness.metrics.standard`): ``ndcg_cut_10`` ->
``nDCG@10``, ``P_5`` -> ``P@5``, ``recall_10`` -> ``R@10``, ``map_cut_100`` -> ``AP@100``, ``map`` -> ``AP``,
``recip_rank`` -> ``RR``, ``success_10`` -> ``Success@10``; never the harness's own ``ndcg@k``/``recall@k``, which
differ from trec_eval's on alternatives and graded gold. Case-sensitive, as trec_eval is."""

_OWN = {"nDCG": "ndcg", "R": "recall", "P": "precision", "RR": "mrr"}
"""The harness's own family beside an ir_measures one (they differ on alternatives and graded gold)."""
_TREC_RE = re.compile(r"(map_cut|ndcg_cut|P|recall|success)_([0-9]+)|(map|recip_rank|ndcg)")
_METRIC_RE = re.compile(r"([A-Za-z_][A-Za-z_.]*)(?:@([0-9]+)([a-z]*))?")
_NOTED: set[str] = set()


def _note(text: str) -> None:
    """One ``note:`` line on stderr, once per process for the same text (a spelling read as another id)."""
    if text in _NOTED:
        return
    _NOTED.add(text)
    from harness.terminal_safe import escape_controls

    sys.stderr.write(f"note: {escape_controls(text)}\n")


def _trec_id(text: str) -> str | None:
    """The ir_measures id of a trec_eval spelling (:data:`_TOOL_NAMES`), or None."""
    m = _TREC_RE.fullmatch(text)
    if m is None:
        return None
    if m.group(3):
        return _TOOL_NAMES[m.group(3)]
    return f"{_TOOL_NAMES[m.group(1)]}@{m.group(2)}"


def _families_named(name: str) -> list[str]:
    """Registered family names equal to ``name`` ignoring case (``MRR`` -> ``[mrr]``; ``NDCG`` -> ``[ndcg, nDCG]``)."""
    return list(dict.fromkeys(f.name for f in METRICS.values() if f.name.lower() == name.lower()))


def _suggestion(name: str) -> str:
    """``; did you mean 'mrr'?`` for an unknown family name, or ''."""
    from harness.suggest import did_you_mean

    return did_you_mean(name, [f.name for f in METRICS.values()])


@dataclass(frozen=True)
class MetricSpec:
    """One metric id such as ``recall@10`` or ``mrr``.

    Attributes:
        name: family name (the id before ``@``).
        k: the cut-off (>= 1) for families that take one, else ``None``.
        unit: the cut-off's unit suffix (``"w"``: a budget in words, ``evidence_recall@1000w``), ``""`` for a rank.
    """

    name: str
    k: int | None = None
    unit: str = ""

    def __post_init__(self) -> None:
        info = METRICS.get(f"{self.name}@{self.unit}" if self.unit else self.name)
        if info is None:
            shown = f"{self.name}@{self.k}{self.unit}" if self.unit else self.name
            tool = _TOOL_NAMES.get(self.name) or _TOOL_NAMES.get(self.name.lower())
            hint = f" (trec_eval's {self.name} is {tool} here)" if tool else _suggestion(self.name)
            raise MetricError(f"unknown metric {shown!r}{hint}; known: {_known()}")
        if info.optional_k and self.k is None:
            return
        if info.takes_k and (isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1):
            raise MetricError(f"metric {self.name!r} needs a cut-off k >= 1 ({self.name}@10), got {self.k!r}")
        if not info.takes_k and self.k is not None:
            raise MetricError(f"metric {self.name!r} takes no @k (its cut-off is the ranking depth)")

    @classmethod
    def parse(cls, text: str | MetricSpec) -> MetricSpec:
        """Parse ``"recall@10"``, ``"mrr"``... (a ``MetricSpec`` passes through).

        A trec_eval spelling is read as its ir_measures id (:data:`_TOOL_NAMES`: ``ndcg_cut_10`` -> ``nDCG@10``) and
        a family name in another case as the one family it names (``MRR`` -> ``mrr``), each with one ``note:`` line
        on stderr; a case that fits two families (``NDCG@10``: ``ndcg@10`` or ``nDCG@10``) is refused naming both.

        Raises:
            MetricError: unknown family (with the nearest known name), an ambiguous case, missing or spurious ``@k``,
                malformed text.
        """
        if isinstance(text, MetricSpec):
            return text
        raw = text.strip() if isinstance(text, str) else None
        trec = None if raw is None else _trec_id(raw)
        if trec is not None:
            own = _OWN.get(trec.split("@")[0])
            own = "" if own is None else f", not the harness's own {own}{trec[len(trec.split('@')[0]) :]}"
            _note(f"{raw} (trec_eval) is read as {trec} (ir_measures id, trec_eval semantics{own})")
            raw = trec
        m = None if raw is None else _METRIC_RE.fullmatch(raw)
        if m is None:
            raise MetricError(f"malformed metric id {text!r}; expected e.g. 'recall@10' or 'mrr'; known: {_known()}")
        name, k, unit = m.group(1), None if m.group(2) is None else int(m.group(2)), m.group(3) or ""
        if not unit and name not in METRICS:
            same = _families_named(name)
            if len(same) > 1:
                tail = "" if k is None else f"@{k}"
                opts = " or ".join(repr(f + tail) for f in same)
                raise MetricError(f"metric {raw!r} is ambiguous: {opts} (ids are case-sensitive); give one")
            if len(same) == 1:
                _note(f"{raw} is read as {same[0]}{'' if k is None else f'@{k}'} (metric ids are case-sensitive)")
                name = same[0]
        return cls(name, k, unit)

    @property
    def id(self) -> str:
        """The canonical id: ``name@k<unit>`` or ``name``."""
        return self.name if self.k is None else f"{self.name}@{self.k}{self.unit}"

    @property
    def family(self) -> MetricFamily:
        """The registry entry of the id."""
        return METRICS[f"{self.name}@{self.unit}" if self.unit else self.name]

    @property
    def level(self) -> Level:
        """``"docs"`` or ``"chunks"``: the ranking the metric reads."""
        return self.family.level

    def __str__(self) -> str:
        return self.id


def _known() -> str:
    return ", ".join(
        f"{i.name}@B{i.unit}" if i.unit else f"{i.name}[@k]" if i.optional_k else f"{i.name}@k" if i.takes_k else i.name
        for i in METRICS.values()
    )


def parse_metrics(ids: Iterable[str | MetricSpec]) -> list[MetricSpec]:
    """Parse metric ids in order, dropping repeats.

    Raises:
        MetricError: for the first unknown or malformed id.
    """
    if isinstance(ids, str | MetricSpec):
        ids = [ids]
    specs = [MetricSpec.parse(i) for i in ids]
    return list(dict.fromkeys(specs))


def summary_metric_ids(ks: Sequence[int] = DEFAULT_KS) -> list[str]:
    """The metric ids a run computes and summarises, in registry (display) order.

    Every family with ``summary`` set, at its fixed ``summary_ks`` or else at ``ks`` (in the order given);
    with the default ks: ``mrr``, ``recall@{1,5,10,20}``, ``all_hop@…``, ``hit@…``, ``ndcg@10``,
    ``evidence_recall@…``, ``evidence_mrr``, ``evidence_recall@{250,500,1000,2000}w``.
    """
    ids: list[str] = []
    for fam in METRICS.values():
        if not fam.summary:
            continue
        if fam.takes_k:
            ids += [f"{fam.name}@{k}{fam.unit}" for k in (fam.summary_ks if fam.summary_ks is not None else ks)]
        else:
            ids.append(fam.name)
    return ids


METRIC_SETS: dict[str, tuple[str, ...]] = {
    "compare": ("mrr", "recall@5", "recall@10", "all_hop@10", "evidence_recall@10", "evidence_recall@20"),
    "terminal": ("mrr", "recall@5", "recall@10", "all_hop@10"),
    "terminal_evidence": ("evidence_recall@1", "evidence_recall@5", "evidence_recall@10", "evidence_recall@20"),
    "report_table": ("mrr", "recall@5", "recall@10", "all_hop@10", "ndcg@10", "evidence_recall@10", "evidence_mrr"),
    "forest": ("mrr", "recall@10", "all_hop@10", "evidence_recall@10"),
    "budget": tuple(f"evidence_recall@{b}w" for b in budget.BUDGETS),
}
"""Named metric lists, declared once: ``compare`` (``harness compare`` and its CLI default), ``terminal`` and
``terminal_evidence`` (the run tables printed by ``harness run``), ``report_table`` (HTML and Markdown report
tables), ``forest`` (the report's paired-difference forest), ``budget`` (evidence recall at the summarised context
budgets; what ``compare`` adds to its default list when two runs differ in chunker). Each is a subset of
:func:`summary_metric_ids` at :data:`DEFAULT_KS`, so a default run summarises every metric they show."""

for _name, _ids in METRIC_SETS.items():  # fail at import, not at the first table, on a mistyped id
    parse_metrics(_ids)


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
        omitted: ``{metric id: reason}`` of the ids that have *no value* for this question (absent from
            ``metrics``): ``"no_quotes"`` (excluded from the means and counted) or ``"not_applicable"``
            (:attr:`MetricFamily.omitted`).
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
    omitted: dict[str, str] = field(default_factory=dict)

    @property
    def flags(self) -> dict:
        """``{"evaluated_docs", "evaluated_chunks"}`` plus ``"clamped"``, ``"undefined"`` and ``"omitted"``
        (``{metric id: reason}``) when not empty."""
        out: dict = {"evaluated_docs": self.evaluated_docs, "evaluated_chunks": self.evaluated_chunks}
        if self.clamped:
            out["clamped"] = dict(self.clamped)
        if self.undefined:
            out["undefined"] = list(self.undefined)
        if self.omitted:
            out["omitted"] = dict(self.omitted)
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
            "omitted": dict(self.omitted),
        }


def question_metrics(
    record: GoldRecord,
    doc_ranking: Iterable[tuple[str | int, float]] | None,
    chunk_ranking: Iterable[tuple[str | int, float]] | None,
    *,
    metrics: Iterable[str | MetricSpec] | None = None,
    doc_depth: int = DEFAULT_DOC_DEPTH,
    chunk_depth: int = DEFAULT_CHUNK_DEPTH,
    ks: Sequence[int] = DEFAULT_KS,
    n_docs_in_corpus: int | None = None,
    n_chunks_in_corpus: int | None = None,
    quoted: QuotedEvidence | None = None,
    extents: Mapping[str, ChunkExtent] | None = None,
) -> QuestionResult:
    """The metrics of one question (definitions in the module docstring), one registry family at a time.

    Both rankings are first made canonical (:func:`canonical_ranking`: duplicates keep their best score, score
    descending then id ascending), then cut at their depth, so the input order of the pairs does not matter.

    Args:
        record: the gold record.
        doc_ranking: ``(doc_id, score)`` pairs, higher better; ``None`` when the system returned nothing
            (all document metrics 0, ``evaluated_docs=False``). An empty list is a ranking with no hit.
        chunk_ranking: ``(chunk_id, score)`` pairs, or ``None`` (evidence metrics 0, ``evaluated_chunks=False``).
        metrics: the metric ids to compute (any registered family, e.g. ``["precision@5"]``); ``None``: the run
            summary's ids, :func:`summary_metric_ids` at ``ks``.
        doc_depth: document cut-off (>= 1), also the cut-off of ``mrr``.
        chunk_depth: chunk cut-off (>= 1), also the cut-off of ``evidence_mrr``.
        ks: with ``metrics=None``: cut-offs of the families summarised at the run's ks (sorted, repeats dropped).
        n_docs_in_corpus: when given, document cut-offs above it are clamped to it (and recorded).
        n_chunks_in_corpus: the same for chunk cut-offs.
        quoted: the record's quoted evidence characters (the budget family, :mod:`~harness.metrics.budget`);
            ``None`` or empty: the question has no located quote and is excluded from that family.
        extents: ``{chunk id: ChunkExtent}`` of at least the ranked chunks; ``None``: the budget family is not
            applicable (its ids are omitted with reason ``"not_applicable"``).

    Returns:
        A :class:`QuestionResult`; every metric lies in [0, 1]; ``metrics`` keeps the order of the ids, less the
        omitted ones (:attr:`QuestionResult.omitted`).

    Raises:
        ValueError: a depth, k or corpus size is not an int >= 1, or a metric's k exceeds the depth of its level
            (a budget in words is not bounded by the depth).
        MetricError: an unknown metric id; a score is NaN; a ranked chunk without an extent (budget family).
    """
    doc_depth = positive_int("doc_depth", doc_depth)
    chunk_depth = positive_int("chunk_depth", chunk_depth)
    if metrics is None:
        specs = parse_metrics(summary_metric_ids(sorted({positive_int("k", k) for k in ks})))
    else:
        specs = parse_metrics(metrics)
    depths: dict[Level, int] = {"docs": doc_depth, "chunks": chunk_depth}
    for s in specs:
        if s.k is not None and not s.unit and s.k > depths[s.level]:
            name = "doc_depth" if s.level == "docs" else "chunk_depth"
            raise ValueError(f"metric {s.id}: k={s.k} exceeds {name}={depths[s.level]}")
    n_docs = None if n_docs_in_corpus is None else positive_int("n_docs_in_corpus", n_docs_in_corpus)
    n_chunks = None if n_chunks_in_corpus is None else positive_int("n_chunks_in_corpus", n_chunks_in_corpus)
    corpus_size: dict[Level, int | None] = {"docs": n_docs, "chunks": n_chunks}

    clamp = Clamp()
    docs = DocumentJudgement.of(record, doc_ranking, clamp("doc_depth", doc_depth, n_docs))
    chunks = ChunkJudgement.of(
        record, chunk_ranking, clamp("chunk_depth", chunk_depth, n_chunks), quoted=quoted, extents=extents
    )
    judged: dict[Level, DocumentJudgement | ChunkJudgement] = {"docs": docs, "chunks": chunks}

    values: dict[str, float] = {}
    undefined: list[str] = []
    omitted: dict[str, str] = {}
    for s in specs:
        fam = s.family
        j = judged[fam.level]
        why = fam.omitted(j) if fam.omitted is not None else None
        if why is not None:
            omitted[s.id] = why
            continue
        k = None if s.k is None else s.k if fam.unit or not fam.clamps else clamp(s.id, s.k, corpus_size[fam.level])
        values[s.id] = 0.0 if j.ranking is None else fam.compute(j, k)
        if fam.undefined is not None and fam.undefined(j):
            undefined.append(s.id)

    return QuestionResult(
        qid=record.qid,
        category=record.category,
        metrics=values,
        evaluated_docs=docs.ranking is not None,
        evaluated_chunks=chunks.ranking is not None,
        doc_depth=docs.depth,
        chunk_depth=chunks.depth,
        clamped=clamp.clamped,
        gold_doc_ranks=docs.gold_ranks,
        gold_chunk_ranks=chunks.gold_ranks,
        undefined=tuple(undefined),
        omitted=omitted,
    )


# --------------------------------------------------------------------------------------------------------------
# Means over the gold set


def aggregate(
    results: Sequence[QuestionResult],
    metric_ids: Iterable[str | MetricSpec],
    *,
    gold: Iterable[GoldRecord] | None = None,
) -> Aggregate:
    """Means of per-question metrics over the whole gold set, overall and per category.

    A question counts as *evaluated* when every ranking level the requested metrics read (docs, chunks) was
    given; otherwise it is *missing* and its metrics (0) still count in the means. With ``gold``, a gold
    question that has no result at all also counts 0 and is missing. A metric *omitted* for a question
    (:attr:`QuestionResult.omitted`: excluded, e.g. no located quote, or not applicable) has no value there: its
    mean runs over the other questions, and is ``None`` (absent from a category's ``metrics``) when none has one.

    Args:
        results: one :class:`QuestionResult` per question (qids distinct).
        metric_ids: ids such as ``"mrr"``, ``"recall@10"`` (or :class:`MetricSpec`); each must be present in
            every result's ``metrics``.
        gold: optional: the whole gold set; ``results`` must then be a subset of it.

    Returns:
        An :class:`~harness.metrics.means.Aggregate` (the run summary's own sections, :mod:`harness.metrics.means`):
        ``overall`` ``{id: mean or None}``, ``per_category`` ``{category: CategorySummary}`` and ``counts``
        (``n_questions``, ``n_evaluated``, ``n_missing``, ``missing_qids``, ``by_level`` keyed ``document`` /
        ``chunk``, ``undefined`` ``{id: [qids]}``, ``omitted`` ``{id: {reason: [qids]}}``). Means are
        ``math.fsum(values) / n``; categories are in the eval v4 order, then any others sorted.

    Raises:
        MetricError: unknown metric id, a metric absent from a result, duplicate qids, a result not in ``gold``,
            or no question at all.
    """
    specs = parse_metrics(metric_ids)
    ids = [s.id for s in specs]
    levels: list[Level] = [lv for lv in ("docs", "chunks") if any(s.level == lv for s in specs)]
    return means.aggregate_ids(results, ids, levels, gold=gold)
