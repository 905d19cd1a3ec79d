"""Rich terminal output of the verbs that judge run records: ``run``/``evaluate`` tables, ``compare``, ``gate``,
``power`` and ``sweep`` (the ``table`` format of :mod:`harness.report.formats`).

Every string from an input (system names, categories, question and chunk ids, notes) is escaped for rich markup
(:func:`harness.report.format.rich_text`, plain :class:`rich.text.Text` for titles), so a name such as ``[red]x``
prints as itself.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness.evaluation.compare import ComparisonReport, GateVerdict
from harness.evaluation.record import MetricSummary
from harness.evaluation.runs import RunRecord
from harness.evaluation.sweep import SweepResult
from harness.goldset.schema import CATEGORIES
from harness.metrics import METRIC_SETS
from harness.report.format import MISSING, diff_iv, mean_iv, num, rich_text, spaced, wtl

MAIN_METRICS = METRIC_SETS["terminal"]
EVIDENCE_METRICS = METRIC_SETS["terminal_evidence"]


def fmt_interval(entry: MetricSummary | None, method: str = "cr2") -> str:
    """``0.412 [0.301, 0.523]`` from a summary entry (``n/a`` when the metric is not available)."""
    if entry is None:
        return "n/a"
    return mean_iv(entry.mean, entry.interval(method))


def _df(run: RunRecord) -> str:
    return num(run.manifest.clusters.df, ".1f").replace(MISSING, "n/a")


def systems_table(run: RunRecord, slice_name: str = "all", metrics=MAIN_METRICS, method: str = "cr2") -> Table:
    """System x metric table with 95 % intervals."""
    first = next(iter(run.summary.systems.values()), {})
    n_q = first[slice_name].n_questions if slice_name in first else 0
    cl = run.manifest.clusters
    title = (
        f"{slice_name} questions (n={n_q}); 95 % {method.upper()} intervals, clustering {cl.mode}"
        f" ({cl.n_clusters} clusters, df {_df(run) if slice_name == 'all' else 'see JSON'})"
    )
    t = Table(title=Text(title), title_justify="left")
    t.add_column("system", style="bold")
    for m in metrics:
        t.add_column(m, justify="right")
    for system, s in run.summary.systems.items():
        if slice_name not in s:
            continue
        ov = s[slice_name].overall
        t.add_row(rich_text(system), *[fmt_interval(ov.get(m), method) for m in metrics])
    return t


def category_table(run: RunRecord, metric: str = "mrr", slice_name: str = "all") -> Table:
    """Per-category means of one metric, one row per system."""
    t = Table(title=Text(f"{metric} per category ({slice_name} questions)"), title_justify="left")
    t.add_column("system", style="bold")
    slices = [s[slice_name] for s in run.summary.systems.values() if slice_name in s]
    present = {c for sl in slices for c in sl.per_category}
    cats = [c for c in CATEGORIES if c in present] + sorted(present - set(CATEGORIES))
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


def render_run(run: RunRecord, console: Console | None = None) -> None:
    """Print the systems table (all questions and, when present, the fully covered slice), per-category MRR,
    evidence recall and the clustering warning."""
    console = console or Console()
    console.print(systems_table(run, "all"))
    first = next(iter(run.summary.systems.values()), {})
    if "covered" in first:
        console.print(systems_table(run, "covered"))
    console.print(category_table(run, "mrr"))
    console.print(systems_table(run, "all", metrics=EVIDENCE_METRICS))
    deep = deep_evidence(run)
    if deep:
        n = sum(len(v) for v in deep.values())
        console.print(f"gold chunks found deeper than rank 20 ({n}; qid chunk@rank):")
        for system, items in deep.items():
            more = f"; … {len(items) - 8} more in per_question.jsonl" if len(items) > 8 else ""
            console.print(Text(f"  {system} ({len(items)}): " + "; ".join(items[:8]) + more), soft_wrap=True)
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
    for system, s in run.summary.systems.items():
        whole = s.get("all")
        if whole is None:
            continue
        if whole.counts is not None and whole.counts.n_missing:
            console.print(
                _yellow(
                    f"{system}: {whole.counts.n_missing} of {whole.counts.n_questions} questions have no ranking "
                    "and score 0"
                )
            )
        for lv, ok in whole.levels.items():
            if not ok:
                console.print(_yellow(f"{system}: no {lv} rankings; those metrics are n/a"))
    if run.manifest.clusters.warning:
        console.print(_yellow(f"warning: {run.manifest.clusters.warning}"))
    cov = run.manifest.coverage
    if cov is not None:
        console.print(
            f"vector index: {cov.n_indexed_chunks}/{cov.n_total_chunks} chunks; gold documents fully "
            f"indexed {cov.gold_documents_fully_indexed}/{cov.gold_documents}"
        )


def render_comparison(rep: ComparisonReport, console: Console | None = None) -> None:
    """Print a :class:`~harness.evaluation.compare.ComparisonReport`: one row per (pair, metric), then per-category
    rows of the first metric."""
    console = console or Console()
    cl = rep.clustering
    t = Table(
        title=Text(
            f"paired differences B - A (95 % CR2 intervals; clustering {cl.get('mode')}, "
            f"{cl.get('n_clusters')} clusters)"
        ),
        title_justify="left",
    )
    cols = ("A", "B", "metric", "mean A", "mean B", "B - A [95 % CI]", "df", "p (rand.)", "p (Holm)", "W/T/L q")
    for col in (*cols, "W/T/L cl"):
        t.add_column(col, justify="right" if col not in ("A", "B", "metric") else "left")
    for c in rep.comparisons:
        iv = c.interval
        t.add_row(
            rich_text(c.system_a),
            rich_text(c.system_b),
            c.metric,
            f"{c.mean_a:.3f}",
            f"{c.mean_b:.3f}",
            diff_iv(c.diff, (iv["lower"], iv["upper"])),
            num(iv.get("df"), ".1f"),
            f"{c.p_randomization:.3f}",
            num(c.p_holm, ".3f"),
            wtl(c.questions),
            wtl(c.clusters),
        )
    console.print(t)
    for note in rep.notes:
        console.print(Text(f"note: {note}"))
    first_metric = rep.comparisons[0].metric if rep.comparisons else None
    for c in rep.comparisons:
        if c.metric != first_metric:
            continue
        ct = Table(title=Text(f"{c.metric}: {c.system_b} - {c.system_a} per category"), title_justify="left")
        for col in ("category", "n", "B - A", "W/T/L"):
            ct.add_column(col)
        for cat, e in c.per_category.items():
            ct.add_row(rich_text(cat), str(e["n"]), f"{e['diff']:+.3f}", wtl(e))
        console.print(ct)


def render_gate(v: GateVerdict, console: Console | None = None) -> None:
    """Print the gate's verdict line, its category guards and warnings."""
    console = console or Console()
    console.print(Text(v.line()), soft_wrap=True)
    for cat, g in v.category_guards.items():
        console.print(
            Text(f"  guard {cat}: diff {g['diff']:+.4f} vs -{g['margin']:.4f}: {'ok' if g['passed'] else 'FAIL'}")
        )
    for w in v.warnings:
        console.print(_yellow(f"warning: {w}"))


