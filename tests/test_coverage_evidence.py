"""The committed evidence file (harness/stats/coverage_evidence.json, written by benchmarks/coverage_table.py) agrees
with DEFAULTS, and the run tables (terminal, Markdown, HTML) print the measured coverage beside the CR2 intervals."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from harness.evaluation.runs import load_run
from harness.report.html import render_html
from harness.report.markdown import render_markdown
from harness.report.model import build_report
from harness.report.terminal import systems_table
from harness.stats.evidence import EVIDENCE_PATH, read_evidence
from harness.stats.methods import DEFAULTS, coverage_evidence, evidence_notes, metric_outcome_class

REPO = Path(__file__).resolve().parents[1]
BASELINE = REPO / "runs" / "baselines" / "mx-leyes-dof-eval-v1-six-systems"


def test_the_committed_evidence_records_the_defaults_the_rule_chose():
    ev = read_evidence(EVIDENCE_PATH)
    assert ev.defaults == DEFAULTS, "re-run benchmarks/coverage_table.py or change DEFAULTS to the measured choice"
    assert (ev.k_min, ev.k_max) == (10, 80) and len(ev.populations) >= 25
    for cls, name in DEFAULTS.items():
        got = ev.methods[name][cls]
        assert 0.0 < got.min <= got.max <= 1.0 and got.populations >= 1
        assert coverage_evidence(name, cls).min == got.min
    assert ev.methods["hansen_hurwitz"]["paired"].design == "pps"


def test_metric_outcome_class():
    assert metric_outcome_class("all_hop@10", ["cr2", "cr2_logit"]) == "binary"
    assert metric_outcome_class("hit@1", ["cr2"]) == "binary"
    assert metric_outcome_class("mrr", ["cr2", "cr2_logit", "cr3"]) == "unit"
    assert metric_outcome_class("recall@5", ["cr2", "cr2_logit", "korn_graubard"]) == "unit"
    assert metric_outcome_class("delta", ["cr2", "cr3"]) == "continuous"


def _notes_of(run) -> list[str]:
    sl = run.summary.systems["bm25"]["all"].overall
    return evidence_notes("cr2", {m: set(sl[m].intervals) for m in ("mrr", "all_hop@10") if m in sl})


def test_run_tables_print_the_measured_coverage_beside_the_intervals():
    run = load_run(BASELINE)
    notes = _notes_of(run)
    assert notes and all("measured coverage" in n and "K = 10–80" in n for n in notes)
    binary, unit = coverage_evidence("cr2", "binary"), coverage_evidence("cr2", "unit")
    assert notes == [f"CR2 (Satterthwaite t) intervals of mrr (unit): {unit.text}",
                     f"CR2 (Satterthwaite t) intervals of all_hop@10 (binary): {binary.text}"]  # fmt: skip
    con = Console(record=True, width=400)
    con.print(systems_table(run))
    text = con.export_text()
    assert "measured coverage" in text and "CR2 (Satterthwaite t) intervals of" in text
    data = build_report([run], reps=200)
    md = render_markdown(data)
    assert "measured coverage" in md
    html = render_html(data)
    assert "<p class='note evidence'>" in html and "measured coverage" in html


def test_run_json_carries_the_evidence_field():
    from harness.report.formats import KINDS

    run = load_run(BASELINE)
    data = KINDS["run"].data(run)
    ev = data["coverage_evidence"]
    assert ev["all_hop@10"]["outcome"] == "binary" and ev["mrr"]["outcome"] == "unit"
    assert ev["mrr"]["text"] == coverage_evidence("cr2", "unit").text and ev["mrr"]["method"] == "cr2"
