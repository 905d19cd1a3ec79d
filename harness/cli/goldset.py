"""Gold-set verbs: validate and goldset apply."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from harness.cli._common import _fail, app, console, goldset_app
from harness.errors import HarnessError


@app.command()
def validate(
    dataset: Path = typer.Argument(..., help="Dataset folder (*.meta.json + records JSONL) or a records JSONL."),
    corpus: Path = typer.Option(
        None, "--corpus", help="Corpus folder: re-chunk it and check quotes, chunks, documents."
    ),
    correction: Path = typer.Option(None, "--correction", help="JSONL correction (full records or RFC 6902 patches)."),
    contract: Path = typer.Option(
        None, "--contract", help="Contract file or folder (default: validators/<slug>-v<major>.toml)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Validate a gold set: exit 0 valid, 1 invalid records, 2 unusable input. Never modifies input."""
    from harness.validate import render
    from harness.validate import validate as do_validate

    try:
        report = do_validate(dataset, corpus_dir=corpus, correction=correction, contract=contract)
    except HarnessError as exc:
        _fail(exc)
    if as_json:
        sys.stdout.write(report.to_json() + "\n")
    else:
        render(report, console)
    raise typer.Exit(report.exit_code)


@goldset_app.command("apply")
def goldset_apply(
    dataset: Path = typer.Argument(..., help="Dataset folder (never modified)."),
    correction: Path = typer.Option(..., "--correction", help="JSONL correction file."),
    out: Path = typer.Option(..., "--out", help="New dataset folder (must not exist)."),
    corpus: Path = typer.Option(None, "--corpus", help="Corpus folder to check the corrected set against."),
    contract: Path = typer.Option(None, "--contract"),
) -> None:
    """Write the corrected set as a new minor version, only when it validates (exit 0), else exit 1."""
    from harness.validate import apply_correction, render

    try:
        res = apply_correction(dataset, correction, out, corpus_dir=corpus, contract=contract)
    except HarnessError as exc:
        _fail(exc)
    render(res.report, console)
    if res.written:
        console.print(f"wrote {res.out_dir} (version {res.version}; records changed: {', '.join(res.records_changed)})")
    else:
        console.print("[red]not written: the corrected set does not validate[/red]")
    raise typer.Exit(res.exit_code)
