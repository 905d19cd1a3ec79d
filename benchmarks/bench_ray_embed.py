"""Embedding build of the real corpus: single process (``VectorIndex.build``) vs Ray Data (``ray_build``, N workers).

Both start from an empty embedding cache in their own temporary work directory (ingest included, timed apart) with
the model of ``--model`` (default: the default model, ``use``); the Ray build uses a local 127.0.0.1 instance
started inside the timed region (as ``harness embed --engine ray`` does). Reported: wall time, texts per second, the
Ray stage's own time, and whether the two sqlite-vec tables are equal row for row (rowid, bits, doc_pos).

Reproduce: ``.venv/bin/python benchmarks/bench_ray_embed.py [--model use] [--workers 2] [--shard-size 4096]`` (with
``use`` each build embeds the whole corpus: tens of minutes on 2 cores; ``--model wordllama``: 1-2 minutes).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from common import DEFAULT_CORPUS, header, write_json

from harness.corpus.ingest import ingest
from harness.corpus.store import Corpus
from harness.retrieve.embed import DEFAULT_MODEL, load_embedder
from harness.retrieve.ray_embed import ray_build
from harness.retrieve.vector import VectorIndex


def _rows(corpus: Corpus, table: str):
    return corpus.conn.execute(f'SELECT rowid, embedding, doc_pos FROM "{table}" ORDER BY rowid').fetchall()


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--shard-size", type=int, default=4096)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    mach = header(f"embedding build: single process vs Ray Data ({args.workers} workers), model {args.model}")
    root = Path(tempfile.mkdtemp(prefix="bench-ray-embed-"))
    res: dict = {"machine": mach, "workers": args.workers}
    try:
        wd1, wd2 = root / "single", root / "ray"
        t0 = time.perf_counter()
        db1, man, _ = ingest(args.corpus, wd1)
        db2, _, _ = ingest(args.corpus, wd2)
        t_ing = (time.perf_counter() - t0) / 2
        n = man.n_chunks
        with Corpus(db1) as c1:
            t0 = time.perf_counter()
            emb = load_embedder(args.model, models_dir=wd1 / "models")
            idx = VectorIndex.build(c1, wd1, emb)
            t_single = time.perf_counter() - t0
            st1 = idx.build_stats
            rows1 = _rows(c1, idx.table)
        with Corpus(db2) as c2:
            t0 = time.perf_counter()
            st2 = ray_build(c2, wd2, model=args.model, workers=args.workers, shard_size=args.shard_size)
            t_ray = time.perf_counter() - t0
            rows2 = _rows(c2, st2["table"])
        equal = rows1 == rows2
        print(f"   {n} chunks ({st1['n_embedded']} distinct texts embedded); ingest {t_ing:.1f} s each (excluded)")
        print(
            f"   single process: {t_single:.1f} s wall ({n / t_single:.0f} chunks/s); embedding alone "
            f"{st1['embed_seconds']:.1f} s ({st1['texts_per_second']} texts/s)"
        )
        print(
            f"   Ray, {args.workers} workers: {t_ray:.1f} s wall ({n / t_ray:.0f} chunks/s) = Ray stage "
            f"{st2['ray_seconds']:.1f} s (start-up included; {st2['n_shards']} shards, embedding "
            f"{st2['embed_seconds']:.1f} s summed over workers) + merge {st2['merge_seconds']:.1f} s + index insert "
            f"{st2['index']['seconds']:.1f} s"
        )
        print(f"   single / Ray wall time: {t_single / t_ray:.2f}x; sqlite-vec tables equal row for row: {equal}")
        res.update(
            n_chunks=n,
            single_s=t_single,
            ray_s=t_ray,
            single_stats=st1,
            ray_stats=st2,
            tables_equal=equal,
            ratio_single_over_ray=t_single / t_ray,
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    write_json(args.json, res)
    return res


if __name__ == "__main__":
    main()
