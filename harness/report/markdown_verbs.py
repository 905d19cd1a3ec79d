"""The ``markdown`` output format of each verb (``--format markdown``): GitHub-flavoured text for a pull-request
comment or a CI summary. Every string from an input is escaped (:func:`harness.report.format.md`; tables through
:func:`harness.report.markdown.table`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from harness.evaluation.changes import change_line
from harness.evaluation.gate import EXIT_CODES
from harness.evaluation.known_item_gate import KnownItemCheck, known_item_provenance
from harness.goldset.schema import CATEGORIES
from harness.metrics import outcome_of
from harness.relpath import shown_path
from harness.report.format import MISSING, Markup, diff_iv, fmt_iv, legend, md, mean_iv, num, pct, pts, spaced, wtl
from harness.report.markdown import known_item_table, table
from harness.report.regressions import regressions_markdown
from harness.report.studies import sample_rows
from harness.report.sweep_multi import markdown_lines as multi_sweep_markdown
from harness.report.terminal import EVIDENCE_METRICS, MAIN_METRICS, run_slice, run_warnings, slice_intervals
from harness.report.wording import gate_evidence_lines
from harness.stats.design_evidence import estimand_note
from harness.stats.methods import evidence_notes, paired_evidence_lines
from harness.stats.shown import ShownIntervals

URL_SAFE = "/:?#@!$&'*+,;=%~-._"
"""Characters of a URL left as they are by :func:`report_link` (the rest is percent-encoded)."""


def _legend(ivs) -> list[str]:
    text = legend(ivs)
    return ["", f"_{md(text)}_"] if text else []


def _evidence(method: str, design=None) -> list[str]:
    return [x for note in paired_evidence_lines(method, design=design) for x in ("", f"_{md(note)}_")]


def _recorded(systems: dict, metrics: list[str]) -> dict[str, tuple[str, set[str]]]:
    return {
        x: (outcome_of(x), {k for sl in systems.values() if (ov := sl.metric(x)) for k in ov.intervals})
        for x in metrics
    }


def _run_evidence(
    shown: ShownIntervals, recorded: dict[str, tuple[str, set[str]]], *, estimand: bool = True
) -> list[str]:
    notes = evidence_notes(
        shown.by_class(recorded), recorded, design=shown.design, source=shown.source, estimand=estimand
    )
    return [x for n in notes for x in ("", f"_{md(n)}_")]


def changes_markdown(changes) -> list[str]:
    """One ``- changed: vector.model wordllama → use`` bullet per configuration change
    (:mod:`harness.evaluation.changes`), escaped, after a blank line; nothing when there is none."""
    return ["", *(f"- {md(change_line(c))}" for c in changes)] if changes else []


def _warnings(ws) -> list[str]:
    return [x for w in ws for x in ("", f"> **Warning:** {md(w)}")]


def _run(rec, path: Path | None) -> list[str]:
    m = rec.manifest
    out = [
        f"### Run {md(m.run_id)}: {md(m.goldset.name or '?')} v{md(m.goldset.version or '?')} on "
        f"{md(m.corpus.corpus_id or '?')}",
        "",
        f"Clustering {md(m.clusters.mode or '?')} ({md(m.clusters.n_clusters)} clusters, Satterthwaite df "
        f"{num(m.clusters.df, '.1f')}); means over every question with 95 % intervals (the method per outcome class "
        "is the coverage rule's default for this run's design, named under each table).",
    ]
    sub = (m.model_extra or {}).get("subset")
    if sub:  # run --qids / --category: the questions scored
        out[-1] += f" Subset {md(sub['label'])}: {md(sub['n_questions'])} of {md(sub['of'])} questions."
    shown = run_slice(rec)
    titles = {"all": "All questions", "covered": "Fully covered slice", "dev": "Dev split", "test": "Test split"}
    for i, slice_name in enumerate((shown, "covered")):
        systems = {s: sl[slice_name] for s, sl in rec.summary.systems.items() if slice_name in sl}
        if not systems:
            continue
        wanted = dict.fromkeys([*MAIN_METRICS, *EVIDENCE_METRICS, *m.chosen_metrics])  # run --metrics
        metrics = [x for x in wanted if any(x in sl.overall for sl in systems.values())]
        shown_iv = ShownIntervals.for_run(rec, slice_name)
        recorded = _recorded(systems, metrics)
        rows = []
        for system, sl in systems.items():
            cells = []
            for x in metrics:
                ov = sl.metric(x)
                cells.append("n/a" if ov is None else mean_iv(ov.mean, ov.shown))
            rows.append([system, str(sl.n_questions), *cells])
        head = f"{titles.get(slice_name, md(slice_name))} (95 % {md(shown_iv.phrase(recorded))} intervals)"
        out += ["", f"#### {head}", ""]
        out.append(table(["system", "n", *metrics], rows))
        out += _legend(slice_intervals(rec, slice_name, metrics))
        out += _run_evidence(shown_iv, recorded, estimand=i == 0)  # the estimand once per output
    cats_present = {c for sl in rec.summary.systems.values() if "all" in sl for c in sl["all"].per_category}
    cats = [c for c in CATEGORIES if c in cats_present] + sorted(cats_present - set(CATEGORIES))
    if cats:
        rows = []
        for system, sl in rec.summary.systems.items():
            pc = sl["all"].per_category if "all" in sl else {}
            rows.append([system, *[num(pc[c].metrics.get("mrr"), ".3f") if c in pc else MISSING for c in cats]])
        out += ["", "#### MRR per category (point estimates)", "", table(["system", *map(spaced, cats)], rows)]
    notes = []
    for system, sl in rec.summary.systems.items():
        whole = sl.get("all")
        if whole is not None and whole.counts is not None and whole.counts.n_missing:
            notes.append(f"{system}: {whole.counts.n_missing} of {whole.counts.n_questions} questions have no ranking")
        notes += [
            f"{system}: no {lv} rankings; those metrics are n/a"
            for lv, ok in (whole.levels if whole else {}).items()
            if not ok
        ]
    out += [x for n in notes for x in ("", f"> **Note:** {md(n)}")]
    out += _warnings(run_warnings(rec))
    if path is not None:
        out += ["", f"Run record: {md(path)}"]
    return out


def _comparison(rep, _path) -> list[str]:
    head = ["A", "B", "metric", "mean A", "mean B", "B - A [CI]", "df", "p (rand.)", "p (Holm)", "W/T/L q"]
    rows = []
    for c in rep.comparisons:
        iv = c.interval
        rows.append(
            [
                c.system_a,
                c.system_b,
                c.metric,
                f"{c.mean_a:.3f}",
                f"{c.mean_b:.3f}",
                diff_iv(c.diff, iv),
                num(iv.get("df"), ".1f"),
                f"{c.p_randomization:.3f}",
                num(c.p_holm, ".3f"),
                wtl(c.questions),
                wtl(c.clusters),
            ]
        )
    cl = rep.clustering
    split = "" if rep.split == "all" else f"; {md(rep.split)} split only"
    out = [
        f"### Paired differences B - A ({md(shown_path(rep.run_a))} vs {md(shown_path(rep.run_b))})",
        "",
        f"{100 * rep.level:g} % {md(rep.method_label)} intervals ({md(rep.method)}); clustering "
        f"{md(cl.get('mode'))}, {md(cl.get('n_clusters'))} clusters{split}.",
        "",
        table([*head, "W/T/L cl"], rows, ["l", "l", "l"] + ["r"] * 8),
    ]
    out += changes_markdown(rep.changes)
    out += _legend(c.interval for c in rep.comparisons) + _evidence(rep.method, rep.design)
    first = rep.comparisons[0].metric if rep.comparisons else None
    for c in rep.comparisons:
        if c.metric != first:
            continue
        crow = [
            [cat, str(e["n"]), diff_iv(e["diff"], e["interval"]) if e.get("interval") else f"{e['diff']:+.3f}", wtl(e)]
            for cat, e in c.per_category.items()
        ]
        out += ["", f"#### {md(c.metric)}: {md(c.system_b)} - {md(c.system_a)} per category", ""]
        out.append(table(["category", "n", "B - A [CI] (>= 2 clusters)", "W/T/L"], crow))
        out += regressions_markdown(f"{c.metric}: {c.system_b} - {c.system_a}", c.regressions)
    out += [x for n in rep.notes for x in ("", f"> **Note:** {md(n)}")]
    out += _warnings(rep.warnings)
    return out


def _mdd(c) -> str:
    return "not estimable" if c.minimum_detectable_difference is None else f"{c.minimum_detectable_difference:.4f}"


def report_link(url: str) -> str:
    """A Markdown link line to the HTML report: ``[HTML report](URL)`` with every character outside the URL's own
    punctuation percent-encoded (RFC 3986), so no URL can close the link or add markup."""
    return f"[HTML report]({quote(url, safe=URL_SAFE)})"


def gate_headline(v) -> str:
    """``## Gate: INCONCLUSIVE (exit 3) on mrr, recall@10`` (with the ``--on-inconclusive`` policy when it changed
    the exit code)."""
    metrics = ", ".join(dict.fromkeys(c.metric for c in v.checks))
    policy = "" if v.exit_code == EXIT_CODES[v.decision] else f", --on-inconclusive {v.on_inconclusive}"
    return f"## Gate: {md(v.decision)} (exit {v.exit_code}{md(policy)}) on {md(metrics)}"


def known_item_markdown(v) -> list[str]:
    """The known-item checks of a gate verdict in words (both numbers, the interval, its measured coverage, the MDD,
    the proxy), then where the outcomes came from; empty without a known-item check."""
    lines = [f"- {md(c.describe(v.system_candidate, v.system_baseline, v.level))}" for c in v.checks
             if isinstance(c, KnownItemCheck)]  # fmt: skip
    if not lines:
        return []
    return ["", "**Known-item check:**", "", *lines, *[f"- {md(x)}" for x in known_item_provenance(v)]]


def _gate(v, _path) -> list[str]:
    """A ready pull-request comment: headline, the checks' table, the reason in plain words, each check's reason,
    the regressed questions of each metric check, the link to the HTML report, provenance and warnings."""
    rows = [
        [
            c.name,
            f"{c.diff:+.4f}",
            fmt_iv(None if c.lower is None else (c.lower, c.upper), "+.4f") or "none",
            f"-{c.margin:.4f}",
            _mdd(c),
            MISSING if c.clusters_needed is None else str(c.clusters_needed),
            f"{c.n_clusters} / {c.n_questions}",
            Markup("**" + c.decision + "**"),
        ]
        for c in v.checks
    ]
    head = ["check", "diff", f"{100 * v.level:g} % interval", "-margin", "MDD (80 %)", "clusters needed",
            "clusters / questions", "verdict"]  # fmt: skip
    out = [gate_headline(v), "", table(head, rows, ["l", "r", "r", "r", "r", "r", "r", "l"])]
    out += _legend((c.lower, c.upper) for c in v.checks if c.lower is not None)
    out += [x for note in gate_evidence_lines(v) for x in ("", f"_{md(note)}_")]
    out += ["", f"**Why:** {md(v.reason)}"]
    out += changes_markdown(v.changes)
    out += known_item_markdown(v)
    if len(v.checks) > 1:
        out += ["", "Reasons:", ""] + [f"- {md(c.name)}: {md(c.reason)}" for c in v.checks]
    for c in v.checks:
        if c.kind == "metric":
            out += regressions_markdown(f"{c.metric}: {v.system_candidate} - {v.system_baseline}", c.regressions)
    if v.report_url:
        out += ["", report_link(v.report_url)]
    out += [
        "",
        md(
            f"{v.system_candidate} ({shown_path(v.candidate)}) - {v.system_baseline} ({shown_path(v.baseline)}); "
            f"split {v.split}; "
            f"{v.method_label} ({v.method}, the registry's default for paired differences), one-sided alpha "
            f"{v.alpha:g}; {v.combination}; "
            + (f"gold set {v.goldset.get('name')} v{v.goldset.get('version')}; " if v.goldset else "")
            + f"harness {v.harness_version}; exit code {v.exit_code}."
        ),
    ]
    out += _warnings(v.warnings)
    return out


def _power(plan: dict, _path) -> list[str]:
    rows = [
        ["ICC (estimated)", num(plan["icc"], ".3f")],
        ["ICC used (truncated at 0)", num(plan["icc_used"], ".3f")],
        ["DEFF", num(plan["deff"], ".2f")],
        ["mean cluster size (CV)", f"{plan['mean_cluster_size']:.2f} ({plan['cv_cluster_size']:.2f})"],
        ["SD", num(plan["sd"], ".3f")],
        ["test", f"{plan['sided']}, alpha {plan['alpha']}"],
        ["clusters needed", str(plan["clusters_needed"])],
        ["questions needed", str(plan["questions_needed"])],
        ["now", f"{plan['current_clusters']} clusters, {plan['current_questions']} questions"],
    ]
    out = [
        f"### Power plan: {md(plan['system'])} {md(plan['metric'])}{' (paired differences)' if plan['paired'] else ''}",
        "",
        f"To detect {plan['delta']} with {plan['power']:.0%} power, {plan['sided']} test at alpha {plan['alpha']}:",
        "",
        table(["quantity", "value"], rows),
        "",
        md(plan["deff_formula"]),
    ]
    out += _warnings(plan.get("warnings", []))
    return out


def _sweep(r, _path) -> list[str]:
    pct_ = f"{100 * r.interval_level:g} %"
    rows = [["dev", str(r.n_dev), r.chosen_system, f"{r.dev_best:.4f}", "optimistic", "", ""]]
    rows += [
        ["dev", str(r.n_dev), name, f"{m:.4f}", "", f"{r.dev_best - m:+.4f}", ""] for name, m in r.dev_inputs.items()
    ]
    ivs = []
    for row in r.test:
        ivs += [row.interval, row.paired_interval]
        rows.append(
            [
                "test",
                str(r.n_test),
                row.system + (" (chosen)" if row.role == "chosen" else ""),
                f"{row.mean:.4f}",
                fmt_iv(row.interval, ".4f") or "n/a",
                "" if row.diff is None else f"{row.diff:+.4f}",
                "" if row.paired_interval is None else fmt_iv(row.paired_interval, "+.4f"),
            ]
        )
    head = ["split", "questions", "system", r.metric, f"{pct_} {r.method}", "chosen - system", f"{pct_} paired"]
    out = [
        f"### Fusion sweep: {md(r.fusion)} of {md('+'.join(r.inputs))}, {md(r.metric)} ({r.level} level), "
        f"run {md(r.run_id)}",
        "",
        table(head, rows, ["l", "r", "l", "r", "r", "r", "r"]),
    ]
    out += _legend(ivs)
    out += ["", md(f"settings tried: {r.n_settings}; chosen {r.chosen_system} ({r.tie_rule}). {r.note}")]
    out += ["", md(f"fusion: {r.formula}")]
    if r.param:
        curve = [
            [f"{w:g}", f"{v:.4f}", "yes" if w == r.chosen_value else ""]
            for w, v in zip(r.grid, r.dev_means, strict=True)
        ]
        out += ["", "<details><summary>dev curve</summary>", "", table([r.param, f"dev {r.metric}", "chosen"], curve),
                "", "</details>"]  # fmt: skip
    out += _warnings(r.warnings)
    return out


def _validation(rep, _path) -> list[str]:
    from harness.report.validation_markdown import validation_markdown_lines

    return validation_markdown_lines(rep)


def _apply(res, _path) -> list[str]:
    out = _validation(res.report, None)
    if res.written:
        out += [
            "",
            md(
                f"Wrote {shown_path(res.out_dir)} (version {res.version}; records changed: "
                f"{', '.join(res.records_changed)})"
            ),
        ]
    else:
        out += ["", "**Not written**: the corrected set does not validate."]
    return out


def known_item_lines(summary: dict, where: str | Path | None) -> list[str]:
    """A known-item study's ``summary.json`` as Markdown: the per-system table and the paired differences."""
    out = [f"#### Known-item study ({md(where)})" if where else "#### Known-item study", ""]
    out.append(known_item_table(summary))
    paired = summary.get("paired") or {}
    if paired:
        rows = [
            [
                name,
                pts(p.get("micro_diff")),
                pts(p.get("macro_diff")),
                f"{p.get('only_a', MISSING)}/{p.get('only_b', MISSING)}",
            ]
            for name, p in paired.items()
        ]
        out += ["", table(["paired (B - A)", "micro diff", "macro diff", "only A / only B hit"], rows)]
    if summary.get("sample"):
        smp = summary["sample"]
        rows = sample_rows(smp)
        out += ["", f"Sample of {smp['k']} documents ({md(smp['design'])}, seed {smp['seed']}):", ""]
        out += [table(["system", "metric", "method", "estimate [95 % interval]", "df"], rows)]
        out += ["", f"_Estimand: {md(smp['estimand'])}. {md(smp['coverage'])}_"]
    return out


