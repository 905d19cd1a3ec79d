"""Rich terminal output of the verbs that judge run records: ``run``/``evaluate`` tables, ``compare``, ``gate``,
``power`` and ``sweep`` (the ``table`` format of :mod:`harness.report.formats`).

Every string from an input (system names, categories, question and chunk ids, notes) is escaped for rich markup
(:func:`harness.report.format.rich_text`, plain :class:`rich.text.Text` for titles), so a name such as ``[red]x``
prints as itself.
"""

from __future__ import annotations

import re
import textwrap

from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness.evaluation.changes import change_line
from harness.evaluation.compare import ComparisonReport
from harness.evaluation.gate import EXIT_CODES, POWER, GateCheck, GateVerdict
from harness.evaluation.known_item_gate import KnownItemCheck, known_item_provenance
from harness.evaluation.record import MetricSummary
from harness.evaluation.runs import RunRecord
from harness.evaluation.sweep import SweepResult
from harness.goldset.schema import CATEGORIES
from harness.metrics import METRIC_SETS, outcome_of
from harness.report.format import MISSING, diff_iv, fmt_iv, legend, mean_iv, num, rich_text, spaced, wtl
from harness.report.regressions import regressions_table
from harness.report.wording import gate_evidence_lines
from harness.stats.methods import evidence_notes, paired_evidence_lines
from harness.stats.shown import ShownIntervals
from harness.terminal_safe import escape_controls as esc
from harness.terminal_safe import safe_console

MAIN_METRICS = METRIC_SETS["terminal"]
EVIDENCE_METRICS = METRIC_SETS["terminal_evidence"]


def fmt_interval(entry: MetricSummary | None, method: str = "cr2") -> str:
    """``0.412 [0.301, 0.523]`` from a summary entry, with the interval's marks (``1.000ᶜ``, ``+inf``,
    ``[degenerate]``; :func:`harness.report.format.fmt_iv`); ``n/a`` when the metric is not available."""
    if entry is None:
        return "n/a"
    return mean_iv(entry.mean, entry.intervals.get(method))


def run_slice(run: RunRecord) -> str:
    """The summary slice a run's tables show: the split the run was asked for (``run --split``), else ``all``."""
    return getattr(run.manifest, "split", None) or "all"


def slice_intervals(run: RunRecord, slice_name: str, metrics, method: str | None = None) -> list:
    """The recorded intervals (records) of ``metrics`` over one slice, every system (for legends and warnings):
    ``method``'s, or (``None``) the ones the tables show (each entry's recorded choice, ``MetricSummary.shown``)."""
    out = []
    for s in run.summary.systems.values():
        sl = s.get(slice_name)
        for m in metrics if sl is not None else ():
            ov = sl.metric(m)
            if ov is None:
                continue
            iv = ov.shown if method is None else ov.intervals.get(method)
            if iv is not None:
                out.append(iv)
    return out


def interval_warnings(ivs) -> list[str]:
    """The distinct warnings (few clusters, infinite bounds) of interval records or dicts, in order."""
    seen: dict[str, None] = {}
    for iv in ivs:
        extras = iv.get("extras", {}) if isinstance(iv, dict) else iv.extras
        for w in (extras or {}).get("warnings", []):
            seen.setdefault(str(w), None)
    return list(seen)


def _df(run: RunRecord) -> str:
    return num(run.manifest.clusters.df, ".1f").replace(MISSING, "n/a")


def stacked(cell: str) -> str:
    """``0.412 [0.301, 0.523]`` as two lines, the estimate above its interval (a narrow terminal's layout)."""
    est, _, rest = cell.partition(" ")
    return f"{est}\n{rest}" if rest else est


_INTERVAL = re.compile(r"\[[^\[\]\n]*\]")
_KEEP = "\ue000"  # a private-use character standing for a space that must not break


def wrap_keeping_intervals(line: str, width: int) -> str:
    """``line`` wrapped at spaces to ``width`` columns, never inside a bracketed interval (``[-0.0309, +0.0586]``);
    a word longer than ``width`` stays whole. Returns the lines joined by newlines."""
    if _KEEP in line or width < 1:
        return line
    kept = _INTERVAL.sub(lambda m: m.group(0).replace(" ", _KEEP), line)
    wrapped = textwrap.wrap(kept, width=width, break_long_words=False, break_on_hyphens=False)
    return "\n".join(wrapped).replace(_KEEP, " ")


