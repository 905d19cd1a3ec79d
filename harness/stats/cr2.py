"""CR2 cluster-robust interval for a (weighted) mean, with Satterthwaite degrees of freedom.

The mean is the intercept of the intercept-only WLS regression ``y ~ 1`` with weights ``w`` (all 1 when
unweighted): ``beta = sum(w*y) / sum(w)``. Sources: Bell & McCaffrey (2002), "Bias reduction in standard errors
for linear regression with multi-stage samples", Survey Methodology 28(2); Pustejovsky & Tipton (2018),
"Small-sample methods for cluster-robust variance estimation and hypothesis testing in fixed effects models",
JBES 36(4); reference implementation: R package clubSandwich, ``vcovCR(lm(y ~ 1, weights = w), cluster,
type = "CR2")`` with ``coef_test(..., test = "Satterthwaite")`` (golden values in tests/test_stats_cr2.py).

Closed form for the intercept-only model (derived from clubSandwich's code path: working covariance
``Phi = I``; for unweighted data this coincides with its ``inverse_var = TRUE`` path). With ``W = sum w``,
``S2 = sum w^2``, ``H = 1 w'/W`` and residuals ``r = y - beta``:

* ``G_j = (I - H)_j (I - H)_j' = I - (1 w_j' + w_j 1')/W + (S2/W^2) 1 1'`` (an ``n_j x n_j`` block),
  ``A_j = G_j^{-1/2}`` (symmetric inverse square root), ``a_j = A_j w_j``;
* ``V_CR2 = sum_j (a_j' r_j)^2 / W^2``;
* Satterthwaite: the estimate is the quadratic form ``e' (sum_j g_j g_j') e`` with ``g_j = (I - H)' a_j / W``;
  with ``Gamma_jk = g_j' g_k``, ``df = (tr Gamma)^2 / ||Gamma||_F^2``, and
  ``W^2 Gamma = diag(q) + (S2/W^2) s s' - (s t' + t s')/W`` where ``s_j = 1'a_j``, ``t_j = w_j'a_j``,
  ``q_j = a_j'a_j``.

``G_j`` is the identity outside ``span{1, w_j}``, so everything reduces to a 2x2 matrix per cluster in the
orthonormal basis ``e1 = 1/sqrt(n_j)``, ``e2 = (w_j - wbar_j 1)/delta_j``:
``[[1 - 2 n_j wbar_j / W + n_j S2/W^2, -sqrt(n_j) delta_j / W], [-sqrt(n_j) delta_j / W, 1]]``; its inverse
square root has a closed form, so the whole computation is vectorised over clusters (and over bootstrap
replicates in :mod:`harness.stats.bootstrap`).
"""

from __future__ import annotations

import numpy as np

from harness.stats._core import (
    ClusterSums,
    check_level,
    cluster_sums,
    fail,
    fpc_factor,
    prepare,
    t_quantile,
)
from harness.stats.interval import Interval

LOW_DF = 4.0


def _inv_sqrt_2x2(a, b, d):
    """Entries ``(r11, r12, r22)`` of ``M^{-1/2}`` for symmetric positive definite ``M = [[a, b], [b, d]]``.

    With ``s = sqrt(det M)`` and ``tau = sqrt(a + d + 2 s)``, ``sqrt(M) = (M + s I)/tau`` and hence
    ``M^{-1/2} = [[d + s, -b], [-b, a + s]] / (s * tau)``.
    """
    s = np.sqrt(a * d - b * b)
    tau = np.sqrt(a + d + 2.0 * s)
    k = 1.0 / (s * tau)
    return (d + s) * k, -b * k, (a + s) * k


