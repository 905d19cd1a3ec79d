"""The HTML report's sections about run records: systems, categories, paired differences, depth, gold ranks, the
fully covered slice. Each function takes the :class:`~harness.report.model.ReportData` and returns one
``<section>``; every string from an input is escaped (:func:`harness.report.format.esc`), figures are inline SVG
(:mod:`harness.report.plots`)."""

from __future__ import annotations

from dataclasses import asdict

from harness.evaluation.compare import PairedRow
from harness.metrics import outcome_of
from harness.report.format import LEGEND, MISSING, bounds, esc, fmt3, fmt_iv, legend, num, spaced, wtl
from harness.report.model import ReportData, rank_lists, rank_summary
from harness.report.plots import category_bars, depth_curves, figure_svg, forest, rank_ecdf, slice_compare
from harness.report.plots_many import BARS_UP_TO, category_heatmap, system_intervals
from harness.stats.methods import display_order, evidence_notes
from harness.stats.shown import ShownIntervals, category_interval_label, short_label

#: Stable element ids of the figures (the ``<figure>`` element; its ``<svg>`` has the id plus ``-svg``).
FIGURE_IDS: dict[str, str] = {
    "systems": "fig-system-intervals",
    "category": "fig-category-mrr",
    "forest": "fig-forest",
    "depth": "fig-depth-curves",
    "ranks": "fig-evidence-ranks",
    "covered": "fig-covered-slice",
    "known_item": "fig-known-item-hit-rate",
    "coverage": "fig-coverage-vs-k",
    "width": "fig-width-vs-k",
}

#: Interval methods shown in the "every method" table, in order (the registry's display order).
INTERVAL_METHODS = display_order()

#: The depth-curve families (``<family>@k``) and their axis labels.
DEPTH_FAMILIES = {
    "all_hop": "all-hop@k: questions with every gold document in the top k (0-1)",
    "evidence_recall": "evidence recall@k: gold chunks in the top k (0-1)",
}


def figure(fig_id: str, svg: str, caption: str) -> str:
    """``<figure>`` with an inline SVG and its caption (``caption`` is HTML: escape its inputs before)."""
    return f'<figure id="{esc(fig_id)}">{svg}<figcaption>{caption}</figcaption></figure>'


def iv_html(iv, spec: str = ".3f") -> str:
    """An interval as ``<span class='iv'>[0.301, 1.000ᶜ]</span>``: the text of
    :func:`harness.report.format.fmt_iv` (clipped bounds marked, infinite bounds as ``-inf``/``+inf``, a zero-width
    interval as ``[degenerate]``), the marks as classes (``clipped``, ``infinite``, ``degenerate``) and their meaning
    as the title; ``""`` for ``None``. ``iv``: anything :func:`harness.report.format.bounds` takes."""
    b = bounds(iv)
    if b is None:
        return ""
    marks = [k for k in LEGEND if k in b.marks()]
    if not marks:
        return f"<span class='iv'>{esc(fmt_iv(b, spec))}</span>"
    title = "; ".join(LEGEND[k] for k in marks)
    return f"<span class='iv {' '.join(marks)}' title='{esc(title)}'>{esc(fmt_iv(b, spec))}</span>"


def legend_html(ivs) -> str:
    """``<p class='note legend'>`` with the meaning of the interval marks that occur among ``ivs``, or ``""``."""
    text = legend(ivs)
    return f"<p class='note legend'>{esc(text)}</p>" if text else ""


def mean_cell(ov, metric: str = "", shown: ShownIntervals | None = None) -> str:
    """A table cell: the mean over the interval ``shown`` picks for ``metric`` (:class:`harness.stats.shown.
    ShownIntervals`; ``None``: CR2), marked (``-`` when the metric is not available)."""
    if ov is None:
        return f"<td>{MISSING}</td>"
    iv = ov.intervals.get("cr2") if shown is None else ov.shown
    return f"<td>{fmt3(ov.mean)}{iv_html(iv)}</td>"