def fits(console: Console, renderable) -> bool:
    """Whether ``renderable`` drawn at its natural width fits the console's width (nothing wraps or is cut)."""
    return console.measure(renderable, options=console.options.update(max_width=10_000)).maximum <= console.width


def systems_table(
    run: RunRecord, slice_name: str = "all", metrics=MAIN_METRICS, *, narrow: bool = False, estimand: bool = True
) -> Table:
    """System x metric table with 95 % intervals, per metric the rule's default for the run's design
    (:class:`harness.stats.shown.ShownIntervals`, named in the title); an interval never wraps inside itself
    (``no_wrap``), and with ``narrow`` each cell puts the estimate above its interval (:func:`stacked`); the
    estimand line is printed under the first table of an output only (``estimand=False`` for the others)."""
    first = next(iter(run.summary.systems.values()), {})
    n_q = first[slice_name].n_questions if slice_name in first else 0
    cl = run.manifest.clusters
    sub = (run.manifest.model_extra or {}).get("subset")
    of_subset = f" of the subset {sub['label']}" if sub else ""
    shown = ShownIntervals.for_run(run, slice_name)
    recorded: dict[str, tuple[str, set[str]]] = {}
    for s in run.summary.systems.values():
        for m in metrics if slice_name in s else ():
            ov = s[slice_name].overall.get(m)
            if ov is not None and ov.intervals:
                recorded.setdefault(m, (outcome_of(m), set()))[1].update(ov.intervals)
    title = (
        f"{slice_name} questions{of_subset} (n={n_q}); 95 % {shown.phrase(recorded)} intervals, clustering {cl.mode}"
        f" ({cl.n_clusters} clusters, df {_df(run) if slice_name == 'all' else 'see JSON'})"
    )
    t = Table(title=Text(title), title_justify="left")
    t.add_column("system", style="bold")
    for m in metrics:
        t.add_column(m, justify="right", no_wrap=True)
    shape = stacked if narrow else str
    for system, s in run.summary.systems.items():
        if slice_name not in s:
            continue
        ov = s[slice_name].overall
        cells = [mean_iv(ov[m].mean, ov[m].shown) if m in ov else "n/a" for m in metrics]
        t.add_row(rich_text(system), *[rich_text(shape(c)) for c in cells])
    lines = [
        legend(slice_intervals(run, slice_name, metrics)),
        *evidence_notes(
            shown.by_class(recorded), recorded, design=shown.design, source=shown.source, estimand=estimand
        ),
    ]
    if any(lines):
        t.caption = Text("\n".join(x for x in lines if x))
        t.caption_justify = "left"
    return t


def category_table(run: RunRecord, metric: str = "mrr", slice_name: str = "all", *, transpose: bool = False) -> Table:
    """Per-category means of one metric, one row per system (``transpose``: one row per category, one column per
    system, for a terminal too narrow for a column per category)."""
    t = Table(title=Text(f"{metric} per category ({slice_name} questions)"), title_justify="left")
    slices = [s[slice_name] for s in run.summary.systems.values() if slice_name in s]
    present = {c for sl in slices for c in sl.per_category}
    cats = [c for c in CATEGORIES if c in present] + sorted(present - set(CATEGORIES))
    if transpose:
        shown = {system: s[slice_name].per_category for system, s in run.summary.systems.items() if slice_name in s}
        t.add_column("category", style="bold", no_wrap=True)
        for system in shown:
            t.add_column(rich_text(system), justify="right")
        for c in cats:
            t.add_row(rich_text(c), *[num(pc[c].metrics.get(metric), ".3f") if c in pc else MISSING
                                      for pc in shown.values()])  # fmt: skip
        return t
    t.add_column("system", style="bold")
    for c in cats:
        t.add_column(rich_text(spaced(c)), justify="right")
    for system, s in run.summary.systems.items():
        if slice_name not in s:
            continue
        pc = s[slice_name].per_category
        t.add_row(rich_text(system), *[num(pc[c].metrics.get(metric), ".3f") if c in pc else MISSING for c in cats])
    return t


