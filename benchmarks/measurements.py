"""Write the measured blocks of ``docs/measurements.md``: every figure there comes from a command, none is typed.

A block is the text between ``<!-- BEGIN name -->`` and ``<!-- END name -->``. :data:`BLOCKS` says, for each name,
the command that produces it and how its output goes in:

- ``markdown``: the command's stdout is Markdown and goes in as it is (e.g. ``harness report --format markdown``);
- ``text``: stdout goes in a fenced ``text`` block, unedited (benchmark scripts print their machine line first);
- ``self``: the command writes its own block into the file (scripts that own a block, such as
  ``benchmarks/coverage_table.py``); this tool only runs it and checks the block changed or exists.

Each block starts with a provenance line: the command, the date (UTC) and the commit it was measured at. A block
whose command fails keeps its old text and the tool exits 1 naming it; the file is replaced atomically.

Usage (from the repository root, with the project venv)::

    .venv/bin/python benchmarks/measurements.py            # every block (some take minutes: see ``--list``)
    .venv/bin/python benchmarks/measurements.py baseline   # named blocks only
    .venv/bin/python benchmarks/measurements.py --list
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "measurements.md"
BASELINE = "runs/baselines/mx-leyes-dof-eval-v1-six-systems"
CORPUS = "../shared/corpus/mx-leyes-dof"


@dataclass(frozen=True)
class Block:
    """One measured block: ``argv`` run from the repository root; ``mode`` in {markdown, text, self}; ``cost`` a rough
    wall time on 2 cores, shown by ``--list``."""

    argv: tuple[str, ...]
    mode: str
    cost: str
    what: str


def _harness(*args: str) -> tuple[str, ...]:
    return (str(Path(sys.executable).parent / "harness"), *args)


BLOCKS: dict[str, Block] = {
    "baseline": Block(
        _harness("report", BASELINE, "--format", "markdown", "--out", "-"),
        "markdown",
        "5 s",
        "the committed baseline run record: six systems, intervals, paired differences against bm25",
    ),
    "coverage-design": Block(
        (
            sys.executable,
            "benchmarks/coverage_design.py",
            "--sizes",
            "50,100,400",
            "--systems",
            "bm25,tfidf,vector",
            "--reps",
            "4000",
            "--pps-reps",
            "2000",
        ),
        "self",
        "25 min with the known-item populations cached under runs/coverage/populations (hours without: the vector "
        "population embeds every chunk and query with the default model)",
        "the committed baseline's own design (its cluster sizes) simulated on known-item populations, documents "
        "drawn at random and by PPS, and the check of known-item --sample K --design pps; writes the design's entry "
        "of harness/stats/coverage_evidence.json",
    ),
    "coverage-independent": Block(
        (
            sys.executable,
            "benchmarks/coverage_independent.py",
            "--populations",
            "runs/coverage/populations/words-100",
            "runs/coverage/populations/words-400",
            "--cisi-run",
            "runs/coverage/cisi",
            "--reps",
            "4000",
        ),
        "self",
        "3 min once its inputs exist: the known-item populations of coverage-design (runs/coverage/populations) and a "
        "harness run of bm25,tfidf on CISI imported with goldset import --beir (runs/coverage/cisi)",
        "the independent design (TREC/BEIR/qrels imports) at K = 10, 20, 40: chunk-queries drawn uniformly from the "
        "corpus and CISI's 76 queries drawn without replacement; a section inside the coverage-design block; writes "
        "the independent entries of harness/stats/coverage_evidence.json",
    ),
    "coverage": Block(
        (sys.executable, "benchmarks/coverage_table.py", "--reps", "2000", "--B", "199"),
        "self",
        "20 min with the known-item populations cached under runs/coverage/populations (hours without)",
        "interval coverage over the known-item and synthetic populations; writes harness/stats/coverage_evidence.json",
    ),
    "chunking": Block(
        (sys.executable, "benchmarks/chunking.py", "--known-item"),
        "self",
        "10 min",
        "md-words-v1 against md-legal-v1: document and word-budget evidence metrics, known-item study per chunking",
    ),
    "vectors": Block(
        (sys.executable, "benchmarks/measure_vectors.py", "all"),
        "self",
        "40 min",
        "vector models, bits and float rescoring on the gold set; the rescoring depth; the six systems at the new "
        "defaults; two-stage against bm25 (benchmarks/measure_vectors.py writes it)",
    ),
    "install": Block(
        (sys.executable, "benchmarks/measure_install.py", "--extra", "vectors"),
        "self",
        "2 min (network-bound: PyPI)",
        "the README's main install on PyPI alone: wall time, venv size, whether torch came along",
    ),
    "known-item-gate": Block(
        (
            sys.executable,
            "benchmarks/known_item_gate_coverage.py",
            "--ki",
            "runs/known-item/gate",
            "--pairs",
            "bm25:tfidf,bm25:vector,bm25:rrf,bm25:bm25:k1=0.1,bm25:bm25:b=0.7",
            "--reps",
            "2000",
            "--write",
            "docs/measurements.md",
        ),
        "self",
        "1 min after `harness known-item --corpus ../shared/corpus/mx-leyes-dof --systems "
        "bm25,tfidf,vector,bm25:k1=0.1,bm25:b=0.7,rrf --out runs/known-item/gate` (rrf per query: 7 min cold)",
        "the known-item gate's interval chosen by measurement: coverage of CR2 and Hansen-Hurwitz on the paired "
        "known-item populations, as many documents drawn with replacement as the corpus holds",
    ),
    "own-collection": Block(
        (sys.executable, "benchmarks/own_collection.py"),
        "markdown",
        "2 min",
        "a user's own collection (CISI, English, BEIR layout) imported with --language en: harness bm25 at document "
        "level next to bm25s + pytrec_eval run side by side (nDCG@10, AP@1000, P@10, R@100), the difference and why, "
        "and the gate bm25 vs tfidf with its verdict",
    ),
    "dof-scale": Block(
        (
            sys.executable,
            "benchmarks/bench_dof.py",
            "--root",
            os.environ.get("HARNESS_DOF_ROOT", "/work/big/dofscale/full"),
        ),
        "text",
        "hours on 2 cores, about 40 GB of disk under --root (resumable: steps already measured are kept; "
        "`benchmarks/bench_dof.py --root ROOT --render` prints the block from what is measured so far)",
        "the whole pipeline at DOF scale (657,867 documents, 6.73 M chunks): time, peak RSS and disk per step; the "
        "real model's embedding throughput on 1 and 2 local Ray nodes, extrapolated",
    ),
}

_BEGIN = "<!-- BEGIN {name} -->"
_END = "<!-- END {name} -->"


def block_span(text: str, name: str) -> tuple[int, int] | None:
    """``(start, end)`` character offsets of the body of block ``name`` (between its markers) or None if absent.

    Raises ValueError if the block's markers are unbalanced (a BEGIN without its END, or two BEGINs)."""
    begin, end = _BEGIN.format(name=name), _END.format(name=name)
    n_begin, n_end = text.count(begin), text.count(end)
    if n_begin == 0 and n_end == 0:
        return None
    if n_begin != 1 or n_end != 1 or text.index(begin) > text.index(end):
        raise ValueError(f"{DOC.name}: block {name!r} has {n_begin} BEGIN and {n_end} END markers (need one each)")
    return text.index(begin) + len(begin), text.index(end)


