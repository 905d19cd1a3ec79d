"""Interval coverage on the user's own corpus: the known-item outcomes as a finite population, sampled R times.

The population is one known-item system's per-document sufficient statistics ``(n_i, s_i)`` (queries and hits of
document i; :mod:`harness.studies.known_item`). Its values are the micro rate ``theta = sum(s) / sum(n)`` and the macro
rate ``mu = mean(s_i / n_i)``. An evaluator's sampling design is repeated ``reps`` times; in each replicate every
interval method computes its 95 % interval from the sampled documents' chunk outcomes, and we count how often it
covers the population value (Monte Carlo margin ``1.96 sqrt(p (1 - p) / R)``) and its mean width.

Everything below works on per-document sufficient statistics (binary outcomes: the sum of squares equals the sum),
so each method is a few array operations over ``(reps, K)`` or ``(reps, B, K)`` blocks.

Designs
-------
* ``srs``: simple random sampling of K documents without replacement; finite-population correction (FPC)
  ``1 - K / D`` (D documents in the population).
* ``two-stage``: simple random sampling of ``types`` document types (``doc_type``; types with fewer than
  ``max(5, per_type)`` documents pooled as ``"other"``), then ``per_type`` documents within each selected type.
  The document-level methods below are applied as an evaluator who ignores the design would apply them (the
  unweighted sample, FPC ``1 - K / D`` with ``K = types * per_type``). The design-based method ``two-stage`` uses the
  design-weighted (Horvitz-Thompson ratio) estimator with weights ``(H / h)(M_g / m_g)`` and Cochran's (1977, eq.
  10.24) two-stage variance of the linearised totals ``z_i = s_i - R n_i``: with both FPCs
  ``H^2 (1 - h/H) s_1^2 / h + (H / h) sum_g M_g^2 (1 - m_g/M_g) s_2g^2 / m_g``; without FPCs the ultimate-cluster
  estimator ``H^2 s_1^2 / h``; t with ``h - 1`` df.

Interval methods (level 0.95; "+FPC" variants multiply variances by ``1 - f``)
------------------------------------------------------------------------------
Each method follows the conventions of :mod:`harness.stats` (the single-sample functions named below), so a row of
the batched kernels equals that function's unclipped interval on the same sample. ``f = K / D`` for the clustered
methods; the iid methods' FPC uses the chunk fraction ``N / sum(n)`` (the analyst who treats chunks as the units).

Micro (the mean of chunk outcomes):

* ``iid_wald``: ``p +- z s / sqrt(N)``, ``s`` the SD with ddof 1, chunks treated as independent (for contrast
  only; :func:`harness.stats.iid_wald`).
* ``chunk_bootstrap``: resample the N chunk outcomes with replacement (B times), percentile interval. The
  replicate count of hits is exactly Binomial(N, p), which is how it is drawn.
* ``eff_wald``: Wald with the effective sample size ``N / DEFF``, ``DEFF = 1 + (sum n^2 / N - 1) max(ICC, 0)``
  estimated from the sample (:func:`icc_anova`, :func:`design_effect`; :func:`harness.stats.iid_wald_effective`).
* ``cr2``: CR2 cluster-robust standard error with documents as clusters and Satterthwaite degrees of freedom
  (Bell and McCaffrey 2002; Pustejovsky and Tipton 2018), t interval; closed form :func:`cr2_mean`
  (:func:`harness.stats.cr2`).
* ``doc_boot_pct``: resample documents with replacement, replicate ``sum(s*) / sum(n*)``, percentile interval.
* ``doc_boot_t``: the same replicates studentised by their own CR2 standard error (duplicated documents count as
  distinct clusters; no nested resampling); interval ``[p - t*_(hi) se, p - t*_(lo) se]`` with ``se`` the sample's
  CR2 SE (:func:`harness.stats.cluster_bootstrap`).

Macro (the mean of document rates):

* ``macro_t``: ``mean +- t_(K-1) sd / sqrt(K)`` (:func:`harness.stats.cluster_t`).
* ``macro_boot_t``: document bootstrap-t with ``sd* / sqrt(K)`` as the replicate's standard error.

Bootstrap quantiles are linear-interpolation (type 7) quantiles of the B replicates (Hyndman and Fan 1996; Efron
and Tibshirani 1993, ch. 12-13); bounds are widened to contain the estimate. "+FPC" bootstrap variants shrink the
deviations about the estimate by ``sqrt(1 - f)`` (percentile) or multiply the SE by it (bootstrap-t). A replicate
with zero standard error gets ``t* = 0`` when it equals the estimate and ``+-inf`` otherwise; a sample with zero SE
gets ``[p, p]``. Widths are measured after clipping intervals to [0, 1]; coverage counts ``lower <= value <=
upper``.

Speed: one block of replicates is ``(reps_in_block, B, K)`` arrays (bounded by ``block_elements``), blocks run on
``threads`` threads with their own seeds.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy import stats as _st

from harness.errors import HarnessInputError
from harness.io import atomic_write_json, atomic_write_text, read_jsonl

__all__ = [
    "METHODS",
    "PUBLISHED_COVERAGE",
    "CoverageResult",
    "Population",
    "cr2_mean",
    "design_diagnostics",
    "design_effect",
    "icc_anova",
    "load_coverage",
    "load_population",
    "plot_coverage_vs_k",
    "plot_width_vs_k",
    "run_coverage",
    "write_coverage",
    "study_design",
    "t_quantile",
]

#: Published 95 % coverage at K = 20 documents, 5,000 draws (1,300 regulatory documents; no FPC).
PUBLISHED_COVERAGE = {
    "iid_wald": 0.295,
    "chunk_bootstrap": 0.250,
    "eff_wald": 0.890,
    "cr2": 0.857,
    "doc_boot_t": 0.884,
    "macro_t": 0.930,
    "macro_boot_t": 0.972,
}

#: ``method id -> (target, label)``; the order of the tables.
METHODS: dict[str, tuple[str, str]] = {
    "iid_wald": ("micro", "iid Wald (contrast only)"),
    "chunk_bootstrap": ("micro", "chunk bootstrap"),
    "eff_wald": ("micro", "effective-size Wald"),
    "cr2": ("micro", "CR2 (Satterthwaite t)"),
    "doc_boot_pct": ("micro", "document bootstrap percentile"),
    "doc_boot_t": ("micro", "document bootstrap-t"),
    "macro_t": ("macro", "t over document rates"),
    "macro_boot_t": ("macro", "document bootstrap-t"),
    "twostage_micro": ("micro", "two-stage design-based (weighted)"),
    "twostage_macro": ("macro", "two-stage design-based (weighted)"),
}


# --------------------------------------------------------------------------------------------------------------
# Small statistical kernels (batched over leading axes)
# --------------------------------------------------------------------------------------------------------------


def t_quantile(level: float, df) -> np.ndarray | float:
    """Two-sided t critical value ``t_{(1 + level)/2, df}`` (normal for ``df = inf``); vectorised over ``df``."""
    q = _st.t.ppf(0.5 + level / 2.0, df)
    return float(q) if np.ndim(q) == 0 else q


def cr2_mean(n, s) -> tuple:
    """CR2 standard error and Satterthwaite df of the mean of observations clustered in groups.

    For the intercept-only OLS model ``y = b + e`` with clusters g of sizes ``n_g`` and outcome sums ``s_g``
    (``N = sum n``, ``pi_g = n_g / N``, ``E_g = s_g - n_g ybar``), the CR2 adjustment ``(I - H_gg)^(-1/2)`` scales
    the cluster residual sum by ``(1 - pi_g)^(-1/2)``, so ``V = sum_g E_g^2 / (1 - pi_g) / N^2``. With the identity
    working model (clubSandwich's default for ``lm``) the Satterthwaite df is
    ``1 / (sum d_g^2 - 2 sum d_g t_g + (sum t_g)^2)`` with ``d_g = pi_g / (1 - pi_g)``, ``t_g = pi_g^2 / (1 - pi_g)``
    (equal to ``G - 1`` for equal sizes). Bell and McCaffrey (2002); Pustejovsky and Tipton (2018); checked against
    R clubSandwich 0.5.8 ``coef_test(..., vcov = "CR2", test = "Satterthwaite")``.

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


def icc_anova(n, s, ss=None):
    """One-way ANOVA estimator of the intraclass correlation for unequal cluster sizes.

    ``ICC = (MSB - MSW) / (MSB + (n0 - 1) MSW)`` with ``MSB = sum n_g (ybar_g - ybar)^2 / (G - 1)``,
    ``MSW = sum_g (ss_g - s_g^2 / n_g) / (N - G)``, ``n0 = (N - sum n_g^2 / N) / (G - 1)`` (Searle 1971; Donner 1986,
    "A review of inference procedures for the intraclass correlation coefficient"). Not truncated at 0.

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


def design_effect(n, icc):
    """Design effect of a cluster sample mean with unequal cluster sizes.

    ``DEFF = 1 + ((1 + cv^2) mbar - 1) ICC`` with ``mbar`` the mean cluster size and ``cv`` the coefficient of
    variation of the sizes (population form, ``ddof = 0``), i.e. ``1 + (sum n^2 / N - 1) ICC`` (Kish 1965;
    Eldridge, Ashby and Kerry 2006, Int J Epidemiol 35:1292). Not the balanced ``1 + (m - 1) ICC``.

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


def design_diagnostics(n, s, *, y=None, cluster=None, position=None) -> dict:
    """Clustering diagnostics of per-document outcomes.

    Args:
        n: shape (G,), queries per document (> 0).
        s: shape (G,), hits per document.
        y, cluster, position: chunk-level outcomes, their document and chunk index (for the lag-1
            autocorrelation, :func:`harness.stats.lag1_autocorrelation` ordered by ``position``; omitted -> ``nan``).

    Returns:
        ``documents``, ``queries``, ``micro``, ``macro``, ``icc`` (:func:`icc_anova`), ``mean_size``, ``cv_sizes``
        (ddof 0), ``deff`` (:func:`design_effect` with ICC truncated at 0), ``n_eff = N / DEFF``,
        ``lag1_autocorrelation``, ``share_chunks_top10pct_docs`` (share of queries in the largest 10 % of
        documents, ``ceil(0.1 G)`` of them).
    """
    n = np.asarray(n, dtype=np.float64)
    s = np.asarray(s, dtype=np.float64)
    g = n.size
    big_n = float(n.sum())
    icc = icc_anova(n, s)
    deff = design_effect(n, max(icc, 0.0)) if not math.isnan(icc) else float("nan")
    k10 = max(1, math.ceil(0.1 * g))
    if y is None:
        lag1 = float("nan")
    else:
        from harness.stats import lag1_autocorrelation

        lag1 = lag1_autocorrelation(y, cluster, order=position)
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


# --------------------------------------------------------------------------------------------------------------
# Population
# --------------------------------------------------------------------------------------------------------------


@dataclass
class Population:
    """A finite population of documents with per-document known-item statistics.

    Attributes:
        system: the known-item system the outcomes came from.
        doc_ids: D document ids.
        doc_types: D document types (raw ``doc_type``).
        n: shape (D,), queries per document (>= 1).
        s: shape (D,), hits per document.
        source: where it was read from.
    """

    system: str
    doc_ids: list[str]
    doc_types: list[str]
    n: np.ndarray
    s: np.ndarray
    source: str = ""

    @property
    def micro(self) -> float:
        """Population micro rate ``sum(s) / sum(n)``."""
        return float(self.s.sum() / self.n.sum())

    @property
    def macro(self) -> float:
        """Population macro rate ``mean(s / n)``."""
        return float(np.mean(self.s / self.n))

    @classmethod
    def from_arrays(cls, n, s, doc_types: Sequence[str] | None = None, *, system: str = "sim") -> Population:
        """A population from arrays (tests, simulations)."""
        n = np.asarray(n, dtype=np.int64)
        s = np.asarray(s, dtype=np.int64)
        if n.shape != s.shape or n.ndim != 1 or np.any(n < 1) or np.any(s < 0) or np.any(s > n):
            raise HarnessInputError("population: need 1-d n >= 1 and 0 <= s <= n of equal length")
        types = list(doc_types) if doc_types is not None else ["all"] * n.size
        return cls(system, [f"d{i}" for i in range(n.size)], types, n, s, "arrays")


def load_population(out_dir: str | Path, *, system: str | None = None) -> Population:
    """Read the population from a known-item output folder's ``per_document.jsonl``.

    Args:
        out_dir: the folder ``harness known-item`` wrote.
        system: which system's outcomes (default: the first in the file).

    Raises:
        HarnessInputError: missing file or field, unknown system, a record with ``n < 1`` or ``s`` outside
            ``[0, n]``.
    """
    path = Path(out_dir) / "per_document.jsonl"
    recs = read_jsonl(path)
    if not recs:
        raise HarnessInputError(f"{path}: no records")
    systems = list(dict.fromkeys(str(o.get("system")) for _, o in recs))
    chosen = system or systems[0]
    if chosen not in systems:
        raise HarnessInputError(f"{path}: system {chosen!r} not found (has: {', '.join(systems)})")
    ids, types, ns, ss = [], [], [], []
    for line, o in recs:
        if str(o.get("system")) != chosen:
            continue
        for k in ("doc_id", "n", "s"):
            if k not in o:
                raise HarnessInputError(f"{path}:{line}: record {o.get('doc_id', '?')}: field {k}: missing")
        n, s = o["n"], o["s"]
        if not isinstance(n, int) or not isinstance(s, int) or n < 1 or not 0 <= s <= n:
            raise HarnessInputError(
                f"{path}:{line}: record {o['doc_id']}: field n/s: need integers n >= 1, 0 <= s <= n"
            )
        ids.append(str(o["doc_id"]))
        types.append(str(o.get("doc_type") or "unknown"))
        ns.append(n)
        ss.append(s)
    return Population(chosen, ids, types, np.asarray(ns, np.int64), np.asarray(ss, np.int64), str(path))


# --------------------------------------------------------------------------------------------------------------
# Batched interval kernels
# --------------------------------------------------------------------------------------------------------------


def _quantiles7(x: np.ndarray, ps: Sequence[float]) -> list[np.ndarray]:
    """Linear-interpolation quantiles (Hyndman and Fan type 7, numpy's default) along the last axis, safe with
    +-inf (an infinite neighbour is returned as is), as :func:`harness.stats._core.sorted_quantile` does."""
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


def _safe_t(num: np.ndarray, se: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        t = num / se
    zero = se == 0
    if np.any(zero):
        t = np.where(zero, np.where(num == 0, 0.0, np.copysign(np.inf, num)), t)
    return t


def _boot_t_bounds(est, se, tlo, thi, c):
    """``[est - thi c se, est - tlo c se]``; ``[est, est]`` when ``se == 0``; widened to contain ``est``."""
    with np.errstate(invalid="ignore"):
        lo = np.where(se == 0, est, est - thi * c * se)
        hi = np.where(se == 0, est, est - tlo * c * se)
    return np.minimum(lo, est), np.maximum(hi, est)


def _pct_bounds(est, qlo, qhi, c):
    """Percentile bounds shrunk about ``est`` by ``c = sqrt(1 - f)``, widened to contain ``est``."""
    return np.minimum(est + c * (qlo - est), est), np.maximum(est + c * (qhi - est), est)


def _replicate_cr2_se(nb: np.ndarray, sb: np.ndarray, pb: np.ndarray, big_nb: np.ndarray) -> np.ndarray:
    """CR2 standard error of each bootstrap replicate (:func:`cr2_mean`'s variance; a document drawn twice counts
    as two clusters). ``nb``, ``sb``: shape (..., K) drawn documents' sizes and sums (``nb`` is overwritten);
    ``pb``, ``big_nb``: shape (...), replicate means and sizes."""
    e = sb - nb * pb[..., None]
    e *= e
    nb /= big_nb[..., None]
    np.subtract(1.0, nb, out=nb)
    e /= nb
    return np.sqrt(e.sum(-1)) / big_nb


def _sample_intervals(
    ns: np.ndarray,
    ss: np.ndarray,
    rng: np.random.Generator,
    b: int,
    level: float,
    f_docs: float,
    n_pop_rows: float,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every document-level method's intervals, without and with FPC, for r samples of K documents.

    The conventions are those of :mod:`harness.stats` (so each row equals the single-sample function's interval,
    unclipped): iid SD with ddof 1; bootstrap quantiles of type 7; bootstrap bounds widened to contain the
    estimate; a bootstrap-t interval is ``[p, p]`` when the sample's SE is 0.

    Args:
        ns, ss: shape (r, K), the sampled documents' queries and hits.
        rng: random generator for the bootstrap.
        b: bootstrap replicates.
        level: confidence level.
        f_docs: document sampling fraction K / D (clustered methods' FPC ``1 - f``).
        n_pop_rows: chunks in the population (the iid methods' FPC is ``1 - N / n_pop_rows``).

    Returns:
        ``{method or method+"_fpc": (lower (r,), upper (r,))}`` plus ``"_estimates"``: (micro (r,), macro (r,)).
    """
    r, k = ns.shape
    z = t_quantile(level, np.inf)
    a = (1.0 - level) / 2.0
    c = math.sqrt(max(0.0, 1.0 - f_docs))
    nf = ns.astype(np.float64)
    sf = ss.astype(np.float64)
    big_n = nf.sum(1)
    c_rows = np.sqrt(np.maximum(0.0, 1.0 - big_n / n_pop_rows))
    p = sf.sum(1) / big_n
    rates = sf / nf
    mac = rates.mean(1)
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def sym(name: str, est: np.ndarray, half: np.ndarray, cf) -> None:
        out[name] = (est - half, est + half)
        out[name + "_fpc"] = (est - cf * half, est + cf * half)

    # iid Wald (sample SD with ddof 1: s^2 = N p (1 - p) / (N - 1))
    var1 = p * (1 - p) / (big_n - 1)
    sym("iid_wald", p, z * np.sqrt(var1), c_rows)
    # effective-size Wald
    icc = icc_anova(nf, sf)
    icc = np.where(np.isnan(icc), 0.0, np.maximum(icc, 0.0))
    deff = design_effect(nf, icc)
    sym("eff_wald", p, z * np.sqrt(var1 * deff), c)
    # CR2
    _, se_cr2, df_cr2 = cr2_mean(nf, sf)
    sym("cr2", p, t_quantile(level, df_cr2) * se_cr2, c)
    # macro t
    se_mac = rates.std(1, ddof=1) / math.sqrt(k)
    sym("macro_t", mac, t_quantile(level, k - 1) * se_mac, c)
    # chunk bootstrap: replicate hit counts are Binomial(N, p)
    reps = rng.binomial(ns.sum(1)[:, None], p[:, None], size=(r, b)) / big_n[:, None]
    lo, hi = _quantiles7(reps, (a, 1 - a))
    out["chunk_bootstrap"] = _pct_bounds(p, lo, hi, 1.0)
    out["chunk_bootstrap_fpc"] = _pct_bounds(p, lo, hi, c_rows)
    # document bootstrap (percentile, bootstrap-t micro, bootstrap-t macro) from one set of replicates
    idx = rng.integers(0, k, size=(r, b, k), dtype=np.int32)
    idx += (np.arange(r, dtype=np.int32) * k)[:, None, None]
    nb = nf.ravel()[idx]
    sb = sf.ravel()[idx]
    big_nb = nb.sum(-1)
    pb = sb.sum(-1) / big_nb
    lo, hi = _quantiles7(pb, (a, 1 - a))
    out["doc_boot_pct"] = _pct_bounds(p, lo, hi, 1.0)
    out["doc_boot_pct_fpc"] = _pct_bounds(p, lo, hi, c)
    se_b = _replicate_cr2_se(nb, sb, pb, big_nb)
    tlo, thi = _quantiles7(_safe_t(pb - p[:, None], se_b), (a, 1 - a))
    out["doc_boot_t"] = _boot_t_bounds(p, se_cr2, tlo, thi, 1.0)
    out["doc_boot_t_fpc"] = _boot_t_bounds(p, se_cr2, tlo, thi, c)
    rb = rates.ravel()[idx]
    mb = rb.mean(-1)
    sdb = rb.std(-1, ddof=1)
    tlo, thi = _quantiles7(_safe_t(mb - mac[:, None], sdb / math.sqrt(k)), (a, 1 - a))
    out["macro_boot_t"] = _boot_t_bounds(mac, se_mac, tlo, thi, 1.0)
    out["macro_boot_t_fpc"] = _boot_t_bounds(mac, se_mac, tlo, thi, c)
    out["_estimates"] = (p, mac)
    return out


def _twostage_intervals(
    nt: np.ndarray, st: np.ndarray, big_m: np.ndarray, n_types: int, level: float
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Design-based two-stage intervals (weighted micro and macro) for r samples of h types x m documents.

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
    tq = t_quantile(level, h - 1)
    f1 = h / big_h
    f2 = m / mg
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
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


# --------------------------------------------------------------------------------------------------------------
# The study
# --------------------------------------------------------------------------------------------------------------


def _pool_types(types: Sequence[str], min_docs: int) -> tuple[list[str], np.ndarray]:
    from collections import Counter

    cnt = Counter(types)
    pooled = [t if cnt[t] >= min_docs else "other" for t in types]
    labels = sorted(set(pooled))
    code = {t: i for i, t in enumerate(labels)}
    return labels, np.asarray([code[t] for t in pooled], dtype=np.int64)


@dataclass
class DesignResult:
    """Coverage of every method under one design.

    Attributes:
        design: ``"srs"`` or ``"two-stage"``.
        k: documents per sample.
        reps: R.
        rows: ``{method_key: {"method", "target", "fpc", "coverage", "mc_margin", "mean_width",
            "median_width"}}``; ``method_key`` is a :data:`METHODS` id, ``+ "_fpc"`` for the FPC variant.
        seconds: wall time.
        note: design details (types, fraction, skipped reason).
    """

    design: str
    k: int
    reps: int
    rows: dict[str, dict]
    seconds: float
    note: dict = field(default_factory=dict)


def _summarise(intervals: dict[str, tuple[np.ndarray, np.ndarray]], theta: float, mu: float, reps: int) -> dict:
    rows = {}
    for key, (lo, hi) in intervals.items():
        if key.startswith("_"):
            continue
        base = key.removesuffix("_fpc")
        target = METHODS[base][0]
        val = theta if target == "micro" else mu
        cov = (lo <= val) & (val <= hi)
        p = float(cov.mean())
        width = np.clip(hi, 0, 1) - np.clip(lo, 0, 1)
        rows[key] = {
            "method": base,
            "target": target,
            "fpc": key.endswith("_fpc"),
            "coverage": p,
            "mc_margin": 1.96 * math.sqrt(p * (1 - p) / reps),
            "mean_width": float(width.mean()),
            "median_width": float(np.median(width)),
        }
    return rows


def _blocks(reps: int, per_block: int) -> list[tuple[int, int]]:
    return [(a, min(a + per_block, reps)) for a in range(0, reps, per_block)]


def _run_blocks(fn, blocks: list[tuple[int, int]], threads: int) -> list:
    if threads <= 1 or len(blocks) == 1:
        return [fn(i, a, b) for i, (a, b) in enumerate(blocks)]
    with ThreadPoolExecutor(threads) as ex:
        return list(ex.map(lambda x: fn(x[0], *x[1]), enumerate(blocks)))


def _concat(parts: list[dict]) -> dict:
    return {k: tuple(np.concatenate([p[k][j] for p in parts]) for j in range(2)) for k in parts[0]}


def study_design(
    pop: Population,
    design: str,
    *,
    k: int = 20,
    types: int = 6,
    per_type: int = 4,
    reps: int = 5000,
    b: int = 999,
    seed: int = 0,
    level: float = 0.95,
    threads: int = 2,
    block_elements: int = 1 << 21,
) -> DesignResult:
    """Coverage of every interval method under one design (see the module docstring).

    Args:
        pop: the finite population.
        design: ``"srs"`` (K documents) or ``"two-stage"`` (``types`` types x ``per_type`` documents).
        k: documents per sample for ``srs`` (2 <= k <= D).
        types, per_type: two-stage sizes.
        reps: R, the number of samples.
        b: bootstrap replicates per sample.
        seed: seed; replicate block j of design d at size K uses ``SeedSequence([seed, d, K, j])``, so results do
            not depend on ``threads``.
        level: confidence level.
        threads: worker threads over replicate blocks.
        block_elements: bound on ``reps_in_block * b * K`` (memory: about 20 float64 arrays of this size per thread).

    Returns:
        A :class:`DesignResult`; a design that cannot be drawn (K > D, too few types) comes back with empty rows and
        ``note["skipped"]``.
    """
    t0 = time.perf_counter()
    d = pop.n.size
    theta, mu = pop.micro, pop.macro
    n_rows = float(pop.n.sum())
    if design == "srs":
        if not 2 <= k <= d:
            return DesignResult(design, k, reps, {}, 0.0, {"skipped": f"K={k} outside [2, {d}]"})
        per_block = max(1, block_elements // (b * k))
        f = k / d

        def fn(j: int, a: int, z: int) -> dict:
            rng = np.random.default_rng(np.random.SeedSequence([seed, 0, k, j]))
            keys = rng.random((z - a, d))
            idx = np.argpartition(keys, k - 1, axis=1)[:, :k]
            return _sample_intervals(pop.n[idx], pop.s[idx], rng, b, level, f, n_rows)

        parts = _run_blocks(fn, _blocks(reps, per_block), threads)
        res = _concat(parts)
        rows = _summarise(res, theta, mu, reps)
        note = {"fraction": f, "documents": d}
        return DesignResult(design, k, reps, rows, time.perf_counter() - t0, note)
    if design != "two-stage":
        raise HarnessInputError(f"design {design!r}: expected 'srs' or 'two-stage'")
    labels, codes = _pool_types(pop.doc_types, max(5, per_type))
    sizes = np.bincount(codes, minlength=len(labels))
    big_h = len(labels)
    kk = types * per_type
    note = {"types": dict(zip(labels, sizes.tolist(), strict=True)), "h": types, "m": per_type, "H": big_h}
    if types < 2 or types > big_h or per_type < 1:
        return DesignResult(design, kk, reps, {}, 0.0, {**note, "skipped": f"need 2 <= types <= {big_h}"})
    if sizes.min() < per_type:
        small = [lab for lab, z in zip(labels, sizes, strict=True) if z < per_type]
        return DesignResult(
            design, kk, reps, {}, 0.0, {**note, "skipped": f"types {small} have fewer than {per_type} documents"}
        )
    members = [np.flatnonzero(codes == g) for g in range(big_h)]
    per_block = max(1, block_elements // (b * kk))
    f = kk / d

    def fn2(j: int, a: int, z: int) -> dict:
        rng = np.random.default_rng(np.random.SeedSequence([seed, 1, kk, j]))
        r = z - a
        tsel = np.argpartition(rng.random((r, big_h)), types - 1, axis=1)[:, :types]  # (r, h)
        within = np.empty((r, big_h, per_type), dtype=np.int64)
        for g, mem in enumerate(members):
            pick = np.argpartition(rng.random((r, mem.size)), per_type - 1, axis=1)[:, :per_type]
            within[:, g, :] = mem[pick]
        docs = np.take_along_axis(within, tsel[:, :, None], axis=1)  # (r, h, m)
        nt, st = pop.n[docs], pop.s[docs]
        out = _sample_intervals(nt.reshape(r, kk), st.reshape(r, kk), rng, b, level, f, n_rows)
        out.update(_twostage_intervals(nt, st, sizes[tsel], big_h, level))
        return out

    parts = _run_blocks(fn2, _blocks(reps, per_block), threads)
    res = _concat(parts)
    rows = _summarise(res, theta, mu, reps)
    note.update(
        {
            "fraction": f,
            "documents": d,
            "mean_naive_micro": float(res["_estimates"][0].mean()),
            "mean_weighted_micro": float(res["_estimates_w"][0].mean()),
        }
    )
    return DesignResult(design, kk, reps, rows, time.perf_counter() - t0, note)


@dataclass
class CoverageResult:
    """What :func:`run_coverage` produced.

    Attributes:
        population: summary of the population (system, documents, queries, micro, macro, diagnostics).
        config: reps, K list, B, seed, level, designs.
        designs: list of :class:`DesignResult` (SRS for each K, then two-stage).
        seconds: wall time of the whole study.
        files: paths written.
    """

    population: dict
    config: dict
    designs: list[DesignResult]
    seconds: float
    files: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-serialisable form (``coverage.json``)."""
        return {
            "population": self.population,
            "config": self.config,
            "seconds": round(self.seconds, 3),
            "designs": [
                {
                    "design": d.design,
                    "K": d.k,
                    "reps": d.reps,
                    "seconds": round(d.seconds, 3),
                    "note": d.note,
                    "rows": d.rows,
                }
                for d in self.designs
            ],
            "published_k20": PUBLISHED_COVERAGE,
        }

    def table_rows(self) -> list[dict]:
        """Flat rows (design, K, method, fpc, coverage, margin, width) for CSV and plots."""
        out = []
        for d in self.designs:
            for key, r in d.rows.items():
                out.append({"design": d.design, "K": d.k, "key": key, **r})
        return out

    def __rich__(self):
        from rich.console import Group
        from rich.table import Table

        p = self.population
        items = []
        head = Table(
            title=f"Population: {p['system']} known-item outcomes, {p['documents']} documents, {p['queries']} queries",
            show_header=True,
        )
        for col in ("micro", "macro", "ICC", "DEFF", "N_eff", "lag-1 r", "top-10 % docs' share"):
            head.add_column(col, justify="right")
        dg = p["diagnostics"]
        head.add_row(
            f"{100 * p['micro']:.2f} %",
            f"{100 * p['macro']:.2f} %",
            f"{dg['icc']:.3f}",
            f"{dg['deff']:.1f}",
            f"{dg['n_eff']:.0f}",
            "-" if math.isnan(dg["lag1_autocorrelation"]) else f"{dg['lag1_autocorrelation']:.3f}",
            f"{100 * dg['share_chunks_top10pct_docs']:.1f} %",
        )
        items.append(head)
        for d in self.designs:
            if not d.rows:
                items.append(f"[yellow]{d.design} K={d.k}: skipped ({d.note.get('skipped')})")
                continue
            title = (
                f"95 % coverage, {d.design} K={d.k}"
                + (f" ({d.note['h']} types x {d.note['m']})" if d.design == "two-stage" else "")
                + f", R={d.reps}, {d.seconds:.1f} s"
            )
            t = Table(title=title, caption="coverage +- Monte Carlo margin 1.96 sqrt(p(1-p)/R); width clipped to [0,1]")
            for col in ("method", "target", "coverage", "+FPC", "mean width", "+FPC width", "published (K=20)"):
                t.add_column(col, justify="left" if col in ("method", "target") else "right")
            for m, (target, label) in METHODS.items():
                if m not in d.rows:
                    continue
                a, f = d.rows[m], d.rows[m + "_fpc"]
                pub = PUBLISHED_COVERAGE.get(m) if d.design == "srs" and d.k == 20 else None
                t.add_row(
                    label,
                    target,
                    f"{100 * a['coverage']:.1f} +- {100 * a['mc_margin']:.1f}",
                    f"{100 * f['coverage']:.1f}",
                    f"{a['mean_width']:.4f}",
                    f"{f['mean_width']:.4f}",
                    "-" if pub is None else f"{100 * pub:.1f}",
                )
            items.append(t)
        items.append(f"coverage study wall time: {self.seconds:.1f} s")
        return Group(*items)


def run_coverage(
    population: str | Path | Population,
    *,
    reps: int = 5000,
    ks: Sequence[int] = (5, 10, 20, 40, 80),
    types: int = 6,
    per_type: int = 4,
    b: int = 999,
    seed: int = 0,
    level: float = 0.95,
    system: str | None = None,
    threads: int = 2,
    out_dir: str | Path | None = None,
    plots: bool = True,
    block_elements: int = 1 << 21,
) -> CoverageResult:
    """Run the coverage study (``harness coverage --population OUT_DIR``).

    Args:
        population: a known-item output folder (its ``per_document.jsonl``) or a :class:`Population`.
        reps: R samples per design (>= 10).
        ks: K values of the SRS design.
        types, per_type: the two-stage design (``types = 0`` skips it).
        b: bootstrap replicates (>= 39 at level 0.95).
        seed: seed (see :func:`study_design`).
        level: confidence level.
        system: which system's outcomes (default: the first in the file).
        threads: worker threads.
        out_dir: where to write ``coverage.json``, ``coverage.csv`` and (``plots``) ``coverage_vs_k.svg/png``,
            ``width_vs_k.svg/png``; default the population folder when it is a folder, nothing for a
            :class:`Population`.
        plots: write the plots.
        block_elements: memory bound (see :func:`study_design`).

    Returns:
        A :class:`CoverageResult` (render it with ``rich.print``).

    Raises:
        HarnessInputError: unreadable population, bad sizes.
    """
    if reps < 10:
        raise HarnessInputError(f"--reps {reps}: need at least 10")
    if b < 39:
        raise HarnessInputError(f"--B {b}: need at least 39 bootstrap replicates")
    if isinstance(population, Population):
        pop = population
        default_out = None
    else:
        pop = load_population(population, system=system)
        default_out = Path(population)
    out = Path(out_dir) if out_dir is not None else default_out
    t0 = time.perf_counter()
    designs = [
        study_design(
            pop, "srs", k=k, reps=reps, b=b, seed=seed, level=level, threads=threads, block_elements=block_elements
        )
        for k in ks
    ]
    if types:
        designs.append(
            study_design(
                pop,
                "two-stage",
                types=types,
                per_type=per_type,
                reps=reps,
                b=b,
                seed=seed,
                level=level,
                threads=threads,
                block_elements=block_elements,
            )
        )
    secs = time.perf_counter() - t0
    diag = design_diagnostics(pop.n, pop.s)
    popd = {
        "system": pop.system,
        "source": pop.source,
        "documents": int(pop.n.size),
        "queries": int(pop.n.sum()),
        "micro": pop.micro,
        "macro": pop.macro,
        "diagnostics": diag,
    }
    if not isinstance(population, Population):
        summ = Path(population) / "summary.json"
        if summ.exists():
            import json

            try:
                s = json.loads(summ.read_text(encoding="utf-8"))
                lag = s["systems"][pop.system]["diagnostics"]["lag1_autocorrelation"]
                popd["diagnostics"]["lag1_autocorrelation"] = lag
            except (KeyError, ValueError):
                pass
    config = {
        "reps": reps,
        "K": list(ks),
        "types": types,
        "per_type": per_type,
        "B": b,
        "seed": seed,
        "level": level,
        "threads": threads,
        "block_elements": block_elements,
    }
    result = CoverageResult(popd, config, designs, secs)
    if out is not None:
        result.files = write_coverage(result, out, plots=plots)
    return result


def load_coverage(path: str | Path) -> CoverageResult:
    """Read a ``coverage.json`` back into a :class:`CoverageResult` (to re-render or re-plot it).

    Raises:
        HarnessInputError: missing or malformed file.
    """
    from harness.io import read_json

    path = Path(path)
    data = read_json(path)
    try:
        designs = [
            DesignResult(d["design"], int(d["K"]), int(d["reps"]), d["rows"], float(d["seconds"]), d.get("note", {}))
            for d in data["designs"]
        ]
        return CoverageResult(data["population"], data["config"], designs, float(data["seconds"]), [str(path)])
    except (KeyError, TypeError, ValueError) as exc:
        raise HarnessInputError(f"{path}: not a coverage.json ({type(exc).__name__}: {exc})") from None


def write_coverage(result: CoverageResult, out_dir: str | Path, *, plots: bool = True) -> list[str]:
    """Write ``coverage.json``, ``coverage.csv`` and the plots atomically into ``out_dir``; return the paths."""
    out = Path(out_dir)
    files = []
    atomic_write_json(out / "coverage.json", result.to_dict())
    files.append(str(out / "coverage.json"))
    cols = ["design", "K", "key", "method", "target", "fpc", "coverage", "mc_margin", "mean_width", "median_width"]
    lines = [",".join(cols)]
    for r in result.table_rows():
        lines.append(",".join(str(r[c]) for c in cols))
    atomic_write_text(out / "coverage.csv", "\n".join(lines) + "\n")
    files.append(str(out / "coverage.csv"))
    if plots:
        for ext in ("svg", "png"):
            files.append(str(plot_coverage_vs_k(result, out / f"coverage_vs_k.{ext}")))
            files.append(str(plot_width_vs_k(result, out / f"width_vs_k.{ext}")))
    return files


# --------------------------------------------------------------------------------------------------------------
# Plots (matplotlib, Agg, grayscale-readable)
# --------------------------------------------------------------------------------------------------------------

_STYLES = {
    "iid_wald": ("o", "-", "0.0"),
    "chunk_bootstrap": ("v", "--", "0.35"),
    "eff_wald": ("s", "-.", "0.0"),
    "cr2": ("D", "-", "0.45"),
    "doc_boot_pct": ("^", ":", "0.0"),
    "doc_boot_t": ("P", "--", "0.0"),
    "macro_t": ("X", "-", "0.6"),
    "macro_boot_t": ("*", ":", "0.45"),
}


def _savefig(fig, path: Path) -> Path:
    import io

    buf = io.BytesIO() if path.suffix != ".svg" else io.StringIO()
    fig.savefig(
        buf,
        format=path.suffix.lstrip("."),
        bbox_inches="tight",
        dpi=150,
        metadata={"Date": None} if path.suffix == ".svg" else None,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(buf, io.StringIO):
        atomic_write_text(path, buf.getvalue())
    else:
        import os
        import tempfile

        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(buf.getvalue())
        os.replace(tmp, path)
    return path


def _srs_series(result: CoverageResult, fpc: bool):
    srs = sorted((d for d in result.designs if d.design == "srs" and d.rows), key=lambda d: d.k)
    series = {}
    for m in _STYLES:
        key = m + ("_fpc" if fpc else "")
        pts = [(d.k, d.rows[key]) for d in srs if key in d.rows]
        if pts:
            series[m] = pts
    return series


def _log_k_axis(ax, ks: list[int]) -> None:
    import matplotlib.ticker as mticker

    ax.set_xscale("log")
    ax.set_xticks(ks)
    ax.set_xticklabels([str(k) for k in ks])
    ax.xaxis.set_minor_formatter(mticker.NullFormatter())
    ax.set_xlabel("K, documents sampled per evaluation (simple random sampling; log scale)")


def plot_coverage_vs_k(result: CoverageResult, path: str | Path, *, fpc: bool = False) -> Path:
    """Coverage (%) against K (documents, log scale) per method, SRS design, with the nominal line and bands.

    The grey band is the Monte Carlo margin around the nominal level (``level +- 1.96 sqrt(level (1-level)/R)``);
    error bars are each point's own margin. Saved as SVG or PNG by the suffix of ``path``.

    Returns:
        ``path``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    level = result.config["level"]
    reps = result.config["reps"]
    series = _srs_series(result, fpc)
    fig, ax = plt.subplots(figsize=(9.0, 4.8))
    ks = sorted({k for pts in series.values() for k, _ in pts}) or [1]
    band = 1.96 * math.sqrt(level * (1 - level) / reps)
    ax.axhspan(100 * (level - band), 100 * (level + band), color="0.85", zorder=0, label="nominal +- MC margin")
    ax.axhline(100 * level, color="0.0", lw=0.8, zorder=1)
    for m, pts in series.items():
        mk, ls, col = _STYLES[m]
        x = [k for k, _ in pts]
        y = [100 * r["coverage"] for _, r in pts]
        e = [100 * r["mc_margin"] for _, r in pts]
        ax.errorbar(
            x,
            y,
            yerr=e,
            marker=mk,
            ls=ls,
            color=col,
            mfc="white" if m.startswith("macro") else col,
            capsize=2,
            lw=1.2,
            ms=5,
            label=METHODS[m][1] + (" (macro)" if m.startswith("macro") else ""),
        )
    _log_k_axis(ax, ks)
    ax.set_ylabel("coverage of the population value (%)")
    ax.set_ylim(0, 100)
    ax.set_title(f"95 % interval coverage, R = {reps} samples" + (", with FPC" if fpc else ""))
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.grid(True, which="major", color="0.9", lw=0.5)
    out = _savefig(fig, path)
    plt.close(fig)
    return out


def plot_width_vs_k(result: CoverageResult, path: str | Path, *, fpc: bool = False) -> Path:
    """Mean interval width (percentage points, clipped to [0, 1]) against K per method, SRS design (log-log).

    Returns:
        ``path``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    series = _srs_series(result, fpc)
    fig, ax = plt.subplots(figsize=(9.0, 4.8))
    ks = sorted({k for pts in series.values() for k, _ in pts}) or [1]
    for m, pts in series.items():
        mk, ls, col = _STYLES[m]
        x = [k for k, _ in pts]
        y = [100 * r["mean_width"] for _, r in pts]
        ax.plot(
            x,
            y,
            marker=mk,
            ls=ls,
            color=col,
            mfc="white" if m.startswith("macro") else col,
            lw=1.2,
            ms=5,
            label=METHODS[m][1] + (" (macro)" if m.startswith("macro") else ""),
        )
    _log_k_axis(ax, ks)
    ax.set_yscale("log")
    import matplotlib.ticker as mticker

    ax.yaxis.set_major_locator(mticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(mticker.NullFormatter())
    ax.set_ylabel("mean 95 % interval width (percentage points, log scale)")
    ax.set_title(f"Interval width, R = {result.config['reps']} samples" + (", with FPC" if fpc else ""))
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.grid(True, which="both", color="0.9", lw=0.5)
    out = _savefig(fig, path)
    plt.close(fig)
    return out
