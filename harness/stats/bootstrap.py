"""Cluster (document-level) bootstrap intervals for a (weighted) mean: percentile, bootstrap-t and BCa.

Resampling: the G clusters are drawn with replacement (Davison & Hinkley 1997, sec. 3.8, "strategy 1":
resample whole clusters, keep their rows). A replicate is a count vector ``c`` (how often each cluster was
drawn), drawn as Multinomial(G, 1/G, ..., 1/G) from ``numpy.random.default_rng(seed)``, so all B replicates
form a (B, G) count matrix and every replicate statistic is a matrix product over per-cluster sums:
``mean* = (C @ sum_w_y) / (C @ sum_w)``. A duplicated cluster counts as distinct clusters.

* Percentile: the ``(1-level)/2`` and ``(1+level)/2`` quantiles of the replicate means (Efron & Tibshirani
  1993, ch. 13; linear interpolation, numpy's default).
* Bootstrap-t: each replicate is studentised by its own analytic CR2 standard error
  (:mod:`harness.stats.cr2`, evaluated in closed form for all replicates at once; no nested resampling),
  ``t* = (mean* - mean) / se*``; bounds ``mean - q_{1-a/2}(t*) se``, ``mean - q_{a/2}(t*) se`` with ``se`` the
  CR2 SE of the sample (Efron & Tibshirani 1993, ch. 12; Cameron, Gelbach & Miller 2008 for clustered data).
  CR2 rather than CR0 is used because the closed form makes it as cheap, and it is the SE reported by
  :func:`~harness.stats.cr2.cr2`, so the two intervals share a scale.

* BCa: bias-corrected and accelerated percentile bounds from the same replicates, the acceleration from the
  leave-one-cluster-out jackknife (Efron 1987; DiCiccio & Efron 1996; :mod:`harness.stats.bca`).

Monte Carlo error of each bound (``extras["mc_se_lower"|"mc_se_upper"]``): the binomial/order-statistic
method of :func:`harness.stats._core.order_statistic_mc_se`.

Finite populations (``fpc`` = population number of clusters): percentile deviations ``mean* - mean`` are
shrunk by ``sqrt(1 - G/G_pop)``; for bootstrap-t the sample SE is multiplied by the same factor (``t*`` is a
ratio, unaffected).

Replicates are reproducible for a given ``(seed, B)`` and data: clusters are put in a canonical order (by their
sufficient statistics), so neither cluster labels nor row order change the draws.
"""

from __future__ import annotations

import functools

import numpy as np

from harness.stats._core import (
    ClusterSums,
    check_level,
    clip_unit,
    cluster_sums,
    fail,
    fpc_factor,
    order_statistic_mc_se,
    prepare,
    sorted_quantile,
)
from harness.stats.bca import bca_bounds, bca_levels, jackknife_ratio
from harness.stats.cr2 import cr2_from_sums, cr2_pieces
from harness.stats.interval import Interval

_CELLS_PER_BATCH = 1_000_000
_CACHED_CELLS = 8_000_000
FEW_CLUSTERS = 10
#: The bootstrap intervals (``kind``) and the registry name of each.
KINDS = ("percentile", "bootstrap_t", "bca")
NAMES = {"percentile": "bootstrap_percentile", "bootstrap_t": "bootstrap_t", "bca": "bca"}


def _count_batches(G: int, B: int, seed: int):
    """The (b, G) count matrices of the B replicates, batch by batch, drawn from ``default_rng(seed)``.

    They depend on ``(G, B, seed)`` only, not on the data, so every metric of a run (same clusters, same seed) and
    both bootstrap kinds reuse one draw: up to :data:`_CACHED_CELLS` cells are kept (read-only) between calls.
    """
    if B * G <= _CACHED_CELLS:
        return _cached_count_batches(G, B, seed)
    return _draw_count_batches(G, B, seed)


