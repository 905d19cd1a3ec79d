"""Golden-value tests of harness.stats.wild (restricted wild cluster bootstrap, WCR) against Python wildboottest.

Reference: wildboottest 0.3.2 (tests/reference/wildboottest_golden.py; output with versions in
tests/reference/wildboottest_golden.out), WildboottestCL, bootstrap_type "11", impose_null=True, on ``y - theta0 ~ 1``.
With Rademacher weights and 2^G < B it enumerates every sign vector, so the p-values are exact rationals k / 2^G and
ours must equal them. The reference counts ties of the two constant sign vectors (|t*| = |t| in exact arithmetic) by
floating-point noise; the first count below treats them as not exceeding (our convention), computed from
wildboottest's own t* and t; its raw count differs by at most 2. Webb weights: the reference's draws are rebuilt here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.errors import HarnessInputError
from harness.stats import paired
from harness.stats.batched import ClusterBatch, Resamples
from harness.stats.methods import INTERVALS
from harness.stats.wild import WEBB, WildParts, wild_cluster_bootstrap, wild_cluster_pvalue, wild_weights

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

# (theta0, count with |t*| > |t| counting ties as not exceeding, wildboottest's raw count), out of 2^G
WBT_RADEMACHER = {
    "unequal": [
        (0.1101004262, 2, 2),
        (0.1238519621, 4, 4),
        (0.1376034979, 4, 4),
        (0.1513550338, 6, 6),
        (0.1651065696, 6, 6),
        (0.1788581055, 6, 8),
        (0.1926096414, 10, 10),
        (0.2063611772, 20, 20),
        (0.2201127131, 28, 28),
        (0.233864249, 34, 34),
        (0.2476157848, 42, 42),
        (0.2613673207, 56, 56),
        (0.2751188565, 74, 74),
        (0.2888703924, 96, 96),
        (0.3026219283, 104, 104),
        (0.3163734641, 114, 114),
        (0.330125, 128, 128),
        (0.3438765359, 106, 106),
        (0.3576280717, 80, 80),
        (0.3713796076, 60, 60),
        (0.3851311435, 50, 50),
        (0.3988826793, 32, 32),
        (0.4126342152, 20, 20),
        (0.426385751, 12, 12),
        (0.4401372869, 8, 8),
        (0.4538888228, 2, 2),
        (0.4676403586, 0, 0),
        (0.4813918945, 0, 2),
        (0.4951434304, 0, 0),
        (0.5088949662, 0, 0),
        (0.5226465021, 0, 0),
        (0.5363980379, 0, 0),
        (0.5501495738, 0, 0),
    ],
    "singmix": [
        (0.0435520048, 0, 2),
        (0.0621320879, 2, 2),
        (0.0807121709, 2, 2),
        (0.0992922539, 2, 2),
        (0.117872337, 4, 4),
        (0.13645242, 4, 4),
        (0.155032503, 4, 4),
        (0.1736125861, 6, 6),
        (0.1921926691, 6, 6),
        (0.2107727521, 6, 6),
        (0.2293528351, 10, 10),
        (0.2479329182, 18, 18),
        (0.2665130012, 44, 44),
        (0.2850930842, 70, 72),
        (0.3036731673, 94, 96),
        (0.3222532503, 110, 112),
        (0.3408333333, 126, 126),
        (0.3594134164, 102, 102),
        (0.3779934994, 78, 80),
        (0.3965735824, 62, 62),
        (0.4151536655, 44, 44),
        (0.4337337485, 34, 34),
        (0.4523138315, 30, 30),
        (0.4708939145, 26, 26),
        (0.4894739976, 24, 24),
        (0.5080540806, 20, 20),
        (0.5266341636, 16, 16),
        (0.5452142467, 12, 12),
        (0.5637943297, 10, 10),
        (0.5823744127, 8, 8),
        (0.6009544958, 8, 8),
        (0.6195345788, 8, 8),
        (0.6381146618, 8, 8),
    ],
    "binary10": [
        (-0.0053957067, 0, 2),
        (0.019941525, 14, 16),
        (0.0452787566, 14, 16),
        (0.0706159883, 14, 14),
        (0.09595322, 14, 14),
        (0.1212904516, 22, 24),
        (0.1466276833, 34, 36),
        (0.171964915, 56, 58),
        (0.1973021466, 84, 86),
        (0.2226393783, 110, 110),
        (0.24797661, 164, 164),
        (0.2733138417, 244, 246),
        (0.2986510733, 340, 340),
        (0.323988305, 456, 458),
        (0.3493255367, 620, 622),
        (0.3746627683, 804, 804),
        (0.4, 972, 972),
        (0.4253372317, 834, 834),
        (0.4506744633, 628, 628),
        (0.476011695, 450, 450),
        (0.5013489267, 338, 338),
        (0.5266861583, 248, 248),
        (0.55202339, 186, 186),
        (0.5773606217, 128, 130),
        (0.6026978534, 96, 98),
        (0.628035085, 74, 74),
        (0.6533723167, 56, 56),
        (0.6787095484, 38, 38),
        (0.70404678, 32, 32),
        (0.7293840117, 20, 20),
        (0.7547212434, 12, 12),
        (0.780058475, 8, 10),
        (0.8053957067, 4, 6),
    ],
    "paired_diff": [
        (-0.2062025354, 0, 0),
        (-0.1859745991, 0, 0),
        (-0.1657466629, 0, 0),
        (-0.1455187266, 0, 0),
        (-0.1252907904, 0, 0),
        (-0.1050628542, 2, 2),
        (-0.0848349179, 6, 6),
        (-0.0646069817, 10, 10),
        (-0.0443790455, 14, 14),
        (-0.0241511092, 18, 18),
        (-0.003923173, 24, 24),
        (0.0163047633, 28, 28),
        (0.0365326995, 34, 34),
        (0.0567606357, 44, 44),
        (0.076988572, 52, 52),
        (0.0972165082, 56, 58),
        (0.1174444444, 62, 62),
        (0.1376723807, 48, 50),
        (0.1579003169, 40, 40),
        (0.1781282532, 28, 28),
        (0.1983561894, 20, 20),
        (0.2185841256, 16, 16),
        (0.2388120619, 10, 10),
        (0.2590399981, 6, 6),
        (0.2792679343, 2, 2),
        (0.2994958706, 2, 2),
        (0.3197238068, 0, 0),
        (0.3399517431, 0, 2),
        (0.3601796793, 0, 0),
        (0.3804076155, 0, 0),
        (0.4006355518, 0, 0),
        (0.420863488, 0, 0),
        (0.4410914242, 0, 0),
    ],
}
# (theta0, count out of B = 199) with the Webb draws of the reference script
WBT_WEBB = [(0.1, 7), (0.2, 30), (0.25, 72), (0.3, 157), (0.33, 199), (0.4, 53), (0.5, 3), (0.6, 2)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_pvalues_equal_wildboottest_full_enumeration(name):
    y, cl = CASES[name]
    G = len(set(cl))
    est = float(np.mean(y))
    for theta0, count, raw in WBT_RADEMACHER[name]:
        if abs(theta0 - est) < 1e-9:  # t = 0: every draw with v'E = 0 ties; the reference counts them by noise
            continue
        p = wild_cluster_pvalue(y, cl, theta0, B=2**G, wild="rademacher")
        assert p == count / 2**G, (theta0, p, count)
        assert abs(raw - count) <= 2  # the reference's floating-point ties of the two constant sign vectors


def test_pvalue_at_the_estimate_is_exact():
    """At theta0 = mean(y), t = 0 and |t*| > 0 exactly when v'E != 0: 970 of the 1,024 sign vectors (counted in
    integers for this case: 5 E = (4, -4, 7, -2, -1, -5, 6, -6, -3, 4))."""
    y, cl = CASES["binary10"]
    E = np.array([4, -4, 7, -2, -1, -5, 6, -6, -3, 4])
    signs = 1 - 2 * ((np.arange(1024)[:, None] >> np.arange(10)) & 1)
    assert int(np.count_nonzero(signs @ E)) == 970
    assert wild_cluster_pvalue(y, cl, float(np.mean(y)), B=1024, wild="rademacher") == 970 / 1024


def test_pvalues_equal_wildboottest_with_the_same_webb_draws():
    y, cl = (np.asarray(a) for a in CASES["unequal"])
    labels = np.unique(cl)  # wildboottest's cluster order
    n = np.array([np.sum(cl == g) for g in labels], float)
    E = np.array([y[cl == g].sum() for g in labels]) - n * y.mean()
    v = WEBB[np.random.default_rng(11).integers(0, 6, size=(labels.size, 199))]  # as the reference script draws
    parts = WildParts.build(n, E, v.T)
    for theta0, count in WBT_WEBB:
        assert int(parts.exceed_count(np.asarray(y.mean() - theta0))) == count, theta0


@pytest.mark.parametrize("name", sorted(CASES))
def test_interval_is_the_set_the_reference_test_does_not_reject(name):
    y, cl = CASES[name]
    G = len(set(cl))
    iv = wild_cluster_bootstrap(y, cl, B=max(2**G, 100), wild="rademacher", clip=False)
    assert iv.extras["enumerated"] and iv.extras["B"] == 2**G
    for theta0, count, _ in WBT_RADEMACHER[name]:
        accepted = count / 2**G >= 0.05
        assert (iv.lower < theta0 < iv.upper) == accepted or min(abs(theta0 - iv.lower), abs(theta0 - iv.upper)) < 1e-9
    # the ends are crossings of the p-value function: accepted just inside, rejected just outside
    eps = 1e-7 * iv.width
    for end, outward in ((iv.lower, -1.0), (iv.upper, 1.0)):
        assert wild_cluster_pvalue(y, cl, end - outward * eps, B=2**G, wild="rademacher") >= 0.05
        assert wild_cluster_pvalue(y, cl, end + outward * eps, B=2**G, wild="rademacher") < 0.05


def test_paired_wild_is_the_method_on_the_differences():
    a = np.array([0.819, 0.119, 0.005, 0.662, 1.0, 0.134, 0.774, 0.177, 0.557, 0.019, 0.641, 0.507, 0.0])
    b = np.array([0.906, 0.228, 0.629, 0.082, 0.808, 0.035, 0.297, 0.7, 0.474, 0.606, 0.118, 0.817, 0.48])
    cl = [1, 1, 2, 2, 2, 3, 4, 4, 4, 4, 5, 5, 6]
    iv = paired(a, b, cl, method="wild_cluster", B=999, seed=3)
    ref = wild_cluster_bootstrap(b - a, cl, B=999, seed=3, clip=False)
    assert (iv.lower, iv.upper, iv.method) == (ref.lower, ref.upper, "paired_wild_cluster")


def test_weights_distribution_choice_and_enumeration():
    rng = np.random.default_rng(0)
    v, kind, enum = wild_weights(11, 999, rng)
    assert kind == "webb" and not enum and set(np.unique(v)) <= set(WEBB)
    v, kind, enum = wild_weights(12, 5000, rng)
    assert kind == "rademacher" and enum and v.shape == (4096, 12)
    assert np.unique(v, axis=0).shape[0] == 4096
    v, kind, enum = wild_weights(13, 5000, rng)
    assert kind == "rademacher" and not enum and set(np.unique(v)) == {-1.0, 1.0}
    with pytest.raises(HarnessInputError, match="wild"):
        wild_weights(5, 99, rng, "mammen")


def test_kernel_equals_scalar_under_enumeration():
    rng = np.random.default_rng(5)
    r, k = 3, 12
    ns = rng.integers(1, 7, size=(r, k))
    ss = rng.binomial(ns, rng.uniform(0.1, 0.7, size=(r, k)))
    batch = ClusterBatch(ns, ss)
    ((lo, hi),) = INTERVALS["wild_cluster"].kernel(batch, 0.95, (1.0,), Resamples(rng, 4096, (1,)))
    for i in range(r):
        y = np.concatenate([np.r_[np.ones(s), np.zeros(n - s)] for n, s in zip(ns[i], ss[i], strict=True)])
        iv = wild_cluster_bootstrap(y, np.repeat(np.arange(k), ns[i]), B=4096, clip=False)
        assert iv.extras["enumerated"]
        assert (lo[i], hi[i]) == pytest.approx((iv.lower, iv.upper), rel=1e-9)


def test_degenerate_inputs():
    c = wild_cluster_bootstrap([0.3] * 7, [1, 1, 2, 3, 3, 3, 4])
    assert (c.lower, c.estimate, c.upper) == (0.3, 0.3, 0.3)
    two = wild_cluster_bootstrap([0.1, 0.4, 0.9, 0.7, 0.2], [1, 1, 2, 2, 2], B=999, clip=False)
    assert two.lower <= two.estimate <= two.upper and two.extras["weights"] == "webb"
    assert not math.isnan(two.lower) and two.warnings
    with pytest.raises(HarnessInputError, match="at least 2 clusters"):
        wild_cluster_bootstrap([0.1, 0.2], [1, 1])
    with pytest.raises(HarnessInputError, match="B"):
        wild_cluster_bootstrap([0.1, 0.2, 0.3], [1, 2, 3], B=10)
