"""The one progress display of the project: bars with elapsed time and an ETA, and spinners for steps of unknown
length, on stderr.

On a terminal they are rich displays removed when done (``transient``). Elsewhere (a CI log, ``2>err``) a step is
never silent: it writes plain lines to stderr, whatever ``--format`` the result takes on stdout (:class:`PlainLines`):
one when it starts, then one at least every ``HARNESS_PROGRESS_INTERVAL`` seconds (default 30, at most 86,400: a
larger value is clamped with one ``note:`` line; from a timer thread, so a slow batch cannot hold them back) with
``done/total``, the percentage, the elapsed time and the ETA (elapsed * remaining / done, the rate so far), and one
when it ends::

    embed use-multilingual-v3: started, 91960 to do
    embed use-multilingual-v3: 7424/91960 (8 %), 30 s elapsed, ETA 5 min 42 s
    embed use-multilingual-v3: done, 91960/91960 in 6 min 21 s

Every long step uses :func:`progress_bar` (known total) or :func:`stage` (unknown total). Nothing a step computes
depends on whether a display is shown. :func:`set_enabled` turns every display and line off (``--quiet``).
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator

__all__ = [
    "DEFAULT_INTERVAL",
    "MAX_INTERVAL",
    "PLAIN_LINE",
    "PlainLines",
    "interval",
    "is_enabled",
    "progress_bar",
    "set_enabled",
    "stage",
]

_ENABLED = True

DEFAULT_INTERVAL = 30.0
"""Seconds between two plain progress lines when ``HARNESS_PROGRESS_INTERVAL`` is not set."""

MAX_INTERVAL = 86400.0
"""The longest interval between two plain progress lines (one day); a larger ``HARNESS_PROGRESS_INTERVAL`` is
clamped to it (``threading``'s waits overflow beyond ``threading.TIMEOUT_MAX``, about 292 years on Linux)."""

PLAIN_LINE = re.compile(
    r"^.+: (started(, \d+ to do)?|running, .+ elapsed|\d+/\d+ \(\d+ %\), .+ elapsed, ETA .+|done(, \d+/\d+)? in .+)$"
)
"""Matches every line :class:`PlainLines` writes (for log filters and tests)."""


def set_enabled(enabled: bool) -> None:
    """Turn every progress display on or off for this process (the CLI's ``--quiet`` turns them off)."""
    global _ENABLED
    _ENABLED = bool(enabled)


def is_enabled() -> bool:
    """Whether progress displays are allowed in this process."""
    return _ENABLED


def interval() -> float:
    """Seconds between plain progress lines: ``HARNESS_PROGRESS_INTERVAL`` when it is a finite number > 0 (at most
    :data:`MAX_INTERVAL`), else :data:`DEFAULT_INTERVAL`.

    A value that is set but unusable (not a number, not finite, not > 0) gives :data:`DEFAULT_INTERVAL` and one
    ``note:`` line on stderr; one above :data:`MAX_INTERVAL` (``1e18`` made the timer thread raise
    ``OverflowError``) is clamped to it, with one ``note:`` line. Each note is written once per process and value.
    """
    raw = os.environ.get("HARNESS_PROGRESS_INTERVAL", "")
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if raw.strip() == "":
        return DEFAULT_INTERVAL
    if not (math.isfinite(value) and value > 0):
        _note_once(raw, f"is not a number of seconds > 0; using the default, {DEFAULT_INTERVAL:g} s")
        return DEFAULT_INTERVAL
    if value > MAX_INTERVAL:
        _note_once(raw, f"is above the largest interval, {MAX_INTERVAL:g} s (one day); using {MAX_INTERVAL:g} s")
        return MAX_INTERVAL
    return value


_NOTED: set[str] = set()


def _note_once(raw: str, why: str) -> None:
    if raw in _NOTED:
        return
    _NOTED.add(raw)
    from harness.terminal_safe import escape_controls  # a leaf: progress stays below io in the layers

    shown = ascii(raw if len(raw) <= 40 else raw[:40] + "...")
    sys.stderr.write(f"harness: {escape_controls(f'note: HARNESS_PROGRESS_INTERVAL={shown} {why}')}\n")
    sys.stderr.flush()


def _duration(seconds: float) -> str:
    """``42 s``, ``5 min 42 s``, ``1 h 02 min``."""
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {(s % 3600) // 60:02d} min"


class PlainLines:
    """Plain progress lines on stderr for a step of ``total`` units (``None``: unknown), written at the start, at
    least every ``every`` seconds from a daemon timer thread, and at the end (module docstring).

    ``advance(n)`` is thread-safe. A step that raises writes no ``done`` line. ``stream`` defaults to the current
    ``sys.stderr`` (looked up at each line, so a redirected stderr is followed).
    """

    def __init__(self, label: str, total: int | None, *, every: float | None = None, stream=None) -> None:
        self.label, self.total, self.stream = label, total, stream
        self.every = min(every or interval(), MAX_INTERVAL)  # a wait beyond threading.TIMEOUT_MAX overflows
        self.done = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._t0 = time.monotonic()
        self._thread: threading.Thread | None = None

    def _write(self, text: str) -> None:
        out = self.stream or sys.stderr
        with contextlib.suppress(Exception):
            out.write(f"{self.label}: {text}\n")
            out.flush()

    def status(self) -> str:
        """``7424/91960 (8 %), 30 s elapsed, ETA 5 min 42 s`` (or ``running, 30 s elapsed`` without a total)."""
        elapsed = time.monotonic() - self._t0
        with self._lock:
            done = self.done
        if not self.total:
            return f"running, {_duration(elapsed)} elapsed"
        eta = "unknown" if done <= 0 else _duration(elapsed * max(0, self.total - done) / done)
        return f"{done}/{self.total} ({100 * done / self.total:.0f} %), {_duration(elapsed)} elapsed, ETA {eta}"

    def advance(self, n: int = 1) -> None:
        """Count ``n`` more units done."""
        with self._lock:
            self.done += n

    def _tick(self) -> None:
        while not self._stop.wait(self.every):
            self._write(self.status())

    def start(self) -> PlainLines:
        """Write the start line and start the timer thread."""
        self._t0 = time.monotonic()
        self._write("started" + (f", {self.total} to do" if self.total else ""))
        self._thread = threading.Thread(target=self._tick, name=f"progress {self.label}", daemon=True)
        self._thread.start()
        return self

    def stop(self, *, ok: bool = True) -> None:
        """Stop the timer thread; write the end line when ``ok``."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if ok:
            elapsed = _duration(time.monotonic() - self._t0)
            with self._lock:
                done = self.done
            self._write(f"done, {done}/{self.total} in {elapsed}" if self.total else f"done in {elapsed}")


@contextlib.contextmanager
def _plain(label: str, total: int | None) -> Iterator[PlainLines]:
    lines = PlainLines(label, total).start()
    try:
        yield lines
    except BaseException:
        lines.stop(ok=False)
        raise
    lines.stop()


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
    (``enabled`` false, :func:`set_enabled` off, or ``total`` is 0). When stderr is not a terminal the display is
    plain lines (:class:`PlainLines`).

    Columns: label, bar, ``done/total``, elapsed time, estimated time remaining.
    """
    if not (enabled and _ENABLED and total > 0):
        yield None
        return
    console = _console()
    if console is None:
        with _plain(label, total) as lines:
            yield lines.advance
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
    """A spinner with the elapsed time while a step of unknown length runs (e.g. a BM25 index build); plain
    ``started`` / ``running, N s elapsed`` / ``done in N s`` lines when stderr is not a terminal."""
    if not (enabled and _ENABLED):
        yield
        return
    console = _console()
    if console is None:
        with _plain(label, None):
            yield
        return
    from rich.progress import Progress, SpinnerColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), _head(label), TimeElapsedColumn(), transient=True, console=console) as prog:
        prog.add_task(label, total=None)
        yield
