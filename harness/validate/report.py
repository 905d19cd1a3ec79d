"""The typed validation report, its JSON form and its rich rendering.

Statuses: ``pass``, ``fail``, ``not_checked``, ``not_applicable``. A rule's status for one record (or for the dataset)
is ``fail`` if any of its checks failed, else ``not_checked`` if any check could not be made (e.g. corpus unavailable),
else ``pass`` if any check passed, else ``not_applicable`` (the contract does not ask for the rule, e.g. no
``per_split``). ``not_applicable`` never changes the exit code.
Exit code: 1 when any rule fails, else 0 (unusable input never produces a report: it raises
:class:`harness.errors.HarnessInputError`, exit code 2).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

__all__ = [
    "CorrectionInfo",
    "Counts",
    "Finding",
    "RecordResult",
    "RuleInfo",
    "RuleResult",
    "ValidationReport",
    "render",
    "worst",
]

Status = Literal["pass", "fail", "not_checked", "not_applicable"]
STATUSES: tuple[Status, ...] = ("pass", "fail", "not_checked", "not_applicable")
_RANK = {"not_applicable": 0, "pass": 1, "not_checked": 2, "fail": 3}


def worst(statuses) -> Status:
    """``fail`` > ``not_checked`` > ``pass`` > ``not_applicable``; ``pass`` for no statuses."""
    out: Status | None = None
    for s in statuses:
        if out is None or _RANK[s] > _RANK[out]:
            out = s
    return out or "pass"


@dataclass(frozen=True)
class RuleInfo:
    """A rule: stable ``code``, short ``name``, what it checks, ``scope`` (``record``/``dataset``), corpus need."""

    code: str
    name: str
    description: str
    scope: Literal["record", "dataset"]
    needs_corpus: bool


@dataclass
class Finding:
    """One failed or unchecked check: ``where`` is a field path inside the record (or the manifest/contract)."""

    status: Status
    message: str
    where: str = ""
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class RuleResult:
    """A rule's outcome for one record or for the dataset.

    Attributes:
        code: rule code.
        status: worst status of its checks.
        checks: number of checks made (passed + failed).
        findings: failed and unchecked checks (passed checks are only counted).
    """

    code: str
    status: Status
    checks: int = 0
    findings: list[Finding] = field(default_factory=list)


@dataclass
class RecordResult:
    """Results of the record-scope rules for one record (``index`` in file order, ``line`` in the JSONL)."""

    index: int
    id: str
    line: int | None
    category: str
    rules: list[RuleResult]

    @property
    def status(self) -> Status:
        """Worst status over its rules."""
        return worst(r.status for r in self.rules)


@dataclass
class Counts:
    """Counts computed from the records (never copied from the manifest).

    Attributes:
        questions: records.
        per_category: records per category, in contract order then first appearance.
        per_split: records per split (``"none"`` for records without one).
        gold_documents: distinct gold document ids (as strings).
        evidence_chunks: distinct evidence chunk ids (as strings).
        quotes: evidence entries.
    """

    questions: int
    per_category: dict[str, int]
    per_split: dict[str, int]
    gold_documents: int
    evidence_chunks: int
    quotes: int


@dataclass
class CorrectionInfo:
    """What a correction file did: per-record field diffs and the change in rule statuses.

    Attributes:
        file: the correction file.
        sha256: its sha256.
        records: ``[{"id", "new_id", "lines", "changes": [{"path", "op", "old", "new"}]}]``.
        status_changes: ``[{"scope": record id or "dataset", "code", "before", "after"}]``.
        exit_code_before: exit code of the uncorrected set.
        new_version: the version the corrected set would get.
    """

    file: str
    sha256: str
    records: list[dict[str, Any]]
    status_changes: list[dict[str, Any]]
    exit_code_before: int
    new_version: str


@dataclass
class ValidationReport:
    """The outcome of validating one gold set.

    Attributes:
        dataset: ``{"path", "records_file", "manifest_file", "name", "version", "records_sha256"}``.
        contract: the contract file used.
        corpus: ``None`` (corpus unavailable) or ``{"dir", "corpus_id", "corpus_hash", "documents", "date_min",
            "date_max", "chunker"}``.
        counts: :class:`Counts`.
        rules: the rules, in code order.
        dataset_results: dataset-scope rule results.
        records: record-scope results per record, in file order.
        correction: filled when a correction was applied before validating.
        elapsed_s: wall time of the validation in seconds (not part of :meth:`to_dict`, so JSON is reproducible).
    """

    dataset: dict[str, Any]
    contract: str
    corpus: dict[str, Any] | None
    counts: Counts
    rules: list[RuleInfo]
    dataset_results: list[RuleResult]
    records: list[RecordResult]
    correction: CorrectionInfo | None = None
    elapsed_s: float = 0.0

    @property
    def status(self) -> Status:
        """Worst status over all rules and records."""
        return worst([r.status for r in self.dataset_results] + [r.status for r in self.records])

    @property
    def exit_code(self) -> int:
        """1 when a rule failed, else 0."""
        return 1 if self.status == "fail" else 0

    @property
    def valid(self) -> bool:
        """No rule failed (unchecked rules do not fail)."""
        return self.exit_code == 0

    def rule_summary(self) -> dict[str, dict[str, int]]:
        """``{code: {status: n}}`` for every status in :data:`STATUSES`, counted over records (or the dataset)."""
        out = {r.code: dict.fromkeys(STATUSES, 0) for r in self.rules}
        for res in self.dataset_results:
            out[res.code][res.status] += 1
        for rec in self.records:
            for res in rec.rules:
                out[res.code][res.status] += 1
        return out

    def failures(self) -> list[tuple[str, str, Finding]]:
        """``(scope, code, finding)`` for every failed check; scope is a record id or ``"dataset"``."""
        out = []
        for res in self.dataset_results:
            out += [("dataset", res.code, f) for f in res.findings if f.status == "fail"]
        for rec in self.records:
            for res in rec.rules:
                out += [(rec.id, res.code, f) for f in res.findings if f.status == "fail"]
        return out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (deterministic: no timings)."""
        return {
            "status": self.status,
            "exit_code": self.exit_code,
            "dataset": self.dataset,
            "contract": self.contract,
            "corpus": self.corpus,
            "counts": asdict(self.counts),
            "rules": [asdict(r) | {"summary": self.rule_summary()[r.code]} for r in self.rules],
            "dataset_results": [asdict(r) for r in self.dataset_results],
            "records": [
                {"index": r.index, "id": r.id, "line": r.line, "category": r.category, "status": r.status}
                | {"rules": [asdict(x) for x in r.rules]}
                for r in self.records
            ],
            "correction": asdict(self.correction) if self.correction else None,
        }

    def to_json(self, *, indent: int | None = 2) -> str:
        """:meth:`to_dict` as JSON text (UTF-8 characters kept)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent)


_MARK = {"pass": "[green]✓[/]", "fail": "[bold red]✗[/]", "not_checked": "[yellow]–[/]", "not_applicable": "[dim]·[/]"}
_WORD = {
    "pass": "[green]pass[/]",
    "fail": "[bold red]fail[/]",
    "not_checked": "[yellow]not checked[/]",
    "not_applicable": "[dim]n/a[/]",
}


MESSAGE_CHARS = 2000
"""Characters of a finding's message the terminal rendering shows at most (the JSON form keeps it whole). Quote
findings are short already (:data:`harness.validate.quotes.EXCERPT_CHARS`); this bounds any other message that
echoes a long input string, since wrapping one long unbroken line costs the terminal renderer more than linear
time."""


def _short(value: Any, n: int = 100) -> str:
    s = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return s if len(s) <= n else s[: n - 1] + "…"


def render(report: ValidationReport, console) -> None:
    """Print ``report`` to a :class:`rich.console.Console`: header, counts, rules, a record × rule matrix,
    failures with their details, the correction diff if any, and the verdict."""
    from rich.markup import escape
    from rich.table import Table

    ds = report.dataset
    console.print(f"[bold]{escape(str(ds['name']))}[/] {escape(str(ds['version']))}  ({escape(str(ds['path']))})")
    console.print(f"records sha256 {ds['records_sha256']}   contract {escape(report.contract)}")
    if report.corpus is None:
        console.print("corpus: [yellow]unavailable[/] (corpus rules not checked)")
    else:
        c = report.corpus
        console.print(
            f"corpus: {escape(str(c['dir']))}  {c['corpus_id']}  {c['documents']} documents "
            f"{c['date_min']}..{c['date_max']}  chunker {c['chunker']}"
        )
    n = report.counts
    counts = Table(title="Counts (computed from the records)", show_header=False)
    counts.add_row("questions", str(n.questions))
    counts.add_row("per category", ", ".join(f"{k} {v}" for k, v in n.per_category.items()))
    if any(k != "none" for k in n.per_split):
        counts.add_row("per split", ", ".join(f"{k} {v}" for k, v in n.per_split.items()))
    counts.add_row("distinct gold documents", str(n.gold_documents))
    counts.add_row("distinct evidence chunks", str(n.evidence_chunks))
    counts.add_row("quotes", str(n.quotes))
    console.print(counts)

    summary = report.rule_summary()
    rules = Table(title="Rules")
    for col in ("code", "rule", "scope", "pass", "fail", "not checked", "n/a", "status"):
        rules.add_column(col)
    for r in report.rules:
        s = summary[r.code]
        st = worst(k for k in STATUSES if s[k])
        counts_ = [str(s[k]) for k in ("pass", "fail", "not_checked", "not_applicable")]
        rules.add_row(r.code, r.name, r.scope, *counts_, _WORD[st])
    console.print(rules)

    rec_rules = [r for r in report.rules if r.scope == "record"]
    if report.records:
        matrix = Table(title="Per record (✓ pass, ✗ fail, – not checked, · not applicable)")
        matrix.add_column("id")
        for r in rec_rules:
            matrix.add_column(r.code, justify="center")
        for rec in report.records:
            by = {x.code: x.status for x in rec.rules}
            matrix.add_row(escape(rec.id), *[_MARK[by.get(r.code, "pass")] for r in rec_rules])
        console.print(matrix)

    fails = report.failures()
    if fails:
        console.print(f"[bold red]Failures ({len(fails)})[/]")
        lines = {rec.id: rec.line for rec in report.records}
        for scope, code, f in fails:
            loc = scope if scope == "dataset" else f"{scope} (line {lines.get(scope)})"
            where = f" {f.where}" if f.where else ""
            console.print(f"  [red]{code}[/] {escape(loc)}{escape(where)}: {escape(_short(f.message, MESSAGE_CHARS))}")
            if f.details.get("closest"):
                console.print(f"      closest match: «{escape(_short(f.details['closest'], 200))}»")
    unchecked = sorted(
        {f.message for rec in report.records for r in rec.rules for f in r.findings if f.status == "not_checked"}
        | {f.message for r in report.dataset_results for f in r.findings if f.status == "not_checked"}
    )
    for msg in unchecked:
        console.print(f"  [yellow]not checked[/]: {escape(msg)}")
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
        console.print(f"  [dim]not applicable[/] {escape(msg)}")

    if report.correction is not None:
        cor = report.correction
        console.print(f"[bold]Correction[/] {escape(cor.file)} (sha256 {cor.sha256[:12]}) -> version {cor.new_version}")
        for rec in cor.records:
            rid = rec["id"] if rec["id"] == rec["new_id"] else f"{rec['id']} -> {rec['new_id']}"
            console.print(f"  record {escape(str(rid))} (correction line(s) {', '.join(map(str, rec['lines']))})")
            for ch in rec["changes"]:
                if ch["op"] == "changed":
                    txt = f"{_short(ch['old'])} -> {_short(ch['new'])}"
                elif ch["op"] == "added":
                    txt = f"added {_short(ch['new'])}"
                else:
                    txt = f"removed {_short(ch['old'])}"
                console.print(f"    {escape(ch['path'])}: {escape(txt)}")
        for sc in cor.status_changes:
            console.print(f"  {sc['code']} {escape(str(sc['scope']))}: {_WORD[sc['before']]} -> {_WORD[sc['after']]}")
        before = "valid" if cor.exit_code_before == 0 else "invalid"
        console.print(f"  before the correction the set was {before} (exit {cor.exit_code_before})")

    if report.valid:
        extra = " (corpus rules not checked)" if report.corpus is None else ""
        console.print(f"[bold green]VALID[/]{extra}: exit 0")
    else:
        console.print(f"[bold red]INVALID[/]: {len(fails)} failed check(s); exit 1")
