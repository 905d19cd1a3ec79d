"""Document-clustered confidence intervals and design statistics for per-question (or per-chunk) metrics.

Rows (questions or chunks) sharing a source document are correlated, so intervals are built over clusters:

* :mod:`harness.stats.methods` - the registry of interval methods (:data:`INTERVALS`, :data:`DEFAULTS`,
  :func:`all_intervals`); batched ``(reps, K)`` kernels in :mod:`harness.stats.batched`;
* :func:`cr2` - CR2 cluster-robust t interval with Satterthwaite df (the default; matches R clubSandwich);
* :func:`cr3` - CR3 jackknife t interval with Satterthwaite df (matches clubSandwich CR3);
* :func:`korn_graubard` - Clopper-Pearson on the effective sample size, for binary outcomes (matches R survey);
* :func:`wild_cluster_bootstrap`, :func:`wild_cluster_pvalue` - restricted wild cluster bootstrap, interval by test
  inversion (p-values match Python wildboottest);
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

from harness.stats.bootstrap import bootstrap_intervals, cluster_bootstrap
from harness.stats.cr2 import cr2, satterthwaite_df
from harness.stats.cr3 import cr3
from harness.stats.design import design_effect, icc_anova, lag1_autocorrelation
from harness.stats.interval import Interval
from harness.stats.korn_graubard import korn_graubard
from harness.stats.methods import DEFAULTS, INTERVALS, IntervalMethod, all_intervals, default_method
from harness.stats.paired import holm, paired, randomization_test
from harness.stats.power import clusters_needed, minimum_detectable_difference
from harness.stats.simple import cluster_t, iid_wald, iid_wald_effective
from harness.stats.wild import wild_cluster_bootstrap, wild_cluster_pvalue

__all__ = [
    "DEFAULTS",
    "INTERVALS",
    "Interval",
    "IntervalMethod",
    "all_intervals",
    "bootstrap_intervals",
    "cluster_bootstrap",
    "cluster_t",
    "clusters_needed",
    "cr2",
    "cr3",
    "default_method",
    "design_effect",
    "holm",
    "icc_anova",
    "iid_wald",
    "iid_wald_effective",
    "korn_graubard",
    "lag1_autocorrelation",
    "minimum_detectable_difference",
    "paired",
    "randomization_test",
    "satterthwaite_df",
    "wild_cluster_bootstrap",
    "wild_cluster_pvalue",
]
