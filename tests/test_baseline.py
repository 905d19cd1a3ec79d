"""The committed baseline record is the project's reference: re-running its systems with its recorded options must
give every per-question metric exactly and every interval bound to a relative 1e-12.

A change that moves a number here is either a fix (regenerate the baseline in a commit of its own and give old -> new
values) or a bug.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
from conftest import REAL_CORPUS, REAL_GOLDSET, REPO

from harness.evaluation.pipeline import RunOptions, run
from harness.metrics import METRIC_SETS
from harness.retrieve.registry import SystemPlan
from harness.retrieve.vector import VectorOptions

pytestmark = [pytest.mark.realcorpus, pytest.mark.slow]
WORKDIR = Path(os.environ.get("HARNESS_WORKDIR", REPO / ".harness"))
BASELINE = REPO / "runs" / "baselines" / "mx-leyes-dof-eval-v1-six-systems"


def _recorded_systems(manifest: dict) -> tuple[list[str] | SystemPlan, RunOptions]:
    """The systems and options the manifest records: its ``system_options`` (every system's kind, typed options and
    inputs) when it has them; otherwise (a record older than the system registry, such as the committed baseline) its
    system names with the ``vector`` options read back from ``system_configs``."""
    depths = manifest["depths"]
    opts = dict(
        doc_depth=depths.get("document", depths.get("documents")),  # schema 2 names levels document / chunk
        chunk_depth=depths.get("chunk", depths.get("chunks")),
        ks=tuple(manifest["ks"]),
        clustering=manifest["clusters"]["mode"],
        seed=manifest["seed"],
        bootstrap_reps=manifest["bootstrap_reps"],
        level=manifest["level"],
    )
    if "system_options" in manifest:
        return SystemPlan.from_record(manifest["system_options"], manifest["systems"]), RunOptions(**opts)
    vec = manifest["system_configs"].get("vector", {})
    defaults = {}
    if vec:
        cov = vec.get("coverage", {})
        defaults["vector"] = VectorOptions(
            model=vec["model_id"],  # the id is an alias of its registry name ("wordllama-l2-supercat-256": wordllama)
            binarize=vec.get("binarize", "sign"),
            backend=vec.get("backend", "sqlite-vec"),
            index_fraction=cov.get("index_fraction"),
            until=cov.get("until"),
            rescore=vec.get("rescore", 0),  # a record older than rescoring ranked by Hamming alone
        )
    return list(manifest["systems"]), RunOptions(**opts, system_defaults=defaults)


@pytest.fixture(scope="module")
def rerun(tmp_path_factory) -> Path:
    manifest = json.loads((BASELINE / "manifest.json").read_text())
    systems, options = _recorded_systems(manifest)
    runs = tmp_path_factory.mktemp("baseline-rerun")
    return run(REAL_GOLDSET, REAL_CORPUS, systems, workdir=WORKDIR, runs_dir=runs, run_id="rerun", options=options)


def _rows(path: Path) -> dict[tuple[str, str], dict]:
    out = {}
    for line in (path / "per_question.jsonl").read_text().splitlines():
        row = json.loads(line)
        out[(row["system"], row["qid"])] = row["metrics"]
    return out


def test_every_per_question_metric_is_exactly_the_baseline(rerun: Path):
    old, new = _rows(BASELINE), _rows(rerun)
    assert sorted(old) == sorted(new)
    diffs = [(k, m, old[k][m], new[k].get(m)) for k in old for m in old[k] if new[k].get(m) != old[k][m]]
    assert not diffs, diffs[:10]


def test_every_interval_bound_is_the_baseline_to_1e12(rerun: Path):
    old = json.loads((BASELINE / "summary.json").read_text())["systems"]
    new = json.loads((rerun / "summary.json").read_text())["systems"]
    assert list(old) == list(new)
    checked = 0
    for system, slices in old.items():
        assert list(slices) == list(new[system]), system
        for sl, s in slices.items():
            for metric, entry in s["overall"].items():
                got = new[system][sl]["overall"][metric]
                assert got["mean"] == entry["mean"], (system, sl, metric)
                for method, iv in entry["intervals"].items():
                    g = got["intervals"][method]
                    for bound in ("lower", "upper"):
                        a, b = iv[bound], g[bound]
                        ok = a == b or (math.isfinite(a) and math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15))
                        assert ok, (system, sl, metric, method, bound, a, b)
                        checked += 1
    assert checked > 1000


def test_the_rerun_replays_from_its_system_options(rerun: Path, tmp_path):
    """The rerun records every system's kind and typed options: a run from that record alone gives the baseline's
    per-question metrics again."""
    manifest = json.loads((rerun / "manifest.json").read_text())
    systems, options = _recorded_systems(manifest)
    assert isinstance(systems, SystemPlan) and systems.record() == manifest["system_options"]
    assert manifest["system_options"]["vector"]["options"]["model"] == "use"  # the default model, by registry name
    assert manifest["system_options"]["vector"]["options"]["rescore"] == 1  # Hamming candidates rescored (M = 1)
    replay = run(REAL_GOLDSET, REAL_CORPUS, systems, workdir=WORKDIR, runs_dir=tmp_path, run_id="re", options=options)
    old, new = _rows(BASELINE), _rows(replay)
    assert sorted(old) == sorted(new)
    assert all({m: new[k][m] for m in old[k]} == old[k] for k in old)
    # every metric id, the word-budget evidence recall of issue 20 included, is in the record and replayed
    assert all(set(new[k]) == set(old[k]) and set(METRIC_SETS["budget"]) <= set(old[k]) for k in old)
