"""A Markdown summary of run records for a pull-request comment (GitHub-flavoured tables, under 60,000 characters).

Renders the same :class:`harness.report.html.ReportData` as the HTML report, without figures: provenance, the
systems table with 95 % CR2 intervals and the clustering, paired differences against the baseline with the gate
margin, MRR per category, all-hop / evidence recall by depth, the fully covered slice, known-item and coverage
summaries, and a collapsed per-question table. If the text would exceed :data:`MAX_CHARS` the per-question table is
shortened (then dropped) and a note says so.
"""

from __future__ import annotations

from harness.report.html import (
    TABLE_METRICS,
    ReportData,
    _interval,
    _rank_summary,
    coverage_series,
    fmt3,
    fmt_iv,
    fmtx,
    provenance,
    rank_lists,
)

#: GitHub's limit for a comment body is 65,536 characters; stay well below it.
MAX_CHARS = 60_000


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(head: list[str], rows: list[list[str]], align: list[str] | None = None) -> str:
    align = align or ["l"] + ["r"] * (len(head) - 1)
    sep = ["---:" if a == "r" else ":---" for a in align]
    lines = ["| " + " | ".join(_cell(h) for h in head) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _mean_iv(ov: dict | None) -> str:
    if not ov:
        return "-"
    iv = _interval(ov)
    return f"{fmt3(ov['mean'])} {fmt_iv(iv)}".strip()


def _header(data: ReportData) -> list[str]:
    p = provenance(data.runs[0])
    gs = data.runs[0].manifest.get("goldset") or {}
    out = [
        f"### Retrieval report: {gs.get('name', '?')} v{gs.get('version', '?')}",
        "",
        f"**Gold set** {p['gold set']} · **corpus** {p['corpus']} · **chunker** {p['chunker']} · "
        f"**model** {p['model']} · **code** {p['code']} · **date** {p['date']}",
    ]
    if len(data.runs) > 1:
        out += ["", "Runs: " + "; ".join(f"`{provenance(r)['run']}`" for r in data.runs)]
    for n in data.notes:
        out += ["", f"> **Warning:** {n}"]
    return out


def _systems(data: ReportData, slice_name: str = "all") -> list[str]:
    metrics = data.metrics_present(TABLE_METRICS, slice_name)
    cl = data.clustering()
    df = cl.get("df")
    df_txt = f"Satterthwaite df {df:.1f}" if isinstance(df, (int, float)) else "df not recorded"
    rows = []
    for e in data.entries:
        if slice_name not in e.summary:
            continue
        s = e.summary[slice_name]
        lab = e.label + (" (baseline)" if data.baseline is e else "")
        rows.append([lab, str(s.get("n_questions", "")), *[_mean_iv(e.overall(m, slice_name)) for m in metrics]])
    title = "Systems" if slice_name == "all" else "Fully covered slice"
    out = [
        "",
        f"#### {title} (mean [{100 * data.level:.0f} % CR2 interval]; clustering {cl.get('mode', '?')}, "
        f"{cl.get('n_clusters', '?')} clusters, {df_txt})",
        "",
        _table(["system", "n", *metrics], rows),
    ]
    if isinstance(df, (int, float)) and df < 4 and slice_name == "all":
        out += ["", f"> **Warning:** df {df:.1f} < 4: the intervals are unreliable (too few clusters)."]
    return out


def _paired(data: ReportData) -> list[str]:
    if not data.paired:
        return ["", "#### Paired differences", "", data.paired_note]
    base = data.baseline.label if data.baseline else "?"

    def row(r: dict) -> list[str]:
        q = r["questions"]
        verdict = "-"
        if r["noninferior"] is not None:
            ok = r["noninferior"]
            verdict = ("**PASS**" if ok else "**FAIL**") if r["metric"] == data.gate_metric else ("yes" if ok else "no")
        return [
            r["label"],
            r["metric"],
            f"{r['diff']:+.3f}",
            fmt_iv((r["lower"], r["upper"])),
            fmtx(r["lower_one_sided"], "+.3f"),
            fmtx(r["p"], ".3g"),
            fmtx(r["p_holm"], ".3g"),
            f"{q['wins']}/{q['ties']}/{q['losses']}",
            verdict,
        ]

    head = [
        "candidate",
        "metric",
        "diff",
        f"{100 * data.level:.0f} % CI",
        f"one-sided {100 * (1 - data.alpha):.0f} % lower",
        "p",
        "p Holm",
        "W/T/L",
        f"lower > -{data.margin:g}",
    ]
    align = ["l", "l", "r", "r", "r", "r", "r", "r", "l"]
    main = [row(r) for r in data.paired if r["metric"] == data.gate_metric]
    other = [row(r) for r in data.paired if r["metric"] != data.gate_metric]
    out = [
        "",
        f"#### Paired differences against `{base}` (candidate - baseline; gate: {data.gate_metric}, "
        f"margin {data.margin:g}, one-sided alpha {data.alpha:g})",
    ]
    if main:
        out += ["", _table(head, main, align)]
    if other:
        out += ["", "<details><summary>Other metrics</summary>", "", _table(head, other, align), "", "</details>"]
    return out


def _categories(data: ReportData) -> list[str]:
    head = ["system"]
    for c in data.categories:
        inf = data.category_info.get(c, {})
        head.append(f"{c.replace('_', ' ')} (n={inf.get('n', 0)}, {inf.get('n_clusters', 0)} cl.)")
    rows = []
    for lab in data.labels:
        row = [lab]
        for c in data.categories:
            v = data.category_values.get((lab, c, "mrr"))
            row.append("-" if v is None else f"{fmt3(v[0])} {fmt_iv(v[1])}".strip())
        rows.append(row)
    return [
        "",
        "#### MRR per category (CR2 interval where the category has >= 2 clusters)",
        "",
        _table(head, rows),
    ]


def _depth(data: ReportData) -> list[str]:
    ks = data.runs[0].manifest.get("ks") or [1, 5, 10, 20]
    metrics = [f"{f}@{k}" for f in ("all_hop", "evidence_recall") for k in ks]
    metrics = data.metrics_present(metrics)
    if not metrics:
        return []
    rows = [[e.label, *[fmt3((e.overall(m) or {}).get("mean")) for m in metrics]] for e in data.entries]
    ranks = rank_lists(data)
    (cd, cdepth) = list(ranks.values())[1]
    rrows = []
    for lab in data.labels:
        s = _rank_summary(cd.get(lab, []))
        if s.get("n"):
            rrows.append(
                [
                    lab,
                    str(s["n"]),
                    str(s["median"] or "-"),
                    f"{100 * s['top1']:.0f} %",
                    f"{100 * s['top10']:.0f} %",
                    f"{100 * s['top20']:.0f} %",
                    f"{100 * s['missing']:.0f} %",
                ]
            )
    out = ["", "#### All-hop and evidence recall by depth (means)", "", _table(["system", *metrics], rows)]
    if rrows:
        out += [
            "",
            "#### Gold evidence chunk ranks",
            "",
            _table(
                ["system", "gold chunks", "median rank (found)", "rank 1", "top 10", "top 20", f"not in top {cdepth}"],
                rrows,
            ),
        ]
    return out


def _known_item(data: ReportData) -> list[str]:
    ki = data.known_item
    if not ki:
        return []
    rows = []
    for name, s in ki["summary"].get("systems", {}).items():
        pdoc = s.get("per_document", {})
        dg = s.get("diagnostics", {})
        rows.append(
            [
                name,
                str(s.get("queries", "-")),
                str(s.get("documents", "-")),
                fmtx(None if s.get("micro_hit1") is None else 100 * s["micro_hit1"], ".1f"),
                fmtx(None if s.get("macro_hit1") is None else 100 * s["macro_hit1"], ".1f"),
                fmtx(None if pdoc.get("share_at_zero") is None else 100 * pdoc["share_at_zero"], ".1f"),
                fmtx(None if pdoc.get("share_at_one") is None else 100 * pdoc["share_at_one"], ".1f"),
                fmtx(dg.get("icc"), ".3f"),
                fmtx(dg.get("deff"), ".1f"),
            ]
        )
    return [
        "",
        f"#### Known-item study (`{ki['path']}`)",
        "",
        _table(
            [
                "system",
                "queries",
                "documents",
                "micro hit@1 %",
                "macro hit@1 %",
                "docs at 0 %",
                "docs at 1 %",
                "ICC",
                "DEFF",
            ],
            rows,
        ),
    ]


def _coverage(data: ReportData) -> list[str]:
    if not data.coverage:
        return []
    from harness.report.html import _coverage_labels

    cov = data.coverage["data"]
    labels = _coverage_labels()
    cser, _w, srs = coverage_series(cov)
    panel = cser.get("without FPC") or {}
    ks = [d["K"] for d in srs]
    rows = []
    for m, pts in panel.items():
        by_k = {k: (c, e) for k, c, e in pts}
        rows.append(
            [labels.get(m, m)] + [f"{100 * by_k[k][0]:.1f} ± {100 * by_k[k][1]:.1f}" if k in by_k else "-" for k in ks]
        )
    level = float(cov.get("config", {}).get("level", 0.95))
    return [
        "",
        f"#### Interval coverage on this corpus (nominal {100 * level:g} %, R = {cov.get('config', {}).get('reps')}; "
        f"`{data.coverage['path']}`)",
        "",
        _table(["method (no FPC)", *[f"K={k}" for k in ks]], rows),
    ]


def _questions(data: ReportData, limit: int | None = None) -> list[str]:
    qids = data.qids()
    shown = qids if limit is None else qids[:limit]
    rows = []
    for qid in shown:
        rs = [data.row(lab, qid) for lab in data.labels]
        cat = next((r["category"] for r in rs if r), "")
        cells = []
        for r in rs:
            if not r:
                cells.append("-")
                continue
            m = r["metrics"]
            cells.append(f"{fmtx(m.get('mrr'), '.2f')} / {fmtx(m.get('evidence_recall@10'), '.2f')}")
        rows.append([qid, cat.replace("_", " "), *cells])
    out = [
        "",
        "<details><summary>Per question: MRR / evidence recall@10</summary>",
        "",
        _table(["question", "category", *data.labels], rows, ["l", "l"] + ["r"] * len(data.labels)),
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
    return base[: max_chars - len(note)] + note
