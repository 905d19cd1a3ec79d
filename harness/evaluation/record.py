"""The run record's contract: pydantic models of ``manifest.json``, ``summary.json`` and ``per_question.jsonl``.

Schema version 3 (:data:`RUN_SCHEMA_VERSION`). Key paths every consumer relies on::

    summary.json          systems.<system>.<slice>.overall.<metric>.mean            (slice "all" = every question)
                          systems.<system>.<slice>.overall.<metric>.intervals.<method>.{lower, upper}
                          systems.<system>.<slice>.overall.<metric>.{outcome, interval{method, lo, hi},
                              evidence{design_id, coverage_min, measured, evidence_sha256}, estimand_id}
                                                                  (the interval shown, chosen when the summary is built)
    per_question.jsonl    one object per (system, question): system, qid, metrics.<metric>, rankings.{document, chunk}
    manifest.json         schema_version, run_id, goldset, corpus, systems, depths.{document, chunk}, clusters, ...,
                          content_sha256.{summary.json, per_question.jsonl, trec/<file>}   (hex sha256 of the bytes)

Declared ranges, checked wherever a record is read or written (:func:`validated`): metric values and means lie in
[0, 1]; interval bounds are numbers, finite or explicitly infinite (``Infinity`` in JSON), never NaN, with
``lower <= upper``; counts are integers >= 0; ranks >= 1; depths and cut-offs >= 1; levels in (0, 1). Ranking
levels use the one vocabulary of :mod:`harness.levels` (``document`` / ``chunk``); a level-keyed mapping accepts
the older spellings (``docs``, ``chunks``) on the way in and always writes the new ones. No record names an
absolute machine path: paths are relative to the working directory the run was made from.

The summary is built as these models by :func:`harness.evaluation.pipeline.score_results` (no dict parsed back);
its ``counts`` and ``per_category`` sections are the models :func:`harness.metrics.aggregate` returns
(:mod:`harness.metrics.means`, re-exported here with the value types ``Unit``, ``Count`` and ``LevelMap``).

Older records are upgraded in memory on read, never rewritten (:func:`upgrade`, one step per version): schema 1
(every record written before typed records, including the committed baseline; :func:`upgrade_v1`): ``docs``/
``chunks`` row keys become ``rankings.document``/``rankings.chunk``, level keys are renamed, absolute paths become
relative to the working directory; schema 2: nothing but the version. Schema 3 added only *optional fields with
defaults* (each metric entry's ``outcome``, ``interval``, ``evidence``, ``estimand_id``; each slice's ``design``),
which a record without them reads as ``None`` and :func:`harness.evaluation.choice.refresh` fills on load. That is
the rule for every later field: declared optional with a default here, it needs no schema bump. No number of an old
record changes.

Content hashes: the manifest of a record written now lists the sha256 of every other file of the record
(``content_sha256``, :class:`Manifest`); :func:`harness.evaluation.runs.load_run` verifies them, so a file edited
after harness wrote it is refused. A record without the field (every record written before it, the committed
baseline included) is read unverified with one notice line, and refused by ``gate`` and ``compare`` unless
``--allow-unhashed``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from harness.errors import HarnessInputError
from harness.levels import Level
from harness.metrics.means import CategorySummary, Count, Counts, LevelMap, Unit
from harness.metrics.means import LevelCounts as LevelCounts  # re-exported: a section of the summary
from harness.metrics.means import level_keys as _level_keys

if TYPE_CHECKING:
    from harness.stats import Interval

RUN_SCHEMA_VERSION = 3
"""Version of the run-record files written now (1: before typed records; 2: before the shown interval was recorded;
both read and upgraded, :func:`upgrade`)."""

READABLE_SCHEMA_VERSIONS = (1, 2, 3)

# --------------------------------------------------------------------------------------------------------------
# Value types with declared ranges
# --------------------------------------------------------------------------------------------------------------


def _not_nan(v: float) -> float:
    if math.isnan(v):
        raise ValueError("NaN is not a number a record may hold (finite or explicitly infinite only)")
    return v


def _relative(v: str) -> str:
    if os.path.isabs(v):
        raise ValueError(f"absolute path {v!r}: a record names paths relative to the working directory")
    return v


def _inside_record(v: str) -> str:
    parts = v.split("/")
    if not v or v.startswith("/") or "\\" in v or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{v!r} is not a file path inside the record folder (relative, '/'-separated, no '..')")
    return v


Bound = Annotated[float, AfterValidator(_not_nan)]
"""An interval bound: finite or explicitly infinite, never NaN."""
Rank = Annotated[int, Field(ge=1)]
Depth = Annotated[int, Field(ge=1)]
Fraction = Annotated[float, Field(gt=0.0, lt=1.0)]
Seconds = Annotated[float, Field(ge=0.0)]
RelPath = Annotated[str, AfterValidator(_relative)]
RecordFile = Annotated[str, AfterValidator(_inside_record)]
"""A file of the record, relative to its folder (``summary.json``, ``trec/bm25.document.run``)."""
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
"""A hex sha256 digest (64 lowercase hex digits)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Open(BaseModel):
    """A section whose producer may add keys (kept verbatim): the declared ones are typed and range-checked."""

    model_config = ConfigDict(extra="allow")


