"""Hansen-Hurwitz (harness.stats.pps) and Wu's v_g on CR2 (harness.stats.wu): golden values, exact enumeration,
batched kernels and properties.

Golden values:

1. R survey 4.1.1 on R 4.2.2 (tests/r/pps_wu_golden.R; raw output and sessionInfo() in tests/r/pps_wu_golden.out):
   svydesign(ids = ~draw, probs = ~pi) with pi = K n_j / X (PSUs = draws, a document drawn twice is two PSUs);
   svymean(~y) + confint(df = degf) for the identity interval, svyciprop(method = "xlogit") for the logit one.
2. R clubSandwich 0.5.8 (same script): vcovCR(type = "CR2") and coef_test(test = "Satterthwaite"); Wu's
   V_g = (Xbar / xbar)^(g - 2) V_CR2 computed in R from that variance.

Exact enumeration (every ordered sample of K draws of a tiny population with its probability): the Hansen-Hurwitz
mean is unbiased for the micro mean and its variance estimator s_r^2 / K is unbiased for the estimator's variance.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import HarnessInputError
from harness.stats import cr2
from harness.stats.batched import ClusterBatch
from harness.stats.methods import INTERVALS, all_intervals
from harness.stats.pps import hansen_hurwitz, hansen_hurwitz_kernel
from harness.stats.wu import wu_kernel, wu_ratio

DRAW_BIN = [1, 1, 1, 2, 2, 3, 3, 3, 3, 4, 5, 5, 5, 6, 6, 6, 6, 6, 7, 7]
Y_BIN = [1, 0, 1, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 1, 0, 1, 1, 1]
DRAW_DUP = [1, 1, 2, 2, 2, 3, 4, 4, 4, 4, 5, 5, 5, 6, 6]
Y_DUP = [0.5, 1, 0.25, 0, 1, 0.2, 1, 1, 0.5, 0, 0.25, 0, 1, 0.125, 0]
DRAW_DIFF = [1, 1, 2, 3, 3, 3, 4, 4, 5, 5, 5, 5, 6, 7, 7, 8, 8, 8]
Y_DIFF = [1, 0, -1, 0.5, 0, 0, -0.5, 1, 0, 0, 1, -1, 0.25, 0, 0.75, -0.25, 0, 1]

# name -> (y, draws, level, (est, se, df, lower, upper), logit (lower, upper) or None), from pps_wu_golden.out
HH_GOLDEN = {
    "binary": (Y_BIN, DRAW_BIN, 0.95, (0.47857142857142854, 0.14432447486077943, 6, 0.12542216062431322,
               0.83172069651854386), (0.18228190483237941, 0.7907462666946764)),
    "binary_90": (Y_BIN, DRAW_BIN, 0.90, (0.47857142857142854, 0.14432447486077943, 6, 0.19812295502623539,
                  0.75901990211662163), (0.22976741931620837, 0.73848155358316347)),
    "duplicate": (Y_DUP, DRAW_DUP, 0.95, (0.41180555555555554, 0.10436324044791884, 5, 0.14353130535199032,
                  0.68007980575912075), (0.18784672533740177, 0.67940747927410439)),
    "difference": (Y_DIFF, DRAW_DIFF, 0.95, (0.098958333333333329, 0.16516013678769509, 7, -0.29158333151123211,
                   0.48949999817789874), None),
}  # fmt: skip

CL_WU = [1, 2, 2, 3, 3, 3, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 6, 7, 7, 7, 7]
Y_WU = [0.084, 0.772, 0.0, 0.396, 0.23, 0.048, 0.496, 0.0, 0.056, 0.173, 1.0, 1.0,
        0.0, 0.006, 0.759, 0.689, 0.123, 0.883, 0.21, 0.151, 0.527, 0.021, 0.0, 0.299]  # fmt: skip
CL_WUB = [1, 1, 1, 2, 2, 3, 3, 3, 3, 4, 5, 5, 5, 6, 6, 6, 6, 6, 7, 7, 8, 8, 8, 9, 9, 9, 9]
Y_WUB = [1, 0, 1, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0]

# name -> (y, clusters, Xbar, g, level, G_pop, (est, se, df, lower, upper, logit_lower, logit_upper))
WU_GOLDEN = {
    "unit": (Y_WU, CL_WU, 5.5, 3, 0.95, None, (0.33012500000000006, 0.076275073449207573, 3.8964464480087457,
             0.11611322892394563, 0.54413677107605452, 0.15770888340149361, 0.56466956621184372)),
    "unit_fpc": (Y_WU, CL_WU, 5.5, 3, 0.95, 40, (0.33012500000000006, 0.069280275941191641, 3.8964464480087457,
                 0.13573915565616582, 0.52451084434383433, 0.16985898445833586, 0.54274229648994643)),
    "unit_g4_90": (Y_WU, CL_WU, 2.0, 4, 0.90, None, (0.33012500000000006, 0.035129719701360897, 3.8964464480087457,
                   0.25465827823201315, 0.40559172176798697, 0.259440591100704, 0.40942052824325798)),
    "binary": (Y_WUB, CL_WUB, 4.25, 3, 0.95, None, (0.37037037037037029, 0.12934359400195, 6.8543756687613593,
               0.063199186622196812, 0.67754155411854378, 0.13612546316161553, 0.68709954186147337)),
}  # fmt: skip


@pytest.mark.parametrize("name", list(HH_GOLDEN))
def test_hansen_hurwitz_matches_r_survey(name):
    y, draws, level, (est, se, df, lo, hi), logit = HH_GOLDEN[name]
    iv = hansen_hurwitz(y, draws, level=level, clip=False)
    assert iv.method == "hansen_hurwitz" and iv.n_clusters == len(set(draws))
    assert (iv.estimate, iv.se, iv.df) == pytest.approx((est, se, df), rel=1e-12)
    assert (iv.lower, iv.upper) == pytest.approx((lo, hi), rel=1e-12)
    if logit is not None:
        lg = hansen_hurwitz(y, draws, level=level, transform="logit")
        assert lg.method == "hansen_hurwitz_logit"
        assert (lg.lower, lg.upper) == pytest.approx(logit, rel=1e-12)


@pytest.mark.parametrize("name", list(WU_GOLDEN))
def test_wu_v_g_matches_the_formula_on_clubsandwich_cr2(name):
    y, cl, xbar, g, level, gpop, (est, se, df, lo, hi, llo, lhi) = WU_GOLDEN[name]
    iv = wu_ratio(y, cl, frame_mean_size=xbar, g=g, level=level, fpc=gpop, clip=False)
    assert iv.method == f"wu_v{g}"
    assert (iv.estimate, iv.se, iv.df) == pytest.approx((est, se, df), rel=1e-12)
    assert (iv.lower, iv.upper) == pytest.approx((lo, hi), rel=1e-12)
    lg = wu_ratio(y, cl, frame_mean_size=xbar, g=g, level=level, fpc=gpop, transform="logit")
    assert lg.method == f"wu_v{g}_logit"
    assert (lg.lower, lg.upper) == pytest.approx((llo, lhi), rel=1e-12)


def test_hansen_hurwitz_is_unbiased_and_so_is_its_variance_by_exact_enumeration():
    """Every ordered sample of K = 3 PPS-with-replacement draws of a 4-document population: E[m] = theta and
    E[s_r^2 / K] = Var(m), exactly (Hansen & Hurwitz 1943)."""
    n = np.array([1.0, 3.0, 7.0, 20.0])
    s = np.array([0.0, 1.0, 5.0, 9.0])
    theta = s.sum() / n.sum()
    probs = n / n.sum()
    rows = [np.r_[np.ones(int(k)), np.zeros(int(m - k))] for k, m in zip(s, n, strict=True)]
    e_m = e_m2 = e_v = 0.0
    for draw in itertools.product(range(4), repeat=3):
        pr = float(np.prod(probs[list(draw)]))
        y = np.concatenate([rows[i] for i in draw])
        labels = np.repeat(np.arange(3), [rows[i].size for i in draw])
        iv = hansen_hurwitz(y, labels, clip=False)
        e_m += pr * iv.estimate
        e_m2 += pr * iv.estimate**2
        e_v += pr * iv.se**2
    assert e_m == pytest.approx(theta, abs=1e-15)
    assert e_v == pytest.approx(e_m2 - e_m**2, rel=1e-12)


def test_wu_with_g_2_is_cr2_and_scales_with_the_frame():
    base = cr2(Y_WU, CL_WU, clip=False)
    two = wu_ratio(Y_WU, CL_WU, frame_mean_size=9.0, g=2, clip=False)
    assert (two.se, two.df, two.lower, two.upper) == pytest.approx(
        (base.se, base.df, base.lower, base.upper), rel=1e-14
    )
    xbar = len(Y_WU) / len(set(CL_WU))
    at_mean = wu_ratio(Y_WU, CL_WU, frame_mean_size=xbar, clip=False)
    assert at_mean.se == pytest.approx(base.se, rel=1e-14)  # a sample of average size keeps CR2's variance
    double = wu_ratio(Y_WU, CL_WU, frame_mean_size=2 * xbar, clip=False)
    assert double.se == pytest.approx(base.se * math.sqrt(2.0), rel=1e-14)


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: wu_ratio(Y_WU, CL_WU, frame_mean_size=0.0), "frame_mean_size: must be a finite number > 0"),
        (lambda: wu_ratio(Y_WU, CL_WU, frame_mean_size="x"), "frame_mean_size: must be a number"),
        (lambda: wu_ratio(Y_WU, CL_WU, frame_mean_size=3.0, g=math.inf), "g: must be finite"),
        (lambda: wu_ratio(Y_DIFF, DRAW_DIFF, frame_mean_size=3.0, transform="logit"), "y: transform='logit'"),
        (lambda: wu_ratio(Y_WU, CL_WU, frame_mean_size=3.0, transform="log"), "transform"),
        (lambda: wu_ratio(Y_WU, CL_WU, frame_mean_size=3.0, fpc=3), "fpc"),
        (lambda: hansen_hurwitz([0.5, 1.0], [1, 1]), "needs at least 2 draws"),
        (lambda: hansen_hurwitz(Y_DIFF, DRAW_DIFF, transform="logit"), "y: transform='logit'"),
        (lambda: hansen_hurwitz([0.5, np.nan], [1, 2]), "non-finite"),
        (lambda: hansen_hurwitz([0.5, 1.0], [1, 2], level=1.0), "level"),
        (lambda: hansen_hurwitz([0.5, 1.0], [1, 2], transform="probit"), "transform"),
    ],
)
def test_bad_inputs_raise_one_line_errors(call, match):
    with pytest.raises(HarnessInputError, match=match):
        call()


def test_degenerate_samples():
    same = hansen_hurwitz([1.0, 0.0, 1.0, 0.0], [1, 1, 2, 2], transform="logit")  # equal rates: se 0
    assert (same.se, same.lower, same.upper) == (0.0, 0.5, 0.5)
    zero = hansen_hurwitz([0.0, 0.0, 0.0], [1, 2, 3], transform="logit")
    assert (zero.estimate, zero.lower, zero.upper) == (0.0, 0.0, 0.0)
    few = hansen_hurwitz([0.0, 1.0, 1.0], [1, 2, 3])
    assert few.warnings and "df = 2" in few.warnings[0] and few.upper == 1.0 and few.extras["clipped"]
    flat = wu_ratio([0.2] * 6, [1, 1, 2, 2, 3, 3], frame_mean_size=4.0, transform="logit")
    assert (flat.se, flat.lower, flat.upper) == pytest.approx((0.0, 0.2, 0.2), abs=1e-15)


def test_registry_entries_and_what_runs_compute():
    for name in ("wu_v3", "wu_v3_logit"):
        m = INTERVALS[name]
        assert m.frame and m.design == "srs" and not m.in_runs
    for name in ("hansen_hurwitz", "hansen_hurwitz_logit"):
        m = INTERVALS[name]
        assert m.design == "pps" and not m.frame and not m.in_runs
    assert INTERVALS["hansen_hurwitz"].paired and not INTERVALS["hansen_hurwitz_logit"].paired
    got = all_intervals(np.asarray(Y_WU), np.asarray(CL_WU), B=200)
    assert not {"wu_v3", "wu_v3_logit", "hansen_hurwitz", "hansen_hurwitz_logit"} & set(got)
    with pytest.raises(HarnessInputError, match="wu_v3: frame_mean_size: this method needs"):
        INTERVALS["wu_v3"].compute(Y_WU, CL_WU)
    with pytest.raises(HarnessInputError, match="cr2: frame_mean_size: this method takes no frame"):
        INTERVALS["cr2"].compute(Y_WU, CL_WU, frame_mean_size=3.0)
    iv = INTERVALS["wu_v3"].compute(Y_WU, CL_WU, frame_mean_size=5.5, clip=False)
    assert iv.upper == pytest.approx(WU_GOLDEN["unit"][6][4], rel=1e-12)


def _rows(rng, k, kind):
    sizes = rng.integers(1, 8, size=k)
    ys = []
    for m in sizes:
        if kind == "binary":
            ys.append((rng.random(m) < rng.random()).astype(float))
        elif kind == "unit":
            ys.append(rng.choice([0.0, 0.2, 0.5, 1.0], size=m))
        else:
            ys.append(rng.choice([-1.0, 0.0, 0.5, 1.0], size=m))
    return ys


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 9), st.sampled_from(["binary", "unit", "continuous"]))
def test_kernels_equal_the_scalar_functions(seed, k, kind):
    rng = np.random.default_rng(seed)
    samples = [_rows(rng, k, kind) for _ in range(3)]
    n = np.array([[y.size for y in ys] for ys in samples])
    s = np.array([[y.sum() for y in ys] for ys in samples])
    sq = None if kind == "binary" else np.array([[(y * y).sum() for y in ys] for ys in samples])
    frame = float(rng.uniform(1.0, 9.0))
    batch = ClusterBatch(n, s, sq, frame_mean_size=frame)
    logit = kind != "continuous"
    for i, ys in enumerate(samples):
        y = np.concatenate(ys)
        cl = np.repeat(np.arange(k), [v.size for v in ys])
        checks = [
            (hansen_hurwitz_kernel(batch, 0.95, (1.0,)), hansen_hurwitz(y, cl, clip=False)),
            (wu_kernel(batch, 0.95, (1.0, 0.6)), wu_ratio(y, cl, frame_mean_size=frame, clip=False)),
        ]
        if logit:
            checks.append((hansen_hurwitz_kernel(batch, 0.95, (1.0,), transform="logit"),
                           hansen_hurwitz(y, cl, transform="logit")))  # fmt: skip
            checks.append((wu_kernel(batch, 0.95, (1.0,), transform="logit"),
                           wu_ratio(y, cl, frame_mean_size=frame, transform="logit")))  # fmt: skip
        for bounds, iv in checks:
            lo, hi = bounds[0]
            assert (lo[i], hi[i]) == pytest.approx((iv.lower, iv.upper), rel=1e-9, abs=1e-12)
        fpc = wu_kernel(batch, 0.95, (1.0, 0.6))[1]
        want = wu_ratio(y, cl, frame_mean_size=frame, fpc=k / 0.4, clip=False)
        assert (fpc[0][i], fpc[1][i]) == pytest.approx((want.lower, want.upper), rel=1e-9, abs=1e-12)
    with pytest.raises(ValueError, match="frame_mean_size"):
        wu_kernel(ClusterBatch(n, s, sq), 0.95, (1.0,))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 8), st.booleans())
def test_properties_permutation_level_and_frame(seed, k, logit):
    """Invariant to the order of clusters and rows and to relabelling; nested in the level; Wu's interval widens as
    the frame's mean size grows; both contain their estimate."""
    rng = np.random.default_rng(seed)
    ys = _rows(rng, k, "unit")
    y = np.concatenate(ys)
    cl = np.repeat(np.arange(k), [v.size for v in ys])
    perm = rng.permutation(y.size)
    relabel = rng.permutation(k)[cl] * 7 + 3
    tr = "logit" if logit else None
    frame = float(rng.uniform(1.0, 6.0))
    for f in (
        lambda yy, cc, lv=0.95: hansen_hurwitz(yy, cc, level=lv, transform=tr),
        lambda yy, cc, lv=0.95: wu_ratio(yy, cc, frame_mean_size=frame, level=lv, transform=tr),
    ):
        a, b = f(y, cl), f(y[perm], relabel[perm])
        assert (b.estimate, b.lower, b.upper) == pytest.approx((a.estimate, a.lower, a.upper), rel=1e-12, abs=1e-15)
        lo90, hi95, hi99 = f(y, cl, 0.90), a, f(y, cl, 0.99)
        assert hi99.lower <= hi95.lower + 1e-15 <= lo90.lower + 2e-15
        assert lo90.upper <= hi95.upper + 1e-15 <= hi99.upper + 2e-15
        assert a.lower <= a.estimate <= a.upper
    small = wu_ratio(y, cl, frame_mean_size=frame, transform=tr)
    big = wu_ratio(y, cl, frame_mean_size=2 * frame, transform=tr)
    assert big.lower <= small.lower + 1e-15 and small.upper <= big.upper + 1e-15


def test_paired_offers_the_methods_without_a_frame():
    """``compare``/``gate`` have no frame (Wu is not offered); Hansen-Hurwitz is, for gold sets planned by PPS
    (issue 29; its paired golden values are in tests/test_goldset_plan.py)."""
    from harness.stats.paired import paired, paired_methods

    names = paired_methods()
    assert "cr2" in names and "hansen_hurwitz" in names and "wu_v3" not in names
    with pytest.raises(HarnessInputError, match="method: must be one of"):
        paired(Y_WU, Y_WU[::-1], CL_WU, method="wu_v3")
