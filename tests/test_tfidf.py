"""The ``tfidf`` system of the registry: scikit-learn's TfidfVectorizer cosine (the reference implementation), the
tie rule, flags, and its use through ``--systems``."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer

from harness.corpus.ingest import ingest
from harness.corpus.store import Corpus
from harness.errors import HarnessInputError
from harness.retrieve.base import SystemContext
from harness.retrieve.registry import KINDS, SystemSet
from harness.retrieve.tfidf import TfidfIndex, TfidfOptions, TfidfSystem, open_tfidf_system

QUERIES = ("concesiones de aguas nacionales", "ley", "artículo primero", "zzz qqq", "la ley de aguas")


def _identity(tokens):
    return tokens


def _reference(texts, queries, analyzer):
    """Cosine scores by scikit-learn's own TfidfVectorizer over the analysed tokens: shape (Q, N), float64."""
    vec = TfidfVectorizer(analyzer=_identity, lowercase=False)
    x = vec.fit_transform(analyzer.tokenize_many(texts))
    q = vec.transform(analyzer.tokenize_many(list(queries)))
    return (q @ x.T).toarray()


def test_chunk_scores_equal_sklearn_tfidfvectorizer_cosine(tiny_corpus, tmp_path):
    db, _m, _c = ingest(tiny_corpus, tmp_path / "wd")
    with Corpus(db) as corpus:
        system = TfidfSystem(corpus)
        _r, chunk_ids, _docs, texts = corpus.chunk_table()
        ref = _reference(texts, QUERIES, system.analyzer)
        results = system.search(list(QUERIES), doc_depth=50, chunk_depth=len(chunk_ids))
    pos = {c: i for i, c in enumerate(chunk_ids)}
    for qi, res in enumerate(results):
        got = np.zeros(len(chunk_ids))
        for cid, score in res.chunks:
            got[pos[cid]] = score
        np.testing.assert_allclose(got, ref[qi], rtol=2e-6, atol=1e-7)
        # every positive reference score is retrieved, nothing else
        assert {cid for cid, _ in res.chunks} == {chunk_ids[i] for i in np.flatnonzero(ref[qi] > 1e-9)}
    assert results[3].flags == {"empty_query": True}
    assert results[3].docs == [] and results[3].chunks == []


def test_rankings_follow_the_tie_rule_and_flag_a_boundary_tie():
    # items 0, 1 and 2 are identical: equal scores, ids ascending decide, the cut at 2 falls in the tie
    ids = ["d#2", "d#10", "d#1", "e#0"]
    item = np.array([0, 1, 2, 3, 3])
    term = np.array([0, 0, 0, 0, 1])
    count = np.array([1, 1, 1, 1, 3])
    idx = TfidfIndex(ids, item, term, count, {"a": 0, "b": 1})
    ((ranking, flags),) = idx.search_many([["a"]], depth=2)
    assert [i for i, _ in ranking] == ["d#1", "d#10"]
    assert flags == {"tie_at_boundary": True}
    ((full, flags),) = idx.search_many([["a"]], depth=4)
    assert [i for i, _ in full] == ["d#1", "d#10", "d#2", "e#0"] and flags == {}
    assert full[0][1] == full[1][1] == full[2][1] > full[3][1] > 0
    with pytest.raises(ValueError, match="depth"):
        idx.search_many([["a"]], depth=0)


def test_tfidf_is_a_registry_kind_fused_like_any_other(tiny_corpus, tmp_path):
    assert KINDS["tfidf"].options is TfidfOptions
    db, _m, _c = ingest(tiny_corpus, tmp_path / "wd")
    with Corpus(db) as corpus:
        sset = SystemSet(["bm25", "tfidf", "rrf:bm25+tfidf"], corpus, tmp_path / "wd")
        out = sset.search_all(list(QUERIES), [f"q{i}" for i in range(len(QUERIES))], doc_depth=20, chunk_depth=20)
        configs = sset.configs()
        logged = []
        open_tfidf_system(SystemContext(corpus, tmp_path / "wd", log=logged.append), TfidfOptions())
    assert configs["tfidf"]["similarity"] == "cosine" and configs["tfidf"]["params"]["smooth_idf"] is True
    assert logged and logged[0].startswith("tfidf: indexes built in memory")
    from harness.retrieve.fusion import rrf

    for qid in out["rrf:bm25+tfidf"]:
        want = rrf([out["bm25"][qid].chunks, out["tfidf"][qid].chunks], depth=20)
        assert out["rrf:bm25+tfidf"][qid].chunks == want
    with pytest.raises(HarnessInputError, match="tfidf"):
        SystemSet(["tfidf:k1=2"], corpus=None, workdir=tmp_path)  # type: ignore[arg-type]
