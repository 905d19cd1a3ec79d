"""One self-contained HTML report (figures inlined as SVG) from run records, and the ``write_report`` entry point.

Everything shown is read from files only - run records (:func:`harness.evaluation.runs.load_run`), optionally a
known-item output folder (``summary.json``, ``per_document.jsonl``; :mod:`harness.studies.known_item`) and a coverage
study (``coverage.json``; :mod:`harness.studies.coverage`) - so any past run can be reported again without re-running
retrieval.
The gold set is read (best effort) from the path the run recorded, for question texts and quotes only.

Sections and their stable element ids (see :data:`FIGURE_IDS` for the figures):

* ``provenance`` - gold set, corpus, chunker, models, code version, date, per run;
* ``systems`` - systems table with 95 % CR2 intervals and the clustering used;
* ``categories`` - per-category MRR with CR2 whiskers (``fig-category-mrr``);
* ``paired`` - forest plot of paired differences against a baseline with the gate margin (``fig-forest``);
* ``depth`` - all-hop@k and evidence recall@k at k = 1, 5, 10, 20 (``fig-depth-curves``);
* ``ranks`` - distribution of gold document and evidence-chunk ranks (``fig-evidence-ranks``);
* ``covered`` - the fully covered slice when the vector index is partial (``fig-covered-slice``);
* ``known-item`` - per-document hit-rate distribution (``fig-known-item-hit-rate``);
* ``coverage`` - coverage against K with nominal line and Monte Carlo band (``fig-coverage-vs-k``) and interval
  width against K (``fig-width-vs-k``);
* ``questions`` - a collapsible per-question drill-down.

A small inline script measures every figure after layout and writes ``{id: {width, height, marks}}`` into the
``<script type="application/json" id="figure-layout">`` element (read by the headless-browser test; harmless
elsewhere).
"""

from __future__ import annotations

import datetime as dt
import html
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness import __version__
from harness.errors import HarnessInputError
from harness.evaluation.runs import RunRecord, check_comparable, load_run
from harness.goldset.schema import CATEGORIES
from harness.io import atomic_write_text, read_json, read_jsonl, sha256_file
from harness.metrics import METRIC_SETS

#: Stable element ids of the figures (the ``<figure>`` element; its ``<svg>`` has the id plus ``-svg``).
FIGURE_IDS: dict[str, str] = {
    "category": "fig-category-mrr",
    "forest": "fig-forest",
    "depth": "fig-depth-curves",
    "ranks": "fig-evidence-ranks",
    "covered": "fig-covered-slice",
    "known_item": "fig-known-item-hit-rate",
    "coverage": "fig-coverage-vs-k",
    "width": "fig-width-vs-k",
}

#: Metrics of the systems table (those present in the run are shown).
TABLE_METRICS = METRIC_SETS["report_table"]
#: Metrics of the forest plot / paired table.
FOREST_METRICS = METRIC_SETS["forest"]
#: Interval methods shown in the "every method" table, in order.
INTERVAL_METHODS = (
    "cr2",
    "cr2_logit",
    "bootstrap_t",
    "bootstrap_percentile",
    "cluster_t",
    "iid_wald_effective",
    "iid_wald",
)
FORMATS = ("html", "markdown")


def esc(value) -> str:
    """HTML-escape ``str(value)`` (quotes included)."""
    return html.escape(str(value), quote=True)


def fmtx(x: float | None, spec: str) -> str:
    """``format(x, spec)``, ``-`` for ``None``/NaN."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return format(x, spec)


def fmt3(x: float | None) -> str:
    """``0.673`` (3 decimals), ``-`` for ``None``/NaN."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.3f}"


def fmt_iv(iv: tuple[float, float] | None) -> str:
    """``[0.525, 0.822]`` or an empty string."""
    return "" if iv is None else f"[{iv[0]:.3f}, {iv[1]:.3f}]"


# --------------------------------------------------------------------------------------------------------------
# The data model, read from files only
# --------------------------------------------------------------------------------------------------------------


@dataclass
class Entry:
    """One system of one run, as shown in the report.

    Attributes:
        label: unique display name (the system name, or ``run_id:system`` when names repeat across runs).
        run: the run record.
        system: the system name inside the run.
    """

    label: str
    run: RunRecord
    system: str

    @property
    def summary(self) -> dict:
        """``summary["systems"][system]`` (``{slice: {...}}``)."""
        return self.run.summary.get("systems", {}).get(self.system, {})

    def overall(self, metric: str, slice_name: str = "all") -> dict | None:
        """``{"mean", "intervals"}`` of a metric over a slice, ``None`` when absent or not available (the system
        returned no rankings at the metric's level)."""
        entry = self.summary.get(slice_name, {}).get("overall", {}).get(metric)
        return entry if entry and entry.get("mean") is not None else None

    def rows(self) -> list[dict]:
        """Per-question rows of this system."""
        return [r for r in self.run.per_question if r.get("system") == self.system]


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
        category_values: ``{(label, category, metric): (mean, (lower, upper) or None)}`` (CR2 per category).
        paired: forest rows (see :func:`_paired_rows`).
        paired_note: why there is no forest plot, when there is none.
        gold: ``{qid: gold record dict}`` read from the recorded gold-set path, or ``None``.
        gold_note: where the gold set was read from, or why not.
        known_item: ``{"path", "summary", "per_document"}`` or ``None``.
        coverage: ``{"path", "data"}`` (``coverage.json``) or ``None``.
        notes: warnings shown at the top.
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
    category_values: dict[tuple[str, str, str], tuple[float, tuple[float, float] | None]]
    paired: list[dict]
    paired_note: str
    gold: dict[str, dict] | None
    gold_note: str
    known_item: dict | None = None
    coverage: dict | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def labels(self) -> list[str]:
        """Entry labels in order."""
        return [e.label for e in self.entries]

    def clustering(self) -> dict:
        """The first run's clustering: ``{"mode", "n_clusters", "df", "warning"}`` (df from the summary if absent)."""
        cl = dict(self.runs[0].manifest.get("clusters", {}))
        cl.pop("labels", None)
        if cl.get("df") is None and self.entries:
            iv = (self.entries[0].overall("mrr") or {}).get("intervals", {}).get("cr2")
            if iv:
                cl["df"] = iv.get("df")
        return cl

    def qids(self) -> list[str]:
        """Question ids in gold-set order (or the first run's order)."""
        seen = list(dict.fromkeys(r["qid"] for r in self.runs[0].per_question))
        if self.gold:
            order = [q for q in self.gold if q in set(seen)]
            return order + [q for q in seen if q not in set(order)]
        return seen

    def row(self, label: str, qid: str) -> dict | None:
        """The per-question row of one entry."""
        return self._rows.get((label, qid))

    def __post_init__(self) -> None:
        self._rows = {(e.label, r["qid"]): r for e in self.entries for r in e.rows()}

    def metrics_present(self, wanted: Sequence[str], slice_name: str = "all") -> list[str]:
        """The metrics of ``wanted`` that every entry summarises."""
        return [m for m in wanted if self.entries and all(e.overall(m, slice_name) for e in self.entries)]

    def covered_entries(self) -> list[Entry]:
        """Entries whose summary holds the ``covered`` slice."""
        return [e for e in self.entries if "covered" in e.summary]


def _interval(entry: dict | None, method: str = "cr2") -> tuple[float, float] | None:
    if not entry:
        return None
    iv = entry.get("intervals", {}).get(method)
    return (float(iv["lower"]), float(iv["upper"])) if iv else None


