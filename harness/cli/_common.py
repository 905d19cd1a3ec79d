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
