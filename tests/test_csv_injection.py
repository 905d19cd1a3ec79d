"""Spreadsheet formula injection in every CSV/TSV the harness writes (issue 44 item 7): a string cell beginning with
``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a leading ``'`` (OWASP); numbers stay numbers."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from conftest import tiny_records, write_tiny_corpus, write_tiny_goldset
from typer.testing import CliRunner

from harness.cli import app
from harness.report.tables import COLUMNS, delimited
from harness.studies.coverage.suite import PopulationSpec, run_suite
from harness.tabular import FORMULA_PREFIXES, delimited_text, restore_cell, safe_cell

PAYLOADS = ['=HYPERLINK("http://evil","x")', "+1+1", "-2+3", "@SUM(A1)", "\tcmd", "\rcmd"]


@pytest.mark.parametrize("text", PAYLOADS)
def test_string_cells_beginning_with_a_formula_character_get_a_quote(text):
    assert text[0] in FORMULA_PREFIXES
    assert safe_cell(text) == "'" + text
    assert restore_cell(safe_cell(text)) == text
    header, back = csv.reader(io.StringIO(delimited_text(["a", "b"], [[text, 1]]), newline=""))
    assert header == ["a", "b"] and back == ["'" + text, "1"]


def test_numbers_stay_numbers_and_plain_strings_are_untouched():
    np = pytest.importorskip("numpy")
    assert safe_cell(-0.012) == "-0.012" and safe_cell(-3) == "-3" and safe_cell(np.float64(-0.5)) == "-0.5"
    assert safe_cell(np.int64(-7)) == "-7" and safe_cell(None) == "" and safe_cell(True) == "True"
    assert safe_cell("SP-001") == "SP-001" and restore_cell("'quoted") == "'quoted"
    text = delimited([{"table": "summary", "system": "-sys", "value": -0.012, "lower": -0.5}])
    row = next(csv.DictReader(io.StringIO(text)))
    assert row["system"] == "'-sys" and float(row["value"]) == -0.012 and row["lower"] == "-0.5"


def _goldset_with_hostile_ids(tmp: Path, corpus: Path) -> Path:
    recs = tiny_records()
    for rec, qid, cat in zip(recs, ["=SP-001", "-SP-002", "@MD-001"], ["+single", "\tsingle", "\rmulti"], strict=True):
        rec["id"], rec["category"] = qid, cat
    return write_tiny_goldset(tmp / "gs", corpus, recs)


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_evaluate_tables_neutralise_ids_categories_systems_and_run_ids(tmp_path, fmt):
    corpus = write_tiny_corpus(tmp_path / "corpus")
    gs = _goldset_with_hostile_ids(tmp_path, corpus)
    systems = ["=cmd|'/Ccalc'!A0", "+sys", "-sys", "@sys", "\tsys", "\rsys"]
    lines = [json.dumps({"qid": q, "system": s, "docs": ["ley-a", "dof-c", "ley-b"]})
             for s in systems for q in ("=SP-001", "-SP-002", "@MD-001")]  # fmt: skip
    rankings = tmp_path / "rankings.jsonl"
    rankings.write_text("\n".join(lines) + "\n", "utf-8")
    res = CliRunner().invoke(app, ["-q", "evaluate", "--goldset", str(gs), "--rankings", str(rankings),
                                   "--runs-dir", str(tmp_path / "r"), "--run-id", "=run", "--bootstrap-reps", "200",
                                   "--format", fmt])  # fmt: skip
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(io.StringIO(res.stdout), delimiter="," if fmt == "csv" else "\t"))
    assert tuple(rows[0]) == COLUMNS and rows
    assert {r["run_id"] for r in rows} == {"'=run"}
    assert {r["system"] for r in rows} == {"'" + s for s in systems}
    q = [r for r in rows if r["table"] == "question"]
    assert {r["qid"] for r in q} == {"'=SP-001", "'-SP-002", "'@MD-001"}
    assert {r["category"] for r in q} == {"'+single", "'\tsingle", "'\rmulti"}
    for r in rows:  # no cell starts a formula; every value is still a number
        assert not any(v and v[0] in FORMULA_PREFIXES for v in r.values()), r
        assert r["value"] == "" or 0.0 <= float(r["value"]) <= 1.0


def test_suite_csv_neutralises_a_population_label(tmp_path):
    pop = tmp_path / "pop.csv"
    pop.write_text("doc_id,hit\n" + "".join(f"d{i},{i % 2}\nd{i},{(i // 2) % 2}\n" for i in range(12)), "utf-8")
    spec = PopulationSpec(str(pop), label='=HYPERLINK("http://evil")')
    run_suite([spec], reps=10, ks=(5,), b=39, types=0, pps=False, out_dir=tmp_path / "s")
    rows = list(csv.DictReader(io.StringIO((tmp_path / "s" / "suite.csv").read_text("utf-8"))))
    assert rows and {r["population"] for r in rows} == {'\'=HYPERLINK("http://evil")'}
    assert all(0.0 <= float(r["coverage"]) <= 1.0 for r in rows)