def _shown_ivs(shown: ShownIntervals, pairs) -> list:
    """The shown interval records of ``(metric, summary entry)`` pairs (entries that are ``None`` skipped)."""
    return [ov.shown for _m, ov in pairs if ov is not None]


def _bounds(shown: ShownIntervals, metric: str, ov) -> tuple[float, float] | None:
    iv = ov.shown
    return None if iv is None else iv.bounds


def whisker_note(ivs) -> str:
    """A caption sentence when a figure's intervals hold bounds clipped to [0, 1], infinite or zero-width ones (the
    figure cannot show the marks; its table does)."""
    marks: set[str] = set()
    for iv in ivs:
        b = bounds(iv)
        marks |= b.marks() if b is not None else set()
    parts = {"clipped": "clipped at 0 or 1", "infinite": "unbounded (drawn to 0 or 1)", "degenerate": "of zero width"}
    said = [parts[k] for k in parts if k in marks]
    return f" Some intervals are {', '.join(said)}: the table marks them." if said else ""


def system_options(cfg: dict | None) -> str:
    """A short summary of one system's recorded configuration (``system_configs[system]`` of its run): its model
    (``model_id``), its parameters (``k1=1.5, b=0.75``; fusion weights ``0.25/0.75``) and its inputs; ``""`` when
    nothing is recorded."""
    if not isinstance(cfg, dict):
        return ""
    parts = []
    emb = cfg.get("embedder")
    if isinstance(emb, dict) and (emb.get("model_id") or emb.get("model")):
        parts.append(f"model {emb.get('model_id') or emb.get('model')}")
    params = cfg.get("params")
    if isinstance(params, dict):
        for k, v in params.items():
            if isinstance(v, list):
                v = "/".join(f"{x:g}" if isinstance(x, float) else str(x) for x in v)
            elif isinstance(v, float):
                v = f"{v:g}"
            parts.append(f"{k}={v}")
    if cfg.get("input_names"):
        parts.append("of " + "+".join(str(x) for x in cfg["input_names"]))
    return "; ".join(parts)


def systems_table(data: ReportData, slice_name: str = "all") -> str:
    """The systems x metrics table of one slice (means with 95 % intervals: per outcome class the rule's default for
    the run's design, :meth:`ReportData.shown`, named in the caption)."""
    entries = [e for e in data.entries if slice_name in e.summary]
    metrics = [m for m in data.metrics_present() if entries and all(e.overall(m, slice_name) for e in entries)]
    head = "".join(f"<th>{esc(m)}</th>" for m in metrics)
    shown_iv = data.shown(slice_name)
    recorded = data.recorded_methods(metrics, slice_name)
    rows = []
    for e in entries:
        s = e.summary[slice_name]
        cells = "".join(mean_cell(e.overall(m, slice_name), m, shown_iv) for m in metrics)
        cls = " class='base'" if data.baseline is e else ""
        opts = system_options(e.run.manifest.system_configs.get(e.system))
        name = esc(e.label) + (f"<br><span class='note'>{esc(opts)}</span>" if opts else "")
        rows.append(f"<tr{cls}><td>{name}</td><td>{s.n_questions}</td><td>{s.n_clusters}</td>{cells}</tr>")
    shown = _shown_ivs(shown_iv, ((m, e.overall(m, slice_name)) for e in entries for m in metrics))
    notes = evidence_notes(  # the estimand once per output: under the first table ("all") only
        shown_iv.by_class(recorded),
        recorded,
        design=shown_iv.design,
        source=shown_iv.source,
        estimand=slice_name == "all",
    )
    return (
        f"<table class='systems' id='table-systems-{esc(slice_name)}'><caption>95 % "
        f"{esc(shown_iv.phrase(recorded))} intervals</caption><thead><tr><th class='l'>system</th>"
        f"<th>questions</th><th>clusters</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        + legend_html(shown)
        + "".join(f"<p class='note evidence'>{esc(n)}</p>" for n in notes)
    )


