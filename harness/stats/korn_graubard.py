"""Korn-Graubard interval for a proportion from clustered binary data: Clopper-Pearson on the effective sample size.

Korn & Graubard (1998), "Confidence intervals for proportions with small expected number of positive counts estimated
from survey data", Survey Methodology 24(2): 193-201. With the (weighted) proportion ``p = sum w y / W`` and its
design-based (linearisation) variance over clusters as primary sampling units,

    ``V = G/(G-1) * sum_j r_j^2 / W^2``,  ``r_j = w_j'(y_j - p)``  (times ``1 - G/G_pop`` with an FPC),

the effective sample size is ``n_eff = p (1 - p) / V``, adjusted for the design's degrees of freedom
``n* = n_eff * (t_{N-1, a/2} / t_{G-1, a/2})^2`` (``a = 1 - level``, N rows, G clusters), and the bounds are the
Clopper-Pearson (1934) ones with ``n*`` trials and ``n* p`` successes:
``lower = Beta^{-1}(a/2; n* p, n* (1 - p) + 1)``, ``upper = Beta^{-1}(1 - a/2; n* p + 1, n* (1 - p))``.
Reference implementation: R survey ``svyciprop(~y, svydesign(ids = ~cluster, ...), method = "beta")`` (golden values
in tests/test_stats_korn_graubard.py, script tests/r/cr3_kg_golden.R), which does not truncate ``n_eff`` at N.

Degenerate samples (documented choice; survey returns NaN there): when ``V = 0`` (``p`` is 0 or 1, or every cluster
has the same rate) the design effect is taken as 1, ``n_eff = N`` (the convention of Korn & Graubard 1998 and of
NCHS's data presentation standards for proportions, Parker et al. 2017), so ``p = 0`` gives ``[0, 1 - (a/2)^(1/n*)]``
and ``p = 1`` gives ``[(a/2)^(1/n*), 1]``. The interval is always inside [0, 1] and contains ``p``; it is not symmetric.
"""

from __future__ import annotations

import numpy as np
from scipy import special as _sp
from scipy import stats as _st

from harness.stats._core import check_level, cluster_sums, fail, fpc_factor, prepare
from harness.stats.batched import ClusterBatch, Resamples
from harness.stats.interval import Interval


def kg_bounds(p, V, N, G, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Korn-Graubard bounds from the proportion, its design variance, rows and clusters (arrays broadcast).

    Args: ``p`` in [0, 1]; ``V >= 0``; ``N`` rows; ``G >= 2`` clusters; ``level`` in (0, 1).
    Returns: ``(lower, upper, n_star)``, the df-adjusted effective sample size ``n*`` (module docstring).
    """
    p = np.asarray(p, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    N = np.asarray(N, dtype=np.float64)
    a = 1.0 - level
    with np.errstate(divide="ignore", invalid="ignore"):
        n_eff = np.where(V > 0, p * (1.0 - p) / V, N)
    ratio = _st.t.ppf(a / 2.0, N - 1.0) / _st.t.ppf(a / 2.0, np.asarray(G, dtype=np.float64) - 1.0)
    n_star = n_eff * ratio * ratio
    x = n_star * p
    lower = np.where(p > 0, _sp.betaincinv(np.where(p > 0, x, 1.0), n_star - x + 1.0, a / 2.0), 0.0)
    upper = np.where(p < 1, _sp.betaincinv(x + 1.0, np.where(p < 1, n_star - x, 1.0), 1.0 - a / 2.0), 1.0)
    return np.minimum(lower, p), np.maximum(upper, p), n_star


def korn_graubard(y, clusters, *, weights=None, level=0.95, fpc=None, clip=True) -> Interval:
    """Korn-Graubard (1998) interval for the (weighted) proportion of a binary ``y`` over clustered rows.

    Args:
        y: per-row outcomes, shape (N,), every value 0 or 1 (hit@k, all_hop@k).
        clusters: cluster label per row, shape (N,); at least 2 clusters.
        weights: optional non-negative row weights (``p = sum w y / sum w``; zero-weight rows dropped).
        level: two-sided confidence level in (0, 1).
        fpc: population number of clusters ``G_pop >= G`` (variance times ``1 - G/G_pop``) or None.
        clip: accepted for the registry's common signature; the bounds always lie in [0, 1].

    Returns:
        :class:`Interval` with method ``"korn_graubard"``, ``se = sqrt(V)`` (linearisation SE), ``df = G - 1``;
        ``extras`` has ``n_eff`` (``p(1-p)/V``), ``n_eff_df`` (``n*``) and ``deff`` (``N V / (p (1 - p))``, None
        when undefined); a warning when ``V = 0`` (design effect taken as 1, module docstring).

    Raises:
        HarnessInputError: a value other than 0/1, mismatched inputs, negative weights, fewer than 2 clusters, a bad
            ``level`` or ``fpc``.
    """
    func = "korn_graubard"
    level = check_level(level, func)
    yv, codes, G, w, info = prepare(y, clusters, weights, func)
    if not np.all((yv == 0.0) | (yv == 1.0)):
        bad = int(np.argmax((yv != 0.0) & (yv != 1.0)))
        raise fail(func, "y", f"needs binary (0/1) values, got {float(yv[bad]):g}")
    cs = cluster_sums(yv, codes, G, w)
    p = cs.estimate
    W = float(cs.W.sum())
    r = cs.SW - cs.W * cs.estimate_c
    f = fpc_factor(fpc, G, func)
    V = float(G / (G - 1.0) * float(r @ r) / (W * W) * f)
    if p in (0.0, 1.0):
        V = 0.0  # exact: every residual is 0 (guards against rounding in the weighted sums)
    lower, upper, n_star = (float(v) for v in kg_bounds(p, V, cs.N, G, level))
    extras: dict = dict(info)
    extras.update({"weighted": cs.weighted, "n_eff": cs.N if V == 0 else p * (1 - p) / V, "n_eff_df": n_star})
    extras["deff"] = cs.N * V / (p * (1 - p)) if 0.0 < p < 1.0 else None
    if fpc is not None:
        extras.update({"fpc": float(fpc), "fpc_factor": f})
    if V == 0.0:
        extras["warnings"] = ["zero design variance (p is 0 or 1, or every cluster has the same rate): design effect 1"]
    return Interval(
        method="korn_graubard",
        estimate=float(p),
        se=float(np.sqrt(V)),
        df=float(G - 1),
        lower=lower,
        upper=upper,
        level=level,
        n=cs.N,
        n_clusters=G,
        label="Korn-Graubard (Clopper-Pearson on the effective sample size, df-adjusted)",
        extras=extras,
    )


def korn_graubard_kernel(batch: ClusterBatch, level: float, factors, draws: Resamples | None = None) -> list:
    """Batched :func:`korn_graubard` (unweighted): one ``(lower, upper)`` pair per variance factor."""
    e = batch.sf - batch.nf * batch.p[:, None]
    k = batch.k
    v0 = k / (k - 1.0) * np.sum(e * e, axis=1) / (batch.N * batch.N)
    v0 = np.where((batch.p == 0.0) | (batch.p == 1.0), 0.0, v0)
    out = []
    for f in factors:
        lo, hi, _ = kg_bounds(batch.p, v0 * f, batch.N, k, level)
        out.append((lo, hi))
    return out
