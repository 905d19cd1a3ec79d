"""Distributed embedding build on a local Ray instance (two workers) against the single-process build.

Skipped only when Ray Data is not importable. One local Ray session (127.0.0.1, two CPUs) serves the module.
"""

from __future__ import annotations

import random
import shutil
import subprocess

import numpy as np
import pytest

pytest.importorskip("ray.data")

from harness.corpus.ingest import ingest  # noqa: E402
from harness.corpus.store import Corpus  # noqa: E402
from harness.retrieve.embed import DEFAULT_MODEL, load_embedder  # noqa: E402
from harness.retrieve.ray_embed import local_ray, merge_shards, plan_shards, ray_build, shard_dir  # noqa: E402
from harness.retrieve.vector import EmbeddingCache, VectorIndex  # noqa: E402

WORDS = (
    "ley artículo federal trabajo salario mínimo decreto reforma constitución estado municipio impuesto renta valor "
    "agregado servicio público salud educación tribunal amparo comisión nacional agua energía contrato licitación "
    "seguridad social pensión vivienda crédito banco moneda tasa interés publicación diario oficial"
).split()


def _write_corpus(root, n_docs=10, seed=0):
    rng = random.Random(seed)
    root.mkdir(parents=True)
    for d in range(n_docs):
        secs = []
        for s in range(rng.randint(2, 6)):
            body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(15, 260)))
            secs.append(f"## Artículo {s + 1}\n\n{body}")
        # a repeated paragraph: two chunks with one text hash (embedded once, inserted twice)
        secs.append("## Transitorio\n\nEste decreto entra en vigor al día siguiente de su publicación.")
        (root / f"doc{d:02d}.md").write_text(f"# Documento {d}\n\n" + "\n\n".join(secs), encoding="utf-8")
    return root


def _index_rows(corpus: Corpus, table: str):
    return corpus.conn.execute(f'SELECT rowid, embedding, doc_pos FROM "{table}" ORDER BY rowid').fetchall()


def _record(corpus: Corpus, table: str):
    row = corpus.conn.execute("SELECT * FROM vector_indexes WHERE table_name=?", (table,)).fetchone()
    cols = [c[1] for c in corpus.conn.execute("PRAGMA table_info(vector_indexes)").fetchall()]
    rec = dict(zip(cols, row, strict=True))
    rec.pop("created_at")
    return rec


def _cache_items(workdir):
    cache = EmbeddingCache.for_workdir(workdir)
    try:
        rows = cache.conn.execute(
            "SELECT k.model_id, k.weights_sha256, k.chunker_id, e.text_sha256, e.vector "
            "FROM embeddings e JOIN cache_keys k USING(key_id) ORDER BY e.text_sha256"
        ).fetchall()
    finally:
        cache.close()
    return [(a, b, c, bytes(h), bytes(v)) for a, b, c, h, v in rows]


