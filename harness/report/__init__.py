"""Everything harness shows: reports of run records and the output of every verb.

* :func:`write_report` (``harness report``): one self-contained HTML file (:mod:`harness.report.html`) or a Markdown
  summary for a pull-request comment (:mod:`harness.report.markdown`) of a
  :class:`~harness.report.model.ReportData` (:func:`~harness.report.model.build_report`);
* :mod:`harness.report.formats`: the registry of output formats of the other verbs (``--format table|json|markdown``).

The report layer computes no statistics: it reads typed run records and asks :mod:`harness.evaluation.compare` for
every number that is not recorded. Shared formatting and escaping live in :mod:`harness.report.format`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness.errors import HarnessInputError
from harness.report.model import build_report

#: The formats of ``harness report`` (``md`` is accepted for ``markdown``).
REPORT_FORMATS = ("html", "markdown")


def write_report(
    runs: Sequence[str | Path],
    out: str | Path,
    *,
    fmt: str = "html",
    baseline: str | Path | None = None,
    margin: float = 0.02,
    known_item: str | Path | None = None,
    coverage: str | Path | None = None,
    split: str = "all",
) -> Path | None:
    """Write a report of run records: one self-contained HTML file, or Markdown for a pull-request comment.

    Args:
        runs: run record folders (``runs/<id>``); several runs must be comparable.
        out: the file to write (atomically; see :func:`harness.report.formats.write_output`), or ``-`` for stdout.
        fmt: ``"html"`` or ``"markdown"`` (``"md"``).
        baseline: the system paired differences are taken against: a system label (``bm25`` or ``run-id:bm25``)
            or a run folder (its first system). Default: the first system of the first run.
        margin: the non-inferiority gate's margin in metric units (drawn on the forest plot).
        known_item: a known-item output folder (``summary.json``, ``per_document.jsonl``, optional
            ``coverage.json``).
        coverage: a coverage study's ``coverage.json`` (or its folder).
        split: ``all``, ``dev`` or ``test``: the report over that split's questions only
            (:func:`harness.report.model.build_report`).

    Returns:
        ``out`` as a :class:`~pathlib.Path`, or ``None`` when written to stdout.

    Raises:
        IncomparableError: runs that differ in gold set, corpus, chunker or depths (exit 2).
        HarnessInputError: a missing or malformed input, an unknown format or baseline, a negative margin, an output
            path that exists and is not a regular file or whose folder does not exist (exit 2).
    """
    from harness.report.formats import check_output, write_output
    from harness.report.html import render_html
    from harness.report.markdown import render_markdown

    fmt = "markdown" if fmt == "md" else fmt
    if fmt not in REPORT_FORMATS:
        raise HarnessInputError(f"--format: {fmt!r} is not one of {', '.join(REPORT_FORMATS)}")
    check_output(out)
    data = build_report(runs, baseline=baseline, margin=margin, known_item=known_item, coverage=coverage, split=split)
    text = render_html(data) if fmt == "html" else render_markdown(data)
    return write_output(text, out)


__all__ = ["REPORT_FORMATS", "build_report", "write_report"]