def deep_evidence(run: RunRecord, depth: int = 20) -> dict[str, list[str]]:
    """Gold chunks found deeper than ``depth``: ``{system: ["qid chunk_id@rank", ...]}``."""
    out: dict[str, list[str]] = {}
    for row in run.per_question:
        for cid, rank in row.gold_chunk_ranks.items():
            if rank is not None and rank > depth:
                out.setdefault(row.system, []).append(f"{row.qid} {cid}@{rank}")
    return out


def _yellow(text: str) -> Text:
    return Text(text, style="yellow")


def run_warnings(run: RunRecord) -> list[str]:
    """The warnings of a run: its own (``summary.warnings``: reading external rankings), then the few-cluster
    warnings of its shown slice (:func:`run_slice`): the clustering's (all questions) and those of its recorded CR2
    intervals."""
    sl = run_slice(run)
    out = list(run.summary.warnings)
    out += [run.manifest.clusters.warning] if run.manifest.clusters.warning and sl == "all" else []
    return out + interval_warnings(slice_intervals(run, sl, (*MAIN_METRICS, *EVIDENCE_METRICS)))


def run_notices(run: RunRecord) -> list[str]:
    """What changes the reading of a run's numbers besides the intervals' warnings: per system, the questions it
    returned no ranking for (scored 0) and the levels it returned no rankings at (those metrics are n/a)."""
    out = []
    sub = (run.manifest.model_extra or {}).get("subset")
    if sub:
        out.append(
            f"subset {sub['label']}: {sub['n_questions']} of {sub['of']} questions scored and recorded "
            f"({run.manifest.clusters.n_clusters} cluster{'s' * (run.manifest.clusters.n_clusters != 1)})"
        )
    for system, s in run.summary.systems.items():
        whole = s.get("all")
        if whole is None:
            continue
        if whole.counts is not None and whole.counts.n_missing:
            out.append(
                f"{system}: {whole.counts.n_missing} of {whole.counts.n_questions} questions have no ranking and "
                "score 0"
            )
        out += [f"{system}: no {lv} rankings; those metrics are n/a" for lv, ok in whole.levels.items() if not ok]
    return out


def print_warnings(lines: list[str], console: Console) -> None:
    """Print warnings as yellow ``warning: ...`` lines (every input string escaped: plain :class:`Text`)."""
    for w in lines:
        console.print(_yellow(f"warning: {w}"), soft_wrap=True)


def print_changes(changes, console: Console) -> None:
    """One ``changed: vector.model wordllama → use`` line per configuration change
    (:mod:`harness.evaluation.changes`), every value escaped (plain :class:`Text`); nothing when there is none."""
    for c in changes:
        console.print(Text(esc(change_line(c))), soft_wrap=True)


def render_run(run: RunRecord, console: Console | None = None) -> None:
    """Print the systems table (the questions of the run's split, all by default, and, when present, the fully
    covered slice), per-category MRR and evidence recall (the warnings, :func:`run_notices` and
    :func:`run_warnings`, are printed by the caller: :func:`harness.report.formats.format_table`)."""
    console = console or safe_console()
    shown = run_slice(run)
    narrow = not fits(console, systems_table(run, shown)) or not fits(
        console, systems_table(run, shown, metrics=EVIDENCE_METRICS)
    )
    console.print(systems_table(run, shown, narrow=narrow))
    first = next(iter(run.summary.systems.values()), {})
    if "covered" in first:
        console.print(systems_table(run, "covered", narrow=narrow, estimand=False))
    cats = category_table(run, "mrr", shown)
    console.print(cats if fits(console, cats) else category_table(run, "mrr", shown, transpose=True))
    console.print(systems_table(run, shown, metrics=EVIDENCE_METRICS, narrow=narrow, estimand=False))
    chosen = run.manifest.chosen_metrics
    if chosen:  # harness run --metrics: the metrics asked for
        console.print(systems_table(run, shown, metrics=tuple(chosen), narrow=narrow, estimand=False))
    if shown != "all" and "all" in first:
        console.print(
            Text(
                f"split {shown}: {first[shown].n_questions} of {first['all'].n_questions} questions shown (the record "
                "holds every question; its summary has this split as a slice)"
            )
        )
    deep = deep_evidence(run)
    if deep:
        n = sum(len(v) for v in deep.values())
        console.print(f"gold chunks found deeper than rank 20 ({n}; qid chunk@rank):")
        for system, items in deep.items():
            more = f"; … {len(items) - 8} more in per_question.jsonl" if len(items) > 8 else ""
            console.print(rich_text(f"  {system} ({len(items)}): " + "; ".join(items[:8]) + more), soft_wrap=True)
    ties = []
    for system, s in run.summary.systems.items():
        fs = s["all"].flag_shares if "all" in s else {}
        parts = [
            f"{k.replace('_tie_at_boundary', '')} {100 * fs[k]:.0f}%"
            for k in ("doc_tie_at_boundary", "chunk_tie_at_boundary")
            if k in fs
        ]
        if parts:
            ties.append(f"{system} ({', '.join(parts)})")
    if ties:
        console.print(Text("questions whose top-k cut-off fell in a score tie (resolved by id): " + "; ".join(ties)))
    cov = run.manifest.coverage
    if cov is not None:
        console.print(
            f"vector index: {cov.n_indexed_chunks}/{cov.n_total_chunks} chunks; gold documents fully "
            f"indexed {cov.gold_documents_fully_indexed}/{cov.gold_documents}"
        )