# --------------------------------------------------------------------------------------------------------------
# summary.json
# --------------------------------------------------------------------------------------------------------------


class IntervalRecord(_Strict):
    """One confidence interval of a mean (:meth:`harness.stats.Interval.to_dict`).

    ``estimate`` is the metric's mean in [0, 1] (the mean of cluster means for ``cluster_t``); ``se`` >= 0 or
    ``None`` (percentile bootstrap); ``df`` > 0 or ``None`` (normal reference); ``lower <= upper``, each finite or
    infinite; ``level`` in (0, 1); ``n`` rows and ``n_clusters`` clusters >= 0; ``extras`` is method-specific.
    """

    method: str
    estimate: Unit
    se: Annotated[float, Field(ge=0.0)] | None = None
    df: Annotated[float, Field(gt=0.0)] | None = None
    lower: Bound
    upper: Bound
    level: Fraction
    n: Count
    n_clusters: Count
    label: str = ""
    extras: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _ordered(self) -> IntervalRecord:
        if not self.lower <= self.upper:
            raise ValueError(f"lower bound {self.lower} exceeds upper bound {self.upper}")
        return self

    @property
    def bounds(self) -> tuple[float, float]:
        """``(lower, upper)``."""
        return (self.lower, self.upper)

    @classmethod
    def of(cls, interval: Interval) -> IntervalRecord:
        """The record of a computed interval (:class:`harness.stats.Interval`), through its one JSON form
        (:meth:`~harness.stats.Interval.to_dict`: numpy scalars made Python numbers, an infinite ``df`` ``None``).

        Raises:
            pydantic.ValidationError: a value outside its declared range (e.g. ``lower > upper``, NaN bounds).
        """
        return cls.model_validate(interval.to_dict())


class ShownInterval(_Strict):
    """The interval every rendering shows: ``method`` (a key of the entry's ``intervals``) and its bounds."""

    method: str
    lo: Bound
    hi: Bound


class EvidenceRef(_Strict):
    """The coverage evidence behind a shown interval: the slice's design (``design_id``,
    :func:`harness.evaluation.choice.design_id`), whether the committed evidence measured this method for it
    (``measured``) and its lowest coverage then (``coverage_min``), and the sha256 of the evidence file read."""

    design_id: str
    coverage_min: Unit | None = None
    measured: bool = False
    evidence_sha256: Sha256 | None = None


class MetricSummary(_Strict):
    """A metric over a slice: ``mean`` in [0, 1] (``None``: the system returned no rankings at the metric's
    level), ``intervals`` by method name, ``note`` saying why a mean or an interval is missing; and what a rendering
    shows, chosen when the summary is built (:mod:`harness.evaluation.choice`; ``None`` in records before schema 3
    until the loader fills them): the metric's declared ``outcome`` class, the shown ``interval``, its ``evidence``
    and the ``estimand_id`` (a key of :data:`harness.stats.design_evidence.ESTIMANDS`)."""

    mean: Unit | None
    intervals: dict[str, IntervalRecord] = Field(default_factory=dict)
    note: str | None = Field(default=None, exclude_if=lambda v: v is None)
    outcome: Literal["binary", "unit", "continuous"] | None = None
    interval: ShownInterval | None = None
    evidence: EvidenceRef | None = None
    estimand_id: str | None = None

    @property
    def shown(self) -> IntervalRecord | None:
        """The interval record every rendering shows (``interval.method``'s), ``None`` without one."""
        return None if self.interval is None else self.intervals.get(self.interval.method)


class SliceDesign(_Strict):
    """The design of a slice's questions: ``sampling`` and questions per cluster, descending."""

    sampling: str
    cluster_sizes: list[Count]


