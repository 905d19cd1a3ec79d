"""BM25: the Spanish analyzer, the exact tie rule, persistence, and agreement with rank_bm25 on real text."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.corpus.ingest import ingest
from harness.corpus.store import Corpus
from harness.retrieve.analyzer import SpanishAnalyzer, fold_accents
from harness.retrieve.bm25 import BM25Index, BM25System


def test_analyzer_order_lower_stop_stem_fold():
    a = SpanishAnalyzer()
    # "acción" stems (accented) to "accion" after folding; "las" and "de" are stop words; numbers and
    # single characters survive.
    assert a.tokenize("Las ACCIONES de la Nación, artículo 27 fracción I y 2024") == [
        "accion",
        "nacion",
        "articul",
        "27",
        "fraccion",
        "i",
        "2024",
    ]
    assert fold_accents("ñandú") == "nandu"
    # stemming happens before folding: the stemmer sees the accented form
    assert a.tokenize("información") == a.tokenize("informacion") == ["inform"]


def test_empty_query_gives_empty_ranking_with_flag():
    a = SpanishAnalyzer()
    idx = BM25Index.build(["d1", "d2"], [a.tokenize("agua río"), a.tokenize("bosque")], a)
    ranking, flags = idx.search("de la y", 10)
    assert ranking == [] and flags == {"empty_query": True}
    ranking, flags = idx.search("zzz desconocido", 10)
    assert ranking == [] and flags.get("empty_query")


def test_ties_broken_by_id_ascending_even_at_the_boundary():
    a = SpanishAnalyzer()
    ids = ["d3", "d1", "d2", "d0"]
    toks = [["agu"], ["agu"], ["agu"], ["bosqu"]]
    idx = BM25Index.build(ids, toks, a)
    ranking, flags = idx.search("agua", 2)
    assert [i for i, _ in ranking] == ["d1", "d2"]
    assert flags.get("tie_at_boundary") is True
    ranking, flags = idx.search("agua", 3)
    assert [i for i, _ in ranking] == ["d1", "d2", "d3"] and "tie_at_boundary" not in flags


def test_lucene_scores_by_hand():
    # two documents; query "agua": df = 1, N = 2 -> idf = ln(1 + (2 - 1 + 0.5) / (1 + 0.5)) = ln 2
    a = SpanishAnalyzer()
    idx = BM25Index.build(["a", "b"], [["agu", "agu", "x"], ["bosqu"]], a)
    ((doc, score),) = idx.search("agua", 5)[0]
    k1, b, avgdl, dl, tf = 1.5, 0.75, 2.0, 3, 2
    expected = math.log(2) * tf / (tf + k1 * (1 - b + b * dl / avgdl))
    assert doc == "a" and score == pytest.approx(expected, rel=1e-6)


def test_system_persists_and_reloads(tiny_corpus: Path, tmp_path: Path):
    db, _m, _c = ingest(tiny_corpus, tmp_path / "wd")
    with Corpus(db) as corpus:
        s1 = BM25System(corpus, tmp_path / "wd")
        assert s1.build_seconds["chunk"] > 0
        r1 = s1.search(["concesiones de aguas nacionales"], doc_depth=10, chunk_depth=10)[0]
        s2 = BM25System(corpus, tmp_path / "wd")
        assert s2.build_seconds == {"chunk": 0.0, "document": 0.0}
        r2 = s2.search(["concesiones de aguas nacionales"], doc_depth=10, chunk_depth=10)[0]
    assert r1.docs == r2.docs and r1.docs[0][0] == "ley-a"
    assert r1.chunks[0][0].startswith("ley-a#")


@pytest.mark.realcorpus
def test_equal_to_rank_bm25_on_real_chunks(tmp_path: Path):
    """Cross-implementation check: bm25s 'lucene' vs rank_bm25-style Lucene BM25 written out in numpy, on 2,000 real
    chunks with the same tokens (rank_bm25's BM25Okapi uses another idf, so the formula is spelled out here)."""
    from conftest import REAL_CORPUS

    if not REAL_CORPUS.exists():
        pytest.skip(f"real corpus not found at {REAL_CORPUS}")
    from harness.corpus.chunker import decode_source, get_chunker

    a = SpanishAnalyzer()
    chunker = get_chunker("md-words-v1")
    texts, ids = [], []
    for p in sorted((REAL_CORPUS / "leyes" / "vigentes").glob("1[0-2]*.md"))[:12]:
        for c in chunker.chunk(p.stem, decode_source(p.read_bytes())):
            texts.append(c.text)
            ids.append(c.chunk_id)
    texts, ids = texts[:2000], ids[:2000]
    toks = a.tokenize_many(texts)
    idx = BM25Index.build(ids, toks, a)
    n = len(toks)
    avgdl = sum(map(len, toks)) / n
    df: dict[str, int] = {}
    for t in toks:
        for w in set(t):
            df[w] = df.get(w, 0) + 1
    for q in ("plazo para presentar la declaración", "sanciones administrativas multa", "consejo de administración"):
        terms = idx.query_terms(q)
        ref = np.zeros(n)
        for w in terms:
            idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
            for j, t in enumerate(toks):
                tf = t.count(w)
                if tf:
                    ref[j] += idf * tf / (tf + 1.5 * (1 - 0.75 + 0.75 * len(t) / avgdl))
        got = idx.scores(terms)
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def _same_scores(a: BM25Index, b: BM25Index) -> None:
    """Bit-identical score matrices, term by term (the column order may differ), and the same vocabulary."""
    assert set(a.vocab) == set(b.vocab) and a.ids == b.ids
    sa, sb = a.retriever.scores, b.retriever.scores
    assert sa["num_docs"] == sb["num_docs"]
    for k in ("data", "indices", "indptr"):
        assert np.asarray(sa[k]).dtype == np.asarray(sb[k]).dtype, k
    for t, ia in a.vocab.items():
        if t == "":
            continue
        ib = b.vocab[t]
        ca = slice(int(sa["indptr"][ia]), int(sa["indptr"][ia + 1]))
        cb = slice(int(sb["indptr"][ib]), int(sb["indptr"][ib + 1]))
        np.testing.assert_array_equal(np.asarray(sa["indices"])[ca], np.asarray(sb["indices"])[cb])
        assert np.asarray(sa["data"])[ca].tobytes() == np.asarray(sb["data"])[cb].tobytes(), t


def _counts_index(ids, toks, a, batch=7) -> BM25Index:
    from harness.retrieve.counts import count_terms

    vocab: dict[str, int] = {}
    parts = [count_terms(toks[s : s + batch], vocab, s) for s in range(0, len(toks), batch)]
    item, term, count, length = (np.concatenate(p) for p in zip(*parts, strict=True))
    return BM25Index.build_from_counts(ids, item, term, count, length, vocab, a)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(["agu", "bosqu", "ri", "sol", "x"]), max_size=12), min_size=1, max_size=40),
    st.sampled_from([1, 2, 7, 1 << 20]),
)
def test_integer_build_bit_identical_to_bm25s(docs, block):
    """Any analysis batch and any counting-sort block (CSC_BLOCK) give bm25s's bytes."""
    from hypothesis import assume

    import harness.retrieve.bm25.index as bm25_mod

    assume(any(docs))
    a = SpanishAnalyzer()
    ids = [f"d{i}" for i in range(len(docs))]
    saved, bm25_mod.CSC_BLOCK = bm25_mod.CSC_BLOCK, block
    try:
        ref, got = BM25Index.build(ids, docs, a), _counts_index(ids, docs, a)
    finally:
        bm25_mod.CSC_BLOCK = saved
    assert got.vocab == ref.vocab  # same first-occurrence order, bm25s's empty token last
    for k in ("data", "indices", "indptr"):
        x, y = np.asarray(ref.retriever.scores[k]), np.asarray(got.retriever.scores[k])
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), k