def _print_regressions(console: Console, what: str, items) -> None:
    t = regressions_table(esc(what), items)
    if t is not None:
        console.print(t)


def _split_text(split: str) -> str:
    return "" if split == "all" else f"; {split} split only"


def _narrow_comparison_table(rep: ComparisonReport, title) -> Table:
    """The comparison table for a narrow terminal: the same cells, paired ones stacked two lines high (A over B,
    mean A over mean B, randomisation over Holm p, question over cluster W/T/L); the interval stays on one line."""
    t = Table(title=title, title_justify="left")
    for col in ("A\nB", "metric", "mean A\nmean B", "B - A [CI]", "df", "p rand.\np Holm", "W/T/L q\nW/T/L cl"):
        t.add_column(col, justify="left" if col in ("A\nB", "metric") else "right", no_wrap=True)
    for c in rep.comparisons:
        iv = c.interval
        t.add_row(
            Text("\n").join([rich_text(c.system_a), rich_text(c.system_b)]),
            rich_text(c.metric),
            f"{c.mean_a:.3f}\n{c.mean_b:.3f}",
            rich_text(diff_iv(c.diff, iv)),
            num(iv.get("df"), ".1f"),
            f"{c.p_randomization:.3f}\n{num(c.p_holm, '.3f')}",
            f"{wtl(c.questions)}\n{wtl(c.clusters)}",
        )
    return t


def render_comparison(rep: ComparisonReport, console: Console | None = None) -> None:
    """Print a :class:`~harness.evaluation.compare.ComparisonReport`: one row per (pair, metric) with the interval's
    marks and the notes, then per-category rows (with intervals) and the regressed questions
    (:mod:`harness.report.regressions`) of the first metric (the few-cluster warnings are printed by
    :func:`harness.report.formats.format_table`)."""
    console = console or safe_console()
    cl = rep.clustering
    t = Table(
        title=Text(
            f"paired differences B - A ({100 * rep.level:g} % {rep.method_label} intervals; clustering "
            f"{cl.get('mode')}, {cl.get('n_clusters')} clusters{_split_text(rep.split)})"
        ),
        title_justify="left",
    )
    cols = ("A", "B", "metric", "mean A", "mean B", "B - A [CI]", "df", "p (rand.)", "p (Holm)", "W/T/L q")
    for col in (*cols, "W/T/L cl"):
        t.add_column(col, justify="right" if col not in ("A", "B", "metric") else "left", no_wrap=col == "B - A [CI]")
    for c in rep.comparisons:
        iv = c.interval
        t.add_row(
            rich_text(c.system_a),
            rich_text(c.system_b),
            c.metric,
            f"{c.mean_a:.3f}",
            f"{c.mean_b:.3f}",
            rich_text(diff_iv(c.diff, iv)),
            num(iv.get("df"), ".1f"),
            f"{c.p_randomization:.3f}",
            num(c.p_holm, ".3f"),
            wtl(c.questions),
            wtl(c.clusters),
        )
    if not fits(console, t):
        t = _narrow_comparison_table(rep, t.title)
    lines = [
        x
        for x in (legend(c.interval for c in rep.comparisons), *paired_evidence_lines(rep.method, design=rep.design))
        if x
    ]
    if lines:
        t.caption, t.caption_justify = Text("\n".join(lines)), "left"
    console.print(t)
    print_changes(rep.changes, console)
    for note in rep.notes:
        console.print(rich_text(f"note: {note}"))
    first_metric = rep.comparisons[0].metric if rep.comparisons else None
    for c in rep.comparisons:
        if c.metric != first_metric:
            continue
        ct = Table(title=rich_text(f"{c.metric}: {c.system_b} - {c.system_a} per category"), title_justify="left")
        for col in ("category", "n", "B - A [CI]", "W/T/L"):
            ct.add_column(col, no_wrap=col == "B - A [CI]")
        for cat, e in c.per_category.items():
            iv = e.get("interval")
            cell = rich_text(diff_iv(e["diff"], iv) if iv else f"{e['diff']:+.3f} (< 2 clusters: no interval)")
            ct.add_row(rich_text(cat), str(e["n"]), cell, wtl(e))
        console.print(ct)
        _print_regressions(console, f"{c.metric}: {c.system_b} - {c.system_a}", c.regressions)


