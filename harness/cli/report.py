"""The report verb."""

from __future__ import annotations

from pathlib import Path

import typer

from harness.cli._checks import number
from harness.cli._common import _fail, app, check_paths, err_console
from harness.errors import HarnessError


@app.command()
def report(
    runs: list[Path] = typer.Argument(
        ...,
        help="Run records (same gold set, corpus and depths; runs under two chunkers are paired on the metrics "
        "comparable across chunkers).",
    ),
    out: str = typer.Option(
        None, "--out", help="Output file, written atomically; - = stdout (default report.html, or report.md)."
    ),
    fmt: str = typer.Option("html", "--format", help="html (self-contained) or markdown (pull-request comment)."),
    baseline: str = typer.Option(None, "--baseline", help="Baseline system (or run folder) for paired differences."),
    margin: float = typer.Option(0.02, help="Gate margin drawn on the forest plot (>= 0).", callback=number(0)),
    known_item: Path = typer.Option(None, "--known-item", help="Known-item output folder to include."),
    coverage: Path = typer.Option(None, "--coverage", help="Coverage study JSON to include."),
) -> None:
    """Write one report (HTML with inline SVG figures, or Markdown) from run records only."""
    from harness.report import write_report

    if out is None:
        out = "report.md" if fmt.lower() in ("markdown", "md") else "report.html"
    based = [("--baseline", baseline)] if baseline is not None and Path(baseline).exists() else []
    check_paths(
        [("--out", out)],
        [*(("RUNS", r) for r in runs), ("--known-item", known_item), ("--coverage", coverage), *based],
    )
    try:
        path = write_report(
            runs, out, fmt=fmt, baseline=baseline, margin=margin, known_item=known_item, coverage=coverage
        )
    except HarnessError as exc:
        _fail(exc)
    if path is not None:
        err_console.print(f"wrote {path}", highlight=False)
