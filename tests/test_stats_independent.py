"""The ``independent`` design's intervals on one-question clusters, against scipy (golden values written here).

* CR2 on one-question clusters is the t interval (``scipy.stats.ttest_1samp``) and, on paired differences, the paired
  t interval (``scipy.stats.ttest_rel(a, b).confidence_interval()``) to 1e-12; CR3 is the same interval with the
  variance scaled by G / (G - 1) (no (G - 1)/G jackknife factor: clubSandwich's CR3), so it is not a duplicate.
* ``bca`` (harness.stats.bca) computes exactly ``scipy.stats.bootstrap(method="BCa")`` from the same replicates, and
  the registered method (its own cluster resamples) agrees with scipy's within Monte Carlo error.
* The cluster sign-flip randomisation test is ``scipy.stats.permutation_test(..., permutation_type="samples")`` within
  3 Monte Carlo standard errors at the same number of resamples.

The data: CISI (``../shared/collections/cisi``, BEIR layout, imported with ``--required-rel 1``), harness bm25 and
tfidf, per-question nDCG@10 of its 76 judged queries (a real pair, written in below so the test needs no corpus).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.stats import paired, randomization_test
from harness.stats.batched import ClusterBatch, Resamples
from harness.stats.bca import bca_bounds, jackknife_ratio
from harness.stats.methods import INTERVALS

#: CISI (BEIR test qrels, --required-rel 1), harness bm25 and tfidf (es-snowball-fold-v1), per-question nDCG@10 of the
#: 76 queries in query-id order (run of 2026-12-07, h6).
CISI_BM25 = [
    0.513528549750033,
    0.0,
    0.43735247915031,
    0.17764613319760858,
    0.13886244387355454,
    0.0,
    0.0,
    0.0,
    0.5580759111248786,
    0.6867151830982591,
    0.27848058942730364,
    0.13886244387355454,
    0.3686580539482399,
    0.0,
    0.22009176629808017,
    0.0,
    0.22009176629808017,
    0.20248323207250624,
    0.772837825180752,
    0.5384313152574521,
    0.23758350840568812,
    0.23177307466786254,
    0.29025978496956456,
    0.6371523797895856,
    0.07839826897867533,
    0.7859162856301584,
    0.17630010660342912,
    0.6281649475693719,
    0.3372080579682881,
    0.6489315753318465,
    0.3589542101716347,
    0.07839826897867533,
    0.0,
    0.2685529228900211,
    0.47684658870035296,
    0.06943122193677727,
    0.3589542101716347,
    0.30523488393970116,
    0.32730659600126993,
    0.0,
    0.46270962158308354,
    0.31516255047698366,
    0.5357086937004182,
    0.11004588314904008,
    0.7280855459907165,
    0.70844095012329,
    0.35970991185182927,
    0.933745776545611,
    0.0,
    0.40853591842579556,
    0.627507133061656,
    0.0,
    0.7411902110103873,
    0.3589542101716347,
    0.7846170207230129,
    0.13886244387355454,
    0.448668937538067,
    0.42520843362602373,
    0.7778721720600673,
    0.4440973278132557,
    0.28952298823485745,
    0.07839826897867533,
    0.08514311764162098,
    0.22784037450527975,
    0.5100691314582919,
    0.4440973278132557,
    0.23504554941448536,
    0.09546043308946733,
    0.7019727018777485,
    0.7846170207230129,
    0.31488013066763093,
    1.0,
    0.7909506325094737,
    0.11004588314904008,
    0.5727555047321237,
    0.5467563801677131,
]
CISI_TFIDF = [
    0.7529694065526482,
    0.0,
    0.6046855387118412,
    0.18205333106166585,
    0.15176219107803537,
    0.0,
    0.07311683844390994,
    0.0,
    0.5033242827953464,
    0.49435723575344825,
    0.23992089480238082,
    0.31954962756492084,
    0.615406227586239,
    0.0,
    0.2934556883974402,
    0.0,
    0.22009176629808017,
    0.3222722491219547,
    0.6457545768494583,
    0.4537425745411855,
    0.06943122193677727,
    0.0,
    0.13886244387355454,
    0.6203974344166848,
    0.07839826897867533,
    0.835780413693672,
    0.1884441521277154,
    0.42257499837058643,
    0.33013764944712026,
    0.5215784827120726,
    0.33013764944712026,
    0.0,
    0.11004588314904008,
    0.17630010660342912,
    0.3468533046962179,
    0.06625422345438903,
    0.43735247915031,
    0.4448530294934502,
    0.6145870006788592,
    0.13886244387355454,
    0.36680070555131283,
    0.2941924851321473,
    0.43808927588501717,
    0.2863459897524692,
    0.6311443278613471,
    0.800693766409882,
    0.24618570546556082,
    1.0,
    0.07839826897867533,
    0.40350157154648025,
    0.6149518506608846,
    0.0,
    0.7058075148678526,
    0.3589542101716347,
    0.681660451040628,
    0.07839826897867533,
    0.2866919347890071,
    0.4440973278132557,
    0.652370608445272,
    0.43735247915031,
    0.28952298823485745,
    0.0,
    0.11004588314904008,
    0.07336392209936005,
    0.4818998405251556,
    0.3436966913921454,
    0.23504554941448536,
    0.3422220729283414,
    0.6489315753318465,
    0.7791714369672127,
    0.15176219107803537,
    0.2890648263178879,
    0.8318477135310893,
    0.13886244387355454,
    0.29727159644205703,
    0.7402849195166222,
]
QIDS = [f"q{i}" for i in range(76)]
# scipy 1.17.1, on CISI_BM25 / CISI_TFIDF:
TTEST_REL_CI = (-0.014507900191293034, 0.04982944658546059)  # ttest_rel(bm25, tfidf).confidence_interval()
TTEST_1SAMP_CI = (0.30304152139849194, 0.42443644628419896)  # ttest_1samp(bm25, 0).confidence_interval()
# permutation_test((bm25, tfidf), mean(x - y), permutation_type="samples", n_resamples=10000, rng=default_rng(0))
PERMUTATION_P = 0.2927707229277072
# bootstrap((bm25,), np.mean, method="BCa", n_resamples=9999, rng=default_rng(0)).confidence_interval
SCIPY_BCA_CI = (0.3081707596745309, 0.4234247004432417)


def test_cr2_on_one_question_clusters_is_the_t_and_the_paired_t_interval():
    a, b = np.array(CISI_BM25), np.array(CISI_TFIDF)
    one = INTERVALS["cr2"].compute(a, QIDS, clip=False)
    assert (one.lower, one.upper) == pytest.approx(TTEST_1SAMP_CI, abs=1e-12) and one.df == pytest.approx(75)
    d = paired(b, a, QIDS, method="cr2")  # paired() is b - a: here bm25 - tfidf, as ttest_rel(bm25, tfidf)
    assert (d.lower, d.upper) == pytest.approx(TTEST_REL_CI, abs=1e-12)
    # CR3 on one-question clusters: the t interval with the variance times G / (G - 1)
    c3 = paired(b, a, QIDS, method="cr3")
    mid, half = (TTEST_REL_CI[0] + TTEST_REL_CI[1]) / 2, (TTEST_REL_CI[1] - TTEST_REL_CI[0]) / 2
    assert (c3.lower, c3.upper) == pytest.approx((mid - half * math.sqrt(76 / 75), mid + half * math.sqrt(76 / 75)),
                                                 abs=1e-12)  # fmt: skip


def test_the_sign_flip_randomisation_test_is_scipys_paired_permutation_test():
    a, b = np.array(CISI_BM25), np.array(CISI_TFIDF)
    reps = 10_000
    p = randomization_test(a - b, QIDS, reps=reps, seed=0)
    assert p == pytest.approx(0.2820717928207179, abs=1e-15)  # golden: harness at reps 10000, seed 0
    mc_se = math.sqrt(PERMUTATION_P * (1 - PERMUTATION_P) / reps)
    assert abs(p - PERMUTATION_P) <= 3 * mc_se


def test_bca_core_equals_scipy_bootstrap_bca_on_the_same_replicates():
    from scipy import stats

    a = np.array(CISI_BM25)
    res = stats.bootstrap((a,), np.mean, method="BCa", n_resamples=9999, rng=np.random.default_rng(0))
    assert (res.confidence_interval.low, res.confidence_interval.high) == pytest.approx(SCIPY_BCA_CI, abs=1e-15)
    lo, hi = bca_bounds(a.mean(), res.bootstrap_distribution, jackknife_ratio(a, np.ones_like(a)), 0.95)
    assert (float(lo), float(hi)) == pytest.approx(SCIPY_BCA_CI, abs=1e-12)


def test_registered_bca_agrees_with_scipy_within_monte_carlo_error():
    a = np.array(CISI_BM25)
    iv = INTERVALS["bca"].compute(a, QIDS, B=9999, seed=0)
    assert (iv.lower, iv.upper) == pytest.approx((0.3070597734443399, 0.42447516500347793), abs=1e-12)  # golden
    # each bound's Monte Carlo SE at B = 9999 is about 0.0008 (order-statistic SE of a 2.5 % quantile): 3 SE of a
    # difference of two independent bootstraps
    assert (iv.lower, iv.upper) == pytest.approx(SCIPY_BCA_CI, abs=3 * math.sqrt(2) * 0.0008)
    assert iv.lower <= iv.estimate <= iv.upper and iv.method == "bca"


def test_bca_is_a_run_method_and_a_paired_one():
    m = INTERVALS["bca"]
    assert m.in_runs and m.paired and m.resampling and m.applies_to("continuous")


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 7), st.sampled_from(["binary", "cont"]))
def test_bca_kernel_equals_the_scalar_bca_on_the_same_resamples(seed, k, kind):
    """Row i of the batched kernel equals BCa (harness.stats.bca) from the kernel's own cluster replicates and the
    sample's leave-one-cluster-out jackknife, recomputed here from the rows."""
    rng = np.random.default_rng(seed)
    r = 2
    ns = rng.integers(1, 6, size=(r, k))
    rows = [[(rng.random(n) < 0.5).astype(float) if kind == "binary" else rng.normal(size=n) for n in ns[i]]
            for i in range(r)]  # fmt: skip
    s = np.array([[y.sum() for y in ys] for ys in rows])
    sq = None if kind == "binary" else np.array([[(y * y).sum() for y in ys] for ys in rows])
    batch = ClusterBatch(ns, s, sq)
    draws = Resamples(np.random.default_rng(seed + 1), 57)
    idx = draws.cluster_replicates(batch)[0]
    (lo, hi), (lo2, hi2) = INTERVALS["bca"].kernel(batch, 0.95, (1.0, 0.64), draws)
    for i in range(r):
        est = np.concatenate(rows[i]).mean()
        reps = [np.concatenate([rows[i][j] for j in idx[i, b] - i * k]).mean() for b in range(idx.shape[1])]
        jack = [np.concatenate([rows[i][j] for j in range(k) if j != g]).mean() for g in range(k)]
        wl, wh = (float(x) for x in bca_bounds(est, np.array(reps), np.array(jack), 0.95))
        assert (lo[i], hi[i]) == pytest.approx((min(wl, est), max(wh, est)), rel=1e-9, abs=1e-10)
        assert (lo2[i], hi2[i]) == pytest.approx((min(est + 0.8 * (wl - est), est), max(est + 0.8 * (wh - est), est)),
                                                 rel=1e-9, abs=1e-10)  # fmt: skip