def _draw_count_batches(G: int, B: int, seed: int):
    rng = np.random.default_rng(seed)
    pvals = np.full(G, 1.0 / G)
    batch = max(1, min(B, _CELLS_PER_BATCH // G))
    for start in range(0, B, batch):  # loop over batches of replicates, not rows
        yield start, rng.multinomial(G, pvals, size=min(batch, B - start)).astype(np.float64)


@functools.lru_cache(maxsize=2)
def _cached_count_batches(G: int, B: int, seed: int) -> tuple:
    out = tuple(_draw_count_batches(G, B, seed))
    for _, C in out:
        C.flags.writeable = False
    return out


def _replicates(cs: ClusterSums, B: int, seed: int, studentise: bool) -> tuple[np.ndarray, np.ndarray | None, int]:
    """Replicate means of the shifted y (shape (B,)), their CR2 SEs (or None), and the batch size used."""
    G = cs.G
    batch = max(1, min(B, _CELLS_PER_BATCH // G))
    means = np.empty(B)
    ses = np.empty(B) if studentise else None
    for start, C in _count_batches(G, B, seed):
        b = C.shape[0]
        Wst = C @ cs.W
        beta = (C @ cs.SW) / Wst
        means[start : start + b] = beta
        if studentise:
            S2st = C @ cs.Q
            resid = cs.Sy[None, :] - cs.n[None, :] * beta[:, None]
            with np.errstate(invalid="ignore", divide="ignore"):
                row = (cs.n[None, :], cs.wbar[None, :], cs.delta[None, :], cs.z[None, :])
                out = (Wst[:, None] - cs.W[None, :], S2st[:, None] - cs.Q[None, :])  # totals outside a copy
                _, _, u = cr2_pieces(*row, resid, Wst[:, None], S2st[:, None], *out)
            u = np.where(C > 0, u, 0.0)  # absent clusters: their (meaningless) G_j may be indefinite
            ses[start : start + b] = np.sqrt(np.einsum("bg,bg->b", C, u * u)) / Wst
    return means, ses, batch


def _t_stats(means: np.ndarray, ses: np.ndarray, beta_hat: float) -> tuple[np.ndarray, int]:
    num = means - beta_hat
    zero = ses == 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(zero, np.where(num == 0.0, 0.0, np.sign(num) * np.inf), num / np.where(zero, 1.0, ses))
    return t, int(zero.sum())


def _finish(method, est, se, df, lower, upper, level, cs, label, extras, warnings) -> Interval:
    if not (lower <= est <= upper):
        warnings.append("estimate fell outside the bootstrap bounds; bound moved to the estimate")
        lower, upper = min(lower, est), max(upper, est)
    if warnings:
        extras["warnings"] = warnings
    return Interval(
        method=method,
        estimate=float(est),
        se=se,
        df=df,
        lower=float(lower),
        upper=float(upper),
        level=level,
        n=cs.N,
        n_clusters=cs.G,
        label=label,
        extras=extras,
    )


def bootstrap_intervals(
    y, clusters, *, weights=None, B=5000, seed=0, level=0.95, fpc=None, kinds=("percentile", "bootstrap_t"), clip=True
) -> dict[str, Interval]:
    """Both bootstrap intervals from ONE set of replicates (what :func:`cluster_bootstrap` and
    :func:`harness.stats.all_intervals` use). Returns ``{"bootstrap_percentile": ..., "bootstrap_t": ...}`` for
    the requested ``kinds`` (and ``"bca"``). Arguments as :func:`cluster_bootstrap`."""
    func = "cluster_bootstrap"
    level = check_level(level, func)
    kinds = tuple(kinds)
    for k in kinds:
        if k not in KINDS:
            raise fail(func, "kind", f"must be one of {', '.join(KINDS)}, got {k!r}")
    if int(B) != B or B < 100:
        raise fail(func, "B", f"must be an integer >= 100, got {B}")
    B = int(B)
    y, codes, G, w, info = prepare(y, clusters, weights, func)
    cs = cluster_sums(y, codes, G, w)
    f = fpc_factor(fpc, G, func)
    root_f = float(np.sqrt(f))
    beta_hat = cs.estimate_c
    est = cs.estimate
    studentise = "bootstrap_t" in kinds
    means, ses, batch = _replicates(cs, B, seed, studentise)
    a = (1.0 - level) / 2.0
    unit = bool(y.min() >= 0.0 and y.max() <= 1.0)
    base = dict(info)
    base.update({"B": B, "seed": seed, "weighted": cs.weighted, "batch_rows": batch})
    if fpc is not None:
        base.update({"fpc": float(fpc), "fpc_factor": f})
    common_warn = []
    if G < FEW_CLUSTERS:
        common_warn.append(f"only {G} clusters: cluster bootstrap intervals tend to be too narrow")
    out: dict[str, Interval] = {}
    if "percentile" in kinds:
        srt = np.sort(means)
        lo_q, hi_q = sorted_quantile(srt, a), sorted_quantile(srt, 1.0 - a)
        lower = est + root_f * (lo_q - beta_hat)
        upper = est + root_f * (hi_q - beta_hat)
        extras = dict(base)
        extras.update(
            {
                "kind": "percentile",
                "mc_se_lower": root_f * order_statistic_mc_se(srt, a),
                "mc_se_upper": root_f * order_statistic_mc_se(srt, 1.0 - a),
            }
        )
        se_boot = float(root_f * np.std(means, ddof=1))
        out["bootstrap_percentile"] = _finish(
            "bootstrap_percentile",
            est,
            se_boot,
            None,
            lower,
            upper,
            level,
            cs,
            "cluster bootstrap, percentile (se = SD of replicates)",
            extras,
            list(common_warn),
        )
    if "bca" in kinds:
        jack = jackknife_ratio(cs.SW, cs.W)
        lo_q, hi_q = bca_bounds(beta_hat, means, jack, level)
        a1, a2 = bca_levels(beta_hat, means, jack, level)
        extras = dict(base)
        extras.update({"kind": "bca", "alpha": [float(a1), float(a2)]})
        out["bca"] = _finish(
            "bca",
            est,
            float(root_f * np.std(means, ddof=1)),
            None,
            est + root_f * (float(lo_q) - beta_hat),
            est + root_f * (float(hi_q) - beta_hat),
            level,
            cs,
            "cluster bootstrap, BCa (se = SD of replicates)",
            extras,
            list(common_warn),
        )
    if studentise:
        _, V, _ = cr2_from_sums(cs)
        se = float(np.sqrt(max(V * f, 0.0)))
        t, n_zero = _t_stats(means, ses, beta_hat)
        srt = np.sort(t)
        q_lo, q_hi = sorted_quantile(srt, a), sorted_quantile(srt, 1.0 - a)
        warns = list(common_warn)
        if se == 0.0:
            lower = upper = est
        else:
            lower, upper = est - q_hi * se, est - q_lo * se
        extras = dict(base)
        extras.update(
            {
                "kind": "bootstrap_t",
                "se_estimator": "CR2",
                "t_quantiles": [q_lo, q_hi],
                "degenerate_replicates": n_zero,
                "mc_se_lower": se * order_statistic_mc_se(srt, 1.0 - a) if se > 0 else 0.0,
                "mc_se_upper": se * order_statistic_mc_se(srt, a) if se > 0 else 0.0,
            }
        )
        if n_zero and se > 0:
            warns.append(f"{n_zero} replicates had a zero SE (t* set to 0 or +-inf)")
        if not (np.isfinite(lower) and np.isfinite(upper)):
            warns.append("bootstrap-t bound is infinite (too few clusters)")
        lower, upper = clip_unit(lower, upper, clip and unit, extras)
        label = "cluster bootstrap-t (CR2-studentised)"
        out["bootstrap_t"] = _finish("bootstrap_t", est, se, None, lower, upper, level, cs, label, extras, warns)
    return out


def cluster_bootstrap(
    y, clusters, *, weights=None, B=5000, seed=0, level=0.95, kind="percentile", fpc=None, clip=True
) -> Interval:
    """Cluster bootstrap interval for the (weighted) mean of ``y``.

    Args:
        y: per-row metric values, shape (N,), finite floats.
        clusters: cluster label per row, shape (N,); at least 2 clusters (fewer than 10 adds a warning).
        weights: optional non-negative row weights (ratio estimator ``sum w*y / sum w``); zero-weight rows dropped.
        B: number of bootstrap replicates (>= 100; default 5000).
        seed: seed of ``numpy.random.default_rng``; same data + seed + B give the same interval.
        level: two-sided confidence level in (0, 1).
        kind: ``"percentile"``, ``"bootstrap_t"`` (CR2-studentised) or ``"bca"`` (bias-corrected and accelerated).
        fpc: population number of clusters (see module docstring), or None.
        clip: clip the bootstrap-t bounds to [0, 1] when every ``y`` lies in [0, 1].

    Returns:
        :class:`Interval` (``method`` ``"bootstrap_percentile"``, ``"bootstrap_t"`` or ``"bca"``; ``df`` None);
        extras hold ``B``, ``seed``, ``mc_se_lower``/``mc_se_upper`` (Monte Carlo SE of each bound), warnings.

    Formulas and sources: module docstring (Efron & Tibshirani 1993; Davison & Hinkley 1997).

    Raises:
        HarnessInputError: bad inputs, ``B < 100``, unknown ``kind``, fewer than 2 clusters.
    """
    if kind not in KINDS:
        raise fail("cluster_bootstrap", "kind", f"must be one of {', '.join(KINDS)}, got {kind!r}")
    res = bootstrap_intervals(
        y, clusters, weights=weights, B=B, seed=seed, level=level, fpc=fpc, kinds=(kind,), clip=clip
    )
    return next(iter(res.values()))
