"""The gate, the sweep and the power plan on the real gold set and the committed baseline (issue 21, done-when).

Candidates are made the way a user makes them: TREC files written from the baseline's own bm25 export
(``runs/baselines/.../trec/bm25.{document,chunk}.run``), scored by ``harness evaluate``, then gated against the
committed baseline's bm25. Nothing below hard-codes a figure of the baseline: the questions demoted are chosen from
its bm25 rows and every expected difference is computed from them, so a regenerated baseline keeps the tests
meaningful.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from conftest import REAL_GOLDSET, REPO
from typer.testing import CliRunner

from harness.cli import app
from harness.evaluation.compare import compare_runs
from harness.evaluation.gate import gate
from harness.evaluation.power import power_plan
from harness.evaluation.runs import load_run
from harness.evaluation.sweep import sweep
from harness.goldset.io import load_goldset
from harness.metrics import question_metrics
from harness.stats import clusters_needed

pytestmark = pytest.mark.realcorpus
BASELINE = REPO / "runs" / "baselines" / "mx-leyes-dof-eval-v1-six-systems"
runner = CliRunner()


def _trec(path: Path) -> dict[str, list[tuple[str, str]]]:
    """``{qid: [(id, score text), ...]}`` in rank order."""
    by: dict[str, list[tuple[int, str, str]]] = defaultdict(list)
    for line in path.read_text("utf-8").splitlines():
        qid, _q0, doc, rank, score, _tag = line.split()
        by[qid].append((int(rank), doc, score))
    return {q: [(d, s) for _r, d, s in sorted(v)] for q, v in by.items()}


def _lines(tag: str, ranked: dict[str, list[tuple[str, str]]], demote: dict[str, int]) -> list[str]:
    """TREC lines of ``ranked``; a question in ``demote`` has its first document moved to rank ``demote[q]`` and
    scores rewritten as ``n, n - 1, ..., 1`` (the order alone decides)."""
    out = []
    for q in sorted(ranked):
        ids = [d for d, _ in ranked[q]]
        if q in demote:
            ids.insert(demote[q] - 1, ids.pop(0))
            out += [f"{q} Q0 {d} {i} {len(ids) - i + 1} {tag}" for i, d in enumerate(ids, start=1)]
        else:
            out += [f"{q} Q0 {d} {i} {s} {tag}" for i, (d, s) in enumerate(ranked[q], start=1)]
    return out


def _rr_after(rec, ranked: list[tuple[str, str]], to: int, depth: int) -> float:
    ids = [d for d, _ in ranked]
    ids.insert(to - 1, ids.pop(0))
    qr = question_metrics(rec, [(d, float(len(ids) - i)) for i, d in enumerate(ids)], None, doc_depth=depth)
    return qr.metrics["mrr"]


@pytest.fixture(scope="module")
def candidates(tmp_path_factory) -> dict:
    """One ``harness evaluate`` run holding three candidates made from the baseline's bm25 export:

    * ``same`` - the export unchanged;
    * ``tiny`` - one question's gold document moved from rank 1 to 2 (reciprocal rank 1 -> 1/2);
    * ``worse`` - six questions in six different clusters, each gold document moved from rank 1 to 4 (1 -> 1/4).
    """
    tmp = tmp_path_factory.mktemp("gate-real")
    base = load_run(BASELINE)
    labels = base.clusters()
    docs = _trec(BASELINE / "trec" / "bm25.document.run")
    chunks = _trec(BASELINE / "trec" / "bm25.chunk.run")
    gold = load_goldset(REAL_GOLDSET).by_id()
    depth = base.manifest.depths.document
    rows = {r.qid: r for r in base.rows("bm25")}
    at_one = [q for q in sorted(rows) if rows[q].metrics["mrr"] == 1.0 and q in docs]
    tiny = next(q for q in at_one if _rr_after(gold[q], docs[q], 2, depth) == 0.5)
    worse: list[str] = []
    for q in at_one:
        if labels[q] not in {labels[x] for x in worse} and _rr_after(gold[q], docs[q], 4, depth) == 0.25:
            worse.append(q)
        if len(worse) == 6:
            break
    assert len(worse) == 6
    lines = []
    for tag, demote in (("same", {}), ("tiny", {tiny: 2}), ("worse", dict.fromkeys(worse, 4))):
        lines += _lines(tag, docs, demote) + _lines(tag, chunks, {})
    (tmp / "candidates.run").write_text("\n".join(lines) + "\n", "utf-8")
    r = runner.invoke(app, ["evaluate", "--goldset", str(REAL_GOLDSET), "--rankings", str(tmp / "candidates.run"),
                            "--runs-dir", str(tmp), "--run-id", "cands", "--format", "json"])  # fmt: skip
    assert r.exit_code == 0, r.output
    return {"tmp": tmp, "run": tmp / "cands", "tiny": tiny, "worse": worse, "n": len(rows)}


def _gate(candidates, system: str, *extra: str):
    tmp = candidates["tmp"]
    args = ["gate", "--baseline", str(BASELINE), "--candidate", str(candidates["run"]), "--system-baseline", "bm25",
            "--system-candidate", system, "--metric", "mrr", "--margin", "0.02", "--verdict",
            str(tmp / f"{system}.json"), *extra]  # fmt: skip
    r = runner.invoke(app, args)
    return r, json.loads((tmp / f"{system}.json").read_text("utf-8"))


def _differences(candidates, system: str) -> np.ndarray:
    a = load_run(BASELINE).metric_vector("bm25", "mrr")
    b = load_run(candidates["run"]).metric_vector(system, "mrr")
    return np.array([b[q] - a[q] for q in sorted(a)])


def test_identical_candidate_passes_exit_0(candidates):
    d = _differences(candidates, "same")
    assert np.all(d == 0)  # evaluate reproduces the baseline's bm25 from its own export, question by question
    r, v = _gate(candidates, "same")
    assert r.exit_code == 0 and v["decision"] == "PASS", r.output
    assert "exactly 0" in v["reason"] and v["checks"][0]["minimum_detectable_difference"] is None


def test_one_question_a_rank_lower_is_inconclusive_exit_3(candidates):
    d = _differences(candidates, "tiny")
    n = candidates["n"]
    assert np.count_nonzero(d) == 1 and d.mean() == pytest.approx(-0.5 / n, abs=1e-12)  # -0.0119 on 42 questions
    r, v = _gate(candidates, "tiny")
    assert r.exit_code == 3 and v["decision"] == "INCONCLUSIVE", r.output
    c = v["checks"][0]
    assert c["lower"] < -0.02 < c["upper"]  # neither non-inferiority nor a loss beyond the margin is shown
    assert "minimum detectable difference not estimable: one cluster" in c["reason"]
    assert "INCONCLUSIVE: mrr tiny - bm25 = -0.0119" in r.stdout
    for policy, code in (("fail", 1), ("pass", 0)):
        r, _ = _gate(candidates, "tiny", "--on-inconclusive", policy)
        assert r.exit_code == code


def test_six_questions_three_ranks_lower_fail_exit_1(candidates):
    d = _differences(candidates, "worse")
    n = candidates["n"]
    assert np.count_nonzero(d) == 6 and d.mean() == pytest.approx(-6 * 0.75 / n, abs=1e-12)  # -0.107 on 42
    r, v = _gate(candidates, "worse")
    assert r.exit_code == 1 and v["decision"] == "FAIL", r.output
    c = v["checks"][0]
    assert c["upper"] < -0.02 and c["reason"].startswith("worse than the margin: upper bound")
    assert v["goldset"]["name"] == load_run(BASELINE).manifest.goldset.name
    assert v["missing_questions"] == {"baseline": 0, "candidate": 0}


def test_sweep_shows_bm25_alone_beside_the_chosen_fusion_on_test():
    """Issue 21: the sweep picked a fusion on dev and reported it on test without bm25 alone (0.716 against the
    fusion's 0.689 with the baseline of gold set 1.0.0): both are now in the result, with the paired difference."""
    res = sweep(BASELINE, None, "mrr", goldset_path=REAL_GOLDSET)
    base = load_run(BASELINE)
    test = [r.qid for r in base.rows("bm25") if r.split == "test"]
    chosen, bm25, vector = res.test
    assert (bm25.system, vector.system) == ("bm25", "vector") and len(test) == res.n_test
    recorded = base.metric_vector("bm25", "mrr")
    assert bm25.per_question == {q: recorded[q] for q in test}  # bm25 alone is the run's own bm25
    assert bm25.mean == pytest.approx(np.mean([recorded[q] for q in test]), abs=1e-12)
    if chosen.system in base.systems:  # the chosen setting is one of the run's systems: the same numbers
        own = base.metric_vector(chosen.system, "mrr")
        assert chosen.per_question == {q: own[q] for q in test}
    assert bm25.diff == pytest.approx(chosen.mean - bm25.mean, abs=1e-12)
    iv = bm25.paired_interval
    assert iv["lower"] <= bm25.diff <= iv["upper"] and iv["n"] == res.n_test
    # the same comparison through compare --split test, question for question
    if chosen.system in base.systems:  # (a setting the run does not hold is fused by the sweep alone)
        rep = compare_runs(BASELINE, BASELINE, metrics=("mrr",), system_a="bm25", system_b=chosen.system, split="test")
        assert rep.comparisons[0].diff == pytest.approx(chosen.mean - bm25.mean, abs=1e-12)


def test_power_plan_on_the_baseline_plans_with_the_deff_it_prints():
    plan = power_plan(BASELINE, system="w0.75", baseline=BASELINE, system_baseline="bm25", delta=0.02)
    assert plan["icc_used"] == max(plan["icc"], 0.0) and plan["sided"] == "one-sided"
    want = clusters_needed(plan["icc_used"], plan["mean_cluster_size"], plan["cv_cluster_size"], plan["sd"], 0.02)
    assert plan["deff"] == want["deff"] and plan["clusters_needed"] == want["clusters"]
    assert f"= {plan['deff']:.2f} (" in plan["deff_formula"]
    v = gate(BASELINE, BASELINE, system_baseline="bm25", system_candidate="w0.75", margin=0.02)
    c = v.checks[0]
    if c.clusters_needed is not None:  # the gate's "needs about N clusters" is the power plan's N
        assert c.clusters_needed == plan["clusters_needed"] and f"needs about {plan['clusters_needed']}" in c.reason


def test_gate_on_the_test_split(candidates):
    r, v = _gate(candidates, "worse", "--split", "test")
    base = load_run(BASELINE)
    test = {r.qid for r in base.rows("bm25") if r.split == "test"}
    assert v["split"] == "test" and v["n_questions"] == len(test)
    moved = [q for q in candidates["worse"] if q in test]
    assert v["checks"][0]["diff"] == pytest.approx(-0.75 * len(moved) / len(test), abs=1e-12)
    assert r.exit_code == {"PASS": 0, "FAIL": 1, "INCONCLUSIVE": 3}[v["decision"]]
