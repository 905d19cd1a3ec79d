"""Coverage study: golden CR2 values (R clubSandwich) and hand-computed ICC/DEFF for the batched kernels it uses
(harness.stats.batched), populations from files, and seeded simulations with known answers. The registry-wide test that
every batched kernel equals its scalar function is in tests/test_stats_batched.py."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import stats
from harness.errors import HarnessInputError
from harness.stats.batched import (
    Resamples,
    cr2_from_sizes_sums,
    deff_from_sizes,
    icc_from_sums,
    quantile7_lastaxis,
    replicate_cr2_se,
)
from harness.studies.coverage import (
    METHODS,
    Population,
    design_diagnostics,
    load_population,
    run_coverage,
    study_design,
)
from harness.studies.coverage.study import _sample_intervals


def suff(y, sizes):
    y = np.asarray(y, dtype=float)
    codes = np.repeat(np.arange(len(sizes)), sizes)
    return np.asarray(sizes, dtype=float), np.bincount(codes, weights=y)


# ---- CR2 ------------------------------------------------------------------------------------------------------
# Golden values from R 4.2.2, clubSandwich 0.5.8 (regenerate with Rscript):
#   suppressMessages(library(clubSandwich))
#   run <- function(y, cl) { fit <- lm(y ~ 1)
#     ct <- coef_test(fit, vcov = "CR2", cluster = cl, test = "Satterthwaite")
#     cat(sprintf("est=%.15g se=%.15g df=%.15g\n", coef(fit)[1], ct$SE[1], ct$df_Satt[1])) }
#   run(c(1, 0,1, 0,0,1, 1,1,1,0,1, 0,0,0,0,1,0,0,0,1), rep(1:5, c(1, 2, 3, 5, 9)))
#   run(c(0.5,1.5,-0.2,2.0, 3.1, 0.0,0.3,0.1,-1.0,2.2,0.7,0.4, 1.1,1.9, -0.5,0.6,0.2, 2.5,2.4,0.9,1.3,0.8,1.7),
#       rep(1:6, c(4, 1, 7, 2, 3, 6)))
#   run(c(1,0,0, 1,1,0, 0,0,0, 1,1,1), rep(1:4, each = 3))
# R's output:
#   est=0.45 se=0.174627405030281 df=2.50964028776978
#   est=0.978260869565218 se=0.329566786122371 df=3.64359206081932
#   est=0.5 se=0.215165741455968 df=3
CLUBSANDWICH = [
    (
        [1, 0, 1, 0, 0, 1, 1, 1, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 1],
        [1, 2, 3, 5, 9],
        (0.45, 0.174627405030281, 2.50964028776978),
    ),
    (
        [
            0.5,
            1.5,
            -0.2,
            2.0,
            3.1,
            0.0,
            0.3,
            0.1,
            -1.0,
            2.2,
            0.7,
            0.4,
            1.1,
            1.9,
            -0.5,
            0.6,
            0.2,
            2.5,
            2.4,
            0.9,
            1.3,
            0.8,
            1.7,
        ],
        [4, 1, 7, 2, 3, 6],
        (0.978260869565218, 0.329566786122371, 3.64359206081932),
    ),
    ([1, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1, 1], [3, 3, 3, 3], (0.5, 0.215165741455968, 3.0)),
]


@pytest.mark.parametrize("y,sizes,expected", CLUBSANDWICH)
def test_cr2_from_sizes_sums_matches_clubsandwich(y, sizes, expected):
    got = cr2_from_sizes_sums(*suff(y, sizes))
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def _cr2_matrix_reference(y, sizes):
    """CR2 and Satterthwaite df by the textbook matrix formulas (intercept-only OLS, working model I)."""
    y = np.asarray(y, float)
    n = y.size
    x = np.ones((n, 1))
    m = np.linalg.inv(x.T @ x)
    h = x @ m @ x.T
    e = y - h @ y
    bounds = np.cumsum([0, *sizes])
    meat = 0.0
    us = []
    for g in range(len(sizes)):
        sl = slice(bounds[g], bounds[g + 1])
        w, v = np.linalg.eigh(np.eye(sizes[g]) - h[sl, sl])
        a = v @ np.diag(1 / np.sqrt(w)) @ v.T
        p = a @ x[sl] @ m  # (n_g, 1)
        meat += float(p[:, 0] @ e[sl]) ** 2
        us.append((np.eye(n) - h)[sl].T @ p[:, 0])
    u = np.array(us)
    omega = u @ u.T
    return float(y.mean()), math.sqrt(meat), float(np.trace(omega) ** 2 / np.sum(omega**2))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=2, max_size=7), st.randoms(use_true_random=False))
def test_cr2_from_sizes_sums_equals_matrix_formulas_and_harness_stats(sizes, rnd):
    y = [rnd.choice([0.0, 1.0, 0.25, 3.5]) for _ in range(sum(sizes))]
    est, se, df = cr2_from_sizes_sums(*suff(y, sizes))
    r_est, r_se, r_df = _cr2_matrix_reference(y, sizes)
    assert est == pytest.approx(r_est, abs=1e-12)
    assert se == pytest.approx(r_se, rel=1e-8, abs=1e-12)
    if r_se > 0:
        assert df == pytest.approx(r_df, rel=1e-8)
    iv = stats.cr2(y, np.repeat(np.arange(len(sizes)), sizes), clip=False)
    assert se == pytest.approx(iv.se, rel=1e-8, abs=1e-12)
    assert df == pytest.approx(iv.df, rel=1e-8)


def test_cr2_from_sizes_sums_batched_and_padding():
    rng = np.random.default_rng(0)
    n = rng.integers(1, 30, size=(50, 8)).astype(float)
    s = rng.binomial(n.astype(int), 0.4).astype(float)
    est, se, df = cr2_from_sizes_sums(n, s)
    for r in range(50):
        e1, s1, d1 = cr2_from_sizes_sums(n[r], s[r])
        assert (est[r], se[r], df[r]) == pytest.approx((e1, s1, d1), rel=1e-12)
    padded = cr2_from_sizes_sums(np.concatenate([n[0], [0, 0]]), np.concatenate([s[0], [0, 0]]))
    assert padded == pytest.approx((est[0], se[0], df[0]), rel=1e-12)


def test_cr2_balanced_df_is_g_minus_1():
    _, _, df = cr2_from_sizes_sums([5, 5, 5, 5, 5, 5], [1, 2, 0, 5, 3, 3])
    assert df == pytest.approx(5.0)


# ---- ICC and DEFF -----------------------------------------------------------------------------------------------


def test_icc_anova_hand_computed():
    # clusters [1,1,0], [0,0], [1,1,1,0]: N = 9, G = 3, ybar = 5/9
    ssb = 3 * (2 / 3 - 5 / 9) ** 2 + 2 * (0 - 5 / 9) ** 2 + 4 * (3 / 4 - 5 / 9) ** 2
    msb = ssb / 2
    msw = ((2 - 4 / 3) + 0 + (3 - 9 / 4)) / (9 - 3)
    n0 = (9 - (9 + 4 + 16) / 9) / 2
    expected = (msb - msw) / (msb + (n0 - 1) * msw)
    assert expected == pytest.approx(0.19636, abs=1e-5)
    assert icc_from_sums([3, 2, 4], [2, 0, 3]) == pytest.approx(expected, rel=1e-12)
    y = [1, 1, 0, 0, 0, 1, 1, 1, 0]
    assert stats.icc_anova(y, [0, 0, 0, 1, 1, 2, 2, 2, 2]) == pytest.approx(expected, rel=1e-12)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(1, 8), min_size=2, max_size=8), st.randoms(use_true_random=False))
def test_icc_anova_matches_harness_stats_and_f_oneway(sizes, rnd):
    from scipy.stats import f_oneway

    y = np.array([rnd.choice([0.0, 1.0]) for _ in range(sum(sizes))])
    codes = np.repeat(np.arange(len(sizes)), sizes)
    n, s = suff(y, sizes)
    mine = icc_from_sums(n, s)
    theirs = stats.icc_anova(y, codes)
    if math.isnan(theirs):
        assert math.isnan(mine) or y.min() == y.max()
        return
    assert mine == pytest.approx(theirs, rel=1e-9, abs=1e-12)
    if all(z > 1 for z in sizes):
        groups = [y[codes == g] for g in range(len(sizes))]
        with np.errstate(all="ignore"):
            f = f_oneway(*groups).statistic
        if np.isfinite(f):
            n0 = (y.size - sum(z * z for z in sizes) / y.size) / (len(sizes) - 1)
            assert mine == pytest.approx((f - 1) / (f + n0 - 1), rel=1e-9, abs=1e-12)


def test_design_effect_hand_computed():
    # sizes 2, 4, 6: N = 12, sum n^2 / N = 56/12; mbar 4, cv^2 = (8/3)/16 = 1/6, (1 + cv^2) mbar = 14/3 = 56/12
    assert deff_from_sizes([2, 4, 6], 0.1) == pytest.approx(1 + (56 / 12 - 1) * 0.1, rel=1e-12)
    y = [1, 0, 1, 1, 0, 0, 1, 1, 1, 0, 0, 0]
    cl = [0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2]
    d = stats.design_effect(y, cl)
    n, s = suff(y, [2, 4, 6])
    assert deff_from_sizes(n, max(icc_from_sums(n, s), 0.0)) == pytest.approx(d["deff"], rel=1e-12)
    diag = design_diagnostics(n, s, y=y, cluster=cl, position=list(range(12)))
    assert diag["deff"] == pytest.approx(d["deff"], rel=1e-12)
    assert diag["n_eff"] == pytest.approx(d["n_eff"], rel=1e-12)
    assert diag["cv_sizes"] == pytest.approx(math.sqrt(1 / 6), rel=1e-12)
    assert diag["lag1_autocorrelation"] == pytest.approx(stats.lag1_autocorrelation(y, cl), rel=1e-12)
    assert diag["share_chunks_top10pct_docs"] == pytest.approx(6 / 12)  # ceil(0.3) = 1 document, the largest


def test_lag1_hand_computed():
    # doc A: 1 1 0 0 (residuals +-1/2), doc B: 1 0 1 (mean 2/3): numerator 1/4 - 4/9, denominator 1 + 6/9
    y = [1, 1, 0, 0, 1, 0, 1]
    cl = [0, 0, 0, 0, 1, 1, 1]
    n, s = suff(y, [4, 3])
    diag = design_diagnostics(n, s, y=y, cluster=cl, position=[0, 1, 2, 3, 0, 1, 2])
    assert diag["lag1_autocorrelation"] == pytest.approx((1 / 4 - 4 / 9) / (1 + 6 / 9), rel=1e-12)


# ---- batched kernels against the single-sample functions ------------------------------------------------------


def test_replicate_se_matches_cr2_on_resampled_data():
    rng = np.random.default_rng(11)
    n = rng.integers(1, 15, size=6).astype(float)
    s = rng.binomial(n.astype(int), 0.5).astype(float)
    idx = rng.integers(0, 6, size=(20, 6))
    nb, sb = n[idx], s[idx]
    pb = sb.sum(-1) / nb.sum(-1)
    se = replicate_cr2_se(nb.copy(), sb, pb, nb.sum(-1))
    for b in range(20):
        y = np.concatenate([np.r_[np.ones(int(s[j])), np.zeros(int(n[j] - s[j]))] for j in idx[b]])
        cl = np.repeat(np.arange(6), n[idx[b]].astype(int))  # each draw its own cluster
        if np.unique(y).size < 2:
            assert se[b] == 0
            continue
        assert se[b] == pytest.approx(stats.cr2(y, cl).se, rel=1e-9)


def test_quantiles7_matches_numpy_and_handles_inf():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 999))
    lo, hi = quantile7_lastaxis(x, (0.025, 0.975))
    np.testing.assert_allclose(lo, np.quantile(x, 0.025, axis=1))
    np.testing.assert_allclose(hi, np.quantile(x, 0.975, axis=1))
    z = np.r_[np.full(990, 0.0), np.full(9, np.inf)]
    assert quantile7_lastaxis(z[None], (0.975,))[0][0] == 0.0
    z = np.r_[np.full(5, -np.inf), np.arange(94.0)]
    assert quantile7_lastaxis(z[None], (0.025,))[0][0] == -np.inf


def test_bootstrap_t_agrees_with_cr2_on_a_large_balanced_sample():
    rng = np.random.default_rng(5)
    ns = np.full((1, 60), 50)
    ss = rng.binomial(ns, rng.beta(2, 3, size=(1, 60)))
    out = _sample_intervals(ns, ss, None, Resamples(np.random.default_rng(1), 1999), 0.95, 0.0, 1e9)
    for a, b in (("bootstrap_t", "cr2"), ("bootstrap_percentile", "cr2"), ("macro_boot_t", "cluster_t")):
        wa = out[a][1][0] - out[a][0][0]
        wb = out[b][1][0] - out[b][0][0]
        assert wa == pytest.approx(wb, rel=0.12)


# ---- simulations ------------------------------------------------------------------------------------------------


def icc0_population(seed=123, d=1000):
    rng = np.random.default_rng(seed)
    n = rng.integers(20, 61, d)
    return Population.from_arrays(n, rng.binomial(n, 0.3), [f"t{i % 10}" for i in range(d)])


def test_iid_covers_nominal_when_icc_is_zero():
    pop = icc0_population()
    assert abs(icc_from_sums(pop.n, pop.s)) < 0.01
    res = study_design(pop, "srs", k=20, reps=2000, b=199, seed=1)
    assert abs(res.rows["iid_wald"]["coverage"] - 0.95) <= 0.015
    assert abs(res.rows["cr2"]["coverage"] - 0.95) <= 0.015
    assert res.rows["iid_wald"]["mc_margin"] == pytest.approx(
        1.96 * math.sqrt(res.rows["iid_wald"]["coverage"] * (1 - res.rows["iid_wald"]["coverage"]) / 2000)
    )


def test_iid_fails_and_cr2_holds_with_icc_03_and_heavy_tailed_sizes():
    rng = np.random.default_rng(7)
    d = 1000
    n = np.minimum(np.ceil(5 * (rng.pareto(1.1, d) + 1)), 4000).astype(int)  # Pareto tail, index 1.1
    rate = rng.beta(0.7, 0.7 * 0.7 / 0.3, d)  # mean 0.3, ICC 1 / (a + b + 1) = 0.3
    pop = Population.from_arrays(n, rng.binomial(n, rate))
    assert 0.2 < icc_from_sums(pop.n, pop.s) < 0.4
    res = study_design(pop, "srs", k=20, reps=2000, b=199, seed=1)
    assert res.rows["iid_wald"]["coverage"] < 0.60
    assert res.rows["chunk_bootstrap"]["coverage"] < 0.60
    assert res.rows["cr2"]["coverage"] > 0.80
    assert res.rows["cluster_t"]["coverage"] > 0.90


def test_study_is_seeded_and_independent_of_threads():
    pop = icc0_population(d=300)
    a = study_design(pop, "srs", k=10, reps=300, b=99, seed=4, threads=1, block_elements=20_000)
    b = study_design(pop, "srs", k=10, reps=300, b=99, seed=4, threads=2, block_elements=20_000)
    c = study_design(pop, "srs", k=10, reps=300, b=99, seed=5, threads=2, block_elements=20_000)
    assert a.rows == b.rows
    assert a.rows != c.rows


def test_two_stage_design_and_skips():
    pop = icc0_population(d=400)
    res = study_design(pop, "two-stage", types=4, per_type=3, reps=600, b=99, seed=2)
    assert res.k == 12 and res.note["H"] == 10
    assert 0.9 <= res.rows["twostage_micro"]["coverage"] <= 1.0
    assert {"twostage_macro_fpc", "cr2", "bootstrap_t_fpc"} <= set(res.rows)
    small = Population.from_arrays([5] * 12, [1] * 12, ["a"] * 6 + ["b"] * 6)
    assert "skipped" in study_design(small, "two-stage", types=3, per_type=2, reps=20).note
    assert "skipped" in study_design(small, "srs", k=50, reps=20).note


# ---- files, plots, errors --------------------------------------------------------------------------------------


def write_population(folder: Path, pop: Population) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps({"system": "bm25", "doc_id": d, "doc_type": t, "n": int(n), "s": int(s), "rate": s / n})
        for d, t, n, s in zip(pop.doc_ids, pop.doc_types, pop.n, pop.s, strict=True)
    ]
    (folder / "per_document.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_run_coverage_writes_files_and_renders(tmp_path):
    from rich.console import Console

    folder = write_population(tmp_path / "ki", icc0_population(d=200))
    from harness.report.study_plots import coverage_figures

    res = run_coverage(folder, reps=200, ks=(5, 10), types=4, per_type=3, b=99, seed=0, plots=coverage_figures)
    names = {Path(f).name for f in res.files}
    assert names == {
        "coverage.json",
        "coverage.csv",
        "coverage_vs_k.svg",
        "coverage_vs_k.png",
        "width_vs_k.svg",
        "width_vs_k.png",
    }
    assert (folder / "coverage_vs_k.svg").read_text().lstrip().startswith("<?xml")
    assert (folder / "width_vs_k.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads((folder / "coverage.json").read_text())
    got = [(d["design"], d["K"]) for d in data["designs"]]
    assert got == [("srs", 5), ("srs", 10), ("two-stage", 12), ("pps", 5), ("pps", 10)]
    assert data["population"]["documents"] == 200
    con = Console(record=True, width=160)
    con.print(res)
    assert "95 % coverage, srs K=5" in con.export_text()


def test_load_population_errors(tmp_path):
    with pytest.raises(HarnessInputError, match="not found"):
        load_population(tmp_path)
    (tmp_path / "per_document.jsonl").write_text('{"system": "bm25", "doc_id": "a", "n": 2, "s": 3}\n')
    with pytest.raises(HarnessInputError, match=r"per_document.jsonl:1: record a: field n/s"):
        load_population(tmp_path)
    (tmp_path / "per_document.jsonl").write_text('{"system": "bm25", "doc_id": "a", "n": 2, "s": 1}\n')
    with pytest.raises(HarnessInputError, match="system 'tfidf' not found"):
        load_population(tmp_path, system="tfidf")
    with pytest.raises(HarnessInputError, match="--reps"):
        run_coverage(tmp_path, reps=5)


def test_load_coverage_round_trip(tmp_path):
    from harness.studies.coverage import load_coverage

    pop = icc0_population(d=100)
    res = run_coverage(pop, reps=50, ks=(5,), types=0, b=39, out_dir=tmp_path, plots=False)
    back = load_coverage(tmp_path / "coverage.json")
    assert back.designs[0].rows == json.loads(json.dumps(res.designs[0].rows))
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(HarnessInputError, match="not a coverage.json"):
        load_coverage(tmp_path / "bad.json")


# ---- the registry drives the study; populations from CSV ----------------------------------------------------------


def test_study_methods_come_from_the_registry():
    from harness.stats.methods import DEFAULTS, INTERVALS, display_order

    registry = [m for m in METHODS if m in INTERVALS]
    assert registry == list(display_order())
    assert set(METHODS) - set(INTERVALS) == {"chunk_bootstrap", "macro_boot_t", "twostage_micro", "twostage_macro"}
    res = study_design(icc0_population(d=200), "srs", k=8, reps=60, b=39, seed=0)
    binary = {m.name for m in INTERVALS.values() if m.applies_to("binary") and m.design == "srs"}
    assert binary | {"chunk_bootstrap", "macro_boot_t"} == {r["method"] for r in res.rows.values()}
    assert [k for k, r in res.rows.items() if r["default"]] == [DEFAULTS["binary"]]
    assert all(r["infinite_share"] == 0.0 for r in res.rows.values())
    for name, m in INTERVALS.items():  # an FPC row exactly for the methods that take an FPC
        if name in binary:
            assert (name + "_fpc" in res.rows) == (m.fpc is not None), name


def test_population_from_csv_hits_and_y(tmp_path):
    f = tmp_path / "pop.csv"
    f.write_text("doc_id,hit,doc_type\na,1,ley\na,0,ley\nb,0,aviso\nc,1,ley\nc,1,ley\nc,0,ley\n", "utf-8")
    pop = load_population(f)
    assert (pop.doc_ids, pop.n.tolist(), pop.s.tolist()) == (["a", "b", "c"], [2, 1, 3], [1, 0, 2])
    assert pop.doc_types == ["ley", "aviso", "ley"] and pop.outcome == "binary" and pop.system == "pop"
    g = tmp_path / "rr.csv"
    g.write_text("doc_id,y\na,0.5\na,1\nb,0.25\n", "utf-8")
    pop = load_population(g, system="rr")
    assert pop.outcome == "unit" and pop.s.tolist() == [1.5, 0.25] and pop.ss.tolist() == [1.25, 0.0625]
    assert pop.micro == pytest.approx(1.75 / 3) and pop.doc_types == ["unknown", "unknown"]
    g.write_text("doc_id,y\na,2\nb,-1\n", "utf-8")
    assert load_population(g).outcome == "continuous"


@pytest.mark.parametrize(
    "text,match",
    [
        ("doc,hit\na,1\n", r"pop.csv:1: header: need doc_id"),
        ("doc_id,hit,y\na,1,1\n", r"exactly one of hit / y"),
        ("doc_id,hit\na,1\nb,2\n", r"pop.csv:3: record b: field hit: must be 0 or 1"),
        ("doc_id,y\na,nan\n", r"pop.csv:2: record a: field y: not a finite number"),
        ("doc_id,y\na\n", r"pop.csv:2: has 1 fields"),
        ("doc_id,hit,doc_type\na,1,ley\na,0,aviso\n", r"pop.csv:3: record a: field doc_type"),
        ("doc_id,hit\n", r"no data rows"),
    ],
)
def test_population_csv_errors_name_file_line_record_field(tmp_path, text, match):
    f = tmp_path / "pop.csv"
    f.write_text(text, "utf-8")
    with pytest.raises(HarnessInputError, match=match):
        load_population(f)


def test_continuous_population_runs_the_methods_that_apply(tmp_path):
    rng = np.random.default_rng(2)
    rows = ["doc_id,y"] + [f"d{i},{rng.choice([0, 1, 0.5, 1 / 3, 0.25])}" for i in rng.integers(0, 120, 2400)]
    f = tmp_path / "rr.csv"
    f.write_text("\n".join(rows) + "\n", "utf-8")
    res = run_coverage(f, reps=200, ks=(10,), types=0, b=49, seed=1, plots=False)
    assert res.files == []  # a CSV population writes nothing unless --out is given
    rows = res.designs[0].rows
    assert "chunk_bootstrap" not in rows  # needs a binary outcome
    assert {"cr2", "cr2_logit", "cluster_t", "iid_wald_effective"} <= set(rows)
    # the unit default is CR2 on the logit scale since the evidence's vector populations use `use` (issue 29)
    assert rows["cr2_logit"]["default"] and not rows["cr2"]["default"] and res.population["outcome"] == "unit"
    assert 0.8 < rows["cr2"]["coverage"] <= 1.0


def test_rendering_escapes_the_system_name():
    """A system name is input: rich markup in it is shown literally, not interpreted (failed before the fix: the
    title read "Population: bm25 known-item outcomes", the brackets swallowed)."""
    from rich.console import Console

    pop = icc0_population(d=60)
    pop.system = "[bold]bm25[/bold]"
    res = run_coverage(pop, reps=20, ks=(5,), types=0, b=39, plots=False)
    con = Console(record=True, width=160)
    con.print(res)
    assert "Population: [bold]bm25[/bold]" in con.export_text()
