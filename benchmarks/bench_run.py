"""The whole ``harness run`` for the six systems on the real gold set, indexes pre-built (embedding time excluded).

1. Pre-build (timed, reported, excluded): ingest, the BM25 chunk and document indexes, the vector index of the default
   static model (embedding every chunk once; later runs reuse the cache and the sqlite-vec table).
2. ``harness.evaluation.pipeline.run`` for ``bm25,vector,rrf,w0.25,w0.5,w0.75`` on the gold set (default
   ``datasets/mx-leyes-dof-eval-v1``), ``--repeats`` times per vector backend (sqlite-vec, the production single-query
   path, and numpy, the batched scan), interleaved; wall time per run and the run record's own phase timings
   (``timings_s``: the re-ingest check that hashes the corpus, index loading, searches, fusion, metrics and
   bootstrap intervals), best run of each backend.
3. Once, the command line (``harness run ... --json``) as a user types it, Python start-up and imports included.
4. ``harness.validate.validate`` of the gold set against the corpus (re-chunking the gold documents), best of
   ``--repeats`` (the validator's target is under 10 s; the test suite checks correctness only).

Reproduce: ``.venv/bin/python benchmarks/bench_run.py`` (about 2 minutes on 2 cores once the indexes exist).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from common import DEFAULT_CORPUS, DEFAULT_GOLDSET, REPO, header, peak_rss_mb, write_json

from harness.corpus.ingest import ingest
from harness.corpus.store import Corpus
from harness.evaluation.pipeline import RunOptions, run
from harness.evaluation.runs import load_run
from harness.goldset.io import load_goldset
from harness.retrieve.base import SystemContext
from harness.retrieve.bm25 import BM25System
from harness.retrieve.vector import VectorOptions, open_vector_system
from harness.validate import validate

SYSTEMS = "bm25,vector,rrf,w0.25,w0.5,w0.75"


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    ap.add_argument("--goldset", default=str(DEFAULT_GOLDSET))
    ap.add_argument("--workdir", default=".harness")
    ap.add_argument("--systems", default=SYSTEMS)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--bootstrap-reps", type=int, default=5000)
    ap.add_argument("--no-cli", action="store_true", help="skip the command-line run")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    mach = header("harness run: six systems on the real gold set (indexes pre-built)")
    gs = load_goldset(args.goldset)
    systems = args.systems.split(",")
    print(f"   gold set {gs.name} ({len(gs.records)} questions); systems {args.systems}")
    res: dict = {"machine": mach, "goldset": gs.name, "n_questions": len(gs.records), "systems": systems}

    t0 = time.perf_counter()
    db, man, _ = ingest(args.corpus, args.workdir)
    t_ing = time.perf_counter() - t0
    with Corpus(db) as corpus:
        t0 = time.perf_counter()
        BM25System(corpus, args.workdir)
        t_bm = time.perf_counter() - t0
        t0 = time.perf_counter()
        vec = open_vector_system(SystemContext(corpus, Path(args.workdir)), VectorOptions())
        t_vec = time.perf_counter() - t0
        st = vec.build_stats
    print(
        f"   pre-build (excluded): ingest {t_ing:.1f} s, BM25 indexes {t_bm:.1f} s, vector index {t_vec:.1f} s "
        f"(embedded {st['n_embedded']} chunks in {st['embed_seconds']:.1f} s, cache hits {st['n_cache_hits']}, "
        f"inserted {st['n_inserted']}) -- {man.n_chunks} chunks"
    )
    res["prebuild_s"] = {"ingest": t_ing, "bm25": t_bm, "vector": t_vec, "vector_build_stats": st}

    runs_dir = Path(tempfile.mkdtemp(prefix="bench-run-"))
    walls: dict[str, list[float]] = {"sqlite-vec": [], "numpy": []}
    timings: dict[str, list[dict]] = {"sqlite-vec": [], "numpy": []}
    try:
        for r in range(args.repeats):
            for backend in walls:
                opts = RunOptions(
                    bootstrap_reps=args.bootstrap_reps, system_defaults={"vector": VectorOptions(backend=backend)}
                )
                t0 = time.perf_counter()
                path = run(
                    args.goldset,
                    args.corpus,
                    systems,
                    workdir=args.workdir,
                    runs_dir=runs_dir,
                    run_id=f"bench-{backend}-{r}",
                    options=opts,
                )
                walls[backend].append(time.perf_counter() - t0)
                timings[backend].append(load_run(path).manifest.timings_s)
        summary = load_run(path).summary.model_dump()
        cli = None if args.no_cli else _cli_run(args, runs_dir)
    finally:
        shutil.rmtree(runs_dir, ignore_errors=True)

    n_q = len(gs.records)
    print(f"\n-- {args.repeats} runs per vector backend, interleaved (wall time of harness.evaluation.pipeline.run)")
    for backend, w in walls.items():
        best = int(np.argmin(w))
        tm = timings[backend][best]
        print(
            f"   vector backend {backend:10s}: best {min(w):.2f} s, median {np.median(w):.2f} s "
            f"({n_q * len(systems) / min(w):.0f} question-system pairs/s)"
        )
        phases = ", ".join(f"{k} {v:.3g}" for k, v in tm.items())
        print(f"      phases of the best run (s, from the run record): {phases}")
    ratio = min(walls["sqlite-vec"]) / min(walls["numpy"])
    print(f"   whole run, sqlite-vec backend / numpy backend: {ratio:.2f}x time")
    if cli:
        print(f"   command line `harness run ... --json` (start-up and imports included): {cli:.2f} s")
    val = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        report = validate(args.goldset, corpus_dir=args.corpus)
        val.append(time.perf_counter() - t0)
    print(
        f"   validate the gold set against the corpus: best {min(val):.2f} s, median {np.median(val):.2f} s "
        f"(target < 10 s; exit code {report.exit_code})"
    )
    res["validate_s"] = val
    mrr = {s: summary["systems"][s]["all"]["overall"]["mrr"]["mean"] for s in systems if s in summary["systems"]}
    print("   document MRR (sanity): " + ", ".join(f"{s} {v:.3f}" for s, v in mrr.items()))
    res.update(
        walls=walls,
        timings=timings,
        sqlite_vec_over_numpy=ratio,
        cli_wall_s=cli,
        mrr=mrr,
        peak_rss_mb=peak_rss_mb(),
    )
    print(f"peak RSS {res['peak_rss_mb']:.0f} MB")
    write_json(args.json, res)
    return res


def _cli_run(args, runs_dir: Path) -> float | None:
    exe = Path(sys.executable).parent / "harness"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "harness.cli"]
    cmd += ["run", "--corpus", args.corpus, "--goldset", args.goldset, "--systems", args.systems]
    cmd += ["--workdir", args.workdir, "--runs-dir", str(runs_dir), "--run-id", "bench-cli", "--format", "json"]
    cmd += ["--bootstrap-reps", str(args.bootstrap_reps)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-2000:])
        return None
    json.loads(proc.stdout)  # the output envelope must parse
    return wall


if __name__ == "__main__":
    main()
