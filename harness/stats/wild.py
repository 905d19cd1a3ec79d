"""Restricted wild cluster bootstrap (WCR) for a mean: p-values, and a confidence interval by test inversion.

Model: the intercept-only regression ``y = theta + e`` with clusters j (sizes ``n_j``, sums ``S_j``, ``N = sum n``).
To test ``H0: theta = theta0`` the bootstrap imposes the null (Cameron, Gelbach & Miller 2008, "Bootstrap-based
improvements for inference with clustered errors", REStat 90(3)): ``y*_i = theta0 + v_j (y_i - theta0)`` with one
weight ``v_j`` per cluster, and compares the CRV1 t statistic of the sample with those of the bootstrap samples
(the "WCR11" bootstrap of MacKinnon & Webb 2017, "Wild bootstrap inference for wildly different cluster sizes",
J. Applied Econometrics 32(2); Roodman, MacKinnon, Nielsen & Webb 2019, "Fast and wild: bootstrap inference in Stata
using boottest", Stata Journal 19(1)). The symmetric p-value is ``p(theta0) = #{b : |t*_b| > |t|} / B``.

Weights: Rademacher (+-1 with probability 1/2) or, with few clusters, Webb's six-point distribution
(``+-sqrt(1/2), +-1, +-sqrt(3/2)``, each 1/6; Webb 2023, "Reworking wild bootstrap-based inference for clustered
errors", Canadian J. Economics 56(3)). ``wild="auto"`` takes Webb for ``G < 12``: Rademacher weights give only
``2^G`` bootstrap samples and, as ``t*(-v) = -t*(v)``, at most ``2^(G-1)`` distinct ``|t*|``; below about 12 clusters
the few tail values at level 0.95 make p-values and interval ends coarse and tied (MacKinnon & Webb 2018, "The wild
bootstrap for few (treated) clusters", Econometrics Journal 21(2), find Rademacher reliable from about a dozen
clusters on). When ``2^G <= B`` Rademacher draws are replaced by the exact enumeration of all ``2^G`` sign vectors.
Weight vectors with all entries equal reproduce ``|t*| = |t|`` exactly and never count as exceeding it; other exact
ties are judged to rounding level (:meth:`WildParts.exceed_count`).

Closed form (no refitting). With residual sums ``E_j = S_j - n_j ybar`` and ``delta = ybar - theta0``, for weights
``v``: ``alpha = v'E``, ``beta = v'n``, ``P_j = v_j E_j - n_j alpha / N``, ``R_j = v_j n_j - n_j beta / N``. Then
``t^2 = delta^2 N^2 / (k e2)`` with ``e2 = sum E_j^2`` and ``t*^2 = (alpha + delta beta)^2 / (k D(delta))``,
``D(delta) = sum_j (P_j + delta R_j)^2`` (``k`` the CRV1 small-sample factor ``G/(G-1)``, which cancels), so
``|t*| > |t|`` exactly when the quartic ``q(delta) = e2 (alpha + delta beta)^2 - N^2 delta^2 D(delta)`` is positive.
Each bootstrap draw is five numbers; a p-value at any ``theta0`` costs O(B).

Interval: ``{theta : p(theta) >= 1 - level}`` (the values the level-``1 - level`` test does not reject). From the
estimate (``delta = 0``, accepted unless nearly every draw has ``alpha = 0``) each side is searched outward in steps
doubling from the CRV1 standard error until a rejected point, then bisected (42 halvings) to the crossing; if no
point is rejected within ``2^64`` standard errors the bound is infinite. A confidence set that is not an interval
(possible in principle) yields its innermost crossings. ``y`` constant within every cluster mean (``e2 = 0``) gives
``[ybar, ybar]``. Unweighted only (the reference, Python ``wildboottest``, has no weights).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from harness.stats._core import check_level, clip_unit, cluster_sums, fail, prepare
from harness.stats.batched import ClusterBatch, Resamples
from harness.stats.interval import Interval

WEBB = np.array([-math.sqrt(1.5), -1.0, -math.sqrt(0.5), math.sqrt(0.5), 1.0, math.sqrt(1.5)])
#: Below this many clusters ``wild="auto"`` uses Webb's six-point weights (module docstring).
FEW_CLUSTERS = 12
_DOUBLINGS = 64
_HALVINGS = 42


def wild_weights(G: int, B: int, rng: np.random.Generator, wild: str = "auto") -> tuple[np.ndarray, str, bool]:
    """Bootstrap weights, shape (B', G), the distribution used and whether they are the full enumeration.

    ``wild``: ``"auto"`` (Webb below :data:`FEW_CLUSTERS` clusters, else Rademacher), ``"rademacher"`` or ``"webb"``.
    Rademacher with ``2^G <= B`` gives all ``2^G`` sign vectors (``B' = 2^G``; row k is the binary expansion of k,
    bit j -> cluster j, 1 -> -1); otherwise ``B' = B`` draws from ``rng``.
    """
    kind = ("webb" if G < FEW_CLUSTERS else "rademacher") if wild == "auto" else wild
    if kind not in ("rademacher", "webb"):
        raise fail("wild_cluster_bootstrap", "wild", f"must be 'auto', 'rademacher' or 'webb', got {wild!r}")
    if kind == "rademacher" and G < 63 and 2**G <= B:
        k = np.arange(2**G, dtype=np.int64)
        return 1.0 - 2.0 * ((k[:, None] >> np.arange(G, dtype=np.int64)[None, :]) & 1), kind, True
    if kind == "rademacher":
        return 1.0 - 2.0 * rng.integers(0, 2, size=(B, G), dtype=np.int8), kind, False
    return WEBB[rng.integers(0, 6, size=(B, G), dtype=np.int8)], kind, False


@dataclass(frozen=True)
class WildParts:
    """Per-draw coefficients of the quartic ``q(delta)`` (module docstring), arrays over (..., B) or (...)."""

    alpha: np.ndarray
    beta: np.ndarray
    p2: np.ndarray
    pr: np.ndarray
    r2: np.ndarray
    e2: np.ndarray
    N: np.ndarray
    constant: np.ndarray
    abs_e: np.ndarray

    @classmethod
    def build(cls, n: np.ndarray, E: np.ndarray, v: np.ndarray) -> WildParts:
        """From sizes and residual sums ``(..., K)`` and weights ``(..., B, K)`` (or ``(B, K)``, shared)."""
        n = np.asarray(n, dtype=np.float64)
        E = np.asarray(E, dtype=np.float64)
        big_n = n.sum(-1)
        alpha = np.einsum("...bk,...k->...b", v, E)
        beta = np.einsum("...bk,...k->...b", v, n)
        nn = n[..., None, :]
        P = v * E[..., None, :] - nn * (alpha / big_n[..., None])[..., None]
        R = v * nn - nn * (beta / big_n[..., None])[..., None]
        constant = np.all(v == v[..., :1], axis=-1)
        p2, pr, r2 = (P * P).sum(-1), (P * R).sum(-1), (R * R).sum(-1)
        return cls(alpha, beta, p2, pr, r2, (E * E).sum(-1), big_n, constant, np.abs(E).sum(-1))

    def exceed_count(self, delta: np.ndarray) -> np.ndarray:
        """``#{b : |t*_b| > |t|}`` at ``delta = ybar - theta0`` (shape (...)), i.e. draws with ``q(delta) > 0``.

        Exact ties count as not exceeding, judged to rounding level: ``t*^2 > t^2 (1 + 1e-9)``, and a bootstrap
        numerator ``alpha + delta beta`` within ``1e-12 (sum |E| + |delta| N)`` of 0 is 0 (``t* = 0``); so the
        constant weight vectors (``|t*| = |t|``) and, at ``theta0 = ybar``, draws with ``v'E = 0`` never count.
        """
        d = np.asarray(delta, dtype=np.float64)[..., None]
        nd = self.N[..., None] * d
        num = d * self.beta
        num += self.alpha
        rhs = d * self.r2
        rhs += 2.0 * self.pr
        rhs *= d
        rhs += self.p2
        rhs *= nd * nd * (1.0 + 1e-9)
        lhs = num * num
        lhs *= self.e2[..., None]
        hit = lhs > rhs
        np.abs(num, out=num)
        hit &= num > 1e-12 * (self.abs_e[..., None] + np.abs(nd))
        hit &= ~self.constant
        return np.count_nonzero(hit, axis=-1)


def _accepts(parts: WildParts, delta: np.ndarray, need: float) -> np.ndarray:
    return parts.exceed_count(delta) >= need


def wild_bounds(parts: WildParts, est: np.ndarray, level: float, B: int) -> tuple[np.ndarray, np.ndarray]:
    """Interval ends by test inversion (module docstring), vectorised over the leading shape of ``parts``; both
    sides are searched together (``side = +1``: ``delta > 0``, theta below the estimate; ``-1``: above)."""
    est = np.asarray(est, dtype=np.float64)
    need = (1.0 - level) * B - 1e-9 * B
    scale = np.sqrt(parts.e2) / parts.N
    degenerate = (scale == 0.0) | ~_accepts(parts, np.zeros_like(est), need)
    side = np.array([1.0, -1.0]).reshape((2,) + (1,) * est.ndim)
    lo = np.zeros((2, *est.shape))
    hi = np.full((2, *est.shape), np.inf)
    step = np.broadcast_to(np.where(degenerate, 1.0, scale), lo.shape).copy()
    found = np.broadcast_to(degenerate, lo.shape).copy()
    for _ in range(_DOUBLINGS):
        rejected = ~found & ~_accepts(parts, side * step, need)
        hi = np.where(rejected, step, hi)
        found |= rejected
        lo = np.where(found, lo, step)
        if found.all():
            break
        step = step * 2.0
    for _ in range(_HALVINGS):
        mid = np.where(np.isfinite(hi), 0.5 * (lo + hi), lo)
        ok = _accepts(parts, side * mid, need)
        lo = np.where(ok, mid, lo)
        hi = np.where(ok, hi, mid)
    ends = np.where(degenerate, 0.0, np.where(np.isfinite(hi), 0.5 * (lo + hi), np.inf))
    return est - ends[0], est + ends[1]


def _sample(y, clusters, func: str):
    yv, codes, G, _, info = prepare(y, clusters, None, func)
    cs = cluster_sums(yv, codes, G, None)
    return cs, cs.n, cs.Sy - cs.n * cs.estimate_c, info


def wild_cluster_pvalue(y, clusters, theta0: float, *, B: int = 9999, seed: int = 0, wild: str = "auto") -> float:
    """Symmetric WCR p-value of ``H0: mean(y) = theta0`` (module docstring), in [0, 1].

    Args: ``y`` (N,) finite floats; ``clusters`` (N,) labels, >= 2 clusters; ``theta0`` finite; ``B`` >= 1
        draws (ignored under exact enumeration); ``seed`` of ``numpy.random.default_rng``; ``wild`` weights.
    Returns: ``#{b : |t*_b| > |t|} / B'``. Raises: HarnessInputError on bad inputs.
    """
    func = "wild_cluster_pvalue"
    if int(B) != B or B < 1:
        raise fail(func, "B", f"must be a positive integer, got {B}")
    cs, n, E, _ = _sample(y, clusters, func)
    v, _, _ = wild_weights(cs.G, int(B), np.random.default_rng(seed), wild)
    parts = WildParts.build(n, E, v)
    return float(parts.exceed_count(np.asarray(cs.estimate - float(theta0)))) / v.shape[0]


def wild_cluster_bootstrap(y, clusters, *, level=0.95, B=9999, seed=0, wild="auto", clip=True) -> Interval:
    """Restricted wild cluster bootstrap interval for the mean of ``y``, by inverting the WCR test.

    Args:
        y: per-row values, shape (N,), finite floats.
        clusters: cluster label per row, shape (N,); at least 2 clusters.
        level: two-sided confidence level in (0, 1).
        B: bootstrap draws (>= 100; the exact enumeration of ``2^G`` Rademacher vectors replaces them when
            ``2^G <= B``). Labels and row order do not change the draws (clusters in canonical order).
        seed: seed of ``numpy.random.default_rng``.
        wild: ``"auto"``, ``"rademacher"`` or ``"webb"`` (module docstring).
        clip: clip the bounds to [0, 1] when every ``y`` lies in [0, 1] (an infinite bound then becomes 0 or 1).

    Returns:
        :class:`Interval` with method ``"wild_cluster"``, ``se`` the CRV1 standard error (``G/(G-1)`` factor),
        ``df`` None; ``extras``: ``weights`` (distribution), ``B`` (draws used), ``enumerated``, ``seed``,
        ``p_at_estimate``; warnings for few clusters and infinite or degenerate bounds.

    Raises:
        HarnessInputError: bad inputs, ``B < 100``, unknown ``wild``, fewer than 2 clusters.
    """
    func = "wild_cluster_bootstrap"
    level = check_level(level, func)
    if int(B) != B or B < 100:
        raise fail(func, "B", f"must be an integer >= 100, got {B}")
    cs, n, E, info = _sample(y, clusters, func)
    G = cs.G
    v, kind, enumerated = wild_weights(G, int(B), np.random.default_rng(seed), wild)
    parts = WildParts.build(n, E, v)
    est = cs.estimate
    lower, upper = (float(b) for b in wild_bounds(parts, np.asarray(est), level, v.shape[0]))
    e2 = float(E @ E)
    se = math.sqrt(G / (G - 1.0) * e2) / cs.N
    warnings: list[str] = []
    extras: dict = dict(info)
    extras.update({"weights": kind, "B": int(v.shape[0]), "enumerated": enumerated, "seed": seed})
    extras["p_at_estimate"] = float(parts.exceed_count(np.asarray(0.0))) / v.shape[0]
    if G < FEW_CLUSTERS:
        warnings.append(f"only {G} clusters: wild bootstrap p-values are coarse")
    if lower == upper == est and e2 > 0:
        warnings.append("degenerate interval: the test rejects at the estimate itself")
    if not (math.isfinite(lower) and math.isfinite(upper)):
        warnings.append("wild bootstrap bound is infinite (the test rejects nowhere on that side)")
    yv = np.asarray(y, dtype=np.float64)
    lower, upper = clip_unit(lower, upper, clip and yv.min() >= 0.0 and yv.max() <= 1.0, extras)
    if warnings:
        extras["warnings"] = warnings
    return Interval(
        method="wild_cluster",
        estimate=float(est),
        se=float(se),
        df=None,
        lower=float(min(lower, est)),
        upper=float(max(upper, est)),
        level=level,
        n=cs.N,
        n_clusters=G,
        label=f"restricted wild cluster bootstrap ({kind}), test inversion",
        extras=extras,
    )


def wild_cluster_kernel(batch: ClusterBatch, level: float, factors, draws: Resamples) -> list:
    """Batched :func:`wild_cluster_bootstrap` (no FPC: one pair). Weights from ``draws.stream("wild_cluster")``,
    one independent set of ``B`` draws per sample (shared enumeration when ``2^K <= B`` with Rademacher)."""
    r, k = batch.reps, batch.k
    rng = draws.stream("wild_cluster")
    if k < FEW_CLUSTERS:
        v = WEBB[rng.integers(0, 6, size=(r, draws.B, k), dtype=np.int8)]
    elif k < 63 and 2**k <= draws.B:
        v = wild_weights(k, draws.B, rng, "rademacher")[0]  # the enumeration, shared by every sample
    else:
        v = 1.0 - 2.0 * rng.integers(0, 2, size=(r, draws.B, k), dtype=np.int8)
    E = batch.sf - batch.nf * batch.p[:, None]
    parts = WildParts.build(batch.nf, E, v)
    lo, hi = wild_bounds(parts, batch.p, level, v.shape[-2])
    return [(lo, hi)]
