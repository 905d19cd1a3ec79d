"""BM25 retrieval through the harness against raw bm25s and rank_bm25, on the real corpus's chunks, in one run.

Every engine gets the same chunks and the same analysed tokens (the harness's ``es-snowball-fold-v1`` analyzer):

* harness vs bm25s: the harness's persisted chunk index (bm25s ``lucene``, k1 = 1.5, b = 0.75) against a bm25s
  index built here from the same token lists with the same variant; bm25s in its default configuration (numpy
  backend, one thread) and in its fastest (numba backend, 1 and 2 threads). The harness's per-query path
  (``BM25Index.search``: text -> analysed terms -> ``get_scores`` -> exact top-k with the id tie rule -> ids) and the
  batched path (``BM25Index.search_many``, numba kernel or numpy fallback; what ``BM25System.search`` now uses)
  start from the query *text*; bm25s starts from the analysed tokens (analysis costs are printed apart). Depth 10.
* bm25s vs rank_bm25: bm25s ``robertson`` against ``rank_bm25.BM25Okapi(k1=1.5, b=0.75, epsilon=0)`` (with
  ``epsilon=0`` Okapi's floor for negative idf is 0, which is what bm25s's robertson idf does; rank_bm25's scores are
  then exactly ``k1 + 1`` times bm25s's, float64 against float32). rank_bm25 scans every document in Python per query
  term (about 300x slower), so it answers a subsample of the queries (``--rank-bm25-queries``) over all chunks.

Timings are interleaved (each method once per round, ``--repeats`` rounds) and ratios are between best times.
Top-10 equality: a query is *untied* when its first 11 positive scores are all distinct (no tie inside the top 10 nor
at the cut); untied top-10 lists must be equal item for item; tied ones are compared as score lists.

Reproduce: ``.venv/bin/python benchmarks/bench_bm25.py`` (about 2-3 minutes on 2 cores; ``--json out.json``).
"""

from __future__ import annotations

import argparse
import copy
import time

import bm25_batch
import bm25s
import numpy as np
from common import (
    DEFAULT_CORPUS,
    header,
    interleaved_best,
    load_questions,
    peak_rss_mb,
    sampled_queries,
    write_json,
)

from harness.corpus.ingest import ingest
from harness.corpus.store import Corpus
from harness.retrieve.analyzer import SpanishAnalyzer
from harness.retrieve.bm25 import BM25_PARAMS, BM25Index, BM25System

DEPTH = 10


def _untied(scores: list[float], k: int, rel_tol: float = 0.0) -> bool:
    """First ``k + 1`` positive scores all distinct (beyond ``rel_tol`` relative)."""
    s = [x for x in scores[: k + 1] if x > 0]
    return all(a - b > rel_tol * abs(a) for a, b in zip(s, s[1:], strict=False))


