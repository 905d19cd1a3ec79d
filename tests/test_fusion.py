"""Fusion: golden values equal to ranx (written as formulas), a live ranx check, our own rules, invariants."""

from __future__ import annotations

import copy
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import HarnessInputError
from harness.metrics import MetricError
from harness.retrieve.fusion import FusionSpec, FusionSpecError, minmax, parse_fusion, rrf, weighted_fusion, wsum
from harness.retrieve.fusion.comb_mnz import comb_mnz

# No ties inside a list, no ties in any fused result; the smallest item of each list is in the other list too.
BM25 = [("a", 12.5), ("b", 10.0), ("c", 7.25), ("d", 3.0)]
VEC = [("c", -3.0), ("a", -5.0), ("e", -9.0), ("d", -12.0)]  # negated Hamming distances

RRF_60 = {
    "a": 1 / (60 + 1) + 1 / (60 + 2),
    "c": 1 / (60 + 3) + 1 / (60 + 1),
    "d": 1 / (60 + 4) + 1 / (60 + 4),
    "b": 1 / (60 + 2),
    "e": 1 / (60 + 3),
}
BM25_NORM = {"a": 1.0, "b": (10.0 - 3.0) / (12.5 - 3.0), "c": (7.25 - 3.0) / (12.5 - 3.0), "d": 0.0}
VEC_NORM = {"c": 1.0, "a": (-5.0 + 12.0) / (-3.0 + 12.0), "e": (-9.0 + 12.0) / (-3.0 + 12.0), "d": 0.0}


def wsum_expected(w):
    ids = set(BM25_NORM) | set(VEC_NORM)
    return {i: w * BM25_NORM.get(i, 0.0) + (1 - w) * VEC_NORM.get(i, 0.0) for i in ids}


def ranked(d: dict[str, float]) -> list[str]:
    return sorted(d, key=lambda i: (-d[i], i))


# ---------------------------------------------------------------------------------------------------------------
# Golden values (ranx), written as formulas


def test_golden_rrf_k60():
    out = rrf([BM25, VEC], k=60)
    assert [i for i, _ in out] == ["a", "c", "d", "b", "e"]
    assert dict(out) == pytest.approx(RRF_60, rel=1e-15)


def test_golden_rrf_three_lists_k30_depth3():
    third = [("e", 0.9), ("b", 0.8), ("f", 0.7), ("a", 0.1)]
    out = rrf([BM25, VEC, third], k=30, depth=3)  # cut: abc / cae / ebf
    expected = {
        "a": 1 / (30 + 1) + 1 / (30 + 2),
        "b": 1 / (30 + 2) + 1 / (30 + 2),
        "c": 1 / (30 + 3) + 1 / (30 + 1),
        "e": 1 / (30 + 3) + 1 / (30 + 1),
        "f": 1 / (30 + 3),
    }
    assert dict(out) == pytest.approx(expected, rel=1e-15)
    # c and e tie exactly (ranks 1 and 3 each): the tie rule puts c first
    assert [i for i, _ in out] == ["a", "c", "e", "b", "f"]  # 1/33 + 1/31 > 2/32


@pytest.mark.parametrize(
    ("w", "order"),
    [(0.25, ["c", "a", "e", "b", "d"]), (0.5, ["a", "c", "b", "e", "d"]), (0.75, ["a", "c", "b", "e", "d"])],
)
def test_golden_weighted_fusion(w, order):
    out = weighted_fusion(BM25, VEC, w)
    assert [i for i, _ in out] == order
    assert dict(out) == pytest.approx(wsum_expected(w), rel=1e-15, abs=1e-15)


def test_golden_weighted_fusion_values_spelled_out():
    out = dict(weighted_fusion(BM25, VEC, 0.25))
    assert out["c"] == pytest.approx(0.25 * (7.25 - 3.0) / (12.5 - 3.0) + 0.75 * 1, rel=1e-15)
    assert out["a"] == pytest.approx(0.25 * 1 + 0.75 * (-5.0 + 12.0) / (-3.0 + 12.0), rel=1e-15)
    assert out["e"] == pytest.approx(0.75 * (-9.0 + 12.0) / (-3.0 + 12.0), rel=1e-15)  # vector only
    assert out["b"] == pytest.approx(0.25 * (10.0 - 3.0) / (12.5 - 3.0), rel=1e-15)  # bm25 only
    assert out["d"] == 0.0  # last in both