class SliceSummary(_Strict):
    """One system over one slice of questions (``all``, or e.g. ``covered``).

    Attributes:
        levels: ``{level: the system returned rankings at it}``.
        n_questions, n_clusters: sizes of the slice.
        overall: ``{metric: MetricSummary}``.
        per_category: ``{category: CategorySummary}``.
        counts: :class:`Counts`.
        flag_shares: ``{flag: share of questions carrying it}`` (e.g. ``chunk_tie_at_boundary``).
        design: the slice's :class:`SliceDesign` (``None`` before schema 3).
    """

    levels: LevelMap[bool] = Field(default_factory=dict)
    n_questions: Count
    n_clusters: Count
    overall: dict[str, MetricSummary] = Field(default_factory=dict)
    per_category: dict[str, CategorySummary] = Field(default_factory=dict)
    counts: Counts | None = None
    flag_shares: dict[str, Unit] = Field(default_factory=dict)
    design: SliceDesign | None = None

    def metric(self, metric: str) -> MetricSummary | None:
        """The metric's summary, ``None`` when absent or not available (no ranking at its level)."""
        m = self.overall.get(metric)
        return m if m is not None and m.mean is not None else None


class Summary(_Strict):
    """``summary.json``: ``systems.<system>.<slice>`` -> :class:`SliceSummary`, the metric ids in display
    order, the design's and estimand's ids (``design_id``: ``from-documents``, ``independent`` or ``pps``;
    ``estimand_id``: a key of :data:`harness.stats.design_evidence.ESTIMANDS`; absent in older records), and the run's
    own ``warnings`` (e.g. those of reading external rankings, :mod:`harness.evaluation.trec`;
    written only when there are some)."""

    schema_version: int = RUN_SCHEMA_VERSION
    systems: dict[str, dict[str, SliceSummary]] = Field(default_factory=dict)
    metric_ids: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list, exclude_if=lambda v: not v)
    design_id: str | None = Field(default=None, exclude_if=lambda v: v is None)
    estimand_id: str | None = Field(default=None, exclude_if=lambda v: v is None)


# --------------------------------------------------------------------------------------------------------------
# per_question.jsonl
# --------------------------------------------------------------------------------------------------------------


class Rankings(_Strict):
    """The rankings of one question as stored (cut at the recorded depths): ``[(id, score), ...]`` per level,
    in the project's tie order (score descending, then id ascending)."""

    document: list[tuple[str, float]] = Field(default_factory=list)
    chunk: list[tuple[str, float]] = Field(default_factory=list)

    def at(self, level: Level) -> list[tuple[str, float]]:
        """The ranking at ``level``."""
        return self.document if level == "document" else self.chunk


class QuestionRow(_Strict):
    """One line of ``per_question.jsonl``: one system on one question.

    Attributes:
        system, qid, category, split (``dev``/``test``/``None``), cluster: identity of the row.
        metrics: ``{metric id: value in [0, 1]}``.
        gold_doc_ranks / gold_chunk_ranks: ``{gold id: rank >= 1 within the recorded depth, or None}``.
        flags: retrieval and scoring flags (``chunk_tie_at_boundary``, ``missing``, ``evaluated_docs``...).
        rankings: :class:`Rankings`.
    """

    system: str
    qid: str
    category: str
    split: str | None = None
    cluster: str | None = None
    metrics: dict[str, Unit]
    gold_doc_ranks: dict[str, Rank | None] = Field(default_factory=dict)
    gold_chunk_ranks: dict[str, Rank | None] = Field(default_factory=dict)
    flags: dict[str, Any] = Field(default_factory=dict)
    rankings: Rankings = Field(default_factory=Rankings)


# --------------------------------------------------------------------------------------------------------------
# manifest.json
# --------------------------------------------------------------------------------------------------------------


class GoldsetInfo(_Open):
    """The gold set a run evaluated (``path`` relative to the working directory)."""

    name: str | None = None
    version: str | None = None
    sha256: str | None = None
    path: RelPath | None = None
    n_questions: Count | None = None
    corpus_version: str | None = None
    chunker_version: str | None = None


class CorpusInfo(_Open):
    """The corpus a run retrieved from (:class:`harness.corpus.store.CorpusManifest` plus the database path)."""

    name: str | None = None
    corpus_id: str | None = None
    corpus_hash: str | None = None
    chunker_id: str | None = None
    n_documents: Count | None = None
    n_chunks: Count | None = None
    n_words: Count | None = None
    date_min: str | None = None
    date_max: str | None = None
    chunker_params: dict[str, Any] = Field(default_factory=dict)
    source_dir: RelPath | None = None
    db: RelPath | None = None
    ingest_seconds: Seconds | None = None


