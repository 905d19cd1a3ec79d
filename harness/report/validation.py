"""The terminal rendering of a validation report (rich): header, counts, rules, a record x rule matrix, failures,
warnings, what was not checked, the correction's complete diff and metric impact, and the verdict.

Every input string is printed escaped (``rich.markup.escape``) or as plain :class:`rich.text.Text`.
"""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table
from rich.text import Text

from harness.relpath import shown_path
from harness.report.validation_diff import diff_text_lines
from harness.validate.report import STATUSES, ValidationReport, worst

__all__ = ["changed_questions", "impact_text_lines", "render"]

_MARK = {
    "pass": "[green]✓[/]",
    "fail": "[bold red]✗[/]",
    "warn": "[yellow]![/]",
    "not_checked": "[yellow]–[/]",
    "not_applicable": "[dim]·[/]",
}
_WORD = {
    "pass": "[green]pass[/]",
    "fail": "[bold red]fail[/]",
    "warn": "[yellow]warn[/]",
    "not_checked": "[yellow]not checked[/]",
    "not_applicable": "[dim]n/a[/]",
}


MESSAGE_CHARS = 2000
"""Characters of a finding's message the terminal rendering shows at most (the JSON form keeps it whole). Quote
findings are short already (:data:`harness.corpus.quotes.EXCERPT_CHARS`); this bounds any other message that
echoes a long input string, since wrapping one long unbroken line costs the terminal renderer more than linear
time (issue 18 item 6)."""


def _short(value, n: int = 200) -> str:
    s = str(value)
    return s if len(s) <= n else s[: n - 1] + "…"


CHANGED_SHOWN = 12
"""At most this many changed questions are named per metric (then "... and N more")."""


def changed_questions(changed: dict, limit: int = CHANGED_SHOWN) -> str:
    """``"TE-004 0.5000 -> 1.0000, SP-001 1.0000 -> 0.5000"`` from ``{qid: [old, new]}`` (question order kept),
    at most ``limit`` named, then ``... and N more``; ``""`` for none."""
    items = [f"{q} {o:.4f} -> {n:.4f}" for q, (o, n) in changed.items()]
    more = f", ... and {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


def impact_text_lines(impact: dict) -> list[str]:
    """The metric impact of a correction (:meth:`harness.evaluation.impact.Impact.to_dict`) as plain text lines: per
    run and system, each changed metric's old and new mean, the paired difference new - old with its interval and
    the questions that changed (old -> new); the unchanged metrics of a system on one line."""
    how = f"{impact['method']} {impact['level']:.0%} paired intervals"
    out = [f"metric impact ({how}, new - old; clusters of the new set)"]
    for run in impact["runs"]:
        out.append(f"  run {run['run_id']} ({run['path']})")
        for system, metrics in run["systems"].items():
            out.append(f"    {system}:")
            same = [m for m, v in metrics.items() if not v["questions_changed"]]
            for m, v in metrics.items():
                if not v["questions_changed"]:
                    continue
                iv = v["interval"]
                ci = f" [{iv['low']:+.4f}, {iv['high']:+.4f}]" if iv else " (no interval)"
                out.append(
                    f"      {m}: {v['old']:.4f} -> {v['new']:.4f}  diff {v['diff']:+.4f}{ci}  "
                    f"({v['questions_changed']} question(s) changed: {changed_questions(v.get('changed', {}))})"
                )
            if same:
                out.append(f"      unchanged ({len(same)}): {', '.join(same)}")
    return out


def _plain(console, line: str, style: str | None = None) -> None:
    console.print(Text(line, style=style or ""), soft_wrap=True)


