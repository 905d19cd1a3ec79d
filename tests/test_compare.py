"""compare, gate and power on constructed run records whose true difference is known."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import IncomparableError
from harness.evaluation.compare import compare_runs, gate
from harness.evaluation.power import power_plan
from harness.evaluation.runs import RUN_SCHEMA_VERSION, write_run_record

runner = CliRunner()
CATS = ["single_passage", "multi_document", "monitoring", "cross_reference"]


def make_run(runs: Path, run_id: str, values: dict[str, dict[str, float]], *, n_clusters=20, sha="a" * 64, depth=50):
    """A run record with per-question 'mrr' and 'recall@10' given per system; question i lies in cluster i % n."""
    qids = sorted(next(iter(values.values())))
    labels = {q: f"c{i % n_clusters}" for i, q in enumerate(qids)}
    rows = []
    for system, vals in values.items():
        for i, q in enumerate(qids):
            rows.append(
                {
                    "system": system,
                    "qid": q,
                    "category": CATS[i % len(CATS)],
                    "split": None,
                    "cluster": labels[q],
                    "metrics": {"mrr": vals[q], "recall@10": min(1.0, vals[q] + 0.1)},
                    "flags": {},
                }
            )
    manifest = {
        "schema_version": RUN_SCHEMA_VERSION,
        "run_id": run_id,
        "goldset": {"sha256": sha, "name": "g", "version": "1"},
        "corpus": {"corpus_hash": "h" * 64, "chunker_id": "md-words-v1"},
        "depths": {"document": depth, "chunk": 200},
        "systems": list(values),
        "clusters": {"mode": "components", "n_clusters": n_clusters, "labels": labels},
    }
    return write_run_record(
        runs, run_id, manifest=manifest, per_question=rows, summary={"systems": {}}, trec_runs={}, qrels={}
    )


def _values(n=60, seed=0, shift=0.0, noise=0.02):
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.2, 0.8, n)
    qids = [f"Q-{i:03d}" for i in range(n)]
    a = {q: float(v) for q, v in zip(qids, base, strict=True)}
    b = {q: float(np.clip(v + shift + rng.normal(0, noise), 0, 1)) for q, v in zip(qids, base, strict=True)}
    return a, b


@pytest.mark.parametrize(
    ("shift", "margin", "expected"),
    [(0.05, 0.02, 0), (0.0, 0.02, 0), (-0.10, 0.02, 1), (-0.01, 0.0, 1)],
)
def test_gate_exit_codes_on_known_differences(tmp_path: Path, shift, margin, expected):
    a, b = _values(shift=shift)
    base = make_run(tmp_path, "base", {"bm25": a})
    cand = make_run(tmp_path, "cand", {"new": b})
    v = gate(base, cand, metric="mrr", margin=margin, verdict_path=tmp_path / "verdict.json")
    assert v.exit_code == expected, v.line()
    assert v.diff == pytest.approx(np.mean(list(b.values())) - np.mean(list(a.values())))
    saved = json.loads((tmp_path / "verdict.json").read_text())
    assert saved["decision"] == ("PASS" if expected == 0 else "FAIL")
    assert saved["minimum_detectable_difference"] > 0
    r = runner.invoke(
        app,
        [
            "gate",
            "--baseline",
            str(base),
            "--candidate",
            str(cand),
            "--metric",
            "mrr",
            "--margin",
            str(margin),
            "--verdict",
            str(tmp_path / "v2.json"),
        ],
    )
    assert r.exit_code == expected, r.output
    assert ("PASS" if expected == 0 else "FAIL") in r.output and "minimum detectable difference" in r.output


def test_gate_category_guard_can_fail_alone(tmp_path: Path):
    a, b = _values(shift=0.05)
    qids = sorted(a)
    for i, q in enumerate(qids):
        if CATS[i % len(CATS)] == "monitoring":
            b[q] = max(0.0, a[q] - 0.3)
    base = make_run(tmp_path, "base", {"bm25": a})
    cand = make_run(tmp_path, "cand", {"new": b})
    assert gate(base, cand, metric="recall@10", margin=0.2).exit_code == 0
    v = gate(base, cand, metric="recall@10", margin=0.2, category_guards={"monitoring": 0.05})
    assert v.exit_code == 1 and v.category_guards["monitoring"]["passed"] is False


def test_incomparable_runs_are_refused(tmp_path: Path):
    a, b = _values()
    base = make_run(tmp_path, "base", {"bm25": a})
    other_gold = make_run(tmp_path, "other", {"new": b}, sha="b" * 64)
    other_depth = make_run(tmp_path, "depth", {"new": b}, depth=100)
    for cand, field in ((other_gold, "goldset.sha256"), (other_depth, "depths.document")):
        with pytest.raises(IncomparableError, match=field):
            gate(base, cand)
        r = runner.invoke(app, ["compare", str(base), str(cand)])
        assert r.exit_code == 2 and field in r.output
        r = runner.invoke(app, ["gate", "--baseline", str(base), "--candidate", str(cand)])
        assert r.exit_code == 2


def test_compare_does_not_depend_on_question_order(tmp_path: Path):
    a, b = _values(shift=0.03, noise=0.05)
    r1 = compare_runs(make_run(tmp_path, "a1", {"x": a}), make_run(tmp_path, "b1", {"y": b}), metrics=("mrr",))
    rev_a = dict(reversed(list(a.items())))
    rev_b = dict(reversed(list(b.items())))
    # same questions and clusters, rows written in another order
    p_a = make_run(tmp_path, "a2", {"x": rev_a})
    p_b = make_run(tmp_path, "b2", {"y": rev_b})
    r2 = compare_runs(p_a, p_b, metrics=("mrr",))
    c1, c2 = r1.comparisons[0], r2.comparisons[0]
    assert c1.interval == c2.interval and c1.p_randomization == c2.p_randomization
    assert c1.questions == c2.questions and c1.clusters == c2.clusters


def test_compare_within_one_run_uses_holm(tmp_path: Path):
    a, b = _values(shift=0.04)
    _, c = _values(shift=-0.04, seed=1)
    path = make_run(tmp_path, "multi", {"bm25": a, "rrf": b, "w0.5": c})
    rep = compare_runs(path, path, metrics=("mrr",))
    assert [(x.system_a, x.system_b) for x in rep.comparisons] == [("bm25", "rrf"), ("bm25", "w0.5")]
    ps = [x.p_randomization for x in rep.comparisons]
    holm = [x.p_holm for x in rep.comparisons]
    assert all(h >= p for h, p in zip(holm, ps, strict=True))
    assert rep.comparisons[0].diff > 0 and rep.comparisons[0].questions["wins"] > 40
    r = runner.invoke(app, ["compare", str(path), str(path), "--metrics", "mrr", "--format", "json"])
    out = json.loads(r.stdout)
    assert r.exit_code == 0 and out["kind"] == "comparison" and out["data"]["comparisons"][0]["system_b"] == "rrf"


def test_power_plan_shrinks_with_larger_delta(tmp_path: Path):
    a, _ = _values()
    path = make_run(tmp_path, "p", {"bm25": a})
    small = power_plan(path, metric="mrr", delta=0.02)
    big = power_plan(path, metric="mrr", delta=0.10)
    assert small["clusters_needed"] > big["clusters_needed"] >= 2
    assert small["current_clusters"] == 20 and small["current_questions"] == 60


def test_power_refuses_bad_arguments_and_degenerate_pairs(tmp_path: Path):
    a, b = _values(shift=0.03)
    path = make_run(tmp_path, "p", {"bm25": a, "w0.75": b})
    for args, text in ((["--delta", "0"], "--delta"), (["--power", "1.5"], "--power")):
        r = runner.invoke(app, ["power", "--run", str(path), *args])
        assert r.exit_code == 2 and text in r.output
    r = runner.invoke(
        app, ["power", "--run", str(path), "--baseline", str(path), "--system", "bm25", "--system-baseline", "bm25"]
    )
    assert r.exit_code == 2 and "all equal" in r.output
    r = runner.invoke(
        app,
        [
            "power",
            "--run",
            str(path),
            "--baseline",
            str(path),
            "--system",
            "w0.75",
            "--system-baseline",
            "bm25",
            "--json",
        ],
    )
    # --json: the deprecated alias of --format json (the envelope; a note on stderr)
    assert r.exit_code == 0 and json.loads(r.stdout)["data"]["paired"] is True
    assert "deprecated" in r.stderr
