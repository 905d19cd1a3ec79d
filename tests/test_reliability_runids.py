"""Issue 26 item 13: run ids and ``--runs-dir`` are checked before any work, one line and exit 2.

Before the fix a run id over 255 bytes gave a traceback (the folder name is too long for the file system), ids with a
newline, a control character or only blanks were accepted as folder names, and a ``--runs-dir`` naming a file gave a
traceback. :func:`harness.evaluation.runs.check_run_id` refuses them where ``run`` and ``evaluate`` start; an id may
have 200 bytes (a folder name has 255, and the record is first written to a temporary sibling up to 22 bytes longer).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import write_tiny_corpus, write_tiny_goldset
from typer.testing import CliRunner

from harness.cli import app


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("runids")
    corpus = write_tiny_corpus(tmp / "corpus")
    gs = write_tiny_goldset(tmp / "gs", corpus)
    rankings = tmp / "rankings.jsonl"
    rankings.write_text(json.dumps({"qid": "SP-001", "system": "x", "docs": ["ley-a"]}) + "\n", "utf-8")
    (tmp / "a-file").write_text("not a folder\n")
    return {"tmp": tmp, "corpus": corpus, "gs": gs, "rankings": rankings}


BAD_IDS = [
    ("x" * 256, "is 256 bytes long in UTF-8, over the 200 a run id may have"),
    ("é" * 101, "is 202 bytes long in UTF-8"),  # 101 characters, 202 bytes
    ("a\nb", "contains the control character U+000A"),
    ("run\x1b[2J", "contains the control character U+001B"),
    ("tab\there", "contains the control character U+0009"),
    ("   ", "is empty or blank"),
    ("", "is empty or blank"),
    (" lead", "starts or ends with white space"),
    ("../up", "contains '/'"),
    (".hidden", "starts with '.'"),
]


def _one_error_line(r) -> str:
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.output
    return lines[0]


@pytest.mark.parametrize(("run_id", "why"), BAD_IDS, ids=[f"id{i}" for i in range(len(BAD_IDS))])
def test_a_bad_run_id_is_one_line_and_exit_2(inputs, run_id, why):
    runs = inputs["tmp"] / "runs-bad"
    args = ["evaluate", "--goldset", str(inputs["gs"]), "--rankings", str(inputs["rankings"]), "--runs-dir", str(runs)]
    line = _one_error_line(CliRunner().invoke(app, [*args, "--run-id", run_id, "--bootstrap-reps", "100"]))
    assert line.startswith("error: --run-id ") and why in line, line
    assert not runs.exists() or list(runs.iterdir()) == []


def test_run_refuses_a_bad_id_before_any_work(inputs):
    runs, wd = inputs["tmp"] / "runs-run", inputs["tmp"] / "wd"
    args = ["run", "--corpus", str(inputs["corpus"]), "--goldset", str(inputs["gs"]), "--runs-dir", str(runs),
            "--workdir", str(wd)]  # fmt: skip
    line = _one_error_line(CliRunner().invoke(app, [*args, "--run-id", "y" * 300]))
    assert "over the 200" in line and not wd.exists()  # refused before the ingest


@pytest.mark.parametrize("where", ["a-file", "a-file/below"])
def test_runs_dir_naming_a_file_is_one_line_and_exit_2(inputs, where):
    runs = inputs["tmp"] / where
    for verb in (
        ["evaluate", "--goldset", str(inputs["gs"]), "--rankings", str(inputs["rankings"])],
        ["run", "--corpus", str(inputs["corpus"]), "--goldset", str(inputs["gs"]), "--workdir", str(inputs["tmp"])],
    ):
        line = _one_error_line(CliRunner().invoke(app, [*verb, "--runs-dir", str(runs), "--bootstrap-reps", "100"]))
        assert line.startswith(f"error: --runs-dir {runs}: not a folder"), line
    assert (inputs["tmp"] / "a-file").read_text() == "not a folder\n"


def test_a_plain_id_of_200_bytes_is_accepted(inputs):
    runs = inputs["tmp"] / "runs-ok"
    args = ["evaluate", "--goldset", str(inputs["gs"]), "--rankings", str(inputs["rankings"]), "--runs-dir", str(runs)]
    r = CliRunner().invoke(app, [*args, "--run-id", "z" * 200, "--bootstrap-reps", "100", "--format", "json"])
    assert r.exit_code == 0, r.output
    assert (runs / ("z" * 200) / "manifest.json").is_file()
