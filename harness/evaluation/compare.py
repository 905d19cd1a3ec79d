"""Paired comparisons between systems and the non-inferiority gate, from run records only (power planning:
:mod:`harness.evaluation.power`).

All of them read per-question metric vectors from run records (:mod:`harness.evaluation.runs`), align them by
question id and use the clusters recorded with the baseline run (connected components of questions sharing gold
documents by default), so questions that share documents are not counted as independent trials.

This module computes every number the report shows about runs beyond the recorded summary:
:func:`category_intervals` (CR2 per category) and :func:`paired_table` (paired differences against a baseline with
the gate's one-sided bound, :func:`noninferiority_bound`, and Holm across the candidates), so ``harness report``
prints exactly what ``harness compare`` and ``harness gate`` print.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from scipy import stats as sps

from harness.errors import HarnessInputError
from harness.evaluation.runs import RunRecord, check_comparable, load_run
from harness.goldset.schema import CATEGORIES
from harness.io import atomic_write_json
from harness.levels import parse_level
from harness.metrics import METRIC_SETS, MetricSpec
from harness.stats import cr2, default_method, holm, minimum_detectable_difference, paired, randomization_test

DEFAULT_COMPARE_METRICS = METRIC_SETS["compare"]


def pick_pairs(a: RunRecord, b: RunRecord, system_a: str | None, system_b: str | None) -> list[tuple[str, str]]:
    """The ``(system of a, system of b)`` pairs to compare: the named ones; within one run its first system against
    each other; one system each; else the systems both runs hold.

    Raises:
        HarnessInputError: a named system not in its run, or no pair (the message says how to choose).
    """
    if system_a or system_b:
        sa = system_a or (a.systems[0] if len(a.systems) == 1 else None)
        sb = system_b or (b.systems[0] if len(b.systems) == 1 else None)
        if sa is None or sb is None:
            raise HarnessInputError("name both --system-a and --system-b: a run holds several systems")
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
        raise HarnessInputError("runs share no system name: choose with --system-a and --system-b")
    return [(s, s) for s in common]


def aligned(a: RunRecord, b: RunRecord, sa: str, sb: str, metric: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``(qids sorted, values of sa in a, values of sb in b)`` of one metric, aligned by question id.

    Raises:
        HarnessInputError: the two runs do not hold the same questions, or a system or metric is absent.
    """
    va, vb = a.metric_vector(sa, metric), b.metric_vector(sb, metric)
    if set(va) != set(vb):
        raise HarnessInputError(f"runs not comparable: question ids differ for {metric} ({sa} vs {sb})")
    qids = sorted(va)
    return qids, np.array([va[q] for q in qids]), np.array([vb[q] for q in qids])


def _level_available(run: RunRecord, system: str, metric: str) -> bool:
    """False when the run's summary says the system returned no rankings at the metric's level (e.g. a document-only
    TREC file scored by ``evaluate``); such metrics are all zeros and must not be compared."""
    whole = run.system_summary(system).get("all")
    if whole is None:
        return True
    return whole.levels.get(parse_level(MetricSpec.parse(metric).level), True)


def _wtl(diff: np.ndarray, eps: float = 1e-12) -> dict[str, int]:
    return {
        "wins": int((diff > eps).sum()),
        "ties": int((np.abs(diff) <= eps).sum()),
        "losses": int((diff < -eps).sum()),
    }


@dataclass
class MetricComparison:
    """Paired difference B - A for one metric and one pair of systems."""

    system_a: str
    system_b: str
    metric: str
    mean_a: float
    mean_b: float
    diff: float
    interval: dict
    p_randomization: float
    p_holm: float | None
    questions: dict
    clusters: dict
    per_category: dict = field(default_factory=dict)


