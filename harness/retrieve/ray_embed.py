"""Distributed embedding build on Ray Data: ``harness embed --engine ray`` (extra ``ray``).

Embedding millions of chunks is the one step of an evaluation that does not fit one machine's CPUs in reasonable
time, so it is handed to Ray Data; everything else (the embedding cache, the sqlite-vec index, its record and its
checks) stays the harness's own code path.

Pipeline
--------
1. **Recover.** Shard files left by an earlier run that stopped after its workers finished but before the merge
   (``<workdir>/embeddings/ray/<model key>/shard-*.npz``) are merged into the embedding cache first.
2. **Plan (driver).** The chunks of the slice (whole corpus, ``index_fraction`` or ``until``, as
   :func:`harness.retrieve.vector.slices.select_slice`) whose text hash has no vector in the cache for this (model id,
   weights sha256, chunker id) are listed once per distinct text (first rowid) in rowid order and cut into shards of
   ``shard_size`` rowids. Only rowids travel through Ray's object store.
3. **Embed (workers).** ``ray.data.from_items(shards).map_batches(_ShardEmbedder, compute=ActorPoolStrategy(size=
   workers))``: each
   actor loads the embedder once (refusing weights whose fingerprint differs from the driver's), then per shard reads
   its chunks' texts and hashes from the corpus database (read-only), embeds them
   (:meth:`harness.retrieve.embed.Embedder.embed_passages`), binarises (sign bits,
   :func:`harness.retrieve.binary.pack_signs`, kept beside the float vectors as a transport check) and writes
   ``shard-<first rowid>-<last rowid>.npz`` atomically (temporary file, then rename). A shard whose file exists is
   skipped. CPU actors take ``cpus_per_worker`` CPUs (the embedder's threads per call); GPU actors
   (``device="cuda"``) take ``gpus_per_worker`` GPUs.
4. **Merge (driver).** Each shard file is checked (model id, weights sha256, shapes, the stored bits equal the signs
   of the stored vectors) and its vectors are written to the embedding cache
   (:meth:`harness.retrieve.vector.cache.EmbeddingCache.put_many`, one transaction per shard); the file is then deleted.
5. **Index.** :meth:`harness.retrieve.vector.VectorIndex.build` then finds every vector in the cache and inserts the
   packed bits (``binarize="sign"`` or ``"centered"``, the index's own rule applied to the cached floats) into
   sqlite-vec exactly as a single-process build does (same table, record, rowids and ``doc_pos``),
   so the merged index equals the single-process one bit for bit whenever the model computes each text's vector
   independently of its batch neighbours (the embedder's ``per_text``: true of ``use``, ``e5-small`` and the static
   ``wordllama``; transformer models padded to different batch lengths may differ in the last float bits, which can
   flip a sign only for values at zero).

Failures
--------
A worker that dies is restarted by Ray Data and its shard retried (actors run with ``max_restarts=-1`` and
``max_task_retries=-1``, Ray Data's defaults). If the driver dies, finished shard files stay on disk and the next
run merges them (step 1) and embeds only what is missing. Two builds must not run on the same work directory at
once.

Networking
----------
A local Ray instance is started bound to ``127.0.0.1`` (``_node_ip_address``), without the dashboard and with usage
statistics off; nothing listens on other interfaces. An already initialised Ray session (``ray.init`` by the
caller) is used as it is and left running.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import time
from pathlib import Path

import numpy as np

from harness.corpus.store import Corpus
from harness.errors import HarnessInputError
from harness.retrieve.binary import pack_signs

__all__ = ["ray_build", "local_ray", "plan_shards", "merge_shards", "shard_dir"]

DEFAULT_SHARD_SIZE = 2048
_IN_CHUNK = 500


def _require_ray():
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    # Ray on Linux replaces a loopback node address by the machine's routable one and its gRPC servers then listen
    # there; with "clusters" off it keeps 127.0.0.1 and every server binds to it (read at import, patched below too).
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise HarnessInputError(
            "--engine ray needs Ray Data: pip install 'harness[ray]' (or pip install 'ray[data]')"
        ) from None
    return ray


def shard_dir(workdir: str | Path, model_id: str, weights_sha256: str, chunker_id: str) -> Path:
    """Folder of the shard files of one (model id, weights, chunker): ``<workdir>/embeddings/ray/<key16>/``."""
    key = hashlib.sha256(f"{model_id}\0{weights_sha256}\0{chunker_id}".encode()).hexdigest()[:16]
    return Path(workdir) / "embeddings" / "ray" / key


def plan_shards(corpus: Corpus, cached: set[str], doc_ids, shard_size: int) -> tuple[list[np.ndarray], int]:
    """Rowids to embed, cut into shards.

    Args:
        corpus: the corpus.
        cached: hex text hashes already in the cache (for this model and chunker).
        doc_ids: documents of the slice.
        shard_size: rowids per shard (>= 1).

    Returns:
        ``(shards, n_slice_chunks)``: ``int64`` rowid arrays (one per shard; the first chunk of each distinct
        uncached text, in rowid order) and the number of chunks in the slice.
    """
    if shard_size < 1:
        raise HarnessInputError(f"shard_size must be >= 1, got {shard_size}")
    wanted = set(doc_ids)
    seen: set[str] = set()
    todo: list[int] = []
    n_slice = 0
    for rowid, doc, sha in corpus.conn.execute("SELECT rowid, doc_id, text_sha256 FROM chunks ORDER BY rowid"):
        if doc not in wanted:
            continue
        n_slice += 1
        if sha in cached or sha in seen:
            continue
        seen.add(sha)
        todo.append(rowid)
    arr = np.asarray(todo, dtype=np.int64)
    return [arr[i : i + shard_size] for i in range(0, arr.size, shard_size)], n_slice


def _shard_name(rowids: np.ndarray) -> str:
    return f"shard-{int(rowids[0]):012d}-{int(rowids[-1]):012d}.npz"


class _ShardEmbedder:
    """Ray Data actor: embeds shards of rowids read from the corpus database and writes one file per shard."""

    def __init__(
        self,
        db_path: str,
        out_dir: str,
        model: str,
        models_dir: str,
        device: str,
        batch_size: int | None,
        threads: int,
        weights_sha256: str,
        kill_once: str | None = None,
    ):
        from harness.retrieve.embed import load_embedder

        self.embedder = load_embedder(
            model, device=device, batch_size=batch_size, models_dir=models_dir, threads=max(1, int(threads))
        )
        if self.embedder.weights_sha256 != weights_sha256:
            raise RuntimeError(
                f"worker pid {os.getpid()}: model {model} loaded with weights {self.embedder.weights_sha256[:12]}, "
                f"driver has {weights_sha256[:12]}"
            )
        self.db_path = db_path
        self.out_dir = Path(out_dir)
        self.kill_once = kill_once

    def __call__(self, batch: dict) -> dict:
        from harness.corpus.store import open_db

        names, counts, secs, pids, skipped = [], [], [], [], []
        for rowids in batch["rowids"]:
            rowids = np.asarray(rowids, dtype=np.int64)
            name = _shard_name(rowids)
            path = self.out_dir / name
            if path.exists():
                names.append(name)
                counts.append(int(rowids.size))
                secs.append(0.0)
                pids.append(os.getpid())
                skipped.append(True)
                continue
            if self.kill_once and not os.path.exists(self.kill_once):  # test hook: die once, mid-shard
                Path(self.kill_once).write_text(str(os.getpid()))
                os._exit(1)
            conn = open_db(self.db_path, readonly=True)
            try:
                got: dict[int, tuple[str, str]] = {}
                ids = rowids.tolist()
                for i in range(0, len(ids), _IN_CHUNK):
                    part = ids[i : i + _IN_CHUNK]
                    marks = ",".join("?" * len(part))
                    for rid, text, sha in conn.execute(
                        f"SELECT rowid, text, text_sha256 FROM chunks WHERE rowid IN ({marks})", part
                    ):
                        got[rid] = (text, sha)
            finally:
                conn.close()
            missing = [r for r in ids if r not in got]
            if missing:
                raise RuntimeError(f"{self.db_path}: rowids {missing[:5]} not in chunks")
            t0 = time.perf_counter()
            vecs = np.ascontiguousarray(self.embedder.embed_passages([got[r][0] for r in ids]), dtype=np.float32)
            bits = pack_signs(vecs)
            dt = time.perf_counter() - t0
            shas = np.frombuffer(b"".join(bytes.fromhex(got[r][1]) for r in ids), dtype=np.uint8).reshape(-1, 32)
            tmp = self.out_dir / f".{name}.{os.getpid()}.tmp"
            with open(tmp, "wb") as f:
                np.savez(
                    f,
                    rowids=rowids,
                    shas=shas,
                    vectors=vecs,
                    bits=bits,
                    model_id=np.array(self.embedder.model_id),
                    weights_sha256=np.array(self.embedder.weights_sha256),
                )
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
            names.append(name)
            counts.append(int(rowids.size))
            secs.append(dt)
            pids.append(os.getpid())
            skipped.append(False)
        return {
            "name": np.array(names),
            "n": np.array(counts, dtype=np.int64),
            "seconds": np.array(secs),
            "pid": np.array(pids, dtype=np.int64),
            "skipped": np.array(skipped),
        }


def merge_shards(folder: Path, cache, key_id: int, embedder) -> dict:
    """Check every ``shard-*.npz`` in ``folder``, write its vectors to the cache, delete it.

    Returns:
        ``{"n_files", "n_vectors"}``.

    Raises:
        HarnessInputError: a shard made by another model or weights, malformed, or whose bits are not the signs of
            its vectors.
    """
    n_files = n_vec = 0
    for path in sorted(folder.glob("shard-*.npz")):
        with np.load(path, allow_pickle=False) as z:
            model_id, weights = str(z["model_id"]), str(z["weights_sha256"])
            shas, vecs, bits = z["shas"], z["vectors"], z["bits"]
        if model_id != embedder.model_id or weights != embedder.weights_sha256:
            raise HarnessInputError(f"{path}: made by {model_id} ({weights[:12]}), not {embedder.model_id}")
        if vecs.ndim != 2 or vecs.shape[1] != embedder.dim or shas.shape != (vecs.shape[0], 32):
            raise HarnessInputError(f"{path}: malformed shard (vectors {vecs.shape}, hashes {shas.shape})")
        if not np.array_equal(pack_signs(vecs), bits):
            raise HarnessInputError(f"{path}: stored bits are not the signs of the stored vectors")
        cache.put_many(key_id, [s.tobytes().hex() for s in shas], vecs)
        path.unlink()
        n_files += 1
        n_vec += vecs.shape[0]
    return {"n_files": n_files, "n_vectors": n_vec}


def _cached_shas(cache, key_id: int) -> set[str]:
    return {
        bytes(h).hex() for (h,) in cache.conn.execute("SELECT text_sha256 FROM embeddings WHERE key_id=?", (key_id,))
    }


@contextlib.contextmanager
def local_ray(*, num_cpus: int = 2, num_gpus: float | None = None, object_store_memory: int | None = None):
    """A local Ray instance bound to 127.0.0.1 for the duration of the block (reused if Ray is already up).

    Started with ``address="local"``, no dashboard, usage statistics off, and the node address kept on the loopback
    interface (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``: Ray's own switch for loopback-only nodes), so the GCS, raylet,
    object manager and worker servers all listen on 127.0.0.1.

    Yields:
        True when this block started Ray (and shuts it down on exit), False when an existing session was reused.

    Raises:
        HarnessInputError: Ray missing, or the node came up on another address.
    """
    ray = _require_ray()
    if ray.is_initialized():
        yield False
        return
    from ray._private import ray_constants

    ray_constants.ENABLE_RAY_CLUSTER = False  # in case ray was imported before the variable was set
    ray.init(
        address="local",
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        num_cpus=num_cpus,
        num_gpus=num_gpus,
        object_store_memory=object_store_memory,
        log_to_driver=False,
        logging_level="warning",
    )
    try:
        addrs = {n.get("NodeManagerAddress") for n in ray.nodes()}
        if addrs != {"127.0.0.1"}:
            raise HarnessInputError(f"ray: node came up on {sorted(addrs)}, not 127.0.0.1 only; refusing to run")
        yield True
    finally:
        ray.shutdown()


def ray_build(
    corpus: Corpus,
    workdir: str | Path,
    *,
    model: str | None = None,
    index_fraction: float | None = None,
    until: str | None = None,
    workers: int = 2,
    device: str = "cpu",
    cpus_per_worker: int = 1,
    gpus_per_worker: float = 1.0,
    shard_size: int = DEFAULT_SHARD_SIZE,
    batch_size: int | None = None,
    batch_chunks: int = 2048,
    object_store_memory: int | None = None,
    progress: bool = False,
    binarize: str | None = None,
    _kill_once: str | None = None,
) -> dict:
    """Embed the chunks the cache lacks on Ray Data workers, merge into the cache, build the sqlite-vec index.

    Args:
        corpus: an open, writable :class:`~harness.corpus.store.Corpus`.
        workdir: the work directory (embedding cache, models, shard files).
        model: embedder name (default ``use``; see :func:`harness.retrieve.embed.load_embedder`).
        index_fraction, until: the chronological slice (see :func:`harness.retrieve.vector.slices.select_slice`).
        workers: Ray actors (>= 1).
        device: ``"cpu"`` or a CUDA device (``"cuda"``): GPU actors.
        cpus_per_worker: CPUs (and torch threads) per CPU actor.
        gpus_per_worker: GPUs per GPU actor (fractions share a GPU).
        shard_size: chunks per shard (the unit of work, retry and resume).
        batch_size: texts per forward pass (default: the embedder's).
        batch_chunks: chunks per committed batch of the final index insert.
        object_store_memory: bytes for a Ray instance started here (default Ray's).
        progress: Ray Data progress bars.
        binarize: the index's binarisation (``"sign"`` or ``"centered"``; ``None``: the model's default), passed to
            ``VectorIndex.build``; the shards carry float vectors, so either rule is applied from the cache after the
            merge.

    Returns:
        Statistics: ``n_slice_chunks``, ``n_recovered`` (vectors merged from an earlier run's shard files),
        ``n_to_embed``, ``n_shards``, ``workers``, ``worker_pids``, ``embed_seconds`` (sum over shards),
        ``ray_seconds`` (wall time of the Ray stage), ``merge_seconds``, ``texts_per_second`` (over the Ray stage),
        ``index`` (:attr:`VectorIndex.build_stats`: ``n_embedded`` is 0 unless the cache lost vectors meanwhile),
        ``ray_version``, ``seconds``.

    Raises:
        HarnessInputError: Ray missing, a bad argument, a shard from another model.
    """
    from harness.retrieve.embed import DEFAULT_MODEL, load_embedder
    from harness.retrieve.vector.cache import EmbeddingCache
    from harness.retrieve.vector.slices import select_slice
    from harness.retrieve.vector.system import VectorIndex

    t_start = time.perf_counter()
    if workers < 1:
        raise HarnessInputError(f"--workers must be >= 1, got {workers}")
    ray = _require_ray()
    workdir = Path(workdir)
    model = model or DEFAULT_MODEL
    models_dir = workdir / "models"
    embedder = load_embedder(model, device="cpu", batch_size=batch_size, models_dir=models_dir)
    chunker_id = corpus.manifest.chunker_id
    folder = shard_dir(workdir, embedder.model_id, embedder.weights_sha256, chunker_id)
    folder.mkdir(parents=True, exist_ok=True)
    sl = select_slice(corpus, index_fraction=index_fraction, until=until)
    stats: dict = {"workers": workers, "device": device, "shard_size": shard_size, "ray_version": ray.__version__}

    cache = EmbeddingCache.for_workdir(workdir)
    try:
        key = cache.key_id(embedder.model_id, embedder.weights_sha256, chunker_id, embedder.dim)
        stats["n_recovered"] = merge_shards(folder, cache, key, embedder)["n_vectors"]
        shards, n_slice = plan_shards(corpus, _cached_shas(cache, key), sl.doc_ids, shard_size)
        stats.update(n_slice_chunks=n_slice, n_to_embed=int(sum(s.size for s in shards)), n_shards=len(shards))
        stats.update(embed_seconds=0.0, ray_seconds=0.0, worker_pids=[], n_shards_skipped=0)
        if shards:
            gpu = device.startswith("cuda")
            t0 = time.perf_counter()
            with local_ray(
                num_cpus=max(2, workers * cpus_per_worker) if not gpu else max(2, workers),
                num_gpus=workers * gpus_per_worker if gpu else None,
                object_store_memory=object_store_memory,
            ):
                ctx = ray.data.DataContext.get_current()
                ctx.enable_progress_bars = bool(progress)
                if not progress:
                    logging.getLogger("ray.data").setLevel(logging.WARNING)
                ds = ray.data.from_items([{"rowids": s} for s in shards], override_num_blocks=len(shards))
                res = ds.map_batches(
                    _ShardEmbedder,
                    fn_constructor_kwargs={
                        "db_path": str(corpus.path),
                        "out_dir": str(folder),
                        "model": model,
                        "models_dir": str(models_dir),
                        "device": device,
                        "batch_size": batch_size,
                        "threads": cpus_per_worker,
                        "weights_sha256": embedder.weights_sha256,
                        "kill_once": _kill_once,
                    },
                    batch_size=1,
                    batch_format="numpy",
                    compute=ray.data.ActorPoolStrategy(size=workers, max_tasks_in_flight_per_actor=1),
                    num_cpus=0 if gpu else cpus_per_worker,
                    num_gpus=gpus_per_worker if gpu else None,
                ).take_all()
            stats["ray_seconds"] = round(time.perf_counter() - t0, 3)
            stats["embed_seconds"] = round(float(sum(r["seconds"] for r in res)), 3)
            stats["worker_pids"] = sorted({int(r["pid"]) for r in res})
            stats["n_shards_skipped"] = int(sum(bool(r["skipped"]) for r in res))
            done = {str(r["name"]) for r in res}
            lost = [_shard_name(s) for s in shards if _shard_name(s) not in done]
            if lost:
                raise HarnessInputError(f"ray: {len(lost)} shards produced no result (first {lost[0]})")
        t0 = time.perf_counter()
        merged = merge_shards(folder, cache, key, embedder)
        stats["merge_seconds"] = round(time.perf_counter() - t0, 3)
        if merged["n_vectors"] != stats["n_to_embed"]:
            raise HarnessInputError(
                f"{folder}: merged {merged['n_vectors']} vectors, expected {stats['n_to_embed']} (a shard is missing)"
            )
    finally:
        cache.close()
    stats["texts_per_second"] = (
        round(stats["n_to_embed"] / stats["ray_seconds"], 1) if stats.get("ray_seconds") else None
    )
    idx = VectorIndex.build(
        corpus,
        workdir,
        embedder,
        index_fraction=index_fraction,
        until=until,
        batch_chunks=batch_chunks,
        binarize=binarize,
    )
    stats["index"] = idx.build_stats
    stats["table"] = idx.table
    stats["seconds"] = round(time.perf_counter() - t_start, 3)
    return stats
