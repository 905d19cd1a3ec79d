"""Power planning: minimum detectable difference and the number of clusters (documents) needed."""

from __future__ import annotations

import math

from harness.stats._core import fail, t_quantile


def _quantiles(alpha: float, power: float, df: float | None, one_sided: bool) -> float:
    if not 0.0 < alpha < 1.0:
        raise fail("power", "alpha", f"must lie in (0, 1), got {alpha}")
    if not 0.0 < power < 1.0:
        raise fail("power", "power", f"must lie in (0, 1), got {power}")
    q_alpha = t_quantile(1.0 - alpha if one_sided else 1.0 - alpha / 2.0, df)
    return q_alpha + t_quantile(power, df)


def minimum_detectable_difference(se, df, *, alpha=0.05, power=0.8, one_sided=True) -> float:
    """Smallest true difference detected with probability ``power`` by a level-``alpha`` t test with this SE.

    ``MDD = (t_{df, 1 - alpha} + t_{df, power}) * se`` (one-sided; ``1 - alpha/2`` for two-sided), normal
    quantiles when ``df`` is None or infinite (Bloom 1995, "Minimum detectable effects", Evaluation Review 19(5)).

    Args: ``se >= 0`` (e.g. a paired CR2 SE), ``df > 0`` or None, ``alpha`` and ``power`` in (0, 1).
    Returns: the MDD in the metric's units. Raises: HarnessInputError for out-of-range arguments.
    """
    se = float(se)
    if not (math.isfinite(se) and se >= 0.0):
        raise fail("minimum_detectable_difference", "se", f"must be finite and >= 0, got {se}")
    if df is not None and not (float(df) > 0.0):
        raise fail("minimum_detectable_difference", "df", f"must be > 0 or None, got {df}")
    return _quantiles(float(alpha), float(power), None if df is None else float(df), one_sided) * se


def clusters_needed(icc, mean_size, cv_size, sd, delta, *, alpha=0.05, power=0.8, one_sided=True) -> dict:
    """Number of clusters (documents) G needed so that a mean (difference) is detected: MDD(G) <= delta.

    Variance of the mean over G clusters of mean size ``m`` with SD ``sd`` per row:
    ``Var = sd^2 * DEFF / (G * m)``, ``DEFF = 1 + ((1 + cv^2) m - 1) icc`` (Kish; Eldridge, Ashby & Kerry 2006).
    Normal approximation ``G_z = (z_{1-alpha} + z_{power})^2 sd^2 DEFF / (m delta^2)``; then the smallest
    G >= max(2, ceil(G_z)) with ``(t_{G-1, 1-alpha} + t_{G-1, power}) * sqrt(Var(G)) <= delta`` (iterated from
    G_z; Donner & Klar 2000, ch. 5). For a comparison of two systems pass the SD and ICC of the per-question
    difference. Two-sided tests use ``1 - alpha/2``.

    Args: ``icc`` in (-1, 1]; ``mean_size >= 1``; ``cv_size >= 0``; ``sd >= 0``; ``delta > 0``.
    Returns: ``{"clusters", "rows", "deff", "n_eff", "df", "mdd", "clusters_normal"}``: G, the rows it implies
        (``G * m``), the design effect, the effective sample size, ``G - 1``, the MDD achieved at G and the
        normal-approximation G. Raises: HarnessInputError for out-of-range arguments or DEFF <= 0.
    """
    func = "clusters_needed"
    icc, m, cv, sd, delta = (float(v) for v in (icc, mean_size, cv_size, sd, delta))
    if not -1.0 < icc <= 1.0:
        raise fail(func, "icc", f"must lie in (-1, 1], got {icc}")
    if not m >= 1.0:
        raise fail(func, "mean_size", f"must be >= 1, got {m}")
    if not cv >= 0.0:
        raise fail(func, "cv_size", f"must be >= 0, got {cv}")
    if not (math.isfinite(sd) and sd >= 0.0):
        raise fail(func, "sd", f"must be finite and >= 0, got {sd}")
    if not (math.isfinite(delta) and delta > 0.0):
        raise fail(func, "delta", f"must be finite and > 0, got {delta}")
    deff = 1.0 + ((1.0 + cv * cv) * m - 1.0) * icc
    if deff <= 0.0:
        raise fail(func, "icc", f"design effect {deff:.4g} <= 0")
    unit_var = sd * sd * deff / m  # variance of the mean times G
    g_normal = _quantiles(alpha, power, None, one_sided) ** 2 * unit_var / delta**2
    G = max(2, math.ceil(g_normal - 1e-9))

    def mdd(g: int) -> float:
        return _quantiles(alpha, power, g - 1.0, one_sided) * math.sqrt(unit_var / g)

    # MDD(G) decreases in G; step up to the smallest G with MDD <= delta (few steps: t is close to z there).
    while mdd(G) > delta * (1.0 + 1e-12):
        G += 1
    return {
        "clusters": G,
        "rows": G * m,
        "deff": deff,
        "n_eff": G * m / deff,
        "df": G - 1,
        "mdd": mdd(G),
        "clusters_normal": max(2, math.ceil(g_normal - 1e-9)),
    }
