"""Derived files carry a manifest checked on every load (issue 26, items 2 and 7): a damaged BM25 index, evidence
cache or vector index is rebuilt with one notice, a damaged embedding cache refused naming it; none is ever used as
it is, and an unchanged one is never hashed again."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from conftest import write_tiny_corpus, write_tiny_goldset
from test_vector import FakeEmbedder, make_db, random_docs
from typer.testing import CliRunner

import harness.derived as derived
from harness.cli import app
from harness.corpus.store import Corpus
from harness.derived import check_manifest, write_manifest
from harness.errors import HarnessInputError
from harness.retrieve.vector import VectorIndex
from harness.retrieve.vector.cache import EmbeddingCache, cached_passage_embeddings


@pytest.fixture
def tiny(tmp_path):
    corpus = write_tiny_corpus(tmp_path / "corpus")
    return corpus, write_tiny_goldset(tmp_path / "gs", corpus), tmp_path


def run(tiny, run_id: str, systems: str = "bm25", *extra: str):
    corpus, goldset, tmp = tiny
    args = ["run", "--corpus", corpus, "--goldset", goldset, "--systems", systems, "--workdir", tmp / "wd"]
    r = CliRunner().invoke(app, [str(a) for a in [*args, "--runs-dir", tmp / "runs", "--run-id", run_id, *extra]])
    return r


def outcome(tmp: Path, run_id: str) -> tuple[list, dict]:
    """What a run measured: per question metrics and ranks, and every TREC run file (rankings with scores)."""
    rec = tmp / "runs" / run_id
    rows = [json.loads(x) for x in (rec / "per_question.jsonl").read_text("utf-8").splitlines()]
    per_q = [(r["system"], r["qid"], r["metrics"], r["gold_chunk_ranks"], r["gold_doc_ranks"]) for r in rows]
    trec = {p.name: p.read_text("utf-8") for p in sorted((rec / "trec").glob("*.run"))}
    return per_q, trec


def bm25_folder(tmp: Path, level: str) -> Path:
    (folder,) = (tmp / "wd" / "indexes" / "bm25").glob(f"{level}-*")
    return folder


def random_floats_in_half(path: Path) -> None:
    """The issue's damage: random floats written over the second half of an array's data, header kept."""
    arr = np.load(path)
    raw = bytearray(path.read_bytes())
    start = len(raw) - arr.nbytes + arr.itemsize * (arr.size // 2)
    rng = np.random.default_rng(7)
    raw[start:] = (rng.random(arr.size - arr.size // 2) * 20).astype(arr.dtype).tobytes()
    path.write_bytes(bytes(raw))


DAMAGE = {
    "random floats in half of data.csc.index.npy": lambda f: random_floats_in_half(f / "data.csc.index.npy"),
    "a zero-byte .npy": lambda f: (f / "indptr.csc.index.npy").write_bytes(b""),
    "a broken ids.json": lambda f: (f / "ids.json").write_text('["ley-a#0", "ley-b', "utf-8"),
    "ids.json of the same size, other ids": lambda f: (f / "ids.json").write_text(
        (f / "ids.json").read_text("utf-8").replace("ley-a", "ley-x"), "utf-8"
    ),
    "a legacy index without a manifest": lambda f: (f / "manifest.json").unlink(),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_bm25_index_is_rebuilt_and_gives_the_undamaged_numbers(tiny, damage):
    tmp = tiny[2]
    assert run(tiny, "clean").exit_code == 0
    clean = outcome(tmp, "clean")
    for level in ("chunk", "document"):
        DAMAGE[damage](bm25_folder(tmp, level))
    r = run(tiny, "after")
    assert r.exit_code == 0, r.output
    notices = [x for x in r.output.splitlines() if x.startswith("harness: bm25:")]
    assert len(notices) == 2 and all("rebuilding it" in x for x in notices), r.output
    assert outcome(tmp, "after") == clean
    assert run(tiny, "again").exit_code == 0 and outcome(tmp, "again") == clean


def test_an_unchanged_index_is_never_hashed_and_a_touched_one_once(tiny, monkeypatch):
    tmp = tiny[2]
    assert run(tiny, "a").exit_code == 0
    hashed: list[str] = []
    real = derived.sha256_file
    monkeypatch.setattr(derived, "sha256_file", lambda p: hashed.append(Path(p).name) or real(p))
    r = run(tiny, "b")
    assert r.exit_code == 0 and hashed == [] and "harness: bm25" not in r.output  # warm run: stat and headers only
    data = bm25_folder(tmp, "chunk") / "data.csc.index.npy"
    st = data.stat()
    os.utime(data, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # same bytes, new mtime (a copy, a touch)
    assert run(tiny, "c").exit_code == 0 and hashed == ["data.csc.index.npy"]
    assert run(tiny, "d").exit_code == 0 and hashed == ["data.csc.index.npy"]  # the manifest took the new stamp
    assert outcome(tmp, "d") == outcome(tmp, "a")


def test_the_manifest_records_sizes_shapes_dtypes_and_hashes(tmp_path):
    np.save(tmp_path / "a.npy", np.arange(6, dtype=np.int32).reshape(2, 3))
    (tmp_path / "b.json").write_text("[1]", "utf-8")
    files = {"a.npy": tmp_path / "a.npy", "b.json": tmp_path / "b.json"}
    man = write_manifest(tmp_path / "m.json", "k", files, facts={"n": 2})
    assert man.files["a.npy"].shape == [2, 3] and man.files["a.npy"].dtype == "<i4"
    assert man.files["b.json"].size == 3 and len(man.files["b.json"].sha256) == 64
    assert check_manifest(tmp_path / "m.json", "k", files, facts={"n": 2}) is None
    assert "n differ" in check_manifest(tmp_path / "m.json", "k", files, facts={"n": 3})
    assert "kind 'k'" in check_manifest(tmp_path / "m.json", "other", files)
    np.save(tmp_path / "a.npy", np.arange(6, dtype=np.int64).reshape(2, 3))
    assert "bytes, the manifest says" in check_manifest(tmp_path / "m.json", "k", files)
    np.save(tmp_path / "a.npy", np.arange(6, dtype=np.int32).reshape(3, 2))  # same size, other shape
    assert "shape [3, 2] dtype <i4, the manifest says [2, 3] <i4" in check_manifest(tmp_path / "m.json", "k", files)
    (tmp_path / "m.json").write_text("{", "utf-8")
    assert "not valid JSON" in check_manifest(tmp_path / "m.json", "k", files)


def test_a_damaged_evidence_cache_is_recomputed(tiny):
    tmp = tiny[2]
    assert run(tiny, "clean").exit_code == 0
    clean = outcome(tmp, "clean")
    (cache,) = [p for p in (tmp / "wd" / "evidence").glob("*.json") if not p.name.endswith(".manifest.json")]
    obj = json.loads(cache.read_text("utf-8"))
    text = cache.read_text("utf-8")
    assert '"chunk_id": "ley-a#0"' in text or "ley-a#0" in text
    cache.write_text(text.replace("ley-a#0", "ley-b#0"), "utf-8")  # still valid JSON, wrong evidence
    assert json.loads(cache.read_text("utf-8")).keys() == obj.keys()
    r = run(tiny, "after")
    assert r.exit_code == 0 and r.output.count("harness: evidence cache") == 1, r.output
    assert outcome(tmp, "after") == clean


# ---------------------------------------------------------------------------------------------------------------
# the embedding cache (item 7) and the vector index
# ---------------------------------------------------------------------------------------------------------------


def embed_texts(work: Path, texts: list[str]) -> tuple[np.ndarray, dict]:
    cache = EmbeddingCache.for_workdir(work)
    try:
        return cached_passage_embeddings(cache, FakeEmbedder(dim=16), "md-words-v1", texts)
    finally:
        cache.close()


def truncate(path: Path) -> None:
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size // 2)


def random_bytes(path: Path) -> None:
    path.write_bytes(np.random.default_rng(3).integers(0, 256, path.stat().st_size, dtype=np.uint8).tobytes())


def random_pages(path: Path) -> None:
    """Random bytes over every page but the first (the header stays a valid SQLite header)."""
    raw = bytearray(path.read_bytes())
    raw[4096:] = np.random.default_rng(5).integers(0, 256, len(raw) - 4096, dtype=np.uint8).tobytes()
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("damage", [truncate, random_bytes, random_pages])
def test_a_damaged_embedding_cache_is_refused_naming_it_and_never_read(tmp_path, damage):
    """Refused with one line naming the file and the fix, the file left as it is (other runs may read it; re-embedding
    a corpus is slow); once the user deletes it, the vectors equal those of the undamaged cache."""
    texts = [f"texto numero {i} " * 40 for i in range(300)]
    clean, s1 = embed_texts(tmp_path / "w", texts)
    assert s1["n_embedded"] == 300
    _, s2 = embed_texts(tmp_path / "w", texts)
    assert s2["n_cache_hits"] == 300  # warm: read from the cache
    cache = tmp_path / "w" / "embeddings" / "cache.sqlite"
    damage(cache)
    damaged = cache.read_bytes()
    with pytest.raises(
        HarnessInputError, match=r"cache\.sqlite: damaged embedding cache \(.*\); .* delete cache\.sqlite"
    ):
        embed_texts(tmp_path / "w", texts)
    assert cache.read_bytes() == damaged
    for p in cache.parent.glob("cache.sqlite*"):
        p.unlink()
    got, s3 = embed_texts(tmp_path / "w", texts)
    np.testing.assert_array_equal(got, clean)
    assert s3["n_embedded"] == 300


def test_a_read_only_open_leaves_the_cache_unchanged_and_the_next_open_checks_nothing(tmp_path, monkeypatch):
    """Every open used to write the schema version again, so the file's mtime moved at close without a new stamp and
    the next open re-checked the whole cache (PRAGMA quick_check and a join over every vector: minutes for DOF's
    6.4 GB cache, on every vector run). A warm open now writes nothing and checks nothing; a write re-stamps."""
    texts = [f"texto numero {i} " * 40 for i in range(50)]
    embed_texts(tmp_path / "w", texts)
    path = tmp_path / "w" / "embeddings" / "cache.sqlite"
    calls = []
    real = EmbeddingCache._verify

    def counted(self, name, p):
        calls.append(name)
        return real(self, name, p)

    monkeypatch.setattr(EmbeddingCache, "_verify", counted)
    before = (path.stat().st_size, path.stat().st_mtime_ns)
    for _ in range(3):
        _, stats = embed_texts(tmp_path / "w", texts)  # warm: every vector a cache hit
        assert stats["n_cache_hits"] == 50
    assert (path.stat().st_size, path.stat().st_mtime_ns) == before
    assert calls == []
    embed_texts(tmp_path / "w", [*texts, "un texto nuevo " * 30])  # a write: stamped at close
    embed_texts(tmp_path / "w", texts)
    assert calls == []
    path.touch()  # changed behind the cache's back: checked once, then stamped
    embed_texts(tmp_path / "w", texts)
    embed_texts(tmp_path / "w", texts)
    assert calls == ["cache.sqlite"]


@pytest.mark.slow  # loads an embedding model (about 40 s here)
def test_a_damaged_embedding_cache_is_one_line_in_run_and_embed(tiny):
    """The command line: exit 2 and one line naming the file, no traceback (before: apsw tracebacks)."""
    corpus, _goldset, tmp = tiny
    cache = tmp / "wd" / "embeddings" / "cache.sqlite"
    cache.parent.mkdir(parents=True)
    cache.write_bytes(np.random.default_rng(1).integers(0, 256, 20_000, dtype=np.uint8).tobytes())
    for r in (
        run(tiny, "v", "vector", "--model", "wordllama"),
        CliRunner().invoke(
            app, ["embed", "--corpus", str(corpus), "--workdir", str(tmp / "wd"), "--model", "wordllama"]
        ),
    ):
        errors = [x for x in r.output.splitlines() if x.startswith("error:")]
        assert r.exit_code == 2 and len(errors) == 1 and "Traceback" not in r.output, r.output
        assert f"{cache}: damaged embedding cache" in errors[0]


def test_a_vector_index_edited_in_place_is_rebuilt_from_the_cache(tmp_path, capsys):
    db = make_db(tmp_path, random_docs(6, n_docs=5))
    emb = FakeEmbedder(dim=16)
    with Corpus(db) as c:
        ix = VectorIndex.build(c, tmp_path / "work", emb)
        ids, bits = ix.packed_bits()
        table = ix.table
    with Corpus(db) as c:  # warm: no notice, nothing rebuilt
        again = VectorIndex.build(c, tmp_path / "work", emb)
        assert again.build_stats["rebuilt"] is None and again.build_stats["n_inserted"] == 0
    assert capsys.readouterr().err == ""
    with Corpus(db) as c:  # flip every bit of one stored vector
        rid, blob, pos = c.conn.execute(f'SELECT rowid, embedding, doc_pos FROM "{table}" LIMIT 1').fetchone()
        flipped = bytes(255 - b for b in bytes(blob))
        c.conn.execute(f'DELETE FROM "{table}" WHERE rowid=?', (rid,))
        c.conn.execute(
            f'INSERT INTO "{table}"(rowid, embedding, doc_pos) VALUES (?, vec_bit(?), ?)', (rid, flipped, pos)
        )
    with Corpus(db) as c:
        fixed = VectorIndex.build(c, tmp_path / "work", emb)
        assert fixed.build_stats["rebuilt"] == ["damaged"]
        got_ids, got_bits = fixed.packed_bits()
    err = capsys.readouterr().err
    assert err.count("harness: vector index") == 1 and "rebuilding the table" in err, err
    assert got_ids == ids
    np.testing.assert_array_equal(got_bits, bits)
