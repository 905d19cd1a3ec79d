"""Number, interval, percent and points formatting, and escaping, shared by every renderer (HTML, Markdown, terminal).

Numbers: metric values and differences are on the 0-1 scale; :func:`pct` shows a proportion as a percentage and
:func:`pts` a difference of two proportions in signed percentage points. A missing value (``None`` or NaN) is
shown as :data:`MISSING` everywhere.

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


def fmt_iv(iv: tuple[float, float] | None, spec: str = ".3f") -> Markup:
    """``[0.525, 0.822]``; an empty string for ``None``. (Numbers only, so also safe Markdown: :class:`Markup`.)"""
    return Markup("" if iv is None else f"[{format(iv[0], spec)}, {format(iv[1], spec)}]")


def mean_iv(mean: float | None, iv: tuple[float, float] | None) -> Markup:
    """``0.412 [0.301, 0.523]`` (the mean alone without an interval; ``n/a`` without a mean)."""
    if _missing(mean):
        return Markup("n/a")
    return Markup(f"{mean:.3f} {fmt_iv(iv)}".strip())


def diff_iv(diff: float, iv: tuple[float, float]) -> Markup:
    """A paired difference and its interval, signed: ``+0.012 [-0.010, +0.034]``."""
    return Markup(f"{diff:+.3f} {fmt_iv(iv, '+.3f')}")


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
    emphasis, links and images, table cells, strike-through) gets a backslash, and line breaks become spaces (so no
    input can start a heading, a list or a block quote). A :class:`Markup` value is returned unchanged (line breaks
    aside)."""
    if isinstance(value, Markup):
        return str(value).replace("\n", " ")
    text = html.escape(str(value), quote=False)
    return _MD_SPECIAL.sub(r"\\\1", text).replace("\r", " ").replace("\n", " ")


def rich_text(value) -> Text:
    """``str(value)`` as a rich :class:`~rich.text.Text` (never parsed as console markup, so ``[red]x`` or a trailing
    backslash print as themselves), for table cells, headers and titles."""
    return Text(str(value))
