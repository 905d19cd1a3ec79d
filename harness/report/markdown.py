"""A Markdown summary of run records for a pull-request comment (GitHub-flavoured tables, under 60,000 characters).

Renders the same :class:`harness.report.model.ReportData` as the HTML report, without figures: provenance, the
systems table with the intervals of the run's design (:mod:`harness.stats.shown`) and the clustering, paired
differences against the baseline with the gate margin, MRR per category, all-hop / evidence recall by depth, the
fully covered slice, known-item and coverage summaries, and a collapsed per-question table. If the text would
exceed :data:`MAX_CHARS` the per-question table is shortened (then dropped) and a note says so.

Every string from an input is escaped with :func:`harness.report.format.md` (HTML characters as entities, Markdown
punctuation and table pipes with a backslash), so no input can add markup, break a table or open an HTML tag; the
only raw HTML is the report's own ``<details>``/``<summary>``.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.evaluation.changes import change_line
from harness.report.format import MISSING, Markup, fmt3, fmt_iv, legend, md, mean_iv, num, pct, spaced, wtl
from harness.report.model import (
    ReportData,
    coverage_labels,
    coverage_series,
    provenance,
    rank_lists,
    rank_summary,
    report_provenance,
)
from harness.stats.methods import evidence_notes
from harness.stats.shown import category_interval_label, short_label

#: GitHub's limit for a comment body is 65,536 characters; stay well below it.
MAX_CHARS = 60_000


def table(head: Sequence[str], rows: Sequence[Sequence[str]], align: Sequence[str] | None = None) -> str:
    """A GitHub table; every cell and header is escaped (:func:`~harness.report.format.md`) unless it is
    :class:`~harness.report.format.Markup`. ``align``: ``"l"``/``"r"`` per column (default: first left)."""
    align = align or ["l"] + ["r"] * (len(head) - 1)
    sep = ["---:" if a == "r" else ":---" for a in align]
    lines = ["| " + " | ".join(md(h) for h in head) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(md(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _header(data: ReportData) -> list[str]:
    p = report_provenance(data.runs)
    gs = data.runs[0].manifest.goldset
    out = [
        f"### Retrieval report: {md(gs.name or '?')} v{md(gs.version or '?')}",
        "",
        f"**Gold set** {md(p['gold set'])} · **corpus** {md(p['corpus'])} · **chunker** {md(p['chunker'])} · "
        f"**model** {md(p['model'])} · **code** {md(p['code'])} · **date** {md(p['date'])}",
    ]
    if len(data.runs) > 1:
        out += [
            "",
            "Runs: " + "; ".join(f"{md(provenance(r)['run'])}: model {md(provenance(r)['model'])}" for r in data.runs),
        ]
    for runs, changes in data.changes:
        out += ["", f"**Changes** {md(runs)}: " + ("none" if not changes else ""), *([""] if changes else [])]
        out += [f"- {md(change_line(c))}" for c in changes]
    for n in data.notes:
        out += ["", f"> **Warning:** {md(n)}"]
    return out


def _systems(data: ReportData, slice_name: str = "all") -> list[str]:
    metrics = data.metrics_present(None, slice_name)
    cl = data.clustering()
    df = cl.get("df")
    df_txt = f"Satterthwaite df {df:.1f}" if isinstance(df, (int, float)) else "df not recorded"
    shown = data.shown(slice_name)
    rows = []
    for e in data.entries:
        if slice_name not in e.summary:
            continue
        s = e.summary[slice_name]
        lab = e.label + (" (baseline)" if data.baseline is e else "")
        cells = []
        for m in metrics:
            ov = e.overall(m, slice_name)
            cells.append(MISSING if ov is None else mean_iv(ov.mean, ov.shown))
        rows.append([lab, str(s.n_questions), *cells])
    recorded = data.recorded_methods(metrics, slice_name)
    title = "Systems" if slice_name == "all" else "Fully covered slice"
    out = [
        "",
        f"#### {title} (mean [{100 * data.level:.0f} % {md(shown.phrase(recorded))} interval]; clustering "
        f"{md(cl.get('mode') or '?')}, {md(cl.get('n_clusters'))} clusters, {df_txt})",
        "",
        table(["system", "n", *metrics], rows),
    ]
    marks = legend(
        ov.shown
        for e in data.entries
        if slice_name in e.summary
        for m in metrics
        if (ov := e.overall(m, slice_name)) is not None
    )
    out += ["", f"_{md(marks)}_"] if marks else []
    notes = evidence_notes(  # the estimand once per output: under the first table ("all") only
        shown.by_class(recorded), recorded, design=shown.design, source=shown.source, estimand=slice_name == "all"
    )
    out += [f"_{md(note)}_" for note in notes]
    if isinstance(df, (int, float)) and df < 4 and slice_name == "all":
        out += ["", f"> **Warning:** df {df:.1f} &lt; 4: the intervals are unreliable (too few clusters)."]
    return out


def _paired(data: ReportData) -> list[str]:
    if not data.paired:
        return ["", "#### Paired differences", "", md(data.paired_note)]
    base = data.baseline.label if data.baseline else "?"

    def row(r) -> list[str]:
        verdict = Markup(f"**{r.decision}**") if r.metric == data.gate_metric else r.decision.lower()
        return [
            r.label,
            r.metric,
            f"{r.diff:+.3f}",
            fmt_iv(r.interval or (r.lower, r.upper)),
            num(r.lower_one_sided, "+.3f"),
            num(r.p, ".3g"),
            num(r.p_holm, ".3g"),
            wtl(r.questions),
            verdict,
        ]

    used = sorted({short_label(str((r.interval or {}).get("method", ""))) for r in data.paired} - {""})
    head = [
        "candidate",
        "metric",
        "diff",
        f"{100 * data.level:.0f} % {'/'.join(used) or 'paired'} CI",
        f"one-sided {100 * (1 - data.alpha):.0f} % lower",
        "p",
        "p Holm",
        "W/T/L",
        f"gate (margin {data.margin:g})",
    ]
    align = ["l", "l", "r", "r", "r", "r", "r", "r", "l"]
    main = [row(r) for r in data.paired if r.metric == data.gate_metric]
    other = [row(r) for r in data.paired if r.metric != data.gate_metric]
    out = [
        "",
        f"#### Paired differences against {md(base)} (candidate - baseline; gate: {md(data.gate_metric)}, "
        f"margin {data.margin:g}, one-sided alpha {data.alpha:g})",
    ]
    if main:
        out += ["", table(head, main, align)]
    if other:
        out += ["", "<details><summary>Other metrics</summary>", "", table(head, other, align), "", "</details>"]
    return out


def _categories(data: ReportData) -> list[str]:
    head = ["system"]
    for c in data.categories:
        inf = data.category_info.get(c, {})
        head.append(f"{spaced(c)} (n={inf.get('n', 0)}, {inf.get('n_clusters', 0)} cl.)")
    rows = []
    for lab in data.labels:
        row = [lab]
        for c in data.categories:
            v = data.category_values.get((lab, c, "mrr"))
            row.append(MISSING if v is None else mean_iv(v.mean, v.interval_dict()))
        rows.append(row)
    label, source = category_interval_label(v for (_, _, m), v in data.category_values.items() if m == "mrr")
    how = f"{label} interval where the category has >= 2 clusters" + (f"; {source}" if source else "")
    return ["", f"#### MRR per category ({how})", "", table(head, rows)]


def _depth(data: ReportData) -> list[str]:
    metrics = data.metrics_present([f"{f}@{k}" for f in ("all_hop", "evidence_recall") for k in data.ks()])
    if not metrics:
        return []
    rows = [[e.label, *[fmt3(e.overall(m).mean) for m in metrics]] for e in data.entries]
    (_dd, _ddepth), (cd, cdepth) = list(rank_lists(data).values())
    rrows = []
    for lab in data.labels:
        s = rank_summary(cd.get(lab, []))
        if s.get("n"):
            rrows.append(
                [
                    lab,
                    str(s["n"]),
                    str(s["median"] or MISSING),
                    f"{100 * s['top1']:.0f} %",
                    f"{100 * s['top10']:.0f} %",
                    f"{100 * s['top20']:.0f} %",
                    f"{100 * s['missing']:.0f} %",
                ]
            )
    out = ["", "#### All-hop and evidence recall by depth (means)", "", table(["system", *metrics], rows)]
    if rrows:
        head = ["system", "gold chunks", "median rank (found)", "rank 1", "top 10", "top 20", f"not in top {cdepth}"]
        out += ["", "#### Gold evidence chunk ranks", "", table(head, rrows)]
    return out


def known_item_table(summary: dict) -> str:
    """A known-item study's per-system table (from its ``summary.json``): queries, documents, micro and macro
    hit@1, shares of documents at 0 and at 1, ICC, DEFF."""
    rows = []
    for name, s in summary.get("systems", {}).items():
        pdoc = s.get("per_document", {})
        dg = s.get("diagnostics", {})
        rows.append(
            [
                name,
                str(s.get("queries", MISSING)),
                str(s.get("documents", MISSING)),
                pct(s.get("micro_hit1")),
                pct(s.get("macro_hit1")),
                pct(pdoc.get("share_at_zero")),
                pct(pdoc.get("share_at_one")),
                num(dg.get("icc"), ".3f"),
                num(dg.get("deff"), ".1f"),
            ]
        )
    head = ["system", "queries", "documents", "micro hit@1", "macro hit@1", "docs at 0", "docs at 1", "ICC", "DEFF"]
    return table(head, rows)


def _known_item(data: ReportData) -> list[str]:
    ki = data.known_item
    if not ki:
        return []
    return ["", f"#### Known-item study ({md(ki['path'])})", "", known_item_table(ki["summary"])]


def _coverage(data: ReportData) -> list[str]:
    if not data.coverage:
        return []
    cov = data.coverage["data"]
    labels = coverage_labels()
    cser, _w, srs = coverage_series(cov)
    panel = cser.get("without FPC") or {}
    ks = [d["K"] for d in srs]
    rows = []
    for m, pts in panel.items():
        by_k = {k: (c, e) for k, c, e in pts}
        rows.append(
            [labels.get(m, m)]
            + [f"{100 * by_k[k][0]:.1f} ± {100 * by_k[k][1]:.1f}" if k in by_k else MISSING for k in ks]
        )
    cfg = cov.get("config", {})
    level = float(cfg.get("level", 0.95))
    return [
        "",
        f"#### Interval coverage on this corpus (nominal {100 * level:g} %, R = {md(cfg.get('reps'))}; "
        f"{md(data.coverage['path'])})",
        "",
        table(["method (no FPC)", *[f"K={k}" for k in ks]], rows),
    ]


def _questions(data: ReportData, limit: int | None = None) -> list[str]:
    qids = data.qids()
    shown = qids if limit is None else qids[:limit]
    rows = []
    ev = data.evidence_metric()
    for qid in shown:
        rs = [data.row(lab, qid) for lab in data.labels]
        cat = next((r.category for r in rs if r), "")
        cells = []
        for r in rs:
            if not r:
                cells.append(MISSING)
                continue
            m = r.metrics
            cells.append(f"{num(m.get('mrr'), '.2f')} / {num(m.get(ev), '.2f')}")
        rows.append([qid, spaced(cat), *cells])
    out = [
        "",
        f"<details><summary>Per question: MRR / {ev.replace('_', ' ')}</summary>",
        "",
        table(["question", "category", *data.labels], rows, ["l", "l"] + ["r"] * len(data.labels)),
    ]
    if limit is not None and limit < len(qids):
        out += ["", f"({len(qids) - limit} more questions not shown: the comment would exceed {MAX_CHARS} characters)"]
    out += ["", "</details>"]
    return out


def render_markdown(data: ReportData, *, max_chars: int = MAX_CHARS) -> str:
    """The Markdown summary (GitHub-flavoured), at most ``max_chars`` characters.

    Returns:
        The text. The per-question table is shortened, then dropped, when the whole would exceed ``max_chars``;
        if even the rest is longer, it is cut with a closing note.
    """
    head = _header(data) + _systems(data)
    body = _paired(data) + _categories(data) + _depth(data)
    if data.covered_entries():
        body += _systems(data, "covered")
    body += _known_item(data) + _coverage(data)
    tail = ["", "_Generated by `harness report` from run records only; open the HTML report for figures._", ""]
    base = "\n".join(head + body)
    n = len(data.qids())
    for limit in (None, *sorted({n // 2, n // 4, 10}, reverse=True), 0):
        q = _questions(data, limit) if limit != 0 else []
        text = base + "\n".join([""] + q + tail)
        if len(text) <= max_chars:
            return text
    note = "\n\n(truncated: the summary exceeds the comment size limit)\n"
    cut = base[: max_chars - len(note)]
    return cut[: cut.rfind("\n")] + note if "\n" in cut else cut + note
