"""What a report shows, read from files only: :class:`ReportData` built by :func:`build_report`.

Inputs are run records (:func:`harness.evaluation.runs.load_run`, typed and range-checked), optionally a known-item
output folder (``summary.json``, ``per_document.jsonl``; :mod:`harness.studies.known_item`) and a coverage study
(``coverage.json``; :mod:`harness.studies.coverage`), so any past run can be reported again without re-running
retrieval. The gold set is read (best effort) from the path the run recorded, for question texts and quotes only.
This layer computes no statistics: the recorded summaries give the means and intervals of every system, and
:mod:`harness.evaluation.compare` gives every other number (:func:`~harness.evaluation.compare.category_intervals`,
:func:`~harness.evaluation.compare.paired_table`), the same numbers ``harness compare`` and ``harness gate`` print.
What is left here is selection and shaping for the renderers (:mod:`harness.report.html`, ``report.markdown``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import HarnessInputError
from harness.evaluation.changes import changes_across_runs
from harness.evaluation.chunkers import chunkers_differ, metrics_across_chunkers
from harness.evaluation.compare import CategoryInterval, PairedRow, category_intervals, paired_table
from harness.evaluation.pairing import check_split
from harness.evaluation.record import MetricSummary, QuestionRow, SliceSummary
from harness.evaluation.runs import RunRecord, check_comparable, load_run
from harness.evaluation.subset import restrict_split
from harness.goldset.schema import CATEGORIES
from harness.io import read_json, read_jsonl, sha256_file
from harness.metrics import DEFAULT_KS, METRIC_SETS, outcome_of
from harness.relpath import shown_path
from harness.stats.design_evidence import RunDesign
from harness.stats.shown import ShownIntervals
from harness.studies.coverage.catalog import METHODS as COVERAGE_METHODS

#: Metrics of the systems table (those every system summarises are shown).
TABLE_METRICS = METRIC_SETS["report_table"]
#: Metrics of the forest plot / paired table.
FOREST_METRICS = METRIC_SETS["forest"]
#: The cut-offs of the depth curves when a run records none.


@dataclass
class Entry:
    """One system of one run, as shown in the report.

    Attributes:
        label: unique display name (the system name, or ``run_id:system`` for every system when a name repeats
            across runs).
        run: the run record.
        system: the system name inside the run.
    """

    label: str
    run: RunRecord
    system: str

    @property
    def summary(self) -> dict[str, SliceSummary]:
        """The system's summaries by slice (``{"all": ..., "covered": ...}``)."""
        return self.run.system_summary(self.system)

    def overall(self, metric: str, slice_name: str = "all") -> MetricSummary | None:
        """A metric over a slice; ``None`` when absent or not available (no ranking at the metric's level)."""
        sl = self.summary.get(slice_name)
        return None if sl is None else sl.metric(metric)

    def rows(self) -> list[QuestionRow]:
        """Per-question rows of this system."""
        return self.run.rows(self.system)


