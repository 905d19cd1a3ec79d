"""Design quantities of clustered metric data: ICC, design effect, effective sample size, lag-1 autocorrelation."""

from __future__ import annotations

import math

import numpy as np

from harness.stats._core import as_vector, encode_clusters, fail
from harness.stats.batched import deff_from_sizes, icc_from_sums


def _groups(y, clusters, func: str):
    y = as_vector(y, "y", func)
    codes, G = encode_clusters(clusters, y.size, func)
    if G < 2:
        raise fail(func, "clusters", f"needs at least 2 clusters, got {G}")
    n = np.bincount(codes, minlength=G).astype(np.float64)
    return y, codes, G, n


def icc_anova(y, clusters) -> float:
    """One-way ANOVA estimator of the intraclass correlation for unequal cluster sizes.

    ``rho = (MSB - MSW) / (MSB + (n0 - 1) MSW)`` with ``MSB = sum_i n_i (ybar_i - ybar)^2 / (G - 1)``,
    ``MSW = sum_i sum_k (y_ik - ybar_i)^2 / (N - G)`` and the adjusted mean cluster size
    ``n0 = (N - sum_i n_i^2 / N) / (G - 1)`` (Donner 1986, Int. Stat. Rev. 54(1); Donner & Klar 2000,
    "Design and Analysis of Cluster Randomization Trials in Health Research"; Snedecor & Cochran).

    Args: ``y`` shape (N,) finite floats; ``clusters`` shape (N,) labels, at least 2 clusters.
    Returns: the estimate, a float in ``[-1/(n0 - 1), 1]`` (it can be negative); ``nan`` when undefined:
        every cluster has one row (``N == G``, no within-cluster variation to estimate) or ``y`` is constant.
    Raises: HarnessInputError on bad inputs or fewer than 2 clusters.
    """
    y, codes, G, n = _groups(y, clusters, "icc_anova")
    N = y.size
    if N == G or y.min() == y.max():
        return float("nan")
    yc = y - y.min()
    means = np.bincount(codes, weights=yc, minlength=G) / n
    dev = means - float(yc.mean())
    msb = float(n @ (dev * dev)) / (G - 1)
    resid = yc - means[codes]
    msw = float(resid @ resid) / (N - G)
    n0 = (N - float(n @ n) / N) / (G - 1)
    den = msb + (n0 - 1.0) * msw
    if den <= 0.0:
        return float("nan")
    return (msb - msw) / den


def design_effect(y, clusters) -> dict:
    """Design effect of cluster sampling for a mean, Kish's formula for unequal cluster sizes.

    ``DEFF = 1 + ((1 + cv^2) * m_bar - 1) * rho`` (Kish 1965; Eldridge, Ashby & Kerry 2006, Int. J. Epidemiol.
    35(5):1292-1300), with ``m_bar`` the mean cluster size, ``cv`` the coefficient of variation of the cluster
    sizes using the population SD (ddof = 0, so that ``(1 + cv^2) m_bar = sum n_i^2 / N`` exactly) and ``rho``
    the ANOVA ICC (:func:`icc_anova`). A negative ICC is used as 0 (DEFF >= 1) and an undefined one (nan, e.g.
    all singleton clusters or constant y) as 0; both cases are noted in ``warnings``.

    Returns ``{"icc", "icc_used", "deff", "cv_size", "mean_size", "n_eff", "n", "n_clusters", "warnings"}`` with
    ``n_eff = N / DEFF``. Raises HarnessInputError on bad inputs or fewer than 2 clusters.
    """
    y, codes, G, n = _groups(y, clusters, "design_effect")
    N = y.size
    icc = icc_anova(y, clusters)
    warnings = []
    if np.isnan(icc):
        rho = 0.0
        warnings.append("ICC undefined (singleton clusters or constant y); used 0")
    elif icc < 0.0:
        rho = 0.0
        warnings.append(f"negative ICC ({icc:.4g}); used 0")
    else:
        rho = icc
    m_bar = N / G
    cv = float(n.std() / m_bar)
    deff = 1.0 + ((1.0 + cv * cv) * m_bar - 1.0) * rho
    return {
        "icc": icc,
        "icc_used": rho,
        "deff": deff,
        "cv_size": cv,
        "mean_size": m_bar,
        "n_eff": N / deff,
        "n": N,
        "n_clusters": G,
        "warnings": warnings,
    }