# ---------------------------------------------------------------------------------------------------------------
# Live ranx


@pytest.fixture(scope="module")
def ranx_fuse():
    ranx = pytest.importorskip("ranx")

    def fuse(lists, **kw):
        runs = [ranx.Run({"q": dict(lst)}) for lst in lists]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return dict(ranx.fuse(runs=runs, **kw).to_dict()["q"])

    return fuse


def test_live_ranx_agrees_without_ties(ranx_fuse):
    got = ranx_fuse([BM25, VEC], method="rrf", params={"k": 60})
    assert got == pytest.approx(dict(rrf([BM25, VEC], k=60)), rel=1e-12)
    assert ranked(got) == [i for i, _ in rrf([BM25, VEC], k=60)]
    for w in (0.25, 0.5, 0.75):
        got = ranx_fuse([BM25, VEC], method="wsum", norm="min-max", params={"weights": [w, 1 - w]})
        ours = weighted_fusion(BM25, VEC, w)
        assert got == pytest.approx(dict(ours), rel=1e-12, abs=1e-15)
        assert ranked(got) == [i for i, _ in ours]
    # depth: ranx on lists cut by hand equals ours with depth
    got = ranx_fuse([BM25[:3], VEC[:3]], method="rrf", params={"k": 60})
    assert got == pytest.approx(dict(rrf([BM25, VEC], k=60, depth=3)), rel=1e-12)


def test_live_ranx_differs_on_constant_lists(ranx_fuse):
    const = [("x", 2.0), ("y", 2.0)]
    got = ranx_fuse([BM25, const], method="wsum", norm="min-max", params={"weights": [0.5, 0.5]})
    assert got["x"] == 0.0 and got["y"] == 0.0  # ranx: a constant list normalises to 0
    ours = dict(wsum([BM25, const], [0.5, 0.5]))
    assert ours["x"] == 0.5 * 1.0 and ours["y"] == 0.5 * 1.0  # ours: to 1


# ---------------------------------------------------------------------------------------------------------------
# Our rules


def test_minmax_constant_single_empty():
    assert minmax([("a", 3.0), ("b", 3.0)]) == {"a": 1.0, "b": 1.0}
    assert minmax([("a", -7.5)]) == {"a": 1.0}
    assert minmax([]) == {}
    assert minmax([("a", 2.0), ("b", 1.0), ("c", 0.0)]) == {"a": 1.0, "b": 1 / 2, "c": 0.0}
    assert minmax([("a", 1e308), ("b", -1e308)]) == {"a": 1.0, "b": 0.0}  # max - min overflows
    with pytest.raises(ValueError):
        minmax([("a", float("inf")), ("b", 0.0)])
    with pytest.raises(MetricError):
        minmax([("a", float("nan"))])


def test_one_result_list_and_item_in_one_list_only():
    out = dict(weighted_fusion([("a", 5.0)], [("b", -3.0), ("c", -4.0)], 0.25))
    assert out == {"a": 0.25 * 1.0, "b": 0.75 * 1.0, "c": 0.75 * 0.0}
    assert dict(rrf([[("a", 5.0)], [("b", 1.0), ("a", 0.0)]])) == {
        "a": 1 / (60 + 1) + 1 / (60 + 2),
        "b": 1 / (60 + 1),
    }


def test_duplicate_items_in_one_list_keep_the_best_occurrence():
    dup = [("a", 5.0), ("b", 4.0), ("a", 1.0), ("c", 3.0)]
    assert dict(rrf([dup], k=0)) == {"a": 1 / 1, "b": 1 / 2, "c": 1 / 3}  # c at rank 3, not 4
    assert minmax(dup) == {"a": 1.0, "b": (4.0 - 3.0) / (5.0 - 3.0), "c": 0.0}
    assert rrf([dup]) == rrf([[("a", 5.0), ("b", 4.0), ("c", 3.0)]])