@dataclass
class ReportData:
    """Everything the HTML and Markdown renderers show.

    Attributes:
        runs: loaded run records (first = reference for comparability and question order).
        entries: systems of all runs in order.
        baseline: the entry paired differences are taken against (``None`` with a single system).
        margin, alpha, gate_metric: the non-inferiority gate's margin (metric units), one-sided alpha and metric.
        level: two-sided interval level of the tables (from the first run, 0.95 by default).
        categories: categories present, eval v4 order first.
        category_info: ``{category: {"n": questions, "n_clusters": clusters}}``.
        category_values: ``{(label, category, metric): CategoryInterval}`` (CR2 per category, from compare).
        paired: :class:`~harness.evaluation.compare.PairedRow` per candidate and metric.
        paired_note: why there is no forest plot, when there is none.
        gold: ``{qid: gold record dict}`` read from the recorded gold-set path, or ``None``.
        gold_note: where the gold set was read from, or why not.
        known_item: ``{"path", "summary", "per_document"}`` or ``None``.
        coverage: ``{"path", "data"}`` (``coverage.json``) or ``None``.
        notes: warnings shown at the top.
        split: ``all``, ``dev`` or ``test``: the questions every figure is over (:func:`build_report`).
        changes: ``[("<baseline run> → <run>", [change dicts])]``: the configuration changes from the baseline's
            run to each other run (:func:`harness.evaluation.changes.changes_across_runs`).
    """

    runs: list[RunRecord]
    entries: list[Entry]
    baseline: Entry | None
    margin: float
    alpha: float
    gate_metric: str
    level: float
    categories: list[str]
    category_info: dict[str, dict]
    category_values: dict[tuple[str, str, str], CategoryInterval]
    paired: list[PairedRow]
    paired_note: str
    gold: dict[str, dict] | None
    gold_note: str
    known_item: dict | None = None
    coverage: dict | None = None
    notes: list[str] = field(default_factory=list)
    split: str = "all"
    changes: list[tuple[str, list[dict]]] = field(default_factory=list)

    @property
    def labels(self) -> list[str]:
        """Entry labels in order."""
        return [e.label for e in self.entries]

    def clustering(self) -> dict:
        """The first run's clustering: ``{"mode", "n_clusters", "df", "warning"}`` (df from the summary if absent)."""
        cl = self.runs[0].manifest.clusters.model_dump(exclude={"labels"})
        if cl.get("df") is None and self.entries:
            mrr = self.entries[0].overall("mrr")
            iv = None if mrr is None else mrr.intervals.get("cr2")
            if iv is not None:
                cl["df"] = iv.df
        return cl

    def evidence_metric(self) -> str:
        """The evidence metric shown beside MRR per question: ``evidence_recall@10``, or ``evidence_recall@1000w``
        when the runs' chunkers differ (chunk counts are not comparable across chunkers)."""
        one = len({r.manifest.corpus.chunker_id for r in self.runs}) <= 1
        return "evidence_recall@10" if one else "evidence_recall@1000w"

    def qids(self) -> list[str]:
        """Question ids in gold-set order (or the first run's order)."""
        seen = list(dict.fromkeys(r.qid for r in self.runs[0].per_question))
        if self.gold:
            order = [q for q in self.gold if q in set(seen)]
            return order + [q for q in seen if q not in set(order)]
        return seen

    def row(self, label: str, qid: str) -> QuestionRow | None:
        """The per-question row of one entry."""
        return self._rows.get((label, qid))

    def __post_init__(self) -> None:
        self._rows = {(e.label, r.qid): r for e in self.entries for r in e.rows()}
        self._shown: dict[str, ShownIntervals] = {}

    def metrics_present(self, wanted: Sequence[str] | None = None, slice_name: str = "all") -> list[str]:
        """Metrics of ``wanted`` every entry summarises (``None``: :data:`TABLE_METRICS`, then runs' ``--metrics``)."""
        es = self.entries
        wanted = wanted or [*TABLE_METRICS, *(m for e in es for m in e.run.manifest.chosen_metrics)]
        return [m for m in dict.fromkeys(wanted) if es and all(e.overall(m, slice_name) for e in es)]

    def recorded_methods(self, metrics: Sequence[str], slice_name: str = "all") -> dict[str, tuple[str, set[str]]]:
        """``{metric: (outcome class, names of the interval methods recorded)}`` over every entry, metrics in order."""
        out: dict[str, tuple[str, set[str]]] = {}
        for m in metrics:
            for e in self.entries:
                ov = e.overall(m, slice_name) if slice_name in e.summary else None
                if ov is not None and ov.intervals:
                    out.setdefault(m, (outcome_of(m), set()))[1].update(ov.intervals)
        return out

    def shown(self, slice_name: str = "all") -> ShownIntervals:
        """The intervals the report's tables show for one slice: the rule's default for the first run's design
        (:class:`harness.stats.shown.ShownIntervals`)."""
        if slice_name not in self._shown:  # read once per slice: every table, figure and caption asks
            self._shown[slice_name] = (
                ShownIntervals.for_run(self.entries[0].run, slice_name)
                if self.entries
                else ShownIntervals.for_design(RunDesign("srs", ()))
            )
        return self._shown[slice_name]

    def covered_entries(self) -> list[Entry]:
        """Entries whose summary holds the ``covered`` slice."""
        return [e for e in self.entries if "covered" in e.summary]

    def ks(self) -> list[int]:
        """The cut-offs k of the first run (``@k`` metrics of the depth curves)."""
        return list(self.runs[0].manifest.ks) or list(DEFAULT_KS)


def _categories(runs: Sequence[RunRecord]) -> list[str]:
    present = {r.category for run in runs for r in run.per_question}
    return [c for c in CATEGORIES if c in present] + sorted(present - set(CATEGORIES))


