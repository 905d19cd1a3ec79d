"""CR3 (jackknife) cluster-robust interval for a (weighted) mean, with Satterthwaite (Bell-McCaffrey) df.

The mean is the intercept of the intercept-only WLS regression ``y ~ 1`` with weights ``w`` (all 1 when unweighted):
``beta = sum(w y) / W``, ``W = sum w``. CR3 uses the adjustment ``A_j = (I - H_jj)^{-1}`` of the cluster residuals
(Bell & McCaffrey 2002, "Bias reduction in standard errors for linear regression with multi-stage samples", Survey
Methodology 28(2); Pustejovsky & Tipton 2018, JBES 36(4)), which makes the estimator the leave-one-cluster-out
jackknife without the ``(G - 1)/G`` factor (MacKinnon, Nielsen & Webb 2023, "Fast and reliable jackknife and
bootstrap methods for cluster-robust inference", J. Applied Econometrics). Reference implementation: R clubSandwich,
``vcovCR(lm(y ~ 1, weights = w), cluster, type = "CR3")`` with ``coef_test(..., test = "Satterthwaite")`` (golden
values in tests/test_stats_cr3.py, script tests/r/cr3_kg_golden.R).

Closed form. ``H_jj = 1 w_j' / W`` is rank one, so ``(I - H_jj)^{-1} = I + 1 w_j' / Wout_j`` with ``Wout_j = W - W_j``
(the weight outside cluster j) and ``w_j' A_j = (W / Wout_j) w_j'``. With the weighted residual sum
``r_j = w_j'(y_j - beta)``:

* ``V_CR3 = sum_j r_j^2 / Wout_j^2``, which is ``sum_j (beta_(j) - beta)^2`` with ``beta_(j)`` the estimate without
  cluster j;
* Satterthwaite df (clubSandwich's working model ``Phi = I``, as for CR2): ``V`` is the quadratic form
  ``sum_j (g_j' e)^2`` with ``g_j = c_j (w^(j) - pi_j w) / W``, ``c_j = W / Wout_j``, ``pi_j = W_j / W``, ``w^(j)``
  the weights of cluster j (zero elsewhere), ``e ~ N(0, I)``. With ``Gamma_jk = W^2 g_j'g_k``:
  ``Gamma_jj = Q_j + b_j^2 Qout_j`` (``Q_j = sum_{i in j} w_i^2``, ``b_j = W_j / Wout_j``, ``Qout_j = S2 - Q_j``)
  and, for ``j != k``, ``Gamma_jk = -u_j b_k - b_j u_k + S2 b_j b_k`` (``u_j = c_j Q_j``, ``S2 = sum w^2``);
  ``df = (tr Gamma)^2 / ||Gamma||_F^2``, the off-diagonal sum taken with prefix sums (O(G), no G x G matrix).
"""

from __future__ import annotations

import numpy as np

from harness.stats._core import check_level, clip_unit, cluster_sums, fpc_factor, prepare, t_quantile
from harness.stats.batched import ClusterBatch, Resamples, root_factor, t_crit
from harness.stats.interval import Interval

LOW_DF = 4.0


def _exclusive(x: np.ndarray) -> np.ndarray:
    """``sum_{k != j} x_k`` along the last axis, as prefix + suffix sums (no subtraction of a dominant term)."""
    pre = np.zeros_like(x)
    np.cumsum(x[..., :-1], axis=-1, out=pre[..., 1:])
    suf = np.zeros_like(x)
    np.cumsum(x[..., ::-1][..., :-1], axis=-1, out=suf[..., ::-1][..., 1:])
    return pre + suf


def _prefix(x: np.ndarray) -> np.ndarray:
    """Exclusive prefix sums along the last axis: ``P(x)_k = sum_{j<k} x_j``."""
    out = np.zeros_like(x)
    np.cumsum(x[..., :-1], axis=-1, out=out[..., 1:])
    return out