class Depths(_Strict):
    """Ranking depths per level (each >= 1)."""

    document: Depth
    chunk: Depth

    @model_validator(mode="before")
    @classmethod
    def _spellings(cls, value: Any) -> Any:
        return _level_keys(value)


class ClusterInfo(_Strict):
    """How questions were clustered: ``mode``, ``n_clusters``, Satterthwaite ``df`` of the gold set (> 0 or
    ``None``), ``labels`` ``{qid: cluster}``, and a ``warning`` when df < 4."""

    mode: str | None = None
    n_clusters: Count | None = None
    df: Annotated[float, Field(gt=0.0)] | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    warning: str | None = None


class VectorCoverage(_Open):
    """How much of the corpus a partial vector index holds (``SystemSet.coverage_info``)."""

    n_indexed_chunks: Count | None = None
    n_total_chunks: Count | None = None
    chunk_fraction: Unit | None = None
    gold_documents: Count | None = None
    gold_documents_fully_indexed: Count | None = None


class Manifest(_Open):
    """``manifest.json``: what a run evaluated, with what, and how. Sections the producer adds beyond the declared
    ones are kept verbatim.

    ``content_sha256`` is ``{file of the record: hex sha256 of its bytes}`` for every file but the manifest itself
    (written by :func:`harness.evaluation.runs.write_run_record`, verified by
    :func:`harness.evaluation.runs.load_run`); ``None`` in a record written before records were hashed.
    """

    schema_version: int = RUN_SCHEMA_VERSION
    run_id: str
    created: str | None = None
    kind: str = "run"
    goldset: GoldsetInfo = Field(default_factory=GoldsetInfo)
    corpus: CorpusInfo = Field(default_factory=CorpusInfo)
    systems: list[str]
    system_configs: dict[str, dict[str, Any]] = Field(default_factory=dict)
    depths: Depths
    ks: list[Depth] = Field(default_factory=list)
    seed: int = 0
    bootstrap_reps: Count | None = None
    level: Fraction = 0.95
    clusters: ClusterInfo = Field(default_factory=ClusterInfo)
    harness_version: str | None = None
    git_commit: str | None = None
    libraries: dict[str, str | None] = Field(default_factory=dict)
    coverage: VectorCoverage | None = None
    timings_s: dict[str, Seconds] = Field(default_factory=dict)
    index_bytes: dict[str, Count] = Field(default_factory=dict)
    rankings_file: RelPath | None = None
    content_sha256: dict[RecordFile, Sha256] | None = None

    @property
    def chosen_metrics(self) -> list[str]:
        """The metric ids the run was made with (``run``/``evaluate --metrics``; ``[]`` without)."""
        return list((self.model_extra or {}).get("metrics") or [])

    @model_validator(mode="after")
    def _known_version(self) -> Manifest:
        if self.schema_version != RUN_SCHEMA_VERSION:
            raise ValueError(f"schema_version {self.schema_version} (this harness writes {RUN_SCHEMA_VERSION})")
        return self


# --------------------------------------------------------------------------------------------------------------
# Portability, upgrade, located validation
# --------------------------------------------------------------------------------------------------------------

#: ``(section, key)`` of every path a manifest holds.
PATH_FIELDS = (("goldset", "path"), ("corpus", "source_dir"), ("corpus", "db"), (None, "rankings_file"))


def portable_path(value: str | os.PathLike | None) -> str | None:
    """``value`` relative to the working directory (``os.path.relpath``; may climb with ``..``); ``None`` stays."""
    if value is None:
        return None
    text = os.fspath(value)
    return os.path.relpath(text) if os.path.isabs(text) else text


def portable_manifest(raw: dict) -> dict:
    """A copy of a raw manifest dict whose :data:`PATH_FIELDS` are relative (see :func:`portable_path`)."""
    out = dict(raw)
    for section, key in PATH_FIELDS:
        if section is None:
            if out.get(key) is not None:
                out[key] = portable_path(out[key])
        elif isinstance(out.get(section), dict) and out[section].get(key) is not None:
            out[section] = {**out[section], key: portable_path(out[section][key])}
    return out


