"""The plugin contract (issue 26, items 4, 5, 6, 9 and 16): whatever a ``py:`` retriever or reranker does, the run
ends with its record or with one line naming the system (exit 2); stdout holds only the result; the working
directory and the record's place do not move; unknown ids are warned about."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, write_tiny_corpus, write_tiny_goldset
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import HarnessInputError
from harness.retrieve.plugin import check_json_value, check_scores, plugin_call

GOOD = """
class R:
    def search(self, queries, *, doc_depth, chunk_depth):
        return [{"docs": [("ley-a", 2.0), ("ley-b", 1.0)]} for _ in queries]
"""


@pytest.fixture
def tiny(tmp_path):
    corpus = write_tiny_corpus(tmp_path / "corpus")
    return corpus, write_tiny_goldset(tmp_path / "gs", corpus), tmp_path


def plugin(tmp: Path, code: str, name: str = "mine.py") -> Path:
    path = tmp / name
    path.write_text(code, "utf-8")
    return path


def run(tiny, systems: str, *extra: str, run_id: str = "r"):
    corpus, goldset, tmp = tiny
    args = ["run", "--corpus", corpus, "--goldset", goldset, "--systems", systems, "--workdir", tmp / "wd"]
    args += ["--runs-dir", tmp / "runs", "--run-id", run_id, *extra]
    return CliRunner().invoke(app, [str(a) for a in args])


def one_error_line(r, *needles: str) -> str:
    lines = [x for x in r.output.splitlines() if x.startswith("error:")]
    assert r.exit_code == 2 and len(lines) == 1, r.output
    assert "Traceback" not in r.output, r.output
    for n in needles:
        assert n in lines[0], r.output
    return lines[0]


# ---------------------------------------------------------------------------------------------------------------
# item 4: SystemExit and any BaseException from plugin code
# ---------------------------------------------------------------------------------------------------------------

EXITS = {
    "sys.exit(0) in search": GOOD.replace("return [", "import sys; sys.exit(0)\n        return ["),
    "sys.exit(3) in search": GOOD.replace("return [", "import sys; sys.exit(3)\n        return ["),
    "argparse at import": "import argparse\nargparse.ArgumentParser().parse_args(['--bogus'])\n" + GOOD,
    "sys.exit in the factory": GOOD + "\ndef make():\n    raise SystemExit('bye')\n",
    "GeneratorExit in config()": GOOD + "    def config(self):\n        raise GeneratorExit()\n",
}


@pytest.mark.parametrize("case", list(EXITS))
def test_a_plugin_that_exits_is_exit_2_naming_the_system(tiny, case):
    path = plugin(tiny[2], EXITS[case])
    attr = "make" if "factory" in case else "R"
    r = run(tiny, f"mine=py:{path}:{attr}")
    line = one_error_line(r, f"py:{path}:{attr}")
    assert "SystemExit" in line or "GeneratorExit" in line
    assert not (tiny[2] / "runs" / "r").exists()


def test_a_known_item_plugin_that_exits_is_exit_2(tmp_path):
    from test_cli_known_item import write_corpus

    corpus = write_corpus(tmp_path / "corpus")
    path = plugin(tmp_path, EXITS["sys.exit(0) in search"])
    r = CliRunner().invoke(
        app, ["known-item", "--corpus", str(corpus), "--out", str(tmp_path / "ki"), "--systems", f"mine=py:{path}:R"]
    )
    one_error_line(r, "system mine", "SystemExit")


def test_a_reranker_that_exits_or_fails_or_returns_strings_is_exit_2(tiny):
    tmp = tiny[2]
    for body, needle in (
        ("import sys; sys.exit(0)", "SystemExit"),
        ("raise RuntimeError('model gone')", "RuntimeError: model gone"),
        ("return ['high'] * len(pairs)", "score 'high' is not a finite number"),
        ("return ['1.5'] * len(pairs)", "score '1.5' is not a finite number"),
        ("return [10**400] * len(pairs)", "does not fit a float"),
        ("return [1.0]", "scores for"),
    ):
        path = plugin(tmp, f"class Rr:\n    def predict(self, pairs):\n        {body}\n", "rr.py")
        r = run(tiny, f"two-stage[reranker=py:{path}:Rr]:bm25")
        one_error_line(r, "system two-stage[reranker=", "predict", needle)


def test_plugin_call_keeps_keyboard_interrupt_and_restores_the_folder(tmp_path):
    here = os.getcwd()

    def interrupted():
        os.chdir(tmp_path)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        plugin_call("system x", "search", interrupted)
    assert os.getcwd() == here
    with pytest.raises(HarnessInputError, match=r"^system x: search failed \(SystemExit: 4\)$"):
        plugin_call("system x", "search", sys.exit, 4)


# ---------------------------------------------------------------------------------------------------------------
# item 5: plugin output never reaches stdout
# ---------------------------------------------------------------------------------------------------------------

NOISY = """
import os, sys
print("import says hi")
class R:
    def __init__(self):
        print("init says hi")
    def search(self, queries, *, doc_depth, chunk_depth):
        print("search says hi")
        sys.stdout.write("raw write\\n")
        os.write(1, b"fd 1 write\\n")
        return [{"docs": [("ley-a", 2.0), ("ley-b", 1.0)]} for _ in queries]
    def config(self):
        print("config says hi")
        return {"name": "noisy"}
