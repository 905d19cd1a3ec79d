"""Golden-value tests of harness.stats.cr2 (and cluster_t / iid_wald) against independent references.

1. R clubSandwich 0.5.8 on R 4.2.2 (tests/r/clubsandwich_golden.R; raw output and sessionInfo() in
   tests/r/clubsandwich_golden.out): vcovCR(lm(y ~ 1[, weights = w]), cluster, type = "CR2"),
   coef_test(..., test = "Satterthwaite"), conf_int(..., level = 0.95). The data below are copied verbatim from
   the R script.
2. The published worked example (20 documents x 500 chunks).
3. A dense, direct implementation of the clubSandwich matrices (n x n, eigen-decomposition inverse square roots,
   the full P matrix of get_P_array) checked against the closed form on random data.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import HarnessInputError
from harness.stats import cluster_t, cr2, iid_wald, paired

TOL = 1e-6

CL_UNEQUAL = [1, 2, 2, 3, 3, 3, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 6, 7, 7, 7, 7]
Y_UNEQUAL = [0.084, 0.772, 0.0, 0.396, 0.23, 0.048, 0.496, 0.0, 0.056, 0.173, 1.0, 1.0,
             0.0, 0.006, 0.759, 0.689, 0.123, 0.883, 0.21, 0.151, 0.527, 0.021, 0.0, 0.299]  # fmt: skip
W_UNEQUAL = [1, 2, 3, 2, 1, 3, 1, 5, 2, 1, 1, 4, 4, 1, 1, 2, 2, 4, 4, 5, 4, 3, 1, 2]

CL_SINGMIX = [1, 2, 3, 4, 5, 6, 6, 6, 7, 7, 7, 7]
Y_SINGMIX = [0.054, 1.0, 0.476, 0.457, 0.162, 0.592, 0.0, 0.242, 0.674, 0.038, 0.0, 0.395]
W_SINGMIX = [2, 1, 3, 1, 2, 1, 4, 2, 3, 1, 1, 2]

CL_ALLSING = list(range(1, 9))
Y_ALLSING = [1.0, 0.664, 0.119, 0.078, 0.013, 0.437, 0.139, 0.0]

CL_TWO = [1, 1, 1, 2, 2, 2, 2, 2]
Y_TWO = [0.427, 0.0, 0.0, 0.043, 0.842, 0.171, 0.274, 1.0]

CL_PAIRED = [1, 1, 2, 2, 2, 3, 4, 4, 4, 4, 5, 5, 6, 6, 6, 6, 6, 6]
YA_PAIRED = [0.819, 0.119, 0.005, 0.662, 1.0, 0.134, 0.774, 0.177, 0.557, 0.019, 0.641,
             0.507, 0.0, 0.299, 0.0, 1.0, 0.297, 0.019]  # fmt: skip
YB_PAIRED = [0.906, 0.228, 0.629, 0.082, 0.808, 0.035, 0.297, 0.7, 0.474, 0.606, 0.118,
             0.817, 0.48, 0.989, 0.334, 0.906, 0.028, 0.706]  # fmt: skip


def _macro_weights(cl):
    cl = np.asarray(cl)
    _, inv, counts = np.unique(cl, return_inverse=True, return_counts=True)
    return 1.0 / counts[inv]


# name -> (y, clusters, weights, (est, se, df, lower, upper)) as printed by tests/r/clubsandwich_golden.out
R_CR2 = {
    "unequal": (Y_UNEQUAL, CL_UNEQUAL, None,
                (0.33012500000000006, 0.060222376630904385, 3.8964464480087457,
                 0.16115371097500159, 0.49909628902499853)),
    "singmix": (Y_SINGMIX, CL_SINGMIX, None,
                (0.34083333333333338, 0.073561727526846518, 3.9032258064516125,
                 0.13458058692842143, 0.5470860797382453)),
    "allsing": (Y_ALLSING, CL_ALLSING, None,
                (0.30625000000000008, 0.12826364449835345, 7.0, 0.0029546756215180769, 0.60954532437848208)),
    "two": (Y_TWO, CL_TWO, None,
            (0.34462499999999985, 0.1566944512153082, 1.0000000000000004, -1.6463667781642437, 2.3356167781642436)),
    "weighted": (Y_UNEQUAL, CL_UNEQUAL, W_UNEQUAL,
                 (0.31966101694915267, 0.087924313300937196, 3.4559701057326668,
                  0.059615494123144541, 0.57970653977516085)),
    "weighted_singmix": (Y_SINGMIX, CL_SINGMIX, W_SINGMIX,
                         (0.31491304347826088, 0.083327328852515203, 2.9696859995402902,
                          0.048190314494520825, 0.58163577246200093)),
    "macro_weights": (Y_UNEQUAL, CL_UNEQUAL, "macro",
                      (0.26588095238095233, 0.048635859250165003, 3.877602923603467,
                       0.12914843069839074, 0.40261347406351389)),
}  # fmt: skip

R_PAIRED = (0.11744444444444445, 0.087462099831381937, 3.7107776261937251, -0.13303886726740882, 0.36792775615629775)
# t.test over cluster means (R stats::t.test), same output file
R_TTEST_UNEQUAL = (0.26588095238095238, 0.050895310439337663, 6.0, 0.14134461409923482, 0.39041729066266995)
R_TTEST_PAIRED = (0.047555555555555545, 0.066166424106281777, 5.0, -0.1225306523810611, 0.21764176349217221)


def _check(iv, expected, tol=TOL):
    est, se, df, lower, upper = expected
    assert iv.estimate == pytest.approx(est, abs=tol)
    assert iv.se == pytest.approx(se, abs=tol)
    assert iv.df == pytest.approx(df, abs=tol)
    assert iv.lower == pytest.approx(lower, abs=tol)
    assert iv.upper == pytest.approx(upper, abs=tol)


@pytest.mark.parametrize("name", sorted(R_CR2))
def test_cr2_matches_clubsandwich(name):
    y, cl, w, expected = R_CR2[name]
    if isinstance(w, str):
        w = _macro_weights(cl)
    iv = cr2(y, cl, weights=w, clip=False)
    assert iv.method == "cr2"
    assert iv.n == len(y) and iv.n_clusters == len(set(cl))
    _check(iv, expected)


def test_cr2_string_labels_and_scaled_weights_match_clubsandwich():
    y, cl, w, expected = R_CR2["weighted"]
    labels = [f"doc-{c:03d}" for c in cl]
    _check(cr2(y, labels, weights=np.asarray(w) * 37.5, clip=False), expected)


def test_paired_cr2_matches_clubsandwich():
    iv = paired(YA_PAIRED, YB_PAIRED, CL_PAIRED)
    assert iv.method == "paired_cr2"
    _check(iv, R_PAIRED)
    # the same as cr2 on the difference vector
    _check(cr2(np.subtract(YB_PAIRED, YA_PAIRED), CL_PAIRED, clip=False), R_PAIRED)


def test_cluster_t_matches_r_t_test():
    _check(cluster_t(Y_UNEQUAL, CL_UNEQUAL), R_TTEST_UNEQUAL)
    _check(paired(YA_PAIRED, YB_PAIRED, CL_PAIRED, method="cluster_t"), R_TTEST_PAIRED)


def test_macro_weighted_cr2_estimates_the_cluster_t_estimand():
    # weights 1/n_j turn the ratio estimator into the mean of cluster means
    assert cr2(Y_UNEQUAL, CL_UNEQUAL, weights=_macro_weights(CL_UNEQUAL)).estimate == pytest.approx(
        cluster_t(Y_UNEQUAL, CL_UNEQUAL).estimate, abs=1e-12
    )


def test_low_df_warning():
    iv = cr2(Y_TWO, CL_TWO)
    assert any("df" in w for w in iv.warnings)
    assert iv.lower == 0.0 and iv.upper == 1.0 and iv.extras["clipped"] is True  # clipped to [0, 1]
    big = cr2(np.tile(Y_ALLSING, 3), np.arange(24))
    assert big.warnings == []


# ---------------------------------------------------------------- published worked example (20 docs x 500 chunks)
def _worked_example():
    # ten documents with 0 hits in 500 chunks, ten with 200 hits (40 %)
    y = np.zeros(20 * 500)
    for doc in range(10, 20):
        y[doc * 500 : doc * 500 + 200] = 1.0
    return y, np.repeat(np.arange(20), 500)


def test_worked_example_iid_interval():
    y, _ = _worked_example()
    iv = iid_wald(y)
    assert iv.estimate == pytest.approx(0.2, abs=1e-15)
    assert (round(iv.lower, 3), round(iv.upper, 3)) == (0.192, 0.208)
    assert "contrast only" in iv.label


def test_worked_example_cluster_t():
    y, cl = _worked_example()
    iv = cluster_t(y, cl)
    rates = np.r_[np.zeros(10), np.full(10, 0.4)]
    assert round(float(rates.std(ddof=1)), 4) == 0.2052  # SD over the 20 document rates
    assert round(iv.se, 4) == 0.0459
    assert iv.df == 19
    assert (round(iv.lower, 3), round(iv.upper, 3)) == (0.104, 0.296)


def test_worked_example_cr2_equals_cluster_t_when_balanced():
    y, cl = _worked_example()
    a, b = cr2(y, cl), cluster_t(y, cl)
    for field in ("estimate", "se", "df", "lower", "upper"):
        assert getattr(a, field) == pytest.approx(getattr(b, field), abs=1e-10), field


# ------------------------------------------------------------- dense reference implementation of clubSandwich CR2
def _inv_sqrt_sym(m):
    vals, vecs = np.linalg.eigh(m)
    return (vecs / np.sqrt(vals)) @ vecs.T


def dense_cr2(y, cl, w=None):
    """CR2 + Satterthwaite df following clubSandwich's vcov_CR / CR2 / get_GH / get_P_array literally
    (intercept-only X, target Theta = I), with n x n matrices and eigen-decompositions."""
    y = np.asarray(y, float)
    cl = np.asarray(cl)
    N = y.size
    w = np.ones(N) if w is None else np.asarray(w, float)
    X = np.ones((N, 1))
    Wm = np.diag(w)
    M = np.linalg.inv(X.T @ Wm @ X)
    beta = (M @ X.T @ Wm @ y).item()
    r = y - beta
    H = X @ M @ X.T @ Wm
    IH = np.eye(N) - H
    groups = [np.flatnonzero(cl == g) for g in np.unique(cl)]
    meat = 0.0
    g_vecs = []
    for idx in groups:
        IHj = IH[idx, :]
        A = _inv_sqrt_sym(IHj @ IHj.T)
        E = X[idx].T @ Wm[np.ix_(idx, idx)] @ A  # 1 x n_j
        meat += (E @ r[idx]).item() ** 2
        g = np.zeros(N)
        g[idx] = (M @ E).ravel()
        g_vecs.append(IH.T @ g)  # e' g_j with e = (I - H) eps
    V = (M @ M).item() * meat
    Gm = np.array(g_vecs)
    P = Gm @ Gm.T
    df = np.trace(P) ** 2 / np.sum(P * P)
    return beta, np.sqrt(V), df


def test_dense_reference_reproduces_clubsandwich():
    for name, (y, cl, w, expected) in R_CR2.items():
        if isinstance(w, str):
            w = _macro_weights(cl)
        est, se, df = dense_cr2(y, cl, w)
        assert (est, se, df) == pytest.approx(expected[:3], abs=1e-9), name


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 5), min_size=2, max_size=7),
    seed=st.integers(0, 2**31),
    weighted=st.booleans(),
)
def test_closed_form_matches_dense_reference(sizes, seed, weighted):
    rng = np.random.default_rng(seed)
    cl = np.repeat(np.arange(len(sizes)), sizes)
    y = rng.random(cl.size)
    w = rng.integers(1, 6, cl.size).astype(float) if weighted else None
    iv = cr2(y, cl, weights=w, clip=False)
    est, se, df = dense_cr2(y, cl, w)
    assert iv.estimate == pytest.approx(est, abs=1e-12)
    assert iv.se == pytest.approx(se, rel=1e-8, abs=1e-13)
    assert iv.df == pytest.approx(df, rel=1e-8)


# ------------------------------------------------------------------------------------------ options and errors
def test_logit_interval_in_unit_range_and_asymmetric():
    iv = cr2(Y_UNEQUAL, CL_UNEQUAL, transform="logit")
    plain = cr2(Y_UNEQUAL, CL_UNEQUAL)
    assert iv.method == "cr2_logit"
    assert 0.0 < iv.lower < iv.estimate < iv.upper < 1.0
    assert iv.se == plain.se and iv.df == plain.df
    # delta method: se_logit = se / (p (1 - p)); bounds are expit(logit(p) -/+ t se_logit)
    p = plain.estimate
    se_logit = plain.se / (p * (1 - p))
    from scipy import stats

    t = stats.t.ppf(0.975, plain.df)
    expit = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    assert iv.lower == pytest.approx(expit(np.log(p / (1 - p)) - t * se_logit), abs=1e-12)
    assert iv.upper == pytest.approx(expit(np.log(p / (1 - p)) + t * se_logit), abs=1e-12)


def test_logit_degenerate_and_errors():
    iv = cr2([0.0, 0.0, 0.0], [1, 2, 3], transform="logit")
    assert (iv.lower, iv.estimate, iv.upper) == (0.0, 0.0, 0.0)
    with pytest.raises(HarnessInputError):
        cr2([0.5, 1.5, 0.2], [1, 2, 3], transform="logit")
    with pytest.raises(HarnessInputError):
        cr2([0.5, 0.2], [1, 2], transform="probit")


def test_fpc_scales_variance():
    base = cr2(Y_UNEQUAL, CL_UNEQUAL)
    iv = cr2(Y_UNEQUAL, CL_UNEQUAL, fpc=28)  # G = 7 of 28 documents: factor 1 - 7/28 = 0.75
    assert iv.se == pytest.approx(base.se * np.sqrt(0.75), rel=1e-12)
    assert iv.df == base.df
    assert iv.extras["fpc_factor"] == pytest.approx(0.75)
    assert cr2(Y_UNEQUAL, CL_UNEQUAL, fpc=7).se == 0.0  # the whole population: no sampling error
    with pytest.raises(HarnessInputError, match="fpc"):
        cr2(Y_UNEQUAL, CL_UNEQUAL, fpc=6)


def test_zero_weight_rows_are_dropped_like_clubsandwich():
    y, cl, w, expected = R_CR2["weighted"]
    y2 = [*y, 0.9, 0.1]
    cl2 = [*cl, 99, 3]
    iv = cr2(y2, cl2, weights=[*w, 0, 0], clip=False)
    _check(iv, expected)
    assert iv.extras["dropped_zero_weight_rows"] == 2


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"y": [0.1, np.nan], "clusters": [1, 2]}, "non-finite"),
        ({"y": [0.1, 0.2], "clusters": [1, 1]}, "at least 2 clusters"),
        ({"y": [0.1, 0.2], "clusters": [1]}, "rows"),
        ({"y": [0.1, 0.2], "clusters": [1, 2], "weights": [1, -1]}, "negative"),
        ({"y": [0.1, 0.2], "clusters": [1, 2], "level": 1.5}, "level"),
        ({"y": [], "clusters": []}, "empty"),
    ],
)
def test_input_errors(kwargs, match):
    with pytest.raises(HarnessInputError, match=match):
        cr2(**kwargs)


def test_to_dict_is_json_ready():
    import json

    d = cr2(Y_UNEQUAL, CL_UNEQUAL).to_dict()
    assert json.loads(json.dumps(d)) == d
    assert set(d) >= {"method", "estimate", "se", "df", "lower", "upper", "level", "n", "n_clusters", "extras"}


# ------------------------------------------------- extreme weights: 60-digit reference (mpmath, if installed)
def _mp_cr2(y, cl, w):
    """The dense clubSandwich computation above in 60-digit arithmetic (mpmath)."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 60
    N = len(y)
    w = [mp.mpf(x) for x in w]
    y = [mp.mpf(x) for x in y]
    W = sum(w)
    beta = sum(a * b for a, b in zip(w, y, strict=True)) / W
    r = [v - beta for v in y]
    IH = mp.matrix(N, N)
    for i in range(N):
        for k in range(N):
            IH[i, k] = (1 if i == k else 0) - w[k] / W
    meat, gs = 0, []
    for g in sorted(set(cl)):
        idx = [i for i in range(N) if cl[i] == g]
        IHj = mp.matrix(len(idx), N)
        for a, i in enumerate(idx):
            for k in range(N):
                IHj[a, k] = IH[i, k]
        E, Qm = mp.eigsy(IHj * IHj.T)
        aj = Qm * mp.diag([1 / mp.sqrt(e) for e in E]) * Qm.T * mp.matrix([w[i] for i in idx])
        meat += sum(aj[a] * r[i] for a, i in enumerate(idx)) ** 2
        gvec = mp.matrix(N, 1)
        for a, i in enumerate(idx):
            gvec[i] = aj[a] / W
        gs.append(IH.T * gvec)
    P = [[(gj.T * gk)[0] for gk in gs] for gj in gs]
    tr = sum(P[j][j] for j in range(len(gs)))
    fro = sum(x**2 for row in P for x in row)
    return float(beta), float(mp.sqrt(meat) / W), float(tr**2 / fro)


@pytest.mark.parametrize(
    "y, cl, w",
    [
        ([0.2, 0.9, 0.5], [1, 2, 2], [1e6, 1, 2]),  # one cluster holds nearly all the weight
        ([0.1, 0.2, 0.3, 0.9], [1, 1, 1, 2], [1, 2, 3, 1e-6]),  # a nearly weightless cluster
        ([0.1, 0.2, 0.3, 0.9, 0.4, 0.6], [1, 1, 1, 2, 3, 3], [1, 2e5, 3, 1e-6, 1, 7]),
    ],
)
def test_cr2_accurate_with_extreme_weights(y, cl, w):
    est, se, df = _mp_cr2(y, cl, w)
    iv = cr2(y, cl, weights=w, clip=False)
    assert iv.estimate == pytest.approx(est, rel=1e-12)
    assert iv.se == pytest.approx(se, rel=1e-8)
    assert iv.df == pytest.approx(df, rel=1e-8)