def test_depth_cut_before_fusion_and_normalisation():
    assert dict(rrf([BM25, VEC], depth=1)) == {"a": 1 / (60 + 1), "c": 1 / (60 + 1)}
    assert rrf([BM25, VEC], depth=1) == [("a", 1 / 61), ("c", 1 / 61)]  # tie: id ascending
    # min-max over the cut list: bm25 top 2 = a (12.5), b (10.0)
    out = dict(weighted_fusion(BM25, VEC, 0.5, depth=2))
    assert out == {"a": 0.5 * 1 + 0.5 * 0, "b": 0.5 * 0, "c": 0.5 * 1}
    assert rrf([BM25, VEC], depth=0) == []


def test_rrf_k_edge_values():
    assert dict(rrf([BM25, VEC], k=0)) == pytest.approx(
        {"a": 1 / 1 + 1 / 2, "c": 1 / 3 + 1 / 1, "d": 1 / 4 + 1 / 4, "b": 1 / 2, "e": 1 / 3}, rel=1e-15
    )
    big = rrf([BM25, VEC], k=1e9)
    assert [i for i, _ in big] == ["a", "c", "d", "b", "e"]  # in both lists first, then by rank
    assert big[0][1] == pytest.approx(1 / (1e9 + 1) + 1 / (1e9 + 2), rel=1e-15)
    for bad in (-1, -1e-9, float("nan"), float("inf"), "60", True):
        with pytest.raises(ValueError):
            rrf([BM25], k=bad)


def test_wsum_argument_errors():
    with pytest.raises(ValueError, match="2 weights for 1 lists"):
        wsum([BM25], [0.5, 0.5])
    with pytest.raises(ValueError, match=">= 0"):
        wsum([BM25, VEC], [1.5, -0.5])
    with pytest.raises(ValueError):
        weighted_fusion(BM25, VEC, 1.25)
    assert wsum([], []) == [] and rrf([]) == []


def test_weights_zero_and_one():
    assert [i for i, _ in weighted_fusion(BM25, VEC, 1.0)] == ["a", "b", "c", "d", "e"]  # e scores 0, after d by id
    assert [i for i, _ in weighted_fusion(BM25, VEC, 0.0)] == ["c", "a", "e", "b", "d"]


# ---------------------------------------------------------------------------------------------------------------
# System names


@pytest.mark.parametrize(
    ("name", "canon", "method", "k", "w"),
    [
        ("rrf", "rrf", "rrf", 60.0, None),
        ("rrf:k=60", "rrf", "rrf", 60.0, None),
        ("rrf:k=30", "rrf:k=30", "rrf", 30.0, None),
        ("rrf:k=0", "rrf:k=0", "rrf", 0.0, None),
        ("rrf:k=2.5", "rrf:k=2.5", "rrf", 2.5, None),
        ("w0.25", "w0.25", "wsum", None, 0.25),
        ("w0.5", "w0.5", "wsum", None, 0.5),
        ("w0.75", "w0.75", "wsum", None, 0.75),
        ("w1", "w1", "wsum", None, 1.0),
        ("w0", "w0", "wsum", None, 0.0),
        ("w.3", "w0.3", "wsum", None, 0.3),
    ],
)
def test_fusion_spec_parse(name, canon, method, k, w):
    spec = parse_fusion(name)
    assert (spec.name, spec.method, spec.k, spec.w) == (canon, method, k, w)
    assert FusionSpec.parse(spec.name) == spec
    assert spec.config()["fusion"] == canon and spec.config()["formula"] == spec.formula


@pytest.mark.parametrize(
    "bad", ["rrf:k=-1", "rrf:k=", "rrf:k=abc", "rrf:30", "w1.5", "w-0.1", "W0.5", "wnan", "combsum", ""]
)
def test_fusion_spec_errors(bad):
    with pytest.raises(FusionSpecError) as exc:
        FusionSpec.parse(bad)
    assert isinstance(exc.value, HarnessInputError) and isinstance(exc.value, ValueError)


