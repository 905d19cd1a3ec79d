"""Control characters from inputs never reach the terminal: one escaping function and the rich hook that applies it
to everything a harness console prints.

A system name, a question id, a file name or a message read from an input may hold control characters: an ESC
sequence (``\\x1b[32mPASS``) that recolours or moves the cursor, a carriage return or a newline that starts a line
of its own, a bidirectional override (U+202E) that reorders what follows. Printed raw, a crafted name could make a
failing gate show a green PASS. :func:`escape_controls` turns each such character into its visible Python escape
(``\\x1b``, ``\\r``, ``\\n``, ``\\u202e``), the form :func:`harness.report.junit.xml_safe` writes too.

Where it applies:

* :func:`harness.report.format.rich_text` (every input string of the terminal tables) and
  :func:`harness.report.format.md` (Markdown) escape before layout, so widths stay right;
* the command line's consoles (:func:`safe_console`, used by :mod:`harness.cli._common` and for a table written to
  a file) carry :class:`EscapeControls`, a rich render hook that escapes every printed text segment after layout
  (line breaks of the layout kept), so a string that reached a renderer another way is escaped all the same;
* one-line messages (``error:``, ``warning:``, notices, :func:`harness.io.stderr_notice`) escape newlines too.

Characters escaped (:data:`CONTROL`): C0 controls U+0000-U+001F, DEL and the C1 controls U+007F-U+009F (U+009B is
a one-byte CSI), and the bidirectional formatting characters U+200E-U+200F, U+202A-U+202E, U+2066-U+2069 (Unicode
Technical Standard #39 and CVE-2021-42574, "Trojan Source").
"""

from __future__ import annotations

import os
import re
import sys

from rich.console import Console, ConsoleOptions, RenderableType, RenderHook, RenderResult
from rich.segment import Segment

#: The characters :func:`escape_controls` makes visible.
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _visible(m: re.Match) -> str:
    return m.group().encode("unicode_escape").decode("ascii")


def escape_controls(text: str, *, keep: str = "") -> str:
    """``text`` with every character of :data:`CONTROL` replaced by its visible escape (``"\x1b"`` -> the four
    characters ``\x1b``), except those in ``keep`` (``"\n"``: a layout's own line breaks; ``"\t"``: Markdown's
    white space). Text without such characters comes back unchanged (the same string)."""
    if not CONTROL.search(text):
        return text
    return CONTROL.sub(lambda m: m.group() if m.group() in keep else _visible(m), text)


_JSON_RAW = re.compile("[\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def json_controls(text: str) -> str:
    """JSON text (``json.dumps(..., ensure_ascii=False)``, whose C0 controls are escaped already) with DEL, the C1
    controls and the bidirectional controls written as ``\\uXXXX`` escapes too: the same JSON value, nothing a
    terminal obeys (these characters occur only inside JSON strings, where the escape is valid)."""
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class _Escaped:
    """A renderable that renders ``inner`` and escapes the control characters of its text segments (rich's own
    control segments, cursor moves of a live display, pass through)."""

    def __init__(self, inner: RenderableType) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for seg in console.render(self.inner, options):
            if seg.control or not seg.text:
                yield seg
            else:
                yield Segment(escape_controls(seg.text, keep="\n"), seg.style)


class EscapeControls(RenderHook):
    """A rich render hook (``console.push_render_hook``) that escapes the control characters of everything the
    console prints (:func:`escape_controls`, layout line breaks kept)."""

    def process_renderables(self, renderables: list) -> list:
        return [_Escaped(r) for r in renderables]


class _PipeConsole(Console):
    """A :class:`~rich.console.Console` whose reader may go away (``harness gate ... | head -2``): rich's own
    handling exits 1, which would replace a verdict's exit code; here the console goes quiet instead (the rest of
    its output is dropped), its descriptor is pointed at the null device so that no later flush fails (the recipe of
    the Python docs, "Note on SIGPIPE"), and the command goes on to exit with its own code."""

    def on_broken_pipe(self) -> None:
        """Drop the rest of this console's output (see the class docstring); never raises."""
        if self.quiet:
            return
        self.quiet = True
        reader_gone(self.file)


def reader_gone(stream=None) -> None:
    """The reader of ``stream`` (default stdout) closed the pipe (``harness gate ... | head -2``): point its
    descriptor at the null device, so that the rest of the output is dropped and no later flush fails (the recipe of
    the Python docs, "Note on SIGPIPE"); the command then exits with its own code. Never raises."""
    try:
        fd = (stream or sys.stdout).fileno()
    except (AttributeError, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def safe_console(**kwargs) -> Console:
    """A rich :class:`~rich.console.Console` (``kwargs`` as for it) carrying :class:`EscapeControls`; a reader that
    closes the pipe early silences it instead of exiting (:class:`_PipeConsole`)."""
    console = _PipeConsole(**kwargs)
    console.push_render_hook(EscapeControls())
    return console