def render(report: ValidationReport, console) -> None:
    """Print ``report`` to a :class:`rich.console.Console` (see the module docstring)."""
    ds = report.dataset
    console.print(
        f"[bold]{escape(str(ds['name']))}[/] {escape(str(ds['version']))}  ({escape(shown_path(ds['path']))})"
    )
    console.print(f"records sha256 {ds['records_sha256']}   contract {escape(shown_path(report.contract))}")
    note = report.skipped_note()
    if report.corpus is None:
        console.print("corpus: [yellow]unavailable[/]")
    else:
        c = report.corpus
        console.print(
            f"corpus: {escape(str(c['dir']))}  {escape(str(c['corpus_id']))}  {c['documents']} documents "
            f"{c['date_min']}..{c['date_max']}  chunker {escape(str(c['chunker']))}"
        )
    n = report.counts
    counts = Table(title="Counts (computed from the records)", show_header=False)
    counts.add_row("questions", str(n.questions))
    counts.add_row("per category", escape(", ".join(f"{k} {v}" for k, v in n.per_category.items())))
    if any(k != "none" for k in n.per_split):
        counts.add_row("per split", escape(", ".join(f"{k} {v}" for k, v in n.per_split.items())))
    counts.add_row("distinct gold documents", str(n.gold_documents))
    counts.add_row("distinct evidence chunks", str(n.evidence_chunks))
    counts.add_row("quotes", str(n.quotes))
    console.print(counts)

    summary = report.rule_summary()
    rules = Table(title="Rules")
    for col in ("code", "rule", "scope", "pass", "fail", "warn", "not checked", "n/a", "status"):
        rules.add_column(col)
    for r in report.rules:
        s = summary[r.code]
        st = worst(k for k in STATUSES if s[k])
        counts_ = [str(s[k]) for k in ("pass", "fail", "warn", "not_checked", "not_applicable")]
        rules.add_row(r.code, r.name, r.scope, *counts_, _WORD[st])
    console.print(rules)

    rec_rules = [r for r in report.rules if r.scope == "record"]
    if report.records:
        matrix = Table(title="Per record (✓ pass, ✗ fail, ! warn, – not checked, · not applicable)")
        matrix.add_column("id")
        for r in rec_rules:
            matrix.add_column(r.code, justify="center")
        for rec in report.records:
            by = {x.code: x.status for x in rec.rules}
            matrix.add_row(escape(rec.id), *[_MARK[by.get(r.code, "pass")] for r in rec_rules])
        console.print(matrix)

    lines = {rec.id: rec.line for rec in report.records}
    for title, style, items in (
        ("Failures", "bold red", report.failures()),
        ("Warnings (do not change the exit code)", "yellow", report.warnings()),
    ):
        if not items:
            continue
        _plain(console, f"{title} ({len(items)})", style)
        for scope, code, f in items:
            loc = scope if scope == "dataset" else f"{scope} (line {lines.get(scope)})"
            where = f" {f.where}" if f.where else ""
            _plain(console, f"  {code} {loc}{where}: {_short(f.message, MESSAGE_CHARS)}")
            if f.details.get("closest"):
                _plain(console, f"      closest match: «{_short(f.details['closest'])}»")
    unchecked = sorted(
        {f.message for rec in report.records for r in rec.rules for f in r.findings if f.status == "not_checked"}
        | {f.message for r in report.dataset_results for f in r.findings if f.status == "not_checked"}
    )
    for msg in unchecked:
        _plain(console, f"  not checked: {msg}", "yellow")
    inapplicable = sorted(
        {f"{r.code}: {f.message}" for r in report.dataset_results for f in r.findings if f.status == "not_applicable"}
        | {
            f"{r.code}: {f.message}"
            for rec in report.records
            for r in rec.rules
            for f in r.findings
            if f.status == "not_applicable"
        }
    )
    for msg in inapplicable:
        _plain(console, f"  not applicable {msg}", "dim")

    if report.correction is not None:
        cor = report.correction
        names = ", ".join(f"{f['file']} (sha256 {f['sha256'][:12]})" for f in cor.files)
        _plain(console, f"Correction {names} -> version {cor.new_version}", "bold")
        for f in cor.files:
            what = f["description"] or "(no description)"
            _plain(console, f"  {f['file']}: author {f['author'] or '(none)'}; {what}")
        for line in diff_text_lines(cor.records):
            _plain(console, "  " + line)
        for sc in cor.status_changes:
            console.print(f"  {sc['code']} {escape(str(sc['scope']))}: {_WORD[sc['before']]} -> {_WORD[sc['after']]}")
        before = "valid" if cor.exit_code_before == 0 else "invalid"
        _plain(console, f"  before the correction the set was {before} (exit {cor.exit_code_before})")
        if cor.impact is not None:
            for line in impact_text_lines(cor.impact):
                _plain(console, line)

    if note:
        _plain(console, note, "bold yellow")
    if report.valid:
        console.print("[bold green]VALID[/]" + (" (corpus rules NOT checked)" if note else "") + ": exit 0")
    else:
        console.print(f"[bold red]INVALID[/]: {len(report.failures())} failed check(s); exit 1")
