"""Measure a chunking change on the real corpus and write the ``chunking`` block of ``docs/measurements.md``.

bm25 and the default vector system, each under ``md-words-v1`` (the gold set's chunker) and ``md-legal-v1``
(``harness run --chunker``), on the gold set ``datasets/mx-leyes-dof-eval-v1``: document metrics, evidence recall at
each context budget (CR2 intervals), the paired differences md-legal-v1 - md-words-v1 (``harness compare``'s
default list across chunkers) and the gate's verdict on ``evidence_recall@1000w``; with ``--known-item``, the
known-item figures (bm25 hit@1, micro and macro, ICC, DEFF) per chunker (``harness known-item --chunker
md-legal-v1`` beside the default 100-word windows; the 50/400-word windows are ``--chunk-words 50,100,400``).

One command regenerates the block (indexes and embeddings are reused from the work directory)::

    nice -n 10 .venv/bin/python benchmarks/chunking.py [--known-item] [--workdir .harness]

Every figure in the block is read from the run records this script writes (under ``<workdir>/measurements/``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness.evaluation.compare import compare_runs  # noqa: E402
from harness.evaluation.gate import gate  # noqa: E402
from harness.evaluation.pipeline import RunOptions, run  # noqa: E402
from harness.evaluation.runs import load_run  # noqa: E402
from harness.metrics import METRIC_SETS  # noqa: E402

CORPUS = Path(os.environ.get("HARNESS_REAL_CORPUS", REPO.parent / "shared" / "corpus" / "mx-leyes-dof"))
GOLDSET = REPO / "datasets" / "mx-leyes-dof-eval-v1"
DOC = REPO / "docs" / "measurements.md"
BEGIN, END = "<!-- BEGIN chunking -->", "<!-- END chunking -->"
CHUNKERS = ("md-words-v1", "md-legal-v1")
SYSTEMS = ("bm25", "vector")
DOC_METRICS = ("mrr", "recall@10", "ndcg@10")


def _fmt(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def _iv(ms) -> str:
    iv = ms.interval("cr2") if ms is not None else None
    return "" if iv is None else f" [{iv[0]:.3f}, {iv[1]:.3f}]"


def _runs(workdir: Path) -> dict[str, Path]:
    runs_dir = workdir / "measurements" / dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
    out = {}
    for ch in CHUNKERS:
        t0 = time.perf_counter()
        out[ch] = run(
            GOLDSET,
            CORPUS,
            list(SYSTEMS),
            workdir=workdir,
            runs_dir=runs_dir,
            run_id=ch,
            options=RunOptions(chunker=ch),
            log=lambda m: print(m, file=sys.stderr),
        )
        print(f"{ch}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return out


def _run_table(paths: dict[str, Path]) -> list[str]:
    ids = [*DOC_METRICS, *METRIC_SETS["budget"]]
    lines = ["| system | chunker | chunks | " + " | ".join(ids) + " |", "|---|---|---:|" + "---:|" * len(ids)]
    for s in SYSTEMS:
        for ch, p in paths.items():
            rec = load_run(p)
            sl = rec.system_summary(s)["all"]
            cells = [f"{_fmt(sl.overall[m].mean)}{_iv(sl.metric(m))}" for m in ids]
            lines.append(f"| {s} | {ch} | {rec.manifest.corpus.n_chunks:,} | " + " | ".join(cells) + " |")
    return lines


def _paired(paths: dict[str, Path]) -> list[str]:
    a, b = (load_run(paths[c]) for c in CHUNKERS)
    lines = [
        "| system | metric | md-words-v1 | md-legal-v1 | difference | CR2 95 % interval | p (randomisation) |",
        "|---|---|---:|---:|---:|---|---:|",
    ]
    verdicts = []
    for s in SYSTEMS:
        rep = compare_runs(a, b, system_a=s, system_b=s)
        for c in rep.comparisons:
            iv = c.interval
            lines.append(
                f"| {s} | {c.metric} | {c.mean_a:.3f} | {c.mean_b:.3f} | {c.diff:+.3f} | "
                f"[{iv['lower']:+.3f}, {iv['upper']:+.3f}] | {c.p_randomization:.3f} |"
            )
        v = gate(a, b, metric="evidence_recall@1000w", margin=0.02, system_baseline=s, system_candidate=s)
        chk = v.checks[0]
        verdicts.append(
            f"- `{s}`: **{v.decision}** (exit {v.exit_code}) on `evidence_recall@1000w`, margin 0.02, "
            f"{v.n_questions} questions in {v.n_clusters} clusters; {chk.reason}"
        )
    return [*lines, "", "Gate md-legal-v1 (candidate) vs md-words-v1 (baseline):", "", *verdicts]


def _known_item(workdir: Path) -> list[str]:
    from harness.studies.known_item import run_known_item

    lines = [
        "| chunking | chunks | queries | documents | bm25 hit@1 micro | hit@1 macro (per document) | ICC | DEFF |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    out_root = Path(tempfile.mkdtemp(prefix="chunking-known-item-"))  # not inside the work directory: an input
    for label, kw in (
        ("md-words-v1 (100-word windows)", {"chunk_words": 100}),
        ("md-legal-v1", {"chunker": "md-legal-v1"}),
    ):
        out = out_root / re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")
        res = run_known_item(CORPUS, out, systems="bm25", workdir=workdir, overwrite=True, **kw)
        d = res.summary["systems"]["bm25"]
        dg = d["diagnostics"]
        lines.append(
            f"| {label} | {res.summary['counts']['chunks']:,} | {d['queries']:,} | {d['documents']} | "
            f"{_fmt(d['micro_hit1'])} | {_fmt(d['macro_hit1'])} | {_fmt(dg['icc'])} | {dg['deff']:.1f} |"
        )
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, default=REPO / ".harness")
    ap.add_argument("--known-item", action="store_true", help="also measure the known-item figures per chunker")
    args = ap.parse_args()
    t0 = time.perf_counter()
    paths = _runs(args.workdir)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO).stdout
    ev = {c: load_run(p).manifest.model_dump().get("evidence", {}) for c, p in paths.items()}
    block = [
        BEGIN,
        "## Chunking: md-words-v1 vs md-legal-v1 (issue 20)",
        "",
        f"Written by `benchmarks/chunking.py{' --known-item' if args.known_item else ''}` on "
        f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, commit `{commit.strip()}`, {platform.python_version()}, "
        f"{os.cpu_count()} CPUs (shared). Gold set `{GOLDSET.name}`, corpus `{CORPUS.name}`; systems `bm25` and "
        "`vector` (the default embedding model of this commit). Document metrics: means over all "
        f"{load_run(paths[CHUNKERS[0]]).manifest.goldset.n_questions} questions; budget metrics: over the "
        f"{ev[CHUNKERS[0]].get('n_questions_with_quotes')} with a located quote; CR2 95 % intervals in brackets.",
        "",
        "Evidence resolution (quotes located in the NFC source, chunks derived per chunker): "
        + "; ".join(
            f"{c}: {e.get('n_resolved')}/{e.get('n_quotes')} quotes located, {e.get('n_split')} split across chunks"
            for c, e in ev.items()
        )
        + ".",
        "",
        *_run_table(paths),
        "",
        "Paired differences md-legal-v1 - md-words-v1 (`harness compare` default list across chunkers: chunk-count "
        "metrics dropped, budget metrics added):",
        "",
        *_paired(paths),
    ]
    if args.known_item:
        block += ["", "Known-item study (chunk-as-query, first 20 words, bm25):", "", *_known_item(args.workdir)]
    block += ["", f"Wall time of the script: {time.perf_counter() - t0:.0f} s.", END]
    text = DOC.read_text("utf-8") if DOC.exists() else "# Measurements\n\nBlocks written by scripts in `benchmarks/`.\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + "\n".join(block) + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + "\n".join(block) + "\n"
    DOC.write_text(text, "utf-8")
    print("\n".join(block))


if __name__ == "__main__":
    main()
