"""Everything harness shows: reports of run records and the output of every verb.

* :func:`write_report` (``harness report``): one self-contained HTML file (:mod:`harness.report.html`) or a Markdown
  summary for a pull-request comment (:mod:`harness.report.markdown`) of a
  :class:`~harness.report.model.ReportData` (:func:`~harness.report.model.build_report`);
* :mod:`harness.report.formats`: the one registry of output formats, of every verb and of ``harness report``.

The report layer computes no statistics: it reads typed run records and asks :mod:`harness.evaluation.compare` for
every number that is not recorded. Shared formatting and escaping live in :mod:`harness.report.format`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def write_report(
    runs: Sequence[str | Path],
    out: str | Path,
    *,
    fmt: str = "html",
    baseline: str | Path | None = None,
    margin: float = 0.02,
    known_item: str | Path | None = None,
    coverage: str | Path | None = None,
    metrics: Sequence[str] | None = None,
    split: str = "all",
) -> Path | None:
    """Write a report of run records: one self-contained HTML file, or Markdown for a pull-request comment.

    Args:
        runs: run record folders (``runs/<id>``); several runs must be comparable.
        out: the file to write (atomically; see :func:`harness.report.formats.write_output`), or ``-`` for stdout.
        fmt: a format of :data:`harness.report.formats.FORMATS` that renders the ``report`` kind (``html``,
            ``markdown`` or ``md``; :func:`harness.report.formats.formats_of`).
        baseline: the system paired differences are taken against: a system label (``bm25`` or ``run-id:bm25``)
            or a run folder (its first system). Default: the first system of the first run.
        margin: the non-inferiority gate's margin in metric units (drawn on the forest plot).
        known_item: a known-item output folder (``summary.json``, ``per_document.jsonl``, optional
            ``coverage.json``).
        coverage: a coverage study's ``coverage.json`` (or its folder).
        metrics: the metrics of the paired differences and the gate column (the first); ``None``: the forest set
            and ``mrr``. A metric a run did not summarise must have been scored into it first
            (:func:`harness.evaluation.subset.load_report_runs`).
        split: ``all``, ``dev`` or ``test``: the report over that split's questions only
            (:func:`harness.report.model.build_report`).

    Returns:
        ``out`` as a :class:`~pathlib.Path`, or ``None`` when written to stdout.

    Raises:
        IncomparableError: runs that differ in gold set, corpus, chunker or depths (exit 2).
        HarnessInputError: a missing or malformed input, an unknown format or baseline, a negative margin, an output
            path that exists and is not a regular file or whose folder does not exist (exit 2).
    """
    from harness.report.formats import REPORT, Result, check_format, check_output, render_text, write_output
    from harness.report.model import build_report

    fmt = check_format(fmt, REPORT)
    check_output(out)
    chosen = {"compare_metrics": tuple(metrics), "gate_metric": metrics[0]} if metrics else {}
    data = build_report(
        runs, baseline=baseline, margin=margin, known_item=known_item, coverage=coverage, split=split, **chosen
    )
    return write_output(render_text(Result(REPORT, data), fmt), out)


__all__ = ["build_report", "write_report"]


def __getattr__(name: str):
    """``build_report`` (:mod:`harness.report.model`), imported on first use: importing any ``harness.report``
    module runs this file, and the shared formatting of :mod:`harness.report.format` must not load run records,
    comparisons and studies."""
    if name == "build_report":
        from harness.report.model import build_report

        return build_report
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
