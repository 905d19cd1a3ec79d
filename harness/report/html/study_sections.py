"""The HTML report's sections about the label-free studies: the known-item study and the interval-coverage study
(read from their output files; every input string escaped)."""

from __future__ import annotations

import math

from harness.report.format import MISSING, esc, fmt3, num, pct, pts
from harness.report.html.sections import FIGURE_IDS, figure
from harness.report.model import ReportData, coverage_labels, coverage_series, macro_methods
from harness.report.plots import figure_svg
from harness.report.study_plots import coverage_vs_k, hit_rate_hist, width_vs_k


def section_known_item(data: ReportData) -> str:
    """Per-document hit-rate distribution, per-system summary and paired differences of a known-item study."""
    ki = data.known_item
    if ki is None:
        return ""
    s = ki["summary"]
    rates: dict[str, list[float]] = {}
    for o in ki["per_document"]:
        n = o.get("n") or 0
        if n > 0:
            rates.setdefault(str(o["system"]), []).append(float(o.get("rate", o.get("s", 0) / n)))
    parts = ["<section id='known-item'><h2>Known-item study</h2>"]
    cfg = s.get("config", {})
    counts = s.get("counts", {})
    parts.append(
        f"<p class='note'>Each chunk's first {esc(cfg.get('query_words', '?'))} words as a query "
        f"({esc(cfg.get('chunker_id', '?'))}); a hit when the top result belongs to the query's own document. "
        f"Corpus {esc(s.get('corpus_id', '?'))}: {esc(counts.get('queries', '?'))} queries over "
        f"{esc(counts.get('documents', '?'))} documents. Source: <code>{esc(ki['path'])}</code>.</p>"
    )
    if rates:
        fig = hit_rate_hist(rates)
        svg = figure_svg(fig, FIGURE_IDS["known_item"], title="Per-document known-item hit-rate distribution")
        parts.append(
            figure(
                FIGURE_IDS["known_item"],
                svg,
                "Distribution of the per-document hit@1 rate. Queries of one document are correlated (a cluster): "
                "the spread of these rates across documents, not the number of queries, sets how wide an honest "
                "interval must be.",
            )
        )
    else:
        parts.append("<p class='note'>per_document.jsonl not found: no hit-rate distribution.</p>")
    rows = []
    for name, sy in s.get("systems", {}).items():
        pdoc = sy.get("per_document", {})
        dg = sy.get("diagnostics", {})
        rows.append(
            f"<tr><td>{esc(name)}</td><td>{esc(sy.get('queries', MISSING))}</td>"
            f"<td>{esc(sy.get('documents', MISSING))}</td><td>{pct(sy.get('micro_hit1'))}</td>"
            f"<td>{pct(sy.get('macro_hit1'))}</td><td>{fmt3(sy.get('mrr_first_same_doc'))}</td>"
            f"<td>{pct(pdoc.get('share_at_zero'))}</td><td>{pct(pdoc.get('share_at_one'))}</td>"
            f"<td>{fmt3(dg.get('icc'))}</td><td>{num(dg.get('deff'), '.1f')}</td><td>{num(dg.get('n_eff'), '.0f')}</td>"
            "</tr>"
        )
    parts.append(
        "<table id='table-known-item'><thead><tr><th class='l'>system</th><th>queries</th><th>documents</th>"
        "<th>micro hit@1</th><th>macro hit@1</th><th>MRR (own doc)</th><th>docs at 0</th><th>docs at 1</th>"
        "<th>ICC</th><th>DEFF</th><th>N eff</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )
    paired = s.get("paired") or {}
    if paired:
        prow = []
        for name, p in paired.items():
            mci, aci = p.get("micro_ci") or [None, None], p.get("macro_ci") or [None, None]
            prow.append(
                f"<tr><td>{esc(name)}</td><td>{pts(p.get('micro_diff'))}</td>"
                f"<td>[{pts(mci[0])}, {pts(mci[1])}]</td><td>{pts(p.get('macro_diff'))}</td>"
                f"<td>[{pts(aci[0])}, {pts(aci[1])}]</td>"
                f"<td>{esc(p.get('only_a', MISSING))}/{esc(p.get('only_b', MISSING))}</td></tr>"
            )
        parts.append(
            "<table><thead><tr><th class='l'>paired (B - A)</th><th>micro diff</th><th>95 % CI (CR2)</th>"
            "<th>macro diff</th><th>95 % CI (t)</th><th>only A / only B hit</th></tr></thead><tbody>"
            + "".join(prow)
            + "</tbody></table>"
        )
    parts.append("</section>")
    return "".join(parts)


def _coverage_cell(r: dict | None) -> str:
    return f"<td>{MISSING}</td>" if not r else f"<td>{100 * r['coverage']:.1f} ± {100 * r['mc_margin']:.1f}</td>"


def _coverage_figures(cov: dict, cser: dict, wser: dict, level: float, reps: int) -> list[str]:
    labels = coverage_labels()
    macro = macro_methods(cov)
    fig = coverage_vs_k(cser, level=level, reps=reps, labels=labels, open_markers=macro)
    svg = figure_svg(fig, FIGURE_IDS["coverage"], title="Interval coverage against K")
    band = 1.96 * math.sqrt(level * (1 - level) / max(reps, 1))
    out = [
        figure(
            FIGURE_IDS["coverage"],
            svg,
            f"Coverage against the number of sampled documents K (simple random sampling). Solid line: nominal "
            f"{100 * level:g} %; grey band: nominal ± Monte Carlo margin ({100 * band:.1f} points at R = {reps}); "
            "error bars: each point's own Monte Carlo margin 1.96 sqrt(p (1 - p) / R). Open markers: methods for "
            "the macro rate (mean of document rates); filled: the micro rate (mean of chunk outcomes).",
        )
    ]
    fig = width_vs_k(wser, labels=labels, open_markers=macro)
    svg = figure_svg(fig, FIGURE_IDS["width"], title="Interval width against K")
    out.append(
        figure(
            FIGURE_IDS["width"],
            svg,
            "Mean interval width (bounds clipped to [0, 1]) against K; narrow intervals that under-cover are not "
            "a virtue.",
        )
    )
    return out


def section_coverage(data: ReportData) -> str:
    """Coverage and width of interval methods against K on this corpus (figures and tables of a coverage study)."""
    if data.coverage is None:
        return ""
    cov = data.coverage["data"]
    cfg = cov.get("config", {})
    pop = cov.get("population", {})
    level = float(cfg.get("level", 0.95))
    reps = int(cfg.get("reps", 0) or 0)
    labels = coverage_labels()
    cser, wser, srs = coverage_series(cov)
    parts = ["<section id='coverage'><h2>Interval coverage on this corpus</h2>"]
    parts.append(
        f"<p class='note'>The known-item outcomes of <b>{esc(pop.get('system', '?'))}</b> as a finite population "
        f"({esc(pop.get('documents', '?'))} documents, {esc(pop.get('queries', '?'))} queries; micro "
        f"{pct(pop.get('micro'))}, macro {pct(pop.get('macro'))}), sampled R = {reps} times at each K; how often "
        f"each method's {100 * level:g} % interval covers the population value. Source: "
        f"<code>{esc(data.coverage['path'])}</code>.</p>"
    )
    if cser:
        parts += _coverage_figures(cov, cser, wser, level, reps)
        methods = list(dict.fromkeys(m for p in cser.values() for m in p))
        head = "".join(f"<th>K={esc(d['K'])}</th>" for d in srs)
        pub = cov.get("published_k20") or {}
        rows = []
        for m in methods:
            cells = "".join(_coverage_cell(d["rows"].get(m)) for d in srs)
            p = pub.get(m)
            rows.append(
                f"<tr><td>{esc(labels.get(m, m))}</td>{cells}<td>{num(None if p is None else 100 * p, '.1f')}</td></tr>"
            )
        parts.append(
            f"<table id='table-coverage'><thead><tr><th class='l'>method (no FPC)</th>{head}<th>published, K=20</th>"
            f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        )
    for d in cov.get("designs", []):
        if d.get("design") == "srs":
            continue
        note = d.get("note") or {}
        if not d.get("rows"):
            parts.append(f"<p class='note'>{esc(d.get('design'))} design skipped: {esc(note.get('skipped', ''))}</p>")
            continue
        rows = "".join(
            f"<tr><td>{esc(labels.get(r.get('method', k), k))}{' +FPC' if r.get('fpc') else ''}</td>"
            f"<td>{100 * r['coverage']:.1f} ± {100 * r['mc_margin']:.1f}</td><td>{100 * r['mean_width']:.2f}</td></tr>"
            for k, r in d["rows"].items()
        )
        parts.append(
            f"<h3>{esc(d['design'])} design: {esc(note.get('h', '?'))} types x {esc(note.get('m', '?'))} documents "
            f"(K = {esc(d.get('K'))}, R = {esc(d.get('reps'))})</h3><table><thead><tr><th class='l'>method</th>"
            f"<th>coverage (%)</th><th>mean width (points)</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    parts.append("</section>")
    return "".join(parts)
