"""A seeded synthetic known-item population built like the published study's (1,300 regulatory documents, BM25 hit@1).

Targets (:data:`TARGETS`; issue 21 and :data:`harness.studies.known_item.PUBLISHED`): 1,300 documents, 33,500
chunks (queries), micro hit@1 0.185, macro 0.160, ANOVA ICC 0.29, half the documents without a hit, the largest
10 % of documents holding 59 % of the chunks, pooled within-document lag-1 autocorrelation 0.17.

Model. Every random number comes from ``numpy.random.default_rng(seed)`` (sizes, death, rate noise, in that order)
and ``default_rng([seed, 1])`` (one uniform per chunk), so the population is a deterministic function of ``seed``
and the parameters (:data:`PARAMS`, fitted once on the draws of seed 20261201, see below):

* sizes ``n_i = 2 + floor(exp(mu + sigma z_i))``, ``z_i ~ N(0, 1)`` (only multi-chunk documents carry queries),
  ``mu`` bisected so that ``sum n = 33,500`` (the largest document absorbs the rounding); ``sigma`` sets the
  top-10 % share;
* a document is "dead" (rate 0) when ``d_i < expit(pi0 - gamma (log n_i - mean log n))``, ``d_i ~ U(0, 1)``
  (small documents die more often); otherwise ``logit p_i = alpha + beta (log n_i - mean log n) + tau u_i``,
  ``u_i ~ N(0, 1)``: ``beta, gamma > 0`` make rates grow with size (micro > macro), as on real corpora;
* within a document the chunk outcomes are a stationary two-state Markov chain with ``P(y = 1) = p_i`` and lag-1
  correlation ``lam``: ``P(1 | 1) = p + lam (1 - p)``, ``P(1 | 0) = p (1 - lam)`` (Kemeny & Snell 1960 for the
  two-state chain), driven by the fixed uniforms.

The parameters were fitted (issue 21 research, /work/research/synthetic_population.py) by Brent's method for
``sigma`` on the top-10 % share, then ``(pi0, gamma, alpha, beta, tau, lam)`` by Nelder-Mead (8 seeded starts and a
polish) on the sum of squared relative deviations of micro, macro, ICC, share without hits and lag-1 autocorrelation;
tests/test_coverage_synthetic.py checks that the population meets :data:`TARGETS` within :data:`TOLERANCES`. The
statistics are the harness's own: :func:`harness.stats.batched.icc_from_sums`,
:func:`harness.stats.design.lag1_autocorrelation`.
"""

from __future__ import annotations

import math

import numpy as np

from harness.stats.batched import icc_from_sums
from harness.stats.design import lag1_autocorrelation
from harness.studies.coverage.population import Population, RowData

#: What the synthetic population reproduces (the published study's population).
TARGETS: dict[str, float] = {
    "documents": 1300,
    "chunks": 33500,
    "micro": 0.185,
    "macro": 0.160,
    "icc": 0.29,
    "share_docs_without_hit": 0.5,
    "share_chunks_top10pct_docs": 0.59,
    "lag1_autocorrelation": 0.17,
}

#: Tolerances within which :func:`synthetic_population` meets :data:`TARGETS` (absolute; counts are exact).
TOLERANCES: dict[str, float] = {
    "documents": 0,
    "chunks": 0,
    "micro": 0.002,
    "macro": 0.002,
    "icc": 0.005,
    "share_docs_without_hit": 0.01,
    "share_chunks_top10pct_docs": 0.002,
    "lag1_autocorrelation": 0.005,
}

#: Fitted parameters (seed 20261201; loss 2.7e-4, the squared relative deviations summed).
PARAMS: dict[str, float] = {
    "seed": 20261201,
    "sigma": 1.4811873873764079,
    "pi0": -1.0628132155931098,
    "gamma": 0.21484354540463366,
    "alpha": -1.607995573206277,
    "beta": 0.09050195477109593,
    "tau": 1.3198534307613214,
    "lam": 0.21278396035188918,
}