def _methods_table(data: ReportData, metric: str = "mrr") -> str:
    ovs = {e.label: e.overall(metric) for e in data.entries}
    methods = [m for m in INTERVAL_METHODS if any(ov is not None and ov.intervals.get(m) for ov in ovs.values())]
    if not methods:
        return ""
    head = "".join(f"<th>{esc(m)}</th>" for m in methods)
    rows = []
    for lab, ov in ovs.items():
        if ov is None:
            continue
        cells = "".join(f"<td>{iv_html(ov.intervals.get(m)) or MISSING}</td>" for m in methods)
        rows.append(f"<tr><td>{esc(lab)}</td><td>{fmt3(ov.mean)}</td>{cells}</tr>")
    marks = legend_html(ov.intervals.get(m) for ov in ovs.values() if ov is not None for m in methods)
    phrase = data.shown().phrase({metric: (outcome_of(metric), set(methods))})
    return (
        f"<details><summary>{esc(metric)} under every interval method recorded</summary><div class='body'>"
        f"<table><thead><tr><th class='l'>system</th><th>mean</th>{head}</tr></thead><tbody>{''.join(rows)}"
        f"</tbody></table>{marks}<p class='note'>The systems table shows, per outcome class, the coverage rule's "
        f"default for this run's design ({esc(phrase)} for {esc(metric)}); "
        "cluster_t is centred on the mean of cluster means (macro); iid_wald ignores clustering and is shown for "
        "contrast only.</p></div></details>"
    )


def section_systems(data: ReportData) -> str:
    """Systems table with the clustering used, and every interval method for MRR."""
    cl = data.clustering()
    df = cl.get("df")
    df_txt = f"Satterthwaite df {df:.1f}" if isinstance(df, (int, float)) else "df not recorded"
    warn = ""
    if isinstance(df, (int, float)) and df < 4:
        warn = f"<div class='warn'>df {df:.1f} &lt; 4: the intervals are unreliable (too few clusters).</div>"
    text = (
        "<p class='note'>Means over "
        + ("every question of the gold set" if data.split == "all" else f"the {esc(data.split)} split's questions")
        + " (a missing ranking scores 0); below each mean its "
        + f"{100 * data.level:.0f} % interval: per outcome class the method the coverage rule picks for this run's "
        "design (CR2 cluster-robust t of Bell &amp; McCaffrey 2002 with Satterthwaite df, on the logit scale for "
        "metrics in [0, 1], or its jackknife CR3; Hansen-Hurwitz on a PPS gold set), named under the table. "
        f"Clustering: <b>{esc(cl.get('mode') or '?')}</b> ({esc(cl.get('n_clusters'))} clusters of questions "
        f"sharing gold documents; {df_txt}).</p>"
    )
    tables = systems_table(data, "all") + _methods_table(data)
    return f"<section id='systems'><h2>Systems</h2>{text}{warn}{tables}{_system_figure(data)}</section>"


#: The metrics of the per-system interval plot (those every entry has).
SYSTEM_PLOT_METRICS = ("mrr", "recall@10", "evidence_recall@10")


def _system_figure(data: ReportData) -> str:
    """Each system's own mean and shown interval per metric (:func:`harness.report.plots_many.system_intervals`)."""
    metrics = data.metrics_present(SYSTEM_PLOT_METRICS)
    if not metrics:
        return ""
    shown = data.shown()
    phrase = shown.phrase(data.recorded_methods(metrics))
    values = {}
    for e in data.entries:
        for m in metrics:
            ov = e.overall(m)
            values[(e.label, m)] = (ov.mean, _bounds(shown, m, ov))
    base = data.baseline.label if data.baseline is not None else None
    fig = system_intervals(data.labels, metrics, values, level=data.level, interval_label=phrase, baseline=base)
    svg = figure_svg(fig, FIGURE_IDS["systems"], title=f"Each system's mean and {phrase} interval per metric")
    cap = (
        f"Each system's mean (dot) and {100 * data.level:.0f} % {esc(phrase)} interval (line), per metric; the "
        "baseline (open dot, dotted line) where there is one. Overlapping intervals do not show that two systems are "
        "equal: their paired differences (below) are the test."
    )
    return figure(FIGURE_IDS["systems"], svg, cap)


