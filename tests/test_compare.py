"""compare and power on constructed run records whose true difference is known (the gate: tests/test_gate.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import IncomparableError
from harness.evaluation.compare import compare_runs
from harness.evaluation.gate import gate
from harness.evaluation.power import deff_formula, power_plan
from harness.evaluation.runs import RUN_SCHEMA_VERSION, write_run_record
from harness.stats import clusters_needed, design_effect

runner = CliRunner()
CATS = ["single_passage", "multi_document", "monitoring", "cross_reference"]


def make_run(
    runs: Path,
    run_id: str,
    values: dict[str, dict[str, float]],
    *,
    n_clusters=20,
    sha="a" * 64,
    depth=50,
    splits: dict[str, str] | None = None,
    missing: dict[str, set[str]] | None = None,
    recall: dict[str, dict[str, float]] | None = None,
):
    """A run record with per-question 'mrr' and 'recall@10' given per system; question i lies in cluster i % n.

    ``splits``: ``{qid: "dev" | "test"}``; ``missing``: ``{system: qids without any ranking}`` (flag ``missing``);
    ``recall``: recall@10 per system (default ``min(1, mrr + 0.1)``)."""
    qids = sorted(next(iter(values.values())))
    labels = {q: f"c{i % n_clusters}" for i, q in enumerate(qids)}
    rows = []
    for system, vals in values.items():
        for i, q in enumerate(qids):
            rec10 = (recall or {}).get(system, {}).get(q, min(1.0, vals[q] + 0.1))
            rows.append(
                {
                    "system": system,
                    "qid": q,
                    "category": CATS[i % len(CATS)],
                    "split": (splits or {}).get(q),
                    "cluster": labels[q],
                    "metrics": {"mrr": vals[q], "recall@10": rec10},
                    "flags": {"missing": True} if q in (missing or {}).get(system, set()) else {},
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
        r = runner.invoke(app, ["power", "--candidate", str(path), *args])
        assert r.exit_code == 2 and text in r.output
    r = runner.invoke(
        app,
        ["power", "--candidate", str(path), "--baseline", str(path), "--candidate-system", "bm25"]
        + ["--baseline-system", "bm25"],
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


def _negative_icc_pair(tmp_path: Path):
    """60 questions in 20 clusters of 3 whose paired differences cancel inside each cluster (ICC of the differences
    close to its minimum -1/(m - 1) = -0.5)."""
    rng = np.random.default_rng(3)
    qids = [f"Q-{i:03d}" for i in range(60)]
    a = {q: float(rng.uniform(0.3, 0.6)) for q in qids}
    step = {0: 0.2, 1: -0.1, 2: -0.1}
    b = {q: a[q] + step[i // 20] + float(rng.normal(0, 0.01)) for i, q in enumerate(qids)}
    return make_run(tmp_path, "neg", {"bm25": a, "cand": b})


def test_power_truncates_a_negative_icc_and_plans_with_the_deff_it_prints(tmp_path: Path):
    """Issue 21: a negative ICC went into the plan while DEFF 1.00 was printed. The plan now uses the ICC truncated
    at 0, so its clusters are those of the printed DEFF (fails before: the plan used the negative ICC)."""
    path = _negative_icc_pair(tmp_path)
    plan = power_plan(path, baseline=path, system="cand", system_baseline="bm25", metric="mrr", delta=0.01)
    assert plan["icc"] < -0.3 and plan["icc_used"] == 0.0 and "truncated at 0" in plan["icc_note"]
    assert plan["deff"] == 1.0
    de = design_effect(*_diffs_of(path, "bm25", "cand"))
    assert plan["deff"] == de["deff"]
    same = clusters_needed(0.0, plan["mean_cluster_size"], plan["cv_cluster_size"], plan["sd"], 0.01)
    assert plan["clusters_needed"] == same["clusters"]
    raw = clusters_needed(plan["icc"], plan["mean_cluster_size"], plan["cv_cluster_size"], plan["sd"], 0.01)
    assert raw["clusters"] < plan["clusters_needed"]  # what the old plan said
    assert any("truncated at 0" in w for w in plan["warnings"])
    r = runner.invoke(app, ["power", "--candidate", str(path), "--baseline", str(path), "--candidate-system", "cand",
                            "--baseline-system", "bm25", "--delta", "0.01"])  # fmt: skip
    assert r.exit_code == 0, r.output
    text = " ".join(r.stdout.split())
    assert "one-sided test" in text and "Eldridge, Ashby & Kerry 2006" in text
    assert "truncated at 0" in r.stderr  # a warning: on stderr, stdout holds the plan only
    assert "DEFF = 1 + ((1 + CV^2) m - 1) ICC = 1 + ((1 + 0.00^2) 3.00 - 1) 0.000 = 1.00" in text
    assert f"{plan['clusters_needed']} clusters" in text


def test_power_states_the_sided_test_and_two_sided_needs_more(tmp_path: Path):
    a, b = _values(shift=0.03, noise=0.05)
    path = make_run(tmp_path, "p", {"bm25": a, "w0.75": b})
    one = power_plan(path, baseline=path, system="w0.75", system_baseline="bm25", delta=0.02)
    two = power_plan(path, baseline=path, system="w0.75", system_baseline="bm25", delta=0.02, one_sided=False)
    assert one["sided"] == "one-sided" and two["sided"] == "two-sided"
    assert two["clusters_needed"] > one["clusters_needed"]
    d, cl = _diffs_of(path, "bm25", "w0.75")
    de = design_effect(d, cl)
    assert one["deff_formula"] == deff_formula(de["icc_used"], de["mean_size"], de["cv_size"], de["deff"])
    r = runner.invoke(app, ["power", "--run", str(path), "--baseline", str(path), "--system", "w0.75",
                            "--system-baseline", "bm25", "--sided", "two", "--format", "json"])  # fmt: skip
    assert r.exit_code == 0 and json.loads(r.stdout)["data"]["clusters_needed"] == two["clusters_needed"]
    for old, new in (("--run", "--candidate"), ("--system", "--candidate-system")):  # deprecated, still working
        assert f"note: {old} is deprecated; use {new}" in r.stderr
    r = runner.invoke(app, ["power", "--run", str(path), "--sided", "three"])
    assert r.exit_code == 2 and "--sided" in r.output


def _diffs_of(path: Path, sa: str, sb: str):
    from harness.evaluation.runs import load_run

    run = load_run(path)
    a, b = run.metric_vector(sa, "mrr"), run.metric_vector(sb, "mrr")
    qids = sorted(a)
    return np.array([b[q] - a[q] for q in qids]), [run.clusters()[q] for q in qids]


def test_compare_on_a_split_uses_only_its_questions(tmp_path: Path):
    a, b = _values(shift=0.03, noise=0.05)
    qids = sorted(a)
    splits = {q: ("test" if i % 2 else "dev") for i, q in enumerate(qids)}
    base = make_run(tmp_path, "base", {"bm25": a}, splits=splits)
    cand = make_run(tmp_path, "cand", {"new": b}, splits=splits)
    whole = compare_runs(base, cand, metrics=("mrr",)).comparisons[0]
    test = compare_runs(base, cand, metrics=("mrr",), split="test")
    c = test.comparisons[0]
    tq = [q for q in qids if splits[q] == "test"]
    assert test.split == "test" and c.interval["n"] == len(tq) == 30
    assert c.diff == pytest.approx(np.mean([b[q] - a[q] for q in tq]), abs=1e-15)
    assert c.diff != pytest.approx(whole.diff, abs=1e-6)
    r = runner.invoke(app, ["compare", str(base), str(cand), "--metrics", "mrr", "--split", "test", "--format", "json"])
    data = json.loads(r.stdout)["data"]
    assert r.exit_code == 0 and data["split"] == "test" and data["comparisons"][0]["interval"]["n"] == 30
    r = runner.invoke(app, ["compare", str(base), str(cand), "--split", "train"])
    assert r.exit_code == 2 and "--split: 'train' is not one of all, dev, test" in r.output
    unsplit = make_run(tmp_path, "unsplit", {"bm25": a})
    r = runner.invoke(app, ["compare", str(unsplit), str(unsplit), "--split", "dev"])
    assert r.exit_code == 2 and "field split: no dev question" in r.output


def test_power_names_the_candidate_like_gate_and_refuses_a_lone_baseline_system(tmp_path: Path):
    """Issue 42 item 9: ``--candidate``/``--candidate-system`` beside ``--baseline``/``--baseline-system``; a
    baseline system without ``--baseline`` was silently ignored (an unpaired plan)."""
    a, b = _values(shift=0.03, noise=0.05)
    path = make_run(tmp_path, "p", {"bm25": a, "w0.75": b})
    args = ["power", "--candidate", str(path), "--candidate-system", "w0.75", "--format", "json"]
    r = runner.invoke(app, [*args, "--baseline", str(path), "--baseline-system", "bm25"])
    assert r.exit_code == 0 and "deprecated" not in r.stderr, r.output
    paired = power_plan(path, baseline=path, system="w0.75", system_baseline="bm25")
    assert json.loads(r.stdout)["data"]["clusters_needed"] == paired["clusters_needed"]
    lone = runner.invoke(app, [*args, "--baseline-system", "bm25"])
    assert lone.exit_code == 2 and lone.stdout == ""
    assert lone.stderr.startswith("error: --baseline-system: names a system of --baseline; give --baseline RUN too")
    none = runner.invoke(app, ["power", "--metric", "mrr"])
    assert none.exit_code == 2 and "error: --candidate: give the run record to plan for" in none.stderr
    both = runner.invoke(app, ["power", "--candidate", str(path), "--run", str(path)])
    assert both.exit_code == 2 and "--run: deprecated spelling of --candidate; give only --candidate" in both.stderr
