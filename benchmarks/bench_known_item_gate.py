"""Wall time of the known-item guard (``harness known-item`` for the baseline and a candidate, then ``harness gate
--known-item``), cold and warm, for the candidates bm25 (near-identical, ``bm25:b=0.7``), vector, rrf and a ``py:``
retriever (``benchmarks/ki_plugins.py:DropBest10``).

* cold: the per-system outcome cache is empty (a temporary folder; the work directory's embedding cache and BM25
  indexes are used as they are, so "cold" is what CI pays on a runner whose work-directory cache was restored);
* warm: the same call again, every system's outcomes read from the cache (what an unchanged baseline costs).

Each case runs in its own process (``/usr/bin/time``-free: wall clock around ``subprocess.run``), one after the other;
``--cases`` picks some. The machine is shared: the load average at the start of each case is printed beside it.

Run from the repository root::

    nice -n 10 .venv/bin/python benchmarks/bench_known_item_gate.py --workdir /work/hw --cases bm25,py
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import DEFAULT_CORPUS, REPO

CASES = {
    "bm25": "bm25:b=0.7",
    "vector": "vector",
    "rrf": "rrf",
    "py": "drop=py:benchmarks/ki_plugins.py:DropBest10",
}


def _guard(corpus: Path, workdir: Path, cache: Path, out: Path, candidate: str, timeout: int) -> dict:
    """One guard: known-item for bm25 + candidate (outcome cache in ``cache``), then the gate; wall seconds."""
    name = candidate.split("=", 1)[0] if "=py:" in candidate else candidate
    env = {**os.environ, "HARNESS_KI_CACHE": str(cache)}
    harness = str(REPO / ".venv" / "bin" / "harness")
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    ki = subprocess.run(
        [harness, "known-item", "--corpus", str(corpus), "--out", str(out), "--overwrite", "--systems",
         f"bm25,{candidate}", "--workdir", str(workdir), "--workers", "2", "--format", "json"],
        capture_output=True, text=True, env=env, timeout=timeout, cwd=REPO,
    )  # fmt: skip
    t_ki = time.perf_counter() - t0
    if ki.returncode != 0:
        return {"candidate": candidate, "error": ki.stderr.strip().splitlines()[-1:], "load": load}
    t1 = time.perf_counter()
    gate = subprocess.run(
        [harness, "gate", "--known-item", str(out), "--baseline-system", "bm25", "--candidate-system", name,
         "--known-item-margin", "0.01", "--format", "json"],
        capture_output=True, text=True, env=env, timeout=timeout, cwd=REPO,
    )  # fmt: skip
    t_gate = time.perf_counter() - t1
    verdict = json.loads(gate.stdout) if gate.stdout.strip().startswith("{") else {}
    data = verdict.get("data", verdict)
    return {
        "candidate": candidate,
        "known_item_s": round(t_ki, 1),
        "gate_s": round(t_gate, 1),
        "total_s": round(t_ki + t_gate, 1),
        "gate_exit": gate.returncode,
        "decision": data.get("decision"),
        "load": round(load, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--workdir", type=Path, default=REPO / ".harness")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per harness call")
    args = ap.parse_args(argv)
    rows = []
    for case in args.cases.split(","):
        cache = Path(tempfile.mkdtemp(prefix="ki-cache-"))
        out = Path(tempfile.mkdtemp(prefix="ki-out-")) / "ki"
        try:
            for phase in ("cold", "warm"):
                row = {"case": case, "phase": phase, **_guard(args.corpus, args.workdir, cache, out, CASES[case],
                                                               args.timeout)}  # fmt: skip
                print(json.dumps(row), flush=True)
                rows.append(row)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
            shutil.rmtree(out.parent, ignore_errors=True)
    print(json.dumps({"rows": rows, "cpus": os.cpu_count()}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