def section_categories(data: ReportData) -> str:
    """MRR per category with whiskers of the shown method for the categories' designs (figure and table;
    :func:`harness.evaluation.compare.category_intervals`)."""
    notes = {}
    no_iv = []
    for c in data.categories:
        inf = data.category_info.get(c, {})
        ncl = inf.get("n_clusters", 0)
        notes[c] = f"n={inf.get('n', 0)}, {ncl} cluster{'s' if ncl != 1 else ''}" + ("" if ncl >= 2 else ": no CI")
        if ncl < 2:
            no_iv.append(c)
    labels = set(data.labels)
    mrr = {(lab, c): v for (lab, c, m), v in data.category_values.items() if m == "mrr" and lab in labels}
    vals = {k: (v.mean, v.interval) for k, v in mrr.items()}
    shown = {k: v.interval_dict() for k, v in mrr.items()}
    many = len(data.labels) > BARS_UP_TO
    draw = category_heatmap if many else category_bars
    label, source = category_interval_label(mrr.values())
    fig = draw(data.categories, notes, data.labels, vals, metric_label="MRR", level=data.level, interval_label=label)
    svg = figure_svg(fig, FIGURE_IDS["category"], title=f"MRR per question category with {label} intervals")
    cap = (
        (
            f"MRR per category and system as a heat table ({len(data.labels)} systems: more than {BARS_UP_TO}, too "
            "many for grouped bars); each cell prints the mean and its interval. "
            if many
            else ""
        )
        + f"MRR per category and system. Whiskers: {100 * data.level:.0f} % {esc(label)} intervals computed on the "
        "category's questions with the clusters recorded in the run"
        + (f" ({esc(source)}). " if source else ". ")
        + (
            f"No whisker for {esc(', '.join(spaced(c) for c in no_iv))}: a single cluster gives no interval. "
            if no_iv
            else ""
        )
        + "Categories hold few questions and fewer clusters, so these intervals are wide and their coverage is not "
        "measured." + whisker_note(shown.values())
    )
    head = "".join(f"<th>{esc(spaced(c))}<br><span class='note'>{esc(notes[c])}</span></th>" for c in data.categories)
    rows = []
    for lab in data.labels:
        cells = []
        for c in data.categories:
            v = vals.get((lab, c))
            cells.append(f"<td>{MISSING}</td>" if v is None else f"<td>{fmt3(v[0])}{iv_html(shown[(lab, c)])}</td>")
        rows.append(f"<tr><td>{esc(lab)}</td>{''.join(cells)}</tr>")
    table = (
        f"<details><summary>table</summary><div class='body'><table><thead><tr><th class='l'>system</th>{head}</tr>"
        f"</thead><tbody>{''.join(rows)}</tbody></table>{legend_html(shown.values())}</div></details>"
    )
    return (
        f"<section id='categories'><h2>MRR per category</h2>{figure(FIGURE_IDS['category'], svg, cap)}{table}</section>"
    )


def _paired_row(data: ReportData, r: PairedRow) -> str:
    if r.metric == data.gate_metric:
        cls = {"PASS": "pass", "FAIL": "fail"}.get(r.decision, "inconclusive")
        verdict = f"<span class='{cls}' title='{esc(r.reason)}'>{esc(r.decision)}</span>"
    else:
        verdict = f"<span title='{esc(r.reason)}'>{esc(r.decision.lower())}</span>"
    return (
        f"<tr><td>{esc(r.label)}</td><td class='l'>{esc(r.metric)}</td><td>{fmt3(r.mean_a)}</td>"
        f"<td>{fmt3(r.mean_b)}</td><td>{r.diff:+.3f}</td>"
        f"<td>{iv_html(r.interval or (r.lower, r.upper), '+.3f')}</td><td>{num(r.lower_one_sided, '+.3f')}</td>"
        f"<td>{num(r.df, '.1f')}</td><td>{num(r.p, '.3g')}</td><td>{num(r.p_holm, '.3g')}</td>"
        f"<td>{wtl(r.questions)}</td><td>{wtl(r.clusters)}</td><td>{verdict}</td></tr>"
    )