def _categories(runs: Sequence[RunRecord]) -> list[str]:
    present = {r["category"] for run in runs for r in run.per_question}
    return [c for c in CATEGORIES if c in present] + sorted(present - set(CATEGORIES))


def _entries(runs: Sequence[RunRecord]) -> list[Entry]:
    pairs = [(run, s) for run in runs for s in run.systems]
    count: dict[str, int] = {}
    for _, s in pairs:
        count[s] = count.get(s, 0) + 1
    out = []
    for run, s in pairs:
        rid = run.manifest.get("run_id") or run.path.name
        out.append(Entry(label=s if count[s] == 1 else f"{rid}:{s}", run=run, system=s))
    return out


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
        check_comparable(runs[0], extra)
        runs = [extra, *runs]
        entries = _entries(runs)
        return entries[0], runs, entries
    if ":" in b:
        head, _, sys_name = b.rpartition(":")
        for e in entries:
            rid = e.run.manifest.get("run_id") or e.run.path.name
            if e.system == sys_name and head in (rid, str(e.run.path)):
                return e, runs, entries
    raise HarnessInputError(
        f"--baseline {b!r}: not a run folder nor a system of the runs given "
        f"(systems: {', '.join(e.label for e in entries)})"
    )


def _category_values(
    entries: Sequence[Entry], categories: Sequence[str], metrics: Sequence[str], level: float
) -> tuple[dict, dict]:
    from harness.stats import cr2

    info: dict[str, dict] = {}
    values: dict[tuple[str, str, str], tuple[float, tuple[float, float] | None]] = {}
    for e in entries:
        labels = e.run.clusters()
        rows = e.rows()
        for cat in categories:
            sel = [r for r in rows if r["category"] == cat]
            if not sel:
                continue
            cl = [labels.get(r["qid"], r.get("cluster", r["qid"])) for r in sel]
            info.setdefault(cat, {"n": len(sel), "n_clusters": len(set(cl))})
            for m in metrics:
                if any(m not in r["metrics"] for r in sel):
                    continue
                y = [float(r["metrics"][m]) for r in sel]
                mean = math.fsum(y) / len(y)
                iv = None
                if len(set(cl)) >= 2:
                    try:
                        res = cr2(y, cl, level=level)
                        iv = (res.lower, res.upper)
                    except HarnessInputError:
                        iv = None
                values[(e.label, cat, m)] = (mean, iv)
    return info, values


def _paired_rows(
    baseline: Entry, others: Sequence[Entry], metrics: Sequence[str], *, alpha: float, margin: float, reps: int
) -> list[dict]:
    """Paired differences candidate - baseline per metric (CR2, Satterthwaite df; via :func:`compare_runs`).

    Each row: ``label, baseline, metric, mean_a, mean_b, diff, lower, upper, se, df, lower_one_sided (diff -
    t_{1-alpha, df} se, the gate's bound), noninferior (lower_one_sided > -margin), p, p_holm (Holm across the
    candidates per metric), questions / clusters win-tie-loss``.
    """
    from scipy import stats as sps

    from harness.evaluation.compare import compare_runs
    from harness.stats import holm

    rows: list[dict] = []
    for e in others:
        rep = compare_runs(
            baseline.run, e.run, metrics=tuple(metrics), system_a=baseline.system, system_b=e.system, reps=reps
        )
        for c in rep.comparisons:
            iv = c.interval
            se, df = iv.get("se"), iv.get("df")
            lo1 = None
            if se is not None and df is not None and df > 0:
                lo1 = float(c.diff - sps.t.ppf(1 - alpha, df) * se)
            rows.append(
                {
                    "label": e.label,
                    "baseline": baseline.label,
                    "metric": c.metric,
                    "mean_a": c.mean_a,
                    "mean_b": c.mean_b,
                    "diff": c.diff,
                    "lower": iv["lower"],
                    "upper": iv["upper"],
                    "se": se,
                    "df": df,
                    "lower_one_sided": lo1,
                    "noninferior": None if lo1 is None else lo1 > -margin,
                    "p": c.p_randomization,
                    "p_holm": None,
                    "questions": c.questions,
                    "clusters": c.clusters,
                    "warnings": list(iv.get("extras", {}).get("warnings", [])),
                }
            )
    for m in metrics:
        grp = [r for r in rows if r["metric"] == m]
        if len(grp) > 1:
            for r, ph in zip(grp, holm([r["p"] for r in grp]), strict=True):
                r["p_holm"] = float(ph)
    return rows


def _gold_candidates(run: RunRecord) -> list[Path]:
    raw = (run.manifest.get("goldset") or {}).get("path")
    if not raw:
        return []
    p = Path(raw)
    if p.is_absolute():
        return [p]
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
            note = f"Question texts and quotes from {f}"
            want = (run.manifest.get("goldset") or {}).get("sha256")
            if want and sha256_file(f) != want:
                note += f" (WARNING: its sha256 differs from the run's gold set {want[:12]}; texts may have changed)"
            return recs, note
    return None, f"Gold set {tried[0]} not readable: questions are shown by id only"


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

    Returns:
        The :class:`ReportData`.

    Raises:
        IncomparableError: two runs differ in gold set, corpus, chunker or depths (exit 2).
        HarnessInputError: no run, a missing or malformed run record / known-item / coverage file, a bad margin,
            alpha or baseline (exit 2).
    """
    if not runs:
        raise HarnessInputError("report: no run record given")
    if margin < 0 or not math.isfinite(margin):
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
        check_comparable(loaded[0], other)
    notes: list[str] = []
    modes = {json.dumps(r.manifest.get("clusters", {}).get("mode")) for r in loaded}
    if len(modes) > 1:
        notes.append("runs were clustered differently; paired comparisons use the baseline run's clusters")
    entries = _entries(loaded)
    base, loaded, entries = _resolve_baseline(baseline, loaded, entries)
    level = float(loaded[0].manifest.get("level", 0.95))
    cats = _categories(loaded)
    info, values = _category_values(entries, cats, ("mrr",), level)
    others = [e for e in entries if e is not base]
    paired_rows: list[dict] = []
    paired_note = ""
    if base is None or not others:
        paired_note = "one system only: no paired differences to show (give several runs or a run of several systems)"
    else:
        metrics = [m for m in compare_metrics if all(e.overall(m) for e in entries)]
        paired_rows = _paired_rows(base, others, metrics, alpha=alpha, margin=margin, reps=reps)
    gold, gold_note = _load_gold(loaded[0])
    ki = _load_known_item(known_item) if known_item is not None else None
    if coverage is None and known_item is not None and (Path(ki["path"]) / "coverage.json").exists():
        coverage = Path(ki["path"]) / "coverage.json"
    cov = _load_coverage(coverage) if coverage is not None else None
    corpus_hash = (loaded[0].manifest.get("corpus") or {}).get("corpus_hash")
    if ki is not None and ki["summary"].get("corpus_hash") and ki["summary"]["corpus_hash"] != corpus_hash:
        notes.append(
            f"the known-item study ran on another corpus ({ki['summary'].get('corpus_id')}) than the runs "
            f"({(loaded[0].manifest.get('corpus') or {}).get('corpus_id')})"
        )
    return ReportData(
        runs=loaded,
        entries=entries,
        baseline=base if others else None,
        margin=margin,
        alpha=alpha,
        gate_metric=gate_metric,
        level=level,
        categories=cats,
        category_info=info,
        category_values=values,
        paired=paired_rows,
        paired_note=paired_note,
        gold=gold,
        gold_note=gold_note,
        known_item=ki,
        coverage=cov,
        notes=notes,
    )


# --------------------------------------------------------------------------------------------------------------
# Provenance helpers
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


def provenance(run: RunRecord) -> dict[str, str]:
    """Display strings of one run's provenance: gold set, corpus, chunker, models, code, date, run, settings."""
    m = run.manifest
    gs = m.get("goldset") or {}
    co = m.get("corpus") or {}
    models: list[str] = []
    _find_models(m.get("system_configs", {}), models)
    params = co.get("chunker_params") or {}
    commit = m.get("git_commit") or "unknown"
    ncl = (m.get("clusters") or {}).get("n_clusters")
    return {
        "gold set": f"{gs.get('name', '?')} v{gs.get('version', '?')} ({gs.get('n_questions', '?')} questions; "
        f"sha256 {str(gs.get('sha256', ''))[:12]})",
        "corpus": f"{co.get('corpus_id', '?')}"
        + (f" ({co['n_documents']} documents, {co.get('n_chunks', '?')} chunks)" if co.get("n_documents") else "")
        + (f"; hash {str(co.get('corpus_hash'))[:12]}" if co.get("corpus_hash") else ""),
        "chunker": str(co.get("chunker_id", gs.get("chunker_version", "?")))
        + (" (" + ", ".join(f"{k} {v}" for k, v in params.items()) + ")" if params else ""),
        "model": ", ".join(models) if models else "none (lexical systems only)",
        "code": f"harness {m.get('harness_version', '?')}, commit {commit[:12]}{'+dirty' if 'dirty' in commit else ''}",
        "date": str(m.get("created", "?")),
        "run": f"{m.get('run_id', run.path.name)} ({m.get('kind', 'run')}; {run.path})",
        "systems": ", ".join(run.systems),
        "settings": f"depths {m.get('depths', {}).get('documents', '?')} documents / "
        f"{m.get('depths', {}).get('chunks', '?')} chunks; clustering {(m.get('clusters') or {}).get('mode', '?')}"
        f" ({ncl} clusters); seed {m.get('seed', '?')}; bootstrap {m.get('bootstrap_reps', '?')} reps; "
        f"level {m.get('level', '?')}",
    }