def _known_item(res, path) -> list[str]:
    return known_item_lines(res.summary, path)


def _sensitivity(res, path) -> list[str]:
    head = ["chunk words", "system", "queries", "docs", "micro", "macro", "ICC", "DEFF"]
    rows = [
        [str(r["chunk_words"]), r["system"], str(r["queries"]), str(r["documents"]), pct(r["micro_hit1"]),
         pct(r["macro_hit1"]), num(r["icc"], ".3f"), num(r["deff"], ".1f")]
        for r in res.rows
    ]  # fmt: skip
    return [f"#### Chunk-size sensitivity of known-item hit@1 ({md(path)})", "", table(head, rows)]


def coverage_lines(cov: dict, where: str | Path | None) -> list[str]:
    """A coverage study (``coverage.json`` content) as Markdown: coverage ± Monte Carlo margin per method and K."""
    designs = [d for d in cov.get("designs", []) if d.get("rows")]
    out = [f"#### Interval coverage ({md(where)})" if where else "#### Interval coverage"]
    for d in designs:
        rows = [
            [
                r.get("method", k) + (" +FPC" if r.get("fpc") else ""),
                f"{100 * r['coverage']:.1f} ± {100 * r['mc_margin']:.1f}",
                f"{100 * r['mean_width']:.2f}",
            ]
            for k, r in d["rows"].items()
        ]
        out += ["", f"{md(d.get('design'))} design, K = {md(d.get('K'))}, R = {md(d.get('reps'))}", ""]
        out.append(table(["method", "coverage (%)", "mean width (points)"], rows))
    return out


