"""The coverage study over many populations (harness.studies.coverage.suite), its reciprocal-rank and paired
populations, the default-method rule (choice), the evidence file and the generated measurements block."""

from __future__ import annotations

import gzip
import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import HarnessInputError
from harness.stats.evidence import read_evidence
from harness.stats.methods import DEFAULTS, INTERVALS, coverage_evidence
from harness.studies.coverage import load_population
from harness.studies.coverage.choice import WIDTH_LIMIT, choose_class
from harness.studies.coverage.evidence import build_evidence, write_evidence
from harness.studies.coverage.results import CoverageResult, DesignResult
from harness.studies.coverage.suite import PopulationSpec, load_suite, population_specs, run_suite


def _benchmark_module(name: str):
    """A module of ``benchmarks/`` (scripts, not a package), loaded from its file."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses resolve their module through sys.modules
    spec.loader.exec_module(mod)
    return mod


_measurements = _benchmark_module("coverage_measurements")
BEGIN, END, render_block, rewrite_block = (
    _measurements.BEGIN,
    _measurements.END,
    _measurements.render_block,
    _measurements.rewrite_block,
)

TYPES = ("ley", "acuerdo", "decreto", "norma")


def known_item_folder(folder: Path, *, docs: int = 60, seed: int = 5) -> Path:
    """A small known-item output folder (bm25 and tfidf; per_document.jsonl and outcomes.jsonl.gz with ranks)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    outcomes, per_doc = [], []
    for system, shift in (("bm25", 0.15), ("tfidf", 0.0)):
        for d in range(docs):
            n = int(rng.integers(2, 30))
            p = min(0.9, 0.1 + shift + 0.02 * n * rng.random())
            ranks = [1 if rng.random() < p else (None if rng.random() < 0.2 else int(rng.integers(2, 300)))
                     for _ in range(n)]  # fmt: skip
            doc, dtype = f"doc-{d:03d}", TYPES[d % len(TYPES)]
            for ci, r in enumerate(ranks):
                outcomes.append({"doc_id": doc, "doc_type": dtype, "chunk_index": ci, "system": system,
                                 "hit": int(r == 1), "rank": r})  # fmt: skip
            s = sum(r == 1 for r in ranks)
            per_doc.append({"system": system, "doc_id": doc, "doc_type": dtype, "n": n, "s": s, "rate": s / n})
    # both systems on the same queries: draw them from the same stream per (doc, chunk)
    by_q = {}
    for o in outcomes:
        by_q.setdefault((o["doc_id"], o["chunk_index"]), []).append(o)
    kept = [o for q in by_q.values() if len(q) == 2 for o in q]
    counts: dict = {}
    for o in kept:
        c = counts.setdefault((o["system"], o["doc_id"]), [0, 0])
        c[0] += 1
        c[1] += o["hit"]
    per_doc = [{**r, "n": counts[(r["system"], r["doc_id"])][0], "s": counts[(r["system"], r["doc_id"])][1]}
               for r in per_doc if (r["system"], r["doc_id"]) in counts]  # fmt: skip
    with gzip.open(folder / "outcomes.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.write("\n".join(json.dumps(o) for o in kept) + "\n")
    (folder / "per_document.jsonl").write_text("\n".join(json.dumps(r) for r in per_doc) + "\n", encoding="utf-8")
    return folder


def test_rr_and_paired_populations_from_outcomes(tmp_path):
    folder = known_item_folder(tmp_path / "ki")
    recs = [json.loads(x) for x in gzip.open(folder / "outcomes.jsonl.gz", "rt")]
    hit = load_population(folder, system="bm25")
    rr = load_population(folder, system="bm25", outcome="rr")
    assert rr.unit and rr.measure == "rr" and rr.n.sum() == hit.n.sum()
    want = [0.0 if o["rank"] is None or o["rank"] > 200 else 1.0 / o["rank"] for o in recs if o["system"] == "bm25"]
    assert rr.s.sum() == pytest.approx(sum(want), rel=1e-12)
    assert rr.micro >= hit.micro  # rr >= hit@1 query by query
    diff = load_population(folder, system="bm25", outcome="rr", minus="tfidf")
    other = load_population(folder, system="tfidf", outcome="rr")
    assert diff.paired and diff.default_key == "paired" and not diff.unit
    assert diff.micro == pytest.approx(rr.micro - other.micro, abs=1e-12)
    shallow = load_population(folder, system="bm25", outcome="rr", rr_depth=1)
    assert shallow.s.sum() == pytest.approx(hit.s.sum())  # depth 1: the reciprocal rank is hit@1
    assert diff.rows is not None and diff.rows.y.size == diff.n.sum()


@pytest.mark.parametrize(
    "kw,match",
    [
        ({"outcome": "ndcg"}, "outcome 'ndcg'"),
        ({"outcome": "rr", "minus": "vector"}, "system 'vector' not found"),
        ({"outcome": "rr", "rr_depth": 0}, "rr_depth 0"),
    ],
)
def test_population_errors(tmp_path, kw, match):
    folder = known_item_folder(tmp_path / "ki", docs=8)
    with pytest.raises(HarnessInputError, match=match):
        load_population(folder, system="bm25", **kw)


def test_bad_rank_names_file_line_record_field(tmp_path):
    folder = tmp_path / "ki"
    folder.mkdir()
    with gzip.open(folder / "outcomes.jsonl.gz", "wt") as fh:
        fh.write(json.dumps({"doc_id": "a", "chunk_index": 0, "system": "bm25", "hit": 1, "rank": 0}) + "\n")
    with pytest.raises(HarnessInputError, match=r"outcomes.jsonl.gz:1: record a: field rank"):
        load_population(folder, outcome="rr")


def test_population_specs():
    specs = population_specs(["ki", "synthetic"], system="bm25,tfidf", outcome="hit,rr", paired="bm25-tfidf")
    assert [s.name() for s in specs] == ["ki:bm25/hit", "ki:bm25/rr", "ki:tfidf/hit", "ki:tfidf/rr",
                                         "ki:bm25-tfidf/hit", "ki:bm25-tfidf/rr", "synthetic:hit"]  # fmt: skip
    assert [s.name() for s in population_specs(["ki"], paired="bm25-tfidf")] == ["ki:bm25-tfidf/hit"]
    with pytest.raises(HarnessInputError, match="write a difference as A-B"):
        population_specs(["ki"], paired="bm25")


def _fake(label, outcome, rows_by_k, paired=False):
    """A CoverageResult with given SRS rows ``{K: {method: (coverage, mean_width)}}``."""
    designs = [
        DesignResult("srs", k, 1000, {m: {"method": m, "coverage": c, "mc_margin": 0.01, "mean_width": w,
                                          "infinite_share": 0.0} for m, (c, w) in rows.items()}, 0.0)
        for k, rows in rows_by_k.items()
    ]  # fmt: skip
    return CoverageResult({"label": label, "outcome": outcome, "paired": paired}, {}, designs, 1.0)


def test_the_rule_picks_the_highest_minimum_within_the_width_limit_and_says_by_how_much_it_misses():
    a = _fake("a", "binary", {5: {"cr2": (0.9, 1.0), "cr3": (0.95, 1.1), "cluster_t": (0.99, 1.0)},
                              10: {"cr2": (0.85, 1.0), "cr3": (0.90, 1.1), "cluster_t": (0.99, 1.0)},
                              20: {"cr2": (0.84, 1.0), "cr3": (0.89, 1.1), "cluster_t": (0.99, 1.0)}})  # fmt: skip
    c = choose_class([a], "binary")
    assert c.chosen == "cr3" and not c.meets_target  # cluster_t estimates the macro mean: not a candidate
    assert c.shortfall_k20 == pytest.approx(0.93 - 0.89) and c.shortfall_all == pytest.approx(0.91 - 0.89)
    assert not c.summary("cluster_t").candidate
    # too wide at K = 5 only (outside the coverage range): out of the width limit all the same
    b = _fake("a", "binary", {5: {"cr2": (0.9, 1.0), "cr3": (0.95, WIDTH_LIMIT + 0.05)},
                              10: {"cr2": (0.85, 1.0), "cr3": (0.90, 1.1)},
                              20: {"cr2": (0.84, 1.0), "cr3": (0.89, 1.1)}})  # fmt: skip
    c = choose_class([b], "binary")
    assert c.chosen == "cr2" and not c.summary("cr3").within_width
    # a method meeting the target wins over a higher minimum that does not
    m = _fake("a", "binary", {k: {"cr2": (0.94, 1.0), "cr3": (0.95, 1.2)} for k in (10, 20, 40)})
    c = choose_class([m], "binary")
    assert c.chosen == "cr2" and c.meets_target and c.shortfall_all == 0.0
    # a proportion-only method is no candidate for the continuous (unit) class
    u = _fake("u", "unit", {k: {"cr2": (0.8, 1.0), "korn_graubard": (0.95, 1.0)} for k in (10, 20)})
    assert choose_class([u], "unit").chosen == "cr2"
    assert choose_class([u], "binary").populations == []


def test_suite_json_evidence_and_block(tmp_path):
    folder = known_item_folder(tmp_path / "ki")
    specs = [PopulationSpec(str(folder), "bm25", "hit", label="ki:bm25/hit"),
             PopulationSpec(str(folder), "bm25", "rr", label="ki:bm25/rr"),
             PopulationSpec(str(folder), "bm25", "hit", "tfidf", label="ki:bm25-tfidf/hit")]  # fmt: skip
    suite = run_suite(specs, reps=40, ks=(5, 10, 20), b=39, types=2, per_type=3, out_dir=tmp_path / "s",
                      cache_dir=tmp_path / "s" / "populations")  # fmt: skip
    data = json.loads((tmp_path / "s" / "suite.json").read_text())
    assert set(data["defaults"]) == {"binary", "unit", "continuous", "paired"}
    for pop in data["populations"]:
        for d in pop["designs"]:
            for row in d["rows"].values():
                assert {"method", "target", "coverage", "mc_margin", "mean_width", "infinite_share", "default"} <= set(
                    row
                )
                assert 0.0 <= row["coverage"] <= 1.0
        designs = {d["design"] for d in pop["designs"]}
        assert designs == {"srs", "two-stage", "pps"}
        cls = "paired" if pop["population"]["paired"] else pop["population"]["outcome"]
        flagged = {r["method"] for d in pop["designs"] if d["design"] == "srs" for r in d["rows"].values()
                   if r["default"]}  # fmt: skip
        assert flagged == {DEFAULTS[cls]}
        pps_methods = {r["method"] for d in pop["designs"] if d["design"] == "pps" for r in d["rows"].values()}
        assert pps_methods <= {"hansen_hurwitz", "hansen_hurwitz_logit"} and "hansen_hurwitz" in pps_methods
    again = run_suite(specs, reps=40, ks=(5, 10, 20), b=39, types=2, per_type=3,
                      cache_dir=tmp_path / "s" / "populations")  # fmt: skip
    assert [r.to_dict()["designs"] for r in again.results] == [r.to_dict()["designs"] for r in suite.results]
    assert load_suite(tmp_path / "s" / "suite.json").choice["binary"].chosen == suite.choice["binary"].chosen

    ev = build_evidence(suite, description="toy populations", corpus="toy", generated_by="test")
    path = write_evidence(ev, tmp_path / "ev.json")
    back = read_evidence(path)
    assert back.defaults == {k: c.chosen for k, c in suite.choice.items()}
    cr2 = back.methods["cr2"]["binary"]
    s = suite.choice["binary"].summary("cr2")
    assert (cr2.min, cr2.max) == (s.min_coverage, s.max_coverage)
    note = coverage_evidence("cr2", "binary", path=path)
    lo, hi = round(100 * s.min_coverage), round(100 * s.max_coverage)
    span = f"{lo} %" if lo == hi else f"{lo}–{hi} %"
    assert note.text == f"measured coverage {span} at K = 10–80 on toy populations"
    assert back.methods["hansen_hurwitz"]["paired"].design == "pps"

    block = render_block(suite, command="test | cmd")
    assert block.startswith(BEGIN) and block.rstrip().endswith(END) and "`test | cmd`" in block
    md = tmp_path / "measurements.md"
    rewrite_block(md, block)
    md.write_text(md.read_text() + "\n<!-- BEGIN other -->\nkeep me\n<!-- END other -->\n")
    rewrite_block(md, block.replace("Interval coverage", "Interval coverage again"))
    text = md.read_text()
    assert text.count(BEGIN) == 1 and "again" in text and "keep me" in text and text.startswith("# Measurements")
    md.write_text(BEGIN + "\nno end\n")
    with pytest.raises(HarnessInputError, match="unbalanced"):
        rewrite_block(md, block)


def test_cli_coverage_suite_json(tmp_path):
    folder = known_item_folder(tmp_path / "ki", docs=40)
    out, ev = tmp_path / "out", tmp_path / "ev.json"
    args = ["coverage", "--population", str(folder), "--system", "bm25", "--outcome", "hit,rr", "--paired",
            "bm25-tfidf", "--reps", "30", "--docs-per-sample", "5,10", "--bootstrap-reps", "39", "--types", "0",
            "--no-pps", "--out", str(out), "--write-evidence", "--evidence-file", str(ev),
            "--format", "json"]  # fmt: skip
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    env = json.loads(res.stdout)
    assert env["kind"] == "coverage-suite"
    data = env["data"]
    labels = [p["population"]["label"] for p in data["populations"]]
    assert len(labels) == 4 and any("bm25-tfidf" in x for x in labels)
    assert read_evidence(ev).populations == labels
    for pop in data["populations"]:
        for d in pop["designs"]:
            assert d["design"] == "srs"
            assert all(math.isfinite(r["coverage"]) for r in d["rows"].values())
    assert INTERVALS[data["defaults"]["paired"]].paired


def test_write_evidence_keeps_the_design_entries_of_the_file(tmp_path):
    """Regenerating the whole-document evidence (benchmarks/coverage_table.py) must not drop the gold-set design
    entries that benchmarks/coverage_design.py wrote into the same file (it did: the file lost its ``designs``)."""
    from harness.stats.evidence import EVIDENCE_PATH

    committed = read_evidence(EVIDENCE_PATH)
    assert committed.designs, "the committed file holds the baseline's design entries"
    path = tmp_path / "ev.json"
    path.write_text(EVIDENCE_PATH.read_text(encoding="utf-8"), encoding="utf-8")
    fresh = committed.model_copy(update={"designs": [], "description": "regenerated populations"})
    back = read_evidence(write_evidence(fresh, path))
    assert back.description == "regenerated populations"
    assert [d.key() for d in back.designs] == [d.key() for d in committed.designs]
    only = committed.model_copy(update={"designs": committed.designs[:1]})  # an evidence with designs replaces them
    assert len(read_evidence(write_evidence(only, path)).designs) == 1
    new = tmp_path / "new.json"  # no file yet: written as given
    assert read_evidence(write_evidence(fresh, new)).designs == []


def _script(name: str):
    """A benchmark script that imports its siblings (``common``, ``coverage_table``): benchmarks/ on the path while
    it loads."""
    where = str(Path(__file__).resolve().parents[1] / "benchmarks")
    sys.path.insert(0, where)
    try:
        return _benchmark_module(name)
    finally:
        sys.path.remove(where)


def test_coverage_table_reuses_a_population_by_model_name_and_leaves_out_vector_sizes_by_name():
    table = _script("coverage_table")
    emb = {"model": "use", "model_id": "use-multilingual-v3"}
    summary = {"config": {"chunk_words": 100, "systems": ["bm25", "tfidf", "vector"]},
               "systems": {"vector": {"config": {"embedder": emb}}}}  # fmt: skip
    # canonical_model("use") is the registry name, the folder records both: reusable (it was rebuilt before)
    assert table._reusable(summary, 100, ["bm25", "tfidf", "vector"], "use")
    assert table._reusable(summary, 100, ["bm25", "tfidf", "vector"], "use-multilingual-v3")
    assert not table._reusable(summary, 100, ["bm25", "tfidf", "vector"], "wordllama")
    assert not table._reusable(summary, 50, ["bm25", "tfidf", "vector"], "use")

    class Args:
        sizes = [50, 100, 400]
        vector_sizes = [100]

    systems = ["bm25", "tfidf", "vector"]
    assert table.systems_at(Args, 100, systems) == systems
    assert table.systems_at(Args, 50, systems) == ["bm25", "tfidf"]
    note = table.vector_note(Args, systems)
    assert note.startswith("Not measured: the vector populations at 50/400-word chunks")
    assert table.vector_note(Args, ["bm25", "tfidf"]) == ""
    Args.vector_sizes = None
    assert table.systems_at(Args, 50, systems) == systems and table.vector_note(Args, systems) == ""


def test_coverage_design_pps_sample_check_and_the_holds_sentence(tmp_path):
    """benchmarks/coverage_design.py: the check of ``known-item --sample K --design pps`` measures the interval the
    command prints (Hansen-Hurwitz logit for a system, identity scale for a paired difference) at each K, and the
    block says by name where a default covers less than 93 %."""
    from types import SimpleNamespace

    from harness.studies.coverage.goldset_run import folder_populations
    from harness.studies.coverage.study import study_design

    design = _script("coverage_design")
    pops = folder_populations(known_item_folder(tmp_path / "ki"))
    check = design.pps_sample_check(pops, [5, 10], reps=60, seed=1, threads=1)
    assert set(check) == {label for label, _ in pops}
    assert check["ki:bm25/hit"]["method"] == "hansen_hurwitz_logit" and not check["ki:bm25/hit"]["paired"]
    assert check["ki:bm25-tfidf/rr"]["method"] == "hansen_hurwitz" and check["ki:bm25-tfidf/rr"]["paired"]
    pop = dict(pops)["ki:tfidf/rr"]
    same = study_design(pop, "pps", k=10, reps=60, b=39, seed=1, threads=1).rows["hansen_hurwitz_logit"]
    assert check["ki:tfidf/rr"]["k"][10]["coverage"] == same["coverage"]
    lines = design._pps_sample_lines(check, [5, 10], 60)
    assert lines[0].startswith("| population | interval | K = 5 | K = 10 |") and len(lines) == 2 + len(pops) + 2
    assert "Paired differences (identity scale)" in lines[-1]

    def _pop(label, cls, cov):
        return SimpleNamespace(label=label, classes=(cls,), rows={"cr2_logit": {"coverage": cov}})

    res = SimpleNamespace(
        populations=[_pop("a/hit", "binary", 0.95), _pop("b/hit", "binary", 0.921)],
        choice={"binary": {"default": "cr2_logit"}},
    )
    low = design._holds(res)
    assert "less than 93 % on 1 of 2 populations" in low and "b/hit (cr2_logit 92.1 %)" in low
    res.populations[1].rows["cr2_logit"]["coverage"] = 0.94
    assert design._holds(res).startswith("The default interval covers >= 93 % on every one of the 2 populations")