def _entries(runs: Sequence[RunRecord]) -> list[Entry]:
    """One entry per (run, system). Labels are the system names when no name repeats across runs; when one does,
    every label of every run is ``run_id:system`` (prefixing only the repeated names left a plain ``rrf`` beside
    ``cand1:w0.5``, and a reader could not tell which run, and which model, the plain one came from)."""
    pairs = [(run, s) for run in runs for s in run.systems]
    names = [s for _, s in pairs]
    clash = len(set(names)) < len(names)
    return [Entry(label=f"{run.run_id}:{s}" if clash else s, run=run, system=s) for run, s in pairs]


def _metrics_across_chunkers(
    runs: list[RunRecord], metrics: Sequence[str], gate_metric: str, notes: list[str]
) -> tuple[str, ...]:
    """The paired metrics when the runs' chunkers differ (:func:`harness.evaluation.chunkers.metrics_across_chunkers`:
    the forest's default list loses the chunk-count metrics and gains the budget metrics, with a note; a list given
    or a gate metric that counts chunks is refused); the metrics as given when every run has one chunker.

    Raises:
        IncomparableError: a chunk-count metric named explicitly, or as the gate metric, across chunkers.
    """
    other = next((r for r in runs[1:] if chunkers_differ(runs[0], r)), None)
    if other is None:
        return tuple(metrics)
    named = None if tuple(metrics) == tuple(FOREST_METRICS) else metrics
    chosen = metrics_across_chunkers(runs[0], other, named, FOREST_METRICS, option="compare_metrics", warn=notes.append)
    metrics_across_chunkers(runs[0], other, [gate_metric], (), option="gate_metric", warn=notes.append)
    return chosen


def _resolve_baseline(
    baseline: str | Path | None, runs: list[RunRecord], entries: list[Entry]
) -> tuple[Entry | None, list[RunRecord], list[Entry]]:
    if not entries:
        return None, runs, entries
    if baseline is None:
        return entries[0], runs, entries
    b = str(baseline)
    for e in entries:
        if b in (e.label, e.system):
            return e, runs, entries
    p = Path(b)
    if p.is_dir():
        for run in runs:
            if run.path.resolve() == p.resolve():
                return next(e for e in entries if e.run is run), runs, entries
        extra = load_run(p)
        check_comparable(runs[0], extra, chunkers_may_differ=True)
        runs = [extra, *runs]
        entries = _entries(runs)
        return entries[0], runs, entries
    if ":" in b:
        head, _, sys_name = b.rpartition(":")
        for e in entries:
            if e.system == sys_name and head in (e.run.run_id, str(e.run.path)):
                return e, runs, entries
    raise HarnessInputError(
        f"--baseline {b!r}: not a run folder nor a system of the runs given "
        f"(systems: {', '.join(e.label for e in entries)})"
    )


def _gold_candidates(run: RunRecord) -> list[Path]:
    raw = run.manifest.goldset.path
    if not raw:
        return []
    p = Path(raw)
    bases = [Path.cwd(), run.path.parent.parent, run.path.parent, run.path]
    return [b / p for b in bases]


def _load_gold(run: RunRecord) -> tuple[dict[str, dict] | None, str]:
    """``({qid: record}, note)`` from the gold set path recorded in the run (tolerant; never raises)."""
    tried = _gold_candidates(run)
    if not tried:
        return None, "The run does not record a gold-set path: questions are shown by id only"
    for path in tried:
        files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
        for f in files:
            if not f.is_file():
                continue
            try:
                recs = {str(o.get("id", o.get("qid"))): o for _, o in read_jsonl(f)}
            except HarnessInputError:
                continue
            note = f"Question texts and quotes from {shown_path(f)}"
            want = run.manifest.goldset.sha256
            if want and sha256_file(f) != want:
                note += f" (WARNING: its sha256 differs from the run's gold set {want[:12]}; texts may have changed)"
            return recs, note
    return None, f"Gold set {shown_path(tried[0])} not readable: questions are shown by id only"


def _load_known_item(path: str | Path) -> dict:
    p = Path(path)
    if p.is_file():
        p = p.parent
    summary = read_json(p / "summary.json")
    per_doc = [o for _, o in read_jsonl(p / "per_document.jsonl")] if (p / "per_document.jsonl").exists() else []
    if not isinstance(summary, dict) or "systems" not in summary:
        raise HarnessInputError(f"{p / 'summary.json'}: field systems: missing (not a known-item output folder)")
    return {"path": str(p), "summary": summary, "per_document": per_doc}