def _coverage(res, path) -> list[str]:
    return coverage_lines(res.to_dict(), path)


def _suite(res, path) -> list[str]:
    out = [f"### Coverage suite ({md(path)})" if path else "### Coverage suite", ""]
    rows = [[md(k), md(v)] for k, v in res.to_dict()["defaults"].items()]
    out += ["Default interval per outcome type (the rule over the measurements):", ""]
    out.append(table(["outcome", "method"], rows))
    for r in res.results:
        out += [""] + coverage_lines(r.to_dict(), r.label)
    return out


def _cell(mark: str) -> str:
    return f" ({md(mark)})" if mark else ""


def _design(res, _path) -> list[str]:
    d = res.to_dict()
    out = [f"### Coverage for this design: {md(d['design']['describe'])}", ""]
    out.append(f"_{md(estimand_note(res.design))}_")
    rows = [
        [md(cls), md(m["method"]) + _cell(res.default_cell(cls, m["method"])),
         f"{100 * m['min']:.1f} ± {100 * m['mc_margin']:.1f}", f"{100 * m['max']:.1f}",
         num(m["max_width_ratio"], ".2f")]
        for cls, c in d["outcomes"].items()
        for m in c["methods"]
        if m["candidate"]
    ]  # fmt: skip
    out += ["", table(["outcome", "method", "min coverage (%)", "max (%)", "max width / reference"], rows)]
    out += [f"- **{md(cls)}**: {md(c['no_default'])}" for cls, c in d["outcomes"].items() if c["no_default"]]
    return out + ["", f"R = {md(d['config']['reps'])} per population; {md(d['rule'])}."]


