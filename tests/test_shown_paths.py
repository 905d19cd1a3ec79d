"""Issue 42 item 13: the HTML report, the Markdown PR comment, the JUnit XML and ``goldset apply``'s output show paths
relative to the working directory (or the folder's name), never an absolute path of the machine; run manifests and
JSON keep the paths as recorded."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from test_scoring_checks import Fixture
from typer.testing import CliRunner

from harness.cli import app
from harness.relpath import shown_path

REPO = Path(__file__).resolve().parents[1]
BASELINE = REPO / "runs" / "baselines" / "mx-leyes-dof-eval-v1-six-systems"


def test_shown_path_rules(tmp_path):
    assert shown_path(tmp_path / "runs" / "a", cwd=tmp_path) == "runs/a"
    assert shown_path(tmp_path / "shared" / "c", cwd=tmp_path / "p") == "../shared/c"
    assert shown_path("/home/u/data/ds", cwd="/tmp/ci") == "ds"  # unrelated trees: the folder's name
    assert shown_path("runs/a", cwd="/anything") == "runs/a" and shown_path(None) == "" and shown_path("-") == "-"


def test_gate_comment_junit_and_html_report_hold_no_absolute_path(tmp_path, monkeypatch):
    run = tmp_path / "work" / "runs" / BASELINE.name
    shutil.copytree(BASELINE, run)
    monkeypatch.chdir(tmp_path / "work")
    gate = ["gate", "--baseline", str(run), "--candidate", str(run), "--baseline-system", "bm25"]
    gate += ["--candidate-system", "w0.75"]
    md = CliRunner().invoke(app, [*gate, "--format", "markdown"])
    assert md.exit_code == 0, md.output
    assert f"w0.75 (runs/{BASELINE.name}) - bm25 (runs/{BASELINE.name})" in md.stdout
    junit = CliRunner().invoke(app, [*gate, "--format", "junit"])
    assert junit.exit_code == 0 and f'value="runs/{BASELINE.name} (bm25)"' in junit.stdout
    out = tmp_path / "work" / "report.html"
    rep = CliRunner().invoke(app, ["report", str(run), "--out", str(out)])
    assert rep.exit_code == 0, rep.output
    html = out.read_text("utf-8")
    assert f"<code>runs/{BASELINE.name}</code>" in html
    cmp = CliRunner().invoke(app, ["compare", str(run), str(run), "--metric", "mrr", "--reps", "200", "--format", "md"])
    assert f"### Paired differences B - A (runs/{BASELINE.name} vs runs/{BASELINE.name})" in cmp.stdout
    for text in (md.stdout, junit.stdout, html, cmp.stdout):
        assert str(tmp_path) not in text
    js = json.loads(CliRunner().invoke(app, [*gate, "--format", "json"]).stdout)["data"]
    assert js["baseline"] == str(run)  # JSON keeps the path as given


def test_goldset_apply_shows_the_dataset_and_contract_relative(tmp_path, monkeypatch):
    fx = Fixture(tmp_path)
    ds = fx.build()
    corr = tmp_path / "c.jsonl"
    corr.write_text(json.dumps({"id": "MO-001", "patch": [{"op": "replace", "path": "/difficulty", "value": "hard"}]}))
    monkeypatch.chdir(tmp_path)
    args = ["goldset", "apply", str(ds), "--correction", str(corr), "--contract", str(fx.contract)]
    res = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "b"), "--structural-only"])
    assert res.exit_code == 0, res.output
    assert str(tmp_path) not in res.stdout
    assert f"contract {shown_path(fx.contract)}" in " ".join(res.stdout.split())
    assert "wrote b (version" in res.stdout
