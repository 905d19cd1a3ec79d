"""Comparing two systems on the same questions: paired intervals, a cluster sign-flip test, Holm adjustment."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from harness.stats._core import as_vector, encode_clusters, fail
from harness.stats.interval import Interval
from harness.stats.methods import DEFAULTS, INTERVALS


def paired(y_a, y_b, clusters, *, method=None, level=0.95, weights=None, B=5000, seed=0, fpc=None) -> Interval:
    """Interval for the mean paired difference ``b - a`` (system b minus system a on the same rows).

    The row differences ``d = y_b - y_a`` keep the rows' clusters (the same question is scored by both systems, so
    the clustering of ``d`` is that of the questions) and go to the chosen registered method (one with
    ``paired=True``; default :data:`DEFAULTS` ``["paired"]``). When every value of both systems lies in [0, 1] (a
    unit metric), the difference lies in [-1, 1] and so must its interval: a bound past it is clipped to -1 or 1
    and marked, ``extras["clipped"] = True`` and ``extras["range"] = [-1.0, 1.0]`` (:func:`harness.evaluation.
    bounds.bounds` reads both), as single means are clipped to [0, 1]; a side the method cannot bound stays
    infinite (every rendering shows ``-inf`` / ``+inf``, and the gate refuses an MDD from it). Other values are not
    clipped.

    Args: ``y_a``, ``y_b`` (N,) finite floats; ``clusters`` (N,); ``method`` a registered paired method or None;
        ``weights`` (N,) for methods that take them; ``B``/``seed`` for resampling methods; ``fpc`` population
        number of clusters (rows for ``iid_wald``).
    Returns: :class:`Interval` with method ``"paired_<method>"`` and ``extras["paired"] = "b - a"``.
    Raises: HarnessInputError on bad inputs, mismatched lengths, an unknown or unpaired method, or weights/fpc given
        to a method that takes none.
    """
    func = "paired"
    name = DEFAULTS["paired"] if method is None else method
    names = paired_methods()
    if name not in names:
        raise fail(func, "method", f"must be one of {', '.join(names)}, got {name!r}")
    a = as_vector(y_a, "y_a", func)
    b = as_vector(y_b, "y_b", func, n=a.size)
    res = INTERVALS[name].compute(b - a, clusters, level=level, weights=weights, fpc=fpc, B=B, seed=seed, clip=False)
    extras = dict(res.extras)
    extras["paired"] = "b - a"
    lower, upper = res.lower, res.upper
    unit = bool(np.all((a >= 0.0) & (a <= 1.0)) and np.all((b >= 0.0) & (b <= 1.0)))
    if unit and ((-math.inf < lower < -1.0) or (1.0 < upper < math.inf)):
        extras["clipped"] = True
        extras["range"] = [-1.0, 1.0]
        lower = lower if math.isinf(lower) else max(lower, -1.0)
        upper = upper if math.isinf(upper) else min(upper, 1.0)
    return replace(
        res,
        lower=lower,
        upper=upper,
        method="paired_" + res.method,
        label=f"paired difference b - a; {res.label}",
        extras=extras,
    )


def paired_methods() -> tuple[str, ...]:
    """Names of the methods offered for paired differences, in registration order: those with ``paired=True`` that
    need no frame (not Wu's): the SRS methods a run computes and Hansen-Hurwitz, which ``compare`` and ``gate`` use
    on a gold set planned by PPS (:func:`harness.evaluation.design.paired_method`)."""
    return tuple(m.name for m in INTERVALS.values() if m.paired and not m.frame)


_CELLS_PER_BATCH = 2_000_000


def randomization_test(diff, clusters, *, reps=10000, seed=0) -> float:
    """Two-sided cluster-level sign-flip randomization test of ``mean(diff) = 0``.

    Under H0 (the two systems are exchangeable within each cluster) the sign of each cluster's total difference
    ``T_g = sum_{i in g} diff_i`` is equally likely + or -. Statistic: ``S = sum_g T_g`` (N times the mean
    difference). ``p = #{sign vectors s : |sum_g s_g T_g| >= |S|} / #{sign vectors}`` (Fisher 1935; Good 2005,
    Permutation, Parametric and Bootstrap Tests, ch. 3; Cameron, Gelbach & Miller 2008 for clustered data).

    * Exact enumeration of all ``2**G`` sign vectors when ``2**G <= reps``.
    * Otherwise ``reps`` random sign vectors from ``numpy.random.default_rng(seed)`` and
      ``p = (1 + #{|S*| >= |S|}) / (reps + 1)`` (valid Monte Carlo p-value; Phipson & Smyth 2010).

    Ties are counted with a relative tolerance of 1e-10. Args: ``diff`` (N,) finite floats, ``clusters`` (N,),
    ``reps >= 1``. Returns: p in (0, 1]. Raises: HarnessInputError on bad inputs.
    """
    func = "randomization_test"
    d = as_vector(diff, "diff", func)
    codes, G = encode_clusters(clusters, d.size, func)
    if int(reps) != reps or reps < 1:
        raise fail(func, "reps", f"must be a positive integer, got {reps}")
    reps = int(reps)
    T = np.sort(np.bincount(codes, weights=d, minlength=G))  # canonical order: labels do not change the draws
    obs = abs(float(T.sum()))
    tol = 1e-10 * float(np.abs(T).sum())
    if obs <= tol:
        return 1.0
    exact = G < 63 and 2**G <= reps
    total = 2**G if exact else reps
    batch = max(1, _CELLS_PER_BATCH // G)
    count = 0
    rng = None if exact else np.random.default_rng(seed)
    bits = np.arange(G, dtype=np.int64)
    for start in range(0, total, batch):  # loop over batches of sign vectors, not rows
        m = min(batch, total - start)
        if exact:
            k = np.arange(start, start + m, dtype=np.int64)
            signs = 1.0 - 2.0 * ((k[:, None] >> bits[None, :]) & 1)
        else:
            signs = 1.0 - 2.0 * rng.integers(0, 2, size=(m, G))
        count += int((np.abs(signs @ T) >= obs - tol).sum())
    if exact:
        return count / total
    return (1 + count) / (reps + 1)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm (1979) step-down adjusted p-values (family-wise error control), in the input order.

    Sorted ascending ``p_(1) <= ... <= p_(m)``: ``adj_(i) = max_{j <= i} min(1, (m - j + 1) p_(j))``.
    Same as R's ``p.adjust(p, "holm")``. Args: a sequence of p-values in [0, 1] (may be empty).
    Returns: list of floats, each >= its raw p and <= 1. Raises: HarnessInputError for values outside [0, 1]/NaN.
    """
    p = np.asarray(list(pvalues), dtype=np.float64)
    if p.size == 0:
        return []
    if p.ndim != 1 or not np.all((p >= 0.0) & (p <= 1.0)):
        raise fail("holm", "pvalues", "every p-value must be a number in [0, 1]")
    m = p.size
    order = np.argsort(p, kind="stable")
    adj_sorted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adj_sorted
    return [float(v) for v in out]
