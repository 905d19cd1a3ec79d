"""The one writer of every CSV and TSV file the harness produces (``--format csv|tsv``, ``coverage.csv``,
``suite.csv``), with spreadsheet formula injection neutralised (issue 44 item 7).

Ids, categories, system names and run ids come from gold sets, rankings files and plugins that a contributor
controls. A spreadsheet (Excel, LibreOffice Calc, Google Sheets) reads a cell that begins with ``=``, ``+``, ``-``,
``@``, a tab or a carriage return as a formula (``=HYPERLINK(...)``, ``=cmd|'/Ccalc'!A0``). Following the OWASP
guidance on CSV injection (https://owasp.org/www-community/attacks/CSV_Injection), every **string** cell that
begins with one of those characters is written with a single quote ``'`` in front (``=1+1`` -> ``'=1+1``), which
the spreadsheet shows as text. The field is then quoted (RFC 4180) when it holds the delimiter, a double quote or a
line break (``\\n`` or ``\\r``), so a value can neither start a new cell nor end the row.

Numbers the harness writes as numbers (``int``/``float``/numpy scalars: a negative difference ``-0.012``) stay
numbers: only strings are neutralised. A string that merely looks numeric (a question id ``-1``) is a string and
gets the quote too; a reader that wants the id back drops one leading ``'`` from a cell that starts with ``'``
followed by one of the characters above (:func:`restore_cell`).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["FORMULA_PREFIXES", "delimited_text", "restore_cell", "safe_cell"]

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
"""First characters that make a spreadsheet read a cell as a formula (OWASP CSV injection)."""


def safe_cell(value: Any) -> str:
    """The text of one CSV/TSV cell: ``""`` for ``None``; ``str`` of a bool or an integer; ``repr`` of a real
    number as a float (round-trips exactly; numpy scalars included); a string as it is, with ``'`` in front when it
    begins with one of :data:`FORMULA_PREFIXES` (module docstring)."""
    if value is None:
        return ""
    if isinstance(value, bool | numbers.Integral):  # numpy integers included (not subclasses of int)
        return str(value) if isinstance(value, bool) else str(int(value))
    if isinstance(value, numbers.Real):  # float, numpy floats (whose repr would be "np.float64(...)")
        return repr(float(value))
    text = str(value)
    return "'" + text if text.startswith(FORMULA_PREFIXES) else text


def restore_cell(text: str) -> str:
    """The string :func:`safe_cell` was given for a string cell ``text`` (the neutralising ``'`` dropped)."""
    if len(text) > 1 and text[0] == "'" and text[1:].startswith(FORMULA_PREFIXES):
        return text[1:]
    return text


def _field(text: str, delimiter: str) -> str:
    """``text`` quoted as RFC 4180 says when it holds the delimiter, a double quote, ``\\n`` or ``\\r`` (the
    :mod:`csv` writer with ``lineterminator="\\n"`` leaves a lone ``\\r`` unquoted, which readers take for a line
    end)."""
    if delimiter in text or any(c in text for c in '"\n\r'):
        return '"' + text.replace('"', '""') + '"'
    return text


def delimited_text(columns: Sequence[str], rows: Iterable[Sequence[Any]], delimiter: str = ",") -> str:
    """``rows`` (each a sequence of cell values in ``columns`` order) as CSV (``delimiter=","``) or TSV (``"\\t"``)
    text: a header line, then one line per row, ``\\n`` line ends, every cell through :func:`safe_cell`, a field
    quoted (RFC 4180, as :mod:`csv` reads it back) when it holds the delimiter, a double quote or a line break.

    Raises:
        ValueError: a row whose length differs from ``columns``, a delimiter other than one character that is not
            a double quote or a line break.
    """
    if len(delimiter) != 1 or delimiter in '"\n\r':
        raise ValueError(f"delimiter {delimiter!r}: one character, not a double quote or a line break")
    out = [delimiter.join(_field(safe_cell(c), delimiter) for c in columns)]
    for i, row in enumerate(rows):
        cells = list(row)
        if len(cells) != len(columns):
            raise ValueError(f"row {i}: {len(cells)} cells for {len(columns)} columns")
        out.append(delimiter.join(_field(safe_cell(v), delimiter) for v in cells))
    return "\n".join(out) + "\n"
