"""Hamming top-k latency: sqlite-vec ``vec0`` KNN vs a numpy packed-bit popcount scan (vs faiss, if installed),
one query at a time and as the batch of all gold-set queries (42) at once.

Synthetic uniform random bit vectors (default 1,024 bits) at each size in ``--sizes``; the same vectors go into a
sqlite-vec ``vec0(embedding bit[D])`` table (apsw, in a temporary database file), a numpy ``uint8`` matrix and, when
``import faiss`` works, a ``faiss.IndexBinaryFlat``. Every backend returns the exact top k under (distance, id)
with the boundary tie completed the way :class:`harness.retrieve.vector.VectorIndex` does it (fetch past k until
the distance changes), and the results must be identical across backends; a mismatch exits with status 1.

Usage::

    .venv/bin/python benchmarks/bench_hamming.py [--sizes 100000,1000000] [--dim 1024] [--k 10] [--queries 42]
        [--batch 32] [--seed 0] [--faiss-threads 1] [--json out.json]
    .venv/bin/python benchmarks/bench_hamming.py --sizes 100000,1000000,6730000   # DOF scale (6,730,304 chunks)

Reported per size: build time per backend, per-query latency (median and mean, ms) for one query at a time, numpy
also batched (``--batch`` queries per scan), and the ratios to sqlite-vec. Then the batch of all ``--queries``
(default 42, the gold set's size) at once, each exact under (distance, id): numpy (one batched scan), the harness's
faiss backend (``VectorIndex(backend="faiss")``'s algorithm: one ``IndexBinaryFlat.search`` of all queries with
k' = 2k + 16, repeated with 4k' for the queries whose boundary tie is incomplete), raw faiss (one ``search`` with
k, ties unrepaired: the library's own floor), and sqlite-vec one query per question (the sum of the single-query
times). Ratios: harness-faiss batch / raw faiss batch (target <= 2) and sqlite-vec per question / harness-faiss
batch (target >= 10). Bytes scanned per second = n * dim/8 * queries / time, beside a memory-bandwidth reference
measured in the same run (single-thread ``uint64`` sum over a 1 GiB array, best of 3, GB/s).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import apsw
import numpy as np
import sqlite_vec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.ranking import top_k_by_distance  # noqa: E402
from harness.retrieve.binary import hamming_distances  # noqa: E402

K_MAX = 4096


def _open(path: Path) -> apsw.Connection:
    conn = apsw.Connection(str(path))
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    conn.enable_load_extension(False)
    return conn


def build_sqlite(conn: apsw.Connection, bits: np.ndarray, dim: int) -> float:
    t0 = time.perf_counter()
    conn.execute("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF")
    conn.execute(f"CREATE VIRTUAL TABLE v USING vec0(embedding bit[{dim}])")
    step = 50_000
    with conn:
        for s in range(0, bits.shape[0], step):
            conn.executemany(
                "INSERT INTO v(rowid, embedding) VALUES (?, vec_bit(?))",
                ((s + i, bits[s + i].tobytes()) for i in range(min(step, bits.shape[0] - s))),
            )
    return time.perf_counter() - t0


def _complete(ids: np.ndarray, dist: np.ndarray, k: int, exhausted: bool):
    """Exact top k (distance, id) from a fetch sorted by distance; None when the boundary tie is incomplete."""
    if not exhausted and dist[k - 1] == dist[-1]:
        return None
    keep = dist <= dist[k - 1] if not exhausted else np.ones(dist.shape[0], dtype=bool)
    ids, dist = ids[keep], dist[keep]
    order = np.lexsort((ids, dist))[:k]
    return ids[order].tolist(), dist[order].tolist()


def sqlite_topk(conn: apsw.Connection, q: bytes, k: int, n: int):
    kk = min(k + 1, n)
    while True:
        rows = conn.execute(
            "SELECT rowid, distance FROM v WHERE embedding MATCH vec_bit(?) AND k = ?", (q, kk)
        ).fetchall()
        ids = np.array([r[0] for r in rows], dtype=np.int64)
        dist = np.array([r[1] for r in rows], dtype=np.float64).astype(np.int64)
        res = _complete(ids, dist, k, kk >= n)
        if res is not None:
            return res
        if kk >= K_MAX:
            raise RuntimeError("boundary tie wider than sqlite-vec's k cap")
        kk = min(kk * 4, n, K_MAX)


def numpy_topk_from_dist(dist: np.ndarray, k: int):
    idx, _ = top_k_by_distance(dist, np.arange(dist.shape[0], dtype=np.int64), k)
    return idx.tolist(), dist[idx].astype(np.int64).tolist()


def faiss_topk(index, q: np.ndarray, k: int, n: int):
    kk = min(k + 1, n)
    while True:
        d, i = index.search(q[None, :], kk)
        res = _complete(i[0].astype(np.int64), d[0].astype(np.int64), k, kk >= n)
        if res is not None:
            return res
        kk = min(kk * 4, n)


def faiss_batch_topk(index, queries: np.ndarray, k: int, n: int) -> list:
    """The harness's faiss backend on a batch: all queries in one search, k' grown x4 for the incomplete ones."""
    out: list = [None] * queries.shape[0]
    todo = np.arange(queries.shape[0])
    kk = 2 * k + 16
    while todo.size:
        kk = min(kk, n)
        d, i = index.search(queries[todo], kk)
        retry = []
        for row, qi in enumerate(todo):
            res = _complete(i[row].astype(np.int64), d[row].astype(np.int64), k, kk >= n)
            if res is None:
                retry.append(qi)
            else:
                out[qi] = res
        todo = np.asarray(retry, dtype=np.int64)
        kk *= 4
    return out


def broadcast_scan(queries: np.ndarray, base: np.ndarray) -> np.ndarray:
    """The numpy scan before 2026-12-02, kept as the side-by-side reference: every query of a block XORed with the
    base block at once (broadcast), then ``bitwise_count(...).sum(axis=-1)`` over the words (blocks near 16 MiB)."""
    qw, bw = queries.view(np.uint64), base.view(np.uint64)
    out = np.empty((qw.shape[0], bw.shape[0]), dtype=np.int32)
    rows = max(1024, (16 << 20) // max(1, qw.shape[0] * queries.shape[1]))
    for start in range(0, bw.shape[0], rows):
        blk = bw[start : start + rows]
        x = np.bitwise_xor(qw[:, None, :], blk[None, :, :])
        out[:, start : start + blk.shape[0]] = np.bitwise_count(x).sum(axis=-1, dtype=np.int32)
    return out


def memory_bandwidth_gbs(n_bytes: int = 1 << 30, repeats: int = 3) -> float:
    """Single-thread read bandwidth: best of ``repeats`` ``uint64`` sums over an ``n_bytes`` array (GB/s, 1e9)."""
    a = np.ones(n_bytes // 8, dtype=np.uint64)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        a.sum()
        best = min(best, time.perf_counter() - t0)
    return n_bytes / best / 1e9


def _stats(times: list[float]) -> dict:
    return {"median_ms": 1e3 * statistics.median(times), "mean_ms": 1e3 * statistics.fmean(times)}


def run_size(
    n: int, dim: int, k: int, n_queries: int, batch: int, seed: int, workdir: Path, faiss_threads: int = 1
) -> dict:
    rng = np.random.default_rng(seed)
    nbytes = dim // 8
    bits = rng.integers(0, 256, size=(n, nbytes), dtype=np.uint8)
    queries = rng.integers(0, 256, size=(n_queries, nbytes), dtype=np.uint8)
    out: dict = {"n": n, "dim": dim, "k": k, "queries": n_queries}

    db = workdir / f"bench-{n}.db"
    conn = _open(db)
    out["sqlite_build_s"] = build_sqlite(conn, bits, dim)
    sqlite_vec_version = conn.execute("SELECT vec_version()").fetchone()[0]
    sqlite_vec_version = str(sqlite_vec_version)
    sqlite_topk(conn, queries[0].tobytes(), k, n)  # warm the page cache
    ref, times = [], []
    for q in queries:
        t0 = time.perf_counter()
        ref.append(sqlite_topk(conn, q.tobytes(), k, n))
        times.append(time.perf_counter() - t0)
    out["sqlite_vec"] = _stats(times)
    out["sqlite_vec_per_question_total_s"] = sum(times)
    out["sqlite_vec_version"] = sqlite_vec_version
    conn.close()
    db.unlink()

    got, times = [], []
    numpy_topk_from_dist(hamming_distances(queries[0], bits), k)
    for q in queries:
        t0 = time.perf_counter()
        got.append(numpy_topk_from_dist(hamming_distances(q, bits), k))
        times.append(time.perf_counter() - t0)
    out["numpy"] = _stats(times)
    if got != ref:
        raise SystemExit(f"n={n}: numpy and sqlite-vec top-{k} differ")
    t0 = time.perf_counter()
    got_b = []
    for s in range(0, n_queries, batch):
        for row in hamming_distances(queries[s : s + batch], bits):
            got_b.append(numpy_topk_from_dist(row, k))
    out["numpy_batched"] = {"per_query_ms": 1e3 * (time.perf_counter() - t0) / n_queries, "batch": batch}
    if got_b != ref:
        raise SystemExit(f"n={n}: batched numpy and sqlite-vec top-{k} differ")
    scanned = n * (dim // 8) * n_queries
    t0 = time.perf_counter()
    got_all = [numpy_topk_from_dist(row, k) for row in hamming_distances(queries, bits)]
    t_np = time.perf_counter() - t0
    if got_all != ref:
        raise SystemExit(f"n={n}: numpy batch-of-all and sqlite-vec top-{k} differ")
    out["batch_all"] = {"queries": n_queries, "numpy_s": t_np, "numpy_gbs": scanned / t_np / 1e9}
    t0 = time.perf_counter()
    old = broadcast_scan(queries, bits)
    out["batch_all"]["numpy_broadcast_s"] = t_old = time.perf_counter() - t0
    out["batch_all"]["ratio_broadcast_over_numpy"] = t_old / t_np
    if not np.array_equal(old, hamming_distances(queries, bits)):
        raise SystemExit(f"n={n}: the broadcast reference and hamming_distances differ")

    try:
        import faiss
    except ImportError:
        out["faiss"] = None
    else:
        faiss.omp_set_num_threads(faiss_threads)  # default 1, like sqlite-vec and numpy (OpenMP spin hurts shared CPUs)
        t0 = time.perf_counter()
        index = faiss.IndexBinaryFlat(dim)
        index.add(bits)
        out["faiss_build_s"] = time.perf_counter() - t0
        faiss_topk(index, queries[0], k, n)
        got_f, times = [], []
        for q in queries:
            t0 = time.perf_counter()
            got_f.append(faiss_topk(index, q, k, n))
            times.append(time.perf_counter() - t0)
        out["faiss"] = _stats(times) | {"version": faiss.__version__, "omp_threads": faiss.omp_get_max_threads()}
        if got_f != ref:
            raise SystemExit(f"n={n}: faiss and sqlite-vec top-{k} differ")
        ba = out["batch_all"]
        index.search(queries, k)  # warm
        t0 = time.perf_counter()
        index.search(queries, k)
        ba["faiss_raw_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        got_fb = faiss_batch_topk(index, queries, k, n)
        ba["faiss_harness_s"] = time.perf_counter() - t0
        if got_fb != ref:
            raise SystemExit(f"n={n}: batched faiss and sqlite-vec top-{k} differ")
        ba["faiss_raw_gbs"] = scanned / ba["faiss_raw_s"] / 1e9
        ba["faiss_harness_gbs"] = scanned / ba["faiss_harness_s"] / 1e9
        ba["ratio_harness_faiss_over_raw_faiss"] = ba["faiss_harness_s"] / ba["faiss_raw_s"]
        ba["ratio_numpy_over_raw_faiss"] = t_np / ba["faiss_raw_s"]
        ba["ratio_sqlite_per_question_over_harness_faiss"] = (
            out["sqlite_vec_per_question_total_s"] / ba["faiss_harness_s"]
        )
        del index
    sq = out["sqlite_vec"]["median_ms"]
    out["ratio_sqlite_over_numpy"] = sq / out["numpy"]["median_ms"]
    out["ratio_sqlite_over_numpy_batched"] = sq / out["numpy_batched"]["per_query_ms"]
    out["batch_all"]["ratio_sqlite_per_question_over_numpy"] = out["sqlite_vec_per_question_total_s"] / t_np
    if out["faiss"]:
        out["ratio_sqlite_over_faiss"] = sq / out["faiss"]["median_ms"]
    out["results_equal"] = True
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100000,1000000", help="comma-separated numbers of vectors")
    ap.add_argument("--dim", type=int, default=1024, help="bits per vector (multiple of 8)")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--queries", type=int, default=42, help="queries (the batch is all of them: 42 = the gold set)")
    ap.add_argument("--batch", type=int, default=32, help="queries per batched numpy scan")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--faiss-threads", type=int, default=1, help="OpenMP threads for faiss (1: like sqlite-vec, numpy)")
    ap.add_argument("--workdir", default=None, help="folder for the temporary sqlite database")
    ap.add_argument("--json", default=None, help="also write the results here")
    args = ap.parse_args(argv)
    if args.dim % 8:
        ap.error("--dim must be a multiple of 8")
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    bw = memory_bandwidth_gbs()
    print(
        f"{time.strftime('%Y-%m-%d %H:%M:%S%z')}  {os.cpu_count()} CPUs, numpy {np.__version__}, "
        f"memory bandwidth (1 thread, uint64 sum over 1 GiB) {bw:.1f} GB/s",
        flush=True,
    )
    results = []
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        for n in sizes:
            r = run_size(n, args.dim, args.k, args.queries, args.batch, args.seed, Path(tmp), args.faiss_threads)
            results.append(r)
            faiss_txt = (
                f"faiss {r['faiss']['median_ms']:.2f} ms (sqlite/faiss {r['ratio_sqlite_over_faiss']:.2f}x)"
                if r["faiss"]
                else "faiss not installed"
            )
            print(
                f"n={n:>9,} dim={args.dim} k={args.k}: sqlite-vec {r['sqlite_vec']['median_ms']:.2f} ms/query | "
                f"numpy {r['numpy']['median_ms']:.2f} ms/query (sqlite/numpy {r['ratio_sqlite_over_numpy']:.2f}x) | "
                f"numpy batched x{args.batch} {r['numpy_batched']['per_query_ms']:.2f} ms/query "
                f"(sqlite/numpy-batched {r['ratio_sqlite_over_numpy_batched']:.2f}x) | {faiss_txt} | "
                f"sqlite build {r['sqlite_build_s']:.1f}s | results equal",
                flush=True,
            )
            ba = r["batch_all"]
            if r["faiss"]:
                fb = (
                    f"harness faiss {1e3 * ba['faiss_harness_s']:.1f} ms ({ba['faiss_harness_gbs']:.1f} GB/s) | "
                    f"raw faiss {1e3 * ba['faiss_raw_s']:.1f} ms ({ba['faiss_raw_gbs']:.1f} GB/s) | "
                    f"harness-faiss/raw-faiss {ba['ratio_harness_faiss_over_raw_faiss']:.2f}x (target <= 2) | "
                    f"numpy/raw-faiss {ba['ratio_numpy_over_raw_faiss']:.2f}x | sqlite-per-question/harness-faiss "
                    f"{ba['ratio_sqlite_per_question_over_harness_faiss']:.1f}x (target >= 10) | "
                )
            else:
                fb = "faiss not installed | "
            print(
                f"  batch of all {ba['queries']} queries: numpy {1e3 * ba['numpy_s']:.1f} ms "
                f"({ba['numpy_gbs']:.1f} GB/s; the former broadcast scan {1e3 * ba['numpy_broadcast_s']:.1f} ms, "
                f"{ba['ratio_broadcast_over_numpy']:.2f}x) | {fb}sqlite-vec one per question "
                f"{1e3 * r['sqlite_vec_per_question_total_s']:.0f} ms "
                f"(sqlite/numpy {ba['ratio_sqlite_per_question_over_numpy']:.1f}x) | memory bandwidth {bw:.1f} GB/s",
                flush=True,
            )
    meta = {"cpus": os.cpu_count(), "numpy": np.__version__, "memory_bandwidth_gbs": bw, "results": results}
    if args.json:
        Path(args.json).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