"""


@pytest.mark.slow  # a subprocess (the real file descriptor 1)
def test_plugin_prints_go_to_stderr_and_json_stdout_is_exactly_the_result(tiny):
    corpus, goldset, tmp = tiny
    path = plugin(tmp, NOISY)
    cmd = [sys.executable, "-m", "harness", "run", "--corpus", str(corpus), "--goldset", str(goldset)]
    cmd += ["--systems", f"bm25,mine=py:{path}:R", "--workdir", str(tmp / "wd"), "--runs-dir", str(tmp / "runs")]
    cmd += ["--run-id", "j", "--format", "json", "--bootstrap-reps", "100"]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=300)
    assert p.returncode == 0, p.stderr
    envelope = json.loads(p.stdout)  # the whole of stdout is one JSON document
    assert isinstance(envelope, dict)
    for said in ("import says hi", "init says hi", "search says hi", "raw write", "fd 1 write", "config says hi"):
        assert said in p.stderr and said not in p.stdout


# ---------------------------------------------------------------------------------------------------------------
# item 6: values that passed the checks and crashed the end of the run
# ---------------------------------------------------------------------------------------------------------------

DEEP = "x = []\nfor _ in range(5000):\n    x = [x]\n"
BAD_VALUES = {
    "score 10**400": ('"docs": [("ley-a", 10**400)]', "", "does not fit a float"),
    "a set in flags": ('"docs": [("ley-a", 1.0)], "flags": {"s": {1, 2}}', "", "flags: not strict JSON"),
    "an object in flags": ('"docs": [("ley-a", 1.0)], "flags": {"o": object()}', "", "flags: not strict JSON"),
    "5000-deep flags": ('"docs": [("ley-a", 1.0)], "flags": {"d": x}', DEEP, "flags: nested deeper than 64"),
    "NaN in flags": ('"docs": [("ley-a", 1.0)], "flags": {"n": float("nan")}', "", "flags: not strict JSON"),
    "NaN in config()": ('"docs": [("ley-a", 1.0)]', "CFG = {'p': float('nan')}\n", "config(): not strict JSON"),
    "a set in config()": ('"docs": [("ley-a", 1.0)]', "CFG = {'p': {1}}\n", "config(): not strict JSON"),
    "5000-deep config()": ('"docs": [("ley-a", 1.0)]', DEEP + "CFG = {'d': x}\n", "config(): nested deeper"),
}


@pytest.mark.parametrize("case", list(BAD_VALUES))
def test_plugin_values_that_would_crash_later_are_refused_up_front(tiny, case):
    result, prelude, needle = BAD_VALUES[case]
    config = "    def config(self):\n        return CFG\n" if "CFG" in prelude else ""
    code = prelude + (
        "class R:\n    def search(self, queries, *, doc_depth, chunk_depth):\n"
        f"        return [{{{result}}} for _ in queries]\n" + config
    )
    path = plugin(tiny[2], code)
    r = run(tiny, f"mine=py:{path}:R")
    one_error_line(r, "mine", needle)
    assert not (tiny[2] / "runs" / "r").exists()


def test_check_helpers_golden():
    check_json_value({"a": [1, 2.5, "x", None, True]}, "w")
    for bad in ({1}, {"a": float("inf")}, {1: object()}):
        with pytest.raises(HarnessInputError, match="^w: not strict JSON"):
            check_json_value(bad, "w")
    assert check_scores([1, 2.5, 3], 3, "w") == [1.0, 2.5, 3.0]
    with pytest.raises(HarnessInputError, match="not a finite number"):
        check_scores([True, 1.0], 2, "w")
    import numpy as np

    assert check_scores(np.array([[1.0], [2.0]]), 2, "w") == [1.0, 2.0]
    with pytest.raises(HarnessInputError, match="array of <U"):
        check_scores(np.array(["1", "2"]), 2, "w")


def test_the_run_manifest_is_strict_json(tiny):
    path = plugin(tiny[2], GOOD + "    def config(self):\n        return {'inf': 1e308 * 10}\n")
    r = run(tiny, f"mine=py:{path}:R")
    one_error_line(r, "config(): not strict JSON")
    path = plugin(tiny[2], GOOD)
    assert run(tiny, f"mine=py:{path}:R", run_id="ok").exit_code == 0
    text = (tiny[2] / "runs" / "ok" / "manifest.json").read_text("utf-8")
    json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c} in manifest.json"))


# ---------------------------------------------------------------------------------------------------------------
# item 16: a plugin that changes the working directory
# ---------------------------------------------------------------------------------------------------------------

CHDIR = """
import os
os.chdir(os.environ["AWAY"])
class R:
    def __init__(self):
        os.chdir(os.environ["AWAY"])
    def search(self, queries, *, doc_depth, chunk_depth):
        os.chdir(os.environ["AWAY"])
        return [{"docs": [("ley-a", 2.0), ("ley-b", 1.0)]} for _ in queries]
    def config(self):
        os.chdir(os.environ["AWAY"])
        return {}
