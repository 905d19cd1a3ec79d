"""Shared pieces of the command line: the typer apps, consoles, common options and the error handler."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer
from rich.console import Console

from harness.errors import HarnessError

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Retrieval benchmark harness for RAG systems.")
goldset_app = typer.Typer(no_args_is_help=True, help="Gold-set maintenance.")
app.add_typer(goldset_app, name="goldset")

_WIDTH = None if sys.stdout.isatty() else int(os.environ.get("COLUMNS", "150"))
console = Console(width=_WIDTH)
err_console = Console(stderr=True, width=_WIDTH)

WORKDIR = typer.Option(Path(".harness"), "--workdir", help="Derived files (database, indexes, caches).")
RUNS_DIR = typer.Option(Path("runs"), "--runs-dir", help="Where run records go.")


def _fail(exc: HarnessError) -> None:
    err_console.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(exc.exit_code)


def _csv_ints(text: str, name: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise HarnessError(f"{name}: {text!r} is not a comma-separated list of integers") from None


FORMAT = typer.Option(
    "table", "--format", help="Output format: table (rich, for a terminal), json (one envelope) or markdown."
)
OUT = typer.Option("-", "--out", help="Write the output to FILE, atomically (- = stdout); its folder must exist.")
RESULT_OUT = typer.Option(
    "-", "--result-out", help="Write the printed result to FILE, atomically (- = stdout); its folder must exist."
)
JSON_ALIAS = typer.Option(False, "--json", hidden=True, help="Deprecated: same as --format json.")


def output_format(fmt: str, as_json: bool = False, *, out: str = "-", field: str = "--out") -> str:
    """The output format chosen (``--json`` is a deprecated alias of ``--format json``), after checking the format
    and the output file, before the verb does any work."""
    from harness.report.formats import check_format, check_output

    if as_json:
        err_console.print("note: --json is deprecated; use --format json", highlight=False)
        fmt = "json"
    try:
        check_format(fmt)
        check_output(out, field=field)
    except HarnessError as exc:
        _fail(exc)
    return fmt


def emit(kind: str, value, fmt: str, out: str, *, path=None, field: str = "--out") -> None:
    """Hand a verb's result to the output-format registry (:func:`harness.report.formats.emit`)."""
    from harness.report.formats import Result
    from harness.report.formats import emit as do_emit

    try:
        do_emit(Result(kind, value, path), fmt, out, console=console, field=field, err=err_console)
    except HarnessError as exc:
        _fail(exc)
