"""One output-format registry: ``--format table|json|markdown`` and ``--out FILE`` on every verb that prints a result,
one JSON envelope per result kind (with the record path where one was written), safe output files."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
import typer
from conftest import REAL_GOLDSET, write_tiny_corpus, write_tiny_goldset
from test_compare import _values, make_run
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import HarnessInputError
from harness.report import formats, markdown_verbs
from harness.report.formats import FORMATS, KINDS, REPORT, Format, Result, check_format, check_output, emit, formats_of

runner = CliRunner()

#: verb -> the option its printed result goes to (``--out`` already names an output folder on the study verbs).
VERBS = {
    ("run",): "--out",
    ("evaluate",): "--out",
    ("validate",): "--out",
    ("compare",): "--out",
    ("gate",): "--out",
    ("power",): "--out",
    ("sweep",): "--out",
    ("known-item",): "--result-out",
    ("coverage",): "--result-out",
    ("goldset", "apply"): "--result-out",
    ("goldset", "split"): "--result-out",
}
OLD_JSON = {("run",), ("evaluate",), ("validate",), ("compare",), ("power",), ("sweep",)}


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def _command(path: tuple[str, ...]):
    cmd = typer.main.get_command(app)
    for name in path:
        cmd = cmd.commands[name]
    return cmd


@pytest.mark.parametrize("verb", list(VERBS), ids=" ".join)
def test_every_verb_takes_format_and_out(verb):
    params = {opt: p for p in _command(verb).params for opt in p.opts}
    assert "--format" in params and params["--format"].default == "table"
    assert VERBS[verb] in params and params[VERBS[verb]].default == "-"
    if verb in OLD_JSON:  # kept for one release, hidden from --help
        assert "--json" in params and params["--json"].hidden


#: The formats of every verb kind (junit is the gate's only, html the report's).
GENERAL = [f.name for f in FORMATS.values() if f.kinds is None]


def test_registry_covers_every_kind_in_every_format():
    assert list(FORMATS) == ["table", "json", "markdown", "junit", "html", "csv", "tsv"]
    assert {f.name: f.extension for f in FORMATS.values()} == {
        "table": "txt", "json": "json", "markdown": "md", "junit": "xml", "html": "html", "csv": "csv",
        "tsv": "tsv",
    }  # fmt: skip
    assert formats_of(None) == GENERAL == ["table", "json", "markdown"]
    assert formats_of("gate") == ["table", "json", "markdown", "junit", "csv", "tsv"]
    assert formats_of("comparison") == ["table", "json", "markdown", "csv", "tsv"]  # one row per pair and metric
    assert formats_of("run") == ["table", "json", "markdown", "csv", "tsv"]  # long tables: harness.report.tables
    assert formats_of(REPORT) == ["markdown", "html", "csv", "tsv"]
    assert set(KINDS) == set(formats._TABLES) == set(markdown_verbs._RENDERERS) - {REPORT}
    assert check_format("md", REPORT) == "markdown" and check_format("md", "run") == "markdown"
    with pytest.raises(HarnessInputError, match="--format html: applies to report only"):
        check_format("html", "run")
    with pytest.raises(HarnessInputError, match="--format json: applies to every verb's result only"):
        check_format("json", REPORT)
    with pytest.raises(HarnessInputError, match="--format: 'pdf' is not one of markdown, html, csv, tsv"):
        check_format("pdf", REPORT)


def test_a_new_format_is_one_renderer_and_one_line(monkeypatch, tmp_path):
    """One ``Format(...)`` entry reaches every verb (its kind checked before any work) and ``harness report``,
    whose default output file takes the format's extension."""
    seen = []

    def render(result, console):
        seen.append(result.kind)
        console.file.write(f"kind: {result.kind}\n")

    monkeypatch.setitem(FORMATS, "yamlish", Format("yamlish", render, "yml", report=True))
    emit(Result("power", {"x": 1}), "yamlish")
    assert seen == ["power"]
    assert check_format("yamlish", "run") == "yamlish" and "yamlish" in formats_of(REPORT)
    a, _b = _values(shift=0.05)
    base = make_run(tmp_path, "base", {"bm25": a})
    monkeypatch.chdir(tmp_path)
    r = invoke("report", base, "--format", "yamlish")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "report.yml").read_text("utf-8") == "kind: report\n" and seen[-1] == REPORT
    r = invoke("power", "--run", base, "--format", "yamlish")
    assert r.exit_code == 0 and r.stdout == "kind: power\n"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("formats")
    corpus = write_tiny_corpus(tmp / "corpus")
    return {"tmp": tmp, "corpus": corpus, "goldset": write_tiny_goldset(tmp / "gs", corpus)}


def _run_args(tiny, run_id):
    return ("run", "--corpus", tiny["corpus"], "--goldset", tiny["goldset"], "--workdir", tiny["tmp"] / "wd",
            "--runs-dir", tiny["tmp"] / "runs", "--run-id", run_id, "--bootstrap-reps", "200")  # fmt: skip


