"""ICC, design effect, lag-1 autocorrelation and power planning against hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.errors import HarnessInputError
from harness.stats import (
    clusters_needed,
    design_effect,
    icc_anova,
    iid_wald_effective,
    lag1_autocorrelation,
    minimum_detectable_difference,
)

# Hand case: A = {1, 3}, B = {2, 4, 6}, C = {8}; N = 6, G = 3, sizes 2, 3, 1.
Y = [1, 3, 2, 4, 6, 8]
CL = ["A", "A", "B", "B", "B", "C"]
#   grand mean = 24 / 6 = 4; cluster means A = 2, B = 4, C = 8
#   SSB = 2 (2-4)^2 + 3 (4-4)^2 + 1 (8-4)^2 = 8 + 0 + 16 = 24          MSB = 24 / (G-1) = 12
#   SSW = (1-2)^2 + (3-2)^2 + (2-4)^2 + 0 + (6-4)^2 + 0 = 10             MSW = 10 / (N-G) = 10/3
#   n0  = (N - sum n_i^2 / N) / (G-1) = (6 - 14/6) / 2 = 11/6
#   ICC = (12 - 10/3) / (12 + (11/6 - 1) 10/3) = (26/3) / (133/9) = 78/133
ICC_HAND = 78 / 133
#   m_bar = 2; SD of sizes (ddof 0) = sqrt((0 + 1 + 1)/3) = sqrt(2/3); cv^2 = (2/3)/4 = 1/6
#   (1 + cv^2) m_bar = 7/3 (= sum n_i^2 / N = 14/6)
#   DEFF = 1 + (7/3 - 1) 78/133 = 1 + 104/133 = 237/133;  n_eff = 6 / DEFF = 798/237
DEFF_HAND = 237 / 133


def test_icc_hand_case():
    assert icc_anova(Y, CL) == pytest.approx(ICC_HAND, abs=1e-14)


def test_design_effect_hand_case():
    d = design_effect(Y, CL)
    assert d["icc"] == pytest.approx(ICC_HAND, abs=1e-14)
    assert d["mean_size"] == 2.0
    assert d["cv_size"] == pytest.approx(math.sqrt(1 / 6), abs=1e-14)
    assert d["deff"] == pytest.approx(DEFF_HAND, abs=1e-14)
    assert d["n_eff"] == pytest.approx(798 / 237, abs=1e-14)
    assert d["warnings"] == []


def test_icc_balanced_textbook_case():
    # Two clusters of 2: {0, 2}, {4, 6}: means 1, 5, grand 3; MSB = 2 (4 + 4)/1 = 16; MSW = (1+1+1+1)/2 = 2;
    # n0 = 2 (balanced); ICC = (16 - 2) / (16 + 1*2) = 14/18 = 7/9
    assert icc_anova([0, 2, 4, 6], [1, 1, 2, 2]) == pytest.approx(7 / 9, abs=1e-14)
    # balanced: cv = 0 so DEFF = 1 + (m - 1) ICC = 1 + 7/9
    assert design_effect([0, 2, 4, 6], [1, 1, 2, 2])["deff"] == pytest.approx(16 / 9, abs=1e-14)


def test_negative_and_undefined_icc():
    # {0, 1}, {0, 1}: MSB = 0, MSW = (4 * 0.25)/2 = 0.5, n0 = 2: ICC = (0 - 0.5)/(0 + 0.5) = -1
    assert icc_anova([0, 1, 0, 1], [1, 1, 2, 2]) == pytest.approx(-1.0)
    d = design_effect([0, 1, 0, 1], [1, 1, 2, 2])
    assert d["icc_used"] == 0.0 and d["deff"] == 1.0 and d["warnings"]
    assert math.isnan(icc_anova([0.1, 0.5, 0.9], [1, 2, 3]))  # all singletons
    assert math.isnan(icc_anova([0.5] * 4, [1, 1, 2, 2]))  # constant y
    assert design_effect([0.5] * 4, [1, 1, 2, 2])["deff"] == 1.0
    with pytest.raises(HarnessInputError, match="2 clusters"):
        icc_anova([1, 2], [1, 1])


def test_iid_wald_effective_uses_deff():
    iv = iid_wald_effective(Y, CL)
    s = np.std(Y, ddof=1)
    assert iv.se == pytest.approx(s / math.sqrt(798 / 237), rel=1e-12)
    assert iv.extras["deff"] == pytest.approx(DEFF_HAND)


def test_lag1_autocorrelation_hand_cases():
    # A = [1, 2, 3] -> residuals -1, 0, 1; B = [4, 2] -> 1, -1
    # pairs: (-1)(0) + (0)(1) + (1)(-1) = -1;  sum e^2 = 1 + 0 + 1 + 1 + 1 = 4  ->  -1/4
    assert lag1_autocorrelation([1, 2, 3, 4, 2], [1, 1, 1, 2, 2]) == pytest.approx(-0.25)
    # interleaved rows: order within cluster is the row order (stable), clusters need not be contiguous
    assert lag1_autocorrelation([1, 4, 2, 2, 3], [1, 2, 1, 2, 1]) == pytest.approx(-0.25)
    # A = [1, 3, 2] as given -> residuals -1, 1, 0: pairs -1 + 0 = -1, sum e^2 = 2 -> -0.5
    assert lag1_autocorrelation([1, 3, 2], [7, 7, 7]) == pytest.approx(-0.5)
    # ... but sorted by position [0, 2, 1] the sequence is 1, 2, 3: pairs 0 + 0 = 0 -> 0
    assert lag1_autocorrelation([1, 3, 2], [7, 7, 7], order=[0, 2, 1]) == pytest.approx(0.0)
    assert math.isnan(lag1_autocorrelation([1, 1, 2, 2], [1, 1, 2, 2]))


def test_minimum_detectable_difference():
    # z: 1.644854 + 0.841621 = 2.486475 (one-sided 5 %, power 80 %); two-sided 1.959964 + 0.841621
    assert minimum_detectable_difference(0.01, None) == pytest.approx(0.02486475, abs=1e-8)
    assert minimum_detectable_difference(0.01, None, one_sided=False) == pytest.approx(0.02801585, abs=1e-8)
    # t table, df = 10: t_.95 = 1.8125, t_.80 = 0.8791
    assert minimum_detectable_difference(0.01, 10) == pytest.approx(0.026916, abs=1e-5)
    assert minimum_detectable_difference(0.0, 5) == 0.0
    with pytest.raises(HarnessInputError):
        minimum_detectable_difference(-1, 5)


def test_clusters_needed_hand_case():
    # icc 0.1, m = 10, cv = 0: DEFF = 1 + 9 * 0.1 = 1.9; Var(G) = 0.5^2 * 1.9 / (10 G) = 0.0475 / G
    # normal: G = 2.486475^2 * 0.0475 / 0.1^2 = 29.37 -> 30
    # t: G = 30 (df 29): (1.69913 + 0.85419)^2 * 4.75 = 30.97 > 30; G = 31 (df 30): (1.69726 + 0.85377)^2 * 4.75
    #    = 30.91 <= 31 -> 31
    r = clusters_needed(0.1, 10, 0.0, 0.5, 0.1)
    assert r["clusters_normal"] == 30
    assert r["clusters"] == 31
    assert r["deff"] == pytest.approx(1.9)
    assert r["rows"] == 310
    assert r["mdd"] <= 0.1
    # unequal sizes, cv = 0.5: DEFF = 1 + (1.25 * 10 - 1) * 0.1 = 2.15 -> more clusters
    r2 = clusters_needed(0.1, 10, 0.5, 0.5, 0.1)
    assert r2["deff"] == pytest.approx(2.15)
    assert r2["clusters"] > r["clusters"]
    with pytest.raises(HarnessInputError, match="delta"):
        clusters_needed(0.1, 10, 0, 0.5, 0.0)
