"""The whole pipeline at DOF scale (657,867 documents, about 6.73 M chunks), measured step by step.

Each step runs as its own child process (the harness's command line where one exists), so its peak RSS is its own:
``ru_maxrss`` of the child from ``os.wait4`` (the largest single process of its tree) and the largest sum of RSS over
the child's process tree, polled every 0.5 s. A child whose tree passes ``--rss-cap-gb`` (default 16) is killed
and the step recorded as failed (the machine is shared). Disk: bytes under the step's outputs after it.

Steps (``STEPS``; ``--scale F`` scales the corpus, 1.0 = DOF):

==============  =========================================================================================
generate        ``benchmarks/dof_corpus.py``: the synthetic corpus with the real 507 documents inside it
ingest          ``harness ingest CORPUS``: scan + hash, chunk md-words-v1, the SQLite database
ingest_warm     the same again: what every later command pays to find the existing ingest
validate        ``harness validate ROOT/goldset --corpus CORPUS`` (the real gold set re-declared on this corpus)
bm25_build      ``harness run --systems bm25`` on the gold set, indexes built (the cold run)
bm25_run        the same again, indexes on disk (the warm 42-question run)
vector_build    ``harness embed --model hashproj-standin``: the whole corpus (stand-in vectors,
                ``benchmarks/dof_standin.py``: the cost measured is the harness's, not a model's)
vector_slice    ``harness embed --index-fraction 0.382``: the published partial state
hamming         42 questions' vectors searched with each engine (sqlite-vec, numpy, faiss when installed), whole
                index and the 38.2 % slice, at the run's depths (documents 50, chunks 200)
run_all         ``harness run --systems bm25,vector,vector:index_fraction=0.382,rrf,w0.5`` (fusion, metrics,
                intervals, the run record), vector backend numpy
report          ``harness report RUN --out report.html``
ray_embed       ``benchmarks/bench_dof_ray.py``: the real model (``use``) on Ray, 1 and 2 one-CPU local nodes, on a
                slice of the real corpus; chunks/s per node and the labelled extrapolation to 6.73 M chunks
==============  =========================================================================================

Resumable: results go to ``ROOT/results.json`` as each step ends; a rerun skips steps already done (``--redo a,b``
runs them again). ``--render`` prints the measured block from ``results.json`` alone (what
``benchmarks/measurements.py dof-scale`` puts in ``docs/measurements.md``).

Reproduce: ``nice -n 19 .venv/bin/python benchmarks/bench_dof.py --root /work/big/dofscale/full`` (hours on 2
cores; about 40 GB under ``--root``); ``--scale 0.15`` for about 10^6 chunks.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from common import machine  # noqa: E402

SLICE = 0.382
STANDIN = "hashproj-standin"
STEPS = (
    "generate",
    "ingest",
    "ingest_warm",
    "validate",
    "bm25_build",
    "bm25_run",
    "vector_build",
    "vector_slice",
    "hamming",
    "run_all",
    "report",
    "ray_embed",
)


# ---------------------------------------------------------------------------------------------------------------
# paths and commands
# ---------------------------------------------------------------------------------------------------------------


def paths(root: Path) -> dict[str, Path]:
    """Where each thing lives under ``root``."""
    return {
        "corpus": root / "corpus",
        "work": root / "work",
        "runs": root / "runs",
        "goldset": root / "goldset",
        "results": root / "results.json",
        "logs": root / "logs",
    }


def _cli(*args: str, standin: bool = False) -> list[str]:
    """The harness command line in a child Python (``--cli``), with the stand-in embedder registered if asked."""
    return [sys.executable, str(Path(__file__).resolve()), "--cli", "standin" if standin else "plain", "--", *args]


def step_command(step: str, root: Path, args) -> list[str]:
    """The child command of ``step``."""
    p = paths(root)
    corpus, work, runs = str(p["corpus"]), str(p["work"]), str(p["runs"])
    gold = str(p["goldset"])
    if step == "generate":
        return [sys.executable, str(HERE / "dof_corpus.py"), corpus, "--scale", str(args.scale), "--seed", "0"]
    if step in ("ingest", "ingest_warm"):
        return _cli("ingest", corpus, "--workdir", work)
    if step == "validate":
        return _cli("validate", gold, "--corpus", corpus)
    if step in ("bm25_build", "bm25_run"):
        return _cli(
            "run", "--corpus", corpus, "--goldset", gold, "--systems", "bm25", "--workdir", work,
            "--runs-dir", runs, "--run-id", step, "--overwrite",
        )  # fmt: skip
    if step == "vector_build":
        return _cli("embed", "--corpus", corpus, "--workdir", work, "--model", STANDIN, "--workers", "1", standin=True)
    if step == "vector_slice":
        return _cli(
            "embed", "--corpus", corpus, "--workdir", work, "--model", STANDIN, "--workers", "1",
            "--index-fraction", str(SLICE), standin=True,
        )  # fmt: skip
    if step == "hamming":
        return [sys.executable, str(Path(__file__).resolve()), "--child-hamming", str(root)]
    if step == "run_all":
        return _cli(
            "run", "--corpus", corpus, "--goldset", gold, "--workdir", work, "--runs-dir", runs,
            "--systems", f"bm25,vector,vector:index_fraction={SLICE},rrf,w0.5", "--model", STANDIN,
            "--vector-backend", "numpy", "--run-id", "all", "--overwrite", standin=True,
        )  # fmt: skip
    if step == "report":
        return _cli("report", str(p["runs"] / "all"), "--out", str(p["runs"] / "report.html"))
    if step == "ray_embed":
        return [
            sys.executable, str(HERE / "bench_dof_ray.py"), "--root", str(root / "ray"),
            "--json", str(root / "ray.json"), "--index-fraction", str(args.ray_fraction),
        ]  # fmt: skip
    raise SystemExit(f"unknown step {step}")


# ---------------------------------------------------------------------------------------------------------------
# child side
# ---------------------------------------------------------------------------------------------------------------


def child_cli(mode: str, argv: list[str]) -> None:
    """Run the harness command line in this process (the stand-in registered first when ``mode == 'standin'``)."""
    if mode == "standin":
        import dof_standin

        dof_standin.register()
    from harness.cli import main as harness_main

    sys.argv = ["harness", *argv]
    harness_main()


def child_hamming(root: Path) -> None:
    """Time the 42 questions' Hamming search per engine on the whole index and the slice; prints ``RESULT {...}``."""
    import dof_standin
    import numpy as np

    from harness.corpus.ingest import ingest
    from harness.corpus.store import Corpus
    from harness.goldset.io import load_goldset
    from harness.retrieve.vector import VectorIndex

    p = paths(root)
    questions = [r.question for r in load_goldset(p["goldset"]).records]
    emb = dof_standin.HashProjEmbedder()
    db, _man, _ = ingest(p["corpus"], p["work"], log=lambda _m: None)
    out: dict = {"n_queries": len(questions)}
    engines = ["sqlite-vec", "numpy"]
    try:
        import faiss  # noqa: F401

        engines.append("faiss")
    except ImportError:
        pass
    with Corpus(db, readonly=False) as corpus:
        for name, frac in (("full", None), ("slice", SLICE)):
            t0 = time.perf_counter()
            idx = VectorIndex.build(corpus, p["work"], emb, index_fraction=frac, workers=1)
            out[f"{name}_open_s"] = time.perf_counter() - t0
            out[f"{name}_chunks"] = int(idx.slice.n_chunks)
            q = idx.query_bits(questions)
            ref = None
            for backend in engines:
                t0 = time.perf_counter()
                res = idx.search_packed(q, doc_depth=50, chunk_depth=200, backend=backend)
                secs = time.perf_counter() - t0
                ids = [[c for c, _s in r.chunks] for r in res]
                ref = ids if ref is None else ref
                out[f"{name}_{backend}_s"] = secs
                out[f"{name}_{backend}_same"] = ids == ref
                print(f"{name} {backend}: {secs:.1f} s for {len(questions)} queries", file=sys.stderr, flush=True)
            del idx
            np.random.default_rng(0)
    print("RESULT " + json.dumps(out))


