"""The report verb."""

from __future__ import annotations

from pathlib import Path

import typer

from harness.cli._checks import number
from harness.cli._common import app, check_paths, err_console


@app.command()
def report(
    runs: list[Path] = typer.Argument(
        ...,
        help="Run records (same gold set, corpus and depths; runs under two chunkers are paired on the metrics "
        "comparable across chunkers).",
    ),
    out: str = typer.Option(
        None, "--out", help="Output file, written atomically; - = stdout (default report.<the format's extension>)."
    ),
    fmt: str = typer.Option(
        "html",
        "--format",
        help="html (self-contained), markdown (pull-request comment), or csv / tsv (the runs' per-question and "
        "summary numbers as one long table, docs/tables.md; default file report.csv / report.tsv).",
    ),
    baseline: str = typer.Option(None, "--baseline", help="Baseline system (or run folder) for paired differences."),
    margin: float = typer.Option(0.02, help="Gate margin drawn on the forest plot (>= 0).", callback=number(0)),
    known_item: Path = typer.Option(None, "--known-item", help="Known-item output folder to include."),
    coverage: Path = typer.Option(None, "--coverage", help="Coverage study JSON to include."),
    metric: list[str] = typer.Option(
        None,
        "--metric",
        help="Metrics of the paired differences (the first is the gate column), comma-separated: any id of "
        "docs/metrics.md (AP@100, nDCG@20, recall@50, ...), scored from the stored rankings when a run lacks it.",
    ),
    qids: list[str] = typer.Option(
        None, "--qids", help="Report only these question ids, in every run (comma-separated; unknown ids: exit 2)."
    ),
    category: list[str] = typer.Option(
        None, "--category", help="Report only these categories (comma-separated); summaries are recomputed on them."
    ),
    split: str = typer.Option(
        "all", "--split", help="Questions reported: all, dev or test (the gold set's split field), as compare's."
    ),
) -> None:
    """Write one report (HTML with inline SVG figures, or Markdown) from run records only."""
    from harness.evaluation.metric_choice import chosen_metrics
    from harness.evaluation.subset import Subset, load_report_runs
    from harness.report import write_report
    from harness.report.formats import FORMATS, REPORT, check_format

    if out is None:
        out = f"report.{FORMATS[check_format(fmt, REPORT)].extension}"
    based = [("--baseline", baseline)] if baseline is not None and Path(baseline).exists() else []
    check_paths(
        [("--out", out)],
        [*(("RUNS", r) for r in runs), ("--known-item", known_item), ("--coverage", coverage), *based],
    )
    subset = Subset.of(qids, category)
    metrics = chosen_metrics(metric, option="--metric")
    path = write_report(
        load_report_runs(runs, subset, metrics),
        out,
        fmt=fmt,
        baseline=baseline,
        margin=margin,
        known_item=known_item,
        coverage=coverage,
        metrics=metrics or None,
        split=split,
    )
    if path is not None:
        err_console.print(f"wrote {path}", highlight=False)
