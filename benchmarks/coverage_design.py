"""Coverage for the gold set's own design: the design entries of the evidence file and the ``coverage-design`` block
of docs/measurements.md, from one command (issue 29).

Steps (each measured, nothing typed in):

1. the known-item populations (``harness known-item`` at ``--sizes`` for ``--systems``, the vector system with
   ``--model``, default the harness's default embedder), into ``--populations/words-<n>``, reused when a folder
   already holds the same corpus, size, systems and model (as ``benchmarks/coverage_table.py`` does);
2. ``harness coverage --run RUN`` for the run's design with its documents drawn at random (``srs``) and drawn by PPS
   (``pps``, what ``harness goldset plan`` gives), R = ``--reps`` per population
   (:func:`harness.studies.coverage.goldset_run.run_design_coverage`);
3. the check of ``harness known-item --sample K --design pps`` (K whole documents drawn with probability proportional
   to their queries, with replacement; Hansen-Hurwitz logit interval of a system's hit@1 and reciprocal rank,
   identity-scale Hansen-Hurwitz for a paired difference; target the chunk-weighted mean) on every population at
   ``--pps-ks``, R = ``--pps-reps`` (:func:`harness.studies.coverage.study.study_design`, design ``pps``);
4. both design entries written to ``harness/stats/coverage_evidence.json`` (renderers print them beside a run of that
   design) and the ``<!-- BEGIN coverage-design -->`` block of docs/measurements.md, with every population's
   coverage of the reference and of the default interval, and the PPS sample check.

Run from the repository root, e.g. ``nice -n 19 .venv/bin/python benchmarks/coverage_design.py --sizes 50,100,400
--systems bm25,tfidf,vector`` (the known-item runs dominate: the 50-word vector population embeds 350,000 texts;
the block states every time measured).
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
import time
from pathlib import Path

from common import DEFAULT_CORPUS, REPO, machine
from coverage_table import build_populations, vector_note

from harness.errors import HarnessError, HarnessInputError
from harness.evaluation.runs import load_run
from harness.io import atomic_write_text
from harness.retrieve.embed import DEFAULT_MODEL, canonical_model
from harness.stats.evidence import EVIDENCE_PATH, read_evidence
from harness.stats.methods import INTERVALS
from harness.studies.coverage.evidence import _git_commit
from harness.studies.coverage.goldset import THRESHOLD, WIDTH_LIMIT
from harness.studies.coverage.goldset_run import (
    design_entry,
    folder_populations,
    run_design_coverage,
    write_design_evidence,
)
from harness.studies.coverage.study import study_design

BEGIN, END = "<!-- BEGIN coverage-design -->", "<!-- END coverage-design -->"
BASELINE = REPO / "runs" / "baselines" / "mx-leyes-dof-eval-v1-six-systems"
CLASS_NAMES = {"binary": "binary (hit@k, all_hop@k)", "unit": "unit (MRR, recall, evidence recall)",
               "continuous": "continuous", "paired": "paired differences (compare, gate)"}  # fmt: skip


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def candidate_cells(choice: dict):
    """``(class, method cell, coverage cell, where min, width cell)`` of every candidate method of a rule's
    ``choice`` (``{class: {"methods": ...}}``), the default in bold: the rows of the coverage tables."""
    for cls, c in choice.items():
        for name, v in c["methods"].items():
            if not v["candidate"]:
                continue
            label = f"**`{name}`** (default)" if v["default"] else f"`{name}`"
            w = "-" if v["max_width_ratio"] is None else f"{v['max_width_ratio']:.2f}"
            cov = f"{_pct(v['min'])}–{_pct(v['max'])} (± {100 * v['mc_margin']:.1f})"
            yield cls, f"{label} {INTERVALS[name].label}", cov, v["where_min"], w


def _table(res) -> list[str]:
    ref = "CR2" if res.design.sampling == "srs" else "HH t"
    out = [f"| outcome | method | a run reports it | coverage min–max (± MC at min) | where min | max width / {ref} |",
           "| --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for cls, method, cov, where, w in candidate_cells(res.choice):
        out.append(f"| {CLASS_NAMES[cls]} | {method} | yes | {cov} | {where} | {w} |")
    return out


def _cell(row: dict | None) -> str:
    if row is None:
        return "-"
    return f"{100 * row['coverage']:.1f} ± {100 * row['mc_margin']:.1f}"


def _class_of(p) -> str:
    return "paired" if "paired" in p.classes else p.classes[0]


def _per_population(srs, pps) -> list[str]:
    """One row per population: the reference's and the default's coverage under both samplings."""
    by_label = {p.label: p for p in pps.populations}
    out = [
        "| population | θ doc-level | CR2 | default (random documents) | width / CR2 | θ chunk-weighted | HH t | "
        "default (PPS) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for p in srs.populations:
        q = by_label.get(p.label)
        d = srs.choice[_class_of(p)]["default"]
        dq = None if q is None else pps.choice[_class_of(q)]["default"]
        row, w = p.rows.get(d), p.rows.get(d, {}).get("width_ratio")
        out.append(
            f"| {p.label} | {p.target:.4f} | {_cell(p.rows.get('cr2'))} | `{d}` {_cell(row)} | "
            f"{'-' if w is None else f'{w:.2f}'} | {'-' if q is None else f'{q.target:.4f}'} | "
            f"{_cell(None if q is None else q.rows.get('hansen_hurwitz'))} | "
            f"{'-' if q is None else f'`{dq}` ' + _cell(q.rows.get(dq))} |"
        )
    return out


def _holds(res) -> str:
    """Where the default of each population's class covers less than the threshold (or that it holds everywhere)."""
    low = []
    for p in res.populations:
        d = res.choice[_class_of(p)]["default"]
        if p.rows[d]["coverage"] < THRESHOLD:
            low.append(f"{p.label} ({d} {_pct(p.rows[d]['coverage'])})")
    worst = min(res.populations, key=lambda p: p.rows[res.choice[_class_of(p)]["default"]]["coverage"])
    wd = res.choice[_class_of(worst)]["default"]
    if not low:
        return (
            f"The default interval covers >= {round(100 * THRESHOLD)} % on every one of the {len(res.populations)} "
            f"populations (lowest {_pct(worst.rows[wd]['coverage'])}, `{wd}` on {worst.label})."
        )
    return (
        f"**The default interval covers less than {round(100 * THRESHOLD)} % on {len(low)} of "
        f"{len(res.populations)} populations**: {', '.join(low)}; the output of such a run still prints the measured "
        "range (its lowest figure below the target), not a promise."
    )


