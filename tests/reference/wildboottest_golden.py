"""Reference p-values of the restricted wild cluster bootstrap (WCR11) from Python ``wildboottest``.

Golden values for harness.stats.wild (tests/test_stats_wild.py). Run in a scratch environment (the test holds the
values and does not need the package):

    python -m venv /tmp/wbt && /tmp/wbt/bin/pip install wildboottest==0.3.2
    /tmp/wbt/bin/python tests/reference/wildboottest_golden.py > tests/reference/wildboottest_golden.out

Model: ``y - theta0 ~ 1`` (intercept only), clusters as given, ``bootstrap_type="11"``, ``impose_null=True``. With
Rademacher weights and ``2^G < B`` wildboottest enumerates all ``2^G`` sign vectors, so the comparison is exact.
wildboottest counts ``|t*| > |t|`` in floating point; the two constant sign vectors (all +1, all -1) give
``|t*| = |t|`` exactly in exact arithmetic but land on either side by rounding, so the raw p-value can be off by
1/2^G or 2/2^G. The line prints both the raw value and ``p_tie`` = ``mean(|t*| > |t| (1 + 1e-9))`` computed from
wildboottest's own t* and t, which counts those ties as not exceeding (the convention of harness.stats.wild).

Webb case: wildboottest's own draws replaced by ``WEBB[numpy.random.default_rng(11).integers(0, 6, size=(G, B))]``
(clusters in sorted-label order, the order of wildboottest's ``np.unique``), B = 199, so the test can rebuild them.
"""

from __future__ import annotations

import importlib.metadata as md
import platform

import numpy as np
from wildboottest.wildboottest import WildboottestCL

WEBB = np.array([-np.sqrt(1.5), -1.0, -np.sqrt(0.5), np.sqrt(0.5), 1.0, np.sqrt(1.5)])

CASES = {
    "unequal": (
        [0.084, 0.772, 0.0, 0.396, 0.23, 0.048, 0.496, 0.0, 0.056, 0.173, 1.0, 1.0,
         0.0, 0.006, 0.759, 0.689, 0.123, 0.883, 0.21, 0.151, 0.527, 0.021, 0.0, 0.299],
        [1, 2, 2, 3, 3, 3, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 6, 7, 7, 7, 7],
    ),
    "singmix": (
        [0.054, 1.0, 0.476, 0.457, 0.162, 0.592, 0.0, 0.242, 0.674, 0.038, 0.0, 0.395],
        [1, 2, 3, 4, 5, 6, 6, 6, 7, 7, 7, 7],
    ),
    "binary10": (
        [1, 0, 1, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 1],
        [1, 1, 1, 2, 2, 3, 3, 3, 3, 4, 5, 5, 5, 6, 6, 6, 6, 6, 7, 7, 8, 8, 8, 9, 9, 9, 9, 10, 10, 10],
    ),
    "paired_diff": (
        list(np.round(np.array([0.906, 0.228, 0.629, 0.082, 0.808, 0.035, 0.297, 0.7, 0.474, 0.606, 0.118,
                                0.817, 0.48, 0.989, 0.334, 0.906, 0.028, 0.706])
                      - np.array([0.819, 0.119, 0.005, 0.662, 1.0, 0.134, 0.774, 0.177, 0.557, 0.019, 0.641,
                                  0.507, 0.0, 0.299, 0.0, 1.0, 0.297, 0.019]), 3)),
        [1, 1, 2, 2, 2, 3, 4, 4, 4, 4, 5, 5, 6, 6, 6, 6, 6, 6],
    ),
}  # fmt: skip


def run(y, cl, theta0, *, B, weights_v=None):
    y = np.asarray(y, float)
    cl = np.asarray(cl)
    b = WildboottestCL(X=np.ones((y.size, 1)), Y=y - theta0, cluster=cl, R=np.array([1.0]), B=B, seed=1,
                       parallel=False)  # fmt: skip
    b.get_scores(bootstrap_type="11", impose_null=True)
    b.get_weights("rademacher")
    if weights_v is not None:
        b.v, b.B = weights_v, weights_v.shape[1]
    b.get_numer()
    b.get_denom()
    b.get_tboot()
    b.get_vcov()
    b.get_tstat()
    b.get_pvalue(pval_type="two-tailed")
    tb = np.asarray(b.t_boot, float).ravel()
    ts = float(np.ravel(b.t_stat)[0])
    return b.B, float(b.pvalue), float(np.mean(np.abs(tb) > abs(ts) * (1 + 1e-9)))


def main() -> None:
    for name, (y, cl) in CASES.items():
        y = np.asarray(y, float)
        G = len(set(cl))
        est = y.mean()
        sums = np.array([y[np.asarray(cl) == g].sum() - est * np.sum(np.asarray(cl) == g) for g in sorted(set(cl))])
        se = np.sqrt(G / (G - 1) * (sums @ sums)) / y.size
        for theta0 in np.round(est + se * np.linspace(-4, 4, 33), 10):
            B, p, p_tie = run(y, cl, theta0, B=2**G + 1)
            print(f"RADEMACHER {name} G={G} B={B} theta0={theta0:.10f} p={p:.17g} p_tie={p_tie:.17g}")
    y, cl = CASES["unequal"]
    G, B = len(set(cl)), 199
    v = WEBB[np.random.default_rng(11).integers(0, 6, size=(G, B))]
    for theta0 in (0.1, 0.2, 0.25, 0.3, 0.33, 0.4, 0.5, 0.6):
        _, p, p_tie = run(y, cl, theta0, B=B, weights_v=v)
        print(f"WEBB unequal G={G} B={B} theta0={theta0:.10f} p={p:.17g} p_tie={p_tie:.17g}")
    print()
    print(f"python {platform.python_version()} on {platform.platform()}")
    for pkg in ("wildboottest", "numpy", "numba", "pandas"):
        print(f"{pkg} {md.version(pkg)}")


if __name__ == "__main__":
    main()