# --------------------------------------------------------------------------------------------------------------
# HTML rendering
# --------------------------------------------------------------------------------------------------------------

CSS = """
:root { --fg: #1a1a1a; --muted: #555; --rule: #d0d0d0; --bg-alt: #f5f5f5; --warn: #7a4b00; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color: var(--fg); background: #fff; margin: 0; }
header, main, footer { max-width: 1240px; margin: 0 auto; padding: 0 20px; }
header { padding-top: 14px; border-bottom: 2px solid var(--fg); }
h1 { font-size: 20px; margin: 0 0 6px; }
h2 { font-size: 17px; margin: 26px 0 8px; padding-top: 6px; border-top: 1px solid var(--rule); }
h3 { font-size: 14px; margin: 14px 0 6px; }
dl.prov { display: grid; grid-template-columns: max-content 1fr; gap: 1px 14px; margin: 6px 0 10px;
          font-size: 13px; }
dl.prov dt { color: var(--muted); }
dl.prov dd { margin: 0; overflow-wrap: anywhere; }
nav { font-size: 13px; margin: 6px 0 10px; }
nav a { margin-right: 12px; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0 10px; }
#table-runs { width: 100%; font-size: 12px; }
th, td { padding: 3px 8px; border-bottom: 1px solid var(--rule); text-align: right; vertical-align: top; }
th { background: var(--bg-alt); font-weight: 600; }
th:first-child, td:first-child, td.l, th.l { text-align: left; }
th[colspan] { text-align: center; }
td { white-space: nowrap; }
td.wrap { white-space: normal; }
td .iv { display: block; color: var(--muted); font-size: 11.5px; white-space: nowrap; }
tr.base td:first-child::after { content: " (baseline)"; color: var(--muted); font-size: 11px; }
.note { color: var(--muted); font-size: 12.5px; margin: 4px 0; }
.warn { color: var(--warn); background: #fff6e5; border-left: 3px solid #d89b00; padding: 4px 8px;
        margin: 6px 0; font-size: 13px; }
figure { margin: 8px 0 14px; }
figcaption { color: var(--muted); font-size: 12.5px; max-width: 980px; }
svg.figure-svg { max-width: 100%; height: auto; display: block; }
details { margin: 2px 0; border-bottom: 1px solid var(--rule); }
details > summary { cursor: pointer; padding: 3px 0; }
details[open] > summary { font-weight: 600; }
details .body { padding: 4px 0 10px 18px; }
code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12.5px; }
blockquote { margin: 2px 0; padding: 1px 8px; border-left: 3px solid var(--rule); color: #333; }
.pass { font-weight: 600; }
.fail { font-weight: 600; text-decoration: underline; }
footer { color: var(--muted); font-size: 12px; margin-top: 30px; padding-bottom: 30px;
         border-top: 1px solid var(--rule); }
@media print { details { page-break-inside: avoid; } nav { display: none; } }
"""

MEASURE_JS = """
(function () {
  function measure() {
    var ids = JSON.parse(document.getElementById('report-figures').textContent);
    var out = {};
    ids.forEach(function (id) {
      var el = document.getElementById(id);
      if (!el) { out[id] = null; return; }
      var svg = el.querySelector('svg');
      var r = (svg || el).getBoundingClientRect();
      var marks = svg ? svg.querySelectorAll('path, use, rect, line, polyline, polygon').length : 0;
      var box = null;
      try { if (svg) { var b = svg.getBBox(); box = [b.width, b.height]; } } catch (e) { box = null; }
      out[id] = {width: r.width, height: r.height, marks: marks, bbox: box};
    });
    document.getElementById('figure-layout').textContent = JSON.stringify(out);
  }
  measure();
  window.addEventListener('load', measure);
})();
"""


def _figure(fig_id: str, svg: str, caption: str) -> str:
    return f'<figure id="{fig_id}">{svg}<figcaption>{caption}</figcaption></figure>'


