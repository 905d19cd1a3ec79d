"""Power planning from a run record: how many clusters and questions a gold set needs to detect a difference.

Reads per-question metric vectors and the recorded clusters (:mod:`harness.evaluation.runs`), as
:mod:`harness.evaluation.compare` does, and plans with :func:`harness.stats.clusters_needed`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.errors import HarnessInputError
from harness.evaluation.compare import aligned, pick_pairs
from harness.evaluation.runs import check_comparable, load_run
from harness.stats import clusters_needed, design_effect


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
        (sb, sysname), *_ = pick_pairs(base, rec, system_baseline, system)
        qids, ya, yb = aligned(base, rec, sb, sysname, metric)
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
