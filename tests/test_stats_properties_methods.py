"""Hypothesis property tests of the interval methods added to the registry (cr2_logit, cr3, wild_cluster,
korn_graubard): invariance to relabelling and reordering clusters, nesting in the confidence level, and defined,
documented results on degenerate inputs (all-equal outcomes, all 0 / all 1, two clusters, one cluster)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import HarnessInputError
from harness.stats.methods import INTERVALS

METHODS = ("cr2_logit", "cr3", "wild_cluster", "korn_graubard")
FAST = settings(max_examples=25, deadline=None)
B = 400


@st.composite
def clustered_binary(draw, min_clusters=2, max_clusters=14):
    g = draw(st.integers(min_clusters, max_clusters))
    sizes = draw(st.lists(st.integers(1, 5), min_size=g, max_size=g))
    cl = np.repeat(np.arange(g), sizes)
    y = np.array(draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=cl.size, max_size=cl.size)))
    return y, cl, draw(st.integers(0, 2**32 - 1))


def _compute(name, y, cl, level=0.95):
    return INTERVALS[name].compute(y, cl, level=level, B=B, seed=7)


@FAST
@given(clustered_binary(), st.sampled_from(METHODS))
def test_relabelling_and_reordering_clusters_changes_nothing(data, name):
    y, cl, seed = data
    rng = np.random.default_rng(seed)
    names = rng.permutation(int(cl.max()) + 1)
    relabelled = np.array([f"doc-{names[c]:03d}" for c in cl])
    p = rng.permutation(y.size)
    a, b, c = _compute(name, y, cl), _compute(name, y, relabelled), _compute(name, y[p], relabelled[p])
    for other in (b, c):
        assert (other.lower, other.estimate, other.upper) == pytest.approx(
            (a.lower, a.estimate, a.upper), rel=1e-12, abs=1e-12
        ), name


@FAST
@given(clustered_binary(min_clusters=3), st.sampled_from(METHODS))
def test_higher_level_gives_a_nested_wider_interval(data, name):
    y, cl, _ = data
    ivs = [_compute(name, y, cl, level) for level in (0.5, 0.8, 0.9, 0.95, 0.99)]
    for lo, hi in zip(ivs, ivs[1:], strict=False):
        assert hi.lower <= lo.lower + 1e-12 and lo.upper <= hi.upper + 1e-12, (name, lo, hi)
    for iv in ivs:
        assert iv.lower <= iv.estimate <= iv.upper and not math.isnan(iv.lower + iv.upper), name


@FAST
@given(st.lists(st.integers(1, 5), min_size=2, max_size=10), st.sampled_from([0.0, 1.0, 0.3]))
def test_all_equal_outcomes(sizes, value):
    cl = np.repeat(np.arange(len(sizes)), sizes)
    y = np.full(cl.size, value)
    for name in METHODS:
        m = INTERVALS[name]
        if not m.applies_to("binary" if value in (0.0, 1.0) else "unit"):
            with pytest.raises(HarnessInputError):
                _compute(name, y, cl)
            continue
        iv = _compute(name, y, cl)
        if name == "korn_graubard":  # Clopper-Pearson with design effect 1: [0, u] or [l, 1], never zero width
            assert iv.width > 0 and (iv.lower == 0.0 if value == 0.0 else iv.upper == 1.0)
        else:  # zero residuals: the degenerate [value, value]
            assert (iv.lower, iv.estimate, iv.upper) == (value, value, value), name


def test_two_clusters_are_defined_and_one_cluster_is_refused():
    y = np.array([1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0])
    cl = np.array([0, 0, 0, 1, 1, 1, 1])
    for name in METHODS:
        iv = _compute(name, y, cl)
        assert iv.n_clusters == 2 and iv.lower <= iv.estimate <= iv.upper, name
        assert 0.0 <= iv.lower and iv.upper <= 1.0, name  # clipped or bounded by construction
        with pytest.raises(HarnessInputError, match="at least 2 clusters"):
            _compute(name, y, np.zeros(7))