@pytest.mark.parametrize(
    ("batch", "block", "ordered"), [(4096, 1 << 22, True), (3, 7, True), (1, 1, True), (3, 7, False)]
)
def test_system_integer_build_equals_token_list_build(
    tiny_corpus: Path, tmp_path: Path, monkeypatch, batch: int, block: int, ordered: bool
):
    """The streamed build (texts read ``batch`` at a time, rows summed per document ``block`` at a time, so that
    documents straddle blocks) equals bm25s's token-list build bit for bit."""
    import harness.retrieve.bm25.index as bm25_mod
    import harness.retrieve.bm25.system as system_mod
    import harness.retrieve.counts as counts_mod

    monkeypatch.setattr(system_mod, "ANALYSIS_BATCH", batch)
    monkeypatch.setattr(counts_mod, "DOC_BLOCK", block)
    monkeypatch.setattr(bm25_mod, "CSC_BLOCK", block)
    if not ordered:  # documents out of chunk order: the one-sort fallback of _document_sums
        real = counts_mod._document_sums

        def shuffled(chunk_doc, *a):
            n_docs = a[-1]
            perm = np.arange(n_docs)[::-1]
            out_d, out_t, out_c = real(perm[chunk_doc], *a[:-1][:3], perm[a[3]], *a[4:])
            # map back: rows are (perm(doc), term); undo the permutation and re-sort
            doc = perm[out_d]
            o = np.lexsort((out_t, doc))
            return doc[o].astype(np.int32), out_t[o], out_c[o]

        monkeypatch.setattr(counts_mod, "_document_sums", shuffled)
    db, _m, _c = ingest(tiny_corpus, tmp_path / "wd")
    with Corpus(db) as corpus:
        s = BM25System(corpus, tmp_path / "wd")  # built from (item, term, count) arrays
        _r, chunk_ids, chunk_docs, texts = corpus.chunk_table()
        toks = s.analyzer.tokenize_many(texts)
        ref_chunk = BM25Index.build(chunk_ids, toks, s.analyzer)
        ref_doc = BM25Index.build(*s._document_tokens(chunk_docs, toks), s.analyzer)
        assert s.chunk_index.vocab == ref_chunk.vocab
        _same_scores(s.chunk_index, ref_chunk)
        _same_scores(s.doc_index, ref_doc)
        for q in ("concesiones de aguas nacionales", "ley", "artículo primero", "zzz"):
            assert s.chunk_index.search(q, 5) == ref_chunk.search(q, 5)
            assert s.doc_index.search(q, 5) == ref_doc.search(q, 5)