@pytest.fixture(scope="module")
def ray_session():
    with local_ray(num_cpus=2, object_store_memory=200 * 1024 * 1024) as started:
        yield started


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Single-process build of the small corpus (the truth the Ray build must equal)."""
    base = tmp_path_factory.mktemp("ray")
    src = _write_corpus(base / "corpus")
    wd = base / "single"
    db, man, _ = ingest(src, wd)
    emb = load_embedder(DEFAULT_MODEL, models_dir=wd / "models")
    with Corpus(db) as c:
        idx = VectorIndex.build(c, wd, emb)
        rows = _index_rows(c, idx.table)
        rec = _record(c, idx.table)
        res = idx.search(["salario mínimo federal", "amparo tribunal"], doc_depth=5, chunk_depth=10)
        cidx = VectorIndex.build(c, wd, emb, binarize="centered")
        centered = (cidx.table, _index_rows(c, cidx.table))
    return {"src": src, "base": base, "table": idx.table, "rows": rows, "record": rec, "cache": _cache_items(wd),
            "search": res, "n_chunks": man.n_chunks, "centered": centered}  # fmt: skip


def _ray_workdir(reference, name):
    wd = reference["base"] / name
    db, _, _ = ingest(reference["src"], wd)
    return wd, db


def test_ray_binds_loopback_only(ray_session):
    import ray

    assert {n["NodeManagerAddress"] for n in ray.nodes()} == {"127.0.0.1"}
    if shutil.which("ss") is None:
        pytest.skip("ss not available to list listening sockets")
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout
    ray_lines = [ln for ln in out.splitlines() if any(k in ln for k in ("raylet", "gcs_server", "ray::"))]
    assert ray_lines, out
    for ln in ray_lines:
        local = ln.split()[3]
        assert local.startswith(("127.0.0.1:", "[::ffff:127.0.0.1]:", "[::1]:")), ln


def test_two_workers_equal_single_process_bit_for_bit(ray_session, reference):
    wd, db = _ray_workdir(reference, "ray2")
    with Corpus(db) as c:
        st = ray_build(c, wd, workers=2, shard_size=7)
        assert st["table"] == reference["table"]
        assert _index_rows(c, st["table"]) == reference["rows"]
        assert _record(c, st["table"]) == reference["record"]
        emb = load_embedder(DEFAULT_MODEL, models_dir=wd / "models")
        idx = VectorIndex.build(c, wd, emb)
        assert idx.build_stats["n_inserted"] == 0 and idx.build_stats["n_embedded"] == 0
        assert (
            idx.search(["salario mínimo federal", "amparo tribunal"], doc_depth=5, chunk_depth=10)
            == (reference["search"])
        )
    assert _cache_items(wd) == reference["cache"]
    # the repeated paragraph is embedded once: distinct texts < chunks
    assert st["n_to_embed"] == len(reference["cache"]) < reference["n_chunks"]
    assert st["n_slice_chunks"] == reference["n_chunks"]
    assert st["n_shards"] == -(-st["n_to_embed"] // 7)
    assert st["index"]["n_embedded"] == 0  # everything came from the Ray shards through the cache
    assert st["index"]["n_inserted"] == reference["n_chunks"]
    assert not list(shard_dir(wd, emb.model_id, emb.weights_sha256, "md-words-v1").glob("*.npz"))
    # a second run has nothing to do
    with Corpus(db) as c:
        again = ray_build(c, wd, workers=2, shard_size=7)
        assert again["n_to_embed"] == 0 and again["index"]["n_inserted"] == 0
        # the centred binarisation is applied to the merged floats like a single-process centred build
        cen = ray_build(c, wd, workers=2, shard_size=7, binarize="centered")
        assert cen["n_to_embed"] == 0
        assert (cen["table"], _index_rows(c, cen["table"])) == reference["centered"]


def test_worker_death_is_retried(ray_session, reference):
    wd, db = _ray_workdir(reference, "ray_kill")
    marker = reference["base"] / "killed-once"
    with Corpus(db) as c:
        st = ray_build(c, wd, workers=2, shard_size=5, _kill_once=str(marker))
        assert marker.exists()  # a worker did die (os._exit) in the middle of a shard
        assert int(marker.read_text()) not in st["worker_pids"]
        assert _index_rows(c, st["table"]) == reference["rows"]
    assert _cache_items(wd) == reference["cache"]


def test_resume_merges_leftover_shards_and_embeds_the_rest(ray_session, reference):
    """A driver that died after some shards were written: the next run merges them and embeds only the rest."""
    import ray

    from harness.retrieve.ray_embed import _ShardEmbedder
    from harness.retrieve.vector import select_slice

    wd, db = _ray_workdir(reference, "ray_resume")
    emb = load_embedder(DEFAULT_MODEL, models_dir=wd / "models")
    folder = shard_dir(wd, emb.model_id, emb.weights_sha256, "md-words-v1")
    folder.mkdir(parents=True)
    with Corpus(db) as c:
        shards, _ = plan_shards(c, set(), select_slice(c).doc_ids, 6)
        import torch

        threads = torch.get_num_threads()
        try:
            worker = _ShardEmbedder(str(db), str(folder), DEFAULT_MODEL, str(wd / "models"), "cpu", None, 1,
                                    emb.weights_sha256)  # fmt: skip
            worker({"rowids": [shards[0], shards[2]]})  # two shards finished before the "crash"
        finally:
            torch.set_num_threads(threads)
        n_left = shards[0].size + shards[2].size
        assert len(list(folder.glob("shard-*.npz"))) == 2
        st = ray_build(c, wd, workers=2, shard_size=6)
        assert st["n_recovered"] == n_left
        assert st["n_to_embed"] == sum(s.size for s in shards) - n_left
        assert _index_rows(c, st["table"]) == reference["rows"]
    assert _cache_items(wd) == reference["cache"]
    assert ray.is_initialized()  # the caller's session was reused, not shut down


def test_merge_refuses_foreign_or_corrupt_shards(tmp_path, reference):
    emb = load_embedder(DEFAULT_MODEL, models_dir=tmp_path / "models")
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    try:
        key = cache.key_id(emb.model_id, emb.weights_sha256, "md-words-v1", emb.dim)
        vecs = np.ones((2, emb.dim), dtype=np.float32)
        good_bits = np.packbits(vecs > 0, axis=1, bitorder="little")
        shas = np.arange(64, dtype=np.uint8).reshape(2, 32)
        np.savez(tmp_path / "shard-1.npz", rowids=np.array([1, 2]), shas=shas, vectors=vecs, bits=good_bits,
                 model_id=np.array("other-model"), weights_sha256=np.array(emb.weights_sha256))  # fmt: skip
        from harness.errors import HarnessInputError

        with pytest.raises(HarnessInputError, match="made by other-model"):
            merge_shards(tmp_path, cache, key, emb)
        (tmp_path / "shard-1.npz").unlink()
        np.savez(tmp_path / "shard-2.npz", rowids=np.array([1, 2]), shas=shas, vectors=vecs, bits=~good_bits,
                 model_id=np.array(emb.model_id), weights_sha256=np.array(emb.weights_sha256))  # fmt: skip
        with pytest.raises(HarnessInputError, match="not the signs"):
            merge_shards(tmp_path, cache, key, emb)
        assert cache.count(key) == 0
    finally:
        cache.close()
