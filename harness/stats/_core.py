"""Input checks and per-cluster sufficient statistics shared by the interval methods (internal).

Everything downstream works on per-cluster sums computed once with ``np.bincount`` (no per-row Python loops).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats as _st

from harness.errors import HarnessInputError


def fail(func: str, field: str, message: str) -> HarnessInputError:
    """A one-line input error naming the function and argument: ``harness.stats.cr2: y: contains NaN at row 3``."""
    return HarnessInputError(f"harness.stats.{func}: {field}: {message}")


def as_vector(x, field: str, func: str, *, n: int | None = None) -> np.ndarray:
    """``x`` as a 1-D finite float64 array (a copy); raise :class:`HarnessInputError` otherwise."""
    try:
        arr = np.array(x, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as exc:
        raise fail(func, field, f"not numeric ({exc})") from None
    if arr.ndim != 1:
        raise fail(func, field, f"must be one-dimensional, got shape {arr.shape}")
    if n is not None and arr.size != n:
        raise fail(func, field, f"has {arr.size} rows, expected {n}")
    if arr.size == 0:
        raise fail(func, field, "is empty")
    bad = ~np.isfinite(arr)
    if bad.any():
        raise fail(func, field, f"non-finite value at row {int(np.argmax(bad))}")
    return arr


def encode_clusters(clusters, n: int, func: str) -> tuple[np.ndarray, int]:
    """Integer codes 0..G-1 (sorted label order) for any 1-D array of hashable, mutually comparable labels."""
    arr = np.asarray(clusters)
    if arr.ndim != 1:
        raise fail(func, "clusters", f"must be one-dimensional, got shape {arr.shape}")
    if arr.size != n:
        raise fail(func, "clusters", f"has {arr.size} rows, expected {n}")
    if arr.dtype.kind == "f" and np.isnan(arr).any():
        raise fail(func, "clusters", f"missing label (NaN) at row {int(np.argmax(np.isnan(arr)))}")
    if arr.dtype.kind == "O" and any(v is None for v in arr.tolist()):
        raise fail(func, "clusters", "missing label (None)")
    try:
        _, codes = np.unique(arr, return_inverse=True)
    except TypeError as exc:
        raise fail(func, "clusters", f"labels are not mutually comparable ({exc})") from None
    codes = codes.reshape(-1).astype(np.int64)
    return codes, int(codes.max()) + 1


def check_level(level: float, func: str) -> float:
    """The confidence level as float in (0, 1)."""
    level = float(level)
    if not 0.0 < level < 1.0:
        raise fail(func, "level", f"must lie in (0, 1), got {level}")
    return level


def fpc_factor(fpc: float | None, units: int, func: str, what: str = "clusters") -> float:
    """Finite-population factor ``1 - units/fpc`` (variance multiplier); 1.0 when ``fpc`` is None.

    ``fpc`` is the population size (of clusters for clustered methods, of rows for :func:`iid_wald`);
    it must be >= the sample size.
    """
    if fpc is None:
        return 1.0
    fpc = float(fpc)
    if not np.isfinite(fpc) or fpc < units:
        raise fail(func, "fpc", f"population number of {what} ({fpc}) is smaller than the sample's ({units})")
    return 1.0 - units / fpc


def clip_unit(lower: float, upper: float, clip: bool, extras: dict) -> tuple[float, float]:
    """``(lower, upper)`` clipped to [0, 1] when ``clip`` (the caller's ``clip`` and "every value lies in [0, 1]"),
    with ``extras["clipped"] = True`` when a bound reached past it; an infinite bound becomes 0 or 1 (the data cannot
    exclude that end). Otherwise unchanged."""
    if not clip:
        return lower, upper
    if lower < 0.0 or upper > 1.0:
        extras["clipped"] = True
    return max(lower, 0.0), min(upper, 1.0)


def t_quantile(p: float, df: float | None) -> float:
    """``p``-quantile of Student t with ``df`` (normal when df is None or infinite)."""
    if df is None or not np.isfinite(df):
        return float(_st.norm.ppf(p))
    return float(_st.t.ppf(p, df))


@dataclass(frozen=True)
class ClusterSums:
    """Per-cluster sufficient statistics, clusters in a canonical (label-free) order.

    ``y`` is shifted by ``y0 = min(y)`` before summing (exact zeros for constant ``y``; better conditioning).
    Weights are rescaled to mean 1 (every formula here is invariant to the scale of the weights).

    Arrays (length G): ``n`` rows, ``W`` = sum w, ``Q`` = sum w^2, ``SW`` = sum w*yc, ``Sy`` = sum yc,
    ``wbar`` = W/n, ``delta`` = ||w_j - wbar_j||, ``z`` = (w_j - wbar_j)'yc_j / delta (0 where delta = 0).
    """

    y0: float
    n: np.ndarray
    W: np.ndarray
    Q: np.ndarray
    SW: np.ndarray
    Sy: np.ndarray
    wbar: np.ndarray
    delta: np.ndarray
    z: np.ndarray
    N: int
    G: int
    weighted: bool

    @property
    def estimate_c(self) -> float:
        """The (weighted) mean of the shifted y."""
        return float(self.SW.sum() / self.W.sum())

    @property
    def estimate(self) -> float:
        """The (weighted) mean of y: sum w*y / sum w (the WLS intercept; a ratio estimator when weighted)."""
        return self.y0 + self.estimate_c

    @property
    def cluster_means(self) -> np.ndarray:
        """Unweighted mean of y within each cluster (canonical order)."""
        return self.y0 + self.Sy / self.n


def prepare(y, clusters, weights, func: str, *, min_clusters: int = 2):
    """Validate inputs; return ``(y, codes, G, w_or_None, info)``, zero-weight rows dropped, rows sorted.

    Rows with weight 0 are dropped (as clubSandwich does for lm with zero weights); ``info`` records how many.
    """
    y = as_vector(y, "y", func)
    codes, G = encode_clusters(clusters, y.size, func)
    info: dict = {}
    w = None
    if weights is not None:
        w = as_vector(weights, "weights", func, n=y.size)
        if (w < 0).any():
            raise fail(func, "weights", f"negative weight at row {int(np.argmax(w < 0))}")
        keep = w > 0
        if not keep.any():
            raise fail(func, "weights", "all weights are zero")
        if not keep.all():
            info["dropped_zero_weight_rows"] = int((~keep).sum())
            y, w = y[keep], w[keep]
            codes, G = encode_clusters(codes[keep], y.size, func)
        w = w / np.sort(w).mean()
    if G < min_clusters:
        raise fail(func, "clusters", f"needs at least {min_clusters} clusters, got {G}")
    # Canonical row order (cluster, y, w): per-cluster sums accumulate in an order that neither the input row
    # order nor the labels affect, so results are bitwise reproducible under both.
    order = np.lexsort((y, codes)) if w is None else np.lexsort((w, y, codes))
    y, codes = y[order], codes[order]
    if w is not None:
        w = w[order]
    return y, codes, G, w, info


def cluster_sums(y: np.ndarray, codes: np.ndarray, G: int, w: np.ndarray | None) -> ClusterSums:
    """Compute :class:`ClusterSums` from validated rows (vectorised with ``np.bincount``)."""
    y0 = float(y.min())
    yc = y - y0
    n = np.bincount(codes, minlength=G).astype(np.float64)
    Sy = np.bincount(codes, weights=yc, minlength=G)
    if w is None:
        W, Q, SW = n.copy(), n.copy(), Sy.copy()
        wbar = np.ones(G)
        delta = np.zeros(G)
        z = np.zeros(G)
    else:
        W = np.bincount(codes, weights=w, minlength=G)
        Q = np.bincount(codes, weights=w * w, minlength=G)
        SW = np.bincount(codes, weights=w * yc, minlength=G)
        wbar = W / n
        dev = w - wbar[codes]
        delta = np.sqrt(np.bincount(codes, weights=dev * dev, minlength=G))
        dy = np.bincount(codes, weights=dev * yc, minlength=G)
        # delta below rounding noise of the weights (e.g. 0.1+0.2 vs 0.3) counts as constant weights.
        tiny = delta <= 1e-12 * np.maximum(wbar, 1e-300) * np.sqrt(n)
        z = np.where(tiny, 0.0, dy / np.where(tiny, 1.0, delta))
        delta = np.where(tiny, 0.0, delta)
    # Canonical order: clusters sorted by their summaries, so label choice and row order do not matter.
    order = np.lexsort((z, delta, Q, W, SW, Sy, n))
    return ClusterSums(
        y0=y0,
        n=n[order],
        W=W[order],
        Q=Q[order],
        SW=SW[order],
        Sy=Sy[order],
        wbar=wbar[order],
        delta=delta[order],
        z=z[order],
        N=int(y.size),
        G=G,
        weighted=w is not None,
    )


def order_statistic_mc_se(sorted_x: np.ndarray, p: float, z: float = 1.959963984540054) -> float:
    """Monte Carlo standard error of the empirical ``p``-quantile of ``B`` sorted bootstrap replicates.

    Binomial / order-statistic method: the number of replicates below the true quantile is Binomial(B, p), so
    the order statistics of rank ``B*p -/+ z*sqrt(B*p*(1-p))`` bracket the quantile with ~95 % probability; their
    distance divided by ``2*z`` estimates the standard error of the quantile estimate (cf. Davison & Hinkley 1997,
    Bootstrap Methods and their Application, sec. 2.5.2; Efron & Tibshirani 1993 ch. 19).
    Returns ``inf`` if a bracket is infinite.
    """
    B = sorted_x.size
    half = z * np.sqrt(B * p * (1.0 - p))
    lo = int(np.clip(np.floor(B * p - half), 1, B)) - 1
    hi = int(np.clip(np.ceil(B * p + half), 1, B)) - 1
    a, b = sorted_x[lo], sorted_x[hi]
    if not (np.isfinite(a) and np.isfinite(b)):
        return float("inf")
    return float((b - a) / (2.0 * z))


def sorted_quantile(sorted_x: np.ndarray, p: float) -> float:
    """Linear-interpolation quantile (numpy's default, Hyndman & Fan type 7) of sorted data, safe with +-inf."""
    h = (sorted_x.size - 1) * p
    lo = int(np.floor(h))
    frac = h - lo
    a = sorted_x[lo]
    if frac == 0.0 or lo + 1 >= sorted_x.size:
        return float(a)
    b = sorted_x[lo + 1]
    if a == b or not np.isfinite(a):
        return float(a)
    if not np.isfinite(b):
        return float(b)
    return float(a + frac * (b - a))
