"""Known-item search throughput and coverage-study wall time on the real corpus, in one run.

* Known-item search (``harness.studies.known_item.known_item_search``): queries per second for ``bm25`` and
  ``tfidf`` on a contiguous slice of the real corpus's queries (``--queries``, default 8,192) against all ~92k chunks,
  with 1 and 2 workers (interleaved rounds, best of ``--repeats``). For contrast, the same slice scored by scipy's
  sparse product ``Q @ W.T`` (SMMP; the product alone, no outcome extraction), which the dense-block kernel replaced.
* Coverage study (``harness.studies.coverage.run_coverage``): wall time of the whole study (five K values and the
  two-stage design, ``--reps`` 5,000, B = 999) on the bm25 population, with 1 and 2 threads.

Reproduce: ``.venv/bin/python benchmarks/bench_known_item.py`` (about 3-4 minutes on 2 cores; ``--json out.json``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from common import DEFAULT_CORPUS, header, interleaved_best, peak_rss_mb, write_json

from harness.ranking import id_rank as _id_rank
from harness.retrieve.analyzer import SpanishAnalyzer
from harness.studies.coverage import Population, run_coverage
from harness.studies.known_item import ScorerInputs, chunk_corpus, known_item_search
from harness.studies.known_item.scorers import bm25_scorer, tfidf_scorer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    ap.add_argument("--queries", type=int, default=8192)
    ap.add_argument("--start", type=int, default=20000, help="first query of the slice")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5000, help="coverage study replicates")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    m = header("known-item search and coverage study")
    t0 = time.perf_counter()
    cc = chunk_corpus(args.corpus)
    an = SpanishAnalyzer()
    toks = an.tokenize_many(cc.texts)
    qtoks = an.tokenize_many(cc.query_texts)
    prep = time.perf_counter() - t0
    print(f"   {cc.n_chunks} chunks, {cc.query_chunks.size} queries; chunking + analysis {prep:.1f} s")
    idr = _id_rank(cc.chunk_ids)
    a, z = args.start, min(args.start + args.queries, cc.query_chunks.size)
    out: dict = {"machine": m, "chunks": cc.n_chunks, "queries_total": int(cc.query_chunks.size), "slice": [a, z]}
    full_bm25 = None

    def inputs(query_tokens):
        return ScorerInputs(chunk_texts=cc.texts, query_texts=[], chunk_tokens=toks, query_tokens=query_tokens)

    for name, build in (("bm25", bm25_scorer), ("tfidf", tfidf_scorer)):
        tb = time.perf_counter()
        scorer, _ = build(inputs(qtoks))
        build_s = time.perf_counter() - tb
        sub, _ = build(inputs(qtoks[a:z]))
        qc = cc.query_chunks[a:z]

        def run(workers, sub=sub, qc=qc):
            return known_item_search(sub, qc, cc.chunk_doc, idr, workers=workers)

        def smmp(sub=sub):
            for s in range(0, sub.n_queries, 256):
                _ = sub.queries[s : s + 256] @ sub.index_t

        res = interleaved_best(
            {"workers=1": lambda: run(1), "workers=2": lambda: run(2), "scipy Q@W.T": smmp}, args.repeats
        )
        nq = z - a
        row = {k: {"best_s": v["best"], "queries_per_s": nq / v["best"]} for k, v in res.items()}
        row["build_s"] = build_s
        out[name] = row
        print(
            f"   {name}: index {build_s:.1f} s; "
            + "; ".join(f"{k} {r['queries_per_s']:.0f} q/s" for k, r in row.items() if k != "build_s")
        )
        if name == "bm25":
            tf = time.perf_counter()
            full_bm25 = known_item_search(scorer, cc.query_chunks, cc.chunk_doc, idr, workers=2)
            full_s = time.perf_counter() - tf
            out["bm25_full"] = {"seconds": full_s, "queries_per_s": cc.query_chunks.size / full_s}
            print(
                f"   bm25 all {cc.query_chunks.size} queries, 2 workers: {full_s:.1f} s "
                f"({cc.query_chunks.size / full_s:.0f} q/s)"
            )
    hit = full_bm25[0]
    qdoc = cc.chunk_doc[cc.query_chunks]
    n = np.bincount(qdoc, minlength=len(cc.doc_ids))
    s = np.bincount(qdoc, weights=hit, minlength=len(cc.doc_ids)).astype(np.int64)
    keep = n > 0
    pop = Population.from_arrays(n[keep], s[keep], [t for t, k in zip(cc.doc_types, keep, strict=True) if k])
    for threads in (1, 2):
        tc = time.perf_counter()
        run_coverage(pop, reps=args.reps, threads=threads)
        secs = time.perf_counter() - tc
        out[f"coverage_threads_{threads}_s"] = secs
        print(
            f"   coverage study (K = 5,10,20,40,80 + two-stage, R = {args.reps}, B = 999), {threads} thread(s): "
            f"{secs:.1f} s"
        )
    out["peak_rss_mb"] = peak_rss_mb()
    print(f"   peak RSS {out['peak_rss_mb']:.0f} MB")
    if args.json:
        write_json(args.json, out)


if __name__ == "__main__":
    main()
