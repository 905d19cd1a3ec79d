"""Gold-set verbs: validate and goldset apply."""

from __future__ import annotations

from pathlib import Path

import typer

from harness.cli._common import FORMAT, JSON_ALIAS, OUT, RESULT_OUT, _fail, app, emit, goldset_app, output_format
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
    fmt: str = FORMAT,
    out: str = OUT,
    as_json: bool = JSON_ALIAS,
) -> None:
    """Validate a gold set: exit 0 valid, 1 invalid records, 2 unusable input. Never modifies input."""
    from harness.validate import validate as do_validate

    fmt = output_format(fmt, as_json, out=out)
    try:
        report = do_validate(dataset, corpus_dir=corpus, correction=correction, contract=contract)
    except HarnessError as exc:
        _fail(exc)
    emit("validation", report, fmt, out)
    raise typer.Exit(report.exit_code)


@goldset_app.command("apply")
def goldset_apply(
    dataset: Path = typer.Argument(..., help="Dataset folder (never modified)."),
    correction: Path = typer.Option(..., "--correction", help="JSONL correction file."),
    out: Path = typer.Option(..., "--out", help="New dataset folder (must not exist)."),
    corpus: Path = typer.Option(None, "--corpus", help="Corpus folder to check the corrected set against."),
    contract: Path = typer.Option(None, "--contract"),
    fmt: str = FORMAT,
    result_out: str = RESULT_OUT,
) -> None:
    """Write the corrected set as a new minor version, only when it validates (exit 0), else exit 1."""
    from harness.goldset.corrections import apply_correction

    fmt = output_format(fmt, out=result_out, field="--result-out")
    try:
        res = apply_correction(dataset, correction, out, corpus_dir=corpus, contract=contract)
    except HarnessError as exc:
        _fail(exc)
    emit("goldset-apply", res, fmt, result_out, path=res.out_dir, field="--result-out")
    raise typer.Exit(res.exit_code)
