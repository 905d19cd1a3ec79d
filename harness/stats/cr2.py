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
* Satterthwaite: the estimate is the quadratic form ``e' (sum_j g_j g_j') e`` with ``g_j = (I - H)' a_j / W``
  and ``e ~ N(0, I)``; with ``Gamma_jk = g_j' g_k``, ``df = (tr Gamma)^2 / ||Gamma||_F^2`` (clubSandwich's
  ``2 E^2 / Var``). Since ``A_j G_j A_j = I``, ``W^2 Gamma_jj = w_j'w_j = Q_j`` exactly, and for ``j != k``
  ``W^2 Gamma_jk = -(s_j v_k + v_j s_k)/W`` with ``s_j = 1'a_j``, ``v_j = w_j'a_j - s_j S2/(2W)``. Hence
  ``df = (sum_j Q_j)^2 / (sum_j Q_j^2 + (2/W^2) sum_{j<k} (s_j v_k + s_k v_j)^2)``, the last sum taken with
  prefix sums (O(G), no cancellation of large self terms).

``G_j`` is the identity outside ``span{1, w_j}``, so everything reduces to a 2x2 matrix per cluster in the
orthonormal basis ``e1 = 1/sqrt(n_j)``, ``e2 = (w_j - wbar_j 1)/delta_j`` (``delta_j = ||w_j - wbar_j 1||``):
``[[a_j, -sqrt(n_j) delta_j / W], [-sqrt(n_j) delta_j / W, 1]]`` with
``a_j = 1 - 2 n_j wbar_j/W + n_j S2/W^2 = (Wout_j^2 + n_j delta_j^2 + n_j S2out_j) / W^2`` and determinant
``(Wout_j^2 + n_j S2out_j) / W^2``, where ``Wout_j``/``S2out_j`` are the sums of ``w``/``w^2`` outside cluster
j (sums of positive terms: accurate even when one cluster holds nearly all the weight). Its inverse square root
has a closed form, so the whole computation is vectorised over clusters (and over bootstrap replicates in
:mod:`harness.stats.bootstrap`).
"""

from __future__ import annotations

import numpy as np

from harness.stats._core import (
    ClusterSums,
    check_level,
    clip_unit,
    cluster_sums,
    fail,
    fpc_factor,
    prepare,
    t_quantile,
)
from harness.stats.interval import Interval

LOW_DF = 4.0


def cr2_pieces(n, wbar, delta, z, resid_sum, W, S2, W_out, S2_out):
    """Per-cluster CR2 quantities ``(s, v, u)`` (arrays broadcast over clusters and replicates).

    Arguments: cluster size ``n``, mean weight ``wbar``, weight spread ``delta``, ``z`` (see
    :class:`~harness.stats._core.ClusterSums`), ``resid_sum = sum_j (y - beta)`` (unweighted residual sum),
    totals ``W = sum w`` and ``S2 = sum w^2``, and the same totals outside the cluster, ``W_out``, ``S2_out``.
    Returns ``s_j = 1'a_j``, ``v_j = w_j'a_j - s_j S2/(2W)`` and ``u_j = a_j' r_j`` with ``a_j = G_j^{-1/2} w_j``.

    The 2x2 block ``M = [[a, b], [b, 1]]`` (module docstring) has ``M^{-1/2} = [[1 + r, -b], [-b, a + r]] /
    (r * tau)`` with ``r = sqrt(det M)``, ``tau = sqrt(a + 1 + 2 r)`` (since ``sqrt(M) = (M + r I)/tau``).
    """
    sqn = np.sqrt(n)
    W2 = W * W
    nd2 = n * delta * delta
    det = (W_out * W_out + n * S2_out) / W2
    a = det + nd2 / W2
    b = -sqn * delta / W
    r = np.sqrt(det)
    k = 1.0 / (r * np.sqrt(a + 1.0 + 2.0 * r))
    r11, r12, r22 = (1.0 + r) * k, -b * k, (a + r) * k
    om1 = wbar * sqn
    b1 = r11 * om1 + r12 * delta
    b2 = r12 * om1 + r22 * delta
    s = sqn * b1
    t = om1 * b1 + delta * b2
    v = t - s * S2 / (2.0 * W)
    u = b1 * resid_sum / sqn + b2 * z
    return s, v, u


def _satterthwaite_from_pieces(Q: np.ndarray, s: np.ndarray, v: np.ndarray, W: float) -> float:
    """``(sum Q)^2 / (sum Q^2 + (2/W^2) sum_{j<k} (s_j v_k + s_k v_j)^2)`` (module docstring), in O(G).

    ``sum_{j<k} (s_j v_k + s_k v_j)^2 = sum_k [v_k^2 P(s^2)_k + s_k^2 P(v^2)_k + 2 s_k v_k P(sv)_k]`` with
    ``P(x)_k = sum_{j<k} x_j`` (exclusive prefix sums).
    """

    def prefix(x):
        out = np.zeros_like(x)
        np.cumsum(x[:-1], out=out[1:])
        return out

    cross = float(v * v @ prefix(s * s) + s * s @ prefix(v * v) + 2.0 * (s * v) @ prefix(s * v))
    fro = float(Q @ Q) + 2.0 * max(cross, 0.0) / (W * W)
    total = float(Q.sum())
    return total * total / fro


def _exclusive_totals(x: np.ndarray) -> np.ndarray:
    """``sum_{k != j} x_k`` for every j, as prefix + suffix sums (no subtraction of a dominant term)."""
    pre = np.zeros_like(x)
    np.cumsum(x[:-1], out=pre[1:])
    suf = np.zeros_like(x)
    np.cumsum(x[::-1][:-1], out=suf[::-1][1:])
    return pre + suf


def cr2_from_sums(cs: ClusterSums) -> tuple[float, float, float]:
    """``(estimate, V_CR2, Satterthwaite df)`` from per-cluster sums (no fpc applied)."""
    W = float(cs.W.sum())
    S2 = float(cs.Q.sum())
    beta_c = float(cs.SW.sum()) / W
    s, v, u = cr2_pieces(
        cs.n, cs.wbar, cs.delta, cs.z, cs.Sy - cs.n * beta_c, W, S2, _exclusive_totals(cs.W), _exclusive_totals(cs.Q)
    )
    V = float(u @ u) / (W * W)
    df = _satterthwaite_from_pieces(cs.Q, s, v, W)
    return cs.y0 + beta_c, V, df


def satterthwaite_df(clusters, *, weights=None) -> float | None:
    """Satterthwaite degrees of freedom of the CR2 interval for a (weighted) mean over these clusters.

    For the intercept-only model the CR2 Satterthwaite df depends on the design only (cluster sizes and weights),
    not on the outcome (module docstring: ``df = (sum Q)^2 / (sum Q^2 + (2/W^2) sum_{j<k} (s_j v_k + s_k v_j)^2)``,
    whose terms involve no ``y``; Bell & McCaffrey 2002), so it describes a gold set itself. It equals the ``df`` of
    :func:`cr2` on any outcome over the same rows.

    Args: ``clusters`` (N,) labels; ``weights`` (N,) non-negative or None (zero-weight rows dropped).
    Returns: the df (> 0; at most ``G - 1`` when unweighted), or ``None`` with fewer than 2 clusters.
    Raises: HarnessInputError on bad labels or weights.
    """
    labels = np.asarray(clusters)
    if labels.size == 0:
        return None
    y = np.zeros(labels.size)
    y, codes, G, w, _ = prepare(y, labels, weights, "satterthwaite_df", min_clusters=1)
    if G < 2:
        return None
    return float(cr2_from_sums(cluster_sums(y, codes, G, w))[2])


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
        lower, upper = clip_unit(lower, upper, clip and unit, extras)
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
