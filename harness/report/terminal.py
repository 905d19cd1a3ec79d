"""Rich tables for a run record (terminal output of ``harness run`` and ``harness evaluate``)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from harness.evaluation.runs import RunRecord
from harness.goldset.schema import CATEGORIES
from harness.metrics import METRIC_SETS

MAIN_METRICS = METRIC_SETS["terminal"]
EVIDENCE_METRICS = METRIC_SETS["terminal_evidence"]


def fmt_interval(entry: dict, method: str = "cr2") -> str:
    """``0.412 [0.301, 0.523]`` from a summary entry ``{"mean": .., "intervals": {method: {...}}}``."""
    mean = entry["mean"]
    if mean is None:
        return "n/a"
    iv = entry.get("intervals", {}).get(method)
    if not iv:
        return f"{mean:.3f}"
    return f"{mean:.3f} [{iv['lower']:.3f}, {iv['upper']:.3f}]"


def _df(run: RunRecord) -> str:
    df = run.manifest.get("clusters", {}).get("df")
    return f"{df:.1f}" if df is not None else "n/a"


def systems_table(run: RunRecord, slice_name: str = "all", metrics=MAIN_METRICS, method: str = "cr2") -> Table:
    """System x metric table with 95 % intervals."""
    n_q = next(iter(run.summary["systems"].values())).get(slice_name, {}).get("n_questions", 0)
    cl = run.manifest.get("clusters", {})
    title = (
        f"{slice_name} questions (n={n_q}); 95 % {method.upper()} intervals, clustering {cl.get('mode')}"
        f" ({cl.get('n_clusters')} clusters, df {_df(run) if slice_name == 'all' else 'see JSON'})"
    )
    t = Table(title=title, title_justify="left")
    t.add_column("system", style="bold")
    for m in metrics:
        t.add_column(m, justify="right")
    for system, s in run.summary["systems"].items():
        if slice_name not in s:
            continue
        ov = s[slice_name]["overall"]
        t.add_row(system, *[fmt_interval(ov[m], method) for m in metrics])
    return t


def category_table(run: RunRecord, metric: str = "mrr", slice_name: str = "all") -> Table:
    """Per-category means of one metric, one row per system."""
    t = Table(title=f"{metric} per category ({slice_name} questions)", title_justify="left")
    t.add_column("system", style="bold")
    cats = [c for c in CATEGORIES if any(c in s[slice_name]["per_category"] for s in run.summary["systems"].values())]
    extra = sorted(
        {c for s in run.summary["systems"].values() for c in s[slice_name]["per_category"]} - set(CATEGORIES)
    )
    cats += extra
    for c in cats:
        t.add_column(c.replace("_", " "), justify="right")
    for system, s in run.summary["systems"].items():
        pc = s[slice_name]["per_category"]
        t.add_row(system, *[f"{pc[c]['metrics'][metric]:.3f}" if c in pc else "-" for c in cats])
    return t


def deep_evidence_lines(run: RunRecord, depth: int = 20) -> list[str]:
    """Gold chunks found deeper than ``depth``: ``system qid chunk_id rank``."""
    lines = []
    for row in run.per_question:
        for cid, rank in row.get("gold_chunk_ranks", {}).items():
            if rank is not None and rank > depth:
                lines.append(f"{row['system']}: {row['qid']} {cid} at rank {rank}")
    return lines


def render_run(run: RunRecord, console: Console | None = None) -> None:
    """Print the systems table (all questions and, when present, the fully covered slice), per-category MRR,
    evidence recall and the clustering warning."""
    console = console or Console()
    console.print(systems_table(run, "all"))
    first = next(iter(run.summary["systems"].values()))
    if "covered" in first:
        console.print(systems_table(run, "covered"))
    console.print(category_table(run, "mrr"))
    console.print(systems_table(run, "all", metrics=EVIDENCE_METRICS))
    deep = deep_evidence_lines(run)
    if deep:
        console.print(f"gold chunks found deeper than rank 20 ({len(deep)}; qid chunk@rank):")
        by_sys: dict[str, list[str]] = {}
        for line in deep:
            system, rest = line.split(": ", 1)
            qid, cid, _at, _rank, rank = rest.split(" ")
            by_sys.setdefault(system, []).append(f"{qid} {cid}@{rank}")
        for system, items in by_sys.items():
            more = f"; … {len(items) - 8} more in per_question.jsonl" if len(items) > 8 else ""
            console.print(f"  {system} ({len(items)}): " + "; ".join(items[:8]) + more, highlight=False, soft_wrap=True)
    ties = []
    for system, s in run.summary["systems"].items():
        fs = s.get("all", {}).get("flag_shares", {})
        parts = [
            f"{k.replace('_tie_at_boundary', '')} {100 * fs[k]:.0f}%"
            for k in ("doc_tie_at_boundary", "chunk_tie_at_boundary")
            if k in fs
        ]
        if parts:
            ties.append(f"{system} ({', '.join(parts)})")
    if ties:
        console.print("questions whose top-k cut-off fell in a score tie (resolved by id): " + "; ".join(ties))
    for system, s in run.summary["systems"].items():
        counts = s.get("all", {}).get("counts", {})
        if counts.get("n_missing"):
            console.print(
                f"[yellow]{system}: {counts['n_missing']} of {counts.get('n_questions')} questions have no ranking "
                "and score 0[/yellow]"
            )
        for lv, ok in (s.get("all", {}).get("levels") or {}).items():
            if not ok:
                console.print(f"[yellow]{system}: no {lv.rstrip('s')} rankings; those metrics are n/a[/yellow]")
    warn = run.manifest.get("clusters", {}).get("warning")
    if warn:
        console.print(f"[yellow]warning: {warn}[/yellow]")
    cov = run.manifest.get("coverage") or {}
    if cov:
        console.print(
            f"vector index: {cov.get('n_indexed_chunks')}/{cov.get('n_total_chunks')} chunks; gold documents fully "
            f"indexed {cov.get('gold_documents_fully_indexed')}/{cov.get('gold_documents')}"
        )


def render_comparison(rep, console: Console | None = None) -> None:
    """Print a :class:`harness.evaluation.compare.ComparisonReport`: one row per (pair, metric), then per-category
    rows."""
    console = console or Console()
    cl = rep.clustering
    t = Table(
        title=(
            f"paired differences B - A (95 % CR2 intervals; clustering {cl.get('mode')}, "
            f"{cl.get('n_clusters')} clusters)"
        ),
        title_justify="left",
    )
    for col in (
        "A",
        "B",
        "metric",
        "mean A",
        "mean B",
        "B - A [95 % CI]",
        "df",
        "p (rand.)",
        "p (Holm)",
        "W/T/L q",
        "W/T/L cl",
    ):
        t.add_column(col, justify="right" if col not in ("A", "B", "metric") else "left")
    for c in rep.comparisons:
        iv = c.interval
        q, k = c.questions, c.clusters
        t.add_row(
            c.system_a,
            c.system_b,
            c.metric,
            f"{c.mean_a:.3f}",
            f"{c.mean_b:.3f}",
            f"{c.diff:+.3f} [{iv['lower']:+.3f}, {iv['upper']:+.3f}]",
            f"{iv['df']:.1f}" if iv.get("df") is not None else "-",
            f"{c.p_randomization:.3f}",
            f"{c.p_holm:.3f}" if c.p_holm is not None else "-",
            f"{q['wins']}/{q['ties']}/{q['losses']}",
            f"{k['wins']}/{k['ties']}/{k['losses']}",
        )
    console.print(t)
    for note in getattr(rep, "notes", []):
        console.print(f"note: {note}", highlight=False)
    first_metric = rep.comparisons[0].metric if rep.comparisons else None
    for c in rep.comparisons:
        if c.metric != first_metric:
            continue
        ct = Table(title=f"{c.metric}: {c.system_b} - {c.system_a} per category", title_justify="left")
        for col in ("category", "n", "B - A", "W/T/L"):
            ct.add_column(col)
        for cat, e in c.per_category.items():
            ct.add_row(cat, str(e["n"]), f"{e['diff']:+.3f}", f"{e['wins']}/{e['ties']}/{e['losses']}")
        console.print(ct)