def gate_check_line(v: GateVerdict, c: GateCheck) -> str:
    """One line per check: ``PASS: mrr cand - base = +0.0120, 90 % CR2 (Satterthwaite t) interval [-0.0030,
    +0.0270] vs -margin -0.0200; mrr reason (minimum detectable difference at 80 % power: 0.0311; 28 clusters, 42
    questions)``; the interval with its marks (``[degenerate]``), the MDD as ``not estimable`` when it is."""
    if isinstance(c, KnownItemCheck):  # both numbers named, the interval's measured coverage, the proxy
        return c.describe(v.system_candidate, v.system_baseline, v.level)
    iv = "none" if c.lower is None else str(fmt_iv((c.lower, c.upper), "+.4f"))
    mdd = c.minimum_detectable_difference
    mdd_txt = "not estimable" if mdd is None else f"{mdd:.4f}"
    where = f" on {esc(c.category)} ({c.n_questions} questions)" if c.category else ""
    said = "minimum detectable difference" in c.reason
    return (
        f"{c.decision}: {c.metric}{where} {esc(v.system_candidate)} - {esc(v.system_baseline)} = {c.diff:+.4f}, "
        f"{100 * v.level:g} % {v.method_label} interval {iv} vs -margin {-c.margin:+.4f}; {c.reason} ("
        + ("" if said else f"minimum detectable difference at {100 * POWER:.0f} % power: {mdd_txt}; ")
        + f"{c.n_clusters} clusters, {c.n_questions} questions)"
    )


def gate_lines(v: GateVerdict) -> list[str]:
    """The verdict's lines: one per check, then the overall verdict when there are several, then the exit-code
    policy when it changed the exit code."""
    out = [gate_check_line(v, c) for c in v.checks]
    if len(v.checks) > 1:
        out.append(f"overall {v.decision} ({v.combination}): {v.reason}")
    if v.exit_code != EXIT_CODES[v.decision]:
        out.append(f"--on-inconclusive {v.on_inconclusive}: exit {v.exit_code}")
    return out


def render_gate(v: GateVerdict, console: Console | None = None) -> None:
    """Print the gate's verdict (:func:`gate_lines`), the gold set, split, sizes, harness version and interval method,
    the legend of the interval marks and the regressed questions of each metric check (the warnings - few
    clusters, questions missing on either side - are printed by :func:`harness.report.formats.format_table`)."""
    console = console or safe_console()
    for line in gate_lines(v):  # one line per check in a log or file; on a terminal wrapped, intervals whole
        shown = wrap_keeping_intervals(line, console.width) if console.is_terminal else line
        console.print(Text(shown), soft_wrap=True)
    print_changes(v.changes, console)
    if v.goldset:
        console.print(
            Text(
                f"gold set {esc(str(v.goldset.get('name')))} v{esc(str(v.goldset.get('version')))}, split {v.split}; "
                f"{v.n_questions} "
                f"questions, {v.n_clusters} clusters; harness {v.harness_version}; {v.method} interval: the "
                "coverage rule's default for paired differences under this run's design"
            ),
            soft_wrap=True,
        )
    for line in known_item_provenance(v):
        console.print(Text(esc(line)), soft_wrap=True)
    marks = legend((c.lower, c.upper) for c in v.checks if c.lower is not None)
    for line in (marks, *gate_evidence_lines(v)):
        if line:
            console.print(Text(line), soft_wrap=True)
    for c in v.checks:
        if c.kind == "metric":
            _print_regressions(console, f"{c.metric}: {v.system_candidate} - {v.system_baseline}", c.regressions)