def _draws(seed: int, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(d)
    dead = rng.random(d)
    u = rng.standard_normal(d)
    return z, dead, u


def sizes(z: np.ndarray, sigma: float, total: int) -> np.ndarray:
    """Integer sizes ``2 + floor(exp(mu + sigma z))`` with ``mu`` bisected (200 halvings of [-10, 15]) so that the
    sum is ``total``; the largest document absorbs the remaining difference. Shape of ``z``."""

    def tot(mu: float) -> int:
        return int(np.sum(2 + np.floor(np.exp(mu + sigma * z))))

    lo, hi = -10.0, 15.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if tot(mid) < total:
            lo = mid
        else:
            hi = mid
    n = (2 + np.floor(np.exp(lo + sigma * z))).astype(np.int64)
    n[np.argmax(n)] += total - int(n.sum())
    return n


def top_share(n: np.ndarray, q: float = 0.1) -> float:
    """Share of rows in the largest ``ceil(q D)`` documents."""
    k = max(1, math.ceil(q * n.size))
    return float(np.sort(n)[::-1][:k].sum() / n.sum())


def markov_outcomes(n: np.ndarray, p: np.ndarray, lam: float, v: np.ndarray) -> np.ndarray:
    """Binary stationary two-state Markov chains, one per document (module docstring).

    Args: ``n`` (D,) chain lengths; ``p`` (D,) stationary probabilities of 1; ``lam`` lag-1 correlation in [0, 1);
        ``v`` (sum n,) uniforms, document after document.
    Returns: (sum n,) int8 outcomes in the same order.
    """
    offs = np.concatenate([[0], np.cumsum(n)[:-1]])
    y = np.zeros(v.size, dtype=np.int8)
    prev = v[offs] < p
    y[offs] = prev
    for j in range(1, int(n.max())):
        alive = n > j
        idx = offs[alive] + j
        pa = p[alive]
        prob = np.where(prev[alive], pa + lam * (1.0 - pa), pa * (1.0 - lam))
        cur = v[idx] < prob
        y[idx] = cur
        prev[alive] = cur
    return y


def synthetic_population(seed: int | None = None, params: dict | None = None) -> Population:
    """The synthetic population (binary hit@1 per chunk) for ``params`` (default :data:`PARAMS`).

    Args: ``seed`` overrides ``params["seed"]`` (other draws, same model); ``params`` keys ``sigma, pi0, gamma,
        alpha, beta, tau, lam`` (and ``seed``).
    Returns: a :class:`Population` named ``"synthetic"`` with row data (for the lag-1 autocorrelation); it has no
        document types (type ``"all"``), so the two-stage design does not apply to it.
    """
    prm = dict(PARAMS if params is None else params)
    seed = int(prm["seed"] if seed is None else seed)
    d, total = int(TARGETS["documents"]), int(TARGETS["chunks"])
    z, dead, u = _draws(seed, d)
    n = sizes(z, prm["sigma"], total)
    v = np.random.default_rng([seed, 1]).random(int(n.sum()))
    ln = np.log(n)
    eta = prm["alpha"] + prm["beta"] * (ln - ln.mean()) + prm["tau"] * u
    pdead = 1.0 / (1.0 + np.exp(-(prm["pi0"] - prm["gamma"] * (ln - ln.mean()))))
    p = np.where(dead < pdead, 0.0, 1.0 / (1.0 + np.exp(-eta)))
    y = markov_outcomes(n, p, prm["lam"], v).astype(np.float64)
    doc = np.repeat(np.arange(d), n)
    pos = np.concatenate([np.arange(k) for k in n])
    s = np.bincount(doc, weights=y, minlength=d).astype(np.int64)
    pop = Population.from_arrays(n, s, system="synthetic", rows=RowData(y, doc, pos))
    pop.source = f"synthetic seed {seed}"
    return pop


def population_statistics(pop: Population) -> dict[str, float]:
    """The :data:`TARGETS` statistics of a population (the lag-1 needs its row data; ``nan`` without)."""
    n, s = pop.n, pop.s
    lag = float("nan")
    if pop.rows is not None:
        lag = lag1_autocorrelation(pop.rows.y, pop.rows.doc, order=pop.rows.position)
    return {
        "documents": int(n.size),
        "chunks": int(n.sum()),
        "micro": float(s.sum() / n.sum()),
        "macro": float(np.mean(s / n)),
        "icc": float(icc_from_sums(n, s)),
        "share_docs_without_hit": float(np.mean(s == 0)),
        "share_chunks_top10pct_docs": top_share(n),
        "lag1_autocorrelation": lag,
    }
