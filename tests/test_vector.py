"""The vector system: exact Hamming KNN in sqlite-vec, resumable cached builds, stale detection, partial indexes."""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

import harness.retrieve.vector.engines as engines_mod
import harness.retrieve.vector.store as store_mod
import harness.retrieve.vector.system as system_mod
from harness.corpus.chunker import CHUNKERS, MdWordsChunker
from harness.corpus.ingest import ingest
from harness.corpus.store import Corpus
from harness.errors import HarnessInputError
from harness.ranking import Ranking, canonical_ranking
from harness.retrieve.base import QueryResult, SystemContext
from harness.retrieve.binary import CENTERED_BINARISATION, pack_centered
from harness.retrieve.two_stage import TwoStage
from harness.retrieve.vector import (
    EmbeddingCache,
    VectorIndex,
    VectorOptions,
    chronological_order,
    open_vector_system,
    select_slice,
)

WORDS = "ley federal trabajo salud impuesto renta decreto norma reglamento acuerdo aviso".split()


def collapse_to_documents(chunks: Ranking, chunk_doc: dict[str, str], depth: int | None = None) -> Ranking:
    """Test oracle: documents ranked by their best chunk (first occurrence in the canonical chunk ranking)."""
    seen: dict[str, float] = {}
    for cid, score in chunks:
        d = chunk_doc[cid]
        if d not in seen:
            seen[d] = score
            if depth is not None and len(seen) >= depth:
                break
    return canonical_ranking(seen.items())


def boundary_tie_summary(results) -> dict:
    """Test helper: shares of queries whose top-k boundary falls in a tie, and of numpy fallbacks."""
    n = len(results)

    def share(key: str) -> float:
        return sum(1 for r in results if r.flags.get(key)) / n if n else 0.0

    return {
        "n_queries": n,
        "chunk_tie_share": share("chunk_tie_at_boundary"),
        "doc_tie_share": share("doc_tie_at_boundary"),
        "any_tie_share": share("tie_at_boundary"),
        "knn_fallback_share": share("knn_fallback"),
    }


