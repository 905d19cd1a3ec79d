"""Issue 40 items 3-4: schema 3 records, in each metric entry, the interval shown (``outcome``, ``interval{method, lo,
hi}``, ``evidence{design_id, coverage_min, measured, evidence_sha256}``, ``estimand_id``), chosen when the summary is
built; older records (the committed baseline's) are upgraded in memory on read, never rewritten, and equal a
re-computation field by field; a record whose evidence sha256 differs from the installed file's is chosen again on
read, with one note."""

from __future__ import annotations

import hashlib
import json
import subprocess

import pytest
from conftest import REPO

import harness.evaluation.choice as choice
from harness.evaluation.runs import load_run
from harness.evaluation.subset import resummarise
from harness.stats.evidence import EVIDENCE_PATH

BASELINE = REPO / "runs" / "baselines" / "mx-leyes-dof-eval-v1-six-systems"


def _digests() -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(BASELINE.rglob("*")) if p.is_file()}


def test_the_committed_baseline_upgrades_on_read_and_equals_a_recomputation():
    before = _digests()
    raw_rows = [json.loads(x) for x in (BASELINE / "per_question.jsonl").read_text("utf-8").splitlines()]
    run = load_run(BASELINE, log=None)
    assert run.upgraded_from is not None and run.manifest.schema_version == 3
    # per-question values read back exactly
    assert [r.metrics for r in run.per_question] == [r["metrics"] for r in raw_rows]
    sha = hashlib.sha256(EVIDENCE_PATH.read_bytes()).hexdigest()
    again = resummarise(run)  # the one summariser over the stored rows, with the recorded design
    for system, slices in run.summary.systems.items():
        for metric, entry in slices["all"].overall.items():
            other = again.summary.systems[system]["all"].overall[metric]
            assert entry.mean == other.mean, (system, metric)
            # every recorded method is recomputed; the only new one is bca (issue 41, registered after the baseline)
            assert set(entry.intervals) <= set(other.intervals), (system, metric)
            assert set(other.intervals) - set(entry.intervals) <= {"bca"}, (system, metric)
            for method, iv in entry.intervals.items():  # every bound of every method (to rounding: a few ulps)
                got = (other.intervals[method].lower, other.intervals[method].upper)
                assert (iv.lower, iv.upper) == pytest.approx(got, rel=1e-12, abs=1e-15), (system, metric, method)
            # the fields filled on read are the ones the summariser chooses
            assert (entry.outcome, entry.evidence, entry.estimand_id) == (
                other.outcome,
                other.evidence,
                other.estimand_id,
            ), (system, metric)
            assert (entry.interval is None) == (other.interval is None), (system, metric)
            if entry.interval is not None:
                assert entry.interval.method == other.interval.method, (system, metric)
            if entry.mean is not None:
                shown = entry.intervals[entry.interval.method]
                assert (entry.interval.lo, entry.interval.hi) == (shown.lower, shown.upper)
                assert entry.evidence.evidence_sha256 == sha and entry.estimand_id == "srs"
    mrr, hit = (run.summary.systems["bm25"]["all"].overall[m] for m in ("mrr", "hit@1"))
    assert (mrr.outcome, hit.outcome) == ("unit", "binary") and mrr.interval.method == "cr2_logit"
    assert mrr.evidence.measured and mrr.evidence.coverage_min is not None
    assert run.summary.warnings == []  # an upgrade is not a changed evidence file: no note
    # never rewritten
    assert _digests() == before
    status = subprocess.run(["git", "status", "--porcelain", "--", str(BASELINE)], cwd=REPO, capture_output=True)
    assert status.stdout == b""


def test_a_changed_evidence_file_is_chosen_again_on_read_with_one_note(tiny_run, monkeypatch):
    fresh = load_run(tiny_run, log=None)
    entry = fresh.summary.systems["bm25"]["all"].overall["mrr"]
    assert entry.evidence.evidence_sha256 == choice.evidence_sha256()
    monkeypatch.setattr(choice, "evidence_sha256", lambda: "0" * 64)
    again = load_run(tiny_run, log=None)
    notes = [w for w in again.summary.warnings if "coverage evidence file changed" in w]
    assert len(notes) == 1
    moved = again.summary.systems["bm25"]["all"].overall["mrr"]
    assert moved.evidence.evidence_sha256 == "0" * 64 and moved.interval == entry.interval
    assert moved.intervals == entry.intervals and moved.mean == entry.mean


@pytest.fixture
def tiny_run(tmp_path, tiny_goldset):
    from harness.evaluation.pipeline import RunOptions, evaluate_rankings

    lines = [
        {"qid": q, "system": s, "docs": [[d, 1.0 - i / 10] for i, d in enumerate(order)]}
        for q, order in (("SP-001", ["ley-a", "dof-c"]), ("SP-002", ["ley-a", "dof-c"]), ("MD-001", ["ley-b"]))
        for s in ("bm25",)
    ]
    rankings = tmp_path / "rankings.jsonl"
    rankings.write_text("\n".join(json.dumps(x) for x in lines) + "\n", "utf-8")
    return evaluate_rankings(
        tiny_goldset, rankings, runs_dir=tmp_path / "runs", run_id="r", options=RunOptions(bootstrap_reps=200)
    )
