"""Pydantic models of the ``data`` of each ``--format json`` envelope whose data come from a dataclass's
``to_dict()`` or a plain dict (comparison, gate, sweep, sweep-multi, known-item, coverage); the run's data is the
run record's own :class:`harness.evaluation.record.Summary` (:mod:`harness.schemas`).

The models describe what the verbs write (:data:`harness.report.formats.KINDS`), they do not produce it: every key
a verb always writes is required and typed, with its range where one is known (probabilities and levels in [0, 1],
counts >= 0, decisions and exit codes from their closed sets). Sections a later version may extend accept extra keys
(``extra="allow"``), so a schema rejects a missing or mistyped field, not a new one. Numbers may be ``NaN`` or
``Infinity`` (written as in the run record's files: ``NaN``, ``Infinity``), which JSON Schema's ``number`` accepts once
parsed by Python's :mod:`json`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Prob = Annotated[float, Field(ge=0.0, le=1.0)]
"""A probability, a share or a level, in [0, 1]."""
Count = Annotated[int, Field(ge=0)]
"""A count (questions, clusters, documents), >= 0."""
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
Decision = Literal["PASS", "FAIL", "INCONCLUSIVE"]


class Open(BaseModel):
    """A section whose producer may add keys: the declared ones are required (unless defaulted) and typed."""

    model_config = ConfigDict(extra="allow")


class Strict(BaseModel):
    """A section with a closed set of keys."""

    model_config = ConfigDict(extra="forbid")


class Sides(Strict):
    """``{"lower": bool, "upper": bool}``."""

    lower: bool
    upper: bool


class IntervalFlags(Strict):
    """The ``flags`` of every interval (:func:`harness.evaluation.bounds.interval_flags`)."""

    degenerate: bool
    clipped: Sides
    infinite: Sides


class Interval(Open):
    """An interval as the verbs write it (:meth:`harness.stats.Interval.to_dict` plus ``flags``); bounds are
    ``Infinity`` when unbounded, ``null`` only where a verb could not estimate it."""

    method: str
    lower: float | None
    upper: float | None
    flags: IntervalFlags
    level: Prob | None = None
    n: Count | None = None
    n_clusters: Count | None = None


class Change(Open):
    """One difference between the two runs' settings (``changes``: :mod:`harness.evaluation.changes`)."""

    field: str
    baseline: Any
    candidate: Any
    scope: str


class PairedEvidence(Open):
    """The measured coverage of a paired interval method for the runs' design
    (:func:`harness.stats.methods.paired_evidence_json`)."""

    estimand: str
    method: str
    outcome: str
    measured: bool
    min: Prob | None
    max: Prob | None
    text: str


class WinsTies(Strict):
    """Questions or clusters where B beat, tied or lost to A (``n`` for clusters)."""

    wins: Count
    ties: Count
    losses: Count
    n: Count | None = None


class CategoryDiff(Open):
    """A paired difference within a question category."""

    n: Count
    diff: float | None
    wins: Count
    ties: Count
    losses: Count
    interval: Interval | None


class Comparison(Open):
    """One system pair and metric of ``harness compare`` (:class:`harness.evaluation.compare.MetricComparison`)."""

    system_a: str
    system_b: str
    metric: str
    mean_a: float | None
    mean_b: float | None
    diff: float | None
    interval: Interval | None
    p_randomization: Prob | None
    p_holm: Prob | None
    questions: WinsTies
    clusters: WinsTies
    per_category: dict[str, CategoryDiff]


class ComparisonData(Open):
    """``data`` of the ``comparison`` kind (``harness compare``; :meth:`ComparisonReport.to_dict`)."""

    run_a: str
    run_b: str
    split: str
    method: str
    method_label: str
    coverage_evidence: PairedEvidence
    level: Prob
    clustering: dict[str, Any]
    comparisons: list[Comparison]
    notes: list[str]
    warnings: list[str]
    changes: list[Change]


class GoldsetRef(Open):
    """The gold set a verb read: ``name``, ``version``, ``sha256``."""

    name: str | None
    version: str | None
    sha256: str | None


class GateCheck(Open):
    """One check of the gate (:class:`harness.evaluation.gate.GateCheck`): a metric overall or in a category."""

    name: str
    kind: str
    metric: str | None
    category: str | None
    margin: float | None
    decision: Decision
    reason: str
    mean_baseline: float | None
    mean_candidate: float | None
    diff: float | None
    lower: float | None
    upper: float | None
    se: Annotated[float, Field(ge=0.0)] | None
    df: Annotated[float, Field(gt=0.0)] | None
    minimum_detectable_difference: float | None
    clusters_needed: Count | None
    n_questions: Count
    n_clusters: Count
    not_estimable: str | None
    interval: Interval | None
    warnings: list[str]
    regressions: list[Any]
    flags: dict[str, Any]


class MissingQuestions(Strict):
    """Questions without a ranking on each side."""

    baseline: Count
    candidate: Count