def test_fusion_spec_callable_and_formula():
    assert parse_fusion("rrf:k=30")([BM25, VEC], depth=3) == rrf([BM25, VEC], k=30, depth=3)
    assert parse_fusion("w0.25").fuse([BM25, VEC], depth=3) == weighted_fusion(BM25, VEC, 0.25, depth=3)
    assert "1/(30 + rank_i(d))" in parse_fusion("rrf:k=30").formula and "Cormack" in parse_fusion("rrf").formula
    assert "0.25*minmax(bm25)(d) + 0.75*minmax(vector)(d)" in parse_fusion("w0.25").formula
    assert parse_fusion("w0.25").config()["params"] == {"weights": [0.25, 0.75]}
    with pytest.raises(ValueError, match="exactly 2 lists"):
        parse_fusion("w0.5")([BM25])


@pytest.mark.parametrize(
    ("name", "method", "inputs", "canon"),
    [
        ("rrf:bm25+mine", "rrf", ("bm25", "mine"), "rrf:bm25+mine"),
        ("rrf:k=10:bm25+mine", "rrf", ("bm25", "mine"), "rrf:k=10:bm25+mine"),
        ("rrf[k=10]:bm25+mine", "rrf", ("bm25", "mine"), "rrf:k=10:bm25+mine"),
        ("rrf:bm25+vector", "rrf", ("bm25", "vector"), "rrf"),
        ("rrf:a+b+c", "rrf", ("a", "b", "c"), "rrf:a+b+c"),
        ("w0.6:bm25+mine", "wsum", ("bm25", "mine"), "w0.6:bm25+mine"),
        ("w0.75", "wsum", ("bm25", "vector"), "w0.75"),
        ("rrf:bm25+vector:binarize=centered", "rrf", ("bm25", "vector:binarize=centered"), None),
        ("rrf: bm25 + mine ", "rrf", ("bm25", "mine"), "rrf:bm25+mine"),
    ],
)
def test_fusion_names_with_inputs(name, method, inputs, canon):
    spec = FusionSpec.parse(name)
    assert (spec.method, spec.inputs) == (method, inputs)
    if canon is not None:
        assert spec.name == canon and FusionSpec.parse(canon) == spec
    assert spec.config()["input_names"] == list(inputs)


def test_short_names_mean_bm25_plus_vector():
    assert FusionSpec.parse("rrf") == FusionSpec.parse("rrf:bm25+vector") == FusionSpec.parse("rrf:k=60:bm25+vector")
    assert FusionSpec.parse("w0.75") == FusionSpec.parse("w0.75:bm25+vector")
    assert "0.6*minmax(bm25)(d) + 0.4*minmax(mine)(d)" in FusionSpec.parse("w0.6:bm25+mine").formula
    assert "over bm25, mine, x" in FusionSpec.parse("rrf:bm25+mine+x").formula


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("w0.5:bm25+mine+x", "exactly 2 inputs"),
        ("w0.5:bm25", "exactly 2 inputs"),
        ("rrf:bm25++mine", "empty input"),
        ("rrf:bm25+", "empty input"),
        ("rrf:k=1:k=2:bm25", "given twice"),
        ("rrf[k=1]:k=2", "given twice"),
        ("rrf:q=1", "q: Extra inputs"),
        ("w0.5:w=0.3", "given in the name"),
        ("rrf:k=nan", "k:"),
        ("rrf:", "empty segment"),
        ("rrf[k=1", "without"),
    ],
)
def test_fusion_name_errors_name_the_problem(bad, message):
    with pytest.raises(FusionSpecError, match=message):
        FusionSpec.parse(bad)


