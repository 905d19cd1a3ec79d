"""Corrections a reviewer can trust (issue 16 item 4): rationale, author and description kept in the change log; a
complete diff (word-level for long strings, list items matched by content) in text and Markdown; --impact re-scores
a run's stored rankings; the new README's statistics are regenerated; V034 flags a reference answer's figures that
no quote backs (a warning). Each test failed before its fix: the rationale member was dropped, the diff cut values
at 100 characters and showed an inserted item as "changed" plus "added", nothing showed the metric impact, the
README was copied with stale figures, and a contradicting answer validated without a word.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console
from test_validate import Fixture
from typer.testing import CliRunner

from harness.cli import app
from harness.curation.apply import apply_correction
from harness.errors import HarnessInputError
from harness.evaluation.impact import impact_of
from harness.evaluation.pipeline import run
from harness.goldset.corrections import correct_goldset, read_correction_file
from harness.goldset.diff import diff_values
from harness.goldset.io import load_goldset
from harness.report.validation import impact_text_lines, render
from harness.report.validation_diff import change_text, diff_markdown_lines
from harness.report.validation_markdown import impact_markdown_lines
from harness.validate import validate
from harness.validate.figures import extract_figures, unsupported_figures

runner = CliRunner()
REPO = Path(__file__).resolve().parents[1]
OUR_SET = REPO / "datasets" / "mx-leyes-dof-eval-v1"
QUOTE = "/gold_documents/0/evidence/0/quote"


@pytest.fixture
def fx(tmp_path: Path) -> Fixture:
    return Fixture(tmp_path)


def write(path: Path, lines: list) -> Path:
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    return path


def difficulty_patch(rid="MO-001", value="hard", **extra):
    return {"id": rid, "patch": [{"op": "replace", "path": "/difficulty", "value": value}], **extra}


# ----------------------------------------------------------------------------------------------- rationale, author


def test_rationale_on_the_leading_test_op_is_kept_in_diff_and_changelog(fx, tmp_path):
    ds = fx.build()
    old = load_goldset(ds).by_id()["MO-001"].difficulty
    corr = write(
        tmp_path / "c.jsonl",
        [
            {
                "id": "MO-001",
                "patch": [
                    {"op": "test", "path": "/difficulty", "value": old, "rationale": "la nota es técnica"},
                    {"op": "replace", "path": "/difficulty", "value": "hard"},
                ],
            },
            difficulty_patch("TE-001", rationale="por la línea"),
        ],
    )
    out = tmp_path / "v11"
    res = apply_correction(
        ds,
        read_correction_file(corr, author="Ana", description="dos cambios"),
        out,
        structural_only=True,
        contract=fx.contract,
    )
    assert res.written
    src = next(x for x in res.report.correction.records if x["id"] == "MO-001")["sources"]
    assert src == [{"file": "c.jsonl", "line": 1, "author": "Ana", "rationale": "la nota es técnica"}]
    entry = json.loads((out / "tiny.meta.json").read_text())["changelog"][-1]
    (cf,) = entry["corrections"]
    assert (cf["author"], cf["description"]) == ("Ana", "dos cambios")
    assert [x["rationale"] for x in cf["lines"]] == ["la nota es técnica", "por la línea"]
    # the applied patch has no rationale member left: the test op still guards the value
    assert "rationale" not in json.dumps(json.loads((out / "tiny.jsonl").read_text().splitlines()[5]))


def test_header_line_gives_author_and_description_and_wins_over_the_cli(fx, tmp_path):
    corr = write(
        tmp_path / "m.jsonl", [{"correction": {"author": "Mantenedores", "description": "ajuste"}}, difficulty_patch()]
    )
    cf = read_correction_file(corr, author="otra", description="otra")
    assert (cf.author, cf.description, len(cf.entries)) == ("Mantenedores", "ajuste", 1)
    bare = write(tmp_path / "b.jsonl", [difficulty_patch()])
    assert read_correction_file(bare, author="Ana").author == "Ana"
    assert read_correction_file(bare).author is None


@pytest.mark.parametrize(
    ("lines", "needle"),
    [
        ([difficulty_patch(), {"correction": {"author": "x"}}], "2: field correction: the header must be the first"),
        ([{"correction": {"author": "x", "mood": "y"}}, difficulty_patch()], "field correction.mood: unknown"),
        ([{"correction": {"author": ""}}, difficulty_patch()], "field correction.author: expected a non-empty"),
        (
            [{"id": "MO-001", "patch": [{"op": "replace", "path": "/difficulty", "value": "x", "rationale": "r"}]}],
            "field patch[0].rationale: a rationale belongs on the line or on its leading test operation",
        ),
        (
            [
                {
                    "id": "MO-001",
                    "rationale": "a",
                    "patch": [{"op": "test", "path": "/id", "value": "MO-001", "rationale": "b"}],
                }
            ],
            "field patch[0].rationale: the line has a rationale already",
        ),
        ([{"correction": {"author": "x"}}], "no corrections in the file"),
    ],
)
def test_malformed_headers_and_misplaced_rationales_are_exit_2(tmp_path, lines, needle):
    with pytest.raises(HarnessInputError, match=r".*") as ei:
        read_correction_file(write(tmp_path / "c.jsonl", lines))
    assert ei.value.exit_code == 2 and needle in str(ei.value), str(ei.value)


def test_several_files_apply_in_order_as_one_version_with_both_authors(fx, tmp_path):
    ds = fx.build()
    a = write(tmp_path / "a.jsonl", [difficulty_patch(value="hard")])
    b = write(tmp_path / "b.jsonl", [{"correction": {"author": "Mantenedores"}}, difficulty_patch(value="easy")])
    cs = correct_goldset(ds, [read_correction_file(a, author="Revisora"), b])
    assert cs.new_version == "1.1.0" and cs.goldset.by_id()["MO-001"].difficulty == "easy"
    (d,) = cs.diffs
    assert [(s["file"], s["author"]) for s in d.sources] == [("a.jsonl", "Revisora"), ("b.jsonl", "Mantenedores")]
    entry = cs.manifest_raw["changelog"][-1]
    assert [(c["file"], c["author"]) for c in entry["corrections"]] == [
        ("a.jsonl", "Revisora"),
        ("b.jsonl", "Mantenedores"),
    ]


# ----------------------------------------------------------------------------------------------- the diff

LONG = " ".join(f"palabra{i}" for i in range(120))


def test_a_change_late_in_a_long_string_is_shown_where_it_is():
    new = LONG.replace("palabra117", "CAMBIO")
    (ch,) = diff_values({"q": LONG}, {"q": new})
    assert ch.old == LONG and ch.new == new  # whole values, never cut
    assert ["-", "palabra117"] in ch.words and ["+", "CAMBIO"] in ch.words
    text = change_text(ch.to_dict())
    assert "[-palabra117-] {+CAMBIO+}" in text and "… 109 words …" in text
    md = "\n".join(diff_markdown_lines([{"id": "X", "new_id": "X", "sources": [], "changes": [ch.to_dict()]}]))
    assert "<del>palabra117</del> <ins>CAMBIO</ins>" in md and f"new: {new}" in md


def test_an_inserted_list_item_is_added_not_changed_plus_added():
    ev = [{"chunk_id": f"d#{i}", "quote": f"cita {i}"} for i in range(3)]
    new = [ev[0], {"chunk_id": "d#9", "quote": "nueva"}, *ev[1:]]
    changes = diff_values({"evidence": ev}, {"evidence": new})
    assert [(c.op, c.path) for c in changes] == [("added", "/evidence/1")]
    # a replaced item that keeps most of its content is one change inside it, at its old and new place
    moved = [{"chunk_id": "d#7", "quote": "cita 0"}, *ev[1:]]
    assert [(c.op, c.path, c.old, c.new) for c in diff_values(ev, moved)] == [("changed", "/0/chunk_id", "d#0", "d#7")]


def test_validate_correction_prints_the_complete_diff_in_text_and_markdown(fx, tmp_path):
    ds = fx.build()
    rec = load_goldset(ds).by_id()["SP-001"]
    corr = write(
        tmp_path / "c.jsonl",
        [{"id": "SP-001", "patch": [{"op": "replace", "path": "/reference_answer", "value": LONG}]}],
    )
    r = validate(ds, correction=corr, contract=fx.contract)
    console = Console(record=True, width=300)
    render(r, console)
    text = console.export_text()
    assert "record SP-001: 1 change(s)" in text and "from c.jsonl line 1: no rationale given" in text
    res = runner.invoke(
        app, ["validate", str(ds), "--contract", str(fx.contract), "--correction", str(corr), "--format", "markdown"]
    )
    assert res.exit_code == 0
    assert "#### SP-001 (1 change(s))" in res.stdout and "<details>" in res.stdout
    assert rec.reference_answer.split()[0] in res.stdout


# ----------------------------------------------------------------------------------------------- impact


def test_impact_rescores_the_stored_rankings_against_old_and_new(fx, tmp_path):
    ds = fx.build()
    path = run(ds, fx.corpus, ["bm25"], workdir=tmp_path / "w", runs_dir=tmp_path / "runs", run_id="r")
    rows = [json.loads(x) for x in (path / "per_question.jsonl").read_text().splitlines()]
    row = next(x for x in rows if x["qid"] == "SP-001")
    ranked = [d for d, _ in row["rankings"]["document"]]
    # make SP-001's gold document the last other document bm25 ranks: its mrr becomes 1/rank of that one
    gold = str(load_goldset(ds).by_id()["SP-001"].gold_documents[0].document_id)
    rank, last = max((i + 1, d) for i, d in enumerate(ranked) if d != gold)
    assert row["metrics"]["mrr"] != 1 / rank
    corr = write(
        tmp_path / "c.jsonl",
        [
            {
                "id": "SP-001",
                "patch": [
                    {"op": "replace", "path": "/gold_documents/0/document_id", "value": last},
                    {"op": "replace", "path": "/gold_documents/0/evidence", "value": []},
                    {"op": "remove", "path": "/gold_documents/0/relpath"},
                    {"op": "remove", "path": "/gold_documents/0/heading_path"},
                ],
            }
        ],
    )
    r = validate(ds, correction=corr, contract=fx.contract, impact=impact_of([path]))
    imp = r.correction.impact
    # the corrected set's design was not measured: the nearest measured design's paired default (harness.stats.shown)
    assert imp["method"] == "cr3" and imp["runs"][0]["run_id"] == "r"
    mrr = imp["runs"][0]["systems"]["bm25"]["mrr"]
    old_mrr = row["metrics"]["mrr"]
    assert mrr["changed"] == {"SP-001": [old_mrr, 1 / rank]}
    n = len(load_goldset(ds).records)
    assert mrr["diff"] == pytest.approx((1 / rank - old_mrr) / n, abs=1e-15)
    assert mrr["old"] == pytest.approx(sum(x["metrics"]["mrr"] for x in rows) / n, abs=1e-15)
    assert mrr["questions_changed"] == 1
    # a metric no question changed on has the exact interval [0, 0]; a changed one a CR2 interval around its diff
    for v in imp["runs"][0]["systems"]["bm25"].values():
        if v["questions_changed"] == 0:
            assert v["interval"] == {"low": 0.0, "high": 0.0} and v["diff"] == 0.0
    assert mrr["interval"]["low"] <= mrr["diff"] <= mrr["interval"]["high"]
    # the renderings name the changed question with old -> new, and fold the unchanged metrics into one line
    text = "\n".join(impact_text_lines(imp))
    assert f"(1 question(s) changed: SP-001 {old_mrr:.4f} -> {1 / rank:.4f})" in text
    unchanged = [m for m, v in imp["runs"][0]["systems"]["bm25"].items() if not v["questions_changed"]]
    assert f"unchanged ({len(unchanged)}): {', '.join(unchanged)}" in text
    assert all(f"      {m}:" not in text for m in unchanged)
    mdtext = "\n".join(impact_markdown_lines(imp))
    assert f"SP-001 {old_mrr:.4f} → {1 / rank:.4f}" in mdtext and "which (old → new)" in mdtext


def test_impact_refuses_a_run_scored_against_another_gold_set(fx, tmp_path):
    ds = fx.build()
    path = run(ds, fx.corpus, ["bm25"], workdir=tmp_path / "w", runs_dir=tmp_path / "runs", run_id="r")
    other = fx.build(lambda rs: rs[0].update(difficulty="hard"))
    corr = write(tmp_path / "c.jsonl", [difficulty_patch()])
    with pytest.raises(HarnessInputError, match="field goldset.sha256: the run was scored against"):
        validate(other, correction=corr, contract=fx.contract, impact=impact_of([path]))
    with pytest.raises(HarnessInputError, match="--impact: re-scoring runs needs a --correction"):
        validate(ds, contract=fx.contract, impact=impact_of([path]))


# ----------------------------------------------------------------------------------------------- README


def test_apply_regenerates_the_readme_statistics_block(fx, tmp_path):
    ds = fx.build()
    (ds / "README.md").write_text(
        "# Tiny\n\nprose\n\n<!-- BEGIN GENERATED: old tool -->\n- Questions: **999**\n<!-- END GENERATED -->\n\nend\n"
    )
    corr = write(tmp_path / "c.jsonl", [difficulty_patch()])
    apply_correction(ds, corr, tmp_path / "v11", structural_only=True, contract=fx.contract)
    text = (tmp_path / "v11" / "README.md").read_text()
    assert "999" not in text and text.startswith("# Tiny\n\nprose\n\n<!-- BEGIN GENERATED: harness goldset statistics")
    assert text.endswith("<!-- END GENERATED -->\n\nend\n")
    n = len(load_goldset(ds).records)
    assert f"- Questions: **{n}**" in text and "Tiny Eval 1.1.0" in text


# ----------------------------------------------------------------------------------------------- V034


def test_figure_extraction_rules():
    f = extract_figures("El 1o. de septiembre de 2025, según el artículo 8o. bis y el art. 325, pagó $16.4583 y 1,000.")
    assert f.dates == ((2025, 9, 1),)
    assert f.articles == ("art 8 bis", "art 325")
    assert f.numbers == ("16.4583", "1,000")
    assert extract_figures("vence el 31/07/2026 o 2026-08-01; A1 no es cifra").dates == ((2026, 7, 31), (2026, 8, 1))
    assert extract_figures("A1 no es cifra").numbers == ()


def test_unsupported_figures_matching():
    quotes = ["Artículo 325. ... fue de 2,50 m ... a 11 de abril de 2024."]
    assert unsupported_figures("Según el artículo 325, 2.50 m desde el 11 de abril de 2024", quotes) == []
    assert unsupported_figures("el 12 de abril de 2024 y 3 m; art. 82", quotes) == ["2024-04-12", "art 82", "3"]
    # a figure the question asks about is not flagged (a false premise restated)
    assert unsupported_figures("No es el artículo 123", quotes, also_in="¿el artículo 123?") == []


def test_v034_warns_without_changing_the_exit_code(fx):
    r = fx.run(lambda rs: rs[0].update(reference_answer="Se publicó el 3 de marzo de 1999 con 42 artículos."))
    assert r.exit_code == 0
    ((scope, code, f),) = r.warnings()
    assert (scope, code, f.status) == ("SP-001", "V034", "warn")
    assert f.details["figures"] == ["1999-03-03", "42"]


def test_v034_on_our_gold_set_flags_these_answers():
    """What V034 flags on mx-leyes-dof-eval 1.1.0 (read each: most are dates of the DOF edition or figures the
    answer computes, such as MD-003's difference 0.8239, or table cells whose '*' the normaliser drops)."""
    r = validate(OUR_SET)
    flagged = {scope: f.details["figures"] for scope, code, f in r.warnings() if code == "V034"}
    assert flagged == {
        "SP-001": ["2024-04-12"],
        "LI-004": ["2015-05-04"],
        "TE-002": ["2023-01-01"],
        "TE-003": ["180"],
        "TE-005": ["2024-04-12", "004", "2023"],
        "CR-001": ["art 82"],
        "CR-003": ["2024-05-31"],
        "MD-001": ["2022"],
        "MD-002": ["410", "2"],
        "MD-003": ["0.8239"],
        "MD-004": ["4.5044"],
        "MD-006": ["2024-12-20", "2025-08-26"],
        "MO-004": ["10", "0.5"],
        "MO-006": ["2025-06-18", "2025-06-19"],
    }
    assert r.exit_code == 0
