"""Hypothesis property tests of harness.stats: invariances, containment, degenerate data, Holm monotonicity."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from harness.stats import (
    all_intervals,
    bootstrap_intervals,
    cluster_t,
    cr2,
    design_effect,
    holm,
    icc_anova,
    iid_wald,
    paired,
    randomization_test,
)

FAST = settings(max_examples=30, deadline=None)
B = 200
FIELDS = ("estimate", "se", "df", "lower", "upper")

unit_values = st.one_of(st.just(0.0), st.just(1.0), st.floats(0.0, 1.0, allow_nan=False, width=32))


@st.composite
def clustered(draw, weighted=None, min_rows=2, max_rows=30):
    n_rows = draw(st.integers(min_rows, max_rows))
    n_clusters = draw(st.integers(2, min(8, n_rows)))
    # every cluster gets at least one row
    cl = list(range(n_clusters)) + draw(st.lists(st.integers(0, n_clusters - 1), min_size=n_rows - n_clusters,
                                                 max_size=n_rows - n_clusters))  # fmt: skip
    y = draw(st.lists(unit_values, min_size=n_rows, max_size=n_rows))
    use_w = draw(st.booleans()) if weighted is None else weighted
    w = draw(st.lists(st.integers(1, 5), min_size=n_rows, max_size=n_rows)) if use_w else None
    perm_seed = draw(st.integers(0, 2**32 - 1))
    return np.array(y, float), np.array(cl), None if w is None else np.array(w, float), perm_seed


def _same(a, b, tol=1e-12):
    for f in FIELDS:
        x, y = getattr(a, f), getattr(b, f)
        if x is None or y is None:
            assert x is y, f
        else:
            assert x == pytest.approx(y, abs=tol, rel=tol), f


def _all(y, cl, w):
    out = {"cr2": cr2(y, cl, weights=w), "cr2_logit": cr2(y, cl, weights=w, transform="logit")}
    out.update(bootstrap_intervals(y, cl, weights=w, B=B, seed=1))
    if w is None:
        out["cluster_t"] = cluster_t(y, cl)
        out["iid_wald"] = iid_wald(y)
    return out


@FAST
@given(clustered())
def test_row_permutation_changes_nothing(data):
    y, cl, w, seed = data
    p = np.random.default_rng(seed).permutation(y.size)
    a, b = _all(y, cl, w), _all(y[p], cl[p], None if w is None else w[p])
    for k in a:
        _same(a[k], b[k])
    assert randomization_test(y - 0.5, cl, reps=100, seed=2) == pytest.approx(
        randomization_test(y[p] - 0.5, cl[p], reps=100, seed=2)
    )
    ia, ib = icc_anova(y, cl), icc_anova(y[p], cl[p])
    assert (math.isnan(ia) and math.isnan(ib)) or ia == pytest.approx(ib, abs=1e-9)


@FAST
@given(clustered())
def test_relabelling_clusters_changes_nothing(data):
    y, cl, w, seed = data
    G = int(cl.max()) + 1
    names = np.random.default_rng(seed).permutation(G)
    relabelled = np.array([f"doc-{names[c]:04d}" for c in cl])
    a, b = _all(y, cl, w), _all(y, relabelled, w)
    for k in a:
        _same(a[k], b[k])
    assert design_effect(y, cl)["deff"] == pytest.approx(design_effect(y, relabelled)["deff"], abs=1e-9)
    assert randomization_test(y - 0.4, cl, reps=50, seed=0) == pytest.approx(
        randomization_test(y - 0.4, relabelled, reps=50, seed=0)
    )


@FAST
@given(clustered(weighted=False), st.lists(unit_values, min_size=30, max_size=30))
def test_paired_results_do_not_depend_on_question_order(data, other):
    y_a, cl, _, seed = data
    y_b = np.array(other[: y_a.size])
    p = np.random.default_rng(seed).permutation(y_a.size)
    for m in ("cr2", "bootstrap_t", "cluster_t"):
        _same(paired(y_a, y_b, cl, method=m, B=B), paired(y_a[p], y_b[p], cl[p], method=m, B=B))
    d = y_b - y_a
    assert randomization_test(d, cl, reps=64) == randomization_test(d[p], cl[p], reps=64)


@FAST
@given(clustered())
def test_intervals_contain_the_estimate(data):
    y, cl, w, _ = data
    for name, iv in all_intervals(y, cl, weights=w, B=B).items():
        assert iv.lower <= iv.estimate <= iv.upper, name
        assert not any(math.isnan(v) for v in (iv.estimate, iv.lower, iv.upper)), name
        assert iv.n == y.size


@FAST
@given(clustered(), st.floats(-3, 3, allow_nan=False))
def test_weight_scale_and_shift(data, shift):
    y, cl, w, _ = data
    assume(w is not None)
    a = cr2(y, cl, weights=w, clip=False)
    b = cr2(y + shift, cl, weights=w * 13.0, clip=False)
    assert b.estimate == pytest.approx(a.estimate + shift, abs=1e-9)
    assert b.se == pytest.approx(a.se, abs=1e-9)
    assert b.df == pytest.approx(a.df, rel=1e-9)


@FAST
@given(clustered(), st.sampled_from([0.0, 0.3, 1.0, 7.25]))
def test_constant_y_gives_zero_width_without_nan(data, value):
    _, cl, w, _ = data
    y = np.full(cl.size, value)
    ivs = all_intervals(y, cl, weights=w, B=B)
    kg = ivs.pop("korn_graubard", None)
    for name, iv in ivs.items():
        assert (iv.lower, iv.estimate, iv.upper) == (value, value, value), name
        assert iv.se in (None, 0.0) or iv.se == 0.0, name
    if kg is not None:  # all 0 or all 1: Clopper-Pearson with design effect 1, not a zero-width interval
        assert value in (0.0, 1.0) and kg.estimate == value and kg.se == 0.0 and kg.width > 0
        assert (kg.lower == 0.0) if value == 0.0 else (kg.upper == 1.0)
    assert math.isnan(icc_anova(y, cl))
    assert design_effect(y, cl)["deff"] == 1.0
    assert randomization_test(y - value, cl) == 1.0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0.0, 1.0, allow_nan=False), max_size=20))
def test_holm_monotone_and_at_least_raw(p):
    adj = holm(p)
    assert len(adj) == len(p)
    for raw, a in zip(p, adj, strict=True):
        assert raw <= a <= 1.0
    order = np.argsort(p, kind="stable")
    assert all(adj[order[i]] <= adj[order[i + 1]] for i in range(len(p) - 1))
