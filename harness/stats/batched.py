"""Batched ``(reps, K)`` kernels of the interval methods: many samples of K clusters at once, from sums.

The coverage study (:mod:`harness.studies.coverage`) draws ``reps`` samples of K documents and needs every method's
interval for each of them; a Python loop over samples calling the scalar functions would be far too slow (R = 5,000
samples x B = 999 replicates). A sample is described by per-cluster sufficient statistics only, arrays of shape
``(reps, K)`` (:class:`ClusterBatch`): cluster sizes ``n``, outcome sums ``s`` and, for a non-binary outcome, sums of
squares ``ss`` (binary outcomes: ``ss = s``). Each method's kernel takes a batch and returns its bounds; row ``i`` of
a kernel's output equals the unclipped interval of that method's scalar function on sample ``i`` (tested for every
registered method in ``tests/test_stats_batched.py``). The kernels are unweighted (each row of a cluster counts once),
as the study samples whole documents.

Kernel protocol (what :mod:`harness.stats.methods` registers)::

    kernel(batch, level, factors, draws) -> [(lower, upper), ...]   # one pair of (reps,) arrays per factor

``factors`` are finite-population variance multipliers ``1 - f`` (1.0: no correction), scalars or ``(reps,)``
arrays; a kernel returns one ``(lower, upper)`` pair per factor from one computation (the study reports every method
without and with FPC). ``draws`` (:class:`Resamples`) supplies the random resamples that resampling methods share.

The small kernels here have distinct names from the scalar functions they mirror (which take rows, not sums):
:func:`cr2_from_sizes_sums` (CR2 SE and Satterthwaite df, :func:`harness.stats.cr2`), :func:`icc_from_sums`
(:func:`harness.stats.icc_anova`), :func:`deff_from_sizes` (:func:`harness.stats.design_effect`), :func:`t_crit`
(two-sided critical t) and :func:`quantile7_lastaxis` (:func:`harness.stats._core.sorted_quantile`).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats as _st

from harness.stats._core import clip_unit
from harness.stats.bca import bca_bounds, jackknife_ratio

Bounds = tuple[np.ndarray, np.ndarray]


# --------------------------------------------------------------------------------------------------------------
# Small kernels (batched over leading axes)
# --------------------------------------------------------------------------------------------------------------


def t_crit(level: float, df) -> np.ndarray | float:
    """Two-sided critical value ``t_{(1 + level)/2, df}`` (normal for ``df = inf``); vectorised over ``df``.

    Not :func:`harness.stats._core.t_quantile`, whose first argument is a quantile ``p``, not a confidence level.
    """
    q = _st.t.ppf(0.5 + level / 2.0, df)
    return float(q) if np.ndim(q) == 0 else q


def cr2_from_sizes_sums(n, s) -> tuple:
    """CR2 standard error and Satterthwaite df of the mean of observations clustered in groups, from sums.

    For the intercept-only OLS model ``y = b + e`` with clusters g of sizes ``n_g`` and outcome sums ``s_g``
    (``N = sum n``, ``pi_g = n_g / N``, ``E_g = s_g - n_g ybar``), the CR2 adjustment ``(I - H_gg)^(-1/2)`` scales
    the cluster residual sum by ``(1 - pi_g)^(-1/2)``, so ``V = sum_g E_g^2 / (1 - pi_g) / N^2``. With the identity
    working model (clubSandwich's default for ``lm``) the Satterthwaite df is
    ``1 / (sum d_g^2 - 2 sum d_g t_g + (sum t_g)^2)`` with ``d_g = pi_g / (1 - pi_g)``, ``t_g = pi_g^2 / (1 - pi_g)``
    (equal to ``G - 1`` for equal sizes). Bell and McCaffrey (2002); Pustejovsky and Tipton (2018); checked against
    R clubSandwich 0.5.8 ``coef_test(..., vcov = "CR2", test = "Satterthwaite")``; the unweighted case of
    :func:`harness.stats.cr2`.

    Args:
        n: shape (..., G), cluster sizes (> 0; zero-size entries are padding and contribute nothing).
        s: shape (..., G), cluster sums of the outcome.

    Returns:
        ``(mean, se, df)``, each of shape (...). A single non-empty cluster gives ``se = df = nan``.
    """
    n = np.asarray(n, dtype=np.float64)
    s = np.asarray(s, dtype=np.float64)
    big_n = n.sum(axis=-1)
    est = s.sum(axis=-1) / big_n
    e = s - n * est[..., None]
    pi = n / big_n[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        one_m = 1.0 - pi
        v = np.sum(np.where(n > 0, e * e / one_m, 0.0), axis=-1) / big_n**2
        d = np.where(n > 0, pi / one_m, 0.0)
        t = np.where(n > 0, pi * pi / one_m, 0.0)
        df = 1.0 / (np.sum(d * d, axis=-1) - 2.0 * np.sum(d * t, axis=-1) + np.sum(t, axis=-1) ** 2)
        single = np.count_nonzero(n > 0, axis=-1) < 2
        se = np.where(single, np.nan, np.sqrt(v))
        df = np.where(single, np.nan, df)
    if np.ndim(est) == 0:
        return float(est), float(se), float(df)
    return est, se, df


def icc_from_sums(n, s, ss=None):
    """One-way ANOVA estimator of the intraclass correlation for unequal cluster sizes, from sums.

    ``ICC = (MSB - MSW) / (MSB + (n0 - 1) MSW)`` with ``MSB = sum n_g (ybar_g - ybar)^2 / (G - 1)``,
    ``MSW = sum_g (ss_g - s_g^2 / n_g) / (N - G)``, ``n0 = (N - sum n_g^2 / N) / (G - 1)`` (Searle 1971; Donner 1986,
    "A review of inference procedures for the intraclass correlation coefficient"). Not truncated at 0. The batched
    form of :func:`harness.stats.icc_anova`.

    Args:
        n: shape (..., G), cluster sizes (zero entries are padding).
        s: shape (..., G), cluster sums.
        ss: shape (..., G), cluster sums of squares; default ``s`` (0/1 outcomes).

    Returns:
        ICC of shape (...); ``nan`` when ``G < 2``, ``N = G`` or both mean squares are 0.
    """
    n = np.asarray(n, dtype=np.float64)
    s = np.asarray(s, dtype=np.float64)
    ss = s if ss is None else np.asarray(ss, dtype=np.float64)
    g = np.count_nonzero(n > 0, axis=-1).astype(np.float64)
    big_n = n.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ybar = s.sum(axis=-1) / big_n
        mean_g = np.where(n > 0, s / np.where(n > 0, n, 1.0), 0.0)
        ssb = np.sum(n * (mean_g - ybar[..., None]) ** 2, axis=-1)
        ssw = np.sum(np.where(n > 0, ss - s * mean_g, 0.0), axis=-1)
        msb = ssb / (g - 1.0)
        msw = ssw / (big_n - g)
        n0 = (big_n - np.sum(n * n, axis=-1) / big_n) / (g - 1.0)
        icc = (msb - msw) / (msb + (n0 - 1.0) * msw)
    return float(icc) if np.ndim(icc) == 0 else icc


def deff_from_sizes(n, icc):
    """Design effect of a cluster sample mean with unequal cluster sizes, from the sizes and an ICC.

    ``DEFF = 1 + ((1 + cv^2) mbar - 1) ICC`` with ``mbar`` the mean cluster size and ``cv`` the coefficient of
    variation of the sizes (population form, ``ddof = 0``), i.e. ``1 + (sum n^2 / N - 1) ICC`` (Kish 1965;
    Eldridge, Ashby and Kerry 2006, Int J Epidemiol 35:1292). Not the balanced ``1 + (m - 1) ICC``. The batched
    form of :func:`harness.stats.design_effect` (which also estimates and truncates the ICC).

    Args:
        n: shape (..., G), cluster sizes (zero entries are padding).
        icc: shape (...), intraclass correlation.

    Returns:
        DEFF of shape (...).
    """
    n = np.asarray(n, dtype=np.float64)
    m_w = np.sum(n * n, axis=-1) / n.sum(axis=-1)
    out = 1.0 + (m_w - 1.0) * np.asarray(icc, dtype=np.float64)
    return float(out) if np.ndim(out) == 0 else out


def quantile7_lastaxis(x: np.ndarray, ps: Sequence[float]) -> list[np.ndarray]:
    """Linear-interpolation quantiles (Hyndman and Fan 1996 type 7, numpy's default) along the last axis.

    Safe with +-inf (an infinite neighbour is returned as is), as :func:`harness.stats._core.sorted_quantile` does
    for one sorted vector. Uses one ``np.partition`` for all requested quantiles.

    Args:
        x: shape (..., B).
        ps: probabilities in [0, 1].

    Returns:
        One array of shape (...) per probability.
    """
    b = x.shape[-1]
    spots = []
    for p in ps:
        h = (b - 1) * p
        lo = int(math.floor(h))
        spots.append((lo, h - lo))
    kth = sorted({k for lo, _ in spots for k in (lo, min(lo + 1, b - 1))})
    part = np.partition(x, kth, axis=-1)
    out = []
    for lo, frac in spots:
        a = part[..., lo]
        if frac == 0.0 or lo + 1 >= b:
            out.append(a)
            continue
        c = part[..., lo + 1]
        with np.errstate(invalid="ignore"):
            v = a + frac * (c - a)
        v = np.where((a == c) | ~np.isfinite(a), a, np.where(~np.isfinite(c), c, v))
        out.append(v)
    return out


def replicate_cr2_se(nb: np.ndarray, sb: np.ndarray, pb: np.ndarray, big_nb: np.ndarray) -> np.ndarray:
    """CR2 standard error of each cluster-bootstrap replicate (a cluster drawn twice counts as two clusters).

    The variance of :func:`cr2_from_sizes_sums` for every replicate: ``sum_draws E^2 / (1 - n / N*) / N*^2``.

    Args:
        nb, sb: shape (..., K), the drawn clusters' sizes and sums; ``nb`` is OVERWRITTEN (scratch space).
        pb, big_nb: shape (...), the replicate means and total sizes.

    Returns:
        The replicate standard errors, shape (...).
    """
    e = sb - nb * pb[..., None]
    e *= e
    nb /= big_nb[..., None]
    np.subtract(1.0, nb, out=nb)
    e /= nb
    return np.sqrt(e.sum(-1)) / big_nb


def safe_t(num: np.ndarray, se: np.ndarray) -> np.ndarray:
    """``num / se`` with the bootstrap convention for ``se == 0``: 0 where ``num == 0``, ``+-inf`` otherwise."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = num / se
    zero = se == 0
    if np.any(zero):
        t = np.where(zero, np.where(num == 0, 0.0, np.copysign(np.inf, num)), t)
    return t


def root_factor(factor) -> float | np.ndarray:
    """``sqrt(max(0, factor))``: the standard-error multiplier of a variance multiplier ``1 - f``."""
    if np.ndim(factor) == 0:
        return math.sqrt(max(0.0, float(factor)))
    return np.sqrt(np.maximum(0.0, factor))


def _boot_t_bounds(est, se, tlo, thi, c) -> Bounds:
    """``[est - thi c se, est - tlo c se]``; ``[est, est]`` when ``se == 0``; widened to contain ``est``."""
    with np.errstate(invalid="ignore"):
        lo = np.where(se == 0, est, est - thi * c * se)
        hi = np.where(se == 0, est, est - tlo * c * se)
    return np.minimum(lo, est), np.maximum(hi, est)


def _pct_bounds(est, qlo, qhi, c) -> Bounds:
    """Percentile bounds shrunk about ``est`` by ``c = sqrt(1 - f)``, widened to contain ``est``."""
    return np.minimum(est + c * (qlo - est), est), np.maximum(est + c * (qhi - est), est)


def symmetric_bounds(est, half, factors) -> list[Bounds]:
    """``[est - sqrt(1 - f) half, est + sqrt(1 - f) half]`` per variance factor ``1 - f`` (``half`` unscaled)."""
    out = []
    for f in factors:
        h = half if (np.ndim(f) == 0 and float(f) == 1.0) else root_factor(f) * half
        out.append((est - h, est + h))
    return out


# --------------------------------------------------------------------------------------------------------------
# Samples and resamples
# --------------------------------------------------------------------------------------------------------------


@dataclass
class ClusterBatch:
    """``reps`` samples of K clusters each, as per-cluster sufficient statistics.

    Attributes:
        n: shape (reps, K), cluster sizes (rows per cluster, >= 1); integer or float.
        s: shape (reps, K), per-cluster sums of the outcome.
        ss: shape (reps, K), per-cluster sums of squares, or None for a binary (0/1) outcome (then ``ss = s``).

        frame_mean_size: ``Xbar`` (> 0), the mean number of rows per cluster over every cluster of the population
            the samples were drawn from (the frame), or None when it is not known; the frame-aware methods
            (:mod:`harness.stats.wu`) need it.

    Derived (float64): ``nf``, ``sf``, ``N`` (reps,) rows per sample, ``p`` (reps,) the micro mean ``sum s / N``,
    ``rates`` (reps, K) cluster means and ``macro`` (reps,) their mean.
    """

    n: np.ndarray
    s: np.ndarray
    ss: np.ndarray | None = None
    frame_mean_size: float | None = None
    _cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.nf = np.asarray(self.n).astype(np.float64)
        self.sf = np.asarray(self.s).astype(np.float64)
        self.N = self.nf.sum(1)
        self.p = self.sf.sum(1) / self.N
        self.rates = self.sf / self.nf
        self.macro = self.rates.mean(1)

    @property
    def binary(self) -> bool:
        """True when the outcome is 0/1 (``ss`` not given)."""
        return self.ss is None

    @property
    def reps(self) -> int:
        """Number of samples."""
        return int(self.nf.shape[0])

    @property
    def k(self) -> int:
        """Clusters per sample."""
        return int(self.nf.shape[1])

    def cr2(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(mean, se, df)`` of :func:`cr2_from_sizes_sums`, computed once per batch."""
        if "cr2" not in self._cache:
            self._cache["cr2"] = cr2_from_sizes_sums(self.nf, self.sf)
        return self._cache["cr2"]

    def iid_var(self) -> np.ndarray:
        """``s^2 / N`` with ``s^2`` the row variance (ddof 1): ``p (1 - p) / (N - 1)`` for a binary outcome."""
        if self.ss is None:
            return self.p * (1 - self.p) / (self.N - 1)
        ssq = np.asarray(self.ss, dtype=np.float64).sum(1)
        return np.maximum(ssq - self.N * self.p * self.p, 0.0) / (self.N - 1) / self.N


class Resamples:
    """The random resamples shared by the resampling kernels of one batch, drawn on first use.

    * :meth:`row_means`: the chunk (row) bootstrap of a binary outcome; the replicate count of ones is exactly
      Binomial(N, p).
    * :meth:`cluster_replicates`: the cluster (document) bootstrap: K clusters drawn with replacement per replicate.
    * :meth:`stream`: an independent generator per method name, for any other draws (e.g. wild-bootstrap weights).

    The first two come from ``rng`` in a fixed order (row bootstrap first, for binary outcomes, then the cluster
    indices), whichever is asked for first, so seeded results never depend on which methods run or in which order.
    Streams are seeded from ``key`` (the caller's seed words) and the CRC-32 of the name, so adding a method never
    changes another's draws.

    Args:
        rng: the batch's generator (used for the two shared draws only).
        B: bootstrap replicates per sample.
        key: integers that identify the batch (e.g. ``(seed, design, K, block)``).
    """

    def __init__(self, rng: np.random.Generator, B: int, key: Sequence[int] = ()) -> None:
        self.rng = rng
        self.B = int(B)
        self.key = tuple(int(k) for k in key)
        self._rows: np.ndarray | None = None
        self._clusters: tuple | None = None

    def _draw(self, batch: ClusterBatch) -> None:
        if self._clusters is not None:
            return
        r, k = batch.reps, batch.k
        if batch.binary:
            counts = np.asarray(batch.n).sum(1)
            self._rows = self.rng.binomial(counts[:, None], batch.p[:, None], size=(r, self.B)) / batch.N[:, None]
        idx = self.rng.integers(0, k, size=(r, self.B, k), dtype=np.int32)
        idx += (np.arange(r, dtype=np.int32) * k)[:, None, None]
        nb = batch.nf.ravel()[idx]
        sb = batch.sf.ravel()[idx]
        big_nb = nb.sum(-1)
        pb = sb.sum(-1) / big_nb
        self._clusters = (idx, nb, sb, big_nb, pb)

    def row_means(self, batch: ClusterBatch) -> np.ndarray:
        """Replicate means of the row bootstrap, shape (reps, B) (binary outcomes only)."""
        if not batch.binary:
            raise ValueError("the row bootstrap of sums needs a binary outcome")
        self._draw(batch)
        return self._rows

    def cluster_replicates(self, batch: ClusterBatch) -> tuple:
        """``(idx, nb, sb, big_nb, pb)``: flat indices into ``batch.nf.ravel()`` (reps, B, K), the drawn sizes and
        sums (reps, B, K), and the replicate sizes and means (reps, B). Do not modify the arrays."""
        self._draw(batch)
        return self._clusters

    def stream(self, name: str) -> np.random.Generator:
        """An independent generator for method ``name`` (seeded by ``key`` and ``crc32(name)``)."""
        return np.random.default_rng([*self.key, zlib.crc32(name.encode())])


# --------------------------------------------------------------------------------------------------------------
# Kernels of the registered methods
# --------------------------------------------------------------------------------------------------------------


def cr2_kernel(batch: ClusterBatch, level: float, factors: Sequence, draws: Resamples | None = None) -> list[Bounds]:
    """CR2 t interval ``p -/+ t_{df} se`` per sample (:func:`harness.stats.cr2`, unweighted, unclipped)."""
    _, se, df = batch.cr2()
    return symmetric_bounds(batch.p, t_crit(level, df) * se, factors)


def cr2_logit_kernel(batch: ClusterBatch, level: float, factors: Sequence, draws: Resamples | None = None):
    """CR2 on the logit scale (:func:`harness.stats.cr2` with ``transform="logit"``): ``expit(logit(p) -/+ t se /
    (p (1 - p)))``; ``[p, p]`` where the SE is 0 or ``p`` is 0 or 1."""
    _, se, df = batch.cr2()
    return logit_bounds(batch.p, se, t_crit(level, df), factors)


def scalar_t_bounds(
    est: float, se: float, crit: float, transform: str, clip: bool, extras: dict
) -> tuple[float, float]:
    """One interval ``est -/+ crit * se`` on the plain scale (clipped to [0, 1] when ``clip``:
    :func:`harness.stats._core.clip_unit`) or on the logit scale (:func:`logit_bounds`, never outside (0, 1)), as the
    scalar face of a method whose batched kernel uses the same bounds (Hansen–Hurwitz, Wu)."""
    if transform == "logit":
        lo, hi = logit_bounds(np.array([est]), np.array([se]), crit, (1.0,))[0]
        return float(lo[0]), float(hi[0])
    return clip_unit(est - crit * se, est + crit * se, clip, extras)


def logit_bounds(p: np.ndarray, se: np.ndarray, crit, factors: Sequence) -> list[Bounds]:
    """Delta-method logit-scale bounds ``expit(logit(p) -/+ crit sqrt(1 - f) se / (p (1 - p)))`` per factor.

    Args: ``p`` (reps,) estimates in [0, 1]; ``se`` (reps,) standard errors on the original scale; ``crit`` critical
        values (scalar or (reps,)); ``factors`` variance multipliers ``1 - f``.
    Returns: one ``(lower, upper)`` pair per factor; ``[p, p]`` where the SE is 0 or ``p`` is 0 or 1, and the bounds
        always contain ``p``.
    """
    out = []
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = np.log(p / (1.0 - p))
        for f in factors:
            se_f = se * root_factor(f)
            degenerate = (se_f == 0.0) | (p <= 0.0) | (p >= 1.0)
            half = crit * se_f / (p * (1.0 - p))
            lo = np.where(degenerate, p, 1.0 / (1.0 + np.exp(-(theta - half))))
            hi = np.where(degenerate, p, 1.0 / (1.0 + np.exp(-(theta + half))))
            out.append((np.minimum(lo, p), np.maximum(hi, p)))
    return out


def iid_wald_kernel(batch: ClusterBatch, level: float, factors: Sequence, draws: Resamples | None = None):
    """iid Wald ``p -/+ z s / sqrt(N)``, rows treated as independent (:func:`harness.stats.iid_wald`)."""
    return symmetric_bounds(batch.p, t_crit(level, np.inf) * np.sqrt(batch.iid_var()), factors)


def iid_wald_effective_kernel(batch: ClusterBatch, level: float, factors: Sequence, draws: Resamples | None = None):
    """Wald with effective sample size ``N / DEFF``, ICC truncated at 0 (:func:`harness.stats.iid_wald_effective`)."""
    icc = icc_from_sums(batch.nf, batch.sf, batch.ss)
    icc = np.where(np.isnan(icc), 0.0, np.maximum(icc, 0.0))
    deff = deff_from_sizes(batch.nf, icc)
    return symmetric_bounds(batch.p, t_crit(level, np.inf) * np.sqrt(batch.iid_var() * deff), factors)


def cluster_t_kernel(batch: ClusterBatch, level: float, factors: Sequence, draws: Resamples | None = None):
    """t over cluster means, ``mean -/+ t_{K-1} sd / sqrt(K)`` (:func:`harness.stats.cluster_t`)."""
    k = batch.k
    se_mac = batch.rates.std(1, ddof=1) / math.sqrt(k)
    return symmetric_bounds(batch.macro, t_crit(level, k - 1) * se_mac, factors)


def bootstrap_percentile_kernel(batch: ClusterBatch, level: float, factors: Sequence, draws: Resamples):
    """Cluster bootstrap percentile interval of the micro mean (:func:`harness.stats.cluster_bootstrap`)."""
    a = (1.0 - level) / 2.0
    pb = draws.cluster_replicates(batch)[4]
    lo, hi = quantile7_lastaxis(pb, (a, 1 - a))
    return [_pct_bounds(batch.p, lo, hi, root_factor(f)) for f in factors]


def bootstrap_t_kernel(batch: ClusterBatch, level: float, factors: Sequence, draws: Resamples):
    """Cluster bootstrap-t, replicates studentised by their own CR2 SE (:func:`harness.stats.cluster_bootstrap`)."""
    a = (1.0 - level) / 2.0
    _, nb, sb, big_nb, pb = draws.cluster_replicates(batch)
    se_b = replicate_cr2_se(nb.copy(), sb, pb, big_nb)
    tlo, thi = quantile7_lastaxis(safe_t(pb - batch.p[:, None], se_b), (a, 1 - a))
    se = batch.cr2()[1]
    return [_boot_t_bounds(batch.p, se, tlo, thi, root_factor(f)) for f in factors]


def bca_kernel(batch: ClusterBatch, level: float, factors: Sequence, draws: Resamples):
    """Cluster bootstrap BCa interval of the micro mean (:func:`harness.stats.cluster_bootstrap` ``kind="bca"``;
    :mod:`harness.stats.bca`): the percentile kernel's replicates, the leave-one-cluster-out jackknife of the batch."""
    pb = draws.cluster_replicates(batch)[4]
    lo, hi = bca_bounds(batch.p, pb, jackknife_ratio(batch.sf, batch.nf), level)
    return [_pct_bounds(batch.p, lo, hi, root_factor(f)) for f in factors]


# --------------------------------------------------------------------------------------------------------------
# Comparators of the coverage study (no scalar function in harness.stats: not offered by run/compare/gate)
# --------------------------------------------------------------------------------------------------------------


def row_bootstrap_kernel(batch: ClusterBatch, level: float, factors: Sequence, draws: Resamples):
    """Row (chunk) bootstrap percentile interval, rows resampled as if independent (contrast only; binary)."""
    a = (1.0 - level) / 2.0
    lo, hi = quantile7_lastaxis(draws.row_means(batch), (a, 1 - a))
    return [_pct_bounds(batch.p, lo, hi, root_factor(f)) for f in factors]


def macro_bootstrap_t_kernel(batch: ClusterBatch, level: float, factors: Sequence, draws: Resamples):
    """Cluster bootstrap-t of the macro mean (mean of cluster rates), replicate SE ``sd* / sqrt(K)``."""
    a = (1.0 - level) / 2.0
    k = batch.k
    idx = draws.cluster_replicates(batch)[0]
    rb = batch.rates.ravel()[idx]
    mb = rb.mean(-1)
    sdb = rb.std(-1, ddof=1)
    tlo, thi = quantile7_lastaxis(safe_t(mb - batch.macro[:, None], sdb / math.sqrt(k)), (a, 1 - a))
    se_mac = batch.rates.std(1, ddof=1) / math.sqrt(k)
    return [_boot_t_bounds(batch.macro, se_mac, tlo, thi, root_factor(f)) for f in factors]


def twostage_ratio_intervals(
    nt: np.ndarray, st: np.ndarray, big_m: np.ndarray, n_types: int, level: float
) -> dict[str, Bounds]:
    """Design-based two-stage intervals (weighted micro and macro) for r samples of h types x m documents.

    Horvitz-Thompson ratio estimator with weights ``(H / h)(M_g / m)`` and Cochran's (1977, Sampling Techniques,
    eq. 10.24) two-stage variance of the linearised totals ``z_i = s_i - R n_i``: with both FPCs
    ``H^2 (1 - h/H) s_1^2 / h + (H / h) sum_g M_g^2 (1 - m/M_g) s_2g^2 / m``; without FPCs the ultimate-cluster
    estimator ``H^2 s_1^2 / h``; t with ``h - 1`` df.

    Args:
        nt, st: shape (r, h, m), queries and hits of the sampled documents by sampled type.
        big_m: shape (r, h), documents in each sampled type (M_g).
        n_types: H, types in the frame.
        level: confidence level.

    Returns:
        ``{"twostage_micro"[+"_fpc"], "twostage_macro"[+"_fpc"]: (lower, upper)}`` and ``"_estimates_w"``.
    """
    r, h, m = nt.shape
    big_h = float(n_types)
    nf = nt.astype(np.float64)
    sf = st.astype(np.float64)
    mg = big_m.astype(np.float64)
    infl = mg / m  # M_g / m_g
    w = (big_h / h) * infl  # (r, h)
    tq = t_crit(level, h - 1)
    f1 = h / big_h
    f2 = m / mg
    out: dict[str, Bounds] = {}
    ests = []
    for name, y, x in (("twostage_micro", sf, nf), ("twostage_macro", sf / nf, np.ones_like(nf))):
        y_hat = np.sum(w * y.sum(-1), axis=-1)
        x_hat = np.sum(w * x.sum(-1), axis=-1)
        ratio = y_hat / x_hat
        zv = y - ratio[:, None, None] * x  # (r, h, m) linearised values
        zg = infl * zv.sum(-1)  # estimated type totals
        s1 = zg.var(axis=-1, ddof=1)
        s2 = zv.var(axis=-1, ddof=1) if m > 1 else np.zeros((r, h))
        v_nofpc = big_h**2 * s1 / h
        v_fpc = big_h**2 * (1 - f1) * s1 / h + (big_h / h) * np.sum(mg**2 * (1 - f2) * s2 / m, axis=-1)
        for suffix, v in (("", v_nofpc), ("_fpc", v_fpc)):
            half = tq * np.sqrt(v) / x_hat
            out[name + suffix] = (ratio - half, ratio + half)
        ests.append(ratio)
    out["_estimates_w"] = (ests[0], ests[1])
    return out