def _load_coverage(path: str | Path) -> dict:
    p = Path(path)
    if p.is_dir():
        p = p / "coverage.json"
    data = read_json(p)
    if not isinstance(data, dict) or "designs" not in data:
        raise HarnessInputError(f"{p}: field designs: missing (not a coverage.json)")
    return {"path": str(p), "data": data}


def build_report(
    runs: Sequence[str | Path | RunRecord],
    *,
    baseline: str | Path | None = None,
    margin: float = 0.02,
    alpha: float = 0.05,
    gate_metric: str = "mrr",
    known_item: str | Path | None = None,
    coverage: str | Path | None = None,
    compare_metrics: Sequence[str] = FOREST_METRICS,
    reps: int = 10000,
    split: str = "all",
) -> ReportData:
    """Read run records (and optional known-item / coverage outputs) into a :class:`ReportData`.

    Args:
        runs: run record folders (or loaded records); at least one.
        baseline: the system paired differences are taken against: a system label (``bm25``, ``run-id:bm25``) or a
            run folder (its first system; added to the report when not among ``runs``). Default: the first system
            of the first run.
        margin: non-inferiority margin in metric units (>= 0), drawn on the forest plot.
        alpha: one-sided level of the gate's lower bound (0 < alpha < 0.5).
        gate_metric: the metric the gate judges (its verdict column).
        known_item: a known-item output folder (``summary.json``, ``per_document.jsonl``); when it holds a
            ``coverage.json`` and ``coverage`` is not given, that is used too.
        coverage: a ``coverage.json`` file or the folder holding it.
        compare_metrics: metrics of the paired comparisons.
        reps: sign flips of the randomisation test (:func:`harness.evaluation.compare.compare_runs`).
        split: ``all``, ``dev`` or ``test``: every run is restricted to the split's questions
            (:func:`harness.evaluation.subset.restrict_split`) before anything is computed, so every table, interval,
            paired difference and header is the split's (a note says how many questions and clusters).

    Returns:
        The :class:`ReportData`.

    Raises:
        IncomparableError: two runs differ in gold set, corpus or depths (exit 2); runs under different chunkers are
            paired on the metrics comparable across chunkers (a note says which), and a chunk-count
            ``compare_metrics`` or ``gate_metric`` named for them is refused.
        HarnessInputError: no run, a missing or malformed run record / known-item / coverage file, a bad margin,
            alpha or baseline (exit 2).
    """
    if not runs:
        raise HarnessInputError("report: no run record given")
    if not (margin >= 0 and margin < float("inf")):
        raise HarnessInputError(f"--margin: {margin} must be a finite number >= 0")
    if not 0 < alpha < 0.5:
        raise HarnessInputError(f"--alpha: {alpha} must lie in (0, 0.5)")
    loaded: list[RunRecord] = []
    seen: set[Path] = set()
    for r in runs:
        rec = r if isinstance(r, RunRecord) else load_run(r)
        key = rec.path.resolve()
        if key in seen:
            continue
        seen.add(key)
        loaded.append(rec)
    for other in loaded[1:]:
        check_comparable(loaded[0], other, chunkers_may_differ=True)
    notes: list[str] = []
    if len({r.manifest.clusters.mode for r in loaded}) > 1:
        notes.append("runs were clustered differently; paired comparisons use the baseline run's clusters")
    entries = _entries(loaded)
    base, loaded, entries = _resolve_baseline(baseline, loaded, entries)
    if check_split(split) != "all":
        whole = loaded[0]
        by_run = {id(r): restrict_split(r, split) for r in loaded}
        loaded = [by_run[id(r)] for r in loaded]
        entries = [Entry(e.label, by_run[id(e.run)], e.system) for e in entries]
        base = None if base is None else next(e for e in entries if e.label == base.label)
        sub = loaded[0]
        notes.append(
            f"{split} split only: {len({r.qid for r in sub.per_question})} questions in "
            f"{sub.manifest.clusters.n_clusters} clusters (the run has "
            f"{len({r.qid for r in whole.per_question})} questions in {whole.manifest.clusters.n_clusters}); every "
            "figure, interval and paired difference here is over these questions"
        )
    compare_metrics = _metrics_across_chunkers(loaded, compare_metrics, gate_metric, notes)
    level = loaded[0].manifest.level
    info: dict[str, dict] = {}
    values: dict[tuple[str, str, str], CategoryInterval] = {}
    for e in entries:
        for ci in category_intervals(e.run, e.system, metrics=("mrr",), level=level):
            info.setdefault(ci.category, {"n": ci.n, "n_clusters": ci.n_clusters})
            values[(e.label, ci.category, ci.metric)] = ci
    others = [e for e in entries if e is not base]
    paired_rows: list[PairedRow] = []
    paired_note = ""
    if base is None or not others:
        paired_note = "one system only: no paired differences to show (give several runs or a run of several systems)"
    else:
        metrics = [m for m in compare_metrics if all(e.overall(m) for e in entries)]
        paired_rows = paired_table(
            (base.label, base.run, base.system),
            [(e.label, e.run, e.system) for e in others],
            metrics,
            alpha=alpha,
            margin=margin,
            level=level,
            reps=reps,
        )
    gold, gold_note = _load_gold(loaded[0])
    ki = _load_known_item(known_item) if known_item is not None else None
    if coverage is None and known_item is not None and (Path(ki["path"]) / "coverage.json").exists():
        coverage = Path(ki["path"]) / "coverage.json"
    cov = _load_coverage(coverage) if coverage is not None else None
    corpus = loaded[0].manifest.corpus
    if ki is not None and ki["summary"].get("corpus_hash") and ki["summary"]["corpus_hash"] != corpus.corpus_hash:
        notes.append(
            f"the known-item study ran on another corpus ({ki['summary'].get('corpus_id')}) than the runs "
            f"({corpus.corpus_id})"
        )
    return ReportData(
        runs=loaded,
        entries=entries,
        baseline=base if others else None,
        margin=margin,
        alpha=alpha,
        gate_metric=gate_metric,
        level=level,
        categories=_categories(loaded),
        category_info=info,
        category_values=values,
        paired=paired_rows,
        paired_note=paired_note,
        gold=gold,
        gold_note=gold_note,
        known_item=ki,
        coverage=cov,
        notes=notes,
        split=split,
        changes=[] if base is None else changes_across_runs(base.run, base.system, loaded),
    )


