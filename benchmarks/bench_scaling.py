"""How the harness's costs grow with corpus size, and whether DOF scale (6,730,304 chunks) fits a 2-core 24 GB machine.

For each size (synthetic corpora from ``benchmarks/synthetic.py``) five steps run, each in its own child process so
that its peak resident set (``getrusage(RUSAGE_SELF).ru_maxrss`` read in the child at the end) is the step's alone:

* ``ingest``: ``harness.corpus.ingest.ingest`` (scan + hash, chunk ``md-words-v1``, write the SQLite database);
* ``bm25_build``: ``BM25System`` building both persisted indexes (chunk and document) from the database;
* ``bm25_query``: loading them memory-mapped and answering pseudo-queries (8 words of random chunks) at the run's
  depths (documents 50, chunks 200), per query (``BM25System.search``) and batched (``benchmarks/bm25_batch.py``);
* ``vector_insert``: ``VectorIndex.build`` with a stand-in embedder whose vectors are a hash of the text (SHAKE-256,
  ``--dim`` bits as +-1), so the time is the harness's own (cache writes, packing, sqlite-vec inserts); the hash time
  is reported apart (``embed_s``). Real embedding cost is measured by the embedder's own benchmark and is the step
  given to Ray (``harness embed --engine ray``);
* ``vector_query``: opening the index, then single queries through sqlite-vec (``VectorIndex.search_packed``, one at a
  time, the production path) and one batch through the numpy backend.

Then, per step, a least-squares fit of ``log time`` on ``log chunks`` (the growth exponent) and of ``peak RSS = a +
b * chunks``, extrapolated to 6,730,304 chunks and judged against 24 GB (a step "fits" when its extrapolated peak is
under 22 GB, leaving 2 GB to the system). Before the synthetic sizes, ingest and chunking throughput (MB/s) on the
real corpus.

Reproduce: ``.venv/bin/python benchmarks/bench_scaling.py`` (sizes 10^4, 3x10^4, 10^5: a few minutes);
``--sizes 1e4,1e5,1e6`` for the full run (about 20 minutes on 2 cores, 3 GB of disk under ``--root``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from common import DEFAULT_CORPUS, header, write_json

DOF_CHUNKS = 6_730_304
DOF_EVAL_QUERIES = 3_023
MACHINE_GB = 24.0
HEADROOM_GB = 2.0
STEPS = ("ingest", "bm25_build", "bm25_query", "vector_insert", "vector_query")


# ----------------------------------------------------------------------------------------------------------------
# child side: one step, one process
# ----------------------------------------------------------------------------------------------------------------


class HashEmbedder:
    """A stand-in embedder: ``dim`` signs from SHAKE-256 of the text (deterministic, about 1 us per text).

    Satisfies what :meth:`harness.retrieve.vector.VectorIndex.build` needs (``model_id``, ``weights_sha256``,
    ``dim``, ``embed_passages``, ``embed_queries``, ``config``).
    """

    def __init__(self, dim: int = 256):
        self.dim = int(dim)
        self.model_id = f"bench-shake256-{self.dim}"
        self.weights_sha256 = hashlib.sha256(f"bench-shake256-v1-{self.dim}".encode()).hexdigest()

    def _embed(self, texts) -> np.ndarray:
        n = self.dim // 8
        raw = b"".join(hashlib.shake_256(t.encode("utf-8")).digest(n) for t in texts)
        bits = np.unpackbits(np.frombuffer(raw, dtype=np.uint8), bitorder="little").reshape(len(texts), self.dim)
        return bits.astype(np.float32) * 2 - 1

    def embed_passages(self, texts) -> np.ndarray:
        """``float32 (n, dim)`` of +-1."""
        return self._embed(list(texts))

    def embed_queries(self, texts) -> np.ndarray:
        """Same as passages."""
        return self._embed(list(texts))

    def config(self) -> dict:
        """Identity for the index record."""
        return {"model_id": self.model_id, "weights_sha256": self.weights_sha256, "dim": self.dim}


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _dir_bytes(p: Path) -> int:
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())


def child(step: str, corpus_dir: Path, workdir: Path, args) -> dict:
    """Run one step in this process; returns its figures (seconds, peak RSS and step-specific ones)."""
    from harness.corpus.ingest import ingest

    base_rss = _rss_mb()
    out: dict = {"step": step}
    if step == "generate":
        import synthetic

        t0 = time.perf_counter()
        stats = synthetic.generate_corpus(corpus_dir, int(args.n), seed=args.seed)
        out.update(stats, seconds=time.perf_counter() - t0)
    elif step == "ingest":
        t0 = time.perf_counter()
        db, man, created = ingest(corpus_dir, workdir)
        secs = time.perf_counter() - t0
        mb = sum((corpus_dir / p).stat().st_size for p in _doc_paths(corpus_dir)) / 1e6
        out.update(
            seconds=secs,
            created=created,
            n_chunks=man.n_chunks,
            n_documents=man.n_documents,
            mb=mb,
            mb_per_s=mb / secs,
            db_bytes=db.stat().st_size,
        )
    elif step == "chunking":  # real corpus: chunking and analysis alone, no database
        out.update(_chunking_only(corpus_dir))
    else:
        from harness.corpus.store import Corpus

        db, man, _ = ingest(corpus_dir, workdir)
        out["n_chunks"] = man.n_chunks
        with Corpus(db) as corpus:
            if step == "bm25_build":
                from harness.retrieve.bm25 import BM25System

                t0 = time.perf_counter()
                sysm = BM25System(corpus, workdir)
                out.update(seconds=time.perf_counter() - t0, index_bytes=sum(sysm.index_bytes.values()))
            elif step == "bm25_query":
                out.update(_bm25_query(corpus, workdir, args))
            elif step == "vector_insert":
                from harness.retrieve.vector import VectorIndex

                t0 = time.perf_counter()
                idx = VectorIndex.build(corpus, workdir, HashEmbedder(args.dim))
                secs = time.perf_counter() - t0
                st = idx.build_stats
                out.update(
                    seconds=secs,
                    embed_s=st["embed_seconds"],
                    insert_s=secs - st["embed_seconds"],
                    n_inserted=st["n_inserted"],
                    db_bytes=db.stat().st_size,
                    cache_bytes=_dir_bytes(workdir / "embeddings"),
                )
            elif step == "vector_query":
                out.update(_vector_query(corpus, workdir, args))
            else:
                raise SystemExit(f"unknown step {step}")
    out["base_rss_mb"] = base_rss
    out["peak_rss_mb"] = _rss_mb()
    return out


def _doc_paths(corpus_dir: Path) -> list[str]:
    meta = corpus_dir / "metadata.jsonl"
    if meta.exists():
        return [json.loads(line)["path"] for line in meta.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [p.relative_to(corpus_dir).as_posix() for p in corpus_dir.rglob("*.md")]


def _chunking_only(corpus_dir: Path) -> dict:
    from harness.corpus.chunker import decode_source, get_chunker
    from harness.retrieve.analyzer import SpanishAnalyzer

    paths = _doc_paths(corpus_dir)
    t0 = time.perf_counter()
    raw = [(corpus_dir / p).read_bytes() for p in paths]
    t_read = time.perf_counter() - t0
    mb = sum(map(len, raw)) / 1e6
    ch = get_chunker("md-words-v1")
    t0 = time.perf_counter()
    texts = []
    for i, data in enumerate(raw):
        texts.extend(c.text for c in ch.chunk(str(i), decode_source(data)))
    t_chunk = time.perf_counter() - t0
    an = SpanishAnalyzer()
    t0 = time.perf_counter()
    an.tokenize_many(texts)
    t_an = time.perf_counter() - t0
    return {
        "mb": mb,
        "read_s": t_read,
        "chunking_s": t_chunk,
        "chunking_mb_per_s": mb / t_chunk,
        "analysis_s": t_an,
        "analysis_mb_per_s": sum(len(t.encode("utf-8")) for t in texts) / 1e6 / t_an,
        "n_chunks": len(texts),
        "seconds": t_chunk,
    }


def _bm25_query(corpus, workdir: Path, args) -> dict:
    import bm25_batch
    from common import sampled_queries

    from harness.retrieve.bm25 import BM25System

    t0 = time.perf_counter()
    sysm = BM25System(corpus, workdir)
    t_load = time.perf_counter() - t0
    rows = corpus.conn.execute(
        "SELECT text FROM chunks WHERE rowid IN (SELECT rowid FROM chunks ORDER BY random() LIMIT ?)",
        (args.queries * 2,),
    ).fetchall()
    qs = sampled_queries([r[0] for r in rows], args.queries, seed=args.seed)
    sysm.search(qs[:2], doc_depth=50, chunk_depth=200)
    bm25_batch.search_system_many(sysm, qs[:2], doc_depth=50, chunk_depth=200)
    t0 = time.perf_counter()
    sysm.search(qs, doc_depth=50, chunk_depth=200)
    t_per = (time.perf_counter() - t0) / len(qs)
    t0 = time.perf_counter()
    bm25_batch.search_system_many(sysm, qs, doc_depth=50, chunk_depth=200, n_threads=1)
    t_batch = (time.perf_counter() - t0) / len(qs)
    return {
        "load_s": t_load,
        "n_queries": len(qs),
        "ms_per_query": 1000 * t_per,
        "ms_per_query_batched": 1000 * t_batch,
        "seconds": t_per * len(qs),
        "seconds_batched": t_batch * len(qs),
    }


def _vector_query(corpus, workdir: Path, args) -> dict:
    from harness.retrieve.vector import VectorIndex

    emb = HashEmbedder(args.dim)
    t0 = time.perf_counter()
    idx = VectorIndex.build(corpus, workdir, emb)
    t_open = time.perf_counter() - t0
    rng = np.random.default_rng(args.seed)
    q = rng.integers(0, 256, size=(max(args.vector_queries, 1), args.dim // 8), dtype=np.uint8)
    idx.search_packed(q[:1], doc_depth=50, chunk_depth=200)  # warm the page cache
    t0 = time.perf_counter()
    for i in range(q.shape[0]):
        idx.search_packed(q[i : i + 1], doc_depth=50, chunk_depth=200)
    t_single = (time.perf_counter() - t0) / q.shape[0]
    t0 = time.perf_counter()
    idx.search_packed(q, doc_depth=50, chunk_depth=200, backend="numpy")
    t_np = (time.perf_counter() - t0) / q.shape[0]
    return {
        "open_s": t_open,
        "n_queries": int(q.shape[0]),
        "ms_per_query": 1000 * t_single,
        "ms_per_query_numpy_batch": 1000 * t_np,
        "seconds": t_single * q.shape[0],
        "knn_calls": idx.search_stats["knn_calls"],
    }


# ----------------------------------------------------------------------------------------------------------------
# parent side
# ----------------------------------------------------------------------------------------------------------------


def run_child(step: str, corpus_dir: Path, workdir: Path, args, n: int | None = None) -> dict:
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        step,
        "--corpus-dir",
        str(corpus_dir),
        "--workdir",
        str(workdir),
        "--seed",
        str(args.seed),
        "--dim",
        str(args.dim),
        "--queries",
        str(args.queries),
        "--vector-queries",
        str(args.vector_queries),
    ]
    if n is not None:
        cmd += ["--n", str(n)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        return {"step": step, "error": f"exit {proc.returncode}", "wall_s": wall}
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")][-1]
    res = json.loads(line[len("RESULT ") :])
    res["wall_s"] = wall
    return res


def fit(ns: list[float], ts: list[float]) -> float | None:
    """Least-squares slope of log t on log n (the growth exponent); None with fewer than 2 usable points."""
    pts = [(np.log(n), np.log(t)) for n, t in zip(ns, ts, strict=True) if n > 0 and t and t > 0]
    if len(pts) < 2:
        return None
    x, y = np.array(pts).T
    return float(np.polyfit(x, y, 1)[0])


def fit_linear(ns: list[float], ys: list[float]) -> tuple[float, float]:
    """``y = a + b n`` by least squares (``b = 0`` with one point)."""
    if len(ns) < 2:
        return float(ys[0]), 0.0
    b, a = np.polyfit(np.array(ns, dtype=float), np.array(ys, dtype=float), 1)
    return float(a), float(b)


def _fmt_s(s: float) -> str:
    if s < 120:
        return f"{s:.1f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1e4,3e4,1e5", help="chunk counts, comma-separated (e.g. 1e4,1e5,1e6)")
    ap.add_argument("--root", default=None, help="where corpora and work dirs go (default: a temp dir, removed)")
    ap.add_argument("--keep", action="store_true", help="keep --root afterwards (reuse the generated corpora)")
    ap.add_argument("--real-corpus", default=str(DEFAULT_CORPUS), help="real corpus for MB/s ('' to skip)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dim", type=int, default=256, help="bits per vector (the default model has 256)")
    ap.add_argument("--queries", type=int, default=200, help="BM25 pseudo-queries per size")
    ap.add_argument("--vector-queries", type=int, default=20, help="single sqlite-vec queries per size")
    ap.add_argument("--json", default=None)
    # child mode
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--corpus-dir", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--workdir", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--n", type=float, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        res = child(args.child, Path(args.corpus_dir), Path(args.workdir), args)
        print("RESULT " + json.dumps(res))
        return res

    mach = header("Scaling: ingest, BM25 build/query, vector insert/query vs corpus size; extrapolation to DOF")
    sizes = [int(float(s)) for s in args.sizes.split(",") if s.strip()]
    root = Path(args.root) if args.root else Path(tempfile.mkdtemp(prefix="harness-scaling-"))
    root.mkdir(parents=True, exist_ok=True)
    res: dict = {"machine": mach, "sizes": sizes, "dim": args.dim, "real": None, "runs": {}}
    try:
        if args.real_corpus:
            real = Path(args.real_corpus)
            wd = root / "real-work"
            shutil.rmtree(wd, ignore_errors=True)
            ing = run_child("ingest", real, wd, args)
            chk = run_child("chunking", real, wd, args)
            res["real"] = {"ingest": ing, "chunking": chk}
            print(
                f"-- real corpus {real.name}: {ing.get('mb', 0):.1f} MB, {ing.get('n_documents')} documents, "
                f"{ing.get('n_chunks')} chunks"
            )
            print(
                f"   ingest (hash + chunk + SQLite) {ing['seconds']:.1f} s = {ing['mb_per_s']:.1f} MB/s, "
                f"peak RSS {ing['peak_rss_mb']:.0f} MB; chunking alone {chk['chunking_mb_per_s']:.1f} MB/s; "
                f"analysis (es-snowball-fold-v1) {chk['analysis_mb_per_s']:.1f} MB/s"
            )
            shutil.rmtree(wd, ignore_errors=True)
        print(f"\n   {'chunks':>9s} {'step':14s} {'time':>9s} {'peak RSS':>9s} {'(base)':>7s}  notes\n   " + "-" * 96)
        for n in sizes:
            cdir = root / f"syn-{n}" / "corpus"
            wd = root / f"syn-{n}" / "work"
            if not (cdir / "metadata.jsonl").exists():
                shutil.rmtree(cdir, ignore_errors=True)
                gen = run_child("generate", cdir, wd, args, n=n)
            else:
                gen = {"step": "generate", "seconds": 0.0, "reused": True}
            shutil.rmtree(wd, ignore_errors=True)
            runs = {"generate": gen}
            for step in STEPS:
                r = run_child(step, cdir, wd, args)
                runs[step] = r
                if "error" in r:
                    print(f"   {n:9d} {step:14s} FAILED ({r['error']})")
                    continue
                print(
                    f"   {r.get('n_chunks', n):9d} {step:14s} {r['seconds']:8.2f}s {r['peak_rss_mb']:7.0f}MB "
                    f"{r['base_rss_mb']:6.0f}MB  {_notes(step, r)}"
                )
            res["runs"][n] = runs
            if not args.keep:
                shutil.rmtree(wd, ignore_errors=True)
        res["fits"] = report_fits(res["runs"])
    finally:
        if not args.keep and not args.root:
            shutil.rmtree(root, ignore_errors=True)
        elif not args.keep:
            for n in sizes:
                shutil.rmtree(root / f"syn-{n}" / "work", ignore_errors=True)
    write_json(args.json, res)
    return res


def _notes(step: str, r: dict) -> str:
    if step == "ingest":
        return f"{r['mb_per_s']:.1f} MB/s, {r['n_documents']} docs, db {r['db_bytes'] / 1e6:.0f} MB"
    if step == "bm25_build":
        return f"indexes {r['index_bytes'] / 1e6:.0f} MB on disk"
    if step == "bm25_query":
        return (
            f"{r['ms_per_query']:.2f} ms/query (BM25System.search), {r['ms_per_query_batched']:.2f} batched; "
            f"load {r['load_s']:.2f} s"
        )
    if step == "vector_insert":
        return (
            f"harness {r['insert_s']:.1f} s + hash embedder {r['embed_s']:.1f} s; cache {r['cache_bytes'] / 1e6:.0f} MB"
        )
    if step == "vector_query":
        return (
            f"sqlite-vec {r['ms_per_query']:.1f} ms/query, numpy batch {r['ms_per_query_numpy_batch']:.1f} ms/query;"
            f" open {r['open_s']:.2f} s"
        )
    return ""


def report_fits(runs: dict) -> dict:
    """Growth exponents, extrapolation to DOF scale and the 24 GB verdict, printed and returned."""
    sizes = sorted(runs)
    out: dict = {}
    print(f"\n-- growth and extrapolation to {DOF_CHUNKS:,} chunks (2 cores, {MACHINE_GB:.0f} GB)")
    print(
        "   exponent: slope of log time on log chunks over all sizes; 'last': between the two largest sizes. Time is\n"
        "   extrapolated from the largest size with max(1, last) (every step touches every chunk at least once),\n"
        "   peak RSS with a straight line a + b * chunks fitted on all sizes."
    )
    print(
        f"   {'step':14s} {'exponent':>8s} {'last':>5s} {'time at DOF':>12s} {'peak RSS at DOF':>16s} {'fits?':>6s}  "
        "per-query / notes"
    )
    for step in STEPS:
        pts = [(runs[n][step].get("n_chunks", n), runs[n][step]) for n in sizes if "error" not in runs[n][step]]
        if not pts:
            continue
        ns = [float(p[0]) for p in pts]
        key = "ms_per_query" if step in ("bm25_query", "vector_query") else "seconds"
        ts = [float(p[1][key]) for p in pts]
        b = fit(ns, ts)
        b_local = fit(ns[-2:], ts[-2:])
        b_ext = max(1.0, b_local if b_local is not None else 1.0)
        n_max, t_max = ns[-1], ts[-1]
        t_dof = t_max * (DOF_CHUNKS / n_max) ** b_ext
        a, slope = fit_linear(ns, [p[1]["peak_rss_mb"] for p in pts])
        rss_dof_gb = (a + slope * DOF_CHUNKS) / 1024
        fits = rss_dof_gb <= MACHINE_GB - HEADROOM_GB
        extra = ""
        if step == "bm25_query":
            tbs = [float(p[1]["ms_per_query_batched"]) for p in pts]
            bb = fit(ns[-2:], tbs[-2:])
            tb = tbs[-1] * (DOF_CHUNKS / n_max) ** max(1.0, bb if bb is not None else 1.0)
            extra = (
                f"per query {t_dof:.0f} ms (batched {tb:.0f} ms): {DOF_EVAL_QUERIES} queries in "
                f"{_fmt_s(t_dof * DOF_EVAL_QUERIES / 1000)} (batched {_fmt_s(tb * DOF_EVAL_QUERIES / 1000)}); "
                "production: 2,030 s"
            )
            t_show = f"{t_dof:.0f} ms/q"
        elif step == "vector_query":
            extra = f"one sqlite-vec query {t_dof:.0f} ms; {DOF_EVAL_QUERIES} queries {_fmt_s(t_dof * 3.023)}"
            t_show = f"{t_dof:.0f} ms/q"
        else:
            t_show = _fmt_s(t_dof)
        verdict = "yes" if fits else "NO"
        print(
            f"   {step:14s} {b if b is not None else float('nan'):8.2f} "
            f"{b_local if b_local is not None else float('nan'):5.2f} {t_show:>12s} {rss_dof_gb:13.1f} GB "
            f"{verdict:>6s}  {extra}"
        )
        out[step] = {
            "exponent": b,
            "exponent_last": b_local,
            "exponent_used": b_ext,
            "extrapolated": t_dof,
            "unit": "ms per query" if key == "ms_per_query" else "seconds",
            "rss_fit_mb": {"a": a, "b_per_chunk": slope},
            "peak_rss_gb_at_dof": rss_dof_gb,
            "fits_24gb": fits,
        }
    return out


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