def render_power(plan: dict, console: Console | None = None) -> None:
    """Print a power plan (:func:`harness.evaluation.power.power_plan`): the design quantities, the DEFF formula
    with its numbers, the ICC truncation, one- or two-sided, and the plan."""
    console = console or safe_console()
    split = "" if plan.get("split", "all") == "all" else f", {plan['split']} split"
    console.print(
        Text(
            f"{esc(plan['system'])} {plan['metric']}{' (paired differences)' if plan['paired'] else ''}{split}: "
            f"ICC {plan['icc']:.3f} (used {plan['icc_used']:.3f}), mean cluster size {plan['mean_cluster_size']:.2f} "
            f"(CV {plan['cv_cluster_size']:.2f}), SD {plan['sd']:.3f}\n"
            f"{plan['deff_formula']}\n"
            f"to detect {plan['delta']} with {plan['power']:.0%} power, {plan['sided']} test at alpha "
            f"{plan['alpha']}: {plan['clusters_needed']} clusters, about {plan['questions_needed']} questions (now "
            f"{plan['current_clusters']} clusters, {plan['current_questions']} questions)"
        )
    )


def render_sweep(result: SweepResult, console: Console | None = None) -> None:
    """Print a :class:`~harness.evaluation.sweep.SweepResult`: the chosen setting on dev, then on the test split
    beside each of its inputs alone with the paired difference chosen - input, the dev curve and the notes."""
    console = console or safe_console()
    r = result
    pct = f"{100 * r.interval_level:g} %"
    inputs = "+".join(r.inputs)
    head = Table(
        title=rich_text(f"Fusion sweep: {r.fusion} of {inputs}, {r.metric} ({r.level} level), run {r.run_id}"),
        title_justify="left",
        caption=Text(f"diff: chosen - system, paired over the same questions ({r.paired_method})"),
        caption_justify="left",
    )
    for col in ("split (n)", "system", r.metric, f"{pct} {r.method}", "diff", f"{pct} paired"):
        head.add_column(rich_text(col), justify="left" if col in ("split (n)", "system") else "right", no_wrap=True)
    dev_n, test_n = f"dev ({r.n_dev})", f"test ({r.n_test})"
    head.add_row(dev_n, rich_text(r.chosen_system), f"{r.dev_best:.3f}", "optimistic", "", "")
    for name, m in r.dev_inputs.items():
        head.add_row(dev_n, rich_text(name), f"{m:.3f}", "", f"{r.dev_best - m:+.3f}", "")
    ivs = []
    for row in r.test:
        ivs += [row.interval, row.paired_interval]
        head.add_row(
            test_n,
            rich_text(row.system + (" (chosen)" if row.role == "chosen" else "")),
            Text(f"{row.mean:.3f}", style="bold" if row.role == "chosen" else ""),
            rich_text(fmt_iv(row.interval) if row.interval else "n/a (< 2 clusters)"),
            "" if row.diff is None else f"{row.diff:+.3f}",
            rich_text("" if row.paired_interval is None else fmt_iv(row.paired_interval, "+.3f")),
        )
    marks = legend(ivs)
    console.print(head)
    if marks:
        console.print(Text(marks))
    if r.param:
        console.print(Text(f"dev curve: {r.n_settings} values of {r.param} tried"))
        curve = Table()
        curve.add_column(r.param, justify="right")
        curve.add_column(rich_text(f"dev {r.metric}"), justify="right")
        for w, v in zip(r.grid, r.dev_means, strict=True):
            curve.add_row(f"{w:g}", f"{v:.4f}{' *' if w == r.chosen_value else ''}")
        console.print(curve)
    lines = [
        f"settings tried: {r.n_settings}; chosen {r.chosen_system} ({r.tie_rule})",
        f"fusion: {r.formula}",
        r.note,
    ]
    if r.n_unsplit:
        lines.append(f"{r.n_unsplit} question(s) without a split were used for neither dev nor test")
    if any(r.missing.values()):
        lines.append(f"questions without any {inputs} ranking (scored 0): {r.missing}")
    console.print(Text("\n".join(lines)))
