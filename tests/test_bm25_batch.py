"""Batched BM25 search (``BM25Index.search_many``) against the per-query path (``BM25Index.search``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from harness.corpus.ingest import ingest
from harness.corpus.store import Corpus
from harness.retrieve.analyzer import SpanishAnalyzer
from harness.retrieve.base import QueryResult
from harness.retrieve.bm25 import BM25Index, BM25System, combine_levels, have_numba

WORDS = ["agua", "bosque", "río", "sol", "luna", "mar"]  # six distinct stems; tiny vocabulary -> many ties
BACKENDS = [("numpy", 1)] + ([("numba", 1), ("numba", 2)] if have_numba() else [])


def _index(docs: list[list[int]], id_perm: list[int]) -> tuple[BM25Index, SpanishAnalyzer]:
    a = SpanishAnalyzer()
    stems = [a.tokenize(w)[0] for w in WORDS]
    ids = [f"d{p:03d}" for p in id_perm]
    return BM25Index.build(ids, [[stems[w] for w in d] for d in docs], a), a


docs_st = st.lists(st.lists(st.integers(0, len(WORDS) - 1), min_size=0, max_size=4), min_size=1, max_size=30)
queries_st = st.lists(st.lists(st.integers(0, len(WORDS) + 1), min_size=0, max_size=4), min_size=1, max_size=12)


@settings(max_examples=80, deadline=None)
@given(docs=docs_st, queries=queries_st, depth=st.integers(1, 35), data=st.data())
def test_batched_equals_per_query_with_ties(docs, queries, depth, data):
    assume(any(docs))  # bm25s cannot index a corpus with no token at all
    perm = data.draw(st.permutations(list(range(len(docs)))))
    idx, a = _index(docs, perm)
    # word indices beyond WORDS are unknown words ("zzz") or stop words ("de")
    extra = ["zzz", "de"]
    texts = [" ".join((WORDS + extra)[w] for w in q) for q in queries]
    want = [idx.search(t, depth) for t in texts]
    for backend, nt in BACKENDS:
        assert idx.search_many(texts, depth, backend=backend, n_threads=nt) == want
        terms = [a.tokenize(t) for t in texts]
        assert idx.search_many(terms, depth, analysed=True, backend=backend, n_threads=nt) == want


def test_scores_bit_identical_to_get_scores():
    rng = np.random.default_rng(0)
    docs = [rng.integers(0, len(WORDS), size=rng.integers(1, 8)).tolist() for _ in range(200)]
    idx, a = _index(docs, list(range(200)))
    texts = [" ".join(WORDS[w] for w in rng.integers(0, len(WORDS), size=3)) for _ in range(20)]
    for backend, nt in BACKENDS:
        for text, (ranking, _f) in zip(texts, idx.search_many(texts, 500, backend=backend, n_threads=nt), strict=True):
            sc = idx.scores(idx.query_terms(text))
            pos = {idx.ids[i]: sc[i] for i in np.flatnonzero(sc > 0)}
            assert len(ranking) == len(pos)  # depth larger than the number of positive scores: all of them
            assert all(np.float32(s) == pos[i] for i, s in ranking)


def test_empty_queries_and_depth_beyond_positives():
    a = SpanishAnalyzer()
    idx = BM25Index.build(["d2", "d1", "d3"], [a.tokenize("agua río"), a.tokenize("agua"), a.tokenize("bosque")], a)
    for backend, nt in BACKENDS:
        got = idx.search_many(["de la y", "", "zzz", "agua", "bosque agua"], 10, backend=backend, n_threads=nt)
        assert got[0] == ([], {"empty_query": True})
        assert got[1] == ([], {"empty_query": True})
        assert got[2] == ([], {"empty_query": True})
        assert [i for i, _ in got[3][0]] == ["d1", "d2"] and got[3][1] == {}
        assert len(got[4][0]) == 3 and got[4][1] == {}
        assert idx.search_many([], 10, backend=backend) == []
    # depth equal to the number of items, with all tied: no item left out, no tie flag
    idx2 = BM25Index.build(["b", "a"], [["agu"], ["agu"]], a)
    assert idx2.search_many(["agua"], 2) == idx2.search_many(["agua"], 5) == [idx2.search("agua", 2)]
    assert idx2.search_many(["agua"], 1) == [idx2.search("agua", 1)]
    assert idx2.search_many(["agua"], 1)[0][1] == {"tie_at_boundary": True}


def test_bad_arguments():
    a = SpanishAnalyzer()
    idx = BM25Index.build(["d"], [["agu"]], a)
    with pytest.raises(ValueError):
        idx.search_many(["agua"], 0)
    with pytest.raises(ValueError):
        idx.search_many(["agua"], 1, backend="gpu")


def _per_query(system: BM25System, queries, doc_depth, chunk_depth) -> list[QueryResult]:
    return combine_levels(
        [system.doc_index.search(q, doc_depth) for q in queries],
        [system.chunk_index.search(q, chunk_depth) for q in queries],
    )


def test_system_search_equals_per_query_path(tiny_corpus: Path, tmp_path: Path):
    db, _m, _c = ingest(tiny_corpus, tmp_path / "wd")
    qs = ["concesiones de aguas nacionales", "de la", "zzz", "ley", "artículo primero disposiciones", "agua"]
    with Corpus(db) as corpus:
        s = BM25System(corpus, tmp_path / "wd")
        for dd, cd in ((1, 1), (2, 3), (10, 10), (50, 200)):
            assert s.search(qs, doc_depth=dd, chunk_depth=cd) == _per_query(s, qs, dd, cd)
