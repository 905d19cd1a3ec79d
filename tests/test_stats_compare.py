"""Paired intervals, the cluster sign-flip randomization test and Holm's adjustment."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from harness.errors import HarnessInputError
from harness.stats import cr2, holm, paired, randomization_test


def test_randomization_exact_hand_case():
    # cluster totals: A = 0.5 + 0.5 = 1, B = 2, C = 1 + 1 + 1 = 3; observed S = 6
    # the 8 sign vectors give S* = +-6, +-4, +-2, 0, 0  ->  |S*| >= 6 for 2 of 8  ->  p = 0.25
    diff = [0.5, 0.5, 2.0, 1.0, 1.0, 1.0]
    cl = ["A", "A", "B", "C", "C", "C"]
    assert randomization_test(diff, cl) == 0.25
    # totals 1, -1, 3 (singleton clusters): S = 3; the 8 sign vectors (signs of 1, -1, 3):
    #   +++ 3, -++ 1, +-+ 5, ++- -3, --+ 3, -+- -5, +-- -1, --- -3  -> |S*| >= 3 in 6 of 8 -> 0.75
    assert randomization_test([1.0, -1.0, 3.0], [1, 2, 3]) == 0.75
    assert randomization_test([0.0, 0.0], [1, 2]) == 1.0


def test_randomization_exact_matches_brute_force_and_monte_carlo():
    rng = np.random.default_rng(0)
    cl = np.repeat(np.arange(12), 3)
    d = rng.normal(0.15, 0.5, cl.size)
    T = np.bincount(cl, weights=d)
    brute = np.mean([abs(np.dot(s, T)) >= abs(T.sum()) - 1e-12 for s in itertools.product([1, -1], repeat=12)])
    assert randomization_test(d, cl, reps=4096) == pytest.approx(brute, abs=1e-12)  # 2**12 <= reps: exact
    mc = randomization_test(d, cl, reps=4000, seed=1)  # 2**12 > 4000: Monte Carlo
    assert mc == pytest.approx(brute, abs=0.02)
    assert mc == randomization_test(d, cl, reps=4000, seed=1)
    assert mc != brute


def test_holm_matches_r_p_adjust():
    # tests/r/base_r_golden.out: p.adjust(p, "holm")
    assert holm([0.01, 0.04, 0.03, 0.005, 0.5, 0.04]) == pytest.approx([0.05, 0.12, 0.12, 0.03, 0.5, 0.12], abs=1e-15)
    assert holm([0.2, 0.001, 0.9, 0.02]) == pytest.approx([0.4, 0.004, 0.9, 0.06], abs=1e-15)
    assert holm([]) == []
    with pytest.raises(HarnessInputError):
        holm([0.1, 1.2])


def test_paired_methods():
    rng = np.random.default_rng(3)
    cl = np.repeat(np.arange(25), 4)
    a = rng.random(cl.size)
    b = np.clip(a + 0.1 + 0.1 * rng.standard_normal(cl.size), 0, 1)
    for m in ("cr2", "bootstrap_percentile", "bootstrap_t", "cluster_t", "iid_wald"):
        iv = paired(a, b, cl, method=m, B=500)
        assert iv.method == f"paired_{m}"
        assert iv.extras["paired"] == "b - a"
        assert iv.estimate == pytest.approx(np.mean(b - a))
        assert iv.lower <= iv.estimate <= iv.upper
    # b - a, not a - b
    assert paired(a, b, cl).estimate == pytest.approx(-paired(b, a, cl).estimate)
    # a negative difference is not clipped
    neg = paired(b, a, cl)
    assert neg.upper < 0 and neg.lower < neg.upper
    assert neg.se == pytest.approx(cr2(a - b, cl).se)


def test_paired_errors():
    with pytest.raises(HarnessInputError, match="method"):
        paired([0.1, 0.2], [0.2, 0.3], [1, 2], method="wilcoxon")
    with pytest.raises(HarnessInputError, match="rows"):
        paired([0.1, 0.2], [0.2], [1, 2])
    with pytest.raises(HarnessInputError, match="weights"):
        paired([0.1, 0.2], [0.2, 0.3], [1, 2], method="cluster_t", weights=[1, 1])
