"""The interval-method registry (harness.stats.methods): one table that all_intervals, paired, the report's display
order and the coverage study read; the default per outcome type in one place; satterthwaite_df."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import HarnessInputError
from harness.stats import all_intervals, cr2, iid_wald_effective, paired, satterthwaite_df
from harness.stats import methods as reg
from harness.stats.batched import ClusterBatch
from harness.stats.paired import paired_methods

RNG = np.random.default_rng(4)
Y = RNG.random(40)
CL = np.repeat(np.arange(8), 5)


def test_registry_fields_and_display_order():
    assert list(reg.INTERVALS)[:7] == [
        "cr2",
        "cr2_logit",
        "bootstrap_percentile",
        "bootstrap_t",
        "cluster_t",
        "iid_wald",
        "iid_wald_effective",
    ]
    order = reg.display_order()
    assert order[:6] == ("cr2", "cr2_logit", "bootstrap_t", "bca", "bootstrap_percentile", "cluster_t")
    in_runs = [name for name in order if reg.INTERVALS[name].in_runs]
    assert in_runs[-2:] == ["iid_wald_effective", "iid_wald"]
    assert order[len(in_runs) :] == ("wu_v3", "wu_v3_logit", "hansen_hurwitz", "hansen_hurwitz_logit")
    assert set(order) == set(reg.INTERVALS)
    for m in reg.INTERVALS.values():
        assert m.kernel is not None and m.interval is not None and m.label, m.name
        assert m.proportion_only == ("continuous" not in m.outcomes)
    assert reg.INTERVALS["cr2_logit"].proportion_only and not reg.INTERVALS["cr2_logit"].paired
    assert reg.INTERVALS["cluster_t"].estimand == "macro"
    assert reg.INTERVALS["iid_wald"].contrast_only and reg.INTERVALS["iid_wald"].fpc == "rows"


def test_defaults_live_in_one_place_and_are_registered():
    assert reg.DEFAULTS == {"binary": "cr2", "unit": "cr2_logit", "continuous": "cr2", "paired": "cr2"}
    for outcome, name in reg.DEFAULTS.items():
        assert reg.default_method(outcome) == name
        m = reg.get(name)
        assert m.paired if outcome == "paired" else m.applies_to(outcome)
    with pytest.raises(HarnessInputError, match="outcome"):
        reg.default_method("ordinal")


def test_register_and_get_errors():
    with pytest.raises(ValueError, match="registered twice"):
        reg.register(reg.INTERVALS["cr2"])
    with pytest.raises(ValueError, match="outcomes"):
        reg.register(replace(reg.INTERVALS["cr2"], name="x", outcomes=("ordinal",)))
    with pytest.raises(HarnessInputError, match=r"unknown interval method 'nope' \(known: cr2, cr2_logit"):
        reg.get("nope")


def test_outcome_types():
    assert reg.outcome_type([0, 1, 1]) == "binary"
    assert reg.outcome_type([0, 0.5, 1]) == "unit"
    assert reg.outcome_type([-0.5, 0.5]) == "continuous"


def test_all_intervals_is_every_applicable_registered_method():
    for y in (Y, (Y > 0.5).astype(float), Y * 3 - 1):
        got = all_intervals(y, CL, B=200, seed=3)
        kind = reg.outcome_type(y)
        want = [m.name for m in reg.INTERVALS.values() if m.in_runs and m.applies_to(kind)]
        assert list(got) == want
        for name, iv in got.items():
            again = reg.INTERVALS[name].compute(y, CL, B=200, seed=3)
            assert (iv.lower, iv.upper, iv.estimate) == (again.lower, again.upper, again.estimate), name
    assert "cr2_logit" not in all_intervals(Y * 3 - 1, CL, B=200)


def test_a_new_method_is_one_registry_entry(monkeypatch):
    """Registering a method is all it takes for all_intervals, paired and the display order to offer it."""

    def half_cr2(y, clusters, *, level=0.95, clip=True):
        return replace(cr2(y, clusters, level=level, clip=clip), method="half_cr2")

    def half_kernel(batch: ClusterBatch, level, factors, draws):
        return reg.INTERVALS["cr2"].kernel(batch, level, factors, draws)

    monkeypatch.setitem(reg.INTERVALS, "half_cr2", None)  # removed again after the test
    del reg.INTERVALS["half_cr2"]
    reg.register(reg.IntervalMethod("half_cr2", "toy", half_cr2, half_kernel, order=99))
    assert "half_cr2" in all_intervals(Y, CL, B=200)
    assert paired(Y, Y[::-1], CL, method="half_cr2").method == "paired_half_cr2"
    assert reg.display_order()[-1] == "half_cr2"


def test_paired_reads_the_registry():
    assert paired_methods()[:5] == ("cr2", "bootstrap_percentile", "bootstrap_t", "cluster_t", "iid_wald")
    assert paired(Y, Y[::-1], CL).method == "paired_cr2"  # the registry's paired default
    with pytest.raises(HarnessInputError, match=r"paired: method: must be one of cr2, bootstrap_percentile"):
        paired(Y, Y[::-1], CL, method="cr2_logit")
    with pytest.raises(HarnessInputError, match="cluster_t: weights: this method takes no weights"):
        paired(Y, Y[::-1], CL, method="cluster_t", weights=np.ones(40))
    with pytest.raises(HarnessInputError, match="clusters"):
        paired(Y, Y[::-1], CL[:-1], method="iid_wald")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=9), st.randoms(use_true_random=False), st.booleans())
def test_satterthwaite_df_is_the_cr2_df_of_any_outcome(sizes, rnd, weighted):
    cl = np.repeat(np.arange(len(sizes)), sizes)
    w = np.array([rnd.choice([1.0, 2.0, 0.5]) for _ in cl]) if weighted else None
    df = satterthwaite_df(cl, weights=w)
    if len(sizes) < 2:
        assert df is None
        return
    for y in ([float(i % 2) for i in range(cl.size)], [rnd.random() for _ in cl]):
        assert df == pytest.approx(cr2(y, cl, weights=w).df, rel=1e-12)
    assert df > 0
    if not weighted:  # unweighted CR2 df never exceed G - 1 (equality for equal sizes); weighted ones can
        assert df <= len(sizes) - 1 + 1e-9


def test_satterthwaite_df_balanced_and_empty():
    assert satterthwaite_df(np.repeat(np.arange(6), 4)) == pytest.approx(5.0)
    assert satterthwaite_df([]) is None
    assert satterthwaite_df(["a", "a"]) is None


def test_iid_wald_effective_fpc_scales_the_se():
    a = iid_wald_effective(Y, CL, clip=False)
    b = iid_wald_effective(Y, CL, fpc=32, clip=False)
    assert b.se == pytest.approx(a.se * math.sqrt(1 - 8 / 32), rel=1e-12)
    assert b.extras["fpc_factor"] == pytest.approx(0.75)
    with pytest.raises(HarnessInputError, match="fpc"):
        iid_wald_effective(Y, CL, fpc=5)
