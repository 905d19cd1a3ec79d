"""Hansen-Hurwitz interval for documents drawn with probability proportional to size, with replacement (PPS-WR).

Design: K documents are drawn independently, each draw picking document i with probability ``p_i = n_i / X``
(``n_i`` its number of queries or chunks, ``X = sum_i n_i`` over the corpus); a document may be drawn more than once.
The micro mean ``theta = Y / X`` (``Y`` the corpus total of the outcome) then has the Hansen-Hurwitz estimator

    ``m = (1/K) sum_j (y_j / p_j) / X = (1/K) sum_j r_j``,   ``r_j = y_j / n_j`` (the drawn document's mean),

the plain mean of the drawn documents' rates (a document drawn twice counts twice), unbiased for theta, with the
unbiased variance estimator ``v(m) = s_r^2 / K`` (``s_r^2`` the variance of the K rates, ddof 1; Hansen & Hurwitz
1943, "On the theory of sampling from finite populations", Ann. Math. Stat. 14:333-362; Cochran 1977, Sampling
Techniques, eq. 9A.6). When the drawn documents are themselves sub-sampled (a gold set with a few questions per drawn
document) ``r_j`` is the mean over its questions and ``v(m)`` stays unbiased (the with-replacement ultimate-cluster
estimator, Cochran 1977 sec. 11.9). The K draws are independent copies of the size-weighted rate distribution, so

* ``transform=None``: ``m -/+ t_{K-1} sqrt(v(m))`` (for paired differences and other metrics outside [0, 1]);
* ``transform="logit"`` (metrics in [0, 1]): ``expit(logit(m) -/+ t_{K-1} sqrt(v(m)) / (m (1 - m)))``, the
  delta-method logit interval of R survey's ``svyciprop(method = "xlogit")``.

Numerically ``m`` and ``v(m)`` are those of the t interval over cluster means (:func:`harness.stats.cluster_t`), but
under PPS-WR they estimate the micro mean, not the macro mean; under simple random sampling of documents this
interval is for the macro mean and says nothing about the micro one. A run cannot know how its gold set's documents
were drawn, so these methods are not among the intervals of ``run`` (:attr:`~harness.stats.methods.IntervalMethod.
in_runs`); the coverage study's ``pps`` design measures them (docs/measurements.md). Reference values: R survey
``svymean`` / ``svyciprop(method = "xlogit")`` on ``svydesign(ids = ~draw, probs = ~pi)`` (tests/r/pps_wu_golden.R).
"""

from __future__ import annotations

import math

import numpy as np

from harness.stats._core import as_vector, check_level, encode_clusters, fail, t_quantile
from harness.stats.batched import ClusterBatch, Resamples, logit_bounds, scalar_t_bounds, symmetric_bounds, t_crit
from harness.stats.interval import Interval


def hansen_hurwitz(y, clusters, *, level=0.95, transform=None, clip=True) -> Interval:
    """Hansen-Hurwitz interval for the micro mean of ``y`` from K PPS-with-replacement draws (module docstring).

    Args:
        y: per-row outcomes, shape (N,), finite floats; the rows of every draw.
        clusters: the draw each row belongs to, shape (N,), one label per draw (a document drawn twice has its rows
            twice, under two labels); at least 2 draws.
        level: two-sided confidence level in (0, 1).
        transform: None (identity scale) or ``"logit"`` (needs every ``y`` in [0, 1]; ``[m, m]`` when ``m`` is 0 or
            1 or the rates are all equal).
        clip: clip identity-scale bounds to [0, 1] when every ``y`` lies in [0, 1].

    Returns:
        :class:`Interval` with method ``"hansen_hurwitz"`` (or ``"hansen_hurwitz_logit"``), ``se = s_r / sqrt(K)``,
        ``df = K - 1``, ``n_clusters = K`` draws; a warning when ``K - 1 < 4``.

    Raises:
        HarnessInputError: non-finite or mismatched inputs, fewer than 2 draws, a bad ``level`` or ``transform``,
            ``transform="logit"`` with ``y`` outside [0, 1].
    """
    func = "hansen_hurwitz"
    level = check_level(level, func)
    if transform not in (None, "logit"):
        raise fail(func, "transform", f"must be None or 'logit', got {transform!r}")
    yv = as_vector(y, "y", func)
    codes, k = encode_clusters(clusters, yv.size, func)
    if k < 2:
        raise fail(func, "clusters", f"needs at least 2 draws, got {k}")
    unit = bool(yv.min() >= 0.0 and yv.max() <= 1.0)
    if transform == "logit" and not unit:
        raise fail(func, "y", "transform='logit' needs every value in [0, 1]")
    y0 = float(yv.min())
    rates = np.bincount(codes, weights=yv - y0, minlength=k) / np.bincount(codes, minlength=k)
    est = y0 + float(rates.mean())
    se = float(np.sqrt(rates.var(ddof=1) / k))
    df = float(k - 1)
    crit = t_quantile(0.5 + level / 2.0, df)
    extras: dict = {"design": "pps-wr"}
    name = "hansen_hurwitz"
    if transform == "logit":
        name += "_logit"
    lower, upper = scalar_t_bounds(est, se, crit, transform, clip and unit, extras)
    if df < 4:
        extras["warnings"] = [f"df = {df:g} < 4: too few draws for a reliable interval"]
    return Interval(
        method=name,
        estimate=est,
        se=se,
        df=df,
        lower=float(min(lower, est)),
        upper=float(max(upper, est)),
        level=level,
        n=int(yv.size),
        n_clusters=k,
        label="Hansen-Hurwitz (PPS with replacement), t" + (", logit scale" if transform else ""),
        extras=extras,
    )


def hansen_hurwitz_kernel(
    batch: ClusterBatch, level: float, factors, draws: Resamples | None = None, *, transform=None
) -> list:
    """Batched :func:`hansen_hurwitz`: the K columns of ``batch`` are the K draws of each sample (repeats allowed).

    Returns one ``(lower, upper)`` pair of (reps,) arrays per factor (with-replacement sampling has no
    finite-population correction; callers pass ``(1.0,)``).
    """
    k = batch.k
    rates = batch.rates
    m = rates.mean(1)
    se = rates.std(1, ddof=1) / math.sqrt(k)
    crit = t_crit(level, k - 1)
    if transform == "logit":
        return logit_bounds(m, se, crit, factors)
    return symmetric_bounds(m, crit * se, factors)
