"""Number, interval, percent and points formatting, and escaping, shared by every renderer (HTML, Markdown, terminal).

Numbers: metric values and differences are on the 0-1 scale; :func:`pct` shows a proportion as a percentage and
:func:`pts` a difference of two proportions in signed percentage points. A missing value (``None`` or NaN) is
shown as :data:`MISSING` everywhere.

Intervals: :func:`bounds` reads what is special about an interval (a bound clipped to [0, 1], a side the method
cannot bound, zero width) and :func:`fmt_iv` / :func:`mean_iv` / :func:`diff_iv` show it the same way in every text
rendering (``[0.301, 1.000ᶜ]``, ``[-inf, 0.412]``, ``1.000 [degenerate]``), with :func:`legend` for the line under a
table; HTML uses the same :class:`Bounds`, JSON outputs its :meth:`Bounds.flags`.

Escaping: every string that comes from an input (question ids and texts, categories, quotes, system names, document
and chunk ids, run ids, paths, notes) goes through :func:`esc` in HTML (text and attribute values), :func:`md` in
Markdown, and :func:`rich_text` (a rich ``Text``, never parsed as markup) on a terminal. :class:`Markup` marks a
string as the renderer's own, already safe markup (a Markdown ``**PASS**``), which :func:`md` leaves as it is.
"""

from __future__ import annotations

import html
import math
import re

from rich.text import Text

from harness.evaluation.bounds import bounds
from harness.terminal_safe import escape_controls

MISSING = "-"


class Markup(str):
    """A string of the renderer's own Markdown (e.g. ``**PASS**``): :func:`md` does not escape it."""


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def num(x: float | None, spec: str) -> str:
    """``format(x, spec)``; :data:`MISSING` for ``None``/NaN."""
    return MISSING if _missing(x) else format(x, spec)


def fmt3(x: float | None) -> str:
    """``0.673`` (3 decimals); :data:`MISSING` for ``None``/NaN."""
    return num(x, ".3f")


CLIP_MARK = "\u1d9c"
"""Appended to a bound clipped to [0, 1] (a small raised c: ``1.000ᶜ``)."""
DEGENERATE = "degenerate"
"""Shown instead of the bounds of a zero-width interval (``1.000 [degenerate]``)."""
LEGEND = {
    "clipped": f"{CLIP_MARK} bound clipped to [0, 1] ([-1, 1] for a difference; the interval reached past it)",
    "infinite": "-inf / +inf: the method cannot bound that side (too few clusters)",
    "degenerate": f"[{DEGENERATE}]: zero-width interval (every cluster gave the same value); it measures nothing",
}
"""What each interval mark means, for the legends under tables."""


def bound_text(x: float, clipped: bool = False, spec: str = ".3f") -> str:
    """One bound: ``0.301``, ``1.000ᶜ`` (clipped), ``-inf`` / ``+inf``."""
    if math.isinf(x):
        return "+inf" if x > 0 else "-inf"
    return format(x, spec) + (CLIP_MARK if clipped else "")


def fmt_iv(iv, spec: str = ".3f") -> Markup:
    """``[0.525, 0.822]`` with the marks of :func:`bounds` (``[0.301, 1.000ᶜ]``, ``[-inf, 0.412]``,
    ``[degenerate]``); an empty string for ``None``. ``iv``: anything :func:`bounds` takes. (Numbers and fixed words
    only, so also safe Markdown: :class:`Markup`.)"""
    b = bounds(iv)
    if b is None:
        return Markup("")
    if b.degenerate:
        return Markup(f"[{DEGENERATE}]")
    return Markup(f"[{bound_text(b.lower, b.lower_clipped, spec)}, {bound_text(b.upper, b.upper_clipped, spec)}]")


def mean_iv(mean: float | None, iv) -> Markup:
    """``0.412 [0.301, 0.523]`` (the mean alone without an interval; ``n/a`` without a mean); marks as
    :func:`fmt_iv`."""
    if _missing(mean):
        return Markup("n/a")
    return Markup(f"{mean:.3f} {fmt_iv(iv)}".strip())


def diff_iv(diff: float, iv) -> Markup:
    """A paired difference and its interval, signed: ``+0.012 [-0.010, +0.034]``; marks as :func:`fmt_iv`."""
    return Markup(f"{diff:+.3f} {fmt_iv(iv, '+.3f')}")


def legend(ivs) -> str:
    """The legend line of the marks that occur among ``ivs`` (anything :func:`bounds` takes; ``None`` skipped), or
    ``""`` when none does."""
    seen: set[str] = set()
    for iv in ivs:
        b = bounds(iv)
        if b is not None:
            seen |= b.marks()
    return "; ".join(LEGEND[k] for k in LEGEND if k in seen)


def pct(x: float | None, digits: int = 1) -> str:
    """A proportion (0-1) as a percentage: ``12.3 %``; :data:`MISSING` for ``None``/NaN."""
    return MISSING if _missing(x) else f"{100 * x:.{digits}f} %"


def pts(x: float | None, digits: int = 1) -> str:
    """A difference of two proportions in signed percentage points: ``+1.0 pts``; :data:`MISSING` for ``None``/NaN."""
    return MISSING if _missing(x) else f"{100 * x:+.{digits}f} pts"


def wtl(counts: dict) -> str:
    """Win / tie / loss counts ``{"wins", "ties", "losses"}`` as ``3/30/2``."""
    return f"{counts['wins']}/{counts['ties']}/{counts['losses']}"


def spaced(name: str) -> str:
    """A category or other identifier for display: underscores become spaces (the result is not escaped)."""
    return str(name).replace("_", " ")


# --------------------------------------------------------------------------------------------------------------
# Escaping
# --------------------------------------------------------------------------------------------------------------


def esc(value) -> str:
    """HTML-escape ``str(value)`` for text and attribute values (``& < > " '``)."""
    return html.escape(str(value), quote=True)


_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def md(value) -> str:
    """Markdown-escape ``str(value)`` so it shows as literal text, in running text and in table cells: HTML
    characters become entities (``&`` ``<`` ``>``), the inline Markdown punctuation (``\\ ` * _ [ ] | ~``: code,
    emphasis, links and images, table cells, strike-through) gets a backslash, line breaks become spaces (so no
    input can start a heading, a list or a block quote), and other control characters visible escapes
    (:func:`harness.terminal_safe.escape_controls`). A :class:`Markup` value is returned unchanged (line breaks
    aside)."""
    if isinstance(value, Markup):
        return str(value).replace("\n", " ")
    text = html.escape(str(value), quote=False)
    text = _MD_SPECIAL.sub(r"\\\1", text).replace("\r", " ").replace("\n", " ")
    return escape_controls(text, keep="\t")  # ESC sequences and other controls shown, not obeyed, by a terminal


def rich_text(value) -> Text:
    """``str(value)`` as a rich :class:`~rich.text.Text` (never parsed as console markup, so ``[red]x`` or a trailing
    backslash print as themselves), for table cells, headers and titles; control characters (ESC sequences, carriage
    returns) are shown as escapes (:func:`harness.terminal_safe.escape_controls`), line breaks kept (a cell's
    stacked lines; they stay inside the cell's borders)."""
    return Text(escape_controls(str(value), keep="\n"))
