"""The one tie rule (harness.ranking): score descending, then id ascending, against sorted references."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import MetricError
from harness.ranking import (
    canonical_ranking,
    id_rank,
    sort_key,
    sort_ranking,
    top_k_by_distance,
    top_k_by_score,
)

IDS = st.text("ab#0129", min_size=1, max_size=4)


@settings(max_examples=200, deadline=None)
@given(
    dists=st.lists(st.integers(0, 4), min_size=0, max_size=30),
    k=st.integers(0, 35),
    data=st.data(),
)
def test_top_k_by_distance_matches_sorted_reference(dists, k, data):
    n = len(dists)
    ids = data.draw(st.lists(IDS, min_size=n, max_size=n, unique=True))
    d = np.array(dists, dtype=np.int64)
    idx, tie = top_k_by_distance(d, id_rank(ids), k)
    ref = sorted(range(n), key=lambda i: (dists[i], ids[i]))
    assert idx.tolist() == ref[:k] and idx.dtype == np.int64
    expect_tie = 0 < k < n and dists[ref[k]] == dists[ref[k - 1]]
    assert tie == expect_tie


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=4), min_size=1, max_size=40),
    st.integers(min_value=1, max_value=45),
)
def test_top_k_by_score_matches_full_sort(raw, k):
    scores = np.array(raw, dtype=np.float32)
    ids = [f"id{i:03d}" for i in np.random.default_rng(len(raw)).permutation(len(raw))]
    got = [ids[i] for i in top_k_by_score(scores, id_rank(ids), k)]
    positive = (i for i in range(len(ids)) if scores[i] > 0)
    assert got == [ids[i] for i in sorted(positive, key=lambda i: (-scores[i], ids[i]))][:k]


def test_id_rank_is_python_string_order():
    ids = ["d#10", "d#2", "d#1", "c#9"]
    assert id_rank(ids).tolist() == [2, 3, 1, 0]
    assert id_rank([]).tolist() == [] and id_rank([]).dtype == np.int64


def test_sort_ranking_keeps_duplicates_canonical_ranking_keeps_the_best():
    items = [("b", 1.0), ("a", 1.0), ("b", 3.0), (7, 2.0)]
    assert sort_ranking(items) == [("b", 3.0), ("7", 2.0), ("a", 1.0), ("b", 1.0)]
    assert canonical_ranking(items) == [("b", 3.0), ("7", 2.0), ("a", 1.0)]
    assert sorted([("a", 1.0), ("b", 2.0)], key=sort_key) == [("b", 2.0), ("a", 1.0)]
    with pytest.raises(MetricError, match="NaN"):
        canonical_ranking([("a", float("nan"))])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(IDS, st.sampled_from([0.0, 1.0, 2.5, -1.0])), max_size=20))
def test_canonical_ranking_is_sort_ranking_without_later_duplicates(items):
    seen: set[str] = set()
    first = []
    for i, s in sort_ranking(items):
        if i not in seen:
            seen.add(i)
            first.append((i, s))
    assert canonical_ranking(items) == first
