"""The project config file (issue 42 item 8): ``harness.toml`` / ``[tool.harness]``, precedence flag > environment >
harness.toml > [tool.harness] > default, unknown keys refused naming the file and key, and the run manifest
recording where each setting came from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer.main
from conftest import write_tiny_corpus, write_tiny_goldset
from typer.testing import CliRunner

from harness.cli import app
from harness.cli._common import set_verbosity
from harness.config import load_settings

runner = CliRunner()
ENV = ("HARNESS_CONFIG", "HARNESS_CORPUS", "HARNESS_GOLDSET", "HARNESS_SYSTEMS", "HARNESS_MODEL", "HARNESS_RUNS_DIR")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for var in (*ENV, "HARNESS_WORKDIR"):
        monkeypatch.delenv(var, raising=False)
    yield
    set_verbosity()


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    """A project folder with a corpus, a gold set and a harness.toml naming them by relative paths; the working
    directory is a subfolder of it (the config is found by walking up)."""
    write_tiny_corpus(tmp_path / "corpus")
    write_tiny_goldset(tmp_path / "gs", tmp_path / "corpus")
    (tmp_path / "harness.toml").write_text(
        'corpus = "corpus"\ngoldset = "gs"\nsystems = ["bm25", "tfidf"]\nworkdir = "wd"\nruns_dir = "runs"\n'
        '[gate]\nmetrics = "recall@5,mrr"\nmargin = 0.05\n',
        "utf-8",
    )
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    return tmp_path


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def _manifest(project: Path, run_id: str) -> dict:
    return json.loads((project / "runs" / run_id / "manifest.json").read_text("utf-8"))


def test_config_file_supplies_every_setting_and_the_manifest_says_so(project: Path):
    res = invoke("run", "--run-id", "r1", "--bootstrap-reps", "200")
    assert res.exit_code == 0, res.output
    man = _manifest(project, "r1")
    assert man["systems"] == ["bm25", "tfidf"]
    assert man["settings"] == {
        "corpus": "harness.toml",
        "goldset": "harness.toml",
        "systems": "harness.toml",
        "model": "default",
        "workdir": "harness.toml",
        "runs_dir": "harness.toml",
    }
    assert (project / "wd").is_dir() and not (project / "sub" / ".harness").exists()


def test_flag_beats_environment_beats_file(project: Path, monkeypatch):
    monkeypatch.setenv("HARNESS_RUNS_DIR", str(project / "env-runs"))
    monkeypatch.setenv("HARNESS_SYSTEMS", "tfidf")  # a CI recipe's shell variable: not a setting
    env = invoke("run", "--run-id", "env", "--bootstrap-reps", "200")
    assert env.exit_code == 0, env.output
    man = json.loads((project / "env-runs" / "env" / "manifest.json").read_text("utf-8"))
    assert man["systems"] == ["bm25", "tfidf"]
    assert man["settings"]["runs_dir"] == "environment HARNESS_RUNS_DIR"
    assert man["settings"]["systems"] == "harness.toml"
    flag = invoke(
        "run", "--run-id", "flag", "--systems", "bm25", "--runs-dir", project / "runs", "--bootstrap-reps", "200"
    )
    assert flag.exit_code == 0, flag.output
    assert _manifest(project, "flag")["systems"] == ["bm25"]
    assert _manifest(project, "flag")["settings"]["systems"] == "flag"
    assert _manifest(project, "flag")["settings"]["runs_dir"] == "flag"


def test_harness_toml_wins_over_pyproject_with_a_note(project: Path):
    (project / "pyproject.toml").write_text(
        '[project]\nname = "x"\n[tool.harness]\nsystems = "tfidf"\nmodel = "e5-small"\n', "utf-8"
    )
    res = invoke("run", "--run-id", "both", "--bootstrap-reps", "200")
    assert res.exit_code == 0, res.output
    assert "note: systems: harness.toml wins over pyproject.toml [tool.harness]" in res.stderr
    man = _manifest(project, "both")
    assert man["systems"] == ["bm25", "tfidf"]
    assert man["settings"]["systems"] == "harness.toml"
    assert man["settings"]["model"] == "pyproject.toml [tool.harness]"


def test_pyproject_table_alone(tmp_path: Path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[tool.harness]\nsystems = "tfidf"\nruns_dir = "out/runs"\n', "utf-8")
    monkeypatch.chdir(tmp_path)
    settings = load_settings()
    assert settings.values["systems"] == "tfidf"
    assert settings.values["runs_dir"] == str(tmp_path.resolve() / "out" / "runs")  # relative to the file
    assert settings.sources == {"systems": "pyproject.toml [tool.harness]", "runs_dir": "pyproject.toml [tool.harness]"}


def test_no_config_changes_nothing(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    settings = load_settings(environ={})
    assert settings.values == {} and settings.files == ()
    assert settings.default_map(typer.main.get_command(app).commands) == {}


@pytest.mark.parametrize(
    ("text", "where", "line"),
    [
        ("bogus = 1\n", "harness.toml", "unknown key bogus"),
        ("[gate]\nmargins = 0.1\n", "harness.toml", "unknown key gate.margins"),
        ("[gate]\nmargin = -1\n", "harness.toml", "key gate.margin: Input should be greater than or equal to 0"),
        ("systems = 3\n", "harness.toml", "key systems:"),
        ("systems = [\n", "harness.toml", "not TOML"),
        ("[tool.harness]\nbogus = 1\n", "pyproject.toml", "unknown key tool.harness.bogus"),
    ],
)
def test_bad_config_is_refused_naming_file_and_key(tmp_path: Path, monkeypatch, text: str, where: str, line: str):
    (tmp_path / where).write_text(text, "utf-8")
    monkeypatch.chdir(tmp_path)
    res = invoke("run", "--corpus", "c", "--goldset", "g")
    assert res.exit_code == 2
    [err] = res.stderr.splitlines()
    assert err.startswith(f"error: {tmp_path.resolve() / where}: ") and line in err, err


def test_explicit_config_path_and_missing_one(tmp_path: Path, monkeypatch):
    cfg = tmp_path / "ci" / "harness.toml"
    cfg.parent.mkdir()
    cfg.write_text('goldset = "../gs"\n', "utf-8")
    monkeypatch.setenv("HARNESS_CONFIG", str(cfg))
    assert load_settings().values["goldset"] == str(cfg.parent / "../gs")
    monkeypatch.setenv("HARNESS_CONFIG", str(tmp_path / "nope.toml"))
    res = invoke("run", "--corpus", "c", "--goldset", "g")
    assert res.exit_code == 2 and "HARNESS_CONFIG=" in res.stderr and "no such config file" in res.stderr


def test_gate_settings_reach_gate_only(project: Path):
    res = invoke("run", "--run-id", "g", "--systems", "bm25", "--bootstrap-reps", "200")
    assert res.exit_code == 0, res.output
    rec = project / "runs" / "g"
    gate = invoke("gate", "--baseline", rec, "--candidate", rec, "--format", "json")
    assert gate.exit_code == 0, gate.output
    checks = json.loads(gate.stdout)["data"]["checks"]
    assert [c["metric"] for c in checks] == ["recall@5", "mrr"]
    assert {c["margin"] for c in checks} == {0.05}
    dm = load_settings().default_map(typer.main.get_command(app).commands)
    assert dm["gate"]["metric"] == ["recall@5", "mrr"] and dm["gate"]["margin"] == 0.05
    assert "margin" not in dm.get("power", {}) and "metric" not in dm.get("power", {})