PPS_METHOD = {False: "hansen_hurwitz_logit", True: "hansen_hurwitz"}


def pps_sample_check(pops, ks, reps: int, seed: int, threads: int) -> dict:
    """``{label: {"method", "paired", "k": {K: row}}}``: coverage of the interval ``harness known-item --sample K
    --design pps`` reports (module docstring, step 3), K whole documents per sample drawn by PPS with replacement."""
    out = {}
    for label, pop in pops:
        method = PPS_METHOD[bool(pop.paired)]
        rows = {}
        for k in ks:
            res = study_design(pop, "pps", k=k, reps=reps, b=39, seed=seed, threads=threads)
            rows[k] = res.rows[method]
        out[label] = {"method": method, "paired": bool(pop.paired), "k": rows}
    return out


def _pps_sample_lines(check: dict, ks, reps: int) -> list[str]:
    head = " | ".join(f"K = {k}" for k in ks)
    out = [f"| population | interval | {head} | width at K = {ks[len(ks) // 2]} |",
           "| --- | --- | " + " | ".join("---" for _ in ks) + " | --- |"]  # fmt: skip
    for label, c in check.items():
        mid = c["k"][ks[len(ks) // 2]]["mean_width"]
        out.append(f"| {label} | `{c['method']}` | " + " | ".join(_cell(c["k"][k]) for k in ks) + f" | {mid:.4f} |")
    single = {lab: c for lab, c in check.items() if not c["paired"]}
    summary = []
    for k in ks:
        if not single:
            break
        lab = min(single, key=lambda x: single[x]["k"][k]["coverage"])
        summary.append(f"K = {k}: lowest {_pct(single[lab]['k'][k]['coverage'])} ({lab})")
    paired = {lab: c for lab, c in check.items() if c["paired"]}
    ptxt = ""
    if paired:
        vals = [c["k"][k]["coverage"] for c in paired.values() for k in ks]
        ptxt = f" Paired differences (identity scale): {_pct(min(vals))}–{_pct(max(vals))} over every K."
    out += ["", f"Single systems (hit@1 and reciprocal rank, logit scale), R = {reps} per cell: " + "; ".join(summary)
            + "." + ptxt]  # fmt: skip
    return out


def render(results: dict, args, seconds: dict, check: dict | None = None) -> str:
    """The block (module docstring)."""
    srs = results["srs"]
    design = srs.design
    ev = read_evidence(EVIDENCE_PATH)
    cr2 = ev.methods["cr2"]["binary"]
    hh = ev.methods.get("hansen_hurwitz_logit", {}).get("binary")
    cmd = " ".join(["python benchmarks/coverage_design.py", *sys.argv[1:]])
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    pops = ", ".join(p.label for p in srs.populations)
    commit, cpus = (_git_commit() or "?")[:12], machine()["cpus"]
    lines = [
        BEGIN,
        "## Interval coverage for a gold set's own design (generated; do not edit)",
        "",
        f"Generated by `{cmd}` on {stamp} at commit {commit} ({cpus} shared CPU cores): the design of "
        f"`{design.run}` ({design.describe().split(', documents')[0]}) simulated by `harness coverage --run` on "
        f"{len(srs.populations)} known-item populations ({pops}), R = {args.reps} samples per "
        f"population, B = {args.bootstrap_reps}, seed {args.seed}, level 0.95; ± is 1.96 Monte Carlo SE at the "
        f"minimum. Rule: at this K, the candidate within {WIDTH_LIMIT}x the reference's width covering >= "
        f"{round(100 * THRESHOLD)} % on every population with the highest minimum. Times: "
        + ", ".join(f"{k} {v:.0f} s" for k, v in seconds.items())
        + ". Every run of this design prints these figures beside its intervals (`harness/stats/coverage_evidence.json`"
        ", `designs`); another design prints `not measured for this design: run harness coverage --run RUN`.",
        "",
        "### Documents drawn at random (any gold set not planned by PPS)",
        "",
        "Estimand: the mean over the gold set's documents, each weighted by its questions (in expectation the "
        "corpus's document-level mean); **not** the corpus's chunk-weighted mean. Each question is one chunk-query of "
        "its document, drawn at random.",
        "",
        *_table(srs),
        "",
        "### Documents drawn by PPS (`harness goldset plan --design pps`)",
        "",
        "Estimand: the corpus's chunk-weighted mean (Hansen–Hurwitz over the draws), the same cluster sizes.",
        "",
        *_table(results["pps"]),
        "",
        "### Every population: the reference and the default",
        "",
        "Coverage in % (± 1.96 MC SE) of the reference (CR2; Hansen–Hurwitz t under PPS) and of the default the rule "
        "picked for the population's outcome class; θ is the target value of the population.",
        "",
        *_per_population(srs, results["pps"]),
        "",
        "Documents drawn at random: " + _holds(srs),
        "",
        "Documents drawn by PPS: " + _holds(results["pps"]),
        "",
        *(
            []
            if check is None
            else [
                "### `harness known-item --sample K --design pps`: K whole documents drawn by PPS",
                "",
                "Estimand: the corpus's chunk-weighted mean; the interval the command prints (Hansen–Hurwitz, logit "
                "scale for hit@1 and reciprocal rank, identity scale for a paired difference); coverage in % "
                "(± 1.96 MC SE).",
                "",
                *_pps_sample_lines(check, args.pps_ks, args.pps_reps),
                "",
            ]
        ),
        "### SRS of K whole documents: no interval holds",
        "",
        f"Samples of K whole documents drawn at random (the block below) have no interval a run can compute that "
        f"holds: CR2 covers {_pct(cr2.min)}–{_pct(cr2.max)} of binary outcomes at K = {ev.k_min}–{ev.k_max} (lowest "
        f"at {cr2.where_min}), and no alternative reaches the target. Known-item samples drawn that way print "
        '"coverage not guaranteed". Sample documents by PPS instead (`harness known-item --sample K --design pps`):'
        + (
            ""
            if hh is None
            else f" Hansen–Hurwitz logit covers {_pct(hh.min)}–{_pct(hh.max)} there (lowest at {hh.where_min})."
        )  # fmt: skip
        + (
            ""
            if "vector" in args.systems
            else f" This run's populations hold no vector system (`--systems {args.systems}`): vector populations "
            f"with the default model `{args.model}` are not measured in this block; the block below still uses the "
            "embedder named in its populations."
        )
        + (f" {vector_note(args, args.systems.split(','))}" if vector_note(args, args.systems.split(",")) else ""),
        END,
    ]
    return "\n".join(lines) + "\n"


def rewrite(path: Path, block: str) -> None:
    """Replace (or insert before the coverage block) the coverage-design block of ``path``."""
    text = path.read_text(encoding="utf-8")
    found = re.findall(re.escape(BEGIN) + r".*?" + re.escape(END) + r"\n?", text, flags=re.S)
    if len(found) > 1:
        raise HarnessInputError(f"{path}: the coverage-design block is repeated; fix it by hand")
    if found:
        new = text.replace(found[0], block)
    elif "<!-- BEGIN coverage -->" in text:
        new = text.replace("<!-- BEGIN coverage -->", block + "\n<!-- BEGIN coverage -->", 1)
    else:
        new = text.rstrip("\n") + "\n\n" + block
    atomic_write_text(path, new)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--run", type=Path, default=BASELINE.relative_to(REPO), help="the run whose design is simulated")
    ap.add_argument("--populations", type=Path, default=REPO / "runs" / "coverage" / "populations")
    ap.add_argument("--sizes", default="100,400")
    ap.add_argument("--systems", default="bm25,tfidf")
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument(
        "--vector-sizes",
        type=lambda s: [int(x) for x in s.split(",")],
        default=None,
        help="chunk sizes whose populations include the vector system (default: every size)",
    )
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=4000)
    ap.add_argument("--bootstrap-reps", type=int, default=199)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pps-ks", default="10,20,40", help="K of the known-item --sample PPS check (empty: skip it)")
    ap.add_argument("--pps-reps", type=int, default=2000)
    ap.add_argument("--docs", type=Path, default=REPO / "docs" / "measurements.md")
    ap.add_argument("--evidence", type=Path, default=EVIDENCE_PATH)
    args = ap.parse_args()
    args.sizes = [int(x) for x in args.sizes.split(",")]
    args.pps_ks = [int(x) for x in args.pps_ks.split(",") if x.strip()]
    systems = [x.strip() for x in args.systems.split(",") if x.strip()]
    model = canonical_model(args.model)
    try:
        folders, ki_seconds = build_populations(args, systems, model)
        seconds = {"known-item populations (as recorded)": ki_seconds}
        sizes = "/".join(str(x) for x in sorted(args.sizes))
        desc = f"mx-leyes-dof known-item populations ({', '.join(systems)}; {sizes}-word chunks"
        if "vector" in systems and args.vector_sizes is not None and set(args.sizes) - set(args.vector_sizes):
            desc += f"; vector at {'/'.join(str(s) for s in sorted(set(args.vector_sizes) & set(args.sizes)))} only"
        desc += ")"
        results = {}
        pops = [lp for folder in folders.values() for lp in folder_populations(folder)]
        for sampling in ("srs", "pps"):
            t0 = time.perf_counter()
            res = run_design_coverage(load_run(args.run), pops, reps=args.reps, b=args.bootstrap_reps,
                                      seed=args.seed, sampling=sampling)  # fmt: skip
            seconds[f"coverage {sampling}"] = time.perf_counter() - t0
            cmd = f"python benchmarks/coverage_design.py {' '.join(sys.argv[1:])}"
            write_design_evidence(design_entry(res, description=desc, generated_by=cmd), args.evidence)
            results[sampling] = res
            print(f"{sampling}: {seconds[f'coverage {sampling}']:.0f} s", flush=True)
        check = None
        if args.pps_ks:
            t0 = time.perf_counter()
            check = pps_sample_check(pops, args.pps_ks, args.pps_reps, args.seed, args.threads)
            seconds["known-item --sample pps check"] = time.perf_counter() - t0
            print(f"pps sample check: {seconds['known-item --sample pps check']:.0f} s", flush=True)
        rewrite(args.docs, render(results, args, seconds, check))
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.evidence} and {args.docs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
