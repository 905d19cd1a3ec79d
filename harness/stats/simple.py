"""Simple intervals: the t interval over cluster means, and iid Wald intervals (for contrast)."""

from __future__ import annotations

import numpy as np

from harness.stats._core import as_vector, check_level, clip_unit, encode_clusters, fail, fpc_factor, t_quantile
from harness.stats.design import design_effect
from harness.stats.interval import Interval

IID_LABEL = "iid (for contrast only; ignores clustering)"


def _clip_unit(y: np.ndarray, lower: float, upper: float, clip: bool, extras: dict) -> tuple[float, float]:
    return clip_unit(lower, upper, clip and y.min() >= 0.0 and y.max() <= 1.0, extras)


def cluster_t(y, clusters, *, level=0.95, fpc=None, clip=True) -> Interval:
    """Student t interval over the G cluster means (the macro average: every document counts once).

    ``m_g = mean of y in cluster g``; estimate ``mbar = mean(m_g)``; ``se = sd(m_g, ddof=1) / sqrt(G)``
    (times ``sqrt(1 - G/fpc)`` with ``fpc`` the population number of clusters); ``df = G - 1``;
    bounds ``mbar -/+ t_{df, (1+level)/2} se`` (Student 1908; the "summary measures" analysis of cluster
    trials, Donner & Klar 2000). With unequal cluster sizes this estimates the macro mean, which differs from the
    row (micro) mean that :func:`~harness.stats.cr2.cr2` estimates; for equal sizes both coincide, and so do the
    intervals (CR2 with G - 1 Satterthwaite df).

    Args: ``y`` (N,) finite floats; ``clusters`` (N,) labels (>= 2 clusters); ``level`` in (0, 1);
        ``fpc`` population number of clusters or None; ``clip`` to [0, 1] when all y lie in [0, 1].
    Returns: :class:`Interval` with method ``"cluster_t"``; a warning when ``G - 1 < 4``.
    Raises: HarnessInputError on bad inputs or fewer than 2 clusters.
    """
    func = "cluster_t"
    level = check_level(level, func)
    y = as_vector(y, "y", func)
    codes, G = encode_clusters(clusters, y.size, func)
    if G < 2:
        raise fail(func, "clusters", f"needs at least 2 clusters, got {G}")
    y0 = float(y.min())
    n = np.bincount(codes, minlength=G)
    m = np.bincount(codes, weights=y - y0, minlength=G) / n
    est_c = float(m.mean())
    f = fpc_factor(fpc, G, func)
    se = float(np.sqrt(f * m.var(ddof=1) / G))
    df = float(G - 1)
    crit = t_quantile(0.5 + level / 2.0, df)
    est = y0 + est_c
    extras: dict = {}
    if fpc is not None:
        extras.update({"fpc": float(fpc), "fpc_factor": f})
    lower, upper = _clip_unit(y, est - crit * se, est + crit * se, clip, extras)
    if df < 4:
        extras["warnings"] = [f"df = {df:g} < 4: too few clusters for a reliable interval"]
    return Interval(
        "cluster_t",
        est,
        se,
        df,
        min(lower, est),
        max(upper, est),
        level,
        int(y.size),
        G,
        "t over cluster means (macro average)",
        extras,
    )


def iid_wald(y, *, level=0.95, fpc=None, clip=True) -> Interval:
    """Wald (normal) interval treating the N rows as independent; FOR CONTRAST ONLY (ignores clustering).

    ``ybar -/+ z_{(1+level)/2} * s / sqrt(N)`` with ``s`` the sample SD (ddof = 1), times ``sqrt(1 - N/fpc)`` with
    ``fpc`` the population number of ROWS (Cochran 1977, Sampling Techniques, eq. 2.12/2.17).

    Args: ``y`` (N,) finite floats, N >= 2; ``level`` in (0, 1); ``fpc`` or None; ``clip`` as in :func:`cluster_t`.
    Returns: :class:`Interval` with method ``"iid_wald"``, ``df=None``, ``n_clusters = N`` (each row its own),
        label ``"iid (for contrast only; ignores clustering)"``.
    Raises: HarnessInputError on bad inputs or N < 2.
    """
    func = "iid_wald"
    level = check_level(level, func)
    y = as_vector(y, "y", func)
    N = y.size
    if N < 2:
        raise fail(func, "y", "needs at least 2 rows")
    f = fpc_factor(fpc, N, func, what="rows")
    y0 = float(y.min())
    est = y0 + float((y - y0).mean())
    se = float(np.sqrt(f * (y - y0).var(ddof=1) / N))
    crit = t_quantile(0.5 + level / 2.0, None)
    extras: dict = {}
    if fpc is not None:
        extras.update({"fpc": float(fpc), "fpc_factor": f})
    lower, upper = _clip_unit(y, est - crit * se, est + crit * se, clip, extras)
    return Interval("iid_wald", est, se, None, min(lower, est), max(upper, est), level, N, N, IID_LABEL, extras)


def iid_wald_effective(y, clusters, *, level=0.95, fpc=None, clip=True) -> Interval:
    """Wald interval with the iid SE inflated by the design effect: ``se = s / sqrt(n_eff)``, ``n_eff = N / DEFF``.

    DEFF from :func:`~harness.stats.design.design_effect` (Kish 1965; Eldridge et al. 2006). An approximation
    for contrast (it assumes a common ICC across clusters); prefer :func:`~harness.stats.cr2.cr2`. ``fpc`` is the
    population number of CLUSTERS (the variance is multiplied by ``1 - G/fpc``, as for the clustered methods).
    Returns: :class:`Interval` with method ``"iid_wald_effective"``, ``df=None``; ``extras`` has ``deff``,
    ``icc``, ``n_eff``. Raises: HarnessInputError on bad inputs, fewer than 2 clusters or ``fpc < G``.
    """
    func = "iid_wald_effective"
    level = check_level(level, func)
    y = as_vector(y, "y", func)
    d = design_effect(y, clusters)
    f = fpc_factor(fpc, d["n_clusters"], func)
    y0 = float(y.min())
    est = y0 + float((y - y0).mean())
    se = float(np.sqrt((y - y0).var(ddof=1) / d["n_eff"])) if y.size > 1 else 0.0
    if fpc is not None:
        se *= float(np.sqrt(f))
    crit = t_quantile(0.5 + level / 2.0, None)
    extras: dict = {"deff": d["deff"], "icc": d["icc"], "n_eff": d["n_eff"]}
    if fpc is not None:
        extras.update({"fpc": float(fpc), "fpc_factor": f})
    if d["warnings"]:
        extras["warnings"] = list(d["warnings"])
    lower, upper = _clip_unit(y, est - crit * se, est + crit * se, clip, extras)
    return Interval(
        "iid_wald_effective",
        est,
        se,
        None,
        min(lower, est),
        max(upper, est),
        level,
        int(y.size),
        d["n_clusters"],
        "iid with DEFF-inflated SE (Kish approximation)",
        extras,
    )