# ---------------------------------------------------------------------------------------------------------------
# parent side: one child per step, RSS watched
# ---------------------------------------------------------------------------------------------------------------


def _tree_rss_kb(pid: int) -> int:
    """Sum of VmRSS (KiB) over ``pid`` and its descendants (0 when gone)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children") as fh:
                    todo.extend(int(c) for c in fh.read().split())
        except (FileNotFoundError, ProcessLookupError, PermissionError, ValueError):
            continue
    return total


def _bytes(path: Path) -> int:
    """Allocated bytes of every file under ``path`` (0 when absent)."""
    if path.is_file():
        return path.stat().st_blocks * 512
    total = 0
    for dirpath, _d, files in os.walk(path):
        for f in files:
            try:
                total += os.stat(os.path.join(dirpath, f)).st_blocks * 512
            except FileNotFoundError:
                pass
    return total


def run_step(step: str, root: Path, args) -> dict:
    """Run one step's child; its figures (``wall_s``, ``peak_rss_mb``, ``tree_rss_mb``, ``rc``, disk)."""
    p = paths(root)
    p["logs"].mkdir(parents=True, exist_ok=True)
    cmd = step_command(step, root, args)
    cap_kb = int(args.rss_cap_gb * 1024 * 1024)
    log = p["logs"] / f"{step}.log"
    commit = _commit()
    t0 = time.perf_counter()
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True)
        peak_tree, killed = 0, False
        while True:
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            rss = _tree_rss_kb(proc.pid)
            peak_tree = max(peak_tree, rss)
            if rss > cap_kb and not killed:
                killed = True
                os.killpg(proc.pid, signal.SIGKILL)
            time.sleep(0.5)
    wall = time.perf_counter() - t0
    rc = os.waitstatus_to_exitcode(status)
    res = {
        "step": step,
        "command": " ".join(cmd[cmd.index("--") + 1 :] if "--" in cmd else cmd[1:]),
        "rc": rc,
        "wall_s": round(wall, 2),
        "peak_rss_mb": round(ru.ru_maxrss / 1024, 1),
        "tree_rss_mb": round(peak_tree / 1024, 1),
        "load_avg_1m": os.getloadavg()[0],
        "finished_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit_at_start": commit,
        "log": str(log),
    }
    if killed:
        res["error"] = f"killed: process tree RSS passed {args.rss_cap_gb} GB"
    text = log.read_text(errors="replace")
    results = [line for line in text.splitlines() if line.startswith("RESULT ")]
    if results:
        res["detail"] = json.loads(results[-1][len("RESULT ") :])
    ok_rc = {0, 1} if step == "validate" else {0}  # validate: 1 = invalid gold set, still a measured run
    if rc not in ok_rc and "error" not in res:
        res["error"] = f"exit {rc}: " + (text.strip().splitlines() or [""])[-1][:300]
    res["disk"] = {
        "corpus_bytes": _bytes(p["corpus"]),
        "work_bytes": _bytes(p["work"]),
        "runs_bytes": _bytes(p["runs"]),
    }
    if step == "generate" and (p["corpus"] / "generation.json").exists():
        res["detail"] = json.loads((p["corpus"] / "generation.json").read_text())
    if step in ("ingest", "ingest_warm"):
        res["detail"] = _manifest(p["work"])
    if step == "ray_embed" and (root / "ray.json").exists():
        res["detail"] = json.loads((root / "ray.json").read_text())
    return res


