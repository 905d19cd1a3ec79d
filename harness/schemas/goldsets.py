"""Pydantic models of the ``data`` of the envelopes of ``harness power``, ``validate``, ``goldset apply``,
``goldset plan`` and ``goldset split`` (:mod:`harness.schemas`; the conventions of :mod:`harness.schemas.models`:
required keys typed, ranges where known, extra keys allowed in open sections)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from harness.schemas.models import Count, Open, Prob, Sha256, Strict

Status = Literal["pass", "fail", "warn", "not_checked", "not_applicable"]
"""A validation rule's status (:data:`harness.validate.report.STATUSES`)."""


class PowerData(Open):
    """``data`` of the ``power`` kind (``harness power``; :func:`harness.evaluation.power.power_plan`): the clusters
    and questions needed to detect ``delta`` with the given power, from the run's ICC and design effect."""

    run: str
    system: str
    metric: str
    delta: Annotated[float, Field(gt=0.0)]
    paired: bool
    alpha: Annotated[float, Field(gt=0.0, lt=1.0)]
    power: Annotated[float, Field(gt=0.0, lt=1.0)]
    split: str
    icc: float | None
    icc_used: Annotated[float, Field(ge=0.0, le=1.0)]
    icc_note: str
    deff: Annotated[float, Field(ge=1.0)]
    deff_formula: str
    mean_cluster_size: Annotated[float, Field(gt=0.0)]
    cv_cluster_size: Annotated[float, Field(ge=0.0)]
    sd: Annotated[float, Field(ge=0.0)]
    sided: Literal["one-sided", "two-sided"]
    clusters_needed: Count
    questions_needed: Count
    df_at_plan: float | None
    mdd_at_plan: float
    clusters_needed_normal_approx: Count | None
    current_clusters: Count
    current_questions: Count
    note: str
    warnings: list[str]


class Finding(Strict):
    """A failed or unchecked check: ``where`` is a field path inside the record (or the manifest, the contract)."""

    status: Status
    message: str
    where: str
    details: dict[str, Any]


class RuleResult(Strict):
    """A rule's outcome for one record or for the dataset: ``checks`` made, ``findings`` failed or unchecked."""

    code: str
    status: Status
    checks: Count
    findings: list[Finding]


class RecordResult(Strict):
    """The record-scope rules of one record (``index`` in file order, ``line`` in the JSONL)."""

    index: Count
    id: str
    line: Annotated[int, Field(ge=1)] | None
    category: str
    status: Status
    rules: list[RuleResult]


class RuleInfo(Strict):
    """A rule of the contract and its counts per status over the records (or the dataset)."""

    code: str
    name: str
    description: str
    scope: Literal["record", "dataset"]
    needs_corpus: bool
    summary: dict[Status, Count]


class ValidationCounts(Open):
    """Counts computed from the records (never copied from the manifest)."""

    questions: Count
    per_category: dict[str, Count]
    per_split: dict[str, Count]
    gold_documents: Count
    evidence_chunks: Count
    quotes: Count


class ValidationData(Strict):
    """``data`` of the ``validation`` kind (``harness validate``; :meth:`harness.validate.report.ValidationReport.
    to_dict`): exit code 1 when a rule failed, else 0."""

    status: Status
    exit_code: Literal[0, 1]
    dataset: dict[str, Any]
    contract: str | None
    corpus: dict[str, Any] | None
    counts: ValidationCounts
    rules: list[RuleInfo]
    dataset_results: list[RuleResult]
    records: list[RecordResult]
    correction: dict[str, Any] | None
    skipped: dict[str, Any] | None
    warnings: Count


class GoldsetApplyData(Strict):
    """``data`` of the ``goldset-apply`` kind (``harness goldset apply``): whether the corrected set was written,
    where, its version, the records changed and the corrected set's validation."""

    written: bool
    out_dir: str | None
    version: str | None
    records_changed: list[str]
    exit_code: Literal[0, 1]
    validation: ValidationData


class Draw(Open):
    """One PPS (or SRS) draw of a planned gold set: the document and its selection probability."""

    draw: Count
    doc_id: str
    p: Annotated[float, Field(gt=0.0, le=1.0)]


class PlanManifest(Open):
    """The planned gold set's manifest: the corpus it is drawn from and the recorded design."""

    name: str
    version: str
    corpus_version: str
    corpus_hash: Sha256
    corpus_documents: Count
    chunker_version: str
    records_file: str
    design: dict[str, Any]


class GoldsetPlanData(Open):
    """``data`` of the ``goldset-plan`` kind (``harness goldset plan``): the drawn documents, recorded in the new
    set's manifest."""

    out_dir: str
    manifest: PlanManifest
    draws: Annotated[list[Draw], Field(min_length=1)]


class SplitPlan(Open):
    """A cluster-aware dev/test split: clusters and questions per side, per category, the imbalance (``cost``)."""

    seed: int
    dev_fraction: Prob
    cost: Annotated[float, Field(ge=0.0)]
    n_clusters: Count
    clusters: dict[str, Count]
    per_category: dict[str, dict[str, Count]]
    questions: dict[str, Count]
    replaced: Count


class GoldsetSplitData(Strict):
    """``data`` of the ``goldset-split`` kind (``harness goldset split``): ``written`` false (``out_dir`` null) when
    the split set does not meet its contract."""

    kind: Literal["goldset-split"]
    out_dir: str | None
    version: str | None
    written: bool
    plan: SplitPlan
