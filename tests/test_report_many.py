"""The report with many runs and systems (the trial's 14 systems across three runs): unambiguous labels, the model
per run in the header, each system's interval plot, a heat table for the categories, regressed beside improved
questions."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_report import add_perturbed_systems, make_base_run

from harness.report.html import FIGURE_IDS, figure_ids, render_html
from harness.report.html.changes import question_changes
from harness.report.markdown import render_markdown
from harness.report.model import build_report
from harness.report.plots_many import BARS_UP_TO

pytestmark = pytest.mark.slow  # each HTML rendering of 13 systems draws its figures (about 10 s)

CAND = {"vector": 0.7, "rrf": 0.4, "w0.5": 0.5, "w0.75": 0.3, "w0.6": 0.45, "mine": 0.2}


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("many")
    base, _gs, _corpus = make_base_run(tmp)
    six = add_perturbed_systems(base, tmp / "runs", "six", keep_base=True, seed=1)
    cand = add_perturbed_systems(base, tmp / "runs", "cand1", CAND, keep_base=False, seed=2)
    return build_report([base, six, cand], reps=200)


def test_every_label_names_its_run_once_a_name_repeats(many):
    assert len(many.labels) == 13 and len(set(many.labels)) == 13
    assert all(lab.split(":", 1)[0] in ("base", "six", "cand1") for lab in many.labels)
    assert "cand1:rrf" in many.labels and "six:rrf" in many.labels and "rrf" not in many.labels


def test_header_gives_the_model_of_each_run_when_they_differ(many):
    html = render_html(many)
    assert "<dt>model</dt><dd>by run: base: none (lexical systems only); six: " in html
    md = render_markdown(many)
    assert "**model** by run: base: none (lexical systems only); six:" in md
    assert "Runs: " in md and ": model none (lexical systems only)" in md


def test_system_interval_plot_and_category_heat_table(many):
    ids = figure_ids(many)
    assert ids[:2] == [FIGURE_IDS["systems"], FIGURE_IDS["category"]]
    html = render_html(many)
    assert f"id='{FIGURE_IDS['systems']}'" in html or f'id="{FIGURE_IDS["systems"]}"' in html
    assert len(many.labels) > BARS_UP_TO and "as a heat table (13 systems" in html


def test_regressed_and_improved_questions_side_by_side(many):
    label = "cand1:w0.6"
    down, up = question_changes(many, label, "mrr")
    base = many.baseline.label
    for qid in many.qids():
        d = many.row(label, qid).metrics["mrr"] - many.row(base, qid).metrics["mrr"]
        assert (qid in {x["qid"] for x in down}) == (d < -1e-12)
        assert (qid in {x["qid"] for x in up}) == (d > 1e-12)
    assert [x["diff"] for x in down] == sorted(x["diff"] for x in down)
    assert [x["diff"] for x in up] == sorted((x["diff"] for x in up), reverse=True)
    html = render_html(many)
    assert f"{label}: {len(down)} regressed, {len(up)} improved" in html
    assert "<h3>improved (" in html and "href='#q-" in html


def test_a_single_run_keeps_plain_names(tmp_path: Path):
    base, _gs, _corpus = make_base_run(tmp_path)
    six = add_perturbed_systems(base, tmp_path / "runs", "six", keep_base=False)
    d = build_report([base, six], reps=200)
    assert "bm25" in d.labels and not any(":" in lab for lab in d.labels)
    assert len(d.labels) <= BARS_UP_TO and "as a heat table" not in render_html(d)  # grouped bars


def test_system_options_summarise_each_recorded_configuration():
    from harness.report.html.sections import system_options

    assert system_options({"system": "bm25", "params": {"method": "lucene", "k1": 1.5, "b": 0.75}}) == (
        "method=lucene; k1=1.5; b=0.75"
    )
    assert system_options({"embedder": {"model": "use", "model_id": "use-multilingual-v3"}}) == (
        "model use-multilingual-v3"
    )
    cfg = {"params": {"weights": [0.25, 0.75]}, "input_names": ["bm25", "vector"]}
    assert system_options(cfg) == "weights=0.25/0.75; of bm25+vector"
    assert system_options(None) == "" and system_options({}) == ""
