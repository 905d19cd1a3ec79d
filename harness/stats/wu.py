"""Wu's (1982) frame-aware variance of the ratio estimator on CR2, for corpora whose document sizes are known.

The micro mean of a sample of G documents is the ratio estimator ``p = sum y / sum n`` (``y_j`` the outcome sum and
``n_j`` the rows of document j). Wu (1982, "Estimation of variance of the ratio estimator", Biometrika 69(1):
183-189) studies the class ``v_g = (Xbar / xbar)^g v_L`` of variance estimators of the ratio estimator under simple
random sampling, where ``v_L`` is the linearisation variance written with the population mean size, ``xbar = N / G``
the sample's mean size and ``Xbar`` the mean size over every document of the population (the frame). Here ``v_L`` is
the CR2 variance written with the known mean size, ``v_L = (xbar / Xbar)^2 V_CR2`` (so that ``g = 2`` is CR2
itself), hence

    ``V_g = (Xbar / xbar)^(g - 2) V_CR2``,   interval ``p -/+ t_{df} sqrt(V_g)``,

with the CR2 Satterthwaite df (:func:`harness.stats.cr2`; Bell & McCaffrey 2002) and, with ``fpc``, the factor
``1 - G / G_pop`` on the variance. ``g = 3`` (registered as ``wu_v3``) widens the intervals of samples whose
documents are smaller than the corpus average - the samples that miss the few large documents whose higher hit rates
carry most of the variance on this project's corpus - and narrows the others (docs/measurements.md). On the logit
scale (``transform="logit"``, metrics in [0, 1]) the bounds are ``expit(logit(p) -/+ t sqrt(V_g) / (p (1 - p)))``.

``Xbar`` must describe the population the documents were drawn from (its number of queries or chunks per document):
the coverage study knows it; a gold-set run does not (it has no sizes for documents it did not sample), so these
methods are not among the intervals of ``run`` (:attr:`harness.stats.methods.IntervalMethod.in_runs`).
Reference values: ``V_CR2`` and the df from R clubSandwich (tests/r/pps_wu_golden.R).
"""

from __future__ import annotations

import math

import numpy as np

from harness.stats._core import check_level, fail, fpc_factor, t_quantile
from harness.stats.batched import ClusterBatch, Resamples, logit_bounds, scalar_t_bounds, symmetric_bounds, t_crit
from harness.stats.cr2 import cr2
from harness.stats.interval import Interval


def _check_frame(frame_mean_size, func: str) -> float:
    try:
        x = float(frame_mean_size)
    except (TypeError, ValueError):
        raise fail(func, "frame_mean_size", f"must be a number, got {frame_mean_size!r}") from None
    if not (math.isfinite(x) and x > 0):
        raise fail(func, "frame_mean_size", f"must be a finite number > 0, got {frame_mean_size!r}")
    return x


def wu_ratio(
    y, clusters, *, frame_mean_size, g: float = 3.0, level=0.95, fpc=None, transform=None, clip=True
) -> Interval:
    """Wu's ``v_g`` interval for the micro mean of ``y`` over clustered rows (module docstring).

    Args:
        y: per-row outcomes, shape (N,), finite floats.
        clusters: cluster (document) label per row, shape (N,); at least 2 clusters.
        frame_mean_size: ``Xbar > 0``, the mean number of rows per document over every document of the population
            the sample was drawn from.
        g: Wu's exponent (finite; 2 gives CR2, 3 is the registered ``wu_v3``).
        level: two-sided confidence level in (0, 1).
        fpc: population number of clusters ``G_pop >= G`` (variance times ``1 - G / G_pop``) or None.
        transform: None or ``"logit"`` (needs every ``y`` in [0, 1]; ``[p, p]`` when ``p`` is 0 or 1 or V = 0).
        clip: clip identity-scale bounds to [0, 1] when every ``y`` lies in [0, 1].

    Returns:
        :class:`Interval` with method ``"wu_v<g>"`` (``"wu_v3"``, ``"wu_v3_logit"``), ``se = sqrt(V_g)``, the CR2
        Satterthwaite ``df``; ``extras`` has ``frame_mean_size``, ``sample_mean_size`` (``xbar``), ``g`` and
        ``variance_ratio`` (``V_g / V_CR2``).

    Raises:
        HarnessInputError: bad ``y``/``clusters`` (as :func:`harness.stats.cr2`), ``frame_mean_size`` not a finite
            number > 0, a non-finite ``g``, a bad ``level``/``fpc``/``transform``, ``transform="logit"`` with ``y``
            outside [0, 1].
    """
    func = "wu_ratio"
    level = check_level(level, func)
    big_x = _check_frame(frame_mean_size, func)
    if not math.isfinite(float(g)):
        raise fail(func, "g", f"must be finite, got {g!r}")
    if transform not in (None, "logit"):
        raise fail(func, "transform", f"must be None or 'logit', got {transform!r}")
    base = cr2(y, clusters, level=level, clip=False)
    yv = np.asarray(y, dtype=np.float64)
    unit = bool(yv.min() >= 0.0 and yv.max() <= 1.0)
    if transform == "logit" and not unit:
        raise fail(func, "y", "transform='logit' needs every value in [0, 1]")
    G = base.n_clusters
    xbar = base.n / G
    ratio = (big_x / xbar) ** (float(g) - 2.0)
    f = fpc_factor(fpc, G, func)
    se = float(base.se) * math.sqrt(ratio * f)
    crit = t_quantile(0.5 + level / 2.0, base.df)
    est = base.estimate
    extras: dict = {"frame_mean_size": big_x, "sample_mean_size": xbar, "g": float(g), "variance_ratio": ratio}
    if fpc is not None:
        extras.update({"fpc": float(fpc), "fpc_factor": f})
    name = f"wu_v{float(g):g}"
    if transform == "logit":
        name += "_logit"
    lower, upper = scalar_t_bounds(est, se, crit, transform, clip and unit, extras)
    if base.warnings:
        extras["warnings"] = base.warnings
    return Interval(
        method=name,
        estimate=est,
        se=se,
        df=base.df,
        lower=float(min(lower, est)),
        upper=float(max(upper, est)),
        level=level,
        n=base.n,
        n_clusters=G,
        label=f"Wu (1982) v_{float(g):g} on CR2 (frame mean size {big_x:.4g})" + (", logit scale" if transform else ""),
        extras=extras,
    )


def wu_kernel(
    batch: ClusterBatch, level: float, factors, draws: Resamples | None = None, *, g: float = 3.0, transform=None
) -> list:
    """Batched :func:`wu_ratio` (unweighted): one ``(lower, upper)`` pair of (reps,) arrays per variance factor.

    Needs ``batch.frame_mean_size``. Raises ValueError without it.
    """
    if batch.frame_mean_size is None:
        raise ValueError("wu_kernel needs the batch's frame_mean_size (the population's mean cluster size)")
    _, se, df = batch.cr2()
    xbar = batch.N / batch.k
    se_g = se * np.sqrt((float(batch.frame_mean_size) / xbar) ** (float(g) - 2.0))
    crit = t_crit(level, df)
    if transform == "logit":
        return logit_bounds(batch.p, se_g, crit, factors)
    return symmetric_bounds(batch.p, crit * se_g, factors)
