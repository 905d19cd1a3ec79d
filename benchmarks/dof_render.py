"""The "DOF scale" block of ``docs/measurements.md`` from ``results.json`` of ``benchmarks/bench_dof.py`` (its
``ray_embed`` step holds the Ray throughput of ``benchmarks/bench_dof_ray.py``): text only, every figure read from
the file."""

from __future__ import annotations

DOF_CHUNKS = 6_730_304
TARGET_RSS_GB, TARGET_DISK_GB, TARGET_WARM_S = 20.0, 50.0, 120.0

_WHAT = {
    "generate": "synthetic corpus written (benchmarks/dof_corpus.py)",
    "ingest": "harness ingest (scan + hash, chunk, SQLite)",
    "ingest_warm": "harness ingest again (finding the existing ingest)",
    "validate": "harness validate (gold set against the corpus)",
    "bm25_build": "harness run bm25, cold (BM25 indexes built)",
    "bm25_run": "harness run bm25, warm (the 42-question run)",
    "vector_build": "harness embed, whole corpus (stand-in vectors)",
    "vector_slice": "harness embed --index-fraction 0.382",
    "hamming": "42 queries per Hamming engine, whole + slice",
    "run_all": "harness run bm25,vector,vector@0.382,rrf,w0.5",
    "report": "harness report (HTML)",
    "ray_embed": "real model on Ray, 1 and 2 local nodes (below; RSS: the driver)",
}


def _gb(b: float) -> str:
    return f"{b / 1e9:.1f} GB"


def _dur(s: float) -> str:
    if s < 120:
        return f"{s:.1f} s"
    return f"{s / 60:.1f} min"


