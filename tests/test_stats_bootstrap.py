"""Cluster bootstrap: convergence to the analytic CR2 interval, reproducibility, Monte Carlo error, edge cases."""

from __future__ import annotations

import numpy as np
import pytest

from harness.errors import HarnessInputError
from harness.stats import all_intervals, bootstrap_intervals, cluster_bootstrap, cr2


def _balanced(seed=101, G=200, n=10):
    # 200 documents x 10 questions; document effect SD 0.15, question noise SD 0.2 around 0.5 (nearly symmetric)
    rng = np.random.default_rng(seed)
    cl = np.repeat(np.arange(G), n)
    y = np.clip(0.5 + 0.15 * rng.standard_normal(G)[cl] + 0.2 * rng.standard_normal(G * n), 0.0, 1.0)
    return y, cl, rng


# Stated tolerance: on 200 balanced clusters with B = 5000, each bootstrap bound lies within 0.15 CR2 standard
# errors of the CR2 bound (the Monte Carlo SE of a bound is ~0.04 SE, and the remaining differences - the
# bootstrap's (G-1)/G variance and normal vs t(199) quantiles - are ~0.01 SE).
CONVERGENCE_TOL_SE = 0.15


@pytest.mark.parametrize("weighted", [False, True])
def test_bootstrap_bounds_converge_to_cr2(weighted):
    y, cl, rng = _balanced()
    w = rng.integers(1, 5, y.size).astype(float) if weighted else None
    ref = cr2(y, cl, weights=w)
    res = bootstrap_intervals(y, cl, weights=w, B=5000, seed=7)
    for name in ("bootstrap_percentile", "bootstrap_t"):
        iv = res[name]
        assert iv.estimate == pytest.approx(ref.estimate, abs=1e-14)
        assert abs(iv.lower - ref.lower) <= CONVERGENCE_TOL_SE * ref.se, name
        assert abs(iv.upper - ref.upper) <= CONVERGENCE_TOL_SE * ref.se, name
        assert 0 < iv.extras["mc_se_lower"] < 0.08 * ref.se
        assert 0 < iv.extras["mc_se_upper"] < 0.08 * ref.se
    # the bootstrap-t is studentised by CR2: its se is the CR2 se; the percentile se is the replicate SD
    assert res["bootstrap_t"].se == pytest.approx(ref.se, rel=1e-12)
    assert res["bootstrap_percentile"].se == pytest.approx(ref.se, rel=0.05)


def test_seed_reproducible_and_seeds_differ():
    y, cl, _ = _balanced(G=40)
    a = cluster_bootstrap(y, cl, B=1000, seed=3)
    b = cluster_bootstrap(y, cl, B=1000, seed=3)
    c = cluster_bootstrap(y, cl, B=1000, seed=4)
    assert a == b
    assert (a.lower, a.upper) != (c.lower, c.upper)
    assert a.extras["B"] == 1000 and a.extras["seed"] == 3


def test_one_draw_shared_by_both_kinds():
    y, cl, _ = _balanced(G=30)
    both = bootstrap_intervals(y, cl, B=500, seed=1)
    assert cluster_bootstrap(y, cl, B=500, seed=1, kind="percentile") == both["bootstrap_percentile"]
    t_only = cluster_bootstrap(y, cl, B=500, seed=1, kind="bootstrap_t")
    assert (t_only.lower, t_only.upper) == (both["bootstrap_t"].lower, both["bootstrap_t"].upper)


def test_batching_does_not_change_replicates(monkeypatch):
    import harness.stats.bootstrap as bs

    y, cl, _ = _balanced(G=50)
    ref = bootstrap_intervals(y, cl, B=600, seed=5)
    monkeypatch.setattr(bs, "_CELLS_PER_BATCH", 50 * 7)  # 7 replicates per batch
    small = bs.bootstrap_intervals(y, cl, B=600, seed=5)
    for k in ref:
        assert (small[k].lower, small[k].upper) == pytest.approx((ref[k].lower, ref[k].upper), abs=1e-15)


def test_monte_carlo_error_estimate_is_honest():
    # across 30 seeds the SD of a bound should match the reported Monte Carlo SE (order-statistic method)
    y, cl, _ = _balanced(G=100, n=5)
    lowers, mcs = [], []
    for seed in range(30):
        iv = cluster_bootstrap(y, cl, B=400, seed=seed)
        lowers.append(iv.lower)
        mcs.append(iv.extras["mc_se_lower"])
    ratio = np.std(lowers, ddof=1) / np.mean(mcs)
    assert 0.6 < ratio < 1.6


