"""One self-contained HTML report (figures inlined as SVG) of a :class:`~harness.report.model.ReportData`.

Sections and their stable element ids (see :data:`FIGURE_IDS` for the figures):

* ``provenance`` - gold set, corpus, chunker, models, code version, date, per run;
* ``systems`` - systems table with 95 % CR2 intervals and the clustering used, and each system's mean and interval
  per metric (``fig-system-intervals``);
* ``categories`` - per-category MRR with CR2 whiskers (``fig-category-mrr``; a heat table above 8 systems);
* ``paired`` - forest plot of paired differences against a baseline with the gate margin (``fig-forest``);
* ``changes`` - per candidate, the regressed questions beside the improved ones on the gate metric;
* ``depth`` - all-hop@k and evidence recall@k at k = 1, 5, 10, 20 (``fig-depth-curves``);
* ``ranks`` - distribution of gold document and evidence-chunk ranks (``fig-evidence-ranks``);
* ``covered`` - the fully covered slice when the vector index is partial (``fig-covered-slice``);
* ``known-item`` - per-document hit-rate distribution (``fig-known-item-hit-rate``);
* ``coverage`` - coverage against K with nominal line and Monte Carlo band (``fig-coverage-vs-k``) and interval
  width against K (``fig-width-vs-k``);
* ``questions`` - a collapsible per-question drill-down.

Every string from an input is HTML-escaped; the page allows no external resource and no script but its own (a
Content-Security-Policy ``default-src 'none'``). The stylesheet and the measuring script are package data
(``assets/report.css``, ``assets/measure.js``). The script measures every figure after layout and writes
``{id: {width, height, marks}}`` into the ``<script type="application/json" id="figure-layout">`` element (read by
the headless-browser test; harmless elsewhere).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

from harness.report.format import esc
from harness.report.html.changes import section_changes
from harness.report.html.details import footer, section_provenance, section_questions
from harness.report.html.sections import (
    DEPTH_FAMILIES,
    FIGURE_IDS,
    SYSTEM_PLOT_METRICS,
    section_categories,
    section_covered,
    section_depth,
    section_paired,
    section_ranks,
    section_systems,
)
from harness.report.html.study_sections import section_coverage, section_known_item
from harness.report.model import ReportData, coverage_series

__all__ = ["FIGURE_IDS", "figure_ids", "render_html"]


@cache
def asset(name: str) -> str:
    """The text of a packaged asset (``report.css``, ``measure.js``)."""
    return resources.files("harness.report.html").joinpath("assets", name).read_text("utf-8")


def figure_ids(data: ReportData) -> list[str]:
    """The figure ids a report of ``data`` holds (the optional ones only when their input is there)."""
    ids = [FIGURE_IDS["systems"]] if data.metrics_present(SYSTEM_PLOT_METRICS) else []
    ids.append(FIGURE_IDS["category"])
    if data.paired:
        ids.append(FIGURE_IDS["forest"])
    if any(e.overall(f"{f}@{k}") for e in data.entries for f in DEPTH_FAMILIES for k in data.ks()):
        ids.append(FIGURE_IDS["depth"])
    ids.append(FIGURE_IDS["ranks"])
    if data.covered_entries():
        ids.append(FIGURE_IDS["covered"])
    if data.known_item and any((o.get("n") or 0) > 0 for o in data.known_item["per_document"]):
        ids.append(FIGURE_IDS["known_item"])
    if data.coverage and coverage_series(data.coverage["data"])[0]:
        ids += [FIGURE_IDS["coverage"], FIGURE_IDS["width"]]
    return ids


def _json_script(obj) -> str:
    """JSON safe inside ``<script>``: ``<``, ``>`` and ``&`` as ``\\u`` escapes (no ``</script>`` can appear)."""
    return json.dumps(obj).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_html(data: ReportData) -> str:
    """The whole report as one HTML document (no external resources; SVG figures inline)."""
    m = data.runs[0].manifest
    title = f"Retrieval report: {m.goldset.name or '?'} v{m.goldset.version or '?'} on {m.corpus.corpus_id or '?'}"
    sections = [
        section_systems(data),
        section_categories(data),
        section_paired(data),
        section_changes(data),
        section_depth(data),
        section_ranks(data),
        section_covered(data),
        section_known_item(data),
        section_coverage(data),
        section_questions(data),
    ]
    nav_items = [
        ("systems", "systems"),
        ("categories", "categories"),
        ("paired", "paired differences"),
        ("changes", "regressed / improved"),
        ("depth", "depth"),
        ("ranks", "gold ranks"),
        ("covered", "covered slice"),
    ]
    if data.known_item:
        nav_items.append(("known-item", "known-item"))
    if data.coverage:
        nav_items.append(("coverage", "coverage"))
    nav_items.append(("questions", "questions"))
    nav = "<nav>" + "".join(f"<a href='#{a}'>{esc(t)}</a>" for a, t in nav_items) + "</nav>"
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'; img-src data:\">"
        f"<title>{esc(title)}</title><style>{asset('report.css')}</style></head><body>"
        f"<header><h1>{esc(title)}</h1>{section_provenance(data)}{nav}</header><main>"
        + "".join(sections)
        + "</main>"
        + footer(data)
        + f"<script type='application/json' id='report-figures'>{_json_script(figure_ids(data))}</script>"
        + "<script type='application/json' id='figure-layout'>{}</script>"
        + f"<script>{asset('measure.js')}</script></body></html>\n"
    )
