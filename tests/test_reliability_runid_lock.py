"""Issue 44 item 3: two writers of one run id at once never replace each other's record.

Before the fix two ``harness run ... --run-id X --overwrite`` started together (X existing) both exited 0 and both
printed ``run record: runs/X``: the one that finished last silently replaced the other's record. Now a writer holds
the run id (:func:`harness.evaluation.runs.run_id_lock`, an ``fcntl.flock`` on ``runs/.X.lock``) from before its
work starts until its record is renamed into place; a second writer of the same id started meanwhile stops at once
with one line (exit 2) and writes nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import write_tiny_corpus, write_tiny_goldset

from harness.errors import HarnessInputError
from harness.evaluation.pipeline import RunOptions, evaluate_rankings, run

HARNESS = [str(Path(sys.executable).with_name("harness"))]  # the console script of this venv

#: A retriever that says it started, then waits for a ``go`` file: the run holding the id stays in flight.
PLUGIN = """
import os, pathlib, time

class Held:
    def search(self, queries, *, doc_depth, chunk_depth):
        signals = pathlib.Path(os.environ["H1_SIGNALS"])
        (signals / "started").write_text("1")
        t = time.monotonic()
        while not (signals / "go").exists() and time.monotonic() - t < 120:
            time.sleep(0.02)
        return [{"docs": [("ley-a", 1.0)]} for _ in queries]

    def config(self):
        return {"name": "held"}
"""


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    corpus = write_tiny_corpus(tmp_path / "corpus")
    gs = write_tiny_goldset(tmp_path / "gs", corpus)
    runs, wd = tmp_path / "runs", tmp_path / "wd"
    run(gs, corpus, ["bm25"], workdir=wd, runs_dir=runs, run_id="X", options=RunOptions(bootstrap_reps=200))
    return {"tmp": tmp_path, "corpus": corpus, "gs": gs, "runs": runs, "wd": wd}


def _argv(w: dict[str, Path], systems: str) -> list[str]:
    return [*HARNESS, "run", "--corpus", str(w["corpus"]), "--goldset", str(w["gs"]), "--systems", systems,
            "--runs-dir", str(w["runs"]), "--run-id", "X", "--overwrite", "--workdir", str(w["wd"]),
            "--bootstrap-reps", "200", "--format", "json"]  # fmt: skip


def _wait_for(path: Path, proc: subprocess.Popen, timeout: float = 120) -> None:
    t = time.monotonic()
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - t < timeout, f"{path} never appeared"
        time.sleep(0.05)


def test_two_overwriting_runs_of_one_id_at_once_the_second_stops_and_the_first_record_stays(world):
    """Two real processes: the first holds X (its retriever waits), the second, started meanwhile, exits 2 with one
    line naming --run-id and the first's pid; the record in place at the end is the first's, complete and hashed."""
    tmp = world["tmp"]
    (tmp / "held.py").write_text(PLUGIN, "utf-8")
    signals = tmp / "signals"
    signals.mkdir()
    env = {**os.environ, "H1_SIGNALS": str(signals)}
    first = subprocess.Popen(_argv(world, f"held=py:{tmp / 'held.py'}:Held"), cwd=tmp, env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:
        _wait_for(signals / "started", first)
        second = subprocess.run(_argv(world, "bm25"), cwd=tmp, env=env, text=True, capture_output=True, timeout=300)
    finally:
        (signals / "go").write_text("1")
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert second.returncode == 2, second.stderr
    line = second.stderr.strip()
    assert len(line.splitlines()) == 1, second.stderr
    assert line.startswith(f"error: --run-id {world['runs'] / 'X'}: another harness process (pid {first.pid})")
    assert "nothing written" in line and second.stdout == ""
    man = json.loads((world["runs"] / "X" / "manifest.json").read_text("utf-8"))
    assert sorted(man["systems"]) == ["held"]  # the first writer's record, not replaced
    from harness.evaluation.runs import load_run

    assert load_run(world["runs"] / "X").manifest.run_id == "X"  # complete: its hashes verify
    assert sorted(p.name for p in world["runs"].iterdir()) == ["X"]  # no lock file or temporary left


@pytest.mark.parametrize("writer", ["run", "evaluate"])
def test_a_writer_of_a_held_run_id_stops_before_any_work(world, writer):
    """In one process (the lock is per open file): run and evaluate both hold the id for their whole call."""
    from harness.evaluation.runs import run_id_lock

    before = {p.name: p.read_bytes() for p in (world["runs"] / "X").rglob("*") if p.is_file()}
    rankings = world["tmp"] / "r.jsonl"
    rankings.write_text(json.dumps({"qid": "SP-001", "system": "x", "docs": ["ley-a"]}) + "\n", "utf-8")
    with run_id_lock(world["runs"], "X"):
        with pytest.raises(HarnessInputError, match=r"^--run-id .*X: another harness process \(pid \d+\) is writing"):
            if writer == "run":
                run(world["gs"], world["corpus"], ["bm25"], workdir=world["wd"], runs_dir=world["runs"], run_id="X",
                    overwrite=True, options=RunOptions(bootstrap_reps=200))  # fmt: skip
            else:
                evaluate_rankings(world["gs"], rankings, runs_dir=world["runs"], run_id="X", overwrite=True)
    assert {p.name: p.read_bytes() for p in (world["runs"] / "X").rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in world["runs"].iterdir()) == ["X"]  # the claim's file is gone with the claim
    evaluate_rankings(world["gs"], rankings, runs_dir=world["runs"], run_id="X", overwrite=True)  # released: one after
    assert json.loads((world["runs"] / "X" / "manifest.json").read_text("utf-8"))["systems"] == ["x"]


def test_a_failed_run_leaves_no_lock_file_behind(world):
    with pytest.raises(HarnessInputError):
        run(world["gs"], world["corpus"], ["no-such-system"], workdir=world["wd"], runs_dir=world["runs"], run_id="Y")
    assert sorted(p.name for p in world["runs"].iterdir()) == ["X"]
    fresh = world["tmp"] / "new" / "runs"
    with pytest.raises(HarnessInputError):
        run(world["gs"], world["corpus"], ["no-such-system"], workdir=world["wd"], runs_dir=fresh, run_id="Y")
    assert not (world["tmp"] / "new").exists()  # the folders made for the claim are removed again
