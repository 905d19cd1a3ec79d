"""The three-way gate (issue 21 item 4; issue 18 item 3) on constructed run records whose true difference is known:
PASS / FAIL / INCONCLUSIVE with exit codes 0 / 1 / 3, degenerate data, several metrics and guards combined by
intersection-union, margin validation, the interval read from the registry, the JSON verdict's fields."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats as sps
from test_compare import CATS, _values, make_run
from typer.testing import CliRunner

from harness import __version__
from harness.cli import app
from harness.errors import HarnessInputError
from harness.evaluation.gate import GateCheck, combine, gate, parse_guard
from harness.evaluation.power import power_plan
from harness.stats import evidence, paired

runner = CliRunner()


def _gate_cli(base, cand, *args, tmp: Path):
    return runner.invoke(
        app,
        ["gate", "--baseline", str(base), "--candidate", str(cand), "--verdict", str(tmp / "v.json"), *map(str, args)],
    )


@pytest.mark.parametrize(
    ("shift", "noise", "margin", "decision", "code"),
    [
        (0.05, 0.02, 0.02, "PASS", 0),  # shown non-inferior (and better)
        (0.0, 0.02, 0.02, "PASS", 0),
        (-0.10, 0.02, 0.02, "FAIL", 1),  # shown worse than the margin
        (-0.01, 0.02, 0.0, "FAIL", 1),
        (-0.02, 0.02, 0.02, "INCONCLUSIVE", 3),  # the difference sits on the margin
        (0.0, 0.30, 0.02, "INCONCLUSIVE", 3),  # too noisy: underpowered
    ],
)
def test_three_outcomes_and_their_exit_codes(tmp_path: Path, shift, noise, margin, decision, code):
    a, b = _values(shift=shift, noise=noise)
    base = make_run(tmp_path, "base", {"bm25": a})
    cand = make_run(tmp_path, "cand", {"new": b})
    v = gate(base, cand, metric="mrr", margin=margin)
    c = v.checks[0]
    assert (v.decision, v.exit_code, c.decision) == (decision, code, decision), v.lines()
    assert c.diff == pytest.approx(np.mean(list(b.values())) - np.mean(list(a.values())), abs=1e-12)
    # the rule, on the check's own numbers: the same two-sided 1 - 2 alpha interval
    assert (c.lower > -margin) == (decision == "PASS")
    assert (c.upper < -margin) == (decision == "FAIL")
    assert c.lower <= c.diff <= c.upper and v.level == pytest.approx(0.9)
    r = _gate_cli(base, cand, "--metric", "mrr", "--margin", margin, tmp=tmp_path)
    assert r.exit_code == code, r.output
    assert r.stdout.startswith(f"{decision}: mrr new - bm25")
    saved = json.loads((tmp_path / "v.json").read_text())
    assert saved["decision"] == decision and saved["exit_code"] == code


def test_reasons_in_plain_words_with_the_power_plan(tmp_path: Path):
    a, b = _values(shift=0.0, noise=0.30)
    base = make_run(tmp_path, "base", {"bm25": a})
    cand = make_run(tmp_path, "cand", {"new": b})
    v = gate(base, cand, metric="mrr", margin=0.02)
    c = v.checks[0]
    # MDD = (t_{1-alpha, df} + t_{0.8, df}) se (one-sided, 80 % power; Bloom 1995)
    want = (sps.t.ppf(0.95, c.df) + sps.t.ppf(0.8, c.df)) * c.se
    assert c.minimum_detectable_difference == pytest.approx(want, rel=1e-12) and want > 0.02
    plan = power_plan(cand, baseline=base, metric="mrr", delta=0.02)  # the power verb, same numbers
    assert c.clusters_needed == plan["clusters_needed"] > 20
    assert c.reason == (
        f"underpowered: minimum detectable difference {want:.3f} > margin 0.02; needs about "
        f"{plan['clusters_needed']} clusters (now 20)"
    )
    assert v.reason == f"mrr: {c.reason}"
    # close to the margin but not underpowered: the interval contains -margin
    a, b = _values(shift=-0.02, noise=0.02)
    near = gate(make_run(tmp_path, "b2", {"bm25": a}), make_run(tmp_path, "c2", {"new": b}), margin=0.02)
    assert near.decision == "INCONCLUSIVE" and "too close to the margin" in near.reason
    assert near.checks[0].minimum_detectable_difference < 0.02 and near.checks[0].clusters_needed is None
    # PASS and FAIL say why too
    a, b = _values(shift=0.05)
    ok = gate(make_run(tmp_path, "b3", {"bm25": a}), make_run(tmp_path, "c3", {"new": b}))
    assert ok.reason.startswith("mrr: non-inferior: lower bound +")
    a, b = _values(shift=-0.1)
    bad = gate(make_run(tmp_path, "b4", {"bm25": a}), make_run(tmp_path, "c4", {"new": b}))
    assert bad.reason.startswith("mrr: worse than the margin: upper bound -")


def test_on_inconclusive_maps_exit_3(tmp_path: Path):
    a, b = _values(shift=-0.02, noise=0.02)
    base = make_run(tmp_path, "base", {"bm25": a})
    cand = make_run(tmp_path, "cand", {"new": b})
    assert gate(base, cand).exit_code == 3
    assert gate(base, cand, on_inconclusive="fail").exit_code == 1
    assert gate(base, cand, on_inconclusive="pass").exit_code == 0
    for policy, code in (("fail", 1), ("pass", 0)):
        r = _gate_cli(base, cand, "--on-inconclusive", policy, tmp=tmp_path)
        assert r.exit_code == code and "INCONCLUSIVE" in r.stdout and f"--on-inconclusive {policy}" in r.stdout
        assert json.loads((tmp_path / "v.json").read_text())["decision"] == "INCONCLUSIVE"
    r = _gate_cli(base, cand, "--on-inconclusive", "maybe", tmp=tmp_path)
    assert r.exit_code == 2 and "--on-inconclusive: 'maybe'" in r.output
    # a PASS or a FAIL is not changed by the policy
    a, b = _values(shift=-0.1)
    assert (
        gate(make_run(tmp_path, "b", {"x": a}), make_run(tmp_path, "c", {"y": b}), on_inconclusive="pass").exit_code
        == 1
    )


# ------------------------------------------------------------------------------------------------------------------
# Degenerate data
# ------------------------------------------------------------------------------------------------------------------


def test_all_zero_differences_pass_and_the_mdd_is_not_a_measurement(tmp_path: Path):
    a, _ = _values()
    base = make_run(tmp_path, "base", {"bm25": a})
    cand = make_run(tmp_path, "cand", {"same": dict(a)})
    v = gate(base, cand, margin=0.0)
    c = v.checks[0]
    assert v.decision == "PASS" and v.exit_code == 0 and "exactly 0" in c.reason
    assert c.minimum_detectable_difference is None and c.not_estimable
    assert (c.lower, c.upper) == (0.0, 0.0)
    for fmt in ("table", "markdown", "json"):
        r = _gate_cli(base, cand, "--format", fmt, tmp=tmp_path)
        assert r.exit_code == 0, r.output
        assert "0.0000;" not in r.stdout and "| 0.0000 |" not in r.stdout  # no MDD of 0.0000 shown as measured
        if fmt == "json":
            check = json.loads(r.stdout)["data"]["checks"][0]
            assert check["minimum_detectable_difference"] is None and check["flags"]["degenerate"] is True
        else:
            assert "not estimable" in r.stdout
            assert "[degenerate]" in r.stdout


def test_zero_variance_one_cluster_and_one_carrier_are_not_estimable(tmp_path: Path):
    a, _ = _values()
    qids = sorted(a)
    base = make_run(tmp_path, "base", {"bm25": a})
    # every difference -0.05: zero variance
    const = make_run(tmp_path, "const", {"c": {q: a[q] - 0.05 for q in qids}})
    v = gate(base, const)
    assert v.decision == "INCONCLUSIVE" and v.exit_code == 3
    assert (
        v.checks[0].reason
        == "minimum detectable difference not estimable: every paired difference is -0.0500 (zero variance)"
    )
    assert v.checks[0].minimum_detectable_difference is None
    # one cluster (c3: questions 3, 23, 43) carries every non-zero difference
    carrier = {q: a[q] - (0.2 if i % 20 == 3 else 0.0) for i, q in enumerate(qids)}
    v = gate(base, make_run(tmp_path, "one", {"c": carrier}))
    assert v.decision == "INCONCLUSIVE"
    assert v.checks[0].reason == (
        "minimum detectable difference not estimable: one cluster (c3) carries every non-zero paired difference "
        "(3 questions)"
    )
    # a single cluster: no interval at all
    one = make_run(tmp_path, "onecl", {"bm25": a}, n_clusters=1)
    v = gate(one, make_run(tmp_path, "onecl2", {"c": carrier}, n_clusters=1))
    assert v.decision == "INCONCLUSIVE" and v.checks[0].lower is None
    assert "form 1 cluster" in v.checks[0].reason


# ------------------------------------------------------------------------------------------------------------------
# Several metrics and guards: intersection-union
# ------------------------------------------------------------------------------------------------------------------


def _check(decision: str) -> GateCheck:
    return GateCheck("m", "metric", "mrr", None, 0.02, decision, f"{decision} because", 0.5, 0.5, 0.0, -0.1, 0.1,
                     0.01, 10.0, 0.03, None, 10, 5)  # fmt: skip


@given(st.lists(st.sampled_from(["PASS", "FAIL", "INCONCLUSIVE"]), min_size=1, max_size=6))
def test_combination_is_intersection_union(decisions):
    decision, reason = combine([_check(d) for d in decisions])
    if "FAIL" in decisions:
        assert decision == "FAIL" and "INCONCLUSIVE because" not in reason
    elif "INCONCLUSIVE" in decisions:
        assert decision == "INCONCLUSIVE"
    else:
        assert decision == "PASS"
    # order of the checks does not matter
    assert combine([_check(d) for d in reversed(decisions)])[0] == decision


def test_several_metrics_in_one_call(tmp_path: Path):
    a, b = _values(shift=0.05)
    qids = sorted(a)
    base = make_run(tmp_path, "base", {"bm25": a})
    noise = np.random.default_rng(5).normal(0, 0.02, len(qids))
    worse_recall = {q: max(0.0, min(1.0, a[q] + 0.1) - 0.3 + e) for q, e in zip(qids, noise, strict=True)}
    cand = make_run(tmp_path, "cand", {"new": b}, recall={"new": worse_recall})
    v = gate(base, cand, metric=["mrr", "recall@10"], margin=0.02)
    assert [c.name for c in v.checks] == ["mrr", "recall@10"]
    assert [c.decision for c in v.checks] == ["PASS", "FAIL"] and v.decision == "FAIL" and v.exit_code == 1
    assert v.reason.startswith("recall@10: worse than the margin")
    r = _gate_cli(base, cand, "--metric", "mrr", "--metric", "recall@10", tmp=tmp_path)
    assert r.exit_code == 1 and r.stdout.count("\n") >= 3 and "overall FAIL (intersection-union" in r.stdout
    r = _gate_cli(base, cand, "--metric", "mrr,recall@10", "--format", "json", tmp=tmp_path)
    data = json.loads(r.stdout)["data"]
    assert [c["decision"] for c in data["checks"]] == ["PASS", "FAIL"] and "no multiplicity" in data["combination"]
    assert gate(base, cand, metric=["mrr"]).decision == "PASS"
    r = _gate_cli(base, cand, "--metric", "MRR@10", tmp=tmp_path)
    assert r.exit_code == 2 and "MRR" in r.output


def test_guards_get_intervals_and_three_way_verdicts(tmp_path: Path):
    a, b = _values(shift=0.05)
    qids = sorted(a)
    for i, q in enumerate(qids):
        if CATS[i % len(CATS)] == "monitoring":
            b[q] = max(0.0, a[q] - 0.3)
    base = make_run(tmp_path, "base", {"bm25": a})
    cand = make_run(tmp_path, "cand", {"new": b})
    assert gate(base, cand, metric="recall@10", margin=0.2).exit_code == 0
    v = gate(base, cand, metric="recall@10", margin=0.2, guards={"monitoring": 0.05})
    g = v.checks[1]
    assert (g.kind, g.category, g.metric, g.decision) == ("guard", "monitoring", "recall@10", "FAIL")
    assert v.decision == "FAIL" and v.exit_code == 1
    mon = [q for i, q in enumerate(qids) if CATS[i % len(CATS)] == "monitoring"]
    labels = [f"c{qids.index(q) % 20}" for q in mon]
    ra, rb = ([min(1.0, v[q] + 0.1) for q in mon] for v in (a, b))  # recall@10 of make_run
    ref = paired(ra, rb, labels, method=v.method, level=0.9)  # the same interval, computed directly
    assert (g.lower, g.upper) == (ref.lower, ref.upper) and g.n_questions == 15 and g.n_clusters == 5
    # a guard on another metric, by CATEGORY:METRIC:MARGIN, and a guard that is too noisy to decide
    v = gate(base, cand, metric="recall@10", margin=0.2, guards=["monitoring:mrr:0.5", "single_passage:0.001"])
    assert [c.name for c in v.checks] == ["recall@10", "guard monitoring: mrr", "guard single_passage: recall@10"]
    assert v.checks[1].decision == "PASS"
    r = _gate_cli(base, cand, "--metric", "recall@10", "--margin", "0.2", "--guard", "monitoring:0.05", tmp=tmp_path)
    assert r.exit_code == 1 and "FAIL: recall@10 on monitoring (15 questions)" in r.stdout
    r = _gate_cli(base, cand, "--guard", "negative:0.1", tmp=tmp_path)
    assert r.exit_code == 2 and "category 'negative' has no questions" in r.output


# ------------------------------------------------------------------------------------------------------------------
# Margin validation (issue 18 item 3): before, --margin inf passed, nan failed with NaN in the JSON
# ------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["inf", "nan", "-1", "-inf"])
def test_margins_that_are_not_finite_and_non_negative_are_unusable_input(tmp_path: Path, bad):
    a, b = _values(shift=-0.4)
    base = make_run(tmp_path, "base", {"bm25": a})
    cand = make_run(tmp_path, "cand", {"new": b})
    r = _gate_cli(base, cand, "--margin", bad, tmp=tmp_path)
    assert r.exit_code == 2, r.output
    assert r.output.strip().count("\n") == 0 and "--margin" in r.output and "finite number >= 0" in r.output
    r = _gate_cli(base, cand, "--guard", f"monitoring:{bad}", tmp=tmp_path)
    assert r.exit_code == 2 and f"--guard 'monitoring:{bad}'" in r.output and r.output.strip().count("\n") == 0
    assert not (tmp_path / "v.json").exists()
    with pytest.raises(HarnessInputError, match="--margin"):
        gate(base, cand, margin=float(bad))


def test_parse_guard():
    assert parse_guard("monitoring:0.1").margin == 0.1 and parse_guard("monitoring:0.1").metric is None
    assert parse_guard("monitoring:recall@10:0").metric == "recall@10"
    for bad in ("monitoring", ":0.1", "a:b:c:d", "monitoring:x", "monitoring:nope@3:0.1"):
        with pytest.raises(HarnessInputError):
            parse_guard(bad)


# ------------------------------------------------------------------------------------------------------------------
# What the verdict records
# ------------------------------------------------------------------------------------------------------------------


def test_the_interval_is_the_registrys_default_and_is_named(tmp_path: Path, monkeypatch):
    a, b = _values(shift=-0.01, noise=0.05)
    base = make_run(tmp_path, "base", {"bm25": a})
    cand = make_run(tmp_path, "cand", {"new": b})
    # the coverage rule's default for the run's design: this 20-cluster design was not measured, so the nearest
    # measured one's (the committed baseline's: CR3); without evidence, CR2 (harness.stats.shown)
    v3 = gate(base, cand)
    monkeypatch.setattr(evidence, "EVIDENCE_PATH", tmp_path / "no-evidence.json")
    v = gate(base, cand)
    assert v.method == "cr2" and v.method_label == "CR2 (Satterthwaite t)"
    monkeypatch.undo()
    qids = sorted(a)
    ref = paired([a[q] for q in qids], [b[q] for q in qids], [f"c{i % 20}" for i in range(60)], method="cr3",
                 level=0.9)  # fmt: skip
    assert v3.method == "cr3" and (v3.checks[0].lower, v3.checks[0].upper) == (ref.lower, ref.upper)
    assert v3.checks[0].lower != v.checks[0].lower
    r = _gate_cli(base, cand, tmp=tmp_path)
    assert "CR3 jackknife" in r.stdout and "cr3 interval: the coverage rule's default" in " ".join(r.stdout.split())


def test_json_verdict_fields(tmp_path: Path):
    a, b = _values(shift=0.02)
    qids = sorted(a)
    gone = set(qids[:5])
    base = make_run(tmp_path, "base", {"bm25": a})
    cand = make_run(tmp_path, "cand", {"new": {q: (0.0 if q in gone else v) for q, v in b.items()}},
                    missing={"new": gone})  # fmt: skip
    r = _gate_cli(base, cand, "--format", "json", tmp=tmp_path)
    assert r.exit_code in (0, 1, 3), r.output
    data = json.loads(r.stdout)["data"]
    assert data == json.loads((tmp_path / "v.json").read_text())
    assert json.loads(r.stdout)["schema_version"] == 2
    check = data["checks"][0]
    for key in ("lower", "upper", "reason", "minimum_detectable_difference", "se", "df", "margin", "decision"):
        assert key in check
    assert check["lower"] < check["upper"] and math.isfinite(check["upper"])
    assert data["missing_questions"] == {"baseline": 0, "candidate": 5}
    assert data["goldset"] == {"name": "g", "version": "1", "sha256": "a" * 64}
    assert data["harness_version"] == __version__ and data["method"] == "cr3" and data["reason"]
    assert any("has no ranking for 5 of 60 questions" in w for w in data["warnings"])
    assert "has no ranking for 5 of 60 questions" in r.stderr  # warnings also on stderr
    assert "NaN" not in r.stdout


def test_gate_on_a_split(tmp_path: Path):
    a, b = _values(shift=0.0, noise=0.02)
    qids = sorted(a)
    splits = {q: ("test" if i < 30 else "dev") for i, q in enumerate(qids)}
    for q in qids[30:]:  # dev much worse, test identical
        b[q] = max(0.0, a[q] - 0.4)
    for q in qids[:30]:
        b[q] = a[q]
    base = make_run(tmp_path, "base", {"bm25": a}, splits=splits)
    cand = make_run(tmp_path, "cand", {"new": b}, splits=splits)
    assert gate(base, cand).decision == "FAIL"
    v = gate(base, cand, split="test")
    assert v.decision == "PASS" and v.split == "test" and v.n_questions == 30 and "exactly 0" in v.reason
    r = _gate_cli(base, cand, "--split", "test", tmp=tmp_path)
    assert r.exit_code == 0 and "split test" in r.stdout
    r = _gate_cli(base, cand, "--split", "dev", tmp=tmp_path)
    assert r.exit_code == 1


def test_verdict_never_replaces_a_device(tmp_path: Path):
    a, b = _values(shift=0.05)
    base = make_run(tmp_path, "base", {"bm25": a})
    cand = make_run(tmp_path, "cand", {"new": b})
    r = runner.invoke(app, ["gate", "--baseline", str(base), "--candidate", str(cand), "--verdict", "/dev/null"])
    assert r.exit_code == 2 and "--verdict /dev/null" in r.output
    assert Path("/dev/null").is_char_device()


# ------------------------------------------------------------------------------------------------------------------
# run --split
# ------------------------------------------------------------------------------------------------------------------


def test_run_on_a_split_shows_it_and_records_every_question(tmp_path: Path):
    from conftest import tiny_records, write_tiny_corpus, write_tiny_goldset

    from harness.evaluation.runs import load_run

    corpus = write_tiny_corpus(tmp_path / "corpus")
    recs = tiny_records()
    for r, split in zip(recs, ("dev", "test", "test"), strict=True):
        r["split"] = split
    gs = write_tiny_goldset(tmp_path / "gs", corpus, recs)
    common = ["run", "--corpus", str(corpus), "--goldset", str(gs), "--workdir", str(tmp_path / "wd"), "--runs-dir",
              str(tmp_path / "runs"), "--bootstrap-reps", "200"]  # fmt: skip
    r = runner.invoke(app, [*common, "--run-id", "t", "--split", "test"])
    assert r.exit_code == 0, r.output
    assert "test questions (n=2)" in r.stdout and "split test: 2 of 3 questions shown" in r.stdout
    rec = load_run(tmp_path / "runs" / "t")
    assert {q.qid for q in rec.per_question} == {"SP-001", "SP-002", "MD-001"}  # every question recorded
    assert rec.manifest.split == "test" and set(rec.summary.systems["bm25"]) == {"all", "test"}
    test_mrr = [q.metrics["mrr"] for q in rec.per_question if q.split == "test"]
    assert rec.summary.systems["bm25"]["test"].overall["mrr"].mean == pytest.approx(sum(test_mrr) / 2)
    # the default keeps the record as it was: no split slice, no split field
    r = runner.invoke(app, [*common, "--run-id", "all"])
    whole = load_run(tmp_path / "runs" / "all")
    assert (
        r.exit_code == 0 and set(whole.summary.systems["bm25"]) == {"all"} and "split" not in whole.manifest.model_extra
    )
    # a split with no question, or an unknown one, is refused before any work
    only_test = write_tiny_goldset(tmp_path / "gs2", corpus, [{**x, "split": "test"} for x in tiny_records()])
    r = runner.invoke(app, [*common[:4], str(only_test), *common[5:], "--run-id", "x", "--split", "dev"])
    assert r.exit_code == 2 and "field split: --split dev: the gold set has no dev question" in r.output
    assert not (tmp_path / "runs" / "x").exists()
    r = runner.invoke(app, [*common, "--run-id", "y", "--split", "train"])
    assert r.exit_code == 2 and "--split: 'train'" in r.output
