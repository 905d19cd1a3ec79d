"""The questions a candidate does worse on than its baseline, for ``harness compare`` and ``harness gate``.

A question *regresses* on a metric when the candidate's value is below the baseline's by more than
:data:`TIE_EPS` (the tie tolerance of the win/tie/loss counts). Each regression names the question and, to say what
changed in the ranking, the rank of the first gold item in each run at the metric's level (the smallest recorded
rank among the question's gold documents for a document metric, gold chunks for a chunk metric; ``None`` when no
gold item lies within the recorded depth), as ``trec_eval -q`` users read a per-query reciprocal rank.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.evaluation.pairing import PairedValues
from harness.evaluation.record import QuestionRow
from harness.evaluation.runs import RunRecord
from harness.levels import parse_level
from harness.metrics import MetricSpec

TIE_EPS = 1e-12
"""Differences within this of 0 are ties (as in the win/tie/loss counts of :mod:`harness.evaluation.compare`)."""


@dataclass(frozen=True)
class Regression:
    """One question the candidate does worse on.

    Attributes:
        qid, category: the question.
        baseline, candidate: the metric's value per side (in [0, 1]); diff: ``candidate - baseline`` (< 0).
        rank_baseline, rank_candidate: rank (>= 1) of the first gold item at the metric's level in each run, ``None``
            when none lies within the recorded depth.
        level: ``document`` or ``chunk`` (the metric's).
    """

    qid: str
    category: str
    baseline: float
    candidate: float
    diff: float
    rank_baseline: int | None
    rank_candidate: int | None
    level: str


def first_gold_rank(row: QuestionRow, level: str) -> int | None:
    """The smallest recorded rank (>= 1) of the row's gold documents (``level="document"``) or gold chunks
    (``"chunk"``); ``None`` when none was found within the recorded depth (or the question has no gold item)."""
    ranks = row.gold_doc_ranks if parse_level(level) == "document" else row.gold_chunk_ranks
    found = [r for r in ranks.values() if r is not None]
    return min(found) if found else None


def regressed_questions(
    a: RunRecord, b: RunRecord, sa: str, sb: str, metric: str, pv: PairedValues
) -> list[Regression]:
    """The questions of ``pv`` (the paired values of ``metric``, system ``sa`` of baseline ``a`` and ``sb`` of
    candidate ``b``, :func:`harness.evaluation.pairing.paired_values`) whose paired difference is below
    ``-TIE_EPS``, worst first (then by question id).

    Returns:
        A list of :class:`Regression` (empty when nothing regressed); every one of them, uncapped.
    """
    level = parse_level(MetricSpec.parse(metric).level)
    rows_a = {r.qid: r for r in a.rows(sa)}
    rows_b = {r.qid: r for r in b.rows(sb)}
    d = pv.diff
    out = [
        Regression(
            qid=q,
            category=pv.categories[i],
            baseline=float(pv.a[i]),
            candidate=float(pv.b[i]),
            diff=float(d[i]),
            rank_baseline=first_gold_rank(rows_a[q], level),
            rank_candidate=first_gold_rank(rows_b[q], level),
            level=level,
        )
        for i, q in enumerate(pv.qids)
        if d[i] < -TIE_EPS
    ]
    return sorted(out, key=lambda r: (r.diff, r.qid))
