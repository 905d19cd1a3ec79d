"""Embedding throughput on a local Ray cluster of 1 and 2 one-CPU nodes (``harness embed --engine ray``'s code), with
the real default model on a slice of the real corpus, and the wall time extrapolated to DOF's 6.73 M chunks.

For each node count N a fresh work directory gets the real corpus ingested (empty embedding cache), then a Ray
cluster of N nodes is started on this machine with ``ray.cluster_utils.Cluster`` (a head and N - 1 further raylets,
one CPU each, on 127.0.0.1), the driver connects to it, and :func:`harness.retrieve.ray_embed.ray_build` (what
``harness embed --engine ray --workers N`` runs; it uses the session the caller opened) embeds the chronological
slice ``--index-fraction`` with N actors of one CPU, merges the shards and builds the index. Throughput is
chunks embedded over the Ray stage's wall time (start-up of the actors included, cluster start excluded).

More nodes than 2 would measure contention for this machine's 2 cores, not Ray: the extrapolation to N nodes and
6.73 M chunks is linear in nodes from the measured per-node rate and is labelled as such. On a real cluster::

    ray start --head --num-cpus 1          # on the head machine; then on each worker machine:
    ray start --address HEAD:6379 --num-cpus 1
    RAY_ADDRESS=HEAD:6379 harness embed --corpus DOF --engine ray --workers N --model use

(``harness embed --engine ray`` starts a local instance unless a Ray session is already open in the process; a
driver script calling ``ray.init(address=...)`` then :func:`ray_build` uses the cluster, as this benchmark does.)

Reproduce: ``nice -n 19 .venv/bin/python benchmarks/bench_dof_ray.py --json OUT.json`` (a few minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DEFAULT_CORPUS, machine, write_json  # noqa: E402

from harness.corpus.ingest import ingest  # noqa: E402
from harness.corpus.store import Corpus  # noqa: E402


def measure(nodes: int, corpus_dir: Path, root: Path, model: str, fraction: float, shard_size: int) -> dict:
    """One build on a fresh ``nodes``-node local cluster; the build's statistics plus ``nodes`` and ``load_avg``."""
    from harness.retrieve.ray_embed import _require_ray, ray_build

    ray = _require_ray()  # sets Ray's loopback-only switch before Ray is imported (nodes on 127.0.0.1)
    from ray._private import ray_constants
    from ray.cluster_utils import Cluster

    ray_constants.ENABLE_RAY_CLUSTER = False

    work = root / f"nodes-{nodes}"
    shutil.rmtree(work, ignore_errors=True)
    db, _man, _ = ingest(corpus_dir, work, log=lambda _m: None)
    node_args = {"num_cpus": 1, "object_store_memory": 200 * 2**20, "node_ip_address": "127.0.0.1"}
    t0 = time.perf_counter()
    for attempt in range(3):  # on a loaded machine a raylet may miss Ray's start-up timeout: start afresh
        cluster = Cluster(initialize_head=False)
        try:
            cluster.add_node(**node_args, include_dashboard=False)
            for _ in range(nodes - 1):
                cluster.add_node(**node_args)
            break
        except Exception as exc:  # noqa: BLE001 - Ray raises a bare Exception on a start-up timeout
            cluster.shutdown()
            print(f"{nodes} node(s): cluster start failed ({exc}); attempt {attempt + 2} of 3", file=sys.stderr)
    else:
        raise SystemExit(f"{nodes} node(s): the local Ray cluster did not start in 3 attempts")
    ray.init(address=cluster.address, log_to_driver=False, logging_level="warning")
    t_start = time.perf_counter() - t0
    try:
        n_nodes = len([n for n in ray.nodes() if n.get("Alive")])
        with Corpus(db) as corpus:
            stats = ray_build(corpus, work, model=model, workers=nodes, index_fraction=fraction, shard_size=shard_size)
    finally:
        ray.shutdown()
        cluster.shutdown()
    stats.update(nodes=nodes, alive_nodes=n_nodes, cluster_start_s=round(t_start, 2), load_avg=os.getloadavg()[0])
    stats.pop("index", None)
    stats.pop("worker_pids", None)
    return stats


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--model", default="use")
    ap.add_argument("--index-fraction", type=float, default=0.03)
    ap.add_argument("--shard-size", type=int, default=256)
    ap.add_argument("--nodes", default="1,2")
    ap.add_argument("--root", type=Path, default=None, help="work directories (default: a temporary folder)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    root = args.root or Path(tempfile.mkdtemp(prefix="bench-dof-ray-"))
    res: dict = {"machine": machine(), "model": args.model, "index_fraction": args.index_fraction, "runs": []}
    try:
        for n in [int(x) for x in args.nodes.split(",")]:
            r = measure(n, args.corpus, root, args.model, args.index_fraction, args.shard_size)
            res["runs"].append(r)
            print(
                f"{n} node(s): {r['n_to_embed']} chunks, Ray stage {r['ray_seconds']} s, "
                f"{r['texts_per_second']} chunks/s; load {r['load_avg']:.1f}",
                flush=True,
            )
    finally:
        if args.root is None:
            shutil.rmtree(root, ignore_errors=True)
    res["n_chunks"] = res["runs"][0]["n_to_embed"]
    res["per_node_chunks_per_s"] = max(r["texts_per_second"] / r["nodes"] for r in res["runs"])
    write_json(args.json, res)
    print(json.dumps({k: v for k, v in res.items() if k != "machine"}, indent=1, default=str))
    return res


if __name__ == "__main__":
    main()
