"""``harness validate`` with one long quote in the real gold set: a normal set beside 20 KB, 100 KB and 20 MB quotes.

The first evidence quote of the first record is replaced by a long one of the given size: its own first two words,
one unbroken word of ``x`` for half the size, then the original quote's words repeated (the worst case for both
the terminal renderer, which wraps one long word in more than linear time, and the closest-match alignment). The
command line runs as a user types it (``harness validate DIR --corpus C --format F --out FILE``; Python start-up,
corpus re-chunking and rendering included), each size and format in turn, round-robin over ``--repeats`` rounds,
best time reported; a run past ``--timeout`` seconds is killed and reported as ``> timeout``.

Issue 18 item 6 measured on ``main`` before the caps: 20 KB 25 s, 100 KB over 300 s, 20 MB killed after 740 s
(``--json``: 11-14 s).

Reproduce: ``.venv/bin/python benchmarks/bench_validate_quotes.py`` (about 3 minutes on 2 cores);
``--harness PATH`` times another checkout's ``harness`` executable (e.g. ``main``'s, for the numbers before).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from common import DEFAULT_CORPUS, DEFAULT_GOLDSET, REPO, header, write_json

SIZES = {"normal": 0, "20 KB": 20_000, "100 KB": 100_000, "20 MB": 20_000_000}


def long_quote(original: str, size: int) -> str:
    """A quote of at least ``size`` characters built from ``original`` (see the module docstring)."""
    words = original.split()
    head = " ".join(words[:2])
    tail = []
    n = len(head) + 1 + size // 2
    while n < size:
        tail.append(original)
        n += len(original) + 1
    return f"{head} {'x' * (size // 2)} {' '.join(tail)}".rstrip()


def write_variant(src: Path, dst: Path, size: int) -> Path:
    """A copy of the dataset folder ``src`` whose first quote has ``size`` characters (0: unchanged)."""
    shutil.copytree(src, dst)
    if size:
        jsonl = next(p for p in dst.glob("*.jsonl"))
        lines = jsonl.read_text("utf-8").splitlines()
        rec = json.loads(lines[0])
        ev = rec["gold_documents"][0]["evidence"][0]
        ev["quote"] = long_quote(ev["quote"], size)
        lines[0] = json.dumps(rec, ensure_ascii=False)
        jsonl.write_text("\n".join(lines) + "\n", "utf-8")
    return dst


def time_validate(exe: str, dataset: Path, corpus: str, fmt: str, out: Path, timeout: float) -> tuple[float, int]:
    """Wall seconds and exit code of one ``harness validate`` (``inf`` and -1 when killed at ``timeout``)."""
    cmd = [exe, "validate", str(dataset), "--corpus", corpus, "--format", fmt, "--out", str(out)]
    t0 = time.perf_counter()
    try:
        rc = subprocess.run(cmd, capture_output=True, timeout=timeout, cwd=REPO).returncode
    except subprocess.TimeoutExpired:
        return float("inf"), -1
    return time.perf_counter() - t0, rc


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    ap.add_argument("--goldset", default=str(DEFAULT_GOLDSET))
    ap.add_argument("--harness", default=str(REPO / ".venv" / "bin" / "harness"))
    ap.add_argument("--formats", default="table,json")
    ap.add_argument("--sizes", default=",".join(SIZES), help="comma list of: " + ", ".join(SIZES))
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    mach = header("harness validate with one long quote (real corpus, real gold set)")
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    print(f"   executable {args.harness}; formats {', '.join(formats)}; best of {args.repeats}")
    times: dict[str, dict[str, list[float]]] = {s: {f: [] for f in formats} for s in sizes}
    out_bytes: dict[str, dict[str, int]] = {s: {} for s in sizes}
    codes: dict[str, dict[str, int]] = {s: {} for s in sizes}
    with tempfile.TemporaryDirectory(prefix="bench-validate-") as tmp:
        folders = {s: write_variant(Path(args.goldset), Path(tmp) / f"set-{i}", SIZES[s]) for i, s in enumerate(sizes)}
        for _ in range(args.repeats):
            for s in sizes:
                for f in formats:
                    out = Path(tmp) / f"out-{f}"
                    secs, rc = time_validate(args.harness, folders[s], args.corpus, f, out, args.timeout)
                    times[s][f].append(secs)
                    codes[s][f] = rc
                    out_bytes[s][f] = out.stat().st_size if rc >= 0 and out.exists() else -1
                    out.unlink(missing_ok=True)
    best = {s: {f: min(v) for f, v in per.items()} for s, per in times.items()}
    print(f"   {'quote':>8} " + " ".join(f"{f + ' s':>10} {f + ' out':>12} {'exit':>4}" for f in formats))
    for s in sizes:
        cells = []
        for f in formats:
            t = best[s][f]
            shown = f"> {args.timeout:.0f}" if t == float("inf") else f"{t:.1f}"
            cells.append(f"{shown:>10} {out_bytes[s][f]:>12,} {codes[s][f]:>4}")
        print(f"   {s:>8} " + " ".join(cells))
    if "normal" in best:
        for s in sizes:
            if s != "normal":
                ratio = ", ".join(f"{f} x{best[s][f] / best['normal'][f]:.2f}" for f in formats)
                print(f"   {s} / normal: {ratio}")
    res = {"machine": mach, "executable": args.harness, "best_s": best, "output_bytes": out_bytes, "exit": codes}
    write_json(args.json, res)
    return res


if __name__ == "__main__":
    main()