def cr3_from_totals(W: np.ndarray, Q: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(V_CR3, Satterthwaite df)`` from per-cluster totals along the last axis (module docstring).

    Args: ``W`` (..., G) cluster weight totals (> 0; sizes when unweighted), ``Q`` (..., G) sums of squared weights
        (sizes when unweighted), ``r`` (..., G) weighted residual sums ``w_j'(y_j - beta)``; at least 2 clusters.
    Returns: ``V`` and ``df``, shape (...).
    """
    W = np.asarray(W, dtype=np.float64)
    Q = np.asarray(Q, dtype=np.float64)
    w_out = _exclusive(W)
    q_out = _exclusive(Q)
    V = np.sum(r * r / (w_out * w_out), axis=-1)
    total = W.sum(-1, keepdims=True)
    s2 = Q.sum(-1, keepdims=True)
    b = W / w_out
    u = (total / w_out) * Q
    diag = Q + b * b * q_out
    ub, b2, u2 = u * b, b * b, u * u
    cross = (
        b2 * _prefix(u2)
        + u2 * _prefix(b2)
        + 2.0 * ub * _prefix(ub)
        + s2 * s2 * b2 * _prefix(b2)
        - 2.0 * s2 * (b2 * _prefix(ub) + ub * _prefix(b2))
    ).sum(-1)
    fro = np.sum(diag * diag, axis=-1) + 2.0 * np.maximum(cross, 0.0)
    tr = diag.sum(-1)
    return V, tr * tr / fro


def cr3(y, clusters, *, weights=None, level=0.95, fpc=None, clip=True) -> Interval:
    """CR3 (jackknife) cluster-robust t interval for the (weighted) mean of ``y`` with Satterthwaite df.

    Args:
        y: per-row values, shape (N,), finite floats.
        clusters: cluster label per row, shape (N,); at least 2 clusters (singletons fine).
        weights: optional non-negative row weights (ratio estimator ``sum w y / sum w``; zero-weight rows dropped).
        level: two-sided confidence level in (0, 1).
        fpc: population number of clusters ``G_pop >= G`` (variance times ``1 - G/G_pop``) or None; df unchanged.
        clip: clip the bounds to [0, 1] when every ``y`` lies in [0, 1].

    Returns:
        :class:`Interval` with method ``"cr3"``, the CR3 ``se``, the Satterthwaite ``df``; a warning when
        ``df < 4``. Constant ``y`` gives ``[y, y]`` (se 0). CR3 is at least as wide as CR2 (``(I - H_jj)^{-1}``
        dominates ``(I - H_jj)^{-1/2}``), so it errs on the conservative side with few or unequal clusters.

    Formula and sources: module docstring (Bell & McCaffrey 2002; Pustejovsky & Tipton 2018; clubSandwich CR3).

    Raises:
        HarnessInputError: non-finite or mismatched inputs, negative weights, fewer than 2 clusters, bad ``level``
            or ``fpc``.
    """
    func = "cr3"
    level = check_level(level, func)
    y, codes, G, w, info = prepare(y, clusters, weights, func)
    cs = cluster_sums(y, codes, G, w)
    beta_c = cs.estimate_c
    V, df = cr3_from_totals(cs.W, cs.Q, cs.SW - cs.W * beta_c)
    f = fpc_factor(fpc, G, func)
    se = float(np.sqrt(max(float(V) * f, 0.0)))
    df = float(df)
    est = cs.estimate
    crit = t_quantile(0.5 + level / 2.0, df)
    lower, upper = est - crit * se, est + crit * se
    extras: dict = dict(info)
    extras["weighted"] = cs.weighted
    if fpc is not None:
        extras.update({"fpc": float(fpc), "fpc_factor": f})
    lower, upper = clip_unit(lower, upper, clip and y.min() >= 0.0 and y.max() <= 1.0, extras)
    if df < LOW_DF:
        extras["warnings"] = [f"Satterthwaite df = {df:.3g} < 4: too few effective clusters for a reliable interval"]
    return Interval(
        method="cr3",
        estimate=float(est),
        se=se,
        df=df,
        lower=float(min(lower, est)),
        upper=float(max(upper, est)),
        level=level,
        n=cs.N,
        n_clusters=G,
        label="CR3 jackknife cluster-robust t (Satterthwaite df)",
        extras=extras,
    )


def cr3_kernel(batch: ClusterBatch, level: float, factors, draws: Resamples | None = None) -> list:
    """Batched :func:`cr3` (unweighted, unclipped): ``p -/+ t_df sqrt(V f)`` per sample, one pair per factor."""
    V, df = cr3_from_totals(batch.nf, batch.nf, batch.sf - batch.nf * batch.p[:, None])
    half = t_crit(level, df) * np.sqrt(V)
    return [(batch.p - root_factor(f) * half, batch.p + root_factor(f) * half) for f in factors]
