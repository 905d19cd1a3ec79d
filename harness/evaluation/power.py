"""Power planning from a run record: how many clusters and questions a gold set needs to detect a difference.

Reads per-question metric vectors and the recorded clusters (:mod:`harness.evaluation.pairing`) and plans with
:func:`plan_clusters`, which the gate (:mod:`harness.evaluation.gate`) also uses for its "needs about N clusters".

The plan (Donner & Klar 2000, ch. 5; Eldridge, Ashby & Kerry 2006 for unequal cluster sizes): with ``m`` the mean
cluster size, ``cv`` the coefficient of variation of the cluster sizes (population SD, ddof 0), ``ICC`` the one-way
ANOVA intraclass correlation *truncated at 0* (a negative estimate is sampling noise around a small ICC; using it
would shrink the design effect below 1 and promise more precision than clustering gives) and ``sd`` the SD of the
per-question values (ddof 1)::

    DEFF = 1 + ((1 + cv^2) m - 1) ICC
    G    = smallest G with (t_{G-1, 1-alpha} + t_{G-1, power}) sd sqrt(DEFF / (G m)) <= delta

one-sided by default (the gate's test is one-sided), ``1 - alpha/2`` when two-sided. The DEFF printed is the DEFF
planned with.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.errors import HarnessInputError
from harness.evaluation.pairing import paired_values, pick_pairs, require_clusters, split_qids
from harness.evaluation.runs import check_comparable, load_run
from harness.stats import clusters_needed, design_effect

DEFF_SOURCE = "Kish 1965; unequal cluster sizes with the CV of sizes: Eldridge, Ashby & Kerry 2006"
"""Where the design-effect formula comes from (printed with every plan)."""


def deff_formula(icc_used: float, mean_size: float, cv_size: float, deff: float) -> str:
    """The design effect written out with its numbers: ``DEFF = 1 + ((1 + CV^2) m - 1) ICC = 1 + ((1 + 0.52^2) 1.50 -
    1) 0.000 = 1.00`` (see the module docstring)."""
    return (
        f"DEFF = 1 + ((1 + CV^2) m - 1) ICC = 1 + ((1 + {cv_size:.2f}^2) {mean_size:.2f} - 1) {icc_used:.3f} "
        f"= {deff:.2f} ({DEFF_SOURCE})"
    )


def plan_clusters(
    y, clusters, delta: float, *, alpha: float = 0.05, power: float = 0.8, one_sided: bool = True
) -> dict:
    """Clusters needed to detect a mean (difference) of ``delta`` from per-question values ``y`` and their clusters.

    Args:
        y: shape (N,), per-question values (a metric, or paired differences candidate - baseline).
        clusters: shape (N,), cluster labels; at least 2 clusters.
        delta: the difference to detect, > 0 (metric units).
        alpha: the test's level in (0, 0.5); power: in (0, 1); one_sided: one-sided test (else two-sided).

    Returns:
        ``{"icc", "icc_used", "icc_note", "deff", "deff_formula", "mean_cluster_size", "cv_cluster_size", "sd",
        "sided", "clusters_needed", "questions_needed", "df_at_plan", "mdd_at_plan",
        "clusters_needed_normal_approx"}``; ``icc_used`` is the ICC truncated at 0 (``icc_note`` says so when it
        was negative or undefined) and ``deff`` is computed from it, the same DEFF :func:`clusters_needed` plans with.

    Raises:
        HarnessInputError: fewer than 2 clusters, a bad ``delta``/``alpha``/``power`` (from
            :func:`harness.stats.clusters_needed`).
    """
    y = np.asarray(y, dtype=np.float64)
    de = design_effect(y, clusters)
    icc_used = float(de["icc_used"])
    sd = float(np.std(y, ddof=1)) if y.size > 1 else 0.0
    plan = clusters_needed(
        icc_used, de["mean_size"], de["cv_size"], sd, delta, alpha=alpha, power=power, one_sided=one_sided
    )
    icc = float(de["icc"])
    if np.isnan(icc):
        note = "ICC undefined (every cluster holds one question, or the values are constant): planned with 0"
    elif icc < 0:
        note = f"ICC {icc:.3f} < 0 truncated at 0 (a negative ICC is noise around a small one; DEFF >= 1)"
    else:
        note = ""
    return {
        "icc": icc,
        "icc_used": icc_used,
        "icc_note": note,
        "deff": float(plan["deff"]),
        "deff_formula": deff_formula(icc_used, de["mean_size"], de["cv_size"], float(plan["deff"])),
        "mean_cluster_size": float(de["mean_size"]),
        "cv_cluster_size": float(de["cv_size"]),
        "sd": sd,
        "sided": "one-sided" if one_sided else "two-sided",
        "clusters_needed": int(plan["clusters"]),
        "questions_needed": int(plan["rows"]),
        "df_at_plan": plan.get("df"),
        "mdd_at_plan": float(plan["mdd"]),
        "clusters_needed_normal_approx": plan.get("clusters_normal"),
    }


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
    one_sided: bool = True,
    split: str = "all",
) -> dict:
    """How many clusters and questions a gold set needs to detect ``delta`` on ``metric`` (:func:`plan_clusters`).

    With ``baseline`` the plan is for the *paired* comparison the gate makes: ICC, cluster sizes and SD are those of
    the per-question differences run - baseline (usually far smaller than the metric's own SD). Without it the plan
    is for detecting a shift of ``delta`` in the metric's mean from one run's variability, which is conservative
    for paired comparisons. ``split`` restricts the questions (``all``, ``dev``, ``test``).

    Returns:
        :func:`plan_clusters`'s keys plus ``{"run", "system", "metric", "delta", "paired", "alpha", "power", "split",
        "current_clusters", "current_questions", "note", "warnings"}``; ``warnings`` holds the few-cluster warning
        (fewer than 20 clusters: the ICC itself is uncertain) and the ICC truncation.

    Raises:
        HarnessInputError: ``delta <= 0`` or not finite, ``power`` outside (0, 1), ``alpha`` outside (0, 0.5), an
            unknown system, metric or split, paired differences that are all equal (nothing to plan).
    """
    if not (delta > 0 and np.isfinite(delta)):
        raise HarnessInputError(f"--delta: {delta} must be a finite number > 0")
    if not 0 < power < 1:
        raise HarnessInputError(f"--power: {power} must lie in (0, 1)")
    if not 0 < alpha < 0.5:
        raise HarnessInputError(f"--alpha: {alpha} must lie in (0, 0.5)")
    rec = load_run(run)
    if baseline is not None:
        base = load_run(baseline)
        check_comparable(base, rec)
        (sb, sysname), *_ = pick_pairs(base, rec, system_baseline, system, flags=("--baseline-system", "--system"))
        pv = paired_values(base, rec, sb, sysname, metric, split=split)
        y, cl = pv.diff, pv.clusters
        if not np.any(y != y[0]):
            raise HarnessInputError(
                f"--baseline: the paired differences {sysname} - {sb} are all equal ({float(y[0]):+.4f}); nothing to "
                "plan (the same system twice?): name the systems with --system and --baseline-system"
            )
    else:
        sysname = system or rec.systems[0]
        v = rec.metric_vector(sysname, metric)
        keep = split_qids(rec, split)
        qids = sorted(q for q in v if keep is None or q in keep)
        labels = rec.clusters()
        y = np.array([v[q] for q in qids])
        cl = np.array([labels.get(q, q) for q in qids])
    split_text = "" if split == "all" else f" of split {split}"
    require_clusters(base if baseline is not None else rec, cl, f"the {y.size} questions{split_text} of {metric}")
    plan = plan_clusters(y, cl, delta, alpha=alpha, power=power, one_sided=one_sided)
    n_cl = len(set(cl.tolist()))
    warnings = []
    note = ""
    if n_cl < 20:
        note = f"ICC estimated from {n_cl} clusters is itself uncertain; treat the plan as an order of magnitude"
        warnings.append(note)
    if plan["icc_note"]:
        warnings.append(plan["icc_note"])
    return {
        "run": str(rec.path),
        "system": sysname,
        "metric": metric,
        "delta": delta,
        "paired": baseline is not None,
        "alpha": alpha,
        "power": power,
        "split": split,
        **plan,
        "current_clusters": n_cl,
        "current_questions": int(y.size),
        "note": note,
        "warnings": warnings,
    }