def _plan(res, path) -> list[str]:
    d = res.manifest["design"]
    rows = [[str(r["draw"]), r["doc_id"], f"{r['p']:.5f}"] for r in res.draws]
    out = [f"### Gold-set plan ({md(path)}): {len(rows)} draws by {md(d['sampling'])}, seed {d['seed']}", ""]
    return out + [table(["draw", "document", "probability"], rows)]


def _split(res, _path) -> list[str]:
    """``harness goldset split --format markdown``: the validation when nothing was written, then the summary."""
    head = [] if res.out_dir is not None else [*_validation(res.report, None), ""]
    return [*head, md(res.summary())]


def _study(res, path) -> list[str]:
    return known_item_lines(res.known_item.summary, path) + [""] + coverage_lines(res.coverage.to_dict(), None)


_RENDERERS: dict[str, Callable[[Any, Path | None], list[str]]] = {
    "run": _run,
    "comparison": _comparison,
    "gate": _gate,
    "power": _power,
    "sweep": _sweep,
    "sweep-multi": lambda res, path: multi_sweep_markdown(res, path),
    "validation": _validation,
    "goldset-apply": _apply,
    "known-item": _known_item,
    "known-item-sensitivity": _sensitivity,
    "known-item-study": _study,
    "coverage": _coverage,
    "coverage-suite": _suite,
    "report": lambda data, _path: [_report(data)],
    "coverage-design": _design,
    "goldset-plan": _plan,
    "goldset-split": _split,
}


def _report(data) -> str:
    """``harness report --format markdown``: the pull-request summary (:func:`harness.report.markdown.render_markdown`),
    its final newline left to the format."""
    from harness.report.markdown import render_markdown

    return render_markdown(data).removesuffix("\n")


def render(kind: str, value: Any, path: Path | None = None) -> str:
    """The Markdown of a verb's result (``kind`` as in :data:`harness.report.formats.KINDS`)."""
    return "\n".join(_RENDERERS[kind](value, path))