def _slug(qid: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", qid)


def _systems_table(data: ReportData, slice_name: str = "all") -> str:
    entries = [e for e in data.entries if slice_name in e.summary]
    metrics = [m for m in TABLE_METRICS if entries and all(e.overall(m, slice_name) for e in entries)]
    head = "".join(f"<th>{esc(m)}</th>" for m in metrics)
    rows = []
    for e in entries:
        s = e.summary[slice_name]
        cells = []
        for m in metrics:
            ov = e.overall(m, slice_name)
            cells.append(f"<td>{fmt3(ov['mean'])}<span class='iv'>{fmt_iv(_interval(ov))}</span></td>")
        cls = " class='base'" if data.baseline is e else ""
        rows.append(
            f"<tr{cls}><td>{esc(e.label)}</td><td>{s.get('n_questions', '')}</td><td>{s.get('n_clusters', '')}</td>"
            + "".join(cells)
            + "</tr>"
        )
    return (
        f"<table class='systems' id='table-systems-{slice_name}'><thead><tr><th class='l'>system</th><th>questions</th>"
        f"<th>clusters</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _methods_table(data: ReportData, metric: str = "mrr") -> str:
    methods = [m for m in INTERVAL_METHODS if any(_interval(e.overall(metric), m) for e in data.entries)]
    if not methods:
        return ""
    head = "".join(f"<th>{esc(m)}</th>" for m in methods)
    rows = []
    for e in data.entries:
        ov = e.overall(metric)
        if not ov:
            continue
        cells = "".join(f"<td>{fmt_iv(_interval(ov, m)) or '-'}</td>" for m in methods)
        rows.append(f"<tr><td>{esc(e.label)}</td><td>{fmt3(ov['mean'])}</td>{cells}</tr>")
    return (
        f"<details><summary>{esc(metric)} under every interval method recorded</summary><div class='body'>"
        f"<table><thead><tr><th class='l'>system</th><th>mean</th>{head}</tr></thead><tbody>{''.join(rows)}"
        "</tbody></table><p class='note'>cr2 is the report's interval (CR2 cluster-robust t, Satterthwaite df); "
        "cluster_t is centred on the mean of cluster means (macro); iid_wald ignores clustering and is shown for "
        "contrast only.</p></div></details>"
    )


def _section_provenance(data: ReportData) -> str:
    first = provenance(data.runs[0])
    keys = ("gold set", "corpus", "chunker", "model", "code", "date")
    dl = "".join(f"<dt>{esc(k)}</dt><dd>{esc(first[k])}</dd>" for k in keys)
    more = ""
    if len(data.runs) > 1:
        rows = []
        for run in data.runs:
            p = provenance(run)
            rows.append(
                "<tr>"
                + "".join(
                    f"<td class='l wrap'>{esc(p[k])}</td>"
                    for k in ("run", "systems", "model", "code", "date", "settings")
                )
                + "</tr>"
            )
        more = (
            "<table id='table-runs'><thead><tr><th class='l'>run</th><th class='l'>systems</th><th class='l'>model"
            "</th><th class='l'>code</th><th class='l'>date</th><th class='l'>settings</th></tr></thead><tbody>"
            + "".join(rows)
            + "</tbody></table>"
        )
    else:
        dl += f"<dt>run</dt><dd>{esc(first['run'])}</dd><dt>settings</dt><dd>{esc(first['settings'])}</dd>"
    cfg = {
        (run.manifest.get("run_id") or run.path.name): {
            "system_configs": run.manifest.get("system_configs"),
            "libraries": run.manifest.get("libraries"),
            "timings_s": run.manifest.get("timings_s"),
            "coverage": run.manifest.get("coverage"),
        }
        for run in data.runs
    }
    details = (
        "<details><summary>system configurations, library versions, timings</summary>"
        "<div class='body'><pre class='mono'>"
        + esc(json.dumps(cfg, indent=1, ensure_ascii=False))
        + "</pre></div></details>"
    )
    notes = "".join(f"<div class='warn'>{esc(n)}</div>" for n in data.notes)
    return f"<section id='provenance'><dl class='prov'>{dl}</dl>{more}{details}{notes}</section>"


def _section_systems(data: ReportData) -> str:
    cl = data.clustering()
    df = cl.get("df")
    df_txt = f"Satterthwaite df {df:.1f}" if isinstance(df, (int, float)) else "df not recorded"
    warn = ""
    if isinstance(df, (int, float)) and df < 4:
        warn = f"<div class='warn'>df {df:.1f} &lt; 4: the intervals are unreliable (too few clusters).</div>"
    text = (
        f"<p class='note'>Means over every question of the gold set (a missing ranking scores 0); below each mean its "
        f"{100 * data.level:.0f} % CR2 cluster-robust interval (Bell &amp; McCaffrey 2002; Satterthwaite df). "
        f"Clustering: <b>{esc(cl.get('mode', '?'))}</b> ({esc(cl.get('n_clusters', '?'))} clusters of questions "
        f"sharing gold documents; {df_txt}).</p>"
    )
    return (
        "<section id='systems'><h2>Systems</h2>"
        + text
        + warn
        + _systems_table(data, "all")
        + _methods_table(data)
        + "</section>"
    )


def _section_categories(data: ReportData, plots) -> str:
    notes = {}
    no_iv = []
    for c in data.categories:
        inf = data.category_info.get(c, {})
        ncl = inf.get("n_clusters", 0)
        notes[c] = f"n={inf.get('n', 0)}, {ncl} cluster{'s' if ncl != 1 else ''}" + ("" if ncl >= 2 else ": no CI")
        if ncl < 2:
            no_iv.append(c)
    vals = {(lab, c): v for (lab, c, m), v in data.category_values.items() if m == "mrr" and lab in set(data.labels)}
    fig = plots.category_bars(data.categories, notes, data.labels, vals, metric_label="MRR", level=data.level)
    svg = plots.figure_svg(fig, FIGURE_IDS["category"], title="MRR per question category with CR2 whiskers")
    cap = (
        f"MRR per category and system. Whiskers: {100 * data.level:.0f} % CR2 intervals computed on the category's "
        "questions with the clusters recorded in the run. "
        + (
            f"No whisker for {', '.join(c.replace('_', ' ') for c in no_iv)}: a single cluster gives no interval. "
            if no_iv
            else ""
        )
        + "Categories hold few questions and fewer clusters, so these intervals are wide and their coverage uncertain."
    )
    head = "".join(
        f"<th>{esc(c.replace('_', ' '))}<br><span class='note'>{esc(notes[c])}</span></th>" for c in data.categories
    )
    rows = []
    for lab in data.labels:
        cells = []
        for c in data.categories:
            v = vals.get((lab, c))
            cells.append("<td>-</td>" if v is None else f"<td>{fmt3(v[0])}<span class='iv'>{fmt_iv(v[1])}</span></td>")
        rows.append(f"<tr><td>{esc(lab)}</td>{''.join(cells)}</tr>")
    table = (
        f"<details><summary>table</summary><div class='body'><table><thead><tr><th class='l'>system</th>{head}</tr>"
        f"</thead><tbody>{''.join(rows)}</tbody></table></div></details>"
    )
    return (
        "<section id='categories'><h2>MRR per category</h2>"
        + _figure(FIGURE_IDS["category"], svg, cap)
        + table
        + "</section>"
    )


def _paired_row(data: ReportData, r: dict) -> str:
    q, c = r["questions"], r["clusters"]
    verdict = "-"
    if r["noninferior"] is not None:
        ok = r["noninferior"]
        if r["metric"] == data.gate_metric:
            verdict = f"<span class='{'pass' if ok else 'fail'}'>{'PASS' if ok else 'FAIL'}</span>"
        else:
            verdict = "yes" if ok else "no"
    return (
        f"<tr><td>{esc(r['label'])}</td><td class='l'>{esc(r['metric'])}</td><td>{fmt3(r['mean_a'])}</td>"
        f"<td>{fmt3(r['mean_b'])}</td><td>{r['diff']:+.3f}</td><td>{fmt_iv((r['lower'], r['upper']))}</td>"
        f"<td>{fmtx(r['lower_one_sided'], '+.3f')}</td><td>{fmtx(r['df'], '.1f')}</td><td>{fmtx(r['p'], '.3g')}</td>"
        f"<td>{fmtx(r['p_holm'], '.3g')}</td><td>{q['wins']}/{q['ties']}/{q['losses']}</td>"
        f"<td>{c['wins']}/{c['ties']}/{c['losses']}</td><td>{verdict}</td></tr>"
    )


def _section_paired(data: ReportData, plots) -> str:
    if not data.paired:
        return f"<section id='paired'><h2>Paired differences</h2><p class='note'>{esc(data.paired_note)}</p></section>"
    metrics = list(dict.fromkeys(r["metric"] for r in data.paired))
    fig = plots.forest(data.paired, metrics, margin=data.margin, level=data.level, alpha=data.alpha)
    svg = plots.figure_svg(fig, FIGURE_IDS["forest"], title="Forest plot of paired differences against the baseline")
    base = data.baseline.label if data.baseline else "?"
    cap = (
        f"Paired differences candidate - <b>{esc(base)}</b> (same questions, clusters of the baseline run). "
        f"Squares: mean difference; lines: two-sided {100 * data.level:.0f} % CR2 interval; vertical ticks: the "
        f"one-sided {100 * (1 - data.alpha):.0f} % lower bound the gate compares with -margin; dashed line: "
        f"-margin = -{data.margin:g} (non-inferiority gate on {esc(data.gate_metric)})."
    )
    head = (
        "<thead><tr><th class='l'>candidate</th><th class='l'>metric</th>"
        f"<th>{esc(base)}</th><th>candidate</th><th>diff</th><th>{100 * data.level:.0f} % CI</th>"
        f"<th>one-sided {100 * (1 - data.alpha):.0f} %<br>lower bound</th><th>df</th><th>p</th><th>p Holm</th>"
        "<th>questions<br>W/T/L</th><th>clusters<br>W/T/L</th>"
        f"<th>lower bound<br>&gt; -{data.margin:g}</th></tr></thead>"
    )
    gate_rows = [_paired_row(data, r) for r in data.paired if r["metric"] == data.gate_metric]
    other_rows = [_paired_row(data, r) for r in data.paired if r["metric"] != data.gate_metric]
    table = ""
    if gate_rows:
        table += f"<table id='table-paired'>{head}<tbody>{''.join(gate_rows)}</tbody></table>"
    table += (
        "<p class='note'>p: cluster-level paired sign-flip randomisation test; Holm across the candidates for each "
        "metric. W/T/L: the candidate's wins, ties and losses against the baseline (questions; cluster means). "
        f"PASS: the gate (<code>harness gate --metric {esc(data.gate_metric)} --margin {data.margin:g}</code>) would "
        "pass.</p>"
    )
    if other_rows:
        table += (
            "<details><summary>other metrics</summary><div class='body'><table id='table-paired-other'>"
            f"{head}<tbody>{''.join(other_rows)}</tbody></table></div></details>"
        )
    return (
        "<section id='paired'><h2>Paired differences against the baseline</h2>"
        + _figure(FIGURE_IDS["forest"], svg, cap)
        + table
        + "</section>"
    )


def _section_depth(data: ReportData, plots) -> str:
    ks = data.runs[0].manifest.get("ks") or [1, 5, 10, 20]
    panels: dict[str, dict] = {}
    for fam in ("all_hop", "evidence_recall"):
        per_sys = {}
        for e in data.entries:
            pts = []
            for k in ks:
                ov = e.overall(f"{fam}@{k}")
                if ov:
                    pts.append((int(k), float(ov["mean"]), _interval(ov)))
            if pts:
                per_sys[e.label] = pts
        if per_sys:
            panels[fam] = per_sys
    if not panels:
        return (
            "<section id='depth'><h2>Depth</h2>"
            "<p class='note'>no all_hop@k / evidence_recall@k in the runs</p></section>"
        )
    ylabels = {
        "all_hop": "all-hop@k: questions with every gold document in the top k (0-1)",
        "evidence_recall": "evidence recall@k: gold chunks in the top k (0-1)",
    }
    fig = plots.depth_curves(panels, data.labels, ylabels=ylabels, level=data.level)
    svg = plots.figure_svg(fig, FIGURE_IDS["depth"], title="all-hop@k and evidence recall@k")
    cap = (
        f"Left: share of questions whose every gold document is in the top k documents. Right: share of gold evidence "
        f"chunks in the top k chunks, averaged over questions. k = {', '.join(str(k) for k in ks)}; vertical lines: "
        f"{100 * data.level:.0f} % CR2 intervals (points dodged sideways)."
    )
    head = "".join(f"<th>{esc(f)}@{k}</th>" for f in panels for k in ks)
    rows = []
    for e in data.entries:
        cells = []
        for f in panels:
            for k in ks:
                ov = e.overall(f"{f}@{k}")
                cells.append(
                    "<td>-</td>"
                    if not ov
                    else f"<td>{fmt3(ov['mean'])}<span class='iv'>{fmt_iv(_interval(ov))}</span></td>"
                )
        rows.append(f"<tr><td>{esc(e.label)}</td>{''.join(cells)}</tr>")
    table = (
        f"<details><summary>table</summary><div class='body'><table><thead><tr><th class='l'>system</th>{head}</tr>"
        f"</thead><tbody>{''.join(rows)}</tbody></table></div></details>"
    )
    return (
        "<section id='depth'><h2>All-hop and evidence recall by depth</h2>"
        + _figure(FIGURE_IDS["depth"], svg, cap)
        + table
        + "</section>"
    )


def rank_lists(data: ReportData) -> dict[str, tuple[dict[str, list], int]]:
    """``{"gold documents": ({label: [rank or None]}, depth), "gold evidence chunks": (...)}`` from the rows."""
    depths = data.runs[0].manifest.get("depths") or {}
    docs: dict[str, list] = {}
    chunks: dict[str, list] = {}
    for e in data.entries:
        d, c = [], []
        for r in e.rows():
            d.extend((r.get("gold_doc_ranks") or {}).values())
            c.extend((r.get("gold_chunk_ranks") or {}).values())
        docs[e.label] = d
        chunks[e.label] = c
    return {
        "gold documents (document ranking)": (docs, int(depths.get("documents", 50))),
        "gold evidence chunks (chunk ranking)": (chunks, int(depths.get("chunks", 200))),
    }


def _rank_summary(ranks: list) -> dict:
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


def _section_ranks(data: ReportData, plots) -> str:
    panels = rank_lists(data)
    fig = plots.rank_ecdf(panels, data.labels)
    svg = plots.figure_svg(fig, FIGURE_IDS["ranks"], title="Distribution of gold document and evidence ranks")
    (cd, cdepth) = list(panels.values())[1]
    (dd, ddepth) = list(panels.values())[0]
    cap = (
        "How deep the gold items sit: cumulative share of gold documents (left) and gold evidence chunks (right) found "
        f"at rank r or better, pooled over questions. A line ending below 100 % at the recorded depth ({ddepth} "
        f"documents, {cdepth} chunks) leaves the rest unretrieved within that depth."
    )
    rows = []
    for lab in data.labels:
        s = _rank_summary(cd.get(lab, []))
        t = _rank_summary(dd.get(lab, []))
        if not s.get("n"):
            continue
        rows.append(
            f"<tr><td>{esc(lab)}</td><td>{t['n']}</td><td>{100 * t['top1']:.0f} %</td><td>{100 * t['top10']:.0f} %</td>"
            f"<td>{100 * t['missing']:.0f} %</td><td>{s['n']}</td><td>{s['median'] if s['median'] else '-'}</td>"
            f"<td>{100 * s['top1']:.0f} %</td><td>{100 * s['top10']:.0f} %</td><td>{100 * s['top20']:.0f} %</td>"
            f"<td>{100 * s['missing']:.0f} %</td></tr>"
        )
    table = (
        "<table id='table-ranks'><thead><tr><th class='l' rowspan='2'>system</th><th colspan='4'>gold documents</th>"
        "<th colspan='6'>gold evidence chunks</th></tr><tr><th>n</th><th>rank 1</th><th>top 10</th>"
        f"<th>not in top {ddepth}</th><th>n</th><th>median rank (found)</th><th>rank 1</th><th>top 10</th>"
        f"<th>top 20</th><th>not in top {cdepth}</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
    return (
        "<section id='ranks'><h2>Where the gold evidence sits</h2>"
        + _figure(FIGURE_IDS["ranks"], svg, cap)
        + table
        + "</section>"
    )


def _section_covered(data: ReportData, plots) -> str:
    ents = data.covered_entries()
    run_cov = next((r.manifest.get("coverage") for r in data.runs if r.manifest.get("coverage")), None)
    if not ents:
        why = (
            "the vector index covers the whole corpus"
            if run_cov
            else "no vector system in the runs (or the index is complete)"
        )
        return (
            "<section id='covered'><h2>Fully covered slice</h2>"
            f"<p class='note'>No fully covered slice: {esc(why)}; every question is scored on the full index.</p>"
            "</section>"
        )
    metrics = [m for m in ("mrr", "recall@10", "evidence_recall@10") if all(e.overall(m, "covered") for e in ents)]
    vals = {}
    for e in ents:
        for sl in ("all", "covered"):
            for m in metrics:
                ov = e.overall(m, sl)
                if ov:
                    vals[(sl, e.label, m)] = (float(ov["mean"]), _interval(ov))
    n_cov = ents[0].summary["covered"].get("n_questions")
    n_all = ents[0].summary.get("all", {}).get("n_questions")
    fig = plots.slice_compare(
        metrics,
        [e.label for e in ents],
        vals,
        slices=(("all", f"all questions (n={n_all})"), ("covered", f"fully covered questions (n={n_cov})")),
        level=data.level,
    )
    svg = plots.figure_svg(fig, FIGURE_IDS["covered"], title="All questions against the fully covered slice")
    cov_txt = ""
    if run_cov:
        frac = run_cov.get("chunk_fraction")
        cov_txt = (
            f"The vector index holds {run_cov.get('n_indexed_chunks', '?')} of {run_cov.get('n_total_chunks', '?')} "
            f"chunks ({100 * frac:.1f} %)"
            if isinstance(frac, (int, float))
            else "The vector index is partial"
        ) + (
            f"; {run_cov.get('gold_documents_fully_indexed', '?')} of {run_cov.get('gold_documents', '?')} gold "
            "documents are fully indexed."
        )
    cap = (
        "Each system on all questions (filled circles, solid lines) and on the questions whose gold documents are all "
        f"fully indexed (open squares, dashed lines), {100 * data.level:.0f} % CR2 intervals. {esc(cov_txt)} Lexical "
        "systems are scored on the same slice so the comparison is like for like."
    )
    table = _systems_table(data, "covered")
    return (
        "<section id='covered'><h2>Fully covered slice</h2>"
        + _figure(FIGURE_IDS["covered"], svg, cap)
        + table
        + "</section>"
    )


def _pct(x) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f} %"


def _pts(x) -> str:
    """A difference of two proportions in signed percentage points."""
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:+.1f} pts"


def _section_known_item(data: ReportData, plots) -> str:
    ki = data.known_item
    if ki is None:
        return ""
    s = ki["summary"]
    rates: dict[str, list[float]] = {}
    for o in ki["per_document"]:
        n = o.get("n") or 0
        if n > 0:
            rates.setdefault(str(o["system"]), []).append(float(o.get("rate", o.get("s", 0) / n)))
    parts = ["<section id='known-item'><h2>Known-item study</h2>"]
    cfg = s.get("config", {})
    counts = s.get("counts", {})
    parts.append(
        f"<p class='note'>Each chunk's first {esc(cfg.get('query_words', '?'))} words as a query "
        f"({esc(cfg.get('chunker_id', '?'))}); a hit when the top result belongs to the query's own document. "
        f"Corpus {esc(s.get('corpus_id', '?'))}: {esc(counts.get('queries', '?'))} queries over "
        f"{esc(counts.get('documents', '?'))} documents. Source: <code>{esc(ki['path'])}</code>.</p>"
    )
    if rates:
        fig = plots.hit_rate_hist(rates)
        svg = plots.figure_svg(fig, FIGURE_IDS["known_item"], title="Per-document known-item hit-rate distribution")
        parts.append(
            _figure(
                FIGURE_IDS["known_item"],
                svg,
                "Distribution of the per-document hit@1 rate. Queries of one document are correlated (a cluster): "
                "the spread of these rates across documents, not the number of queries, sets how wide an honest "
                "interval must be.",
            )
        )
    else:
        parts.append("<p class='note'>per_document.jsonl not found: no hit-rate distribution.</p>")
    rows = []
    for name, sy in s.get("systems", {}).items():
        pdoc = sy.get("per_document", {})
        dg = sy.get("diagnostics", {})
        rows.append(
            f"<tr><td>{esc(name)}</td><td>{sy.get('queries', '-')}</td><td>{sy.get('documents', '-')}</td>"
            f"<td>{_pct(sy.get('micro_hit1'))}</td><td>{_pct(sy.get('macro_hit1'))}</td>"
            f"<td>{fmt3(sy.get('mrr_first_same_doc'))}</td><td>{_pct(pdoc.get('share_at_zero'))}</td>"
            f"<td>{_pct(pdoc.get('share_at_one'))}</td><td>{fmt3(dg.get('icc'))}</td>"
            f"<td>{fmtx(dg.get('deff'), '.1f')}</td>"
            f"<td>{fmtx(dg.get('n_eff'), '.0f')}</td></tr>"
        )
    parts.append(
        "<table id='table-known-item'><thead><tr><th class='l'>system</th><th>queries</th><th>documents</th>"
        "<th>micro hit@1</th><th>macro hit@1</th><th>MRR (own doc)</th><th>docs at 0</th><th>docs at 1</th>"
        "<th>ICC</th><th>DEFF</th><th>N eff</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )
    paired = s.get("paired") or {}
    if paired:
        prow = []
        for name, p in paired.items():
            mci, aci = p.get("micro_ci") or [None, None], p.get("macro_ci") or [None, None]
            prow.append(
                f"<tr><td>{esc(name)}</td><td>{_pts(p.get('micro_diff'))}</td>"
                f"<td>[{_pts(mci[0])}, {_pts(mci[1])}]</td><td>{_pts(p.get('macro_diff'))}</td>"
                f"<td>[{_pts(aci[0])}, {_pts(aci[1])}]</td><td>{p.get('only_a', '-')}/{p.get('only_b', '-')}</td></tr>"
            )
        parts.append(
            "<table><thead><tr><th class='l'>paired (B - A)</th><th>micro diff</th><th>95 % CI (CR2)</th>"
            "<th>macro diff</th><th>95 % CI (t)</th><th>only A / only B hit</th></tr></thead><tbody>"
            + "".join(prow)
            + "</tbody></table>"
        )
    parts.append("</section>")
    return "".join(parts)


def _coverage_labels() -> dict[str, str]:
    try:
        from harness.studies.coverage import METHODS
    except ImportError:  # pragma: no cover - the coverage module ships with the harness
        return {}
    return {k: v[1] + (" (macro)" if v[0] == "macro" else "") for k, v in METHODS.items()}


def _coverage_order() -> list[str]:
    try:
        from harness.studies.coverage import METHODS
    except ImportError:  # pragma: no cover
        return []
    return list(METHODS)


def coverage_series(cov: dict) -> tuple[dict, dict, list]:
    """``(coverage series, width series, srs designs)`` for the plots from a ``coverage.json`` dict.

    Series are ``{panel: {method: [(K, coverage, margin)]}}`` / ``{panel: {method: [(K, width)]}}``, panels
    ``without FPC`` and ``with FPC (1 - K/D)``, methods in :data:`harness.studies.coverage.METHODS` order.
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
    known = _coverage_order()

    def rank(m: str) -> tuple[int, str]:
        return (known.index(m) if m in known else len(known), m)

    cser = {p: {m: cser[p][m] for m in sorted(cser[p], key=rank)} for p in order if p in cser}
    wser = {p: {m: wser[p][m] for m in sorted(wser[p], key=rank)} for p in order if p in wser}
    return cser, wser, srs


def _macro_methods(cov: dict) -> list[str]:
    return sorted(
        {
            r.get("method", k)
            for d in cov.get("designs", [])
            for k, r in (d.get("rows") or {}).items()
            if r.get("target") == "macro"
        }
    )


def _section_coverage(data: ReportData, plots) -> str:
    if data.coverage is None:
        return ""
    cov = data.coverage["data"]
    cfg = cov.get("config", {})
    pop = cov.get("population", {})
    level = float(cfg.get("level", 0.95))
    reps = int(cfg.get("reps", 0) or 0)
    labels = _coverage_labels()
    cser, wser, srs = coverage_series(cov)
    parts = ["<section id='coverage'><h2>Interval coverage on this corpus</h2>"]
    parts.append(
        f"<p class='note'>The known-item outcomes of <b>{esc(pop.get('system', '?'))}</b> as a finite population "
        f"({esc(pop.get('documents', '?'))} documents, {esc(pop.get('queries', '?'))} queries; micro "
        f"{_pct(pop.get('micro'))}, macro {_pct(pop.get('macro'))}), sampled R = {reps} times at each K; how often "
        f"each method's {100 * level:g} % interval covers the population value. Source: "
        f"<code>{esc(data.coverage['path'])}</code>.</p>"
    )
    if cser:
        macro = _macro_methods(cov)
        fig = plots.coverage_vs_k(cser, level=level, reps=reps, labels=labels, open_markers=macro)
        svg = plots.figure_svg(fig, FIGURE_IDS["coverage"], title="Interval coverage against K")
        band = 1.96 * math.sqrt(level * (1 - level) / max(reps, 1))
        parts.append(
            _figure(
                FIGURE_IDS["coverage"],
                svg,
                f"Coverage against the number of sampled documents K (simple random sampling). Solid line: nominal "
                f"{100 * level:g} %; grey band: nominal ± Monte Carlo margin ({100 * band:.1f} points at R = {reps}); "
                "error bars: each point's own Monte Carlo margin 1.96 sqrt(p (1 - p) / R). Open markers: methods for "
                "the macro rate (mean of document rates); filled: the micro rate (mean of chunk outcomes).",
            )
        )
        fig = plots.width_vs_k(wser, labels=labels, open_markers=macro)
        svg = plots.figure_svg(fig, FIGURE_IDS["width"], title="Interval width against K")
        parts.append(
            _figure(
                FIGURE_IDS["width"],
                svg,
                "Mean interval width (bounds clipped to [0, 1]) against K; narrow intervals that under-cover are not "
                "a virtue.",
            )
        )
        methods = list(dict.fromkeys(m for p in cser.values() for m in p))
        ks = [d["K"] for d in srs]
        head = "".join(f"<th>K={k}</th>" for k in ks)
        pub = cov.get("published_k20") or {}
        rows = []
        for m in methods:
            cells = []
            for d in srs:
                r = d["rows"].get(m)
                cells.append(
                    "<td>-</td>" if not r else f"<td>{100 * r['coverage']:.1f} ± {100 * r['mc_margin']:.1f}</td>"
                )
            p = pub.get(m)
            rows.append(
                f"<tr><td>{esc(labels.get(m, m))}</td>{''.join(cells)}"
                f"<td>{fmtx(None if p is None else 100 * p, '.1f')}</td></tr>"
            )
        parts.append(
            f"<table id='table-coverage'><thead><tr><th class='l'>method (no FPC)</th>{head}<th>published, K=20</th>"
            f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        )
    for d in cov.get("designs", []):
        if d.get("design") == "srs":
            continue
        if not d.get("rows"):
            parts.append(
                f"<p class='note'>{esc(d.get('design'))} design skipped: "
                f"{esc(d.get('note', {}).get('skipped', ''))}</p>"
            )
            continue
        note = d.get("note", {})
        rows = "".join(
            f"<tr><td>{esc(labels.get(r.get('method', k), k))}{' +FPC' if r.get('fpc') else ''}</td>"
            f"<td>{100 * r['coverage']:.1f} ± {100 * r['mc_margin']:.1f}</td><td>{100 * r['mean_width']:.2f}</td></tr>"
            for k, r in d["rows"].items()
        )
        parts.append(
            f"<h3>{esc(d['design'])} design: {esc(note.get('h', '?'))} types x {esc(note.get('m', '?'))} documents "
            f"(K = {esc(d.get('K'))}, R = {esc(d.get('reps'))})</h3><table><thead><tr><th class='l'>method</th>"
            f"<th>coverage (%)</th><th>mean width (points)</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    parts.append("</section>")
    return "".join(parts)


def _gold_docs(rec: dict | None, rows: list[dict]) -> list[dict]:
    """Gold documents of a question: ``{"id", "role", "grade", "title", "evidence": [{"chunk_id", "quote"}]}``."""
    if rec and rec.get("gold_documents"):
        out = []
        for g in rec["gold_documents"]:
            out.append(
                {
                    "id": str(g.get("document_id")),
                    "role": g.get("role", ""),
                    "grade": g.get("grade", ""),
                    "where": " > ".join(g.get("heading_path") or []) or g.get("relpath", ""),
                    "evidence": [
                        {"chunk_id": str(ev.get("chunk_id")), "quote": ev.get("quote", "")}
                        for ev in g.get("evidence", [])
                    ],
                }
            )
        return out
    ids: dict[str, dict] = {}
    for r in rows:
        for d in r.get("gold_doc_ranks") or {}:
            ids.setdefault(d, {"id": d, "role": "", "grade": "", "where": "", "evidence": []})
        for c in r.get("gold_chunk_ranks") or {}:
            d = c.split("#", 1)[0]
            ent = ids.setdefault(d, {"id": d, "role": "", "grade": "", "where": "", "evidence": []})
            if all(ev["chunk_id"] != c for ev in ent["evidence"]):
                ent["evidence"].append({"chunk_id": c, "quote": ""})
    return list(ids.values())


def _rank_cell(rank) -> str:
    return "<td>-</td>" if rank is None else f"<td>{rank}</td>"


def _section_questions(data: ReportData) -> str:
    labels = data.labels
    parts = [
        "<section id='questions'><h2>Questions</h2>",
        f"<p class='note'>One line per question (click to open): MRR of each system. Inside: the question, the gold "
        f"documents and evidence chunks with the rank each system gave them (- = not in the recorded depth), the "
        f"quotes, and each system's top 3 documents (gold in bold). {esc(data.gold_note)}.</p>",
    ]
    sys_head = "".join(f"<th>{esc(lab)}</th>" for lab in labels)
    for qid in data.qids():
        rec = (data.gold or {}).get(qid)
        rows = [data.row(lab, qid) for lab in labels]
        present = [r for r in rows if r]
        cat = present[0]["category"] if present else (rec or {}).get("category", "")
        question = (rec or {}).get("question", "")
        short = question if len(question) <= 110 else question[:107].rstrip() + "..."
        mrrs = " &middot; ".join(
            f"{esc(lab)} {fmt3(r['metrics'].get('mrr')) if r else '-'}" for lab, r in zip(labels, rows, strict=True)
        )
        body = []
        if question:
            body.append(f"<p><b>{esc(question)}</b></p>")
        if rec and rec.get("reference_answer"):
            body.append(f"<p class='note'>Reference answer: {esc(rec['reference_answer'])}</p>")
        gdocs = _gold_docs(rec, present)
        gold_ids = {g["id"] for g in gdocs}
        if gdocs:
            trs = []
            for g in gdocs:
                ranks = "".join(_rank_cell((r or {}).get("gold_doc_ranks", {}).get(g["id"])) for r in rows)
                trs.append(
                    f"<tr><td class='l'><code>{esc(g['id'])}</code><span class='iv'>{esc(g['where'])}</span></td>"
                    f"<td class='l'>{esc(g['role'])}</td><td>{esc(g['grade'])}</td>{ranks}</tr>"
                )
            body.append(
                f"<table><thead><tr><th class='l'>gold document</th><th class='l'>role</th><th>grade</th>{sys_head}"
                f"</tr></thead><tbody>{''.join(trs)}</tbody></table>"
            )
            trs = []
            quotes: dict[str, list[str]] = {}
            for g in gdocs:
                for ev in g["evidence"]:
                    quotes.setdefault(ev["chunk_id"], [])
                    if ev["quote"]:
                        quotes[ev["chunk_id"]].append(ev["quote"])
            for cid, qs in quotes.items():
                ranks = "".join(_rank_cell((r or {}).get("gold_chunk_ranks", {}).get(cid)) for r in rows)
                quote = "".join(f"<blockquote>{esc(q)}</blockquote>" for q in qs)
                trs.append(f"<tr><td class='l wrap'><code>{esc(cid)}</code>{quote}</td>{ranks}</tr>")
            if trs:
                body.append(
                    f"<table><thead><tr><th class='l'>evidence chunk and quote</th>{sys_head}</tr></thead>"
                    f"<tbody>{''.join(trs)}</tbody></table>"
                )
        tops = []
        for lab, r in zip(labels, rows, strict=True):
            if not r:
                continue
            items = []
            for d, _score in (r.get("docs") or [])[:3]:
                items.append(f"<b>{esc(d)}</b>" if d in gold_ids else esc(d))
            flags = [k for k, v in (r.get("flags") or {}).items() if v is True and not k.startswith("evaluated")]
            fl = f" <span class='note'>({esc(', '.join(flags))})</span>" if flags else ""
            tops.append(f"<li>{esc(lab)}: <code>{', '.join(items) or '(nothing retrieved)'}</code>{fl}</li>")
        if tops:
            body.append(f"<p class='note'>Top 3 documents:</p><ul>{''.join(tops)}</ul>")
        parts.append(
            f"<details id='q-{_slug(qid)}'><summary><code>{esc(qid)}</code> <span class='note'>"
            f"{esc(str(cat).replace('_', ' '))}</span> {esc(short)} <span class='note'>[{mrrs}]</span></summary>"
            f"<div class='body'>{''.join(body)}</div></details>"
        )
    parts.append("</section>")
    return "".join(parts)


def _footer(data: ReportData) -> str:
    items = []
    for run in data.runs:
        sums = []
        for name in ("manifest.json", "summary.json", "per_question.jsonl"):
            p = run.path / name
            if p.exists():
                sums.append(f"{name} {sha256_file(p)[:12]}")
        items.append(f"<li><code>{esc(run.path)}</code>: {esc('; '.join(sums))}</li>")
    for extra in (data.known_item, data.coverage):
        if extra:
            items.append(f"<li><code>{esc(extra['path'])}</code></li>")
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return (
        f"<footer><p>Generated by harness {esc(__version__)} at {esc(now)} from these files only (sha256 prefixes):"
        f"</p><ul>{''.join(items)}</ul></footer>"
    )


def figure_ids(data: ReportData) -> list[str]:
    """The figure ids a report of ``data`` holds (the optional ones only when their input is there)."""
    ids = [FIGURE_IDS["category"]]
    if data.paired:
        ids.append(FIGURE_IDS["forest"])
    if any(e.overall(f"{f}@{k}") for e in data.entries for f in ("all_hop", "evidence_recall") for k in (1, 5, 10, 20)):
        ids.append(FIGURE_IDS["depth"])
    ids.append(FIGURE_IDS["ranks"])
    if data.covered_entries():
        ids.append(FIGURE_IDS["covered"])
    if data.known_item and any((o.get("n") or 0) > 0 for o in data.known_item["per_document"]):
        ids.append(FIGURE_IDS["known_item"])
    if data.coverage and coverage_series(data.coverage["data"])[0]:
        ids += [FIGURE_IDS["coverage"], FIGURE_IDS["width"]]
    return ids


def render_html(data: ReportData) -> str:
    """The whole report as one HTML document (no external resources; SVG figures inline)."""
    from harness.report import plots

    gs = data.runs[0].manifest.get("goldset") or {}
    co = data.runs[0].manifest.get("corpus") or {}
    title = f"Retrieval report: {gs.get('name', '?')} v{gs.get('version', '?')} on {co.get('corpus_id', '?')}"
    sections = [
        _section_systems(data),
        _section_categories(data, plots),
        _section_paired(data, plots),
        _section_depth(data, plots),
        _section_ranks(data, plots),
        _section_covered(data, plots),
        _section_known_item(data, plots),
        _section_coverage(data, plots),
        _section_questions(data),
    ]
    nav_items = [
        ("systems", "systems"),
        ("categories", "categories"),
        ("paired", "paired differences"),
        ("depth", "depth"),
        ("ranks", "gold ranks"),
        ("covered", "covered slice"),
    ]
    if data.known_item:
        nav_items.append(("known-item", "known-item"))
    if data.coverage:
        nav_items.append(("coverage", "coverage"))
    nav_items.append(("questions", "questions"))
    nav = "<nav>" + "".join(f"<a href='#{a}'>{esc(t)}</a>" for a, t in nav_items) + "</nav>"
    ids = figure_ids(data)
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'; img-src data:\">"
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        f"<header><h1>{esc(title)}</h1>{_section_provenance(data)}{nav}</header><main>"
        + "".join(sections)
        + "</main>"
        + _footer(data)
        + f"<script type='application/json' id='report-figures'>{json.dumps(ids)}</script>"
        + "<script type='application/json' id='figure-layout'>{}</script>"
        + f"<script>{MEASURE_JS}</script></body></html>\n"
    )


def write_report(
    runs: Sequence[str | Path],
    out: str | Path,
    *,
    fmt: str = "html",
    baseline: str | Path | None = None,
    margin: float = 0.02,
    known_item: str | Path | None = None,
    coverage: str | Path | None = None,
) -> Path:
    """Write a report of run records: one self-contained HTML file, or Markdown for a pull-request comment.

    Args:
        runs: run record folders (``runs/<id>``); several runs must be comparable.
        out: the file to write (atomically).
        fmt: ``"html"`` or ``"markdown"``.
        baseline: the system paired differences are taken against: a system label (``bm25`` or ``run-id:bm25``)
            or a run folder (its first system). Default: the first system of the first run.
        margin: the non-inferiority gate's margin in metric units (drawn on the forest plot).
        known_item: a known-item output folder (``summary.json``, ``per_document.jsonl``, optional
            ``coverage.json``).
        coverage: a coverage study's ``coverage.json`` (or its folder).

    Returns:
        ``out`` as a :class:`~pathlib.Path`.

    Raises:
        IncomparableError: runs that differ in gold set, corpus, chunker or depths (exit 2).
        HarnessInputError: a missing or malformed input, an unknown format or baseline, a negative margin (exit 2).
    """
    if fmt not in FORMATS and fmt != "md":
        raise HarnessInputError(f"--format: {fmt!r} is not one of {', '.join(FORMATS)}")
    data = build_report(runs, baseline=baseline, margin=margin, known_item=known_item, coverage=coverage)
    if fmt == "html":
        text = render_html(data)
    else:
        from harness.report.markdown import render_markdown

        text = render_markdown(data)
    out = Path(out)
    atomic_write_text(out, text)
    return out
