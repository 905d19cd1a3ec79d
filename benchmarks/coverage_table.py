"""The coverage block of docs/measurements.md and the committed evidence file, from one command.

Steps (each measured, nothing typed in):

1. the known-item populations of the real corpus at chunk sizes ``--sizes`` for ``--systems`` (``harness
   known-item``; the vector system with ``--model``, default the harness's default embedder), into
   ``--populations/words-<n>``; a folder that already holds the same corpus, size, systems and model is reused;
2. the coverage suite (:func:`harness.studies.coverage.suite.run_suite`): every system's hit@1 and reciprocal rank,
   the paired differences bm25 - tfidf, and the synthetic population built like the published study's; SRS at
   ``--K``, the two-stage design and PPS; results cached per population in ``--out/populations`` (an interrupted run
   resumes);
3. the default-method rule over the results (:mod:`harness.studies.coverage.choice`), written to
   ``harness/stats/coverage_evidence.json`` and as the ``<!-- BEGIN coverage -->`` block of ``docs/measurements.md``.

Run from the repository root, e.g. ``nice -n 10 .venv/bin/python benchmarks/coverage_table.py`` (hours on 2 shared
cores: the known-item runs dominate; the block states the measured times). Re-running it with another vector model
is ``--model use`` (the populations are rebuilt for that model).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path

from common import DEFAULT_CORPUS, REPO, machine
from coverage_measurements import render_block, rewrite_block

from harness.errors import HarnessError
from harness.retrieve.embed import DEFAULT_MODEL, canonical_model
from harness.stats.evidence import EVIDENCE_PATH
from harness.stats.methods import DEFAULTS
from harness.studies.coverage.evidence import build_evidence, write_evidence
from harness.studies.coverage.suite import known_item_specs, run_suite
from harness.studies.known_item import run_known_item


def _recorded(folder: Path) -> dict | None:
    try:
        return json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _reusable(summary: dict | None, size: int, systems: list[str], model: str) -> bool:
    if summary is None:
        return False
    cfg = summary.get("config", {})
    if cfg.get("chunk_words") != size or list(cfg.get("systems", [])) != systems:
        return False
    if "vector" in systems:
        emb = summary.get("systems", {}).get("vector", {}).get("config", {}).get("embedder", {})
        return model in (emb.get("model"), emb.get("model_id"))  # the registry name ("use") or its model id
    return True


def systems_at(args, size: int, systems: list[str]) -> list[str]:
    """The systems of the ``size``-word population: ``systems`` less ``vector`` where ``--vector-sizes`` leaves the
    size out (an embedding that cannot be afforded is left out by name, never faked)."""
    only = getattr(args, "vector_sizes", None)
    return [s for s in systems if s != "vector" or only is None or size in only]


def vector_note(args, systems: list[str]) -> str:
    """``""``, or the sentence naming the chunk sizes whose vector population ``--vector-sizes`` leaves out."""
    only = getattr(args, "vector_sizes", None)
    left = [s for s in args.sizes if "vector" in systems and only is not None and s not in only]
    if not left:
        return ""
    return (
        f"Not measured: the vector populations at {'/'.join(map(str, left))}-word chunks (`--vector-sizes "
        f"{','.join(map(str, only))}`: embedding their chunks with the default model on the shared 2-core machine did "
        "not fit the session)."
    )


def build_populations(args, systems: list[str], model: str) -> tuple[dict[str, Path], float]:
    """Known-item folders ``{"w<n>": folder}`` and the known-item seconds they took (as recorded); the systems of
    each size are :func:`systems_at`."""
    folders: dict[str, Path] = {}
    seconds = 0.0
    all_systems = systems
    for size in args.sizes:
        systems = systems_at(args, size, all_systems)
        folder = args.populations / f"words-{size}"
        summary = _recorded(folder)
        if not _reusable(summary, size, systems, model):
            print(f"known-item: {size}-word chunks, systems {','.join(systems)}, model {model} -> {folder}", flush=True)
            res = run_known_item(
                args.corpus,
                folder,
                chunk_words=size,
                systems=systems,
                vector_model=model,
                workdir=args.workdir,
                overwrite=folder.exists(),
                workers=args.threads,
                progress=True,
            )
            summary = res.summary
        else:
            print(f"known-item: reusing {folder}", flush=True)
        seconds += float(summary["timing"]["total_seconds"])
        folders[f"w{size}"] = folder
    return folders, seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--workdir", type=Path, default=REPO / ".harness")
    ap.add_argument("--populations", type=Path, default=REPO / "runs" / "coverage" / "populations")
    ap.add_argument("--out", type=Path, default=REPO / "runs" / "coverage" / "suite")
    ap.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[100, 400, 50])
    ap.add_argument("--systems", default="bm25,tfidf,vector")
    ap.add_argument("--model", default=DEFAULT_MODEL, help="embedding model of the vector system")
    ap.add_argument(
        "--vector-sizes",
        type=lambda s: [int(x) for x in s.split(",")],
        default=None,
        help="chunk sizes whose populations include the vector system (default: every size)",
    )
    ap.add_argument("--K", type=lambda s: [int(x) for x in s.split(",")], default=[5, 10, 20, 40, 80])
    ap.add_argument("--reps", type=int, default=5000)
    ap.add_argument("--B", type=int, default=999)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--measurements", type=Path, default=REPO / "docs" / "measurements.md")
    ap.add_argument("--evidence", type=Path, default=EVIDENCE_PATH)
    args = ap.parse_args(argv)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    model = canonical_model(args.model)
    print(json.dumps(machine()), flush=True)
    t0 = time.perf_counter()
    try:
        folders, ki_seconds = build_populations(args, systems, model)
        pairs = (("bm25", "tfidf"),) if {"bm25", "tfidf"} <= set(systems) else ()
        specs = [
            *(
                spec
                for size, (name, folder) in zip(args.sizes, folders.items(), strict=True)
                for spec in known_item_specs(
                    {name: folder}, systems=systems_at(args, size, systems), paired=pairs, synthetic=False
                )  # fmt: skip
            ),
            *known_item_specs({}, systems=(), paired=()),
        ]
        suite = run_suite(
            specs,
            reps=args.reps,
            ks=args.K,
            b=args.B,
            seed=args.seed,
            threads=args.threads,
            out_dir=args.out,
            cache_dir=args.out / "populations",
            on_population=lambda i, n, label: print(f"coverage {i + 1}/{n}: {label}", flush=True),
        )
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    command = " ".join(["python benchmarks/coverage_table.py", *(sys.argv[1:] if argv is None else argv)])
    corpus = args.corpus.name
    vector = f"{model} vector" if "vector" in systems else ""
    desc = f"{corpus} known-item populations ({', '.join(s for s in systems if s != 'vector')}"
    desc += f", {vector}" if vector else ""
    desc += f"; {'/'.join(str(s) for s in sorted(args.sizes))}-word chunks"
    only = args.vector_sizes
    if vector and only is not None and set(args.sizes) - set(only):
        desc += f", vector at {'/'.join(str(s) for s in sorted(set(only) & set(args.sizes)))} only"
    desc += ") and a synthetic one"
    ev = build_evidence(suite, description=desc, corpus=corpus, generated_by=command.strip())
    write_evidence(ev, args.evidence)
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    prov = f"on {when} at commit {(ev.git_commit or 'unknown')[:12]}"
    block = render_block(
        suite,
        command=command.strip(),
        extra_seconds={"known-item populations": ki_seconds},
        provenance=prov,
        note=vector_note(args, systems),
    )
    rewrite_block(args.measurements, block)
    from rich.console import Console

    from harness.studies.coverage.choice import choice_table

    Console(width=160).print(choice_table(suite.choice))
    print(f"wrote {args.evidence} and the coverage block of {args.measurements}; wall time "
          f"{time.perf_counter() - t0:.0f} s")  # fmt: skip
    differ = {k: (DEFAULTS[k], c.chosen) for k, c in suite.choice.items() if DEFAULTS[k] != c.chosen}
    if differ:
        print(f"DEFAULTS in harness/stats/methods.py differ from the measured choice (now, chosen): {differ}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
