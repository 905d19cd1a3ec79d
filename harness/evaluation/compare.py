"""Paired comparisons between systems, the non-inferiority gate, and power planning, from run records only.

All three read per-question metric vectors from run records (:mod:`harness.evaluation.runs`), align them by question
id and use the clusters recorded with the baseline run (connected components of questions sharing gold documents by
default), so questions that share documents are not counted as independent trials.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from scipy import stats as sps

from harness.errors import HarnessInputError
from harness.evaluation.runs import RunRecord, check_comparable, load_run
from harness.goldset.schema import CATEGORIES
from harness.io import atomic_write_json
from harness.metrics import METRIC_SETS
from harness.stats import (
    clusters_needed,
    design_effect,
    holm,
    minimum_detectable_difference,
    paired,
    randomization_test,
)

DEFAULT_COMPARE_METRICS = METRIC_SETS["compare"]


def _pick_pairs(a: RunRecord, b: RunRecord, system_a: str | None, system_b: str | None) -> list[tuple[str, str]]:
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


def _aligned(a: RunRecord, b: RunRecord, sa: str, sb: str, metric: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    va, vb = a.metric_vector(sa, metric), b.metric_vector(sb, metric)
    if set(va) != set(vb):
        raise HarnessInputError(f"runs not comparable: question ids differ for {metric} ({sa} vs {sb})")
    qids = sorted(va)
    return qids, np.array([va[q] for q in qids]), np.array([vb[q] for q in qids])


def _level_available(run: RunRecord, system: str, metric: str) -> bool:
    """False when the run's summary says the system returned no rankings at the metric's level (e.g. a document-only
    TREC file scored by ``evaluate``); such metrics are all zeros and must not be compared."""
    from harness.metrics import MetricSpec

    levels = run.summary.get("systems", {}).get(system, {}).get("all", {}).get("levels")
    return True if levels is None else bool(levels.get(MetricSpec.parse(metric).level, True))


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
    pairs = _pick_pairs(a, b, system_a, system_b)
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
            qids, ya, yb = _aligned(a, b, sa, sb, metric)
            cl = np.array([labels.get(q, q) for q in qids])
            iv = paired(ya, yb, cl, method="cr2", level=level)
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
                    civ = paired(ya[m], yb[m], cl[m], method="cr2", level=level)
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
    c = run.manifest.get("clusters", {})
    return {"mode": c.get("mode"), "n_clusters": c.get("n_clusters")}


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
    (sa, sb), *rest = _pick_pairs(a, b, system_baseline, system_candidate)
    if rest:
        pairs = ", ".join(f"{x}/{y}" for x, y in [(sa, sb), *rest])
        raise HarnessInputError(
            f"several systems match ({pairs}): choose with --system-baseline and --system-candidate"
        )
    if not (_level_available(a, sa, metric) and _level_available(b, sb, metric)):
        raise HarnessInputError(f"--metric {metric}: one run has no rankings at this metric's level ({sa} vs {sb})")
    qids, ya, yb = _aligned(a, b, sa, sb, metric)
    labels = a.clusters()
    cl = np.array([labels.get(q, q) for q in qids])
    iv = paired(ya, yb, cl, method="cr2", level=1 - 2 * alpha)
    se = float(iv.se or 0.0)
    df = float(iv.df or 1.0)
    t = float(sps.t.ppf(1 - alpha, df))
    lower = float(iv.estimate - t * se)
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


def power_plan(
    run: str | Path,
    *,
    metric: str = "mrr",
    delta: float = 0.02,
    system: str | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    baseline: str | Path | None = None,
    system_baseline: str | None = None,
) -> dict:
    """How many clusters and questions a gold set needs to detect ``delta`` on ``metric``.

    Uses the observed ICC (one-way ANOVA estimator), mean cluster size and its coefficient of variation, and the
    standard deviation of the per-question metric in ``run``, through
    :func:`harness.stats.clusters_needed` (design-effect inflation of the iid sample size; Eldridge, Ashby &
    Kerry 2006 for unequal cluster sizes).

    With ``baseline`` the plan is for the *paired* comparison the gate makes: ICC, cluster sizes and SD are those of
    the per-question differences run - baseline (usually far smaller than the metric's own SD). Without it the plan
    is for detecting a shift of ``delta`` in the metric's mean from one run's variability, which is conservative
    for paired comparisons.

    Returns:
        ``{"metric", "delta", "paired", "icc", "deff", "mean_cluster_size", "cv_cluster_size", "sd",
        "clusters_needed", "questions_needed", "current_clusters", "current_questions"}``.
    """
    if not delta > 0:
        raise HarnessInputError(f"--delta: {delta} must be > 0")
    if not 0 < power < 1:
        raise HarnessInputError(f"--power: {power} must lie in (0, 1)")
    if not 0 < alpha < 0.5:
        raise HarnessInputError(f"--alpha: {alpha} must lie in (0, 0.5)")
    rec = load_run(run)
    labels = rec.clusters()
    if baseline is not None:
        base = load_run(baseline)
        check_comparable(base, rec)
        (sb, sysname), *_ = _pick_pairs(base, rec, system_baseline, system)
        qids, ya, yb = _aligned(base, rec, sb, sysname, metric)
        y = yb - ya
    else:
        sysname = system or rec.systems[0]
        v = rec.metric_vector(sysname, metric)
        qids = sorted(v)
        y = np.array([v[q] for q in qids])
    cl = np.array([labels.get(q, q) for q in qids])
    if baseline is not None and not np.any(y != y[0]):
        raise HarnessInputError(
            f"--baseline: the paired differences {sysname} - {sb} are all equal ({float(y[0]):+.4f}); nothing to plan "
            "(the same system twice?): name the systems with --system and --system-baseline"
        )
    de = design_effect(y, cl)
    sd = float(np.std(y, ddof=1)) if len(y) > 1 else 0.0
    plan = clusters_needed(de["icc"], de["mean_size"], de["cv_size"], sd, delta, alpha=alpha, power=power)
    return {
        "run": str(rec.path),
        "system": sysname,
        "metric": metric,
        "delta": delta,
        "paired": baseline is not None,
        "alpha": alpha,
        "power": power,
        "icc": de["icc"],
        "deff": de["deff"],
        "mean_cluster_size": de["mean_size"],
        "cv_cluster_size": de["cv_size"],
        "sd": sd,
        "clusters_needed": int(plan["clusters"]),
        "questions_needed": int(plan["rows"]),
        "df_at_plan": plan.get("df"),
        "clusters_needed_normal_approx": plan.get("clusters_normal"),
        "current_clusters": len(set(cl)),
        "current_questions": len(y),
        "note": "ICC estimated from few clusters is itself uncertain; treat the plan as an order of magnitude"
        if len(set(cl)) < 20
        else "",
    }
