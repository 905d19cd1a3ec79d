"""Golden-value tests of harness.stats.cr3 (CR3 jackknife, Satterthwaite df) against independent references.

1. R clubSandwich 0.5.8 on R 4.2.2 (tests/r/cr3_kg_golden.R; raw output and sessionInfo() in
   tests/r/cr3_kg_golden.out): vcovCR(lm(y ~ 1[, weights = w]), cluster, type = "CR3"),
   coef_test(..., test = "Satterthwaite"), conf_int(..., level). Data copied verbatim from the R script (the same data
   as the CR2 goldens in tests/test_stats_cr2.py).
2. A dense implementation of clubSandwich's matrices (n x n: A_j = (I - H_jj)^{-1}, the Satterthwaite df from the
   full Gamma matrix) against the closed form, on random weighted data; and the leave-one-cluster-out jackknife.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_stats_cr2 import (
    CL_PAIRED,
    CL_SINGMIX,
    CL_TWO,
    CL_UNEQUAL,
    W_SINGMIX,
    W_UNEQUAL,
    Y_SINGMIX,
    Y_TWO,
    Y_UNEQUAL,
    YA_PAIRED,
    YB_PAIRED,
)

from harness.errors import HarnessInputError
from harness.stats import cr2, paired
from harness.stats.cr3 import cr3

# name -> (y, clusters, weights, level, (est, se, df, lower, upper)) as printed in tests/r/cr3_kg_golden.out
R_CR3 = {
    "unequal": (Y_UNEQUAL, CL_UNEQUAL, None, 0.95,
                (0.33012500000000006, 0.071692842206285121, 3.4647332913323532, 0.11833921114551843,
                 0.54191078885448163)),
    "singmix": (Y_SINGMIX, CL_SINGMIX, None, 0.95,
                (0.34083333333333338, 0.079139277568849975, 3.3905059241016886, 0.10461783509536915,
                 0.5770488315712976)),
    "two": (Y_TWO, CL_TWO, None, 0.95,
            (0.34462499999999985, 0.23591059541228263, 1.0000000000000004, -2.6529033247413376, 3.3421533247413371)),
    "weighted": (Y_UNEQUAL, CL_UNEQUAL, W_UNEQUAL, 0.95,
                 (0.31966101694915267, 0.10736809952189663, 2.991062400975764, -0.02261053075922731,
                  0.6619325646575327)),
    "weighted_singmix": (Y_SINGMIX, CL_SINGMIX, W_SINGMIX, 0.95,
                         (0.31491304347826088, 0.095008950338849998, 2.7625817999662634, -0.0026931959521184767,
                          0.63251928290864023)),
    "unequal_90": (Y_UNEQUAL, CL_UNEQUAL, None, 0.90,
                   (0.33012500000000006, 0.071692842206285121, 3.4647332913323532, 0.17024360865913446,
                    0.49000639134086565)),
}  # fmt: skip
R_CR3_PAIRED = (0.11744444444444445, 0.10421176122837858, 3.3503614835759965, -0.19542134708316167,
                0.43031023597205059)  # fmt: skip


@pytest.mark.parametrize("name", sorted(R_CR3))
def test_cr3_matches_clubsandwich(name):
    y, cl, w, level, (est, se, df, lo, hi) = R_CR3[name]
    iv = cr3(y, cl, weights=w, level=level, clip=False)
    assert (iv.estimate, iv.se, iv.df) == pytest.approx((est, se, df), rel=1e-12)
    assert (iv.lower, iv.upper) == pytest.approx((lo, hi), rel=1e-11, abs=1e-13)
    assert iv.method == "cr3" and iv.n_clusters == len(set(cl))


def test_paired_cr3_matches_clubsandwich_on_the_differences():
    iv = paired(YA_PAIRED, YB_PAIRED, CL_PAIRED, method="cr3")
    assert (iv.estimate, iv.se, iv.df, iv.lower, iv.upper) == pytest.approx(R_CR3_PAIRED, rel=1e-11)
    assert iv.method == "paired_cr3" and iv.extras["paired"] == "b - a"


def _dense_cr3(y, cl, w):
    """clubSandwich's CR3 for lm(y ~ 1, weights = w) by the n x n matrices: A_j = (I - H_jj)^{-1}, working model I."""
    y, w = np.asarray(y, float), np.asarray(w, float)
    n = y.size
    W = w.sum()
    beta = w @ y / W
    H = np.ones((n, 1)) @ w[None, :] / W  # X (X'WX)^{-1} X'W
    e = y - beta
    labels = sorted(set(cl))
    gs, meat = [], 0.0
    for g in labels:
        m = np.asarray(cl) == g
        A = np.linalg.inv(np.eye(m.sum()) - H[np.ix_(m, m)])
        ew = w[m] @ A  # e_j' applied to residuals: X_j'W_j A_j
        meat += float(ew @ e[m]) ** 2
        gs.append(((np.eye(n) - H)[m].T @ ew) / W)  # V = sum_j (g_j' eps)^2 with eps ~ N(0, I)
    G = np.array(gs)
    gamma = G @ G.T
    return beta, np.sqrt(meat) / W, float(np.trace(gamma) ** 2 / np.sum(gamma**2))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=2, max_size=8), st.randoms(use_true_random=False), st.booleans())
def test_closed_form_equals_dense_matrices_and_the_jackknife(sizes, rnd, weighted):
    cl = np.repeat(np.arange(len(sizes)), sizes)
    y = np.array([rnd.choice([0.0, 1.0, 0.25, 3.5, -1.0]) for _ in cl])
    w = np.array([rnd.choice([1.0, 2.0, 0.5, 3.0]) for _ in cl]) if weighted else np.ones(cl.size)
    est, se, df = _dense_cr3(y, cl, w)
    iv = cr3(y, cl, weights=w if weighted else None, clip=False)
    assert iv.estimate == pytest.approx(est, abs=1e-12)
    assert iv.se == pytest.approx(se, rel=1e-9, abs=1e-12)
    assert iv.df == pytest.approx(df, rel=1e-9)
    loo = [np.average(y[cl != g], weights=w[cl != g]) for g in range(len(sizes))]  # leave one cluster out
    assert iv.se == pytest.approx(np.sqrt(np.sum((np.array(loo) - est) ** 2)), rel=1e-9, abs=1e-12)
    if not weighted:  # (1 - h_g)^-1 >= (1 - h_g)^-1/2 per cluster; with weights it need not hold (hypothesis found
        # sizes [3, 3], y (3.5, 0, 0 | 0, 0, 1), w (0.5, 1, 1 | 1, 1, 3): CR3 se 0.0745 < CR2 se 0.0933)
        assert iv.se >= cr2(y, cl).se * (1 - 1e-12)  # CR3 dominates CR2


def test_cr3_fpc_constant_and_errors():
    a = cr3(Y_UNEQUAL, CL_UNEQUAL, clip=False)
    b = cr3(Y_UNEQUAL, CL_UNEQUAL, fpc=14, clip=False)
    assert b.se == pytest.approx(a.se * np.sqrt(0.5), rel=1e-12) and b.df == a.df
    c = cr3([0.4] * 6, [1, 1, 2, 3, 3, 3])
    assert (c.lower, c.estimate, c.upper, c.se) == (0.4, 0.4, 0.4, 0.0)
    assert cr3(Y_TWO, CL_TWO).warnings  # df 1 < 4
    with pytest.raises(HarnessInputError, match="at least 2 clusters"):
        cr3([0.1, 0.2], ["a", "a"])
