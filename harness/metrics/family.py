"""The metric registry's entry type: :class:`MetricFamily` (one per family of :data:`harness.metrics.METRICS`), the one
declaration of a metric: how it is computed, its outcome class and what ``docs/metrics.md`` says about it
(:class:`MetricDoc`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from harness.metrics.relevance import Level

__all__ = ["OUTCOMES", "MetricDoc", "MetricFamily", "Outcome"]

Outcome = Literal["binary", "unit", "continuous"]
OUTCOMES: tuple[Outcome, ...] = ("binary", "unit", "continuous")
"""Outcome classes (nested): ``binary`` (every per-question value 0 or 1: ``hit@k``), ``unit`` (values in [0, 1]:
``mrr``), ``continuous`` (any real value). The class picks the interval a run shows
(:mod:`harness.stats.shown`)."""


@dataclass(frozen=True)
class MetricDoc:
    """What ``docs/metrics.md`` says about one family (:mod:`harness.metrics.catalog`).

    Attributes:
        formula: the definition, with rank r counted from 1 in the canonical ranking cut at the depth (Markdown).
        alternatives: how gold grades and ``alternatives`` enter it.
        no_gold: its value for a question without gold (at its level).
        trec_eval, ir_measures, ranx: the name of the same measure in each tool (``-`` when none).
        difference: any documented difference from those tools (``none``: the same value on the exports).
    """

    formula: str
    alternatives: str
    no_gold: str
    trec_eval: str
    ir_measures: str
    ranx: str
    difference: str = "none: equal per question on the run record's exports (tests/test_standard_metrics.py)"


@dataclass(frozen=True)
class MetricFamily:
    """One metric family of the registry.

    Attributes:
        name: the family name (the id before ``@``): letters, ``_`` and ``.`` (``recall``, ``AP``, ``chunk.AP``).
        level: ``"docs"`` or ``"chunks"``: the ranking it reads, and so the judgement it is given.
        compute: ``compute(judgement, k) -> float in [0, 1]``; the judgement is a
            :class:`~harness.metrics.relevance.DocumentJudgement` (docs) or
            :class:`~harness.metrics.relevance.ChunkJudgement` (chunks) with an existing ranking; ``k`` is the
            cut-off after clamping to the corpus size, ``None`` for families without ``@k``.
        takes_k: whether ids carry a cut-off (``recall@10``) or not (``mrr``: the depth is its cut-off).
        undefined: ``undefined(judgement) -> bool``: the value is set by convention for this record (listed in
            :attr:`QuestionResult.undefined`); ``None``: always defined.
        summary: whether run summaries include the family (:func:`summary_metric_ids`).
        summary_ks: the summarised cut-offs when they are fixed (``ndcg``: 10); ``None``: the run's ks.
        unit: the suffix of the cut-off in ids: ``""`` for a rank cut-off (``recall@10``), ``"w"`` for a budget
            in words (``evidence_recall@1000w``); a unit family is not bounded by the ranking depth nor clamped
            to the corpus size. The registry key of a family is :attr:`key`.
        omitted: ``omitted(judgement) -> reason | None``: the question gets *no value* (the reason is recorded in
            :attr:`QuestionResult.omitted`; ``"not_applicable"`` or an exclusion such as ``"no_quotes"``) and means
            run over the other questions; ``None``: never omitted.
        cross_chunker: whether values under two chunkers are comparable (false for the chunk-count families).
        optional_k: with ``takes_k``: the id may also come without a cut-off (``AP``, ``RR``, ``nDCG``: the
            ranking depth is then the cut-off; ``k`` is ``None`` in ``compute``).
        clamps: whether a cut-off above the corpus size is clamped to it (and recorded); false for the ir_measures
            families, which keep trec_eval's ``k`` (``P@k`` divides by k).
        outcome: the outcome class of its per-question values (:data:`OUTCOMES`; keyword, required).
        doc: its documentation (:class:`MetricDoc`; keyword, required).

    Raises:
        ValueError: an outcome outside :data:`OUTCOMES`.
    """

    name: str
    level: Level
    compute: Callable[[Any, int | None], float]
    takes_k: bool = False
    undefined: Callable[[Any], bool] | None = None
    summary: bool = True
    summary_ks: tuple[int, ...] | None = None
    unit: str = ""
    omitted: Callable[[Any], str | None] | None = None
    cross_chunker: bool = True
    optional_k: bool = False
    clamps: bool = True
    outcome: Outcome = field(kw_only=True)
    doc: MetricDoc = field(kw_only=True)

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"metric family {self.name!r}: outcome {self.outcome!r} is none of {', '.join(OUTCOMES)}")

    @property
    def key(self) -> str:
        """The registry key: ``name``, or ``name@<unit>`` for a unit family (``evidence_recall@w``)."""
        return f"{self.name}@{self.unit}" if self.unit else self.name

    @property
    def description(self) -> str:
        """The first line of the compute function's docstring."""
        return (self.compute.__doc__ or self.name).strip().splitlines()[0]