"""


def test_a_plugin_that_changes_the_working_directory_moves_nothing(tiny, monkeypatch):
    corpus, goldset, tmp = tiny
    away = tmp / "away"
    away.mkdir()
    plugin(tmp, CHDIR)
    monkeypatch.setenv("AWAY", str(away))
    monkeypatch.chdir(tmp)
    args = ["run", "--corpus", "corpus", "--goldset", "gs", "--systems", "bm25,mine=py:mine.py:R"]
    r = CliRunner().invoke(app, [*args, "--workdir", "wd", "--runs-dir", "runs", "--run-id", "c"])
    assert r.exit_code == 0, r.output
    assert os.getcwd() == str(tmp)
    assert (tmp / "runs" / "c" / "manifest.json").is_file()
    assert list(away.iterdir()) == []


# ---------------------------------------------------------------------------------------------------------------
# item 9: unknown ids warned, as evaluate does
# ---------------------------------------------------------------------------------------------------------------


def test_a_plugins_unknown_ids_are_warned_about(tiny):
    code = GOOD.replace('("ley-a", 2.0), ("ley-b", 1.0)', '("ley-a", 2.0), ("ley-zz", 1.0), ("nope", 0.5)')
    path = plugin(tiny[2], code)
    r = run(tiny, f"mine=py:{path}:R")
    assert r.exit_code == 0, r.output
    assert "system mine: 6 of 9 document ids are not in the corpus" in r.output, r.output
    assert "'ley-zz', 'nope'" in r.output
    summary = json.loads((tiny[2] / "runs" / "r" / "summary.json").read_text("utf-8"))
    assert any("6 of 9 document ids" in w for w in summary["warnings"])
