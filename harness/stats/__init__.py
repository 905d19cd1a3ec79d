"""Document-clustered confidence intervals and design statistics for per-question (or per-chunk) metrics.

Rows (questions or chunks) sharing a source document are correlated, so intervals are built over clusters:

* :func:`cr2` - CR2 cluster-robust t interval with Satterthwaite df (the default; matches R clubSandwich);
* :func:`cluster_bootstrap` - percentile or CR2-studentised bootstrap-t over resampled clusters;
* :func:`cluster_t` - t over cluster means (macro average);
* :func:`iid_wald`, :func:`iid_wald_effective` - iid intervals, for contrast only;
* :func:`paired`, :func:`randomization_test`, :func:`holm` - comparing systems;
* :func:`icc_anova`, :func:`design_effect`, :func:`lag1_autocorrelation` - design quantities;
* :func:`minimum_detectable_difference`, :func:`clusters_needed` - power planning.

Every function is numpy/scipy only and vectorised over rows. Errors are
:class:`harness.errors.HarnessInputError` (exit code 2).
"""

from __future__ import annotations

from dataclasses import replace

from harness.stats._core import as_vector
from harness.stats.bootstrap import bootstrap_intervals, cluster_bootstrap
from harness.stats.cr2 import cr2
from harness.stats.design import design_effect, icc_anova, lag1_autocorrelation
from harness.stats.interval import Interval
from harness.stats.paired import holm, paired, randomization_test
from harness.stats.power import clusters_needed, minimum_detectable_difference
from harness.stats.simple import cluster_t, iid_wald, iid_wald_effective

__all__ = [
    "Interval",
    "all_intervals",
    "bootstrap_intervals",
    "cluster_bootstrap",
    "cluster_t",
    "clusters_needed",
    "cr2",
    "design_effect",
    "holm",
    "icc_anova",
    "iid_wald",
    "iid_wald_effective",
    "lag1_autocorrelation",
    "minimum_detectable_difference",
    "paired",
    "randomization_test",
]


def all_intervals(y, clusters, *, weights=None, level=0.95, B=5000, seed=0) -> dict[str, Interval]:
    """Every interval for the mean of ``y``, keyed by method name, for side-by-side reports.

    Keys: ``"cr2"``, ``"cr2_logit"`` (only when all ``y`` lie in [0, 1]), ``"bootstrap_percentile"`` and
    ``"bootstrap_t"`` (one shared set of ``B`` replicates from ``seed``), ``"cluster_t"`` (macro average),
    ``"iid_wald"`` and ``"iid_wald_effective"`` (contrast only). ``weights`` go to the CR2 and bootstrap intervals;
    the others are unweighted (noted in their ``extras["warnings"]`` when weights were given).

    Args: ``y`` (N,) finite floats; ``clusters`` (N,) labels, >= 2 clusters; ``weights`` (N,) or None;
        ``level`` in (0, 1); ``B`` >= 100; ``seed`` int.
    Returns: ``dict[str, Interval]`` in the order above. Raises: HarnessInputError on bad inputs.
    """
    out: dict[str, Interval] = {"cr2": cr2(y, clusters, weights=weights, level=level)}
    yv = as_vector(y, "y", "all_intervals")
    if yv.min() >= 0.0 and yv.max() <= 1.0:
        out["cr2_logit"] = cr2(y, clusters, weights=weights, level=level, transform="logit")
    out.update(bootstrap_intervals(y, clusters, weights=weights, B=B, seed=seed, level=level))
    unweighted = [
        cluster_t(y, clusters, level=level),
        iid_wald(y, level=level),
        iid_wald_effective(y, clusters, level=level),
    ]
    for iv in unweighted:
        if weights is not None:
            extras = dict(iv.extras)
            extras["warnings"] = [*extras.get("warnings", []), "unweighted (weights apply to cr2 and bootstrap only)"]
            iv = replace(iv, extras=extras)
        out[iv.method] = iv
    return out
