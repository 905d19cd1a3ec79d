"""The typed validation report and its JSON form (the rich rendering: :mod:`harness.report.validation`; Markdown:
:mod:`harness.report.validation_markdown`).

Statuses: ``pass``, ``fail``, ``warn``, ``not_checked``, ``not_applicable``. A rule's status for one record (or for
the dataset) is ``fail`` if any of its checks failed, else ``not_checked`` if any check could not be made (e.g.
corpus unavailable), else ``warn`` if any check raised a warning (a finding for a person to look at, e.g. V034's
figures that no quote backs), else ``pass`` if any check passed, else ``not_applicable`` (the contract does not ask
for the rule, e.g. no ``per_split``). ``warn`` and ``not_applicable`` never change the exit code.
Exit code: 1 when any rule fails, else 0 (unusable input never produces a report: it raises
:class:`harness.errors.HarnessInputError`, exit code 2).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

__all__ = [
    "CORPUS_RULES_SKIPPED",
    "CorrectionInfo",
    "Counts",
    "Finding",
    "RecordResult",
    "RuleInfo",
    "RuleResult",
    "ValidationReport",
    "worst",
]

Status = Literal["pass", "fail", "warn", "not_checked", "not_applicable"]
STATUSES: tuple[Status, ...] = ("pass", "fail", "warn", "not_checked", "not_applicable")
_RANK = {"not_applicable": 0, "pass": 1, "warn": 2, "not_checked": 3, "fail": 4}

CORPUS_RULES_SKIPPED = (
    "corpus rules not checked (no --corpus): quotes, chunk ids, document metadata, heading paths and corpus "
    "identity were not compared with the corpus; validate with --corpus before a release"
)
"""What every format says when ``validate`` ran without a corpus (with the codes of the rules skipped)."""


def worst(statuses) -> Status:
    """``fail`` > ``not_checked`` > ``warn`` > ``pass`` > ``not_applicable``; ``pass`` for no statuses."""
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

    def to_dict(self) -> dict[str, Any]:
        """``dataclasses.asdict(self)``, built directly (asdict's deep copy made most of the time of a 20,000-record
        report; ``details`` hold JSON values, copied one level)."""
        return {
            "code": self.code,
            "status": self.status,
            "checks": self.checks,
            "findings": [
                {"status": f.status, "message": f.message, "where": f.where, "details": dict(f.details)}
                for f in self.findings
            ],
        }


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
    """What correction files did: per-record field diffs and the change in rule statuses.

    Attributes:
        files: ``[{"file", "sha256", "author", "description"}]`` in the order applied.
        records: ``[{"id", "new_id", "sources": [{"file", "line", "author", "rationale"}], "changes": [{"path",
            "op", "old", "new", "old_path"?, "words"?}]}]`` (:class:`harness.goldset.diff.FieldChange`).
        status_changes: ``[{"scope": record id or "dataset", "code", "before", "after"}]``.
        exit_code_before: exit code of the uncorrected set.
        new_version: the version the corrected set would get.
        impact: the corrections' effect on runs' metrics (:meth:`harness.evaluation.impact.Impact.to_dict`), when
            asked for (``--impact RUN``).
    """

    files: list[dict[str, Any]]
    records: list[dict[str, Any]]
    status_changes: list[dict[str, Any]]
    exit_code_before: int
    new_version: str
    impact: dict[str, Any] | None = None


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

    def findings_with(self, status: Status) -> list[tuple[str, str, Finding]]:
        """``(scope, code, finding)`` for every check with ``status``; scope is a record id or ``"dataset"``."""
        out = []
        for res in self.dataset_results:
            out += [("dataset", res.code, f) for f in res.findings if f.status == status]
        for rec in self.records:
            for res in rec.rules:
                out += [(rec.id, res.code, f) for f in res.findings if f.status == status]
        return out

    def failures(self) -> list[tuple[str, str, Finding]]:
        """``(scope, code, finding)`` for every failed check."""
        return self.findings_with("fail")

    def warnings(self) -> list[tuple[str, str, Finding]]:
        """``(scope, code, finding)`` for every warning (they do not change the exit code)."""
        return self.findings_with("warn")

    def skipped_rules(self) -> list[str]:
        """Codes of the rules not checked because no corpus was given (``[]`` with a corpus)."""
        return [r.code for r in self.rules if r.needs_corpus] if self.corpus is None else []

    def skipped_note(self) -> str | None:
        """One line naming the rules skipped for want of a corpus (:data:`CORPUS_RULES_SKIPPED`), or ``None``."""
        codes = self.skipped_rules()
        return f"warning: {', '.join(codes)} {CORPUS_RULES_SKIPPED}" if codes else None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (deterministic: no timings)."""
        summary = self.rule_summary()
        return {
            "status": self.status,
            "exit_code": self.exit_code,
            "dataset": self.dataset,
            "contract": self.contract,
            "corpus": self.corpus,
            "counts": asdict(self.counts),
            "rules": [asdict(r) | {"summary": summary[r.code]} for r in self.rules],
            "dataset_results": [r.to_dict() for r in self.dataset_results],
            "records": [
                {"index": r.index, "id": r.id, "line": r.line, "category": r.category, "status": r.status}
                | {"rules": [x.to_dict() for x in r.rules]}
                for r in self.records
            ],
            "correction": asdict(self.correction) if self.correction else None,
            "skipped": (
                {"rules": self.skipped_rules(), "reason": CORPUS_RULES_SKIPPED} if self.skipped_rules() else None
            ),
            "warnings": len(self.warnings()),
        }

    def to_json(self, *, indent: int | None = 2) -> str:
        """:meth:`to_dict` as JSON text (UTF-8 characters kept)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent)