def _commit() -> str:
    """The checkout's commit (12 hex digits, ``+local changes`` when tracked files differ): the code a step ran."""
    head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=REPO, capture_output=True, text=True)
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True, text=True
    )
    return head.stdout.strip() + ("+local changes" if dirty.stdout.strip() else "")


def _manifest(work: Path) -> dict:
    dbs = sorted((work / "corpora").glob("*/corpus.db"))
    if not dbs:
        return {}
    import apsw

    conn = apsw.Connection(str(dbs[0]), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        n_docs = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
        n_chunks = conn.execute("SELECT max(rowid) FROM chunks").fetchone()[0]
    finally:
        conn.close()
    return {"n_documents": n_docs, "n_chunks": n_chunks, "db_bytes": dbs[0].stat().st_size}


def load_results(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {"steps": {}}


def save_results(path: Path, results: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(results, indent=1))
    os.replace(tmp, path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", type=Path, help="where the corpus, work directory, runs and results.json go")
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of DOF's size (1.0: 657,867 documents)")
    ap.add_argument("--steps", default=",".join(STEPS), help="steps to run, in order")
    ap.add_argument("--redo", default="", help="steps to run again even if done")
    ap.add_argument("--rss-cap-gb", type=float, default=16.0, help="kill a step whose process tree passes this")
    ap.add_argument("--ray-fraction", type=float, default=0.03, help="slice of the real corpus the Ray step embeds")
    ap.add_argument("--render", action="store_true", help="only print the block from ROOT/results.json (no step)")
    ap.add_argument("--cli", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--child-hamming", default=None, help=argparse.SUPPRESS)
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--cli"]:
        child_cli(argv[1], argv[3:])
        return 0
    args = ap.parse_args(argv)
    if args.child_hamming:
        child_hamming(Path(args.child_hamming))
        return 0
    if args.root is None:
        ap.error("--root is required")
    root = args.root.resolve()
    p = paths(root)
    if args.render:
        import dof_render

        results = load_results(p["results"])
        if not results["steps"]:
            print(f"{p['results']}: no measured step", file=sys.stderr)
            return 2
        print(dof_render.render(results))
        return 0
    root.mkdir(parents=True, exist_ok=True)
    results = load_results(p["results"])
    results.setdefault("machine", machine())
    results["scale"] = args.scale
    redo = {s for s in args.redo.split(",") if s}
    for step in [s for s in args.steps.split(",") if s]:
        done = results["steps"].get(step)
        if done and "error" not in done and step not in redo:
            continue
        if step == "generate" and (p["corpus"] / "generation.json").exists() and step not in redo:
            gen = json.loads((p["corpus"] / "generation.json").read_text())
            results["steps"][step] = {
                "step": step, "rc": 0, "reused": True, "detail": gen, **_time_file(root, "generate.time")
            }  # fmt: skip
            results["steps"][step].setdefault("wall_s", gen["seconds"])
            results["steps"][step]["disk"] = {"corpus_bytes": _bytes(p["corpus"]), "work_bytes": 0, "runs_bytes": 0}
            save_results(p["results"], results)
            continue
        if step == "ray_embed" and (root / "ray.json").exists() and step not in redo:  # measured apart, same command
            ray = json.loads((root / "ray.json").read_text())
            rec = {"step": step, "rc": 0, "reused": True, "detail": ray, **_time_file(root, "ray.time")}
            rec.setdefault("wall_s", sum(r["seconds"] for r in ray["runs"]))
            rec["disk"] = {"corpus_bytes": _bytes(p["corpus"]), "work_bytes": _bytes(p["work"]), "runs_bytes": 0}
            results["steps"][step] = rec
            save_results(p["results"], results)
            continue
        print(f"{time.strftime('%H:%M:%S')} {step} ...", file=sys.stderr, flush=True)
        res = run_step(step, root, args)
        results["steps"][step] = res
        save_results(p["results"], results)
        print(
            f"{time.strftime('%H:%M:%S')} {step}: rc {res['rc']}, {res['wall_s']:.1f} s, peak RSS "
            f"{res['peak_rss_mb']:.0f} MB (tree {res['tree_rss_mb']:.0f} MB) {res.get('error', '')}",
            file=sys.stderr,
            flush=True,
        )
        if "error" in res:
            print(f"stopping: {step} failed; log {res['log']}", file=sys.stderr, flush=True)
            return 1
    import dof_render

    print(dof_render.render(results))
    return 0


def _time_file(root: Path, name: str) -> dict:
    """Wall time and peak RSS of a step run apart under ``/usr/bin/time -v -o ROOT/NAME`` (the same command), if
    that file is there."""
    f = root / name
    if not f.exists():
        return {}
    out: dict = {}
    for line in f.read_text().splitlines():
        line = line.strip()
        if line.startswith("Maximum resident set size"):
            out["peak_rss_mb"] = round(int(line.rsplit(":", 1)[1]) / 1024, 1)
            out["tree_rss_mb"] = out["peak_rss_mb"]
        elif line.startswith("Elapsed (wall clock) time"):
            parts = [float(x) for x in line.rsplit(" ", 1)[1].split(":")]
            out["wall_s"] = round(sum(v * 60**i for i, v in enumerate(reversed(parts))), 2)
    return out


if __name__ == "__main__":
    raise SystemExit(main())