def test_registry_lists_every_method_once():
    from harness.retrieve.fusion import FUSIONS, fusion_method

    assert {"rrf", "wsum", "mnz"} <= set(FUSIONS)
    for method in FUSIONS.values():
        assert method.reference and method.options.model_config.get("extra") == "forbid"
    assert fusion_method("w0.3")[1] == {"w": 0.3} and fusion_method("rrf")[0].name == "rrf"
    assert fusion_method("bm25") is None and fusion_method("rrfx") is None


# ---------------------------------------------------------------------------------------------------------------
# Hypothesis invariants

IDS = st.sampled_from([f"i{n}" for n in range(12)])
SCORES = st.sampled_from([0.0, 0.5, 1.0, 2.0, -3.0, 7.25, -0.5])
LIST = st.lists(st.tuples(IDS, SCORES), max_size=15)
LISTS = st.lists(LIST, min_size=1, max_size=4)


def canonical(out):
    return out == sorted(out, key=lambda p: (-p[1], p[0])) and len({i for i, _ in out}) == len(out)


@settings(max_examples=200, deadline=None)
@given(LISTS, st.sampled_from([0, 1, 60, 1e6]), st.one_of(st.none(), st.integers(0, 15)), st.data())
def test_property_rrf(lists, k, depth, data):
    before = copy.deepcopy(lists)
    out = rrf(lists, k=k, depth=depth)
    assert lists == before
    assert canonical(out)
    assert all(0 < s <= len(lists) / (k + 1) * (1 + 1e-12) for _, s in out)
    assert rrf(data.draw(st.permutations(lists)), k=k, depth=depth) == out  # order of the lists
    shuffled = [data.draw(st.permutations(lst)) for lst in lists]
    assert rrf(shuffled, k=k, depth=depth) == out  # order of the pairs inside a list


@settings(max_examples=100, deadline=None)
@given(LISTS)
def test_property_rrf_large_k_ranks_by_number_of_lists(lists):
    out = rrf(lists, k=1e6)
    n_in = [sum(1 for lst in lists if any(i == j for j, _ in lst)) for i, _ in out]
    assert n_in == sorted(n_in, reverse=True)


@settings(max_examples=200, deadline=None)
@given(LISTS, st.data())
def test_property_wsum(lists, data):
    weights = data.draw(st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.0]), min_size=len(lists), max_size=len(lists)))
    depth = data.draw(st.one_of(st.none(), st.integers(0, 15)))
    before = copy.deepcopy((lists, weights))
    out = wsum(lists, weights, depth=depth)
    assert (lists, weights) == before
    assert canonical(out)
    assert all(0.0 <= s <= sum(weights) + 1e-12 for _, s in out)
    perm = data.draw(st.permutations(range(len(lists))))
    assert wsum([lists[p] for p in perm], [weights[p] for p in perm], depth=depth) == out


@settings(max_examples=200, deadline=None)
@given(LIST)
def test_property_minmax(lst):
    before = copy.deepcopy(lst)
    norm = minmax(lst)
    assert lst == before
    assert set(norm) == {i for i, _ in lst}
    assert all(0.0 <= v <= 1.0 for v in norm.values())
    if norm:
        best = {i: max(s for j, s in lst if j == i) for i in norm}  # duplicates keep their best score
        assert max(norm.values()) == 1.0
        assert min(norm.values()) == (1.0 if len(set(best.values())) == 1 else 0.0)
        assert all((norm[i] < norm[j]) == (best[i] < best[j]) for i in norm for j in norm)


@settings(max_examples=100, deadline=None)
@given(LIST, LIST, st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]))
def test_property_weighted_fusion_is_wsum_with_complementary_weights(b, v, w):
    assert weighted_fusion(b, v, w) == wsum([b, v], [w, 1 - w])
    assert weighted_fusion(b, v, w) == wsum([v, b], [1 - w, w])


# ---------------------------------------------------------------------------------------------------------------
# CombMNZ (Fox & Shaw 1994): golden values equal to ranx's comb_mnz with min-max, written as formulas

