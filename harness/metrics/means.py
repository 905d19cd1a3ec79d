"""Means and question counts over a set of questions, typed: :func:`harness.metrics.aggregate` and its result.

These models are the run summary's own sections (``summary.json``: ``systems.<system>.<slice>.counts`` and
``.per_category``; :mod:`harness.evaluation.record` re-exports them), declared once here so that
:func:`~harness.metrics.aggregate` builds them directly and :func:`harness.evaluation.pipeline.score_results` puts
them into the summary as they are. The value types with declared ranges (:data:`Unit`, :data:`Count`,
:data:`LevelMap`) are the record's too.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Annotated, Any, Protocol, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from harness.errors import MetricError
from harness.goldset.schema import CATEGORIES
from harness.levels import Level, parse_level
from harness.metrics.relevance import Level as RankingLevel

__all__ = [
    "Aggregate",
    "CategorySummary",
    "Count",
    "Counts",
    "LevelCounts",
    "LevelMap",
    "Scored",
    "Unit",
    "aggregate_ids",
    "level_keys",
]


def level_keys(value: Any) -> Any:
    """``{"docs": x, "chunks": y}`` -> ``{"document": x, "chunk": y}`` (any spelling :func:`parse_level` accepts);
    anything but a dict unchanged."""
    if isinstance(value, dict):
        return {parse_level(k, field="level key") if isinstance(k, str) else k: v for k, v in value.items()}
    return value


Unit = Annotated[float, Field(ge=0.0, le=1.0)]
"""A metric value or mean: a proportion in [0, 1] (NaN is refused by the bounds)."""
Count = Annotated[int, Field(ge=0)]
"""A count of questions, clusters, chunks...: an integer >= 0."""
T = TypeVar("T")
LevelMap = Annotated[dict[Level, T], BeforeValidator(level_keys)]
"""A mapping keyed by ranking level (``document`` / ``chunk``; the older ``docs`` / ``chunks`` are renamed)."""


class CategorySummary(BaseModel):
    """Means per category (point estimates): ``n_questions`` of the category, ``n_evaluated`` with every ranking
    level the metrics read, ``n_missing`` without; ``metrics`` ``{id: mean in [0, 1]}`` (an id no question of the
    category has a value for is absent)."""

    model_config = ConfigDict(extra="forbid")

    n_questions: Count
    n_evaluated: Count
    n_missing: Count
    metrics: dict[str, Unit]


class LevelCounts(BaseModel):
    """Questions with / without a ranking at one level."""

    model_config = ConfigDict(extra="forbid")

    n_evaluated: Count
    n_missing: Count


class Counts(BaseModel):
    """Question counts of a set of questions (a run summary's slice).

    Attributes:
        metrics: the metric ids aggregated, in order.
        n_questions, n_evaluated, n_missing: questions; evaluated ones have every ranking level the metrics read.
        missing_qids: the missing ones, in input order.
        by_level: ``{level: LevelCounts}`` for each level the metrics read.
        undefined: ``{metric id: qids}`` scored 0 because the metric is undefined for them (no required gold
            document, no evidence chunk); only ids with some.
        omitted: ``{metric id: {reason: qids}}`` without a value (``no_quotes``, ``not_applicable``); only ids with
            some. A record written before the field existed reads as ``{}``.

    Keys a producer adds beyond these are kept verbatim (``extra="allow"``).
    """

    model_config = ConfigDict(extra="allow")

    metrics: list[str] = Field(default_factory=list)
    n_questions: Count
    n_evaluated: Count
    n_missing: Count
    missing_qids: list[str] = Field(default_factory=list)
    by_level: LevelMap[LevelCounts] = Field(default_factory=dict)
    undefined: dict[str, list[str]] = Field(default_factory=dict)
    omitted: dict[str, dict[str, list[str]]] = Field(default_factory=dict)


class Aggregate(BaseModel):
    """What :func:`harness.metrics.aggregate` returns.

    Attributes:
        overall: ``{metric id: mean in [0, 1]}`` over every question, in the order of :attr:`Counts.metrics`;
            ``None`` when no question has a value (every one omitted it).
        per_category: ``{category: CategorySummary}``, categories in the eval v4 order, then any others sorted.
        counts: :class:`Counts`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    overall: dict[str, Unit | None]
    per_category: dict[str, CategorySummary]
    counts: Counts


# --------------------------------------------------------------------------------------------------------------
# The means


class Scored(Protocol):
    """What :func:`aggregate_ids` reads of a question's result (:class:`harness.metrics.QuestionResult`)."""

    @property
    def qid(self) -> str: ...
    @property
    def category(self) -> str: ...
    @property
    def metrics(self) -> dict[str, float]: ...
    @property
    def omitted(self) -> dict[str, str]: ...
    @property
    def undefined(self) -> tuple[str, ...]: ...
    def evaluated(self, level: RankingLevel) -> bool: ...


class _Gold(Protocol):
    @property
    def qid(self) -> str: ...
    @property
    def category(self) -> str: ...


def aggregate_ids(
    results: Sequence[Scored], ids: list[str], levels: list[RankingLevel], *, gold: Iterable[_Gold] | None = None
) -> Aggregate:
    """:func:`harness.metrics.aggregate` once its ids are parsed: ``ids`` the canonical metric ids, ``levels`` the
    ranking levels they read (``docs``/``chunks``, in that order). Definitions, returns and errors: there.

    Raises:
        MetricError: see :func:`harness.metrics.aggregate`.
    """
    rows, omitted = _question_rows(results, ids, levels)
    if gold is not None:
        _add_absent(rows, gold, ids, levels)
    if not rows:
        raise MetricError("aggregate: no questions to aggregate")
    by_cat: dict[str, list[str]] = {}
    for q, row in rows.items():
        by_cat.setdefault(row[0], []).append(q)
    return Aggregate(
        overall={i: _mean(rows, i, list(rows)) for i in ids},
        per_category={c: _category(rows, ids, by_cat[c]) for c in _category_order(by_cat)},
        counts=_counts(rows, ids, levels, omitted),
    )


_Row = tuple[str, dict[str, float], dict[str, bool], tuple[str, ...]]
"""One question in :func:`aggregate_ids`: ``(category, {id: value} of the ids it has, {level: ranking given},
undefined ids)``."""


def _question_rows(
    results: Sequence[Scored], ids: list[str], levels: list[RankingLevel]
) -> tuple[dict[str, _Row], dict[str, dict[str, list[str]]]]:
    """``({qid: _Row}, {id: {omission reason: qids}})`` of ``results``.

    Raises:
        MetricError: a qid seen twice, or an id neither computed nor omitted for a question.
    """
    rows: dict[str, _Row] = {}
    omitted: dict[str, dict[str, list[str]]] = {}
    for res in results:
        if res.qid in rows:
            raise MetricError(f"aggregate: question {res.qid!r} has more than one result")
        absent = [i for i in ids if i not in res.metrics and i not in res.omitted]
        if absent:
            raise MetricError(
                f"aggregate: question {res.qid!r}: metric {absent[0]} was not computed "
                f"(computed: {', '.join(res.metrics)})"
            )
        rows[res.qid] = (
            res.category,
            {i: res.metrics[i] for i in ids if i in res.metrics},
            {lv: res.evaluated(lv) for lv in levels},
            res.undefined,
        )
        for i in ids:
            if i in res.omitted:
                omitted.setdefault(i, {}).setdefault(res.omitted[i], []).append(res.qid)
    return rows, omitted


def _add_absent(rows: dict[str, _Row], gold: Iterable[_Gold], ids: list[str], levels: list[RankingLevel]) -> None:
    """Add every question of ``gold`` without a result to ``rows`` (in gold order), scoring 0 and missing.

    Raises:
        MetricError: a result not in ``gold``, or whose category differs from the gold record's.
    """
    gold_ids: dict[str, str] = {rec.qid: rec.category for rec in gold}
    extra = [q for q in rows if q not in gold_ids]
    if extra:
        raise MetricError(f"aggregate: question {extra[0]!r} has a result but is not in the gold set")
    for q, cat in gold_ids.items():
        if q not in rows:
            rows[q] = (cat, dict.fromkeys(ids, 0.0), dict.fromkeys(levels, False), ())
        elif rows[q][0] != cat:
            raise MetricError(f"aggregate: question {q!r}: category {rows[q][0]!r} differs from gold {cat!r}")


def _mean(rows: dict[str, _Row], i: str, qids: list[str]) -> float | None:
    """``math.fsum`` mean of id ``i`` over the ``qids`` that have it; ``None`` when none has."""
    vals = [rows[q][1][i] for q in qids if i in rows[q][1]]
    return math.fsum(vals) / len(vals) if vals else None


def _category(rows: dict[str, _Row], ids: list[str], qids: list[str]) -> CategorySummary:
    """Counts and means of one category's questions (ids without a mean left out)."""
    n_evaluated = sum(1 for q in qids if all(rows[q][2].values()))
    means = {i: _mean(rows, i, qids) for i in ids}
    return CategorySummary(
        n_questions=len(qids),
        n_evaluated=n_evaluated,
        n_missing=len(qids) - n_evaluated,
        metrics={i: v for i, v in means.items() if v is not None},
    )


def _counts(
    rows: dict[str, _Row], ids: list[str], levels: list[RankingLevel], omitted: dict[str, dict[str, list[str]]]
) -> Counts:
    """The question counts of :func:`aggregate` (missing: without a ranking of some level the ids read)."""
    missing = [q for q, row in rows.items() if not all(row[2].values())]
    return Counts(
        metrics=ids,
        n_questions=len(rows),
        n_evaluated=len(rows) - len(missing),
        n_missing=len(missing),
        missing_qids=missing,
        by_level={
            parse_level(lv): LevelCounts(
                n_evaluated=sum(1 for row in rows.values() if row[2][lv]),
                n_missing=sum(1 for row in rows.values() if not row[2][lv]),
            )
            for lv in levels
        },
        undefined={i: qs for i in ids if (qs := [q for q, row in rows.items() if i in row[3]])},
        omitted=omitted,
    )


def _category_order(cats: Iterable[str]) -> list[str]:
    """Categories in the eval v4 order (:data:`harness.goldset.schema.CATEGORIES`), then any others sorted."""
    present = set(cats)
    return [c for c in CATEGORIES if c in present] + sorted(present - set(CATEGORIES))