def replace_block(text: str, name: str, body: str) -> str:
    """``text`` with block ``name``'s body replaced by ``body`` (appended as a new section if the block is absent)."""
    span = block_span(text, name)
    if span is None:
        return f"{text.rstrip()}\n\n{_BEGIN.format(name=name)}\n{body.strip()}\n{_END.format(name=name)}\n"
    start, end = span
    return f"{text[:start]}\n{body.strip()}\n{text[end:]}"


def _commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=REPO, capture_output=True, text=True)
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True, text=True
    )
    return out.stdout.strip() + ("+local changes" if dirty.stdout.strip() else "")


def _shown(argv: tuple[str, ...]) -> str:
    bindir = str(Path(sys.executable).parent)
    shown = [".venv/bin/python" if a == sys.executable else a.replace(bindir, ".venv/bin") for a in argv]
    return shlex.join(shown)


def measure(name: str, block: Block) -> str | None:
    """Run ``block``'s command; the new body (provenance line + output) or None for a ``self`` block.

    Raises RuntimeError naming the block if the command exits non-zero."""
    env = dict(os.environ, COLUMNS="100", NO_COLOR="1")
    proc = subprocess.run(block.argv, cwd=REPO, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
        raise RuntimeError(f"block {name!r}: `{_shown(block.argv)}` exited {proc.returncode}: {tail[0]}")
    if block.mode == "self":
        return None
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    head = f"_Written by `benchmarks/measurements.py {name}` on {when} at commit `{_commit()}`: `{_shown(block.argv)}`_"
    out = proc.stdout.rstrip()
    body = out if block.mode == "markdown" else f"```text\n{out}\n```"
    return f"{head}\n\n{body}"


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` by ``text`` through a temporary file in the same folder and a rename."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", help=f"blocks to write (default: all of {', '.join(BLOCKS)})")
    ap.add_argument("--list", action="store_true", help="list the blocks, their commands and rough cost")
    ap.add_argument("--doc", type=Path, default=DOC, help="the Markdown file holding the blocks")
    args = ap.parse_args(argv)
    if args.list:
        for name, b in BLOCKS.items():
            print(f"{name:<14} {b.cost:>7}  {b.what}\n{'':<23}{_shown(b.argv)}")
        return 0
    unknown = [n for n in args.names if n not in BLOCKS]
    if unknown:
        print(f"unknown block(s) {', '.join(unknown)} (known: {', '.join(BLOCKS)})", file=sys.stderr)
        return 2
    failed = 0
    for name in args.names or list(BLOCKS):
        block = BLOCKS[name]
        print(f"measuring {name} ({block.cost}) ...", file=sys.stderr)
        try:
            body = measure(name, block)
        except RuntimeError as exc:
            print(exc, file=sys.stderr)
            failed += 1
            continue
        if body is None:
            if block_span(args.doc.read_text(encoding="utf-8"), name) is None:
                print(f"block {name!r}: its command did not write the block into {args.doc}", file=sys.stderr)
                failed += 1
            continue
        text = args.doc.read_text(encoding="utf-8") if args.doc.exists() else "# Measurements\n"
        write_atomic(args.doc, replace_block(text, name, body))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
