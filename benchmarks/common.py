"""Helpers shared by the benchmark scripts: machine description, interleaved timing, peak RSS, query sets."""

from __future__ import annotations

import datetime as dt
import gc
import json
import os
import platform
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as `python benchmarks/x.py` from anywhere
    sys.path.insert(0, str(REPO))

DEFAULT_CORPUS = REPO.parent / "shared" / "corpus" / "mx-leyes-dof"
DEFAULT_GOLDSET = REPO / "datasets" / "mx-leyes-dof-eval-v1"
REFERENCE_GOLDSET = REPO.parent / "shared" / "reference" / "dof-rag-eval-v4" / "dof_queries_v4.jsonl"


def machine() -> dict:
    """CPU count, memory, model name, Python and date (UTC) for the header of every benchmark."""
    mem_gb = None
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem_gb = round(int(line.split()[1]) / 1024 / 1024, 1)
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "date_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "mem_gb": mem_gb,
        "cpu_model": model,
        "python": platform.python_version(),
        "load_avg_1m": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
    }


def header(title: str) -> dict:
    """Print and return the machine line."""
    m = machine()
    print(f"== {title}")
    print(
        f"   {m['date_utc']}  {m['cpus']} CPUs ({m['cpu_model']}), {m['mem_gb']} GB RAM, Python {m['python']}, "
        f"load average {m['load_avg_1m']} at start"
    )
    return m


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (MB; Linux ``ru_maxrss`` is in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def interleaved_best(fns: dict[str, Callable[[], object]], repeats: int, *, min_time: float = 0.2) -> dict[str, dict]:
    """Time every function ``repeats`` times, round-robin (so a burst of load hits all alike).

    A function faster than ``min_time`` seconds is called several times per measurement (the count is fixed
    from a first call) and its time per call is reported.

    Returns:
        ``{name: {"best": s, "median": s, "all": [s, ...], "inner": calls per measurement}}`` (seconds per call);
        ratios are taken between best times.
    """
    inner: dict[str, int] = {}
    for name, fn in fns.items():
        t0 = time.perf_counter()
        fn()
        inner[name] = max(1, int(np.ceil(min_time / max(time.perf_counter() - t0, 1e-6))))
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            gc.collect()
            t0 = time.perf_counter()
            for _i in range(inner[name]):
                fn()
            times[name].append((time.perf_counter() - t0) / inner[name])
    return {k: {"best": min(v), "median": float(np.median(v)), "all": v, "inner": inner[k]} for k, v in times.items()}


def load_questions(goldset: str | Path | None) -> tuple[str, list[str]]:
    """The gold set's questions (default: ``datasets/mx-leyes-dof-eval-v1``, else the eval v4 reference file)."""
    from harness.goldset.io import load_goldset

    path = Path(goldset) if goldset else (DEFAULT_GOLDSET if DEFAULT_GOLDSET.exists() else REFERENCE_GOLDSET)
    gs = load_goldset(path)
    return f"{gs.name} ({path.name}, {len(gs.records)} questions)", [r.question for r in gs.records]


def sampled_queries(texts: list[str], n: int, *, words: int = 8, seed: int = 0) -> list[str]:
    """``n`` pseudo-queries: a window of ``words`` consecutive words from a random chunk (seeded), like the
    known-item study's queries."""
    rng = np.random.default_rng(seed)
    out = []
    for i in rng.choice(len(texts), size=min(n, len(texts)), replace=False):
        w = texts[int(i)].split()
        a = int(rng.integers(0, max(1, len(w) - words)))
        out.append(" ".join(w[a : a + words]))
    return out


def write_json(path: str | Path | None, obj: dict) -> None:
    """Write the figures as JSON when ``--json`` was given."""
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(obj, indent=2, ensure_ascii=False, default=float), encoding="utf-8")
        print(f"figures written to {path}")