class GateData(Open):
    """``data`` of the ``gate`` kind (``harness gate``; :meth:`harness.evaluation.gate.GateVerdict.to_dict`)."""

    decision: Decision
    exit_code: Literal[0, 1, 3]
    reason: str
    on_inconclusive: str | None
    alpha: Prob
    level: Prob
    method: str
    method_label: str
    baseline: str
    candidate: str
    system_baseline: str
    system_candidate: str
    split: str
    goldset: GoldsetRef
    harness_version: str
    missing_questions: MissingQuestions
    n_questions: Count
    n_clusters: Count
    checks: Annotated[list[GateCheck], Field(min_length=1)]
    combination: str
    warnings: list[str]
    report_url: str | None
    changes: list[Change]
    coverage_evidence: PairedEvidence


class SweepTest(Open):
    """The chosen setting (and each input alone) on the test split, on one metric."""

    metric: str
    method: str
    chosen: dict[str, Any]
    inputs: dict[str, Any]


class SweepData(Open):
    """``data`` of the ``sweep`` kind (``harness sweep --level``; :meth:`harness.evaluation.sweep.SweepResult.to_dict`):
    one fusion method, its dev curve in full."""

    kind: Literal["sweep"]
    run_id: str
    run_path: str
    goldset: GoldsetRef
    metric: str
    level: Literal["document", "chunk"]
    depth: Annotated[int, Field(ge=1)]
    fusion: str
    inputs: list[str]
    param: str | None
    formula: str
    n_settings: Annotated[int, Field(ge=1)]
    dev_curve: list[dict[str, Any]]
    chosen_value: float | None
    chosen_system: str
    dev_best: float | None
    dev_inputs: dict[str, Any]
    test: list[dict[str, Any]]
    n_dev: Count
    n_test: Count
    n_unsplit: Count
    missing: dict[str, Any]
    method: str
    paired_method: str
    interval_level: Prob
    tie_rule: str
    note: str
    warnings: list[str]


class SweepMethod(Open):
    """One fusion method of a multi-metric sweep: its settings, the dev choice and its test figures."""

    fusion: str
    param: str | None
    settings: list[str]
    grid: list[Any]
    dev: dict[str, Any]
    excluded: list[Any]
    dev_intervals: list[Any]
    test: dict[str, Any]
    chosen_system: str
    chosen_value: float | None
    dev_best: float | None
    formula: str


class SweepMultiData(Open):
    """``data`` of the ``sweep-multi`` kind (``harness sweep``; :mod:`harness.evaluation.sweep_multi`)."""

    kind: Literal["sweep-multi"]
    run_id: str
    run_path: str
    goldset: GoldsetRef
    metric: str
    inputs: list[str]
    constraints: list[Any]
    methods: Annotated[list[SweepMethod], Field(min_length=1)]
    n_settings: Annotated[int, Field(ge=1)]
    chosen: str
    chosen_method: str
    excluded: list[Any]
    dev_inputs: dict[str, dict[str, float | None]]
    test: list[SweepTest]
    tradeoffs: list[Any]
    n_dev: Count
    n_test: Count
    n_unsplit: Count
    n_test_clusters: Count
    method: str
    paired_method: str
    interval_level: Prob
    note: str
    warnings: list[str]


class KnownItemConfig(Open):
    """The known-item study's settings: chunker, analyzer, systems, depths."""

    chunker_id: str
    chunker_params: dict[str, Any]
    analyzer: dict[str, Any]
    systems: Annotated[list[str], Field(min_length=1)]
    system_options: dict[str, dict[str, Any]]
    chunk_depth: Annotated[int, Field(ge=1)]


class KnownItemCounts(Open):
    """Documents, chunks and queries of the study."""

    documents_in_corpus: Count
    chunks: Count
    queries: Count
    documents: Count


class KnownItemSystem(Open):
    """One system's known-item results (hit@1 over chunk-queries; documents as clusters)."""

    system: str
    queries: Count
    documents: Count
    hits: Count
    micro_hit1: Prob | None
    macro_hit1: Prob | None
    mrr_first_same_doc: Prob | None
    median_rank: float | None
    empty_queries: Count
    per_document: dict[str, Any]
    diagnostics: dict[str, Any]


class KnownItemPaired(Open):
    """A paired difference between two systems (``"a vs b"``) on the same chunk-queries."""

    queries: Count
    documents: Count
    micro_diff: float | None
    micro_ci: Annotated[list[float | None], Field(min_length=2, max_length=2)]
    macro_diff: float | None
    macro_ci: Annotated[list[float | None], Field(min_length=2, max_length=2)]
    both_hit: Count
    only_a: Count
    only_b: Count
    neither: Count
    level: Prob
    method: str