def section_paired(data: ReportData) -> str:
    """Forest plot of paired differences against the baseline, with the gate's bound and margin, and the table."""
    if not data.paired:
        return f"<section id='paired'><h2>Paired differences</h2><p class='note'>{esc(data.paired_note)}</p></section>"
    metrics = list(dict.fromkeys(r.metric for r in data.paired))
    used = {str((r.interval or {}).get("method", "")) for r in data.paired} - {""}
    how = ", ".join(sorted(short_label(m) for m in used)) or "paired"
    fig = forest(
        [asdict(r) for r in data.paired],
        metrics,
        margin=data.margin,
        level=data.level,
        interval_label=how,
        alpha=data.alpha,
    )
    svg = figure_svg(fig, FIGURE_IDS["forest"], title="Forest plot of paired differences against the baseline")
    base = data.baseline.label if data.baseline else "?"
    cap = (
        f"Paired differences candidate - <b>{esc(base)}</b> (same questions, clusters of the baseline run). "
        f"Squares: mean difference; lines: two-sided {100 * data.level:.0f} % {esc(how)} interval; vertical ticks: the "
        f"one-sided {100 * (1 - data.alpha):.0f} % lower bound the gate compares with -margin; dashed line: "
        f"-margin = -{data.margin:g} (non-inferiority gate on {esc(data.gate_metric)})."
    )
    head = (
        "<thead><tr><th class='l'>candidate</th><th class='l'>metric</th>"
        f"<th>{esc(base)}</th><th>candidate</th><th>diff</th><th>{100 * data.level:.0f} % CI</th>"
        f"<th>one-sided {100 * (1 - data.alpha):.0f} %<br>lower bound</th><th>df</th><th>p</th><th>p Holm</th>"
        "<th>questions<br>W/T/L</th><th>clusters<br>W/T/L</th>"
        f"<th>gate verdict<br>(margin {data.margin:g})</th></tr></thead>"
    )
    gate_rows = [_paired_row(data, r) for r in data.paired if r.metric == data.gate_metric]
    other_rows = [_paired_row(data, r) for r in data.paired if r.metric != data.gate_metric]
    table = ""
    if gate_rows:
        table += f"<table id='table-paired'>{head}<tbody>{''.join(gate_rows)}</tbody></table>"
    table += (
        "<p class='note'>p: cluster-level paired sign-flip randomisation test; Holm across the candidates for each "
        "metric. W/T/L: the candidate's wins, ties and losses against the baseline (questions; cluster means). "
        f"Gate verdict: what <code>harness gate --metric {esc(data.gate_metric)} --margin {data.margin:g}</code> "
        f"says: PASS when the one-sided lower bound exceeds -{data.margin:g}, FAIL when the upper bound of the same "
        f"{100 * (1 - 2 * data.alpha):g} % interval lies below it, INCONCLUSIVE otherwise (the reason is the cell's "
        "title).</p>" + legend_html(r.interval or (r.lower, r.upper) for r in data.paired)
    )
    if other_rows:
        table += (
            "<details><summary>other metrics</summary><div class='body'><table id='table-paired-other'>"
            f"{head}<tbody>{''.join(other_rows)}</tbody></table></div></details>"
        )
    return (
        "<section id='paired'><h2>Paired differences against the baseline</h2>"
        + figure(FIGURE_IDS["forest"], svg, cap)
        + table
        + "</section>"
    )


