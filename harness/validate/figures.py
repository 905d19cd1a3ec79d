"""Figures in a text (dates, article numbers, numbers), for rule V034: a reference answer's figures should occur in
its quotes.

The extraction, precisely (on the text after the chunker's normaliser, :func:`harness.corpus.chunker.normalize_text`,
case-folded; Spanish, as our gold sets are):

1. **Dates**, taken first, as one figure each:

   * ``D de MONTH [de[l] YYYY]``: a day of 1-2 digits (an ordinal ``1o.``/``1º`` counts as the day), ``de``, a
     Spanish month name, optionally ``de`` or ``del`` and a four-digit year -> ``"YYYY-MM-DD"`` or ``"--MM-DD"``
     without a year;
   * ``YYYY-MM-DD``, and ``DD-MM-YYYY`` / ``DD/MM/YYYY`` (day first, as the DOF writes them) -> ``"YYYY-MM-DD"``.

2. **Article numbers**, one figure each: ``artículo``/``articulo``/``art.`` (plural too), optional ``/``, the number,
   an optional ordinal mark (``o``, ``o.``, ``º``) and an optional ``bis``/``ter``/``quáter``/``quater``/
   ``quinquies`` -> ``"art N"`` or ``"art N bis"``.

3. **Numbers**: every other maximal run of digits with inner ``.`` or ``,`` separators followed by a digit
   (``16.4583``, ``1,000``, ``30``; a sentence's final ``.`` is not part of it) that is not part of a word
   (``A1`` is not a number) -> the run as written.

A figure of the answer is **found** in the quotes when:

* a date: a quote date has the same month and day, and the same year when both give one;
* an article number: a quote names the same article (by rule 2), or the number (``N``) occurs as a figure in a quote,
  such as the quote's own ``Artículo 325.`` heading read as a number;
* a number: the same run, compared with every ``,`` read as ``.`` (``2.50`` and ``2,50`` are one figure, as are
  ``1,000`` and ``1.000``), occurs among the quotes' numbers, or among the digits inside the quotes' dates and
  article numbers (a year ``2024`` of the answer is found in a quote's ``11 de abril de 2024``).

A figure of the answer that also occurs in the *question* (``also_in``, same matching) is not flagged: the answer
restates what was asked (a false-premise answer names the premise it corrects).

Numbers spelt in words (``treinta``, ``mil``), Roman numerals (``fracción VIII``) and percentages' signs are not
figures: the rule checks digits only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.corpus.chunker import normalize_text

__all__ = ["Figures", "extract_figures", "unsupported_figures"]

MONTHS = {
    "enero": 1,
    "febrero": 2,
    "marzo": 3,
    "abril": 4,
    "mayo": 5,
    "junio": 6,
    "julio": 7,
    "agosto": 8,
    "septiembre": 9,
    "setiembre": 9,
    "octubre": 10,
    "noviembre": 11,
    "diciembre": 12,
}

_WORD_DATE = re.compile(
    r"(?<![\w.,])(\d{1,2})(?:\s*o\.?|º)?\s+de\s+(" + "|".join(MONTHS) + r")(?:\s+del?\s+(\d{4}))?(?!\w)"
)
_ISO_DATE = re.compile(r"(?<![\w.,/-])(\d{4})-(\d{2})-(\d{2})(?![\w/-])")
_DMY_DATE = re.compile(r"(?<![\w.,/-])(\d{1,2})([-/])(\d{1,2})\2(\d{4})(?![\w/-])")
_ARTICLE = re.compile(
    r"(?<!\w)(?:art[íi]culos?|arts?\.)\s*/?\s*(\d+)(?:\s*o\b\.?|º)?(?:\s+(bis|ter|qu[áa]ter|quinquies))?(?!\w)"
)
_NUMBER = re.compile(r"(?<![\w.,])\d+(?:[.,]\d+)*(?!\w)")


@dataclass(frozen=True)
class Figures:
    """The figures of one text (see the module docstring).

    Attributes:
        dates: ``(year or None, month, day)`` per date, in text order.
        articles: ``"art N"`` / ``"art N bis"`` per article number, in text order.
        numbers: the other numbers as written, in text order.
        digits: every digit run of the text's dates and article numbers (``"2024"``, ``"11"``, ``"325"``), for
            matching an answer's numbers against them.
    """

    dates: tuple[tuple[int | None, int, int], ...]
    articles: tuple[str, ...]
    numbers: tuple[str, ...]
    digits: frozenset[str]


def _blank(text: str, span: tuple[int, int]) -> str:
    a, b = span
    return text[:a] + " " * (b - a) + text[b:]


def extract_figures(text: str) -> Figures:
    """The dates, article numbers and numbers of ``text`` (rules 1-3 of the module docstring, in that order: a
    date's or an article's digits are not numbers as well)."""
    t = normalize_text(text).casefold()
    dates: list[tuple[int, tuple[int | None, int, int]]] = []
    digits: set[str] = set()
    for m in _WORD_DATE.finditer(t):
        year = int(m.group(3)) if m.group(3) else None
        dates.append((m.start(), (year, MONTHS[m.group(2)], int(m.group(1)))))
        digits.update(g for g in (m.group(1), m.group(3)) if g)
    for m in _WORD_DATE.finditer(t):
        t = _blank(t, m.span())
    for pat, order in ((_ISO_DATE, (1, 2, 3)), (_DMY_DATE, (4, 3, 1))):
        for m in pat.finditer(t):
            y, mo, d = (int(m.group(k)) for k in order)
            dates.append((m.start(), (y, mo, d)))
            digits.update(m.group(k) for k in order)
        for m in pat.finditer(t):
            t = _blank(t, m.span())
    articles: list[str] = []
    for m in _ARTICLE.finditer(t):
        suffix = m.group(2)
        articles.append(f"art {int(m.group(1))}" + (f" {suffix.replace('á', 'a')}" if suffix else ""))
        digits.add(m.group(1))
    for m in _ARTICLE.finditer(t):
        t = _blank(t, m.span())
    numbers = tuple(m.group(0) for m in _NUMBER.finditer(t))
    return Figures(
        dates=tuple(d for _, d in sorted(dates, key=lambda x: x[0])),
        articles=tuple(articles),
        numbers=numbers,
        digits=frozenset(digits),
    )


def _date_text(d: tuple[int | None, int, int]) -> str:
    y, mo, day = d
    return f"{y:04d}-{mo:02d}-{day:02d}" if y is not None else f"--{mo:02d}-{day:02d}"


def unsupported_figures(answer: str, quotes: list[str], also_in: str | None = None) -> list[str]:
    """The figures of ``answer`` found in none of ``quotes`` nor in ``also_in`` (the question; matching rules of
    the module docstring), each once, in answer order: dates as ``YYYY-MM-DD`` (``--MM-DD`` without a year),
    articles as ``art N``, numbers as written."""
    q = [extract_figures(x) for x in [*quotes, *([also_in] if also_in else [])]]
    q_dates = [d for f in q for d in f.dates]
    q_articles = {a for f in q for a in f.articles}
    q_numbers = {n.replace(",", ".") for f in q for n in f.numbers} | {d for f in q for d in f.digits}
    a = extract_figures(answer)
    out: list[str] = []
    for y, mo, day in a.dates:
        if not any(mo == qm and day == qd and (y is None or qy is None or y == qy) for qy, qm, qd in q_dates):
            out.append(_date_text((y, mo, day)))
    for art in a.articles:
        if art not in q_articles and art.split(" ")[1] not in q_numbers:
            out.append(art)
    out += [n for n in a.numbers if n.replace(",", ".") not in q_numbers]
    return list(dict.fromkeys(out))
