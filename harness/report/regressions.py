"""The regressed-questions list of ``compare`` and ``gate`` on a terminal and in Markdown.

Both show at most :data:`CAP` questions (the worst first, as :func:`harness.evaluation.regressions.regressed_questions`
orders them) and a line counting the rest; the JSON output holds every one. Rank columns show the rank of the first
gold item at the metric's level in the baseline and the candidate (:data:`~harness.report.format.MISSING` when none
lies within the recorded depth). Every input string is escaped (rich ``Text``; :func:`harness.report.format.md`).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from harness.report.format import MISSING, md, rich_text
from harness.report.markdown import table

CAP = 10
"""Regressed questions shown in a table; the rest are counted."""

_HEAD = ("question", "category", "baseline", "candidate", "diff", "gold rank: base -> cand")


def _rank(r: int | None) -> str:
    return MISSING if r is None else str(r)


def regression_rows(items: Sequence[dict], cap: int = CAP) -> tuple[list[list[str]], int]:
    """``(rows, rest)``: one row of :data:`_HEAD` cells per regression (dicts of
    :class:`~harness.evaluation.regressions.Regression`) for the first ``cap``, and the number left out."""
    rows = [
        [
            str(x["qid"]),
            str(x["category"]),
            f"{x['baseline']:.3f}",
            f"{x['candidate']:.3f}",
            f"{x['diff']:+.3f}",
            f"{_rank(x['rank_baseline'])} -> {_rank(x['rank_candidate'])}",
        ]
        for x in items[:cap]
    ]
    return rows, max(0, len(items) - cap)


def _title(what: str, items: Sequence[dict]) -> str:
    level = items[0]["level"] if items else "document"
    return f"{what}: {len(items)} regressed question{'s' * (len(items) != 1)} (first gold {level} rank)"


def regressions_table(what: str, items: Sequence[dict], cap: int = CAP) -> Table | None:
    """A rich table of the regressed questions of one comparison (``what``: e.g. ``mrr: new - bm25``), at most
    ``cap`` rows with a caption counting the rest; ``None`` when nothing regressed."""
    if not items:
        return None
    rows, rest = regression_rows(items, cap)
    t = Table(title=Text(_title(what, items)), title_justify="left")
    for i, col in enumerate(_HEAD):
        t.add_column(col, justify="left" if i < 2 else "right", no_wrap=i != 1)
    for row in rows:
        t.add_row(*(rich_text(c) for c in row))
    if rest:
        t.caption, t.caption_justify = Text(f"... and {rest} more (every one in --format json)"), "left"
    return t


def regressions_markdown(what: str, items: Sequence[dict], cap: int = CAP) -> list[str]:
    """Markdown lines (a heading line, a GitHub table, a line counting the rest) for the regressed questions of one
    comparison; empty when nothing regressed."""
    if not items:
        return []
    rows, rest = regression_rows(items, cap)
    out = ["", f"**{md(_title(what, items))}**", "", table(list(_HEAD), rows, ["l", "l", "r", "r", "r", "r"])]
    if rest:
        out += ["", f"... and {rest} more (every one in `--format json`)."]
    return out
