"""Command line: a thin typer layer over the library verbs (no logic of its own).

Exit codes for verbs that judge: 0 pass, 1 fail, 2 unusable input. Every :class:`~harness.errors.HarnessError`
becomes one line on stderr and its exit code. Each verb group lives in its own module; importing them registers
their commands on :data:`app`.
"""

from __future__ import annotations

from importlib import import_module

from harness.cli._common import app

for _group in ("run", "corpus", "goldset", "judge", "report", "studies"):  # registration order = help order
    import_module(f"harness.cli.{_group}")

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