def depth_panels(data: ReportData) -> dict[str, dict[str, list]]:
    """``{family: {label: [(k, mean, (lower, upper) or None)]}}`` of the depth curves (families with data only)."""
    panels: dict[str, dict[str, list]] = {}
    shown = data.shown()
    for fam in DEPTH_FAMILIES:
        per_sys = {}
        for e in data.entries:
            pts = []
            for k in data.ks():
                ov = e.overall(f"{fam}@{k}")
                if ov:
                    pts.append((int(k), float(ov.mean), _bounds(shown, f"{fam}@{k}", ov)))
            if pts:
                per_sys[e.label] = pts
        if per_sys:
            panels[fam] = per_sys
    return panels


def section_depth(data: ReportData) -> str:
    """all-hop@k and evidence recall@k against k (figure and table)."""
    panels = depth_panels(data)
    if not panels:
        return (
            "<section id='depth'><h2>Depth</h2>"
            "<p class='note'>no all_hop@k / evidence_recall@k in the runs</p></section>"
        )
    ks = data.ks()
    depth_ids = [f"{f}@{k}" for f in panels for k in ks]
    fig = depth_curves(panels, data.labels, ylabels=DEPTH_FAMILIES, level=data.level)
    svg = figure_svg(fig, FIGURE_IDS["depth"], title="all-hop@k and evidence recall@k")
    cap = (
        f"Left: share of questions whose every gold document is in the top k documents. Right: share of gold evidence "
        f"chunks in the top k chunks, averaged over questions. k = {', '.join(str(k) for k in ks)}; vertical lines: "
        f"{100 * data.level:.0f} % {esc(data.shown().phrase(data.recorded_methods(depth_ids)))} intervals (points "
        "dodged sideways)."
    )
    shown_iv = data.shown()
    pairs = [(f"{f}@{k}", e.overall(f"{f}@{k}")) for e in data.entries for f in panels for k in ks]
    shown = _shown_ivs(shown_iv, pairs)
    cap += whisker_note(shown)
    head = "".join(f"<th>{esc(f)}@{k}</th>" for f in panels for k in ks)
    rows = []
    for e in data.entries:
        cells = "".join(mean_cell(e.overall(f"{f}@{k}"), f"{f}@{k}", shown_iv) for f in panels for k in ks)
        rows.append(f"<tr><td>{esc(e.label)}</td>{cells}</tr>")
    table = (
        f"<details><summary>table</summary><div class='body'><table><thead><tr><th class='l'>system</th>{head}</tr>"
        f"</thead><tbody>{''.join(rows)}</tbody></table>{legend_html(shown)}</div></details>"
    )
    return (
        "<section id='depth'><h2>All-hop and evidence recall by depth</h2>"
        + figure(FIGURE_IDS["depth"], svg, cap)
        + table
        + "</section>"
    )


def _share(x: float) -> str:
    return f"{100 * x:.0f} %"


