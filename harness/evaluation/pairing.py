"""Pairing two run records question by question: which systems to pair, the aligned metric vectors, the split.

Everything that judges runs (:mod:`harness.evaluation.compare`, :mod:`harness.evaluation.gate`,
:mod:`harness.evaluation.power`) reads per-question metric vectors through :func:`paired_values`: the two runs'
values of one metric on the same questions (sorted ids), restricted to a split of the gold set when asked, with the
clusters recorded with the *first* (baseline) run, so questions sharing gold documents are never counted as
independent trials.

Splits (``--split all|dev|test``) come from the gold set's ``split`` field as recorded in every row of
``per_question.jsonl``; ``all`` keeps every question (also those without a split).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.errors import HarnessInputError
from harness.evaluation.metric_choice import score_missing
from harness.evaluation.runs import RunRecord
from harness.levels import parse_level
from harness.metrics import MetricSpec

SPLITS = ("all", "dev", "test")
"""The values of ``--split``."""


def check_split(split: str) -> str:
    """``split`` when it is one of :data:`SPLITS`.

    Raises:
        HarnessInputError: anything else (``--split: 'train' is not one of all, dev, test``).
    """
    if split not in SPLITS:
        raise HarnessInputError(f"--split: {split!r} is not one of {', '.join(SPLITS)}")
    return split


def split_qids(run: RunRecord, split: str) -> set[str] | None:
    """The question ids of ``split`` in ``run`` (``None`` for ``all``: no restriction).

    Raises:
        HarnessInputError: an unknown split, or a split that holds no question of the run (naming the gold set's
            ``split`` field and the counts it does hold).
    """
    if check_split(split) == "all":
        return None
    by_q = {row.qid: row.split for row in run.per_question}
    got = {q for q, s in by_q.items() if s == split}
    if not got:
        counts = {s: sum(1 for v in by_q.values() if v == s) for s in ("dev", "test")}
        raise HarnessInputError(
            f"{run.path / 'per_question.jsonl'}: field split: no {split} question (the gold set has "
            f"{counts['dev']} dev, {counts['test']} test and {len(by_q) - sum(counts.values())} unsplit questions)"
        )
    return got


def pick_pairs(
    a: RunRecord,
    b: RunRecord,
    system_a: str | None,
    system_b: str | None,
    *,
    flags: tuple[str, str] = ("--baseline-system", "--candidate-system"),
) -> list[tuple[str, str]]:
    """The ``(system of a, system of b)`` pairs to compare: the named ones; within one run its first system against
    each other; one system each; else the systems both runs hold.

    Args:
        a, b: the two runs; system_a, system_b: the systems named (or ``None``).
        flags: the command-line options that name them, for the messages (``power``: ``--baseline-system``,
            ``--system``).

    Raises:
        HarnessInputError: a named system not in its run, or no pair (the message says how to choose, with
            ``flags``).
    """
    if system_a or system_b:
        sa = system_a or (a.systems[0] if len(a.systems) == 1 else None)
        sb = system_b or (b.systems[0] if len(b.systems) == 1 else None)
        if sa is None or sb is None:
            raise HarnessInputError(f"name both {flags[0]} and {flags[1]}: a run holds several systems")
        for run, s in ((a, sa), (b, sb)):
            if s not in run.systems:
                raise HarnessInputError(f"{run.path}: system {s!r} not in run (has {', '.join(run.systems)})")
        return [(sa, sb)]
    if a.path.resolve() == b.path.resolve():
        base = a.systems[0]
        return [(base, s) for s in a.systems[1:]] or [(base, base)]
    if len(a.systems) == 1 and len(b.systems) == 1:
        return [(a.systems[0], b.systems[0])]
    common = [s for s in b.systems if s in a.systems]
    if not common:
        raise HarnessInputError(f"runs share no system name: choose with {flags[0]} and {flags[1]}")
    return [(s, s) for s in common]


def level_available(run: RunRecord, system: str, metric: str) -> bool:
    """False when the run's summary says the system returned no rankings at the metric's level (e.g. a document-only
    TREC file scored by ``evaluate``); such metrics are all zeros and must not be compared."""
    whole = run.system_summary(system).get("all")
    if whole is None:
        return True
    return whole.levels.get(parse_level(MetricSpec.parse(metric).level), True)


@dataclass(frozen=True)
class PairedValues:
    """One metric of two systems on the same questions.

    Attributes:
        qids: question ids, sorted (string order), shape (N,).
        a, b: the metric per question of system a (baseline) and system b (candidate), shape (N,), in [0, 1].
        clusters: the baseline run's cluster label per question (a question without one is its own cluster).
        categories: the category per question.
        missing_a, missing_b: questions (of these N) for which the system returned no ranking at all (scored 0).
    """

    qids: list[str]
    a: np.ndarray
    b: np.ndarray
    clusters: np.ndarray
    categories: list[str]
    missing_a: int
    missing_b: int

    @property
    def diff(self) -> np.ndarray:
        """``b - a`` per question."""
        return self.b - self.a

    @property
    def n_clusters(self) -> int:
        """Number of distinct clusters."""
        return len(set(self.clusters.tolist()))

    def where(self, mask: np.ndarray) -> PairedValues:
        """The questions selected by a boolean ``mask`` of shape (N,)."""
        idx = np.flatnonzero(mask)
        return PairedValues(
            qids=[self.qids[i] for i in idx],
            a=self.a[idx],
            b=self.b[idx],
            clusters=self.clusters[idx],
            categories=[self.categories[i] for i in idx],
            missing_a=0,
            missing_b=0,
        )


def _missing(run: RunRecord, system: str, qids: list[str]) -> int:
    wanted = set(qids)
    return sum(1 for r in run.per_question if r.system == system and r.qid in wanted and r.flags.get("missing"))


def paired_values(a: RunRecord, b: RunRecord, sa: str, sb: str, metric: str, *, split: str = "all") -> PairedValues:
    """The values of ``metric`` for system ``sa`` of run ``a`` and ``sb`` of run ``b``, aligned by question id and
    restricted to ``split`` (:func:`split_qids` of the baseline ``a``). A metric a run did not score is first scored
    from its stored rankings (:func:`harness.evaluation.metric_choice.score_missing`).

    Raises:
        HarnessInputError: the two runs do not hold the same questions (of the split), a system or metric is
            absent, an unknown or empty split.
    """
    score_missing(a, [metric])  # a metric the run did not score: from its stored rankings (metric_choice)
    score_missing(b, [metric])
    va, vb = a.metric_vector(sa, metric), b.metric_vector(sb, metric)
    keep = split_qids(a, split)
    if keep is not None:
        va = {q: v for q, v in va.items() if q in keep}
        vb = {q: v for q, v in vb.items() if q in keep}
    if set(va) != set(vb):
        only_a, only_b = sorted(set(va) - set(vb)), sorted(set(vb) - set(va))
        raise HarnessInputError(
            f"runs not comparable: question ids differ for {metric} ({sa} vs {sb}; only in {a.path.name}: "
            f"{len(only_a)}, e.g. {only_a[:3]}; only in {b.path.name}: {len(only_b)}, e.g. {only_b[:3]})"
        )
    qids = sorted(va)
    labels = a.clusters()
    cats = a.categories()
    return PairedValues(
        qids=qids,
        a=np.array([va[q] for q in qids], dtype=np.float64),
        b=np.array([vb[q] for q in qids], dtype=np.float64),
        clusters=np.array([labels.get(q, q) for q in qids]),
        categories=[cats[q] for q in qids],
        missing_a=_missing(a, sa, qids),
        missing_b=_missing(b, sb, qids),
    )


def require_clusters(run: RunRecord, clusters, what: str, *, minimum: int = 2) -> None:
    """Refuse a clustered interval or plan over fewer than ``minimum`` clusters, naming the run record and its
    ``cluster`` field (the statistics layer's own refusal names its function, ``harness.stats.cr3``, not the input;
    issue 44 item 17).

    Args:
        run: the run record the cluster labels come from (the baseline of a pair).
        clusters: shape (N,), the cluster label of each question used.
        what: the values, for the message (``"the 2 questions of mrr, bm25 vs tfidf"``).

    Raises:
        HarnessInputError: fewer than ``minimum`` distinct labels.
    """
    n = len(set(np.asarray(clusters).tolist()))
    if n < minimum:
        raise HarnessInputError(
            f"{run.path}: per_question.jsonl: field cluster: {what} lie in {n} cluster{'s' if n != 1 else ''} "
            f"(clustering {run.manifest.clusters.mode}); clustered intervals and plans need at least {minimum}: add "
            "questions over other documents"
        )