def cr2_pieces(n, wbar, delta, z, resid_sum, W, S2):
    """Per-cluster CR2 quantities ``(s, t, q, u)`` (arrays broadcast over clusters and replicates).

    Arguments: cluster size ``n``, mean weight ``wbar``, weight spread ``delta``, ``z`` (see
    :class:`~harness.stats._core.ClusterSums`), ``resid_sum = sum_j (y - beta)`` (unweighted residual sum),
    totals ``W = sum w`` and ``S2 = sum w^2``. Returns ``s_j = 1'a_j``, ``t_j = w_j'a_j``, ``q_j = a_j'a_j`` and
    ``u_j = a_j' r_j`` with ``a_j = G_j^{-1/2} w_j`` (module docstring).
    """
    sqn = np.sqrt(n)
    a = 1.0 - 2.0 * n * wbar / W + n * S2 / (W * W)
    b = -sqn * delta / W
    r11, r12, r22 = _inv_sqrt_2x2(a, b, 1.0)
    om1 = wbar * sqn
    b1 = r11 * om1 + r12 * delta
    b2 = r12 * om1 + r22 * delta
    s = sqn * b1
    t = om1 * b1 + delta * b2
    q = b1 * b1 + b2 * b2
    u = b1 * resid_sum / sqn + b2 * z
    return s, t, q, u


def satterthwaite_df(s: np.ndarray, t: np.ndarray, q: np.ndarray, W: float, S2: float) -> float:
    """``(tr Gamma)^2 / ||Gamma||_F^2`` for ``Gamma = diag(q) + alpha s s' - beta (s t' + t s')`` in O(G).

    ``alpha = S2/W^2``, ``beta = 1/W``. Write ``Gamma = D + U C U'`` with ``U = [s, t]`` and
    ``C = [[alpha, -beta], [-beta, 0]]``: ``||Gamma||^2 = ||D||^2 + 2 tr(D U C U') + tr((C U'U)^2)``.
    """
    alpha, beta = S2 / (W * W), 1.0 / W
    ss, st, tt = float(s @ s), float(s @ t), float(t @ t)
    trace = float(q.sum()) + alpha * ss - 2.0 * beta * st
    dd = float(q @ q)
    dl = float(q @ (alpha * s * s - 2.0 * beta * s * t))
    CK = np.array([[alpha, -beta], [-beta, 0.0]]) @ np.array([[ss, st], [st, tt]])
    ll = float(np.trace(CK @ CK))
    fro = dd + 2.0 * dl + ll
    if fro <= 0.0:
        return float("nan")
    return trace * trace / fro


def cr2_from_sums(cs: ClusterSums) -> tuple[float, float, float]:
    """``(estimate, V_CR2, Satterthwaite df)`` from per-cluster sums (no fpc applied)."""
    W = float(cs.W.sum())
    S2 = float(cs.Q.sum())
    beta_c = float(cs.SW.sum()) / W
    s, t, q, u = cr2_pieces(cs.n, cs.wbar, cs.delta, cs.z, cs.Sy - cs.n * beta_c, W, S2)
    V = float(u @ u) / (W * W)
    df = satterthwaite_df(s, t, q, W, S2)
    return cs.y0 + beta_c, V, df


def _in_unit(y: np.ndarray) -> bool:
    return bool(y.min() >= 0.0 and y.max() <= 1.0)