MNZ = {
    "a": 2 * (1.0 + (-5.0 + 12.0) / (-3.0 + 12.0)),  # top of bm25, second of vector
    "c": 2 * ((7.25 - 3.0) / (12.5 - 3.0) + 1.0),
    "b": 1 * ((10.0 - 3.0) / (12.5 - 3.0)),  # bm25 only
    "e": 1 * ((-9.0 + 12.0) / (-3.0 + 12.0)),  # vector only
    "d": 2 * (0.0 + 0.0),  # last in both: still counted twice, as ranx does
}


def test_golden_comb_mnz():
    out = comb_mnz([BM25, VEC])
    assert [i for i, _ in out] == ["a", "c", "b", "e", "d"]
    assert dict(out) == pytest.approx(MNZ, rel=1e-15, abs=1e-15)
    assert parse_fusion("mnz").fuse([BM25, VEC]) == out == parse_fusion("mnz:bm25+vector")([BM25, VEC])


def test_golden_comb_mnz_three_lists_depth3():
    third = [("e", 0.9), ("b", 0.8), ("f", 0.7), ("a", 0.1)]
    out = dict(comb_mnz([BM25, VEC, third], depth=3))  # cut: abc / cae / ebf; min-max over the cut lists
    expected = {
        "a": 2 * (1.0 + (-5.0 + 9.0) / (-3.0 + 9.0)),
        "b": 2 * ((10.0 - 7.25) / (12.5 - 7.25) + (0.8 - 0.7) / (0.9 - 0.7)),
        "c": 2 * (0.0 + 1.0),
        "e": 2 * (0.0 + 1.0),
        "f": 1 * 0.0,
    }
    assert out == pytest.approx(expected, rel=1e-15, abs=1e-15)


def test_live_ranx_comb_mnz_agrees_without_ties(ranx_fuse):
    got = ranx_fuse([BM25, VEC], method="mnz", norm="min-max")
    ours = comb_mnz([BM25, VEC])
    assert got == pytest.approx(dict(ours), rel=1e-12, abs=1e-15)
    assert ranked(got) == [i for i, _ in ours]
    third = [("e", 0.9), ("b", 0.8), ("f", 0.7), ("a", 0.1)]
    got = ranx_fuse([BM25[:3], VEC[:3], third[:3]], method="mnz", norm="min-max")
    assert got == pytest.approx(dict(comb_mnz([BM25, VEC, third], depth=3)), rel=1e-12, abs=1e-15)


def test_comb_mnz_names_and_constant_lists():
    spec = parse_fusion("mnz:bm25+mine+x")
    assert (spec.method, spec.inputs, spec.name) == ("mnz", ("bm25", "mine", "x"), "mnz:bm25+mine+x")
    assert "n(d) * sum_i minmax_i(d) over bm25, mine, x" in spec.formula and "Fox & Shaw" in spec.formula
    assert spec.config()["params"] == {}
    with pytest.raises(FusionSpecError, match="Extra inputs"):
        parse_fusion("mnz:k=3")
    # a constant list normalises to 1 here (ranx: 0), so its items still gain from it
    assert dict(comb_mnz([[("x", 2.0), ("y", 2.0)], [("x", 5.0)]])) == {"x": 2 * (1.0 + 1.0), "y": 1 * 1.0}
    assert comb_mnz([]) == [] and comb_mnz([[], []]) == []


@settings(max_examples=200, deadline=None)
@given(LISTS, st.one_of(st.none(), st.integers(0, 15)), st.data())
def test_property_comb_mnz(lists, depth, data):
    before = copy.deepcopy(lists)
    out = comb_mnz(lists, depth=depth)
    assert lists == before and canonical(out)
    assert all(0.0 <= s <= len(lists) ** 2 for _, s in out)
    assert comb_mnz(data.draw(st.permutations(lists)), depth=depth) == out
    # n(d) * CombSUM with unit weights
    sums = dict(wsum(lists, [1.0] * len(lists), depth=depth))
    cut = [{i for i, _ in rrf([lst], depth=depth)} for lst in lists]
    for i, s in out:
        assert s == pytest.approx(sum(i in c for c in cut) * sums[i], rel=1e-12, abs=1e-12)
