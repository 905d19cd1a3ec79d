"""The one progress display of the project: bars with elapsed time and an ETA, and spinners for steps of unknown
length, on stderr, shown only on a terminal and removed when done (``transient``), so piped output stays clean.

Every long step uses :func:`progress_bar` (known total) or :func:`stage` (unknown total). Nothing a step computes
depends on whether a display is shown. :func:`set_enabled` turns every display off (``--quiet``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

__all__ = ["is_enabled", "progress_bar", "set_enabled", "stage"]

_ENABLED = True


def set_enabled(enabled: bool) -> None:
    """Turn every progress display on or off for this process (the CLI's ``--quiet`` turns them off)."""
    global _ENABLED
    _ENABLED = bool(enabled)


def is_enabled() -> bool:
    """Whether progress displays are allowed in this process."""
    return _ENABLED


def _console():
    """The stderr console, or ``None`` when stderr is not a terminal (a display there would leave blank lines)."""
    from rich.console import Console

    console = Console(stderr=True)
    return console if console.is_terminal else None


def _head(label: str) -> str:
    """The bold label column: a label may hold a system name (a plugin's), so its markup and control characters are
    escaped (:func:`harness.terminal_safe.escape_controls`)."""
    from rich.markup import escape

    from harness.terminal_safe import escape_controls

    return "[bold]" + escape(escape_controls(label))


@contextlib.contextmanager
def progress_bar(label: str, total: int, *, enabled: bool = True) -> Iterator[Callable[[int], None] | None]:
    """A progress bar for ``total`` units: yields ``advance(n)`` (thread-safe), or ``None`` when the display is off
    (``enabled`` false, :func:`set_enabled` off, ``total`` is 0, or stderr is not a terminal).

    Columns: label, bar, ``done/total``, elapsed time, estimated time remaining.
    """
    console = _console() if enabled and _ENABLED and total > 0 else None
    if console is None:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn, TimeRemainingColumn

    lock = threading.Lock()
    with Progress(
        _head(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        "ETA",
        TimeRemainingColumn(),
        transient=True,
        console=console,
    ) as prog:
        task = prog.add_task(label, total=total)

        def advance(n: int = 1) -> None:
            with lock:
                prog.advance(task, n)

        yield advance


@contextlib.contextmanager
def stage(label: str, *, enabled: bool = True) -> Iterator[None]:
    """A spinner with the elapsed time while a step of unknown length runs (e.g. a BM25 index build)."""
    console = _console() if enabled and _ENABLED else None
    if console is None:
        yield
        return
    from rich.progress import Progress, SpinnerColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), _head(label), TimeElapsedColumn(), transient=True, console=console) as prog:
        prog.add_task(label, total=None)
        yield
