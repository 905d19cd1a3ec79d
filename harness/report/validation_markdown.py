"""A validation report as Markdown (``harness validate --format markdown``, a pull-request comment): verdict, what
was not checked, rule counts, failures, warnings, the correction's complete diff (with authors and rationales) and
its metric impact. Every input string is escaped (:func:`harness.report.format.md`)."""

from __future__ import annotations

from harness.report.format import Markup, md
from harness.report.markdown import table
from harness.report.validation import changed_questions
from harness.report.validation_diff import diff_markdown_lines
from harness.validate.report import ValidationReport

__all__ = ["impact_markdown_lines", "validation_markdown_lines"]


def _iv(iv: dict | None) -> str:
    return "n/a" if iv is None else f"[{iv['low']:+.4f}, {iv['high']:+.4f}]"


def impact_markdown_lines(impact: dict) -> list[str]:
    """The metric impact (:meth:`harness.evaluation.impact.Impact.to_dict`) as one table per run."""
    out = [
        "",
        f"#### Metric impact (new - old; {md(impact['method'])} {impact['level']:.0%} paired intervals, clusters of "
        "the corrected set)",
    ]
    for run in impact["runs"]:
        rows = [
            [
                system,
                m,
                f"{v['old']:.4f}",
                f"{v['new']:.4f}",
                f"{v['diff']:+.4f}",
                _iv(v["interval"]),
                str(v["questions_changed"]),
                md(changed_questions(v.get("changed", {})).replace(" -> ", " → ")) or "-",
            ]
            for system, metrics in run["systems"].items()
            for m, v in metrics.items()
        ]
        out += [
            "",
            f"Run {md(run['run_id'])}:",
            "",
            table(
                ["system", "metric", "old", "new", "diff", "interval", "questions changed", "which (old → new)"], rows
            ),
        ]
    return out


def validation_markdown_lines(rep: ValidationReport) -> list[str]:
    """The report as Markdown lines (see the module docstring)."""
    ds = rep.dataset
    verdict = "VALID" if rep.valid else "INVALID"
    note = rep.skipped_note()
    extra = " (corpus rules NOT checked)" if note else ""
    out = [
        f"### Validation of {md(ds.get('name'))} {md(ds.get('version'))}: {Markup('**' + verdict + '**')}{md(extra)}",
        "",
        f"Records sha256 {md(ds.get('records_sha256'))}; contract {md(rep.contract)}; "
        f"{rep.counts.questions} questions.",
    ]
    if note:
        out += ["", f"> **{md(note)}**"]
    summary = rep.rule_summary()
    cols = ("pass", "fail", "warn", "not_checked", "not_applicable")
    rows = [[r.code, r.name, r.scope, *[str(summary[r.code][k]) for k in cols]] for r in rep.rules]
    out += ["", table(["code", "rule", "scope", "pass", "fail", "warn", "not checked", "n/a"], rows)]
    for title, items in (("Failures", rep.failures()), ("Warnings (exit code unchanged)", rep.warnings())):
        if items:
            frows = [[code, scope, f.where, f.message] for scope, code, f in items]
            out += ["", f"#### {title} ({len(items)})", "", table(["rule", "record", "where", "message"], frows)]
    cor = rep.correction
    if cor is not None:
        out += ["", f"#### Correction -> version {md(cor.new_version)}", ""]
        for f in cor.files:
            out.append(
                f"- {md(f['file'])} (sha256 `{md(f['sha256'][:12])}`): author {md(f['author'] or '(none)')}; "
                f"{md(f['description'] or '(no description)')}"
            )
        out += diff_markdown_lines(cor.records)
        if cor.status_changes:
            srows = [[s["code"], str(s["scope"]), s["before"], s["after"]] for s in cor.status_changes]
            out += ["", table(["rule", "scope", "before", "after"], srows)]
        if cor.impact is not None:
            out += impact_markdown_lines(cor.impact)
    out += ["", f"Exit code {rep.exit_code}."]
    return out