def test_bootstrap_t_replicate_se_matches_cr2_on_a_resample():
    # the vectorised per-replicate CR2 SE equals cr2() run on the materialised resample (duplicates = new clusters)
    from harness.stats._core import cluster_sums, prepare
    from harness.stats.bootstrap import _replicates

    rng = np.random.default_rng(9)
    cl = np.repeat(np.arange(6), [1, 3, 2, 5, 1, 4])
    y = rng.random(cl.size)
    w = rng.integers(1, 4, cl.size).astype(float)
    yy, codes, G, ww, _ = prepare(y, cl, w, "test")
    cs = cluster_sums(yy, codes, G, ww)
    means, ses, _ = _replicates(cs, 3, 11, True)
    counts = np.random.default_rng(11).multinomial(G, np.full(G, 1 / G), size=3)
    # rebuild each resample from the canonical cluster order used internally
    rows_by_cluster = []
    for g in range(G):
        # find the original cluster whose summaries sit at canonical position g
        match = [c for c in range(6) if np.isclose((y[cl == c] - y.min()).sum(), cs.Sy[g])]
        rows_by_cluster.append(np.flatnonzero(cl == match[0]))
    for b in range(3):
        idx, lab = [], []
        for g in range(G):
            for k in range(counts[b, g]):
                idx.extend(rows_by_cluster[g])
                lab.extend([f"{g}-{k}"] * len(rows_by_cluster[g]))
        ref = cr2(y[idx], lab, weights=w[idx], clip=False)
        assert means[b] + cs.y0 == pytest.approx(ref.estimate, abs=1e-12)
        assert ses[b] == pytest.approx(ref.se, rel=1e-9)


def test_fpc_shrinks_bootstrap():
    y, cl, _ = _balanced(G=40)
    a = cluster_bootstrap(y, cl, B=500, seed=2)
    b = cluster_bootstrap(y, cl, B=500, seed=2, fpc=160)  # factor 1 - 40/160 = 0.75
    assert b.upper - b.estimate == pytest.approx((a.upper - a.estimate) * np.sqrt(0.75), rel=1e-12)
    t_a = cluster_bootstrap(y, cl, B=500, seed=2, kind="bootstrap_t")
    t_b = cluster_bootstrap(y, cl, B=500, seed=2, kind="bootstrap_t", fpc=160)
    assert t_b.se == pytest.approx(t_a.se * np.sqrt(0.75), rel=1e-12)


def test_few_clusters_warn_and_constant_y():
    iv = cluster_bootstrap([0.1, 0.5, 0.9, 0.3], [1, 1, 2, 3], B=200, kind="bootstrap_t")
    assert any("clusters" in w for w in iv.warnings)
    assert iv.lower <= iv.estimate <= iv.upper
    const = bootstrap_intervals([0.4] * 9, [1, 1, 2, 2, 2, 3, 4, 5, 5], B=200)
    for v in const.values():
        assert (v.lower, v.estimate, v.upper) == (0.4, 0.4, 0.4)


def test_bootstrap_errors():
    with pytest.raises(HarnessInputError, match="kind"):
        cluster_bootstrap([0.1, 0.2], [1, 2], kind="abc")
    with pytest.raises(HarnessInputError, match="B"):
        cluster_bootstrap([0.1, 0.2], [1, 2], B=10)


def test_all_intervals_keys_and_contrast_labels():
    y, cl, rng = _balanced(G=30)
    res = all_intervals(y, cl, B=300)
    assert list(res) == [
        "cr2",
        "cr2_logit",
        "bootstrap_percentile",
        "bootstrap_t",
        "cluster_t",
        "iid_wald",
        "iid_wald_effective",
        "cr3",
        "wild_cluster",
        "bca",
    ]  # y is not binary: no korn_graubard
    assert all(k == v.method for k, v in res.items())
    assert "contrast" in res["iid_wald"].label
    assert res["iid_wald"].width < res["cr2"].width  # ignoring clustering understates uncertainty here
    weighted = all_intervals(y, cl, weights=rng.integers(1, 3, y.size), B=300)
    assert any("unweighted" in w for w in weighted["cluster_t"].warnings)
    assert "cr2_logit" not in all_intervals(y * 2 - 0.5, cl, B=300)