class KnownItemData(Open):
    """``data`` of the ``known-item`` kind (``harness known-item``; its ``summary.json``)."""

    corpus_id: str
    corpus_hash: str
    corpus_dir: str
    config: KnownItemConfig
    counts: KnownItemCounts
    timing: dict[str, float]
    systems: dict[str, KnownItemSystem]
    paired: dict[str, KnownItemPaired]
    published: dict[str, Any]
    analyzer_notes: list[str]
    warnings: list[str]
    content_sha256: dict[str, Sha256]


class CoverageRow(Open):
    """One interval method's measured coverage in one design and sample size."""

    method: str
    coverage: Prob | None
    mc_margin: Annotated[float, Field(ge=0.0)] | None
    mean_width: float | None
    default: bool


class CoverageDesign(Open):
    """One design (``srs``, ``pps``, ...) at one sample size ``K`` (documents per sample)."""

    design: str
    K: Annotated[int, Field(ge=1)]
    reps: Annotated[int, Field(ge=1)]
    rows: dict[str, CoverageRow]


class CoveragePopulation(Open):
    """The population the samples are drawn from (a known-item study's per-document outcomes, or a run's)."""

    label: str
    outcome: str
    paired: bool
    documents: Count
    queries: Count


class CoverageConfig(Open):
    """The study's settings: replications, sample sizes, bootstrap replicates, seed, level."""

    reps: Annotated[int, Field(ge=1)]
    K: Annotated[list[Annotated[int, Field(ge=1)]], Field(min_length=1)]
    B: Annotated[int, Field(ge=1)]
    seed: int
    level: Prob


class CoverageData(Open):
    """``data`` of the ``coverage`` kind (``harness coverage --population``; its ``coverage.json`` and ``files``)."""

    population: CoveragePopulation
    config: CoverageConfig
    seconds: Annotated[float, Field(ge=0.0)]
    designs: list[CoverageDesign]
    files: list[str]


class CoverageStudy(Open):
    """One population's coverage study inside a suite (the ``coverage`` kind's data, without ``files``)."""

    population: CoveragePopulation
    config: CoverageConfig
    designs: list[CoverageDesign]


class SuiteChoice(Open):
    """The default-method rule's choice for one outcome class over every population of a suite; ``chosen``
    ``null`` where no method meets the rule."""

    outcome: str
    chosen: str | None
    current: str | None
    meets_target: bool
    populations: list[str]
    methods: list[dict[str, Any]]


class CoverageSuiteData(Open):
    """``data`` of the ``coverage-suite`` kind (``harness coverage`` with several populations or
    ``--write-evidence``; :mod:`harness.studies.coverage.suite`)."""

    config: CoverageConfig
    seconds: Annotated[float, Field(ge=0.0)]
    rule: str
    defaults: dict[str, str | None]
    choice: dict[str, SuiteChoice]
    populations: Annotated[list[CoverageStudy], Field(min_length=1)]
    files: list[str]


class DesignMethod(Open):
    """One interval method's coverage for the run's own design, over the populations simulated."""

    method: str
    coverage: Prob | None
    mc_margin: Annotated[float, Field(ge=0.0)] | None
    default: bool


class DesignOutcome(Open):
    """The rule's default for one outcome class at the run's design: ``default`` ``null`` where no method reaches
    the threshold."""

    default: str | None
    coverage: Prob | None
    meets_target: bool
    populations: list[str]
    methods: list[DesignMethod]


class DesignPopulation(Open):
    """One population simulated under the run's design: the measured coverage of each method (``rows``)."""

    label: str
    classes: list[str]
    rows: dict[str, dict[str, Any]]


class CoverageDesignData(Open):
    """``data`` of the ``coverage-design`` kind (``harness coverage --run RUN``;
    :mod:`harness.studies.coverage.goldset_run`): coverage simulated at the run's own design."""

    design: dict[str, Any]
    config: dict[str, Any]
    rule: str
    threshold: Prob
    width_limit: Annotated[float, Field(gt=0.0)]
    seconds: Annotated[float, Field(ge=0.0)]
    outcomes: dict[str, DesignOutcome]
    populations: list[DesignPopulation]
    files: list[str]


class SensitivityRow(Open):
    """One chunk size and system of the known-item chunk-size sensitivity (``NaN`` where a diagnostic is undefined,
    e.g. the ICC when every document's hit@1 is the same)."""

    chunk_words: Annotated[int, Field(ge=1)]
    system: str
    queries: Count
    documents: Count
    micro_hit1: Prob | None
    macro_hit1: Prob | None
    icc: float | None
    deff: float | None


class KnownItemSensitivityData(Strict):
    """``data`` of the ``known-item-sensitivity`` kind (``harness known-item --chunk-words A,B,...``)."""

    rows: Annotated[list[SensitivityRow], Field(min_length=1)]


class KnownItemStudyData(Strict):
    """``data`` of the ``known-item-study`` kind (``harness known-item --coverage``): the known-item summary and its
    coverage study."""

    known_item: KnownItemData
    coverage: CoverageData