def cr2(y, clusters, *, weights=None, level=0.95, fpc=None, transform=None, clip=True) -> Interval:
    """CR2 cluster-robust t interval for the (weighted) mean of ``y`` with Satterthwaite df.

    Args:
        y: per-row metric values, shape (N,), finite floats (usually in [0, 1]).
        clusters: cluster label per row (document id), shape (N,), any comparable hashables; at least 2 clusters.
            Clusters of a single row are fine.
        weights: optional non-negative row weights, shape (N,) (e.g. chunk counts for a micro average). The
            estimate is then the ratio ``sum w*y / sum w`` and the variance is clubSandwich's for
            ``lm(y ~ 1, weights = w)``. Zero-weight rows are dropped (as in clubSandwich).
        level: two-sided confidence level in (0, 1).
        fpc: finite-population correction given as the POPULATION NUMBER OF CLUSTERS ``G_pop >= G``; the CR2
            variance is multiplied by ``1 - G/G_pop`` (sampling documents without replacement from a finite
            corpus). df are not changed. None: no correction.
        transform: None, or ``"logit"``: the interval is built on the logit scale with the delta method,
            ``se_logit = se / (p (1 - p))``, ``logit(p) -/+ t * se_logit``, and back-transformed with the
            logistic function (needs all ``y`` in [0, 1]; bounds stay in (0, 1)). An estimate of exactly 0 or 1
            (then ``se == 0``) gives the degenerate interval ``[p, p]`` with a warning.
        clip: clip the bounds to [0, 1] when every ``y`` lies in [0, 1] (ignored otherwise).

    Returns:
        :class:`Interval` with method ``"cr2"`` (or ``"cr2_logit"``), ``se`` on the original scale, the
        Satterthwaite ``df``; ``extras["warnings"]`` notes ``df < 4`` (CR2 t intervals are then wide and their
        coverage less certain).

    Formula and sources: module docstring (Bell & McCaffrey 2002; Pustejovsky & Tipton 2018; clubSandwich).

    Raises:
        HarnessInputError: non-finite or mismatched inputs, negative weights, fewer than 2 clusters, a bad
            ``level``/``fpc``/``transform``, or ``transform="logit"`` with ``y`` outside [0, 1].
    """
    func = "cr2"
    level = check_level(level, func)
    if transform not in (None, "logit"):
        raise fail(func, "transform", f"must be None or 'logit', got {transform!r}")
    y, codes, G, w, info = prepare(y, clusters, weights, func)
    cs = cluster_sums(y, codes, G, w)
    est, V, df = cr2_from_sums(cs)
    f = fpc_factor(fpc, G, func)
    se = float(np.sqrt(max(V * f, 0.0)))
    crit = t_quantile(0.5 + level / 2.0, df)
    warnings: list[str] = []
    extras: dict = dict(info)
    if df < LOW_DF:
        warnings.append(f"Satterthwaite df = {df:.3g} < 4: too few effective clusters for a reliable interval")
    if fpc is not None:
        extras["fpc"] = float(fpc)
        extras["fpc_factor"] = f
    extras["weighted"] = cs.weighted
    unit = _in_unit(y)
    method = "cr2"
    if transform == "logit":
        method = "cr2_logit"
        if not unit:
            raise fail(func, "y", "transform='logit' needs every value in [0, 1]")
        if se == 0.0 or est <= 0.0 or est >= 1.0:
            if se != 0.0:  # pragma: no cover - est in {0,1} with y in [0,1] forces se == 0
                raise fail(func, "y", "logit interval undefined for an estimate of 0 or 1")
            lower = upper = est
            if est <= 0.0 or est >= 1.0:
                warnings.append("estimate is 0 or 1: logit interval degenerate")
        else:
            theta = np.log(est / (1.0 - est))
            se_logit = se / (est * (1.0 - est))
            lo, hi = theta - crit * se_logit, theta + crit * se_logit
            lower, upper = float(1.0 / (1.0 + np.exp(-lo))), float(1.0 / (1.0 + np.exp(-hi)))
            extras["se_logit"] = float(se_logit)
    else:
        lower, upper = est - crit * se, est + crit * se
        if clip and unit:
            if lower < 0.0 or upper > 1.0:
                extras["clipped"] = True
            lower, upper = max(lower, 0.0), min(upper, 1.0)
    if warnings:
        extras["warnings"] = warnings
    return Interval(
        method=method,
        estimate=float(est),
        se=se,
        df=float(df),
        lower=float(min(lower, est)),
        upper=float(max(upper, est)),
        level=level,
        n=cs.N,
        n_clusters=G,
        label="CR2 cluster-robust t (Satterthwaite df)" + (", logit scale" if transform else ""),
        extras=extras,
    )