# --------------------------------------------------------------------------------------------------------------
# Shaping for the renderers
# --------------------------------------------------------------------------------------------------------------


def _find_models(obj, out: list[str]) -> None:
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in ("model_id", "model") and isinstance(v, str) and v not in out:
                out.append(v)
            else:
                _find_models(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _find_models(v, out)


def _known(value) -> str:
    return "?" if value is None else str(value)


def provenance(run: RunRecord) -> dict[str, str]:
    """Display strings (not escaped) of one run's provenance: gold set, corpus, chunker, models, code, date, run,
    systems, settings."""
    m = run.manifest
    gs, co, cl = m.goldset, m.corpus, m.clusters
    models: list[str] = []
    _find_models(m.system_configs, models)
    params = co.chunker_params
    commit = m.git_commit or "unknown"
    return {
        "gold set": f"{gs.name or '?'} v{gs.version or '?'} ({_known(gs.n_questions)} questions; sha256 "
        f"{(gs.sha256 or '')[:12]})",
        "corpus": f"{co.corpus_id or '?'}"
        + (f" ({co.n_documents} documents, {_known(co.n_chunks)} chunks)" if co.n_documents else "")
        + (f"; hash {co.corpus_hash[:12]}" if co.corpus_hash else ""),
        "chunker": str(co.chunker_id or gs.chunker_version or "?")
        + (" (" + ", ".join(f"{k} {v}" for k, v in params.items()) + ")" if params else ""),
        "model": ", ".join(models) if models else "none (lexical systems only)",
        "code": f"harness {m.harness_version or '?'}, commit {commit[:12]}{'+dirty' if 'dirty' in commit else ''}",
        "date": str(m.created or "?"),
        "run": f"{m.run_id} ({m.kind}; {shown_path(run.path)})",
        "systems": ", ".join(run.systems),
        "settings": f"depths {m.depths.document} documents / {m.depths.chunk} chunks; clustering {cl.mode or '?'}"
        f" ({cl.n_clusters} clusters); seed {m.seed}; bootstrap {_known(m.bootstrap_reps)} reps; level {m.level}",
    }


def report_provenance(runs: Sequence[RunRecord]) -> dict[str, str]:
    """:func:`provenance` of the first run, except that a field whose value differs between runs (a model, the code,
    the date, the chunker) reads ``by run: <run id>: <value>; ...`` instead of the first run's value."""
    first = provenance(runs[0])
    if len(runs) < 2:
        return first
    per = [(r.run_id, provenance(r)) for r in runs]
    out = dict(first)
    for key in ("chunker", "model", "code", "date"):
        if len({p[key] for _, p in per}) > 1:
            out[key] = "by run: " + "; ".join(f"{rid}: {p[key]}" for rid, p in per)
    return out


def rank_lists(data: ReportData) -> dict[str, tuple[dict[str, list], int]]:
    """``{"gold documents (document ranking)": ({label: [rank or None]}, depth), "gold evidence chunks (chunk
    ranking)": (...)}`` pooled over the questions of each entry."""
    depths = data.runs[0].manifest.depths
    docs: dict[str, list] = {}
    chunks: dict[str, list] = {}
    for e in data.entries:
        d, c = [], []
        for r in e.rows():
            d.extend(r.gold_doc_ranks.values())
            c.extend(r.gold_chunk_ranks.values())
        docs[e.label] = d
        chunks[e.label] = c
    return {
        "gold documents (document ranking)": (docs, depths.document),
        "gold evidence chunks (chunk ranking)": (chunks, depths.chunk),
    }


def rank_summary(ranks: Sequence[int | None]) -> dict:
    """``{"n", "median" (of the found ranks, upper median), "top1", "top10", "top20", "missing"}`` (shares of all
    ``n`` gold items, 0-1; ``None`` = not found within the depth); ``{"n": 0}`` for no item."""
    found = sorted(r for r in ranks if r is not None)
    n = len(ranks)
    if not n:
        return {"n": 0}

    def share(k):
        return sum(1 for r in found if r <= k) / n

    return {
        "n": n,
        "median": found[len(found) // 2] if found else None,
        "top1": share(1),
        "top10": share(10),
        "top20": share(20),
        "missing": (n - len(found)) / n,
    }


def coverage_labels() -> dict[str, str]:
    """Display name per coverage-study method (``(macro)`` marks methods for the macro rate)."""
    return {k: v[1] + (" (macro)" if v[0] == "macro" else "") for k, v in COVERAGE_METHODS.items()}


def coverage_series(cov: dict) -> tuple[dict, dict, list]:
    """``(coverage series, width series, srs designs)`` for the plots from a ``coverage.json`` dict.

    Series are ``{panel: {method: [(K, coverage, margin)]}}`` / ``{panel: {method: [(K, width)]}}``, panels
    ``without FPC`` and ``with FPC (1 - K/D)``, methods in :data:`harness.studies.coverage.catalog.METHODS` order.
    """
    srs = sorted(
        (d for d in cov.get("designs", []) if d.get("design") == "srs" and d.get("rows")), key=lambda d: d["K"]
    )
    cser: dict[str, dict[str, list]] = {}
    wser: dict[str, dict[str, list]] = {}
    for d in srs:
        for key, r in d["rows"].items():
            panel = "with FPC (1 - K/D)" if r.get("fpc") else "without FPC"
            m = r.get("method", key.removesuffix("_fpc"))
            cser.setdefault(panel, {}).setdefault(m, []).append(
                (int(d["K"]), float(r["coverage"]), float(r["mc_margin"]))
            )
            wser.setdefault(panel, {}).setdefault(m, []).append((int(d["K"]), float(r["mean_width"])))
    order = ["without FPC", "with FPC (1 - K/D)"]
    known = list(COVERAGE_METHODS)

    def rank(m: str) -> tuple[int, str]:
        return (known.index(m) if m in known else len(known), m)

    cser = {p: {m: cser[p][m] for m in sorted(cser[p], key=rank)} for p in order if p in cser}
    wser = {p: {m: wser[p][m] for m in sorted(wser[p], key=rank)} for p in order if p in wser}
    return cser, wser, srs


def macro_methods(cov: dict) -> list[str]:
    """The coverage-study methods that target the macro rate (drawn with open markers)."""
    return sorted(
        {
            r.get("method", k)
            for d in cov.get("designs", [])
            for k, r in (d.get("rows") or {}).items()
            if r.get("target") == "macro"
        }
    )


def record_checksums(run: RunRecord) -> list[str]:
    """``["manifest.json 1a2b3c4d5e6f", ...]``: sha256 prefixes of a record's three files, as read."""
    out = []
    for name in ("manifest.json", "summary.json", "per_question.jsonl"):
        p = run.path / name
        if p.exists():
            out.append(f"{name} {sha256_file(p)[:12]}")
    return out