def test_iter_chunk_texts_pages_in_rowid_order(tiny_corpus: Path, tmp_path: Path):
    db, _m, _c = ingest(tiny_corpus, tmp_path / "wd")
    with Corpus(db) as corpus:
        _r, chunk_ids, chunk_docs, texts = corpus.chunk_table()
        assert corpus.chunk_keys() == (chunk_ids, chunk_docs)
        for batch in (1, 2, 5, len(texts), len(texts) + 7):
            pages = list(corpus.iter_chunk_texts(batch))
            assert [t for p in pages for t in p] == texts
            assert all(len(p) == batch for p in pages[:-1]) and 1 <= len(pages[-1]) <= batch
        with pytest.raises(ValueError, match="batch=0"):
            next(corpus.iter_chunk_texts(0))


@pytest.mark.realcorpus
def test_integer_build_bit_identical_on_real_chunks():
    from conftest import REAL_CORPUS

    if not REAL_CORPUS.exists():
        pytest.skip(f"real corpus not found at {REAL_CORPUS}")
    from harness.corpus.chunker import decode_source, get_chunker

    a = SpanishAnalyzer()
    chunker = get_chunker("md-words-v1")
    texts, ids = [], []
    for p in sorted((REAL_CORPUS / "leyes" / "vigentes").glob("1[0-2]*.md"))[:12]:
        for c in chunker.chunk(p.stem, decode_source(p.read_bytes())):
            texts.append(c.text)
            ids.append(c.chunk_id)
    texts, ids = texts[:2000], ids[:2000]
    toks = a.tokenize_many(texts)
    import harness.retrieve.bm25.index as bm25_mod

    saved, bm25_mod.CSC_BLOCK = bm25_mod.CSC_BLOCK, 10_000  # several counting-sort blocks
    try:
        ref, got = BM25Index.build(ids, toks, a), _counts_index(ids, toks, a, batch=300)
    finally:
        bm25_mod.CSC_BLOCK = saved
    assert got.vocab == ref.vocab
    for k in ("data", "indices", "indptr"):
        x, y = np.asarray(ref.retriever.scores[k]), np.asarray(got.retriever.scores[k])
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), k


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.integers(1, 5)), max_size=50))
def test_sum_by_key_equals_a_dictionary_sum(rows):
    from collections import Counter

    from harness.retrieve.counts import _sum_by_key

    keys = np.asarray([k for k, _ in rows], dtype=np.int64)
    w = np.asarray([c for _, c in rows], dtype=np.int32)
    k, s = _sum_by_key(keys, w)
    ref = Counter()
    for key, c in rows:
        ref[key] += c
    assert k.tolist() == sorted(ref) and s.tolist() == [ref[x] for x in sorted(ref)] and s.dtype == np.int32


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([1, 2, 3, 1 << 22]))
def test_document_sums_by_ranges_equal_one_sort(seed, block):
    """The per-document-range path of _document_sums equals one sort over all rows (documents without chunks,
    extra tokens only, empty inputs included)."""
    import harness.retrieve.counts as counts_mod

    rng = np.random.default_rng(seed)
    n_docs, n_chunks, v = int(rng.integers(1, 6)), int(rng.integers(0, 12)), int(rng.integers(1, 7))
    chunk_doc = np.sort(rng.integers(0, n_docs, n_chunks)).astype(np.int64)
    rows = [
        (i, t, int(rng.integers(1, 4)))
        for i in range(n_chunks)
        for t in sorted(set(rng.integers(0, v, int(rng.integers(0, 4))).tolist()))
    ]
    item = np.array([r[0] for r in rows], np.int32)
    term = np.array([r[1] for r in rows], np.int32)
    count = np.array([r[2] for r in rows], np.int32)
    ne = int(rng.integers(0, 6))
    e_item = rng.integers(0, n_docs, ne).astype(np.int64)
    e_term = rng.integers(0, v, ne).astype(np.int64)
    saved, counts_mod.DOC_BLOCK = counts_mod.DOC_BLOCK, block
    try:
        d, t, c = counts_mod._document_sums(chunk_doc, item, term, count, e_item, e_term, v, n_docs)
        k = d.astype(np.int64) * v + t
        assert d.dtype == t.dtype == np.int32
    finally:
        counts_mod.DOC_BLOCK = saved
    keys = np.concatenate([chunk_doc[item] * v + term, e_item * v + e_term])
    ref_k, ref_c = counts_mod._sum_by_key(keys, np.concatenate([count, np.ones(ne, np.int32)]))
    assert k.tolist() == ref_k.tolist() and c.tolist() == ref_c.tolist() and c.dtype == np.int32