@dataclass
class ComparisonReport:
    """Everything ``harness compare`` prints."""

    run_a: str
    run_b: str
    clustering: dict
    comparisons: list[MetricComparison]
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-serialisable form."""
        return {
            "run_a": self.run_a,
            "run_b": self.run_b,
            "clustering": self.clustering,
            "comparisons": [asdict(c) for c in self.comparisons],
            "notes": list(self.notes),
        }


def compare_runs(
    run_a: str | Path | RunRecord,
    run_b: str | Path | RunRecord,
    *,
    metrics: tuple[str, ...] = DEFAULT_COMPARE_METRICS,
    system_a: str | None = None,
    system_b: str | None = None,
    level: float = 0.95,
    reps: int = 10000,
    seed: int = 0,
) -> ComparisonReport:
    """Paired differences B - A with clustered intervals and randomisation tests.

    Args:
        run_a, run_b: run record folders (or loaded records). They may be the same folder, in which case its
            first system is compared with each of the others.
        metrics: metric ids.
        system_a, system_b: systems to compare when a run holds several.
        level: interval level.
        reps: randomisation-test sign flips (exact enumeration when 2**clusters <= reps).
        seed: for the randomisation test.

    Returns:
        A :class:`ComparisonReport`: per (pair, metric) the CR2 interval of the mean paired difference
        (Satterthwaite df), the cluster-level paired randomisation p-value (sign flips of cluster sums), Holm-adjusted
        p-values across pairs for each metric when several pairs are compared, win/tie/loss counts at question and
        cluster level, and the same per category.

    Raises:
        IncomparableError: different gold-set sha256, corpus hash, chunker id or depths (exit 2).
        HarnessInputError: unknown system or metric.
    """
    a = run_a if isinstance(run_a, RunRecord) else load_run(run_a)
    b = run_b if isinstance(run_b, RunRecord) else load_run(run_b)
    check_comparable(a, b)
    pairs = pick_pairs(a, b, system_a, system_b)
    labels = a.clusters()
    cats = a.categories()
    out: list[MetricComparison] = []
    skipped: list[str] = []
    for metric in metrics:
        group: list[MetricComparison] = []
        for sa, sb in pairs:
            if not (_level_available(a, sa, metric) and _level_available(b, sb, metric)):
                skipped.append(f"{metric} ({sa} vs {sb}): one side has no rankings at this level")
                continue
            qids, ya, yb = aligned(a, b, sa, sb, metric)
            cl = np.array([labels.get(q, q) for q in qids])
            iv = paired(ya, yb, cl, method=default_method("paired"), level=level)
            d = yb - ya
            p = randomization_test(d, cl, reps=reps, seed=seed)
            uniq = sorted(set(cl))
            cdiff = np.array([d[cl == c].mean() for c in uniq])
            per_cat = {}
            for c in [c for c in CATEGORIES if c in set(cats.values())] + sorted(set(cats.values()) - set(CATEGORIES)):
                m = np.array([cats[q] == c for q in qids])
                if not m.any():
                    continue
                entry = {"n": int(m.sum()), "diff": float(d[m].mean()), **_wtl(d[m])}
                if len(set(cl[m])) >= 2:
                    civ = paired(ya[m], yb[m], cl[m], method=default_method("paired"), level=level)
                    entry["interval"] = {"lower": civ.lower, "upper": civ.upper, "df": civ.df}
                per_cat[c] = entry
            group.append(
                MetricComparison(
                    system_a=sa,
                    system_b=sb,
                    metric=metric,
                    mean_a=float(ya.mean()),
                    mean_b=float(yb.mean()),
                    diff=float(d.mean()),
                    interval=iv.to_dict(),
                    p_randomization=float(p),
                    p_holm=None,
                    questions=_wtl(d),
                    clusters={"n": len(uniq), **_wtl(cdiff)},
                    per_category=per_cat,
                )
            )
        if len(group) > 1:
            for c, ph in zip(group, holm([c.p_randomization for c in group]), strict=True):
                c.p_holm = float(ph)
        out.extend(group)
    notes = [f"not compared: {x}" for x in skipped]
    others_a = [x for x in a.systems if x not in {p[0] for p in pairs}]
    others_b = [x for x in b.systems if x not in {p[1] for p in pairs}]
    if (others_a or others_b) and not (system_a or system_b):
        notes.append(
            "compared "
            + ", ".join(f"{x} (A) with {y} (B)" for x, y in pairs)
            + f"; not compared: A {others_a or '-'}, B {others_b or '-'} (choose with --system-a / --system-b)"
        )
    if len(pairs) == 1:
        notes.append("one pair compared, so no Holm adjustment")
    return ComparisonReport(
        run_a=str(a.path), run_b=str(b.path), clustering=_cluster_info(a), comparisons=out, notes=notes
    )


def _cluster_info(run: RunRecord) -> dict:
    c = run.manifest.clusters
    return {"mode": c.mode, "n_clusters": c.n_clusters}


def noninferiority_bound(estimate: float, se: float | None, df: float | None, alpha: float) -> float:
    """The gate's one-sided ``1 - alpha`` lower confidence bound ``estimate - t_{1-alpha, df} * se`` of a mean paired
    difference (CR2 ``se``, Satterthwaite ``df``; Bell & McCaffrey 2002, Pustejovsky & Tipton 2018).

    A missing ``se`` counts as 0 and a missing ``df`` as 1 (the widest t, so the most conservative bound). Units:
    those of the metric; ``0 < alpha < 0.5``.
    """
    t = float(sps.t.ppf(1 - alpha, float(df or 1.0)))
    return float(estimate - t * float(se or 0.0))


@dataclass(frozen=True)
class CategoryInterval:
    """The mean of one metric over one category's questions, with its CR2 interval.

    Attributes:
        category, metric: what is averaged.
        n, n_clusters: questions and clusters of the category.
        mean: ``math.fsum(values) / n`` (metric units, 0-1).
        interval: CR2 ``(lower, upper)`` at the requested level over the category's questions and clusters;
            ``None`` with fewer than 2 clusters or when CR2 refuses the data.
    """

    category: str
    metric: str
    n: int
    n_clusters: int
    mean: float
    interval: tuple[float, float] | None


def category_intervals(
    run: RunRecord, system: str, *, metrics: Sequence[str] = ("mrr",), level: float = 0.95
) -> list[CategoryInterval]:
    """Per-category means with CR2 cluster-robust intervals (:func:`harness.stats.cr2`; Satterthwaite df) for one
    system of a run, using the clusters recorded with the run (a question without a recorded label is its own
    cluster).

    Categories come in the eval v4 order, then any others sorted; a metric absent from a question's row is skipped
    for that category. Categories hold few clusters, so these intervals are wide and their coverage uncertain.
    """
    labels = run.clusters()
    rows = run.rows(system)
    present = {r.category for r in rows}
    cats = [c for c in CATEGORIES if c in present] + sorted(present - set(CATEGORIES))
    out: list[CategoryInterval] = []
    for cat in cats:
        sel = [r for r in rows if r.category == cat]
        cl = [labels.get(r.qid, r.cluster or r.qid) for r in sel]
        for m in metrics:
            if any(m not in r.metrics for r in sel):
                continue
            y = [float(r.metrics[m]) for r in sel]
            iv = None
            if len(set(cl)) >= 2:
                try:
                    res = cr2(y, cl, level=level)
                    iv = (res.lower, res.upper)
                except HarnessInputError:
                    iv = None
            out.append(CategoryInterval(cat, m, len(sel), len(set(cl)), math.fsum(y) / len(y), iv))
    return out


@dataclass
class PairedRow:
    """One candidate against the baseline on one metric (see :func:`paired_table`).

    Attributes:
        label, baseline: display names of the candidate and the baseline.
        metric: metric id; mean_a / mean_b: baseline / candidate means; diff: mean paired difference candidate -
            baseline.
        lower, upper: two-sided CR2 interval of ``diff`` at the table's level; se, df: its CR2 se and Satterthwaite
            df (``None`` when not recorded).
        lower_one_sided: :func:`noninferiority_bound` at ``alpha`` (what ``harness gate`` compares with -margin);
            noninferior: ``lower_one_sided > -margin``.
        p: cluster sign-flip randomisation p; p_holm: Holm-adjusted across the candidates of this metric (``None``
            with one candidate).
        questions, clusters: win / tie / loss counts of the candidate (clusters: of cluster-mean differences).
        warnings: the interval's warnings.
    """

    label: str
    baseline: str
    metric: str
    mean_a: float
    mean_b: float
    diff: float
    lower: float
    upper: float
    se: float | None
    df: float | None
    lower_one_sided: float
    noninferior: bool
    p: float
    p_holm: float | None
    questions: dict
    clusters: dict
    warnings: list[str] = field(default_factory=list)


def paired_table(
    baseline: tuple[str, RunRecord, str],
    candidates: Sequence[tuple[str, RunRecord, str]],
    metrics: Sequence[str],
    *,
    alpha: float = 0.05,
    margin: float = 0.02,
    level: float = 0.95,
    reps: int = 10000,
    seed: int = 0,
) -> list[PairedRow]:
    """Paired differences candidate - baseline for every candidate and metric, as :func:`compare_runs` computes them,
    with the gate's one-sided bound (:func:`noninferiority_bound`) and Holm across the candidates per metric.

    Args:
        baseline: ``(label, run, system)``.
        candidates: ``(label, run, system)`` each (every run comparable with the baseline's).
        metrics: metric ids (a metric a side has no ranking for is left out, as in :func:`compare_runs`).
        alpha: one-sided level of the gate's bound; margin: the non-inferiority margin (metric units, >= 0).
        level: two-sided level of ``lower``/``upper``.
        reps, seed: randomisation test sign flips and seed.

    Returns:
        Rows in candidate order, then metric order.

    Raises:
        IncomparableError / HarnessInputError: as :func:`compare_runs`.
    """
    b_label, b_run, b_system = baseline
    rows: list[PairedRow] = []
    for label, run, system in candidates:
        rep = compare_runs(
            b_run, run, metrics=tuple(metrics), system_a=b_system, system_b=system, level=level, reps=reps, seed=seed
        )
        for c in rep.comparisons:
            iv = c.interval
            bound = noninferiority_bound(iv["estimate"], iv.get("se"), iv.get("df"), alpha)
            rows.append(
                PairedRow(
                    label=label,
                    baseline=b_label,
                    metric=c.metric,
                    mean_a=c.mean_a,
                    mean_b=c.mean_b,
                    diff=c.diff,
                    lower=iv["lower"],
                    upper=iv["upper"],
                    se=iv.get("se"),
                    df=iv.get("df"),
                    lower_one_sided=bound,
                    noninferior=bound > -margin,
                    p=c.p_randomization,
                    p_holm=None,
                    questions=c.questions,
                    clusters=c.clusters,
                    warnings=list(iv.get("extras", {}).get("warnings", [])),
                )
            )
    for m in metrics:
        grp = [r for r in rows if r.metric == m]
        if len(grp) > 1:
            for r, ph in zip(grp, holm([r.p for r in grp]), strict=True):
                r.p_holm = float(ph)
    return rows


@dataclass
class GateVerdict:
    """The gate's decision and the numbers behind it (written as JSON)."""

    decision: str
    exit_code: int
    metric: str
    margin: float
    alpha: float
    baseline: str
    candidate: str
    system_baseline: str
    system_candidate: str
    mean_baseline: float
    mean_candidate: float
    diff: float
    se: float
    df: float
    lower_bound: float
    minimum_detectable_difference: float
    n_questions: int
    n_clusters: int
    method: str = "paired CR2 mean difference, Satterthwaite df, one-sided t lower bound"
    category_guards: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)

    def line(self) -> str:
        """The one-line summary the CLI prints."""
        return (
            f"{self.decision}: {self.metric} {self.system_candidate} - {self.system_baseline} = {self.diff:+.4f}, "
            f"one-sided {100 * (1 - self.alpha):.0f}% lower bound {self.lower_bound:+.4f} vs -margin "
            f"{-self.margin:+.4f} (CR2 se {self.se:.4f}, df {self.df:.1f}, {self.n_clusters} clusters, "
            f"{self.n_questions} questions); minimum detectable difference at 80% power "
            f"{self.minimum_detectable_difference:.4f}"
        )


