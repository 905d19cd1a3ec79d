"""Issue 29 item 2: every rendering of a run's intervals names the estimand and prints the coverage measured for the
run's own design (cluster sizes and sampling), from the evidence file's design entries, or says it was not measured;
never the whole-document range of another design (harness.stats.design_evidence)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from harness.evaluation.runs import load_run
from harness.report.formats import KINDS
from harness.report.html import render_html
from harness.report.markdown import render_markdown
from harness.report.model import build_report
from harness.report.terminal import systems_table
from harness.stats.design_evidence import (
    ESTIMANDS,
    RunDesign,
    design_coverage,
    design_notes,
    run_design,
    slice_design,
    srs_documents_note,
)
from harness.stats.evidence import DesignEvidence, MethodEvidence, read_evidence
from harness.stats.methods import (
    INTERVALS,
    evidence_notes,
    paired_evidence_json,
    paired_evidence_lines,
    paired_evidence_note,
)

REPO = Path(__file__).resolve().parents[1]
BASELINE = REPO / "runs" / "baselines" / "mx-leyes-dof-eval-v1-six-systems"
GOLD_SIZES = (6, 3, 3, 3, 2, 2, 2, 2) + (1,) * 19
SHORT = "Estimand: the mean over the gold set's documents (docs/goldsets.md#estimand-srs)"
SHORT_PAIRED = "Estimand: difference of the mean over the gold set's documents (docs/goldsets.md#estimand-srs)"
ESTIMAND = "mean over the gold set's documents, each weighted by its questions; not the corpus's chunk-weighted mean"
WRONG_DESIGN = "K = 10–80"  # the whole-document range of the coverage study, printed before issue 29


def _evidence_file(tmp_path, sizes=GOLD_SIZES, sampling="srs") -> Path:
    base = json.loads((REPO / "harness" / "stats" / "coverage_evidence.json").read_text("utf-8"))
    me = MethodEvidence(min=0.912, max=0.948, where_min="p K=27", populations=3, mc_margin=0.006, design=sampling)
    logit = MethodEvidence(min=0.955, max=0.975, where_min="p K=27", populations=3, mc_margin=0.004)
    entry = DesignEvidence(
        sampling=sampling, cluster_sizes=list(sizes), estimand="macro", run="r", description="toy populations",
        populations=["p"], reps=2000, seed=0, level=0.95, generated_by="test", rule="r",
        defaults={"binary": "cr2_logit", "paired": "cr2"},
        methods={"cr2": {"binary": me, "paired": me}, "cr2_logit": {"binary": logit}},
    )  # fmt: skip
    base["designs"] = [entry.model_dump(mode="json")]
    path = tmp_path / "ev.json"
    path.write_text(json.dumps(base), encoding="utf-8")
    return path


def test_the_design_of_the_baseline_run_is_its_cluster_sizes():
    run = load_run(BASELINE)
    d = run_design(run)
    assert d.sampling == "srs" and d.cluster_sizes == GOLD_SIZES and d.estimand == ESTIMAND
    assert d.describe() == ("27 clusters of 6, 3 (×3), 2 (×4), 1 (×19) questions, documents drawn at random")
    assert slice_design(run, "all") == d
    covered = run.summary.systems["bm25"].get("covered")
    if covered is not None and covered.n_questions != 42:
        assert slice_design(run, "covered").cluster_sizes == ()  # never the figure of another subset
    with pytest.raises(ValueError):
        RunDesign.from_clusters(["a"], sampling="stratified")


def test_a_matched_design_prints_its_measured_coverage_and_the_rules_default(tmp_path):
    path = _evidence_file(tmp_path)
    d = RunDesign("srs", GOLD_SIZES, "runs/x")
    cov = design_coverage("cr2", "binary", d, path=path, labels={"cr2_logit": "CR2, logit scale"})
    assert cov["measured"] and cov["min"] == 0.912 and cov["max"] == 0.948 and cov["default"] == "cr2_logit"
    head = "measured coverage 91.2–94.8 % of nominal 95 % intervals for this design (27 clusters"
    assert cov["text"].startswith(head)
    assert "Monte Carlo ± 0.6 pts" in cov["text"] and "R = 2000" in cov["text"]
    assert "this design's default by the rule: CR2, logit scale, measured 95.5–97.5 %" in cov["text"]
    notes = design_notes("cr2", {"binary": ["hit@1"], "unit": ["mrr"]}, d, path=path)
    assert notes[0] == SHORT  # issue 42 item 5: one short line linking the full text
    assert notes[1].startswith("cr2 intervals of hit@1 (binary): measured coverage 91.2–94.8 %")
    assert notes[2] == "cr2 intervals of mrr (unit): not measured for this design: run `harness coverage --run runs/x`"


@pytest.mark.parametrize(
    "design",
    [
        RunDesign("srs", GOLD_SIZES[:-1], "runs/x"),  # one question less: another design
        RunDesign("pps", GOLD_SIZES, "runs/x"),  # same sizes, other sampling
        RunDesign("srs", (), "runs/x"),  # a slice whose sizes are unknown
    ],
)
def test_another_design_is_not_measured(tmp_path, design):
    path = _evidence_file(tmp_path)
    cov = design_coverage("cr2", "binary", design, path=path)
    assert not cov["measured"] and cov["min"] is None
    assert cov["text"] == "not measured for this design: run `harness coverage --run runs/x`"


def test_pps_estimand_and_srs_of_whole_documents_wording():
    assert "chunk-weighted mean" in ESTIMANDS["pps"] and "Hansen–Hurwitz" in ESTIMANDS["pps"]
    note = srs_documents_note("cr2", "binary", labels={"cr2": "CR2"})
    assert note.startswith("CR2: coverage not guaranteed: measured ") and note.endswith(
        "; sample documents by PPS (`--design pps`)"
    )
    ev = read_evidence()
    lo = 100 * ev.methods["cr2"]["binary"].min
    assert f"measured {lo:.1f}–" in note


def _expected(run, cls: str, method: str = "cr2_logit") -> str:  # the baseline design's default (stats.shown)
    return design_coverage(method, cls, run_design(run), labels={n: m.label for n, m in INTERVALS.items()})["text"]


@pytest.mark.slow  # tens of seconds on the shared machine
def test_every_rendering_of_a_run_names_the_estimand_and_this_designs_coverage():
    run = load_run(BASELINE)
    unit = _expected(run, "unit")
    con = Console(record=True, width=600)
    con.print(systems_table(run))
    text = " ".join(con.export_text().split())
    data = build_report([run], reps=200)
    md = render_markdown(data)
    html = render_html(data)
    for out in (text, " ".join(md.split()).replace("\\", ""), html.replace("&#x27;", "'").replace("&#x60;", "`")):
        assert out.count(SHORT) == 1  # one short line per output (issue 42 item 5)
        assert unit in out
        assert WRONG_DESIGN not in out
    js = KINDS["run"].data(run)["coverage_evidence"]
    assert js["estimand"] == ESTIMAND and js["design"]["cluster_sizes"] == list(GOLD_SIZES)
    assert js["metrics"]["mrr"]["text"] == unit and js["metrics"]["mrr"]["outcome"] == "unit"
    notes = evidence_notes("cr2", {"mrr": ("unit", {"cr2", "cr2_logit"})}, design=run_design(run))
    assert notes[0] == SHORT and all(WRONG_DESIGN not in n for n in notes)


def test_run_markdown_of_the_run_verb_names_the_estimand_per_slice():
    from harness.report.markdown_verbs import render

    run = load_run(BASELINE)
    out = " ".join(render("run", run).split()).replace("\\", "")
    assert out.count(SHORT) == 1 and WRONG_DESIGN not in out  # once per output (issue 42 item 5)
    assert _expected(run, "binary") in out and "measured coverage" in _expected(run, "binary")


def test_paired_notes_carry_the_estimand_and_this_designs_coverage(tmp_path):
    path = _evidence_file(tmp_path)
    d = RunDesign("srs", GOLD_SIZES, "runs/x")
    note = paired_evidence_note("cr2", design=d, path=path)
    assert paired_evidence_lines("cr2", design=d, path=path) == [SHORT_PAIRED, note]
    assert note.startswith("CR2 (Satterthwaite t) paired intervals: ")
    assert "measured coverage 91.2–94.8 %" in note
    js = paired_evidence_json("cr2", design=d, path=path)
    assert js["measured"] and js["estimand"].startswith("difference of the mean over the gold set's documents")
    other = paired_evidence_note("cr2", design=RunDesign("srs", (2, 2), "runs/y"), path=path)
    assert other.endswith("not measured for this design: run `harness coverage --run runs/y`")
