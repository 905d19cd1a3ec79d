"""Bias-corrected and accelerated (BCa) cluster bootstrap interval for a (weighted) mean.

Efron (1987), "Better bootstrap confidence intervals", JASA 82:171-185; DiCiccio and Efron (1996), "Bootstrap
confidence intervals", Statistical Science 11:189-228 (eq. 2.3-2.4); Efron and Tibshirani (1993), ch. 14.3 and
eq. 14.15. With ``theta_hat`` the sample estimate, ``theta*_b`` (b = 1..B) the bootstrap replicates and
``theta_(g)`` the leave-one-cluster-out (jackknife) estimates:

* bias correction ``z0 = Phi^-1(p0)``, ``p0 = (#{theta*_b < theta_hat} + #{theta*_b <= theta_hat}) / (2B)`` (ties
  count half, as ``scipy.stats.bootstrap`` does; a replicate equal to the estimate is common with few clusters or
  binary outcomes, so a replicate within a relative :data:`TIE_TOLERANCE` of it counts as a tie whatever the
  summation order's rounding);
* acceleration ``a = sum d_g^3 / (6 (sum d_g^2)^(3/2))``, ``d_g = mean(theta_(.)) - theta_(g)``;
* bounds: the type-7 quantiles of the replicates at ``alpha_j = Phi(z0 + (z0 + z_j) / (1 - a (z0 + z_j)))``, with
  ``z_1 = Phi^-1((1 - level) / 2)``, ``z_2 = -z_1``.

The replicates resample whole clusters (:mod:`harness.stats.bootstrap`: the same count draws as the percentile and
bootstrap-t intervals, so all three share one set of replicates); the jackknife deletes one cluster at a time. With
one question per cluster (the ``independent`` design) this is the ordinary BCa interval of a mean, which
:func:`bca_bounds` computes exactly as ``scipy.stats.bootstrap(..., method="BCa")`` does from the same replicates
(tests/test_stats_bca.py). Degenerate cases: every replicate on one side of the estimate (``p0`` 0 or 1) or a
constant sample gives an interval at the replicates' extreme (never NaN; the estimate is always inside).
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr, ndtri

#: Replicates within this relative distance of the estimate (scaled by ``|estimate|`` plus the replicates' spread)
#: are ties in the bias correction.
TIE_TOLERANCE = 1e-10


def bca_levels(theta_hat, theta_b, jack, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The BCa-adjusted quantile levels ``(alpha_1, alpha_2)`` (module docstring), vectorised over leading axes.

    Args:
        theta_hat: shape (...), the estimates.
        theta_b: shape (..., B), the bootstrap replicates.
        jack: shape (..., G), the leave-one-cluster-out estimates (G >= 2).
        level: two-sided confidence level in (0, 1).

    Returns:
        Two arrays of shape (...) in [0, 1] (NaN mapped: a zero acceleration denominator gives ``a = 0``).
    """
    theta_hat = np.asarray(theta_hat, dtype=np.float64)
    theta_b = np.asarray(theta_b, dtype=np.float64)
    jack = np.asarray(jack, dtype=np.float64)
    b = theta_b.shape[-1]
    th = theta_hat[..., None]
    tol = TIE_TOLERANCE * (np.abs(th) + np.abs(theta_b - th).max(axis=-1, keepdims=True))
    p0 = (np.count_nonzero(theta_b < th - tol, axis=-1) + np.count_nonzero(theta_b <= th + tol, axis=-1)) / (2.0 * b)
    z0 = ndtri(p0)
    d = jack.mean(axis=-1, keepdims=True) - jack
    num = np.sum(d**3, axis=-1)
    den = np.sum(d**2, axis=-1) ** 1.5
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(den > 0, num / (6.0 * np.where(den > 0, den, 1.0)), 0.0)
        z_lo = float(ndtri((1.0 - level) / 2.0))
        out = []
        for z in (z_lo, -z_lo):
            s = z0 + z
            alpha = ndtr(z0 + s / (1.0 - a * s))
            out.append(np.where(np.isnan(alpha), np.where(z < 0, 0.0, 1.0), alpha))
    return out[0], out[1]


def quantile7_rows(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Type-7 (linear interpolation, numpy's default) quantile of each row of ``x`` (shape (..., B)) at its own level
    ``q`` (shape (...), in [0, 1])."""
    srt = np.sort(np.asarray(x, dtype=np.float64), axis=-1)
    b = srt.shape[-1]
    h = (b - 1) * np.clip(np.asarray(q, dtype=np.float64), 0.0, 1.0)
    lo = np.floor(h).astype(np.int64)
    hi = np.minimum(lo + 1, b - 1)
    frac = h - lo
    xl = np.take_along_axis(srt, lo[..., None], axis=-1)[..., 0]
    xh = np.take_along_axis(srt, hi[..., None], axis=-1)[..., 0]
    with np.errstate(invalid="ignore"):
        return np.where(frac == 0.0, xl, xl + frac * (xh - xl))


def bca_bounds(theta_hat, theta_b, jack, level: float) -> tuple[np.ndarray, np.ndarray]:
    """BCa bounds ``(lower, upper)`` from the replicates (:func:`bca_levels`, :func:`quantile7_rows`); shapes as
    :func:`bca_levels`. Equals ``scipy.stats.bootstrap(..., method="BCa")`` on the same replicates and jackknife."""
    a1, a2 = bca_levels(theta_hat, theta_b, jack, level)
    return quantile7_rows(theta_b, a1), quantile7_rows(theta_b, a2)


def jackknife_ratio(sw, w) -> np.ndarray:
    """Leave-one-cluster-out ratio means ``(sum(sw) - sw_g) / (sum(w) - w_g)`` over the last axis (shape (..., G));
    ``sw`` the clusters' weighted outcome sums, ``w`` their weight sums (sizes when unweighted)."""
    sw = np.asarray(sw, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (sw.sum(-1, keepdims=True) - sw) / (w.sum(-1, keepdims=True) - w)
