"""Tables out: ``--format csv`` and ``--format tsv`` (issue 31 item 4), the per-question and summary numbers of a run
record as one long (tidy) table for pandas, R or a spreadsheet.

One row per system x question x metric (``table`` = ``question``) and one per system x slice x metric
(``table`` = ``summary``), under the columns of :data:`COLUMNS`:

==============  ==========================================================================================
column          meaning
==============  ==========================================================================================
``table``       ``question`` (one question's value) or ``summary`` (a mean over a slice, with its interval)
``run_id``      the run record's id
``subset``      the questions the run scored (``--qids``/``--category``), ``all questions`` without restriction
``system``      the system
``slice``       ``summary``: the slice averaged (``all``, ``covered``, ``dev``, ``test``); ``question``: empty
``qid``         ``question``: the question id; ``summary``: empty
``category``    ``question``: its category; ``summary``: empty
``split``       ``question``: its split (``dev``, ``test`` or empty)
``cluster``     ``question``: its cluster label (the run's clustering)
``metric``      the metric id (``mrr``, ``AP@100``...; docs/metrics.md)
``level``       ``docs`` or ``chunks``
``value``       ``question``: the value in [0, 1]; ``summary``: the mean (empty when not available)
``n_questions`` ``summary``: questions of the slice
``n_clusters``  ``summary``: clusters of the slice
``method``      ``summary``: the interval method of ``lower``/``upper``: the tables' own, the coverage rule's
                default for the slice's design per outcome class (``cr2_logit``, ``cr3``; recorded in the entry,
                ``interval.method``)
``lower``       ``summary``: the interval's lower bound (empty without an interval)
``upper``       ``summary``: its upper bound
==============  ==========================================================================================

Values are written with Python's ``repr`` of the float (round-trips exactly). A question a metric is omitted for
(no located quote) has no ``question`` row for it. Every cell goes through :func:`harness.tabular.delimited_text`
(the one CSV/TSV writer): fields are quoted by the :mod:`csv` module where needed (a comma, tab, quote or line break
in an id), and a string cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a leading
``'`` (spreadsheet formula injection, OWASP; numbers stay numbers); nothing else is altered.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from harness.metrics import MetricSpec
from harness.tabular import delimited_text

__all__ = ["COLUMNS", "delimited", "format_csv", "format_tsv", "run_rows"]

COLUMNS = ("table", "run_id", "subset", "system", "slice", "qid", "category", "split", "cluster", "metric", "level",
           "value", "n_questions", "n_clusters", "method", "lower", "upper")  # fmt: skip
"""The columns of the long table, in order."""


def _level(metric: str) -> str:
    try:
        return MetricSpec.parse(metric).level
    except ValueError:
        return ""


def run_rows(rec) -> list[dict[str, Any]]:
    """The long rows of one :class:`~harness.evaluation.runs.RunRecord` (question rows, then summary rows)."""
    sub = (rec.manifest.model_extra or {}).get("subset")
    subset = sub["label"] if sub else "all questions"
    base = {"run_id": rec.run_id, "subset": subset}
    out: list[dict[str, Any]] = []
    for row in rec.per_question:
        for metric, value in row.metrics.items():
            out.append({**base, "table": "question", "system": row.system, "qid": row.qid, "category": row.category,
                        "split": row.split or "", "cluster": row.cluster or "", "metric": metric,
                        "level": _level(metric), "value": value})  # fmt: skip
    for system, slices in rec.summary.systems.items():
        for slice_name, s in slices.items():
            for metric, ms in s.overall.items():
                iv = ms.shown
                out.append({**base, "table": "summary", "system": system, "slice": slice_name, "metric": metric,
                            "level": _level(metric), "value": ms.mean, "n_questions": s.n_questions,
                            "n_clusters": s.n_clusters, "method": iv.method if iv else "",
                            "lower": iv.lower if iv else None, "upper": iv.upper if iv else None})  # fmt: skip
    return out


def delimited(rows: Iterable[dict[str, Any]], delimiter: str = ",", columns: Sequence[str] = COLUMNS) -> str:
    """``rows`` as CSV (``delimiter=","``) or TSV (``"\\t"``) text with a header line, ``\\n`` line ends; a key
    missing from a row is an empty cell. Written by :func:`harness.tabular.delimited_text`: a string cell that begins
    with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a leading ``'`` (formula injection)."""
    return delimited_text(columns, ([r.get(c) for c in columns] for r in rows), delimiter)


def _rows_of(result) -> list[dict[str, Any]]:
    value = getattr(result.value, "runs", result.value)  # harness report: the ReportData's run records
    records = value if isinstance(value, list | tuple) else [value]
    return [r for rec in records for r in run_rows(rec)]


def format_csv(result, console) -> None:
    """The ``csv`` format (a run result, or ``harness report``'s runs: :func:`run_rows` of each record)."""
    console.file.write(delimited(_rows_of(result), ","))


def format_tsv(result, console) -> None:
    """The ``tsv`` format (tab-separated :func:`format_csv`)."""
    console.file.write(delimited(_rows_of(result), "\t"))