def lag1_autocorrelation(y, clusters, order=None) -> float:
    """Pooled within-cluster lag-1 autocorrelation of ``y`` after removing each cluster's mean.

    Rows are sorted by cluster, then by ``order`` (e.g. chunk position; default: the given row order, stable).
    With residuals ``e = y - ybar_cluster``: ``r1 = sum_{consecutive pairs in the same cluster} e_t e_{t+1} /
    sum_t e_t^2`` (the usual lag-1 sample autocorrelation, Box & Jenkins 1976 eq. 2.1.12, pooled over clusters).
    Useful to see whether neighbouring chunks of a document behave alike beyond the document effect.

    Args: ``y`` (N,), ``clusters`` (N,), optional ``order`` (N,) numeric sort key within a cluster.
    Returns: a float in about [-1, 1]; ``nan`` if all residuals are 0 (no within-cluster variation).
    Raises: HarnessInputError on bad inputs.
    """
    func = "lag1_autocorrelation"
    y = as_vector(y, "y", func)
    codes, G = encode_clusters(clusters, y.size, func)
    key = np.arange(y.size, dtype=np.float64) if order is None else as_vector(order, "order", func, n=y.size)
    idx = np.lexsort((np.arange(y.size), key, codes))
    y, codes = y[idx], codes[idx]
    n = np.bincount(codes, minlength=G)
    e = y - (np.bincount(codes, weights=y, minlength=G) / n)[codes]
    den = float(e @ e)
    if den == 0.0:
        return float("nan")
    same = codes[1:] == codes[:-1]
    num = float((e[1:] * e[:-1])[same].sum())
    return num / den


def design_diagnostics(n, s, *, ss=None, y=None, cluster=None, position=None) -> dict:
    """Clustering diagnostics of per-document outcomes, from per-document sums.

    Args:
        n: shape (G,), rows (queries) per document (> 0).
        s: shape (G,), outcome sums per document (hits for a binary outcome).
        ss: shape (G,), sums of squares, or None for a binary outcome (``ss = s``).
        y, cluster, position: row-level outcomes, their document and chunk index (for the lag-1 autocorrelation,
            :func:`lag1_autocorrelation` ordered by ``position``; omitted -> ``nan``).

    Returns:
        ``documents``, ``queries``, ``micro`` (``sum s / sum n``), ``macro`` (mean of ``s / n``), ``icc`` (ANOVA
        estimator, :func:`harness.stats.batched.icc_from_sums`), ``mean_size``, ``cv_sizes`` (ddof 0), ``deff``
        (Kish's unequal-size formula, :func:`harness.stats.batched.deff_from_sizes`, with the ICC truncated at 0;
        ``nan`` when the ICC is undefined), ``n_eff = N / DEFF``, ``lag1_autocorrelation``,
        ``share_chunks_top10pct_docs`` (share of rows in the largest 10 % of documents, ``ceil(0.1 G)`` of them).
    """
    n = np.asarray(n, dtype=np.float64)
    s = np.asarray(s, dtype=np.float64)
    g = n.size
    big_n = float(n.sum())
    icc = icc_from_sums(n, s, ss)
    deff = deff_from_sizes(n, max(icc, 0.0)) if not math.isnan(icc) else float("nan")
    k10 = max(1, math.ceil(0.1 * g))
    lag1 = float("nan") if y is None else lag1_autocorrelation(y, cluster, order=position)
    return {
        "documents": int(g),
        "queries": int(big_n),
        "micro": float(s.sum() / big_n),
        "macro": float(np.mean(s / n)),
        "icc": float(icc),
        "mean_size": float(n.mean()),
        "cv_sizes": float(n.std() / n.mean()),
        "deff": float(deff),
        "n_eff": float(big_n / deff),
        "lag1_autocorrelation": float(lag1),
        "share_chunks_top10pct_docs": float(np.sort(n)[::-1][:k10].sum() / big_n),
    }
