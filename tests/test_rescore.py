"""Float rescoring of binary candidates (``vector:rescore=M``): the rankings equal a brute-force cosine ranking
restricted to the Hamming candidates, ties by the project's tie rule; boundary ties go away; the run records it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_vector import WORDS, FakeEmbedder, make_db, random_docs

from harness.corpus.store import Corpus
from harness.errors import HarnessInputError
from harness.retrieve.vector import VectorIndex
from harness.retrieve.vector.rescore import FloatVectors


def reference(corpus: Corpus, emb: FakeEmbedder, query: str, m: int, chunk_depth: int, doc_depth: int, docs):
    """Plain-Python rescoring: sort every slice chunk by (Hamming, chunk id); the candidates are the first
    m * chunk_depth chunks plus the best chunk of each of the first m * doc_depth documents (by best chunk, then
    document id); cosine with math.fsum; chunks by (-cosine, id), documents by (-best cosine, id)."""
    q = [float(x) for x in emb.vec(query, "q")]
    qb = [x > 0 for x in q]
    rows = []
    for cid, did, text in corpus.conn.execute("SELECT chunk_id, doc_id, text FROM chunks"):
        if did in docs:
            v = [float(x) for x in emb.vec(text)]
            rows.append((sum(a != (b > 0) for a, b in zip(qb, v, strict=True)), cid, did, v))
    rows.sort(key=lambda r: (r[0], r[1]))
    cand = {r[1]: r for r in rows[: m * chunk_depth]}
    best: dict[str, tuple] = {}
    for r in rows:
        best.setdefault(r[2], r)
    for _, r in sorted(best.items(), key=lambda kv: (kv[1][0], kv[0]))[: m * doc_depth]:
        cand[r[1]] = r

    def cos(v):
        den = math.sqrt(math.fsum(x * x for x in v)) * math.sqrt(math.fsum(x * x for x in q))
        return math.fsum(a * b for a, b in zip(v, q, strict=True)) / den if den else 0.0

    scored = sorted(((cos(r[3]), cid, r[2]) for cid, r in cand.items()), key=lambda t: (-t[0], t[1]))
    doc_best: dict[str, float] = {}
    for s, _, did in scored:
        doc_best.setdefault(did, s)
    ranked_docs = sorted(doc_best.items(), key=lambda kv: (-kv[1], kv[0]))
    return scored, ranked_docs, len(cand)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rescore")
    db = make_db(tmp, random_docs(23, n_docs=14))
    corpus = Corpus(db)
    emb = FakeEmbedder(dim=16, seed=3)
    work = tmp / "work"
    full = {m: VectorIndex.build(corpus, work, emb, rescore=m) for m in (1, 2, 3)}
    half = {m: VectorIndex.build(corpus, work, emb, rescore=m, index_fraction=0.5) for m in (1, 2, 3)}
    plain = VectorIndex.build(corpus, work, emb)
    yield corpus, emb, full, half, plain
    corpus.close()


def _same(got, want):
    assert [i for i, _ in got] == [i for i, _ in want]
    for (_, a), (_, b) in zip(got, want, strict=True):
        assert math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=6),
    m=st.sampled_from([1, 2, 3]),
    chunk_depth=st.integers(1, 40),
    doc_depth=st.integers(1, 10),
    half=st.booleans(),
    backend=st.sampled_from(["sqlite-vec", "numpy", "faiss"]),
)
def test_rescored_rankings_equal_brute_force_cosine_over_the_hamming_candidates(
    setup, words, m, chunk_depth, doc_depth, half, backend
):
    corpus, emb, full, halves, _ = setup
    ix = (halves if half else full)[m]
    query = " ".join(words)
    (res,) = ix.search([query], doc_depth=doc_depth, chunk_depth=chunk_depth, backend=backend)
    scored, docs, n_cand = reference(corpus, emb, query, m, chunk_depth, doc_depth, set(ix.slice.doc_ids))
    _same(res.chunks, [(cid, s) for s, cid, _ in scored[:chunk_depth]])
    _same(res.docs, docs[:doc_depth])
    assert res.flags["rescored"] == n_cand
    ctie = len(scored) > chunk_depth and scored[chunk_depth][0] == scored[chunk_depth - 1][0]
    assert res.flags.get("chunk_tie_at_boundary", False) == ctie


def test_rescoring_removes_the_boundary_ties_of_hamming(setup):
    corpus, emb, full, _, plain = setup
    queries = [" ".join(WORDS[i : i + 3]) for i in range(0, len(WORDS) - 3)]
    ham = plain.search(queries, doc_depth=5, chunk_depth=10)
    cos = full[2].search(queries, doc_depth=5, chunk_depth=10)
    ham_ties = sum(bool(r.flags.get("chunk_tie_at_boundary")) for r in ham)
    cos_ties = sum(bool(r.flags.get("chunk_tie_at_boundary")) for r in cos)
    assert ham_ties >= len(queries) // 2 and cos_ties < ham_ties
    # the remaining ties are exact duplicates (identical texts, identical vectors)
    texts = dict(corpus.conn.execute("SELECT chunk_id, text FROM chunks"))
    for r in cos:
        if r.flags.get("chunk_tie_at_boundary"):
            tied = [c for c, s in r.chunks if s == r.chunks[-1][1]]
            assert len({texts[c] for c in tied}) == 1 or len(tied) == 1


def test_rescore_is_recorded_and_zero_is_hamming(setup):
    corpus, emb, full, _, plain = setup
    cfg = full[3].config()
    assert cfg["rescore"] == 3 and "M*chunk_depth" in cfg["rescore_rule"] and "cosine" in cfg["chunk_score"]
    assert plain.config()["rescore"] == 0 and plain.config()["rescore_rule"] is None
    (r,) = plain.search(["ley agua"], doc_depth=3, chunk_depth=5)
    assert "rescored" not in r.flags and all(s == int(s) <= 0 for _, s in r.chunks)


def test_float_vectors_are_the_cache_rows_in_slice_order(setup):
    corpus, emb, _, halves, _ = setup
    ix = halves[1]
    fv = ix.float_vectors()
    texts = dict(corpus.conn.execute("SELECT chunk_id, text FROM chunks"))
    np.testing.assert_array_equal(fv.vectors, np.stack([emb.vec(texts[c]) for c in ix.chunk_ids]))
    np.testing.assert_allclose(fv.norms, np.linalg.norm(fv.vectors.astype(np.float64), axis=1), rtol=1e-14)
    with pytest.raises(HarnessInputError, match="NaN"):
        FloatVectors(np.full((2, 8), np.nan, dtype=np.float32))
    zero = FloatVectors(np.zeros((1, 8), dtype=np.float32))
    assert zero.cosine(np.ones(8), np.array([0])).tolist() == [0.0]


def test_rescoring_needs_query_vectors_and_a_workdir(setup):
    corpus, emb, full, _, plain = setup
    qbits = full[1].query_bits(["agua"])
    with pytest.raises(HarnessInputError, match="query vectors"):
        full[1].search_packed(qbits, doc_depth=2, chunk_depth=2)
    with pytest.raises(HarnessInputError, match="work directory"):
        VectorIndex(corpus, emb, plain.table, plain.slice, backend="numpy", stats={}, rescore=2)
    with pytest.raises(HarnessInputError, match="rescore"):
        VectorIndex(corpus, emb, plain.table, plain.slice, backend="numpy", stats={}, rescore=-1, workdir=".")


@pytest.mark.parametrize("half", [False, True])
def test_a_slice_over_the_memory_bound_rescores_from_the_cache_with_the_same_bits(setup, monkeypatch, half):
    """DOF scale (issue 34): stacking every float vector of 6.73 M chunks took about 14 GB, so above
    ``IN_MEMORY_BYTES`` the vectors are read per query, only the rescored rows; the rankings and cosines are
    bit-identical to the in-memory path."""
    from harness.retrieve.vector import cached_floats
    from harness.retrieve.vector.cache import EmbeddingCache

    corpus, emb, full, halves, _ = setup
    src = (halves if half else full)[2]
    work = src.workdir
    queries = [" ".join(WORDS[i : i + 3]) for i in range(0, 24, 3)]
    want = src.search(queries, doc_depth=4, chunk_depth=9, backend="numpy")
    monkeypatch.setattr(cached_floats, "IN_MEMORY_BYTES", 0)
    read: list[int] = []
    orig = EmbeddingCache.get_many

    def spy(self, key_id, shas, dim):
        read.append(len(list(shas)))
        return orig(self, key_id, shas, dim)

    monkeypatch.setattr(EmbeddingCache, "get_many", spy)
    lazy = VectorIndex.build(corpus, work, emb, rescore=2, index_fraction=0.5 if half else None)
    got = lazy.search(queries, doc_depth=4, chunk_depth=9, backend="numpy")
    assert isinstance(lazy.float_vectors(), cached_floats.CachedFloatVectors)
    assert lazy.float_vectors().nbytes == lazy.slice.n_chunks * (16 * 4 + 8)
    for a, b in zip(got, want, strict=True):
        assert a.chunks == b.chunks and a.docs == b.docs and a.flags == b.flags
    assert read and max(read) <= 2 * 9 + 2 * 4 < lazy.slice.n_chunks  # only the rescored rows, never the slice
    lazy.float_vectors().close()