def upgrade_v1(manifest: dict, summary: dict, rows: list[dict]) -> tuple[dict, dict, list[dict]]:
    """Schema 1 -> 2 (pure; inputs are not modified): rows' ``docs``/``chunks`` -> ``rankings.document``/
    ``rankings.chunk``; absolute paths -> relative (:func:`portable_manifest`); ``schema_version`` 2 in the manifest
    and the summary. Level keys (``levels``, ``by_level``, ``depths``) are renamed by the models themselves."""
    man = portable_manifest(manifest)
    man["schema_version"] = 2
    summ = {**summary, "schema_version": 2}
    out_rows = []
    for row in rows:
        new = {k: v for k, v in row.items() if k not in ("docs", "chunks")}
        if "docs" in row or "chunks" in row:
            new["rankings"] = {"document": row.get("docs") or [], "chunk": row.get("chunks") or []}
        out_rows.append(new)
    return man, summ, out_rows


def upgrade(version: int, manifest: dict, summary: dict, rows: list[dict]) -> tuple[dict, dict, list[dict]]:
    """Raw record files of schema ``version`` (one of :data:`READABLE_SCHEMA_VERSIONS`) as schema
    :data:`RUN_SCHEMA_VERSION`, in memory (pure): :func:`upgrade_v1`, then 2 -> 3, which sets the version only (the
    fields schema 3 added are optional with defaults; module docstring)."""
    if version == 1:
        manifest, summary, rows = upgrade_v1(manifest, summary, rows)
    if version in (1, 2):
        manifest = {**manifest, "schema_version": 3}
        summary = {**summary, "schema_version": 3}
    return manifest, summary, rows


def _loc_text(loc: Sequence[str | int]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _error_line(exc: ValidationError) -> tuple[tuple, str]:
    """``(location, "field a.b[0].c: message (got value)")`` for the first error of ``exc`` (plus a count of the
    others)."""
    errs = exc.errors()
    first = errs[0]
    loc = tuple(p for p in first["loc"] if p != "[key]")
    got = first.get("input")
    shown = f" (got {got!r})" if isinstance(got, (int, float, str, bool)) or got is None else ""
    more = f" (+{len(errs) - 1} more)" if len(errs) > 1 else ""
    msg = first["msg"].removeprefix("Value error, ")
    return loc, f"field {_loc_text(loc) or '<record>'}: {msg}{shown}{more}"


M = TypeVar("M", bound=BaseModel)


def validated(model: type[M], obj: Any, where: str | Path, *, line: int | None = None, text: str | None = None) -> M:
    """``model.model_validate(obj)``, refusing a value outside its declared range with one located line.

    Args:
        model: the record model.
        obj: the parsed JSON.
        where: the file.
        line: the file's line (JSONL), or ``None``.
        text: the file's text, to find the line of the offending value in a JSON document.

    Raises:
        HarnessInputError: ``<file>:<line>: field <path>: <message> (got <value>)`` (exit 2).
    """
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        loc, msg = _error_line(exc)
        if line is None and text is not None:
            line = json_value_line(text, loc)
        raise HarnessInputError(f"{where}{'' if line is None else f':{line}'}: {msg}") from None


def _ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def json_value_line(text: str, loc: Sequence[str | int]) -> int | None:
    """1-based line of ``text`` (one JSON document) where the value at path ``loc`` begins; the deepest existing
    prefix of ``loc`` when the full path is not in the text (a missing field: its parent); ``None`` if unparsable."""
    dec = json.JSONDecoder()
    try:
        i = _ws(text, 0)
        for key in loc:
            if i >= len(text):
                break
            if text[i] == "{" and isinstance(key, str):
                j = _ws(text, i + 1)
                found = None
                while j < len(text) and text[j] != "}":
                    k, j = dec.raw_decode(text, j)
                    j = _ws(text, _ws(text, j) + 1)  # past ':'
                    if k == key:
                        found = j
                        break
                    _, j = dec.raw_decode(text, j)
                    j = _ws(text, j)
                    if j < len(text) and text[j] == ",":
                        j = _ws(text, j + 1)
                if found is None:
                    break
                i = found
            elif text[i] == "[" and isinstance(key, int):
                j = _ws(text, i + 1)
                for _ in range(key):
                    _, j = dec.raw_decode(text, j)
                    j = _ws(text, _ws(text, j) + 1)  # past ','
                i = j
            else:
                break
    except (json.JSONDecodeError, IndexError):
        return None
    return text.count("\n", 0, i) + 1