def test_run_json_envelope_carries_the_record_path(tiny):
    r = invoke(*_run_args(tiny, "j"), "--format", "json")
    assert r.exit_code == 0, r.output
    env = json.loads(r.stdout)
    assert list(env) == ["kind", "schema_version", "path", "data"]
    assert env["kind"] == "run" and env["schema_version"] == 3
    assert Path(env["path"]) == tiny["tmp"] / "runs" / "j"
    assert 0 <= env["data"]["systems"]["bm25"]["all"]["overall"]["mrr"]["mean"] <= 1
    saved = json.loads((Path(env["path"]) / "summary.json").read_text("utf-8"))
    evidence = env["data"].pop("coverage_evidence")  # measured coverage of the intervals, beside the record's summary
    assert env["data"] == saved
    # the tiny run's design was not measured: it shows the nearest measured design's default, and says so
    assert evidence["metrics"]["mrr"]["method"] == "cr2_logit" and evidence["estimand"].startswith("mean over")
    assert evidence["metrics"]["mrr"]["chosen_for"].startswith("the nearest measured design")
    assert not evidence["metrics"]["mrr"]["measured"]


def test_out_file_holds_what_stdout_would(tiny, tmp_path):
    first = invoke(*_run_args(tiny, "t1"), "--format", "markdown")
    assert first.exit_code == 0, first.output
    out = tmp_path / "run.md"
    second = invoke(*_run_args(tiny, "t2"), "--format", "markdown", "--out", out)
    assert second.exit_code == 0 and second.stdout == ""
    assert out.read_text("utf-8").replace("t2", "t1") == first.stdout
    assert out.stat().st_mode & 0o644 == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["run.md"]  # no temporary left
    table = tmp_path / "run.txt"
    assert invoke(*_run_args(tiny, "t3"), "--out", table).exit_code == 0
    assert "recall@10" in table.read_text("utf-8") and "\x1b[" not in table.read_text("utf-8")


def test_out_refuses_folders_devices_links_and_missing_parents(tiny, tmp_path):
    dev_null = Path("/dev/null")
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "target.txt")
    for bad, why in (
        (tmp_path, "is a folder"),
        (dev_null, "is not a file"),
        (link, "is a link"),
        (tmp_path / "missing" / "x.json", "does not exist (harness does not create it)"),
    ):
        r = invoke("validate", REAL_GOLDSET, "--format", "json", "--out", bad)
        assert r.exit_code == 2, (bad, r.output)
        assert why in r.output and r.output.strip().count("\n") == 0
    assert stat.S_ISCHR(os.stat(dev_null).st_mode)
    assert not (tmp_path / "missing").exists() and not (tmp_path / "target.txt").exists()
    # a refused output is refused before the verb runs: no run record is written
    r = invoke(*_run_args(tiny, "never"), "--out", tmp_path)
    assert r.exit_code == 2 and not (tiny["tmp"] / "runs" / "never").exists()


def test_unknown_format_is_refused():
    with pytest.raises(HarnessInputError, match="--format: 'xml' is not one of table, json, markdown"):
        formats.check_format("xml")
    r = invoke("power", "--run", "nope", "--format", "xml")
    assert r.exit_code == 2 and "--format: 'xml'" in r.output


def test_judging_verbs_in_every_format(tmp_path):
    a, b = _values(shift=0.05)
    base = make_run(tmp_path, "base", {"bm25": a})
    cand = make_run(tmp_path, "cand", {"new": b})
    for fmt in GENERAL:
        r = invoke("compare", base, cand, "--metrics", "mrr", "--format", fmt)
        assert r.exit_code == 0, r.output
        g = invoke("gate", "--baseline", base, "--candidate", cand, "--verdict", tmp_path / "v.json", "--format", fmt)
        assert g.exit_code == 0, g.output
        p = invoke("power", "--run", base, "--format", fmt)
        assert p.exit_code == 0, p.output
        if fmt == "json":
            assert json.loads(r.stdout)["kind"] == "comparison"
            gate = json.loads(g.stdout)
            assert gate["kind"] == "gate" and gate["data"] == json.loads((tmp_path / "v.json").read_text("utf-8"))
            assert json.loads(p.stdout)["data"]["clusters_needed"] > 0
        elif fmt == "markdown":
            assert r.stdout.startswith("### Paired differences B - A") and "| bm25 | new | mrr |" in r.stdout
            assert g.stdout.startswith("## Gate: PASS (exit 0) on mrr")
            assert p.stdout.startswith("### Power plan: bm25 mrr")
        else:
            assert "paired differences B - A" in r.stdout and g.stdout.startswith("PASS: mrr new - bm25")


def test_validate_exit_code_is_kept_in_every_format():
    for fmt in GENERAL:
        r = invoke("validate", REAL_GOLDSET, "--format", fmt)
        assert r.exit_code == 0, r.output
        if fmt == "markdown":
            assert "**VALID** (corpus rules NOT checked)" in r.stdout
    env = json.loads(invoke("validate", REAL_GOLDSET, "--format", "json").stdout)
    assert env["kind"] == "validation" and env["data"]["exit_code"] == 0 and "path" not in env


def test_check_output_accepts_stdout_and_new_or_regular_files(tmp_path):
    check_output("-")
    check_output(None)
    check_output(tmp_path / "new.json")
    (tmp_path / "old.json").write_text("{}", "utf-8")
    check_output(tmp_path / "old.json")


def test_the_run_kind_carries_the_run_record_schema_version():
    """The registry names the run schema without importing the record models (issue 40 item 7: lazy renderers)."""
    from harness.evaluation.record import RUN_SCHEMA_VERSION
    from harness.report.formats import KINDS

    assert KINDS["run"].schema_version == RUN_SCHEMA_VERSION