def gate(
    baseline: str | Path,
    candidate: str | Path,
    *,
    metric: str = "mrr",
    margin: float = 0.02,
    alpha: float = 0.05,
    system_baseline: str | None = None,
    system_candidate: str | None = None,
    category_guards: dict[str, float] | None = None,
    verdict_path: str | Path | None = None,
) -> GateVerdict:
    """Non-inferiority gate on the paired difference candidate - baseline.

    Decision rule: pass when the one-sided ``1 - alpha`` lower confidence bound of the mean paired difference,
    ``diff - t_{1-alpha, df} * se`` with CR2 ``se`` and Satterthwaite ``df`` (Bell & McCaffrey 2002; Pustejovsky &
    Tipton 2018), lies above ``-margin``. Category guards (``{category: margin_c}``) additionally require the
    category's mean paired difference (a point estimate: categories hold too few clusters for an interval) to lie
    above ``-margin_c``. The minimum detectable difference is
    ``(t_{1-alpha, df} + t_{0.8, df}) * se`` (one-sided test, 80 % power).

    Returns:
        The :class:`GateVerdict` (``exit_code`` 0 pass, 1 fail); written to ``verdict_path`` atomically if given.

    Raises:
        IncomparableError / HarnessInputError: unusable or incomparable input (exit 2).
    """
    if not 0 < alpha < 0.5:
        raise HarnessInputError(f"--alpha: {alpha} must lie in (0, 0.5)")
    if margin < 0:
        raise HarnessInputError(f"--margin: {margin} must be >= 0")
    a, b = load_run(baseline), load_run(candidate)
    check_comparable(a, b)
    (sa, sb), *rest = pick_pairs(a, b, system_baseline, system_candidate)
    if rest:
        pairs = ", ".join(f"{x}/{y}" for x, y in [(sa, sb), *rest])
        raise HarnessInputError(
            f"several systems match ({pairs}): choose with --system-baseline and --system-candidate"
        )
    if not (_level_available(a, sa, metric) and _level_available(b, sb, metric)):
        raise HarnessInputError(f"--metric {metric}: one run has no rankings at this metric's level ({sa} vs {sb})")
    qids, ya, yb = aligned(a, b, sa, sb, metric)
    labels = a.clusters()
    cl = np.array([labels.get(q, q) for q in qids])
    iv = paired(ya, yb, cl, method="cr2", level=1 - 2 * alpha)
    se = float(iv.se or 0.0)
    df = float(iv.df or 1.0)
    lower = noninferiority_bound(iv.estimate, iv.se, iv.df, alpha)
    mdd = float(minimum_detectable_difference(se, df, alpha=alpha, power=0.8, one_sided=True))
    passed = lower > -margin
    guards = {}
    cats = a.categories()
    d = yb - ya
    for cat, m_c in (category_guards or {}).items():
        mask = np.array([cats[q] == cat for q in qids])
        if not mask.any():
            raise HarnessInputError(f"--guard: category {cat!r} has no questions in this gold set")
        diff_c = float(d[mask].mean())
        ok = diff_c > -m_c
        guards[cat] = {"margin": m_c, "diff": diff_c, "n": int(mask.sum()), "passed": ok}
        passed = passed and ok
    warnings = list(iv.extras.get("warnings", [])) if iv.extras else []
    verdict = GateVerdict(
        decision="PASS" if passed else "FAIL",
        exit_code=0 if passed else 1,
        metric=metric,
        margin=margin,
        alpha=alpha,
        baseline=str(a.path),
        candidate=str(b.path),
        system_baseline=sa,
        system_candidate=sb,
        mean_baseline=float(ya.mean()),
        mean_candidate=float(yb.mean()),
        diff=float(iv.estimate),
        se=se,
        df=df,
        lower_bound=lower,
        minimum_detectable_difference=mdd,
        n_questions=len(qids),
        n_clusters=len(set(cl)),
        category_guards=guards,
        warnings=warnings,
    )
    if verdict_path:
        atomic_write_json(verdict_path, asdict(verdict))
    return verdict