class FakeEmbedder:
    """Deterministic pseudo-random vectors per text (no model), with call counting and a kill switch."""

    def __init__(self, dim: int = 8, seed: int = 0, model_id: str = "fake-model", weights: str | None = None):
        self.dim, self.seed, self.model_id = dim, seed, model_id
        self.weights_sha256 = weights or hashlib.sha256(f"{model_id}|{seed}|{dim}".encode()).hexdigest()
        self.calls = 0
        self.n_texts = 0
        self.fail_on_call: int | None = None

    def vec(self, text: str, kind: str = "p") -> np.ndarray:
        h = hashlib.sha256(f"{self.seed}|{kind}|{text}".encode()).digest()
        return np.random.default_rng(list(h[:8])).standard_normal(self.dim).astype(np.float32)

    def embed_passages(self, texts):
        self.calls += 1
        if self.fail_on_call is not None and self.calls >= self.fail_on_call:
            raise RuntimeError("simulated kill")
        self.n_texts += len(texts)
        return np.stack([self.vec(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_queries(self, texts):
        return np.stack([self.vec(t, "q") for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def config(self) -> dict:
        return {"model_id": self.model_id, "weights_sha256": self.weights_sha256, "dim": self.dim}


def _section(rng: np.random.Generator) -> str:
    return " ".join(rng.choice(WORDS, size=int(rng.integers(3, 9))))


def write_corpus(root: Path, docs: list[tuple[str, str | None, list[str]]]) -> Path:
    """docs: (doc_id, date or None, section texts); each short section becomes one chunk."""
    root.mkdir(parents=True, exist_ok=True)
    meta = []
    for doc_id, date, sections in docs:
        body = f"# {doc_id}\n" + "".join(f"## s{i}\n{text}\n" for i, text in enumerate(sections))
        (root / f"{doc_id}.md").write_text(body, encoding="utf-8")
        rec = {"doc_id": doc_id, "path": f"{doc_id}.md", "title": doc_id}
        if date is not None:
            rec["date"] = date
        meta.append(json.dumps(rec))
    (root / "metadata.jsonl").write_text("\n".join(meta) + "\n", encoding="utf-8")
    return root


def random_docs(seed: int, n_docs: int = 12) -> list[tuple[str, str | None, list[str]]]:
    """Docs whose chronological order differs from id order, some with >10 chunks (so "#10" < "#2")."""
    rng = np.random.default_rng(seed)
    docs = []
    for i in range(n_docs):
        n = int(rng.integers(1, 14))
        date = f"20{10 + (i * 7) % n_docs:02d}-0{1 + i % 9}-1{i % 10}"
        docs.append((f"d{i}", date, [_section(rng) for _ in range(n)]))
    docs[3] = (docs[3][0], docs[0][1], docs[3][2])  # a date tie
    docs[4] = (docs[4][0], None, docs[4][2])  # undated: last
    return docs


def make_db(tmp_path: Path, docs, name: str = "corp", chunker_id: str = "md-words-v1") -> Path:
    src = write_corpus(tmp_path / "src" / name, docs)
    db, _, _ = ingest(src, tmp_path / "work", chunker_id=chunker_id)
    return db


def n_rows(corpus: Corpus, table: str) -> tuple[int, int]:
    return tuple(corpus.conn.execute(f'SELECT count(*), count(DISTINCT rowid) FROM "{table}"').fetchone())


def brute_force(corpus: Corpus, emb: FakeEmbedder, qbits: list[int], doc_ids: set[str] | None = None):
    """Reference rankings: Python sort of every chunk by (Hamming, chunk_id); docs by (best, doc_id)."""
    rows = corpus.conn.execute("SELECT chunk_id, doc_id, text FROM chunks").fetchall()
    scored = []
    for cid, did, text in rows:
        if doc_ids is not None and did not in doc_ids:
            continue
        bits = [int(v > 0) for v in emb.vec(text)]
        scored.append((sum(a != b for a, b in zip(qbits, bits, strict=True)), cid, did))
    scored.sort(key=lambda r: (r[0], r[1]))
    best: dict[str, int] = {}
    for d, _, did in scored:
        best.setdefault(did, d)
    docs = sorted(best.items(), key=lambda kv: (kv[1], kv[0]))
    return scored, docs


def pack_lsb(bits: list[int]) -> np.ndarray:
    """Independent LSB-first packing (bit j -> byte j//8, value 1 << j%8)."""
    out = np.zeros(len(bits) // 8, dtype=np.uint8)
    for j, b in enumerate(bits):
        out[j // 8] |= b << (j % 8)
    return out


# ------------------------------------------------------------------------------------------------------------------
# exact KNN on random bits with boundary ties
# ------------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def knn_setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("knn")
    db = make_db(tmp, random_docs(11))
    corpus = Corpus(db)
    emb = FakeEmbedder(dim=8)
    full = VectorIndex.build(corpus, tmp / "work", emb, batch_chunks=7)
    half = VectorIndex.build(corpus, tmp / "work", emb, index_fraction=0.5)
    yield corpus, emb, full, half
    corpus.close()


def _check_against_reference(ix: VectorIndex, corpus, emb, qbits, doc_depth, chunk_depth, backend):
    scope = set(ix.slice.doc_ids)
    ref_chunks, ref_docs = brute_force(corpus, emb, qbits, scope)
    res = ix.search_packed(pack_lsb(qbits)[None, :], doc_depth=doc_depth, chunk_depth=chunk_depth, backend=backend)[0]
    assert res.chunks == [(cid, float(-d)) for d, cid, _ in ref_chunks[:chunk_depth]]
    assert res.docs == [(did, float(-d)) for did, d in ref_docs[:doc_depth]]
    ctie = 0 < chunk_depth < len(ref_chunks) and ref_chunks[chunk_depth][0] == ref_chunks[chunk_depth - 1][0]
    dtie = 0 < doc_depth < len(ref_docs) and ref_docs[doc_depth][1] == ref_docs[doc_depth - 1][1]
    assert res.flags.get("chunk_tie_at_boundary", False) == ctie
    assert res.flags.get("doc_tie_at_boundary", False) == dtie
    assert res.flags.get("tie_at_boundary", False) == (ctie or dtie)
    # documents = collapse of the full canonical chunk ranking by first occurrence (then cut at the depth)
    full_chunks = [(cid, float(-d)) for d, cid, _ in ref_chunks]
    chunk_doc = {cid: did for _, cid, did in ref_chunks}
    assert res.docs == collapse_to_documents(full_chunks, chunk_doc)[:doc_depth]
    return res


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    qbits=st.lists(st.integers(0, 1), min_size=8, max_size=8),
    doc_depth=st.integers(0, 14),
    chunk_depth=st.integers(0, 120),
    half=st.booleans(),
    backend=st.sampled_from(["sqlite-vec", "numpy", "faiss"]),
)
def test_knn_equals_brute_force_with_boundary_ties(knn_setup, qbits, doc_depth, chunk_depth, half, backend):
    corpus, emb, full, half_ix = knn_setup
    ix = half_ix if half else full
    _check_against_reference(ix, corpus, emb, qbits, doc_depth, chunk_depth, backend)


def test_knn_ties_are_common_and_reported(knn_setup):
    corpus, emb, full, _ = knn_setup
    rng = np.random.default_rng(5)
    q = rng.integers(0, 256, size=(40, 1), dtype=np.uint8)
    a = full.search_packed(q, doc_depth=3, chunk_depth=10)
    b = full.search_packed(q, doc_depth=3, chunk_depth=10, backend="numpy")
    assert [(r.docs, r.chunks, r.flags) for r in a] == [(r.docs, r.chunks, r.flags) for r in b]
    summary = boundary_tie_summary(a)
    assert summary["n_queries"] == 40 and summary["chunk_tie_share"] > 0.5  # 8 bits: ties everywhere
    assert summary["knn_fallback_share"] == 0.0
    assert summary["any_tie_share"] >= max(summary["chunk_tie_share"], summary["doc_tie_share"])


def test_knn_cap_falls_back_to_numpy_and_says_so(knn_setup):
    corpus, emb, full, _ = knn_setup
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(engines_mod, "SQLITE_VEC_K_MAX", 6)
        for qb in ([0] * 8, [1, 0, 1, 1, 0, 0, 1, 0]):
            res = _check_against_reference(full, corpus, emb, qb, 4, 12, "sqlite-vec")
            assert res.flags["knn_fallback"] == "numpy"
    res = _check_against_reference(full, corpus, emb, [0] * 8, 4, 12, "sqlite-vec")
    assert "knn_fallback" not in res.flags  # under the real cap the same query stays in sqlite-vec


def test_search_texts_and_empty_queries(knn_setup):
    corpus, emb, full, _ = knn_setup
    res = full.search(["ley federal", "   ", "renta"], doc_depth=2, chunk_depth=5)
    assert res[1].flags == {"empty_query": True} and res[1].docs == [] and res[1].chunks == []
    qb = [int(v > 0) for v in emb.vec("ley federal", "q")]
    ref_chunks, _ = brute_force(corpus, emb, qb)
    assert res[0].chunks == [(cid, float(-d)) for d, cid, _ in ref_chunks[:5]]
    cfg = full.config()
    assert cfg["system"] == "vector" and cfg["bit_order"] == "lsb-first" and cfg["dim"] == 8
    assert json.loads(json.dumps(cfg)) == cfg
    with pytest.raises(HarnessInputError, match="bytes per vector"):
        full.search_packed(np.zeros((1, 2), np.uint8), doc_depth=1, chunk_depth=1)
    with pytest.raises(HarnessInputError, match="backend"):
        full.search(["x"], doc_depth=1, chunk_depth=1, backend="annoy")


# ------------------------------------------------------------------------------------------------------------------
# resume after a killed build
# ------------------------------------------------------------------------------------------------------------------


def _unique_texts(corpus: Corpus) -> int:
    return int(corpus.conn.execute("SELECT count(DISTINCT text_sha256) FROM chunks").fetchone()[0])


def _docs_with_duplicates(seed: int):
    docs = random_docs(seed, n_docs=8)
    docs[6] = (docs[6][0], docs[6][1], docs[1][2][:4] + docs[6][2])  # texts shared across documents
    return docs


def test_resume_after_a_kill_mid_embedding(tmp_path):
    db = make_db(tmp_path, _docs_with_duplicates(2))
    work = tmp_path / "work"
    first = FakeEmbedder(dim=16)
    first.fail_on_call = 3
    with Corpus(db) as c:
        with pytest.raises(RuntimeError, match="simulated kill"):
            VectorIndex.build(c, work, first, batch_chunks=4)
        table = c.conn.execute("SELECT table_name FROM vector_indexes").fetchone()[0]
        assert n_rows(c, table) == (8, 8)  # two batches committed, the third lost
        n_total, n_unique = c.manifest.n_chunks, _unique_texts(c)
    second = FakeEmbedder(dim=16)
    with Corpus(db) as c:
        ix = VectorIndex.build(c, work, second, batch_chunks=4)
        s = ix.build_stats
        assert s["n_already_indexed"] == 8 and s["n_inserted"] == n_total - 8
        assert n_rows(c, table) == (n_total, n_total)
        assert first.n_texts + second.n_texts == n_unique  # nothing embedded twice
        got_ids, got_bits = ix.packed_bits()
    clean_db = make_db(tmp_path / "clean", _docs_with_duplicates(2))
    with Corpus(clean_db) as c:
        clean = VectorIndex.build(c, tmp_path / "clean" / "work", FakeEmbedder(dim=16), batch_chunks=1000)
        ids, bits = clean.packed_bits()
    assert got_ids == ids
    np.testing.assert_array_equal(got_bits, bits)


def test_resume_after_a_kill_between_cache_and_index_commits(tmp_path, monkeypatch):
    db = make_db(tmp_path, _docs_with_duplicates(4))
    work = tmp_path / "work"
    real_insert = store_mod.insert_rows
    calls = {"n": 0}

    def dying_insert(conn, table, rows):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        real_insert(conn, table, rows)

    monkeypatch.setattr(store_mod, "insert_rows", dying_insert)
    first = FakeEmbedder(dim=16)
    with Corpus(db) as c:
        with pytest.raises(KeyboardInterrupt):
            VectorIndex.build(c, work, first, batch_chunks=5)
        table = c.conn.execute("SELECT table_name FROM vector_indexes").fetchone()[0]
        assert n_rows(c, table) == (5, 5)
        n_total, n_unique = c.manifest.n_chunks, _unique_texts(c)
    monkeypatch.setattr(store_mod, "insert_rows", real_insert)
    second = FakeEmbedder(dim=16)
    with Corpus(db) as c:
        ix = VectorIndex.build(c, work, second, batch_chunks=5)
        assert ix.build_stats["n_cache_hits"] >= 5  # the batch embedded before the kill comes from the cache
        assert first.n_texts + second.n_texts == n_unique
        assert n_rows(c, table) == (n_total, n_total)
        again = VectorIndex.build(c, work, second, batch_chunks=5)
        assert again.build_stats["n_inserted"] == 0 and again.build_stats["n_embedded"] == 0


# ------------------------------------------------------------------------------------------------------------------
# stale caches and indexes
# ------------------------------------------------------------------------------------------------------------------


def test_stale_weights_are_never_reused(tmp_path):
    db = make_db(tmp_path, random_docs(3, n_docs=6))
    work = tmp_path / "work"
    old = FakeEmbedder(dim=16, seed=0, model_id="m", weights="a" * 64)
    new = FakeEmbedder(dim=16, seed=1, model_id="m", weights="b" * 64)
    with Corpus(db) as c:
        n_unique = _unique_texts(c)
        ix_old = VectorIndex.build(c, work, old)
        assert old.n_texts == n_unique
        ix_new = VectorIndex.build(c, work, new)
        s = ix_new.build_stats
        assert new.n_texts == n_unique and s["n_cache_hits"] == 0
        assert s["dropped_stale_tables"] == [ix_old.table]
        assert [k["weights_sha256"] for k in s["stale_cache_keys"]] == ["a" * 64]
        assert s["stale_cache_keys"][0]["n_vectors"] == n_unique
        tables = [r[0] for r in c.conn.execute("SELECT name FROM sqlite_master WHERE name LIKE 'vec_m_%'")]
        assert ix_old.table not in tables and ix_new.table in tables
        qb = [int(v > 0) for v in new.vec("q")]
        ref_chunks, _ = brute_force(c, new, qb)
        res = ix_new.search_packed(pack_lsb(qb)[None, :], doc_depth=1, chunk_depth=5)[0]
        assert res.chunks == [(cid, float(-d)) for d, cid, _ in ref_chunks[:5]]
        # switching back re-indexes from the cache: nothing is embedded again
        back = FakeEmbedder(dim=16, seed=0, model_id="m", weights="a" * 64)
        ix_back = VectorIndex.build(c, work, back)
        assert back.n_texts == 0 and ix_back.build_stats["n_cache_hits"] == c.manifest.n_chunks


def test_chunker_change_misses_the_cache_same_chunker_hits_it(tmp_path, monkeypatch):
    docs = random_docs(5, n_docs=6)
    db = make_db(tmp_path, docs)
    copy = tmp_path / "copy.db"
    shutil.copy(db, copy)
    work = tmp_path / "work"
    with Corpus(db) as c:
        n_unique, n_chunks = _unique_texts(c), c.manifest.n_chunks
        e1 = FakeEmbedder(dim=8)
        VectorIndex.build(c, work, e1)
        assert e1.n_texts == n_unique
    with Corpus(copy) as c:  # same corpus, same chunker, another database file: all from the cache
        e2 = FakeEmbedder(dim=8)
        ix = VectorIndex.build(c, work, e2)
        assert e2.n_texts == 0 and ix.build_stats["n_cache_hits"] == n_chunks
    monkeypatch.setitem(CHUNKERS, "md-words-test", MdWordsChunker(chunker_id="md-words-test"))
    db2 = make_db(tmp_path, docs, chunker_id="md-words-test")
    assert db2 != db
    with Corpus(db2) as c:
        assert c.manifest.chunker_id == "md-words-test" and _unique_texts(c) == n_unique
        e3 = FakeEmbedder(dim=8)
        VectorIndex.build(c, work, e3)
        assert e3.n_texts == n_unique  # same texts, other chunker id: not reused
    cache = EmbeddingCache.for_workdir(work)
    try:
        keys = cache.conn.execute("SELECT chunker_id FROM cache_keys ORDER BY chunker_id").fetchall()
        assert [k[0] for k in keys] == ["md-words-test", "md-words-v1"]
    finally:
        cache.close()


def test_index_record_mismatch_rebuilds_from_cache(tmp_path):
    db = make_db(tmp_path, random_docs(6, n_docs=5))
    with Corpus(db) as c:
        emb = FakeEmbedder(dim=8)
        ix = VectorIndex.build(c, tmp_path / "work", emb)
        c.conn.execute("UPDATE vector_indexes SET doc_order_sha256='x' WHERE table_name=?", (ix.table,))
        again = VectorIndex.build(c, tmp_path / "work", emb)
        assert again.build_stats["rebuilt"] == ["doc_order_sha256"]
        assert again.build_stats["n_inserted"] == c.manifest.n_chunks and emb.n_texts == _unique_texts(c)


# ------------------------------------------------------------------------------------------------------------------
# partial indexes and coverage
# ------------------------------------------------------------------------------------------------------------------

SLICE_DOCS = [
    ("a", "2020-01-01", ["ley uno", "ley dos", "ley tres"]),
    ("b", "2019-05-01", ["renta uno", "renta dos"]),
    ("c", "2020-01-01", ["salud uno", "salud dos", "salud tres", "salud cuatro"]),
    ("d", None, ["aviso"]),
    ("e", "2021-03-03", []),
]


def test_chronological_slices(tmp_path):
    db = make_db(tmp_path, SLICE_DOCS)
    with Corpus(db) as c:
        assert c.manifest.n_chunks == 10
        assert chronological_order(c) == ["b", "a", "c", "e", "d"]
        cases = {0.1: 1, 0.2: 1, 0.25: 2, 0.5: 2, 0.51: 3, 0.9: 3, 0.91: 5, 1.0: 5}
        for f, p in cases.items():
            sl = select_slice(c, index_fraction=f)
            assert sl.n_docs == p, f
            assert sl.n_chunks >= f * 10 - 1e-9
        assert select_slice(c, index_fraction=0.5).doc_ids == ("b", "a")
        assert select_slice(c, until="2019-12-31").doc_ids == ("b",)
        assert select_slice(c, until="2020-01-01").doc_ids == ("b", "a", "c")
        assert select_slice(c, until="2030-01-01").doc_ids == ("b", "a", "c", "e")  # undated never included
        assert select_slice(c, until="2000-01-01").n_docs == 0
        assert select_slice(c).is_full
        for bad in ({"index_fraction": 0.0}, {"index_fraction": 1.5}, {"index_fraction": float("nan")}):
            with pytest.raises(HarnessInputError, match="index_fraction"):
                select_slice(c, **bad)
        with pytest.raises(HarnessInputError, match="until"):
            select_slice(c, until="May 2020")
        with pytest.raises(HarnessInputError, match="mutually exclusive"):
            select_slice(c, index_fraction=0.5, until="2020-01-01")


def test_partial_index_coverage_extension_and_restriction(tmp_path):
    db = make_db(tmp_path, SLICE_DOCS)
    work = tmp_path / "work"
    with Corpus(db) as c:
        e = FakeEmbedder(dim=8)
        half = VectorIndex.build(c, work, e, index_fraction=0.5)
        cov = half.coverage()
        assert cov["n_indexed_chunks"] == 5 and cov["n_total_chunks"] == 10 and cov["chunk_fraction"] == 0.5
        assert cov["n_indexed_docs"] == 2 and cov["n_total_docs"] == 5
        assert cov["indexed_doc_ids"] == ["b", "a"] and cov["last_date"] == "2020-01-01"
        assert cov["index_fraction"] == 0.5 and cov["until"] is None
        assert half.is_fully_indexed("a") and not half.is_fully_indexed("c")
        assert n_rows(c, half.table) == (5, 5) and e.n_texts == 5
        res = half.search(["ley", "salud"], doc_depth=10, chunk_depth=10)
        for r in res:
            assert {d for d, _ in r.docs} <= {"a", "b"} and len(r.chunks) == 5
        full = VectorIndex.build(c, work, e)  # extends: embeds only the other 5 chunks
        assert full.build_stats["n_already_indexed"] == 5 and full.build_stats["n_inserted"] == 5
        assert e.n_texts == 10 and full.coverage()["n_indexed_chunks"] == 10
        again = VectorIndex.build(c, work, e, until="2020-01-01")  # smaller than the table: filtered, nothing new
        assert again.build_stats["n_inserted"] == 0 and e.n_texts == 10
        assert again.coverage()["indexed_doc_ids"] == ["b", "a", "c"]
        for r in again.search(["aviso", "ley"], doc_depth=10, chunk_depth=10):
            assert "d" not in {d for d, _ in r.docs} and len(r.chunks) == 9
        for backend in ("sqlite-vec", "numpy"):
            qb = [int(v > 0) for v in e.vec("x")]
            _check_against_reference(half, c, e, qb, 3, 4, backend)
            _check_against_reference(again, c, e, qb, 3, 9, backend)
        assert half.config()["coverage"]["n_indexed_chunks"] == 5


def test_build_refuses_bad_inputs(tmp_path):
    db = make_db(tmp_path, SLICE_DOCS)
    with Corpus(db) as c:
        with pytest.raises(HarnessInputError, match="multiple of 8"):
            VectorIndex.build(c, tmp_path / "work", FakeEmbedder(dim=12))
        with pytest.raises(HarnessInputError, match="mutually exclusive"):
            VectorIndex.build(c, tmp_path / "work", FakeEmbedder(), index_fraction=0.5, until="2020-01-01")
    with Corpus(db, readonly=True) as c:
        with pytest.raises(HarnessInputError, match="read-only"):
            VectorIndex.build(c, tmp_path / "work", FakeEmbedder())


def test_empty_slice_searches_to_empty_rankings(tmp_path):
    db = make_db(tmp_path, SLICE_DOCS)
    with Corpus(db) as c:
        ix = VectorIndex.build(c, tmp_path / "work", FakeEmbedder(), until="2000-01-01")
        assert ix.coverage()["n_indexed_chunks"] == 0
        for backend in ("sqlite-vec", "numpy", "faiss"):
            r = ix.search(["ley"], doc_depth=5, chunk_depth=5, backend=backend)[0]
            assert r.docs == [] and r.chunks == [] and r.flags == {}


# ------------------------------------------------------------------------------------------------------------------
# faiss backend: batched IndexBinaryFlat, exact under the tie rule
# ------------------------------------------------------------------------------------------------------------------


def _triples(results):
    return [(r.docs, r.chunks, r.flags) for r in results]


@pytest.mark.parametrize("depths", [(0, 0), (1, 1), (3, 10), (14, 120), (2, 200), (0, 7), (5, 0)])
def test_faiss_equals_numpy_on_random_bits_with_many_ties(knn_setup, depths):
    """8-bit vectors: every distance is shared by many chunks, so faiss's arbitrary tie order must be repaired."""
    pytest.importorskip("faiss")
    corpus, emb, full, half = knn_setup
    doc_depth, chunk_depth = depths
    q = np.arange(256, dtype=np.uint8)[:, None]  # every possible query
    for ix in (full, half):
        before = ix.search_stats["faiss_searches"]
        a = ix.search_packed(q, doc_depth=doc_depth, chunk_depth=chunk_depth, backend="faiss")
        b = ix.search_packed(q, doc_depth=doc_depth, chunk_depth=chunk_depth, backend="numpy")
        assert _triples(a) == _triples(b)
        assert ix.search_stats["faiss_searches"] - before <= 8  # batched: rounds, not queries


def test_faiss_extends_past_the_first_fetch(knn_setup, monkeypatch):
    """A deep ranking needs k' beyond the first fetch (and up to every chunk): still exact."""
    pytest.importorskip("faiss")
    corpus, emb, full, _ = knn_setup
    n = full.slice.n_chunks
    q = np.array([[0], [255], [0x5A]], dtype=np.uint8)
    a = full.search_packed(q, doc_depth=len(full.indexed_doc_ids), chunk_depth=n, backend="faiss")
    b = full.search_packed(q, doc_depth=len(full.indexed_doc_ids), chunk_depth=n, backend="numpy")
    assert _triples(a) == _triples(b) and all(len(r.chunks) == n for r in a)
    # small docs/large depth: tie groups wider than the first fetch force a second round
    before = full.search_stats["faiss_searches"]
    a = full.search_packed(q, doc_depth=11, chunk_depth=3, backend="faiss")
    assert _triples(a) == _triples(full.search_packed(q, doc_depth=11, chunk_depth=3, backend="numpy"))
    assert full.search_stats["faiss_searches"] - before == 2  # tie groups wider than the first fetch: 2 rounds


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), dim=st.sampled_from([8, 16, 64]))
def test_faiss_distances_equal_ours(seed, dim):
    """faiss's binary codes are our packed bytes: its Hamming distances equal ``hamming_distances`` exactly (both
    popcount the XOR of the same bytes, so the bit order within a byte cannot matter), and it stores the bytes as
    given (reconstruct round-trips)."""
    faiss = pytest.importorskip("faiss")
    from harness.retrieve.binary import hamming_distances

    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, size=(50, dim // 8), dtype=np.uint8)
    base[10:20] = base[0]  # exact duplicates: ties
    q = rng.integers(0, 256, size=(7, dim // 8), dtype=np.uint8)
    index = faiss.IndexBinaryFlat(dim)
    index.add(base)
    d, lab = index.search(q, 50)
    ours = hamming_distances(q, base)
    for i in range(q.shape[0]):
        assert np.array_equal(d[i], ours[i, lab[i]])
        assert sorted(lab[i].tolist()) == list(range(50))
    assert np.array_equal(index.reconstruct_n(0, 50), base)


def test_faiss_on_the_tiny_corpus(tmp_path):
    pytest.importorskip("faiss")
    from conftest import write_tiny_corpus

    src = write_tiny_corpus(tmp_path / "tiny")
    db, _, _ = ingest(src, tmp_path / "work")
    with Corpus(db) as c:
        ix = VectorIndex.build(c, tmp_path / "work", FakeEmbedder(dim=16), backend="faiss")
        queries = ["ley federal del trabajo", "   ", "impuesto sobre la renta", "salud", "x"]
        for depths in ((1, 1), (3, 5), (10, 50)):
            a = ix.search(queries, doc_depth=depths[0], chunk_depth=depths[1])
            b = ix.search(queries, doc_depth=depths[0], chunk_depth=depths[1], backend="numpy")
            assert _triples(a) == _triples(b)
        assert ix.config()["backend"] == "faiss"


def test_faiss_missing_is_a_clear_input_error(knn_setup, monkeypatch):
    import sys

    corpus, emb, _, _ = knn_setup
    ix = VectorIndex(corpus, emb, _.table, _.slice, backend="faiss", stats={})  # fresh: no faiss index built yet
    monkeypatch.setitem(sys.modules, "faiss", None)
    with pytest.raises(HarnessInputError, match="faiss backend unavailable: pip install faiss-cpu"):
        ix.search_packed(np.zeros((1, 1), np.uint8), doc_depth=1, chunk_depth=1)


def test_open_vector_system_passes_the_faiss_backend(tmp_path, monkeypatch):
    pytest.importorskip("faiss")
    db = make_db(tmp_path, random_docs(4))
    monkeypatch.setattr(system_mod, "load_embedder", lambda *a, **k: FakeEmbedder(dim=8))
    with Corpus(db) as c:
        ix = open_vector_system(SystemContext(c, tmp_path / "work"), VectorOptions(backend="faiss"))
        assert ix.backend == "faiss"
        a = ix.search(["ley", "renta"], doc_depth=3, chunk_depth=6)
        assert _triples(a) == _triples(ix.search(["ley", "renta"], doc_depth=3, chunk_depth=6, backend="numpy"))


# ------------------------------------------------------------------------------------------------------------------
# mean-centred binarisation
# ------------------------------------------------------------------------------------------------------------------

# Golden case (the vectors of tests/test_binary.py): chunk a#0 "alfa", a#1 "beta", b#0 "gamma".
GOLDEN_VECS = {
    "alfa": [1, 0, -3, 2, 0.5, -1, -2, 10],
    "beta": [3, 0, -6, 1, 0.0, 0.5, -1, 11],
    "gamma": [5, 3, -9, 0, 1.0, 0.5, -3, 9],
}
GOLDEN_QUERY = [4, 0.5, -7, 1, 0.6, -0.1, -1.5, 10]
GOLDEN_MEAN = [3, 1, -6, 1, 0.5, 0, -2, 10]  # column means by hand
# centred bits (x > mean), LSB first: alfa j2 j3 = 12, beta j5 j6 j7 = 224, gamma j0 j1 j4 j5 = 51, query j0 j4 j6 = 81
# sign bits (x > 0): alfa j0 j3 j4 j7 = 153, beta j0 j3 j5 j7 = 169, gamma j0 j1 j4 j5 j7 = 179, query = 155
# Hamming to the query: centred 5, 4, 3 (gamma first); sign 1, 3, 2 (alfa first)
GOLDEN_DOCS = [("a", "2020-01-01", ["alfa", "beta"]), ("b", "2019-01-01", ["gamma"])]


class TableEmbedder:
    """Fixed vectors per text (passages) and per query; counts passages embedded."""

    def __init__(self, passages: dict, queries: dict, weights: str = "t" * 64):
        self.passages = {k: np.asarray(v, np.float32) for k, v in passages.items()}
        self.queries = {k: np.asarray(v, np.float32) for k, v in queries.items()}
        self.model_id, self.weights_sha256, self.dim = "table", weights, len(next(iter(passages.values())))
        self.n_texts = 0

    def embed_passages(self, texts):
        self.n_texts += len(texts)
        return np.stack([self.passages[t] for t in texts])

    def embed_queries(self, texts):
        return np.stack([self.queries[t] for t in texts])

    def config(self) -> dict:
        return {"model_id": self.model_id, "weights_sha256": self.weights_sha256, "dim": self.dim}


def stored_bits(corpus: Corpus, table: str) -> dict[int, list[int]]:
    rows = corpus.conn.execute(f'SELECT rowid, embedding FROM "{table}" ORDER BY rowid').fetchall()
    return {r: list(bytes(b)) for r, b in rows}


def test_centered_golden_index_and_query(tmp_path):
    db = make_db(tmp_path, GOLDEN_DOCS)
    emb = TableEmbedder(GOLDEN_VECS, {"q": GOLDEN_QUERY})
    with Corpus(db) as c:
        ctr = VectorIndex.build(c, tmp_path / "work", emb, binarize="centered")
        assert ctr.center.tolist() == GOLDEN_MEAN and ctr.center.dtype == np.float32
        assert ctr.table == store_mod.table_name("table", "t" * 64) + "_ctr"
        assert stored_bits(c, ctr.table) == {1: [12], 2: [224], 3: [51]}
        ids, bits = ctr.packed_bits()
        assert ids == ["a#0", "a#1", "b#0"] and bits[:, 0].tolist() == [12, 224, 51]
        assert ctr.query_bits(["q"]).tolist() == [[81]]
        assert ctr.pack_queries(np.asarray([GOLDEN_QUERY], np.float64)).tolist() == [[81]]
        for backend in ("sqlite-vec", "numpy"):
            r = ctr.search(["q"], doc_depth=2, chunk_depth=3, backend=backend)[0]
            assert r.chunks == [("b#0", -3.0), ("a#1", -4.0), ("a#0", -5.0)]
            assert r.docs == [("b", -3.0), ("a", -4.0)]
        mean_blob = np.asarray(GOLDEN_MEAN, "<f4").tobytes()
        row = c.conn.execute("SELECT mean, mean_sha256, n_chunks, n_docs FROM vector_centers").fetchall()
        assert row == [(mean_blob, hashlib.sha256(mean_blob).hexdigest(), 3, 2)]
        cfg = ctr.config()
        assert cfg["binarize"] == "centered" and cfg["binarisation"] == CENTERED_BINARISATION
        assert cfg["center"]["mean_sha256"] == hashlib.sha256(mean_blob).hexdigest()
        assert cfg["center"]["n_chunks"] == 3 and json.loads(json.dumps(cfg)) == cfg
        s = ctr.build_stats
        assert s["center"] == {
            "n_chunks": 3,
            "mean_sha256": hashlib.sha256(mean_blob).hexdigest(),
            "recentred": False,
            "n_cleared": 0,
        }
        assert s["n_inserted"] == 3 and s["n_embedded"] == 3 and s["n_cache_hits"] == 0

        # the default is sign bits, in the original table, next to the centred one
        sign = VectorIndex.build(c, tmp_path / "work", emb)
        assert sign.table == store_mod.table_name("table", "t" * 64) and sign.center is None
        assert sign.build_stats["n_embedded"] == 0 and emb.n_texts == 3  # from the cache
        assert stored_bits(c, sign.table) == {1: [153], 2: [169], 3: [179]}
        assert sign.query_bits(["q"]).tolist() == [[155]]
        r = sign.search(["q"], doc_depth=2, chunk_depth=3)[0]
        assert r.chunks == [("a#0", -1.0), ("b#0", -2.0), ("a#1", -3.0)]
        assert sign.config()["binarize"] == "sign" and "center" not in sign.config()
        assert sign.config()["binarisation"] == "sign: bit j = 1 iff x[j] > 0"
        tables = {t for (t,) in c.conn.execute("SELECT table_name FROM vector_indexes")}
        assert tables == {sign.table, ctr.table}
        # both coexist: rebuilding either leaves the other as it is
        again = VectorIndex.build(c, tmp_path / "work", emb, binarize="centered")
        assert again.build_stats["n_inserted"] == 0 and not again.build_stats["center"]["recentred"]
        assert stored_bits(c, sign.table) == {1: [153], 2: [169], 3: [179]}
        assert ctr.search(["q"], doc_depth=1, chunk_depth=1)[0].chunks == [("b#0", -3.0)]  # still valid
        with pytest.raises(HarnessInputError, match="binarize"):
            VectorIndex.build(c, tmp_path / "work", emb, binarize="median")


class SkewedEmbedder(FakeEmbedder):
    """FakeEmbedder vectors plus a large per-dimension offset: almost every sign bit is constant."""

    def vec(self, text: str, kind: str = "p") -> np.ndarray:
        offset = np.where(np.arange(self.dim) % 2 == 0, 4.0, -4.0).astype(np.float32)
        return super().vec(text, kind) + offset


def centred_reference(corpus: Corpus, emb, query: str, doc_ids: set[str]):
    """Independent centred rankings: mean of the slice's chunk vectors, bits x > mean on both sides, sorted."""
    rows = [r for r in corpus.conn.execute("SELECT chunk_id, doc_id, text FROM chunks") if r[1] in doc_ids]
    vecs = np.stack([emb.vec(t) for _, _, t in rows]).astype(np.float64)
    mean = vecs.mean(axis=0).astype(np.float32)
    qb = (emb.vec(query, "q") > mean).astype(int)
    scored = sorted((int(((emb.vec(t) > mean).astype(int) != qb).sum()), cid, did) for cid, did, t in rows)
    best: dict[str, int] = {}
    for d, _, did in scored:
        best.setdefault(did, d)
    return mean, scored, sorted(best.items(), key=lambda kv: (kv[1], kv[0]))


def test_centered_queries_and_documents_share_the_centring(tmp_path):
    db = make_db(tmp_path, random_docs(21))
    emb = SkewedEmbedder(dim=16)
    with Corpus(db) as c:
        sign = VectorIndex.build(c, tmp_path / "work", emb)
        ctr = VectorIndex.build(c, tmp_path / "work", emb, binarize="centered")
        docs = set(ctr.slice.doc_ids)
        _, sign_bits = sign.packed_bits()
        _, ctr_bits = ctr.packed_bits()
        assert len(np.unique(sign_bits, axis=0)) <= 4  # the offset makes sign bits almost constant
        assert len(np.unique(ctr_bits, axis=0)) > 20
        queries = ["ley", "renta decreto", "salud norma aviso", "impuesto"]
        for backend in ("sqlite-vec", "numpy"):
            res = ctr.search(queries, doc_depth=5, chunk_depth=12, backend=backend)
            for q, r in zip(queries, res, strict=True):
                mean, ref_chunks, ref_docs = centred_reference(c, emb, q, docs)
                assert r.chunks == [(cid, float(-d)) for d, cid, _ in ref_chunks[:12]]
                assert r.docs == [(did, float(-d)) for did, d in ref_docs[:5]]
        np.testing.assert_array_equal(ctr.center, mean)
        # search = search_packed of query_bits; packed_bits and query bits give the same distances
        qb = ctr.query_bits(queries)
        assert [(r.docs, r.chunks) for r in ctr.search_packed(qb, doc_depth=5, chunk_depth=12)] == [
            (r.docs, r.chunks) for r in ctr.search(queries, doc_depth=5, chunk_depth=12)
        ]
        np.testing.assert_array_equal(qb, pack_centered(emb.embed_queries(queries), mean))


class NoTermsBM25:
    """A BM25 stand-in for TwoStage that matches no query term (the vector list alone decides)."""

    def __init__(self, corpus: Corpus):
        ids = [r[0] for r in corpus.conn.execute("SELECT chunk_id FROM chunks ORDER BY rowid")]
        self.chunk_index = SimpleNamespace(ids=ids, query_terms=lambda text: [], scores=lambda t: np.zeros(len(ids)))


def test_two_stage_uses_the_index_binarisation(tmp_path):
    db = make_db(tmp_path, GOLDEN_DOCS)
    emb = TableEmbedder(GOLDEN_VECS, {"q": GOLDEN_QUERY})
    with Corpus(db) as c:
        first = [QueryResult(docs=[("a", 1.0), ("b", 0.5)], chunks=[])]
        expected = {
            "centered": ([("a#0", -5.0), ("a#1", -4.0), ("b#0", -3.0)], ["b#0", "a#1", "a#0"]),
            "sign": ([("a#0", -1.0), ("a#1", -3.0), ("b#0", -2.0)], ["a#0", "b#0", "a#1"]),
        }
        for mode, (vec_list, order) in expected.items():
            ix = VectorIndex.build(c, tmp_path / "work", emb, binarize=mode)
            ts = TwoStage(NoTermsBM25(c), ix, c, dense="hamming")
            _, got, n_cand, n_novec = ts.candidate_lists("q", ["a", "b"])
            assert got == vec_list and (n_cand, n_novec) == (3, 0)
            r = ts.search(["q"], first, doc_depth=2, chunk_depth=3)[0]
            assert [cid for cid, _ in r.chunks] == order and r.docs == first[0].docs
            assert ts.config()["vector_binarize"] == mode
            # the two-stage distances equal the index's own search
            own = ix.search(["q"], doc_depth=2, chunk_depth=3)[0].chunks
            assert sorted(vec_list, key=lambda kv: (-kv[1], kv[0])) == own


def _all_centred_state(corpus: Corpus, ix: VectorIndex):
    ids, bits = ix.packed_bits()
    return ix.center.tobytes(), ids, bits.tolist(), stored_bits(corpus, ix.table)


def test_centered_extension_recentres_and_equals_a_clean_build(tmp_path):
    docs = _docs_with_duplicates(8)
    db = make_db(tmp_path, docs)
    work = tmp_path / "work"
    with Corpus(db) as c:
        e = SkewedEmbedder(dim=16)
        n_unique = _unique_texts(c)
        half = VectorIndex.build(c, work, e, index_fraction=0.5, binarize="centered", batch_chunks=3)
        n_half = half.coverage()["n_indexed_chunks"]
        mean_half = centred_reference(c, e, "x", set(half.slice.doc_ids))[0]
        np.testing.assert_array_equal(half.center, mean_half)
        assert n_rows(c, half.table) == (n_half, n_half)
        # extension: the mean changes, the whole table is re-binarised from the cache (only new texts embedded)
        full = VectorIndex.build(c, work, e, binarize="centered", batch_chunks=3)
        s = full.build_stats
        assert s["center"]["recentred"] and s["center"]["n_cleared"] == n_half
        assert s["n_already_indexed"] == 0 and s["n_inserted"] == c.manifest.n_chunks
        assert e.n_texts == n_unique and s["n_embedded"] + half.build_stats["n_embedded"] == n_unique
        with pytest.raises(HarnessInputError, match="re-centred"):
            half.search(["ley"], doc_depth=1, chunk_depth=1)
        with pytest.raises(HarnessInputError, match="re-centred"):
            half.packed_bits()
        got_full = _all_centred_state(c, full)
        # the same slice again: same mean, nothing re-binarised or inserted
        same = VectorIndex.build(c, work, e, binarize="centered", batch_chunks=1000)
        assert not same.build_stats["center"]["recentred"] and same.build_stats["n_inserted"] == 0
        assert _all_centred_state(c, same) == got_full
        # restriction re-centres too (the mean is the searched slice's), and back again
        until = VectorIndex.build(c, work, e, until=docs[2][1], binarize="centered")
        assert until.build_stats["center"]["recentred"]
        assert n_rows(c, until.table)[0] == until.coverage()["n_indexed_chunks"]
        mean_until = centred_reference(c, e, "x", set(until.slice.doc_ids))[0]
        np.testing.assert_array_equal(until.center, mean_until)
        back = VectorIndex.build(c, work, e, binarize="centered")
        assert back.build_stats["center"]["recentred"] and back.build_stats["n_embedded"] == 0
        assert _all_centred_state(c, back) == got_full
    # a clean build of the whole corpus (fresh database and cache, other batch size) is bit for bit the same
    clean_db = make_db(tmp_path / "clean", docs)
    with Corpus(clean_db) as c:
        clean = VectorIndex.build(c, tmp_path / "clean" / "work", SkewedEmbedder(dim=16), binarize="centered")
        assert _all_centred_state(c, clean) == got_full


def test_centered_resume_after_kills_equals_a_clean_build(tmp_path, monkeypatch):
    docs = _docs_with_duplicates(9)
    clean_db = make_db(tmp_path / "clean", docs)
    with Corpus(clean_db) as c:
        ref = _all_centred_state(
            c, VectorIndex.build(c, tmp_path / "clean" / "work", SkewedEmbedder(16), binarize="centered")
        )
    # killed while embedding (before the mean exists): the cache keeps the committed batches
    db = make_db(tmp_path, docs)
    work = tmp_path / "work"
    first = SkewedEmbedder(dim=16)
    first.fail_on_call = 3
    with Corpus(db) as c:
        n_unique = _unique_texts(c)
        with pytest.raises(RuntimeError, match="simulated kill"):
            VectorIndex.build(c, work, first, binarize="centered", batch_chunks=4)
        table = c.conn.execute("SELECT table_name FROM vector_indexes").fetchone()[0]
        assert n_rows(c, table) == (0, 0)  # nothing is binarised before the slice mean is known
    # killed while inserting (after the mean was recorded): resumes with the same mean
    real_insert = store_mod.insert_rows
    calls = {"n": 0}

    def dying_insert(conn, table, rows):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        real_insert(conn, table, rows)

    monkeypatch.setattr(store_mod, "insert_rows", dying_insert)
    second = SkewedEmbedder(dim=16)
    with Corpus(db) as c:
        with pytest.raises(KeyboardInterrupt):
            VectorIndex.build(c, work, second, binarize="centered", batch_chunks=4)
        assert n_rows(c, table) == (4, 4)
    monkeypatch.setattr(store_mod, "insert_rows", real_insert)
    third = SkewedEmbedder(dim=16)
    with Corpus(db) as c:
        ix = VectorIndex.build(c, work, third, binarize="centered", batch_chunks=4)
        s = ix.build_stats
        assert not s["center"]["recentred"] and s["n_already_indexed"] == 4
        assert s["n_inserted"] == c.manifest.n_chunks - 4 and s["n_embedded"] == 0
        assert first.n_texts + second.n_texts + third.n_texts == n_unique  # nothing embedded twice
        assert _all_centred_state(c, ix) == ref


def test_stale_weights_drop_both_binarisations(tmp_path):
    db = make_db(tmp_path, random_docs(3, n_docs=5))
    work = tmp_path / "work"
    with Corpus(db) as c:
        old = FakeEmbedder(dim=16, seed=0, model_id="m", weights="a" * 64)
        s_old = VectorIndex.build(c, work, old)
        c_old = VectorIndex.build(c, work, old, binarize="centered")
        new = FakeEmbedder(dim=16, seed=1, model_id="m", weights="b" * 64)
        c_new = VectorIndex.build(c, work, new, binarize="centered")
        assert c_new.build_stats["dropped_stale_tables"] == sorted([s_old.table, c_old.table])
        assert [r[0] for r in c.conn.execute("SELECT table_name FROM vector_centers")] == [c_new.table]
        assert [r[0] for r in c.conn.execute("SELECT table_name FROM vector_indexes")] == [c_new.table]


def test_open_vector_system_reads_binarize(tmp_path, monkeypatch):
    db = make_db(tmp_path, GOLDEN_DOCS)
    emb = TableEmbedder(GOLDEN_VECS, {"q": GOLDEN_QUERY})
    seen: list[str] = []
    monkeypatch.setattr(system_mod, "load_embedder", lambda model, **k: seen.append(model) or emb)
    with Corpus(db) as c:
        for opts, mode in ((VectorOptions(), "sign"), (VectorOptions(binarize="centered"), "centered")):
            ix = open_vector_system(SystemContext(c, tmp_path / "work"), opts)
            assert ix.binarize == mode and ix.config()["binarize"] == mode
    assert seen == ["use"] * 2  # the default model, by its registry name


def test_vector_options_check_their_values():
    assert VectorOptions(model=None).model == "use"
    assert VectorOptions(rescore="4").rescore == 4 and VectorOptions().rescore == 1
    assert VectorOptions(index_fraction="0.5", until=None).index_fraction == 0.5
    for bad, field in (
        ({"binarize": "x"}, "binarize"),
        ({"backend": "annoy"}, "backend"),
        ({"index_fraction": 0}, "index_fraction"),
        ({"index_fraction": 1.5}, "index_fraction"),
        ({"until": "2024-13-01"}, "until"),
        ({"index_fraction": 0.5, "until": "2024-01-01"}, "mutually exclusive"),
        ({"k1": 1.2}, "k1"),
        ({"rescore": -1}, "rescore"),
        ({"rescore": 65}, "rescore"),
    ):
        with pytest.raises(ValidationError, match=field):
            VectorOptions(**bad)


# ------------------------------------------------------------------------------------------------------------------
# the real corpus with the default model
# ------------------------------------------------------------------------------------------------------------------


@pytest.mark.realcorpus
def test_real_corpus_default_model_index(tmp_path):
    """The default model (``use``) on a chronological slice of the real corpus: a 5 % index, extended to 10 %
    (resumed: the 5 % rows are kept), then centred bits of the 10 % slice, and rescoring. The embedding cache of the
    shared work directory (``HARNESS_WORKDIR``, default ``.harness``) is copied in when it exists, so only a cold CI
    embeds, and then only the 10 % slice (the whole corpus is a measurement, ``benchmarks/measure_vectors.py``)."""
    import os

    from conftest import REAL_CORPUS, REPO

    from harness.retrieve.embed import DEFAULT_MODEL, load_embedder

    if not REAL_CORPUS.is_dir():
        pytest.skip(f"{REAL_CORPUS} absent")
    shared_cache = Path(os.environ.get("HARNESS_WORKDIR", REPO / ".harness")) / "embeddings" / "cache.sqlite"
    if shared_cache.is_file():
        (tmp_path / "work" / "embeddings").mkdir(parents=True)
        shutil.copyfile(shared_cache, tmp_path / "work" / "embeddings" / "cache.sqlite")
    db, manifest, _ = ingest(REAL_CORPUS, tmp_path / "work")
    emb = load_embedder()
    assert emb.model_id == "use-multilingual-v3" and DEFAULT_MODEL == "use"
    with Corpus(db) as c:
        t0 = time.perf_counter()
        small = VectorIndex.build(c, tmp_path / "work", emb, index_fraction=0.05, binarize="sign")
        t1 = time.perf_counter()
        ix = VectorIndex.build(c, tmp_path / "work", emb, index_fraction=0.1, binarize="sign")
        t2 = time.perf_counter()
        s = ix.build_stats
        cov = ix.coverage()
        assert n_rows(c, ix.table) == (cov["n_indexed_chunks"], cov["n_indexed_chunks"])
        assert 0.1 <= cov["chunk_fraction"] < 0.2 and small.coverage()["chunk_fraction"] >= 0.05
        assert s["n_already_indexed"] == small.coverage()["n_indexed_chunks"]
        queries = [
            "derechos de los trabajadores",
            "impuesto sobre la renta de las personas morales",
            "Ley General de Salud",
            "reforma al artículo 4 constitucional",
        ]
        a = ix.search(queries, doc_depth=20, chunk_depth=100)
        b = ix.search(queries, doc_depth=20, chunk_depth=100, backend="numpy")
        assert [(r.docs, r.chunks, r.flags) for r in a] == [(r.docs, r.chunks, r.flags) for r in b]
        assert all(len(r.chunks) == 100 and len(r.docs) == 20 for r in a)
        assert all({d for d, _ in r.docs} <= ix.indexed_doc_ids for r in a)
        qa = small.search(queries, doc_depth=20, chunk_depth=100)
        assert all({d for d, _ in r.docs} <= small.indexed_doc_ids for r in qa)
        # centred bits from the same cached floats: no embedding, better balanced dimensions, both backends agree
        ctr = VectorIndex.build(c, tmp_path / "work", emb, index_fraction=0.1, binarize="centered")
        assert ctr.build_stats["n_embedded"] == 0 and ctr.table != ix.table
        share = np.unpackbits(ctr.packed_bits()[1], axis=1, bitorder="little").mean(axis=0)
        sign_share = np.unpackbits(ix.packed_bits()[1], axis=1, bitorder="little").mean(axis=0)
        assert np.abs(share - 0.5).mean() < np.abs(sign_share - 0.5).mean()
        ca = ctr.search(queries, doc_depth=20, chunk_depth=100)
        cb = ctr.search(queries, doc_depth=20, chunk_depth=100, backend="numpy")
        assert [(r.docs, r.chunks, r.flags) for r in ca] == [(r.docs, r.chunks, r.flags) for r in cb]
        assert [(r.docs, r.chunks) for r in ix.search(queries, doc_depth=20, chunk_depth=100)] == [
            (r.docs, r.chunks) for r in a
        ]  # the sign table is untouched by the centred build
        # rescoring: the default index re-orders its Hamming candidates by cosine, and the run records it
        rs = VectorIndex.build(c, tmp_path / "work", emb, index_fraction=0.1, binarize="sign", rescore=8)
        ra = rs.search(queries, doc_depth=20, chunk_depth=100)
        assert all(r.flags["rescored"] >= 100 for r in ra) and rs.config()["rescore"] == 8
        for r in ra:
            sc = [x for _, x in r.chunks]
            assert sc == sorted(sc, reverse=True) and -1.0 <= sc[-1] <= sc[0] <= 1.0
        print(
            f"\nreal corpus: {manifest.n_chunks} chunks; 5% build {t1 - t0:.1f}s, to 10% {t2 - t1:.1f}s; "
            f"embedded {small.build_stats['n_embedded'] + s['n_embedded']} texts; ties {boundary_tie_summary(a)}"
        )


def test_cache_with_another_schema_is_refused(tmp_path):
    import apsw

    path = tmp_path / "embeddings" / "cache.sqlite"
    path.parent.mkdir()
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE embeddings(x)")
    conn.close()
    with pytest.raises(HarnessInputError, match="schema 0"):
        EmbeddingCache.for_workdir(tmp_path)
    fresh = EmbeddingCache(tmp_path / "other.sqlite")
    key = fresh.key_id("m", "w" * 64, "c", 8)
    fresh.put_many(key, ["ab" * 32, "cd" * 32], np.arange(16, dtype=np.float32).reshape(2, 8))
    fresh.put_many(key, ["ab" * 32], np.zeros((1, 8), dtype=np.float32))  # kept, not replaced
    got = fresh.get_many(key, ["ab" * 32, "ef" * 32], 8)
    assert list(got) == ["ab" * 32] and got["ab" * 32].tolist() == list(range(8))
    assert fresh.count(key) == 2 and fresh.key_id("m", "w" * 64, "c", 8) == key
    with pytest.raises(HarnessInputError, match="dim"):
        fresh.key_id("m", "w" * 64, "c", 16)
    fresh.close()