def compare_topk(a_ids, a_sc, b_ids, b_sc, k: int, *, rel_tol: float = 0.0, scale: float = 1.0) -> dict:
    """Compare two engines' rankings query by query (``a`` has k + 1 entries to see the cut).

    Returns counts: ``untied``, ``untied_equal``, ``tied``, ``tied_scores_equal`` and the largest relative score
    difference over the compared positions (``b`` scores multiplied by ``scale`` first).
    """
    out = {"queries": len(a_ids), "untied": 0, "untied_equal": 0, "tied": 0, "tied_scores_equal": 0}
    max_rel = 0.0
    for ai, asc, bi, bsc in zip(a_ids, a_sc, b_ids, b_sc, strict=True):
        bsc = [x * scale for x in bsc]
        pos_a = [(i, s) for i, s in zip(ai, asc, strict=True) if s > 0][:k]
        pos_b = [(i, s) for i, s in zip(bi, bsc, strict=True) if s > 0][:k]
        for (_, x), (_, y) in zip(pos_a, pos_b, strict=False):
            max_rel = max(max_rel, abs(x - y) / max(abs(x), 1e-30))
        if _untied(list(asc), k, rel_tol):
            out["untied"] += 1
            out["untied_equal"] += [i for i, _ in pos_a] == [i for i, _ in pos_b]
        else:
            out["tied"] += 1
            sa = np.array([s for _, s in pos_a])
            sb = np.array([s for _, s in pos_b])
            out["tied_scores_equal"] += sa.shape == sb.shape and bool(np.allclose(sa, sb, rtol=max(rel_tol, 1e-7)))
    out["max_rel_score_diff"] = max_rel
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    ap.add_argument("--workdir", default=".harness", help="derived files (corpus database, persisted indexes)")
    ap.add_argument("--goldset", default=None, help="dataset folder or JSONL (default datasets/mx-leyes-dof-eval-v1)")
    ap.add_argument("--sampled", type=int, default=1000, help="pseudo-queries sampled from chunks (8 words)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rank-bm25-queries", type=int, default=20, help="queries answered by rank_bm25 (subsample)")
    ap.add_argument("--no-rank-bm25", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    mach = header("BM25: harness vs bm25s vs rank_bm25 (same chunks, same tokens, same variant)")
    res: dict = {"machine": mach, "depth": DEPTH}

    db, man, _ = ingest(args.corpus, args.workdir)
    corpus = Corpus(db)
    _rowids, chunk_ids, _docs, texts = corpus.chunk_table()
    print(f"   corpus {man.corpus_id}: {man.n_documents} documents, {len(chunk_ids)} chunks, {man.n_words} words")
    an = SpanishAnalyzer()
    t0 = time.perf_counter()
    tokens = an.tokenize_many(texts)
    t_an = time.perf_counter() - t0
    n_tok = sum(map(len, tokens))
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    print(f"   analysis of all chunks: {t_an:.1f} s, {n_tok / t_an / 1e6:.2f} M tokens/s, {mb / t_an:.1f} MB/s")
    res["corpus"] = {"corpus_id": man.corpus_id, "chunks": len(chunk_ids), "tokens": n_tok, "analysis_s": t_an}

    # --- indexes: harness (persisted, memory-mapped) and raw bm25s built here from the same tokens
    t0 = time.perf_counter()
    system = BM25System(corpus, args.workdir)
    t_sys = time.perf_counter() - t0
    ix = system.chunk_index
    assert ix.ids == chunk_ids, "harness chunk index is not aligned with chunk_table()"
    t0 = time.perf_counter()
    BM25Index.build(chunk_ids, tokens, an)
    t_hbuild = time.perf_counter() - t0
    t0 = time.perf_counter()
    raw = bm25s.BM25(**BM25_PARAMS)
    raw.index(tokens, show_progress=False)
    t_raw = time.perf_counter() - t0
    raw_nb = copy.copy(raw)
    raw_nb.backend = "numba"
    print(
        f"   build (chunk index, tokens given): harness BM25Index.build {t_hbuild:.1f} s, bm25s.index {t_raw:.1f} s"
        f" (harness bm25 system ready in {t_sys:.1f} s: built or loaded memory-mapped)"
    )
    res["build_s"] = {"harness_BM25Index.build": t_hbuild, "bm25s.index": t_raw}

    # --- queries
    gold_name, gold_q = load_questions(args.goldset)
    sets = {"gold": gold_q, "sampled": sampled_queries(texts, args.sampled)}
    print(f"   queries: gold = {gold_name}; sampled = {len(sets['sampled'])} 8-word windows of random chunks (seed 0)")
    threads = bm25_batch.default_threads()
    res["sets"] = {}
    for set_name, qs in sets.items():
        res["sets"][set_name] = bench_set(set_name, qs, ix, raw, raw_nb, system, an, chunk_ids, threads, args)

    if not args.no_rank_bm25:
        res["rank_bm25"] = bench_rank_bm25(tokens, chunk_ids, sets, ix, args)
    res["peak_rss_mb"] = peak_rss_mb()
    print(f"\npeak RSS {res['peak_rss_mb']:.0f} MB")
    write_json(args.json, res)
    return res


def bench_set(set_name, qs, ix, raw, raw_nb, system, an, chunk_ids, threads, args) -> dict:
    """Time every method on one query set; check top-10 equality and batched == per-query results."""
    q_tokens = [ix.query_terms(q) for q in qs]
    keep = [i for i, t in enumerate(q_tokens) if t]
    qs = [qs[i] for i in keep]
    q_tokens = [q_tokens[i] for i in keep]
    n = len(qs)
    t0 = time.perf_counter()
    for q in qs:
        an.tokenize(q)
    t_qan = (time.perf_counter() - t0) / n
    # warm-up: numba compilation (cached on disk after the first run) and page cache
    raw_nb.retrieve(q_tokens[:2], k=DEPTH, show_progress=False, n_threads=1)
    raw_nb.retrieve(q_tokens[:4], k=DEPTH, show_progress=False, n_threads=2)
    ix.search_many(qs[:4], DEPTH, n_threads=1)
    ix.search_many(qs[:4], DEPTH, n_threads=threads)
    system.search(qs[:2], doc_depth=50, chunk_depth=200)
    fns = {
        "bm25s numpy (default), 1 thread": lambda: raw.retrieve(q_tokens, k=DEPTH, show_progress=False),
        "bm25s numpy, 2 threads": lambda: raw.retrieve(q_tokens, k=DEPTH, show_progress=False, n_threads=2),
        "bm25s numba, 1 thread": lambda: raw_nb.retrieve(q_tokens, k=DEPTH, show_progress=False, n_threads=1),
        "bm25s numba, 2 threads": lambda: raw_nb.retrieve(q_tokens, k=DEPTH, show_progress=False, n_threads=2),
        "harness BM25Index.search, per query": lambda: [ix.search(q, DEPTH) for q in qs],
        "harness BM25Index.search_many, 1 thread": lambda: ix.search_many(qs, DEPTH, n_threads=1),
        f"harness BM25Index.search_many, {threads} threads": lambda: ix.search_many(qs, DEPTH, n_threads=threads),
        "harness search_many, 1 thread, from analysed terms": lambda: ix.search_many(
            q_tokens, DEPTH, n_threads=1, analysed=True
        ),
        f"harness search_many, {threads} threads, from analysed terms": lambda: ix.search_many(
            q_tokens, DEPTH, n_threads=threads, analysed=True
        ),
        "harness per-query system (former BM25System.search)": lambda: bm25_batch.per_query_system_search(
            system, qs, doc_depth=50, chunk_depth=200
        ),
        "harness BM25System.search (docs@50+chunks@200)": lambda: system.search(qs, doc_depth=50, chunk_depth=200),
        "harness batched system, numpy fallback (no numba)": lambda: bm25_batch.search_system_many(
            system, qs, doc_depth=50, chunk_depth=200, backend="numpy"
        ),
    }
    tm = interleaved_best(fns, args.repeats)
    qps = {k: n / v["best"] for k, v in tm.items()}
    qps_med = {k: n / v["median"] for k, v in tm.items()}
    # correctness: harness vs raw bm25s (lucene), batched vs per-query
    h11 = [ix.search(q, DEPTH + 1)[0] for q in qs]
    r = raw.retrieve(q_tokens, k=DEPTH + 1, show_progress=False)
    cmp_raw = compare_topk(
        [[i for i, _ in h] for h in h11],
        [[s for _, s in h] for h in h11],
        [[chunk_ids[j] for j in row] for row in r.documents],
        [list(map(float, row)) for row in r.scores],
        DEPTH,
    )
    ref = bm25_batch.per_query_system_search(system, qs, doc_depth=50, chunk_depth=200)
    same_batch = system.search(qs, doc_depth=50, chunk_depth=200) == ref and all(
        bm25_batch.search_system_many(system, qs, doc_depth=50, chunk_depth=200, n_threads=nt, backend=be) == ref
        for nt, be in ((1, "auto"), (threads, "auto"), (1, "numpy"))
    )
    print(f"\n-- query set {set_name}: {n} queries (with >= 1 known term), depth {DEPTH}")
    print(f"   query analysis: {t_qan * 1e6:.1f} us/query (included in the harness rows, not in bm25s rows)")
    base = qps["bm25s numpy (default), 1 thread"]
    print(f"   {'method':52s} {'q/s best':>10s} {'q/s median':>11s} {'x bm25s default':>16s}")
    for k in fns:
        print(f"   {k:52s} {qps[k]:10.0f} {qps_med[k]:11.0f} {qps[k] / base:16.2f}")
    ratios = {
        "harness per-query (text) / bm25s default (tokens), 1 thread": qps["harness BM25Index.search, per query"]
        / base,
        "harness batched (text) / bm25s default (tokens), 1 thread": qps["harness BM25Index.search_many, 1 thread"]
        / base,
        "harness batched / bm25s numba, both from terms, 1 thread": qps[
            "harness search_many, 1 thread, from analysed terms"
        ]
        / qps["bm25s numba, 1 thread"],
        f"harness batched / bm25s numba, both from terms, {threads} threads": qps[
            f"harness search_many, {threads} threads, from analysed terms"
        ]
        / qps["bm25s numba, 2 threads"],
        "harness batched (text) / bm25s numba (terms), 1 thread": qps["harness BM25Index.search_many, 1 thread"]
        / qps["bm25s numba, 1 thread"],
        "harness per-query (text) / bm25s numba (terms), 1 thread": qps["harness BM25Index.search, per query"]
        / qps["bm25s numba, 1 thread"],
        "harness BM25System.search (batched) / former per-query system (run depths)": qps[
            "harness BM25System.search (docs@50+chunks@200)"
        ]
        / qps["harness per-query system (former BM25System.search)"],
    }
    print("   ratios (target: harness >= 0.8x raw bm25s):")
    for k, v in ratios.items():
        print(f"     {k:66s} {v:6.2f}x")
    print(
        f"   top-{DEPTH} harness vs bm25s lucene: untied {cmp_raw['untied_equal']}/{cmp_raw['untied']} equal, "
        f"tied {cmp_raw['tied_scores_equal']}/{cmp_raw['tied']} with equal score lists, "
        f"max relative score difference {cmp_raw['max_rel_score_diff']:.1e}"
    )
    print(
        "   BM25System.search and batched system (numba 1 and 2 threads, numpy fallback) identical to the "
        f"per-query path (rankings, scores, flags): {same_batch}"
    )
    return {
        "n_queries": n,
        "query_analysis_us": t_qan * 1e6,
        "qps_best": qps,
        "qps_median": qps_med,
        "ratios": ratios,
        "top10_harness_vs_bm25s": cmp_raw,
        "batched_identical_to_BM25System_search": same_batch,
    }


def bench_rank_bm25(tokens, chunk_ids, sets, ix, args) -> dict:
    """bm25s robertson vs rank_bm25 BM25Okapi(epsilon=0) on a query subsample over all chunks."""
    import rank_bm25

    k1, b = BM25_PARAMS["k1"], BM25_PARAMS["b"]
    allq = [q for qs in sets.values() for q in qs]
    allq = [q for q in allq if ix.query_terms(q)]
    step = max(1, len(allq) // max(1, args.rank_bm25_queries))
    sub = allq[::step][: args.rank_bm25_queries]
    q_tokens = [ix.query_terms(q) for q in sub]
    t0 = time.perf_counter()
    okapi = rank_bm25.BM25Okapi(tokens, k1=k1, b=b, epsilon=0.0)
    t_ok = time.perf_counter() - t0
    t0 = time.perf_counter()
    rob = bm25s.BM25(method="robertson", k1=k1, b=b)
    rob.index(tokens, show_progress=False)
    t_rob = time.perf_counter() - t0
    print(f"\n-- bm25s robertson vs rank_bm25 BM25Okapi(k1={k1}, b={b}, epsilon=0), all {len(chunk_ids)} chunks")
    print(f"   build: rank_bm25 {t_ok:.1f} s, bm25s {t_rob:.1f} s")
    ok_ids, ok_sc = [], []

    def run_okapi():
        ok_ids.clear()
        ok_sc.clear()
        for qt in q_tokens:
            sc = okapi.get_scores(qt)
            top = np.argsort(-sc, kind="stable")[: DEPTH + 1]
            ok_ids.append([chunk_ids[j] for j in top])
            ok_sc.append(sc[top].tolist())

    t0 = time.perf_counter()
    run_okapi()  # one pass only: it is the slow one
    t_okq = time.perf_counter() - t0
    reps = max(3, args.repeats)
    rob_nb = copy.copy(rob)
    rob_nb.backend = "numba"
    tm = interleaved_best(
        {
            "bm25s": lambda: rob.retrieve(q_tokens, k=DEPTH, show_progress=False),
            "bm25s numba": lambda: rob_nb.retrieve(q_tokens, k=DEPTH, show_progress=False, n_threads=1),
        },
        reps,
    )
    t_robq = tm["bm25s"]["best"]
    t_robnb = tm["bm25s numba"]["best"]
    n = len(sub)
    r = rob.retrieve(q_tokens, k=DEPTH + 1, show_progress=False)
    cmp_ = compare_topk(
        ok_ids,
        ok_sc,
        [[chunk_ids[j] for j in row] for row in r.documents],
        [list(map(float, row)) for row in r.scores],
        DEPTH,
        rel_tol=1e-5,
        scale=k1 + 1,
    )
    print(f"   queries: {n} (every {step}th of gold + sampled; rank_bm25 is too slow for all)")
    print(
        f"   rank_bm25 {n / t_okq:.2f} q/s; bm25s robertson numpy (default) {n / t_robq:.0f} q/s = "
        f"{t_okq / t_robq:.0f}x rank_bm25; bm25s robertson numba {n / t_robnb:.0f} q/s = {t_okq / t_robnb:.0f}x "
        "(all 1 thread)"
    )
    print(
        f"   top-{DEPTH}: untied (gaps > 1e-5 relative) {cmp_['untied_equal']}/{cmp_['untied']} equal, "
        f"tied {cmp_['tied_scores_equal']}/{cmp_['tied']} with equal score lists; rank_bm25 score = 2.5 x bm25s "
        f"within {cmp_['max_rel_score_diff']:.1e} relative (float64 vs float32)"
    )
    return {
        "n_queries": n,
        "build_s": {"rank_bm25": t_ok, "bm25s_robertson": t_rob},
        "qps": {"rank_bm25": n / t_okq, "bm25s_robertson": n / t_robq, "bm25s_robertson_numba": n / t_robnb},
        "ratio_bm25s_over_rank_bm25": t_okq / t_robq,
        "ratio_bm25s_numba_over_rank_bm25": t_okq / t_robnb,
        "top10": cmp_,
    }


if __name__ == "__main__":
    main()
