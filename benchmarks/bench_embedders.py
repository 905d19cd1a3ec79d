"""Embedding speed of every packaged model side by side, on the same real chunks: one process with one thread, then
the sharded build (:mod:`harness.retrieve.embed.workers`: ``--workers`` spawn processes, one thread each), with the
check that both give the same bits.

Per model, ``--n`` chunks (a seeded sample of the real corpus; ``e5-small`` gets ``n // 4``, it is ~10x slower) are
embedded by each path once, after a warm-up call; reported: chunks/s of each and their ratio. Worker start-up (a
fresh interpreter loading the model) is inside the sharded time, as in a real build. The machine is shared: the
header gives its load average, and figures taken under load are lower bounds.

Reproduce: ``nice -n 10 .venv/bin/python benchmarks/bench_embedders.py [--n 512] [--workers 2]``.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from common import DEFAULT_CORPUS, header, write_json

from harness.corpus.ingest import ingest
from harness.corpus.store import Corpus
from harness.retrieve.embed import EMBEDDERS, load_embedder
from harness.retrieve.embed.workers import passage_embedder


def _sample(corpus_dir, workdir, n: int, seed: int) -> list[str]:
    db, _man, _ = ingest(corpus_dir, workdir)
    with Corpus(db) as c:
        texts = [t for (t,) in c.conn.execute("SELECT text FROM chunks ORDER BY rowid")]
    pick = np.random.default_rng(seed).choice(len(texts), size=min(n, len(texts)), replace=False)
    return [texts[i] for i in sorted(pick)]


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    ap.add_argument("--workdir", default=".harness")
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--models", default=",".join(EMBEDDERS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    mach = header(f"embedding speed per model: 1 process x 1 thread vs {args.workers} worker processes")
    texts = _sample(args.corpus, args.workdir, args.n, args.seed)
    res: dict = {"machine": mach, "workers": args.workers, "models": {}}
    print(f"   {'model':10} {'chunks':>6} {'1 proc/s':>9} {f'{args.workers} workers/s':>12} {'ratio':>6}  same bits")
    for name in args.models.split(","):
        try:
            emb = load_embedder(name, threads=1, models_dir=os.path.join(args.workdir, "models"))
        except Exception as exc:  # noqa: BLE001 - a model whose package is not installed is reported, not fatal
            print(f"   {name:10} unavailable: {str(exc).splitlines()[0]}")
            continue
        part = texts[: max(8, len(texts) // 4)] if name == "e5-small" else texts
        emb.embed_passages(part[:2])  # warm-up (lazy loading)
        t0 = time.perf_counter()
        one = emb.embed_passages(part)
        t_one = time.perf_counter() - t0
        t0 = time.perf_counter()
        with passage_embedder(emb, len(part), args.workers) as pe:
            many = pe.embed_passages(part)
            n_workers = getattr(pe, "workers", 1)
        t_many = time.perf_counter() - t0
        same = bool(np.array_equal(one, many))
        r1, r2 = len(part) / t_one, len(part) / t_many
        print(f"   {name:10} {len(part):>6} {r1:>9.1f} {r2:>12.1f} {r2 / r1:>5.2f}x  {same} ({n_workers} processes)")
        res["models"][name] = {
            "model_id": emb.model_id,
            "n": len(part),
            "single_chunks_per_s": r1,
            "sharded_chunks_per_s": r2,
            "sharded_workers": n_workers,
            "same_bits": same,
        }
    write_json(args.json, res)
    return res


if __name__ == "__main__":
    main()