def render_power(plan: dict, console: Console | None = None) -> None:
    """Print a power plan (:func:`harness.evaluation.power.power_plan`)."""
    console = console or Console()
    console.print(
        Text(
            f"{plan['system']} {plan['metric']}{' (paired differences)' if plan['paired'] else ''}: "
            f"ICC {plan['icc']:.3f}, DEFF {plan['deff']:.2f}, mean cluster size "
            f"{plan['mean_cluster_size']:.2f} (CV {plan['cv_cluster_size']:.2f}), SD {plan['sd']:.3f}\n"
            f"to detect {plan['delta']} with {plan['power']:.0%} power at alpha {plan['alpha']}: "
            f"{plan['clusters_needed']} clusters, about {plan['questions_needed']} questions (now "
            f"{plan['current_clusters']} clusters, {plan['current_questions']} questions)"
        )
    )
    if plan.get("note"):
        console.print(_yellow(plan["note"]))


def render_sweep(result: SweepResult, console: Console | None = None) -> None:
    """Print a :class:`~harness.evaluation.sweep.SweepResult`: the chosen weight on dev and test, the dev curve, the
    notes."""
    console = console or Console()
    r = result
    head = Table(title=Text(f"Fusion-weight sweep: {r.metric} ({r.level} level), run {r.run_id}"))
    for col in ("split", "questions", "w (bm25)", r.metric, "interval (cr2)"):
        head.add_column(col, justify="left" if col == "split" else "right")
    head.add_row("dev", str(r.n_dev), f"{r.chosen_weight:g}", f"{r.dev_best:.4f}", "optimistic")
    iv = r.test_interval
    iv_txt = f"[{iv['lower']:.4f}, {iv['upper']:.4f}]" if iv else "n/a (< 2 clusters)"
    head.add_row("test", str(r.n_test), f"{r.chosen_weight:g}", f"[bold]{r.test_mean:.4f}[/]", iv_txt)
    curve = Table(title=f"dev curve ({r.n_weights} weights tried)")
    curve.add_column("w", justify="right")
    curve.add_column(f"dev {r.metric}", justify="right")
    for w, v in zip(r.weights, r.dev_means, strict=True):
        curve.add_row(f"{w:g}", f"{v:.4f}{' *' if w == r.chosen_weight else ''}")
    lines = [f"weights tried: {r.n_weights}; chosen w = {r.chosen_weight:g} ({r.tie_rule})", r.note]
    if r.n_unsplit:
        lines.append(f"{r.n_unsplit} question(s) without a split were used for neither dev nor test")
    if any(r.missing.values()):
        lines.append(f"questions without bm25/vector rankings (scored 0): {r.missing}")
    console.print(head)
    console.print(curve)
    console.print(Text("\n".join(lines)))
