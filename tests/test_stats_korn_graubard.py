"""Golden-value tests of harness.stats.korn_graubard against R survey's svyciprop(method = "beta").

Reference: R 4.2.2, survey 4.1.1 (tests/r/cr3_kg_golden.R; raw output and sessionInfo() in tests/r/cr3_kg_golden.out):
svyciprop(~y, svydesign(ids = ~cl, data = d[, weights = ~w][, fpc = ~gpop]), method = "beta", level). Data copied
verbatim from the R script. Plus the definition checked by hand (effective sample size, df adjustment, Clopper-Pearson
through scipy's beta quantiles), the documented degenerate cases, and the unclustered limit (Clopper-Pearson itself).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from harness.errors import HarnessInputError
from harness.stats.korn_graubard import korn_graubard

CL_KG = [1, 1, 1, 2, 2, 3, 3, 3, 3, 4, 5, 5, 5, 6, 6, 6, 6, 6, 7, 7, 8, 8, 8, 9, 9, 9, 9]
Y_KG = [1, 0, 1, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0]
W_KG = [2, 2, 1, 3, 1, 1, 1, 2, 2, 4, 1, 1, 1, 2, 2, 2, 1, 1, 3, 3, 1, 2, 1, 1, 1, 1, 2]
CL_RARE = np.repeat(np.arange(1, 16), [3, 1, 4, 2, 6, 1, 3, 2, 5, 2, 1, 4, 3, 2, 1])
Y_RARE = np.zeros(CL_RARE.size)
Y_RARE[[1, 8, 9, 29]] = 1  # R's y_rare[c(2, 9, 10, 30)] <- 1

# name -> (y, clusters, kwargs, (estimate, se, lower, upper)) as printed in tests/r/cr3_kg_golden.out
R_KG = {
    "basic": (Y_KG, CL_KG, {},
              (0.37037037037037035, 0.10809815256431027, 0.14792275818521911, 0.64266299915142477)),
    "weighted": (Y_KG, CL_KG, {"weights": W_KG},
                 (0.35555555555555557, 0.12911856930074619, 0.10384164623183702, 0.68631467864964502)),
    "fpc": (Y_KG, CL_KG, {"fpc": 40},
            (0.37037037037037041, 0.095163218764174301, 0.1708194271442835, 0.60883124658353371)),
    "level90": (Y_KG, CL_KG, {"level": 0.90},
                (0.37037037037037035, 0.10809815256431027, 0.17848419377209354, 0.59859855356451663)),
    "rare": (Y_RARE, CL_RARE, {},
             (0.10000000000000001, 0.06232117273791124, 0.012942383835054978, 0.31263724286805927)),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(R_KG))
def test_korn_graubard_matches_r_survey_svyciprop_beta(name):
    y, cl, kw, (est, se, lo, hi) = R_KG[name]
    iv = korn_graubard(y, cl, **kw)
    assert (iv.estimate, iv.se) == pytest.approx((est, se), rel=1e-12)
    assert (iv.lower, iv.upper) == pytest.approx((lo, hi), rel=1e-11)
    assert iv.method == "korn_graubard" and iv.df == len(set(cl)) - 1


def test_definition_by_hand():
    y, cl = np.array(Y_KG, float), np.array(CL_KG)
    G, N, p = 9, y.size, y.mean()
    e = np.array([(y[cl == g] - p).sum() for g in range(1, 10)])
    V = G / (G - 1) * (e @ e) / N**2
    n_star = p * (1 - p) / V * (sps.t.ppf(0.025, N - 1) / sps.t.ppf(0.025, G - 1)) ** 2
    lo = sps.beta.ppf(0.025, n_star * p, n_star * (1 - p) + 1)
    hi = sps.beta.ppf(0.975, n_star * p + 1, n_star * (1 - p))
    iv = korn_graubard(y, cl)
    assert (iv.lower, iv.upper) == pytest.approx((lo, hi), rel=1e-12)
    assert iv.extras["n_eff_df"] == pytest.approx(n_star, rel=1e-12)
    assert iv.extras["deff"] == pytest.approx(N * V / (p * (1 - p)), rel=1e-12)


def test_singleton_clusters_give_clopper_pearson_with_the_iid_variance():
    """Every row its own cluster: n_eff = N - 1 (the G/(G-1) factor of V), t ratio 1: plain Clopper-Pearson."""
    y = np.r_[np.ones(7), np.zeros(23)]
    iv = korn_graubard(y, np.arange(30))
    n = 30 - 1  # p(1-p)/V with V = G/(G-1) sum (y-p)^2 / N^2 = p(1-p)/(N-1)
    x = n * 7 / 30
    assert iv.lower == pytest.approx(sps.beta.ppf(0.025, x, n - x + 1), rel=1e-12)
    assert iv.upper == pytest.approx(sps.beta.ppf(0.975, x + 1, n - x), rel=1e-12)


@pytest.mark.parametrize("value", [0.0, 1.0])
def test_all_zero_or_all_one_is_clopper_pearson_with_design_effect_one(value):
    cl = np.repeat(np.arange(6), [1, 2, 3, 4, 5, 5])  # N = 20, G = 6
    iv = korn_graubard(np.full(20, value), cl)
    n_star = 20 * (sps.t.ppf(0.025, 19) / sps.t.ppf(0.025, 5)) ** 2
    edge = 0.025 ** (1 / n_star)  # Clopper-Pearson with 0 (or n) successes
    assert iv.estimate == value and iv.se == 0.0 and iv.warnings
    if value == 0.0:
        assert (iv.lower, iv.upper) == pytest.approx((0.0, 1 - edge), rel=1e-12)
    else:
        assert (iv.lower, iv.upper) == pytest.approx((edge, 1.0), rel=1e-12)


def test_two_clusters_and_errors():
    iv = korn_graubard([1, 0, 0, 1, 1, 0, 1], [1, 1, 1, 2, 2, 2, 2])
    assert 0.0 <= iv.lower < iv.estimate < iv.upper <= 1.0 and iv.df == 1
    with pytest.raises(HarnessInputError, match=r"korn_graubard: y: needs binary \(0/1\) values, got 0.5"):
        korn_graubard([1, 0.5, 0], [1, 2, 3])
    with pytest.raises(HarnessInputError, match="at least 2 clusters"):
        korn_graubard([1, 0], [1, 1])