def render(results: dict) -> str:
    """The block's text (a ``text`` fence is added by ``benchmarks/measurements.py``)."""
    ray = results.get("steps", {}).get("ray_embed", {}).get("detail")
    m = results.get("machine", {})
    steps = results.get("steps", {})
    out = [
        "== DOF scale: the whole pipeline at 657,867 documents (benchmarks/bench_dof.py)",
        f"   {m.get('date_utc', '?')}  {m.get('cpus', '?')} CPUs ({m.get('cpu_model', '?')}), "
        f"{m.get('mem_gb', '?')} GB RAM, Python {m.get('python', '?')}, "
        f"load average {m.get('load_avg_1m', '?')} at start (shared machine)",
    ]
    gen = steps.get("generate", {}).get("detail", {})
    ing = steps.get("ingest", {}).get("detail", {})
    if gen:
        out.append(
            f"   corpus: scale {results.get('scale')}, {gen['n_documents']:,} documents "
            f"({gen['n_real_documents']} real incl. the gold set's, {gen['n_synthetic_documents']:,} resampled), "
            + (f"{ing['n_chunks']:,} md-words-v1 chunks" if ing.get("n_chunks") else "chunks: not ingested yet")
            + f" (DOF: {DOF_CHUNKS:,}); Markdown "
            f"{_gb(gen['apparent_bytes'])} ({_gb(gen['allocated_bytes'])} allocated on disk)"
        )
    commits: dict[str, list[str]] = {}
    for name, r in steps.items():
        c = r.get("commit_at_start") or (f"{r['commit']} (at its end)" if r.get("commit") else "not recorded")
        if r.get("reused") and not r.get("commit_at_start"):
            when = (r.get("detail") or {}).get("machine", {}).get("date_utc", "?")
            c = f"measured apart on {when}, reused (commit not recorded)"
        commits.setdefault(c, []).append(name)
    out.append("   code (checkout commit) per step: " + "; ".join(f"{c}: {', '.join(n)}" for c, n in commits.items()))
    out.append(
        "   peak RSS: ru_maxrss of the step's largest process / the largest sum over its process tree (0.5 s polls);"
    )
    out.append("   disk: everything under the benchmark root after the step (corpus + work directory + runs)")
    out.append("")
    out.append(f"   {'step':13s} {'wall':>9s} {'peak RSS':>9s} {'tree':>9s} {'disk':>8s}  what")
    out.append("   " + "-" * 96)
    worst_rss = worst_disk = 0.0
    for name, what in _WHAT.items():
        r = steps.get(name)
        if r is None:
            out.append(f"   {name:13s} {'not run':>9s}")
            continue
        d = r.get("disk", {})
        disk = sum(d.values())
        worst_rss = max(worst_rss, r.get("tree_rss_mb", 0.0))
        worst_disk = max(worst_disk, disk)
        flag = f"  FAILED: {r['error']}" if "error" in r else ""
        out.append(
            f"   {name:13s} {_dur(r['wall_s']):>9s} {r.get('peak_rss_mb', 0) / 1024:6.2f}GiB "
            f"{r.get('tree_rss_mb', 0) / 1024:6.2f}GiB {_gb(disk):>8s}  {what}{flag}"
        )
    out.append("")
    ham = steps.get("hamming", {}).get("detail")
    if ham:
        parts = []
        for sl in ("full", "slice"):
            eng = [
                k[len(sl) + 1 : -2] for k in ham if k.startswith(sl + "_") and k.endswith("_s") and k != f"{sl}_open_s"
            ]
            ms = ", ".join(f"{e} {1000 * ham[f'{sl}_{e}_s'] / ham['n_queries']:.0f} ms/q" for e in eng)
            same = all(ham.get(f"{sl}_{e}_same", False) for e in eng)
            parts.append(
                f"   Hamming, {sl} index ({ham.get(f'{sl}_chunks', 0):,} chunks; open {ham[f'{sl}_open_s']:.1f} s): "
                f"{ms}; identical rankings across engines: {same}"
            )
        out.extend(parts)
    warm = steps.get("bm25_run")
    verdict = []
    if warm and "error" not in warm:
        verdict.append(f"warm 42-question bm25 run {_dur(warm['wall_s'])} (target <= {TARGET_WARM_S:.0f} s)")
    verdict.append(f"largest process-tree RSS {worst_rss / 1024:.1f} GiB (target <= {TARGET_RSS_GB:.0f} GB)")
    verdict.append(f"disk {_gb(worst_disk)} (target <= {TARGET_DISK_GB:.0f} GB)")
    out.append("   " + "; ".join(verdict))
    missing = [s for s in _WHAT if s not in steps or "error" in steps[s]]
    if missing:
        out.append(f"   not measured (yet): {', '.join(missing)}")
    if ray:
        out.append("")
        out.extend(render_ray(ray))
    return "\n".join(out)


def render_ray(ray: dict) -> list[str]:
    """Lines for the Ray throughput measurement (``benchmarks/bench_dof_ray.py`` JSON)."""
    lines = [
        f"== Embedding on Ray (harness embed --engine ray), model {ray['model']}, slice of {ray['n_chunks']:,} chunks "
        f"of the real corpus; one-CPU Ray nodes on this machine; measured "
        f"{ray.get('machine', {}).get('date_utc', '(date not recorded)')}"
    ]
    for r in ray["runs"]:
        steady = r["n_to_embed"] / r["embed_seconds"] if r.get("embed_seconds") else float("nan")  # per actor
        lines.append(
            f"   {r['nodes']} node(s): Ray stage {r['ray_seconds']:.1f} s wall (actor start-up included), "
            f"{r['texts_per_second']:.1f} chunks/s = {r['texts_per_second'] / r['nodes']:.1f} per node; inside the "
            f"actors {steady:.1f} chunks/s per node; load average {r.get('load_avg', 0):.1f}"
        )
    per_node = ray["per_node_chunks_per_s"]
    lines.append(
        f"   EXTRAPOLATED (not measured): {DOF_CHUNKS:,} chunks at {per_node:.1f} chunks/s per one-CPU node, "
        "linear in nodes (no contention beyond this machine's 2 cores was measured):"
    )
    for n in (1, 2, 8, 32, 128):
        lines.append(f"     {n:4d} nodes: {DOF_CHUNKS / (per_node * n) / 3600:8.1f} h")
    return lines
