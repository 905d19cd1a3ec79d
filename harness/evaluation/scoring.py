"""Scoring a run: per-question metrics, means and intervals of every system, built as the run record's models.

:func:`score_results` is the one producer of a run's ``per_question.jsonl`` rows and ``summary.json``: it builds the
pydantic models of :mod:`harness.evaluation.record` directly (:class:`~harness.evaluation.record.QuestionRow`,
:class:`~harness.evaluation.record.Summary`, :class:`~harness.evaluation.record.ClusterInfo`), whose ``counts`` and
``per_category`` sections are what :func:`harness.metrics.aggregate` returns; the record is written with the models'
own dump (:func:`harness.evaluation.runs.write_run_record`). ``run`` and ``evaluate``
(:mod:`harness.evaluation.pipeline`, which re-exports these names) call it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from harness.evaluation.choice import choose_slice
from harness.evaluation.design import design_clusters, design_info, run_clustering, run_intervals
from harness.evaluation.evidence import EvidenceResolution
from harness.evaluation.metric_choice import run_metric_ids
from harness.evaluation.record import (
    ClusterInfo,
    IntervalRecord,
    MetricSummary,
    QuestionRow,
    Rankings,
    SliceSummary,
    Summary,
)
from harness.goldset.clusters import question_clusters
from harness.goldset.io import GoldSet
from harness.goldset.schema import GoldRecord
from harness.levels import parse_level
from harness.metrics import Aggregate, ChunkExtent, Level, MetricSpec, QuestionResult, aggregate, question_metrics
from harness.retrieve.base import QueryResult
from harness.stats import satterthwaite_df
from harness.stats.design_evidence import RunDesign, design_advice, recorded_sampling

__all__ = [
    "NO_EVIDENCE_NOTE",
    "OMITTED_NOTES",
    "SCORING_FLAGS",
    "SummaryContext",
    "cluster_info",
    "cr2_df",
    "gold_clusters",
    "recorded_design",
    "score_results",
    "summarise",
]

NO_EVIDENCE_NOTE = (
    "not applicable: no question of the gold set cites evidence chunks (a documents-only set), so chunk-level "
    "metrics are undefined"
)
"""The summary note of a chunk-level metric over questions none of which cites evidence (mean ``None``, not 0)."""
OMITTED_NOTES = {
    "not_applicable": "not applicable: the chunks' word counts and offsets are unknown (external rankings scored "
    "without --corpus)",
    "no_quotes": "not applicable: no question of the slice has a located quote",
}
"""The summary note of a metric that no question of a slice has a value for, by omission reason."""


def cr2_df(cluster_labels: Sequence[str]) -> float | None:
    """Satterthwaite degrees of freedom of the CR2 interval for a mean over these clusters
    (:func:`harness.stats.satterthwaite_df`: it depends on the design only); ``None`` with fewer than 2 clusters."""
    return satterthwaite_df(list(cluster_labels))


def cluster_info(mode: str, clusters: Mapping[str, str], sampling: str = "srs") -> ClusterInfo:
    """The manifest's ``clusters`` section: ``mode``, the number of clusters, the CR2 df of the gold set
    (:func:`cr2_df`), the labels ``{qid: cluster}`` and a warning: when the design (``sampling``, a
    :class:`~harness.stats.design_evidence.RunDesign` sampling) yields fewer clusters than the coverage rule needs or
    one cluster holds most questions, the one line of :func:`~harness.stats.design_evidence.design_advice` (naming
    the design that fits imported judgements); else when df < 4 (intervals unreliable)."""
    n_cl = len(set(clusters.values()))
    df = cr2_df(list(clusters.values()))
    sizes = RunDesign.from_clusters(clusters.values()).cluster_sizes
    warning = design_advice(len(clusters), sizes, sampling)
    if warning is None and df is not None and df < 4:
        warning = (
            f"Satterthwaite df {df:.1f} < 4 ({n_cl} clusters): intervals are unreliable; "
            "add questions over other documents"
        )
    return ClusterInfo(mode=mode, n_clusters=n_cl, df=df, labels=dict(clusters), warning=warning)


@dataclass(frozen=True)
class SummaryContext:
    """What every slice summary of one run shares: the one input of :func:`summarise`.

    Attributes:
        clusters: ``{qid: cluster label}`` of every question (for a subset, the labels of the whole gold set: a
            subset is a domain of the gold set's design, :func:`gold_clusters`).
        design_source: what the sampling design is read from (:func:`harness.evaluation.design.gold_design`, duck-
            typed: an object whose ``manifest.model_extra`` holds ``design``): the gold set, or a run record's
            ``manifest.goldset`` section wrapped by :func:`recorded_design`.
        options: ``level``, ``bootstrap_reps`` and ``seed`` (a :class:`harness.evaluation.pipeline.RunOptions`, or
            a run manifest's values).
        metric_ids: the metric ids summarised, in display order.
        sampling: the run's :class:`~harness.stats.design_evidence.RunDesign` sampling (``srs`` for questions from
            documents, ``independent``, ``pps``; :func:`harness.stats.design_evidence.recorded_sampling`).
    """

    clusters: Mapping[str, str]
    design_source: Any
    options: Any
    metric_ids: list[str]
    sampling: str = "srs"


def recorded_design(run) -> SimpleNamespace:
    """The design source of a run record (:attr:`SummaryContext.design_source`): its manifest's ``goldset`` section,
    where the run recorded the gold set's design (:func:`harness.evaluation.design.design_info`)."""
    return SimpleNamespace(manifest=run.manifest.goldset)


def gold_clusters(goldset: GoldSet, mode: str | None) -> dict[str, str]:
    """``{qid: cluster}`` of the gold set's questions: the ``--clustering`` ``mode`` (``None``: the declared design's,
    :func:`harness.evaluation.design.run_clustering`; :func:`harness.goldset.clusters.question_clusters`), or the
    draws of a PPS gold set
    (:func:`harness.evaluation.design.design_clusters`). Computed on the whole gold set before a subset is cut, so a
    subset's questions keep their clusters (``run --qids`` equals ``report --qids``)."""
    return design_clusters(goldset, question_clusters(goldset.records, run_clustering(goldset, mode)))


def score_results(
    goldset: GoldSet,
    results: dict[str, dict[str, QueryResult]],
    options,
    *,
    n_docs: int | None = None,
    n_chunks: int | None = None,
    slices: dict[str, set[str]] | None = None,
    evidence: EvidenceResolution | None = None,
    extents: Mapping[str, ChunkExtent] | None = None,
    clusters: Mapping[str, str] | None = None,
) -> tuple[list[QuestionRow], Summary, ClusterInfo]:
    """Per-question metrics, summaries and intervals for every system.

    Args:
        goldset: the gold set.
        results: ``{system: {qid: QueryResult}}``; a question missing for a system scores 0 and is counted.
        options: a :class:`harness.evaluation.pipeline.RunOptions` (depths, ks, metrics, clustering, seed,
            bootstrap replicates, level).
        n_docs, n_chunks: corpus sizes (depths larger than these are clamped and recorded).
        slices: extra question subsets to summarise (``{"covered": {qid, ...}}``); ``all`` is always there.
        evidence: the located quotes (the budget family's ``E_q``); ``None``: no question has quoted evidence.
        extents: ``{chunk id: ChunkExtent}`` of the corpus; ``None``: the budget family is not applicable (its means
            are ``None`` with a note from :data:`OMITTED_NOTES`).
        clusters: ``{qid: cluster}`` of at least ``goldset``'s questions (:func:`gold_clusters` of the gold set
            before a subset was cut); ``None``: :func:`gold_clusters` of ``goldset``.

    Returns:
        ``(rows, summary, clusters)``: one :class:`~harness.evaluation.record.QuestionRow` per (system, question),
        systems in the order of ``results`` and questions in gold-set order; the
        :class:`~harness.evaluation.record.Summary` (:func:`summarise`; no ``warnings``: the caller adds its own);
        the manifest's :class:`~harness.evaluation.record.ClusterInfo` (:func:`cluster_info`).

    Raises:
        pydantic.ValidationError: a value outside its declared range (a bug: every metric lies in [0, 1]).
    """
    labels = gold_clusters(goldset, options.clustering) if clusters is None else clusters
    sampling = recorded_sampling(design_info(goldset, options.clustering).get("design"))
    ctx = SummaryContext(
        clusters={r.qid: labels[r.qid] for r in goldset.records},
        design_source=goldset,
        options=options,
        sampling=sampling,
        metric_ids=run_metric_ids(options.ks, options.metrics),
    )
    all_slices = {"all": {r.qid for r in goldset.records}, **(slices or {})}
    rows: list[QuestionRow] = []
    systems: dict[str, dict[str, SliceSummary]] = {}
    for system, per_q in results.items():
        qres: list[QuestionResult] = []
        flags: list[dict] = []
        for rec in goldset.records:
            res = per_q.get(rec.qid)
            qres.append(_question_result(ctx, rec, res, n_docs, n_chunks, evidence, extents))
            flags.append(res.flags if res is not None else {"missing": True})
            rows.append(_question_row(ctx, system, rec, qres[-1], res))
        systems[system] = summarise(qres, flags, all_slices, ctx)
    design = RunDesign.from_clusters((), sampling=sampling)
    summary = Summary(
        systems=systems, metric_ids=ctx.metric_ids, design_id=design.design_id, estimand_id=design.estimand_id
    )
    return rows, summary, cluster_info(run_clustering(goldset, options.clustering), dict(ctx.clusters), sampling)


#: The keys of a row's ``flags`` that scoring writes (:attr:`harness.metrics.QuestionResult.flags`); the others are
#: the system's own (``missing``, ``chunk_tie_at_boundary``...), whose shares the summary records.
SCORING_FLAGS = frozenset({"evaluated_docs", "evaluated_chunks", "clamped", "undefined", "omitted"})


def summarise(
    questions: Sequence[QuestionResult],
    flags: Sequence[Mapping[str, Any]],
    slices: Mapping[str, set[str]],
    ctx: SummaryContext,
) -> dict[str, SliceSummary]:
    """The one summariser: one system's :class:`~harness.evaluation.record.SliceSummary` per non-empty slice.

    ``run`` and ``evaluate`` (:func:`score_results`) and every subset view of ``report`` (``--qids``,
    ``--category``, ``--split``, unscored ``--metrics``: :func:`harness.evaluation.subset.resummarise`) call it,
    so the same questions under the same design give the same summary, field for field: means
    (:func:`harness.metrics.aggregate`), the intervals of the design (:func:`harness.evaluation.design.
    run_intervals`: Hansen-Hurwitz on a PPS gold set), the notes of a missing mean or interval and of excluded
    questions, the counts and ``flag_shares``.

    Args:
        questions: the system's metrics per question (every question it was scored on, in gold-set order).
        flags: per question, the system's flags (``{"missing": True}`` when it returned nothing; the keys of
            :data:`SCORING_FLAGS` are ignored).
        slices: ``{slice name: qids}``; a slice holding none of ``questions`` is left out.
        ctx: :class:`SummaryContext`.

    Returns:
        ``{slice name: SliceSummary}`` in the order of ``slices``.
    """
    levels: dict[Level, bool] = {
        "docs": any(q.evaluated_docs for q in questions),
        "chunks": any(q.evaluated_chunks for q in questions),
    }
    out: dict[str, SliceSummary] = {}
    for name, qids in slices.items():
        keep = [i for i, q in enumerate(questions) if q.qid in qids]
        if keep:
            sel = [questions[i] for i in keep]
            out[name] = _slice_summary(ctx, sel, [flags[i] for i in keep], levels)
    return out


def _question_result(
    ctx: SummaryContext,
    rec: GoldRecord,
    res: QueryResult | None,
    n_docs: int | None,
    n_chunks: int | None,
    evidence: EvidenceResolution | None,
    extents: Mapping[str, ChunkExtent] | None,
) -> QuestionResult:
    """The metrics of one question (:func:`harness.metrics.question_metrics`); ``res`` ``None``: nothing returned."""
    return question_metrics(
        rec,
        res.docs if res is not None else None,
        res.chunks if res is not None else None,
        metrics=ctx.metric_ids,
        doc_depth=ctx.options.doc_depth,
        chunk_depth=ctx.options.chunk_depth,
        n_docs_in_corpus=n_docs,
        n_chunks_in_corpus=n_chunks,
        quoted=evidence.quoted_evidence(rec.qid) if evidence is not None else None,
        extents=extents,
    )


def _question_row(
    ctx: SummaryContext, system: str, rec: GoldRecord, qr: QuestionResult, res: QueryResult | None
) -> QuestionRow:
    """The ``per_question.jsonl`` row: metrics, gold ranks, flags (the scoring's, then the system's; ``missing``
    when it returned nothing) and the rankings cut at the run's depths."""
    flags = {**qr.flags, **(res.flags if res is not None else {"missing": True})}
    rankings = Rankings()
    if res is not None:
        rankings = Rankings(
            document=[(i, s) for i, s in (res.docs or [])][: ctx.options.doc_depth],
            chunk=[(i, s) for i, s in (res.chunks or [])][: ctx.options.chunk_depth],
        )
    return QuestionRow(
        system=system,
        qid=rec.qid,
        category=rec.category,
        split=rec.split,
        cluster=ctx.clusters[rec.qid],
        metrics=qr.metrics,
        gold_doc_ranks=qr.gold_doc_ranks,
        gold_chunk_ranks=qr.gold_chunk_ranks,
        flags=flags,
        rankings=rankings,
    )


def _slice_summary(
    ctx: SummaryContext, sel: list[QuestionResult], flags: list[Mapping[str, Any]], levels: dict[Level, bool]
) -> SliceSummary:
    """One system over the questions ``sel`` of a slice (``flags``: the system's flags of each)."""
    # a question is "missing" when it lacks a level the system gives, not one it never gives
    measured = [m for m in ctx.metric_ids if levels[MetricSpec.parse(m).level]]
    agg = aggregate(sel, measured or ctx.metric_ids)
    cites_evidence = any(q.gold_chunk_ranks for q in sel)  # {evidence chunk: rank}
    design = RunDesign.from_clusters([ctx.clusters[q.qid] for q in sel], sampling=ctx.sampling)
    sl = SliceSummary(
        levels={parse_level(lv): given for lv, given in levels.items()},
        n_questions=len(sel),
        n_clusters=len({ctx.clusters[q.qid] for q in sel}),
        overall={m: _metric_summary(ctx, m, sel, levels, agg, cites_evidence) for m in ctx.metric_ids},
        per_category=agg.per_category,
        counts=agg.counts,
        flag_shares=_flag_shares(flags),
    )
    return choose_slice(sl, design)  # the interval shown, chosen once for the slice's design


def _metric_summary(
    ctx: SummaryContext,
    m: str,
    sel: list[QuestionResult],
    levels: dict[Level, bool],
    agg: Aggregate,
    cites_evidence: bool,
) -> MetricSummary:
    """The mean of metric ``m`` over ``sel`` (its questions that have a value) with every interval method of the
    run (:func:`harness.evaluation.design.run_intervals`; none with fewer than 2 clusters), or a mean ``None`` with
    the note saying why (:func:`_no_mean_note`)."""
    why = _no_mean_note(m, sel, levels, cites_evidence)
    if why is not None:
        return MetricSummary(mean=None, note=why)
    kept = [q for q in sel if m not in q.omitted]
    m_cl = [ctx.clusters[q.qid] for q in kept]
    notes = []
    if len(kept) < len(sel):
        notes.append(f"{len(sel) - len(kept)} of {len(sel)} questions excluded (no located quote)")
    intervals: dict[str, IntervalRecord] = {}
    if len(set(m_cl)) >= 2:
        ivs = run_intervals(ctx.design_source, [q.metrics[m] for q in kept], m_cl, ctx.options)
        intervals = {k: IntervalRecord.of(v) for k, v in ivs.items()}
    else:
        notes.append("no interval: the slice holds fewer than 2 clusters")
    return MetricSummary(mean=agg.overall[m], intervals=intervals, note="; ".join(notes) or None)


def _no_mean_note(m: str, sel: list[QuestionResult], levels: dict[Level, bool], cites_evidence: bool) -> str | None:
    """Why metric ``m`` has no mean over ``sel``, or ``None`` when it has one: a chunk-level metric of a
    documents-only set (:data:`NO_EVIDENCE_NOTE`), every question omitted it (:data:`OMITTED_NOTES`), or the system
    returned no ranking at its level."""
    level = MetricSpec.parse(m).level
    if level == "chunks" and not cites_evidence:  # a documents-only set: undefined, whatever else
        return NO_EVIDENCE_NOTE
    if all(m in q.omitted for q in sel):
        return OMITTED_NOTES[next(iter({q.omitted[m] for q in sel} - {"no_quotes"}), "no_quotes")]
    if not levels[level]:
        return "not available: the system returned no " + ("chunk" if level == "chunks" else "document") + " rankings"
    return None


def _flag_shares(flags: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Share of questions carrying each retrieval flag (e.g. ``chunk_tie_at_boundary``: the chunk ranking's cut-off
    fell inside a run of equal scores and was resolved by id; ``empty_query``; ``knn_fallback``; ``missing``)."""
    n = len(flags)
    counts: dict[str, int] = {}
    for f in flags:
        for k, v in (f or {}).items():
            if v and k not in SCORING_FLAGS:
                counts[k] = counts.get(k, 0) + 1
    return {k: c / n for k, c in sorted(counts.items())} if n else {}