def section_ranks(data: ReportData) -> str:
    """Cumulative distribution of gold document and evidence-chunk ranks (figure and table)."""
    panels = rank_lists(data)
    fig = rank_ecdf(panels, data.labels)
    svg = figure_svg(fig, FIGURE_IDS["ranks"], title="Distribution of gold document and evidence ranks")
    (dd, ddepth), (cd, cdepth) = list(panels.values())
    cap = (
        "How deep the gold items sit: cumulative share of gold documents (left) and gold evidence chunks (right) found "
        f"at rank r or better, pooled over questions. A line ending below 100 % at the recorded depth ({ddepth} "
        f"documents, {cdepth} chunks) leaves the rest unretrieved within that depth."
    )
    rows = []
    for lab in data.labels:
        s = rank_summary(cd.get(lab, []))
        t = rank_summary(dd.get(lab, []))
        if not s.get("n"):
            continue
        doc_cells = (
            f"<td>{t['n']}</td><td>{_share(t['top1'])}</td><td>{_share(t['top10'])}</td><td>{_share(t['missing'])}</td>"
            if t.get("n")
            else "<td>0</td>" + f"<td>{MISSING}</td>" * 3
        )
        rows.append(
            f"<tr><td>{esc(lab)}</td>{doc_cells}<td>{s['n']}</td><td>{s['median'] if s['median'] else MISSING}</td>"
            f"<td>{_share(s['top1'])}</td><td>{_share(s['top10'])}</td><td>{_share(s['top20'])}</td>"
            f"<td>{_share(s['missing'])}</td></tr>"
        )
    table = (
        "<table id='table-ranks'><thead><tr><th class='l' rowspan='2'>system</th><th colspan='4'>gold documents</th>"
        "<th colspan='6'>gold evidence chunks</th></tr><tr><th>n</th><th>rank 1</th><th>top 10</th>"
        f"<th>not in top {ddepth}</th><th>n</th><th>median rank (found)</th><th>rank 1</th><th>top 10</th>"
        f"<th>top 20</th><th>not in top {cdepth}</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
    return (
        "<section id='ranks'><h2>Where the gold evidence sits</h2>"
        + figure(FIGURE_IDS["ranks"], svg, cap)
        + table
        + "</section>"
    )


def section_covered(data: ReportData) -> str:
    """All questions against the questions whose gold documents the (partial) vector index fully covers."""
    ents = data.covered_entries()
    run_cov = next((r.manifest.coverage for r in data.runs if r.manifest.coverage is not None), None)
    if not ents:
        why = (
            "the vector index covers the whole corpus"
            if run_cov
            else "no vector system in the runs (or the index is complete)"
        )
        return (
            "<section id='covered'><h2>Fully covered slice</h2>"
            f"<p class='note'>No fully covered slice: {esc(why)}; every question is scored on the full index.</p>"
            "</section>"
        )
    metrics = [m for m in ("mrr", "recall@10", "evidence_recall@10") if all(e.overall(m, "covered") for e in ents)]
    vals = {}
    shown = {sl: data.shown(sl) for sl in ("all", "covered")}
    for e in ents:
        for sl in ("all", "covered"):
            for m in metrics:
                ov = e.overall(m, sl)
                if ov:
                    vals[(sl, e.label, m)] = (float(ov.mean), _bounds(shown[sl], m, ov))
    phrases = {sl: shown[sl].phrase(data.recorded_methods(metrics, sl)) for sl in ("all", "covered")}
    phrase = phrases["all"]
    if phrases["covered"] != phrase:
        phrase = f"{phrase} (all), {phrases['covered']} (covered)"
    n_cov = ents[0].summary["covered"].n_questions
    n_all = ents[0].summary["all"].n_questions if "all" in ents[0].summary else "?"
    fig = slice_compare(
        metrics,
        [e.label for e in ents],
        vals,
        slices=(("all", f"all questions (n={n_all})"), ("covered", f"fully covered questions (n={n_cov})")),
        level=data.level,
        interval_label=phrase,
    )
    svg = figure_svg(fig, FIGURE_IDS["covered"], title="All questions against the fully covered slice")
    cov_txt = ""
    if run_cov is not None:
        frac = run_cov.chunk_fraction
        cov_txt = (
            f"The vector index holds {run_cov.n_indexed_chunks} of {run_cov.n_total_chunks} chunks ({100 * frac:.1f} %)"
            if frac is not None
            else "The vector index is partial"
        ) + (
            f"; {num(run_cov.gold_documents_fully_indexed, 'd')} of {num(run_cov.gold_documents, 'd')} gold "
            "documents are fully indexed."
        )
    cap = (
        "Each system on all questions (filled circles, solid lines) and on the questions whose gold documents are all "
        f"fully indexed (open squares, dashed lines), {100 * data.level:.0f} % "
        f"{esc(phrase)} intervals. {esc(cov_txt)} Lexical "
        "systems are scored on the same slice so the comparison is like for like."
        + whisker_note(
            _shown_ivs(shown["all"], ((m, e.overall(m, "all")) for e in ents for m in metrics))
            + _shown_ivs(shown["covered"], ((m, e.overall(m, "covered")) for e in ents for m in metrics))
        )
    )
    return (
        "<section id='covered'><h2>Fully covered slice</h2>"
        + figure(FIGURE_IDS["covered"], svg, cap)
        + systems_table(data, "covered")
        + "</section>"
    )
