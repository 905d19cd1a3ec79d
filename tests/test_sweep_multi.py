"""Multi-metric sweep: several fusion methods in one call, constraints against the best input on dev, every metric
of METRIC_SETS["compare"] for the chosen setting on test with paired intervals, trade-offs in words.

The synthetic run is test_sweep.py's (its module docstring computes the dev MRR by weight by hand): dev MRR 0.625 for
w <= 0.30, 0.875 for 0.35..0.60, 1 for 0.65..0.75, 0.875 for w >= 0.80; bm25 alone 0.875 on dev (gt1, gt1, gt2 rank
the gold first, lt3 second), vector alone 0.625."""

from __future__ import annotations

import json

import pytest
from test_sweep import DEV_MRR, GRID, questions, write_run
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import HarnessInputError
from harness.evaluation.sweep import sweep
from harness.evaluation.sweep_multi import REPORTED, Constraint, multi_sweep, parse_constraint, tradeoffs
from harness.metrics import METRIC_SETS

cli = CliRunner()


def test_one_method_agrees_with_the_single_sweep_and_reports_every_metric(tmp_path):
    run = write_run(tmp_path, questions())
    r = multi_sweep(run, fusions=["wsum"], metric="mrr")
    one = sweep(run, GRID, "mrr")
    (mc,) = r.methods
    assert mc.dev["mrr"] == pytest.approx(DEV_MRR, abs=1e-12) and mc.dev["mrr"] == pytest.approx(one.dev_means)
    assert r.chosen == one.chosen_system == "w0.65" and r.chosen_method == "wsum"
    assert r.dev_inputs["mrr"] == pytest.approx({"bm25": 0.875, "vector": 0.625})
    assert [row["metric"] for row in r.test] == list(dict.fromkeys(["mrr", *METRIC_SETS["compare"]]))
    mrr = r.test[0]
    assert mrr["chosen"]["mean"] == pytest.approx(one.test_mean) == pytest.approx(2 / 3)
    for row in one.test[1:]:
        cell = mrr["inputs"][row.system]
        assert cell["mean"] == pytest.approx(row.mean) and cell["diff"] == pytest.approx(row.diff)
        assert cell["paired_interval"]["lower"] == pytest.approx(row.paired_interval["lower"])
    assert r.n_test == 3 and r.n_test_clusters == 3 and r.n_settings == 21


def test_a_constraint_excludes_settings_that_lose_more_than_the_margin_against_the_best_input(tmp_path):
    run = write_run(tmp_path, questions())
    r = multi_sweep(run, fusions=["wsum"], metric="mrr", constraints=["mrr:0.2"])
    ex = r.excluded()
    # dev mrr 0.625 at w <= 0.30 loses 0.25 > 0.2 against bm25's 0.875; 0.875 loses 0
    assert [x["system"] for x in ex] == ["w0", "w0.05", "w0.1", "w0.15", "w0.2", "w0.25", "w0.3"]
    assert all(x["best_input"] == "bm25" and x["loss"] == pytest.approx(0.25) for x in ex)
    assert r.chosen == "w0.65"
    # a margin of exactly the loss keeps them (more than the margin is excluded)
    assert multi_sweep(run, fusions=["wsum"], metric="mrr", constraints=["mrr:0.25"]).excluded() == []
    # a constraint nothing can meet: no choice, nothing reported on test, and said so
    none = multi_sweep(run, fusions=["wsum"], metric="mrr", constraints=[Constraint("mrr", 0.0)], grids={"wsum": "0"})
    assert none.chosen is None and none.test == [] and none.methods[0].chosen_system is None


def test_several_methods_in_one_call_choose_per_method_and_overall(tmp_path):
    run = write_run(tmp_path, questions())
    r = multi_sweep(run, fusions=["wsum", "rrf", "mnz"], metric="mrr")
    assert [m.fusion for m in r.methods] == ["wsum", "rrf", "mnz"]
    for m, single in zip(r.methods, ("wsum", "rrf", "mnz"), strict=True):
        s = sweep(run, None, "mrr", fusion=single)
        assert m.chosen_system == s.chosen_system and m.dev_best == pytest.approx(s.dev_best)
        assert m.test["mean"] == pytest.approx(s.test_mean)  # each method's own choice on test, as the single sweep
        for row in s.test[1:]:
            assert m.test["inputs"][row.system]["diff"] == pytest.approx(row.diff)
    best = max(m.dev_best for m in r.methods)
    first = next(m for m in r.methods if m.dev_best == best)
    assert r.chosen == first.chosen_system and r.chosen_method == first.fusion
    assert r.n_settings == 21 + 20 + 1 and "42 settings tried on dev (3 method(s))" in r.note


def test_tradeoffs_in_plain_words():
    def cell(d, lo, hi):
        return {"mean": 0.5, "interval": None, "diff": d, "paired_interval": {"lower": lo, "upper": hi}}

    ev = {"bm25": cell(-0.095, -0.187, -0.004), "vector": cell(-0.1, -0.3, 0.1)}
    rows = [
        {"metric": "mrr", "inputs": {"bm25": cell(0.032, 0.012, 0.053), "vector": cell(0.16, -0.09, 0.41)}},
        {"metric": "evidence_recall@10", "inputs": ev},
    ]
    said = tradeoffs("w0.6", rows)
    assert said[0] == (
        "against bm25, w0.6 trades one metric for another on test: it gains mrr +0.032 [+0.012, +0.053] but loses "
        "evidence_recall@10 -0.095 [-0.187, -0.004] (paired intervals exclude 0)"
    )
    assert said[1].startswith("against vector, the point estimates go both ways on test (up: mrr +0.160")
    assert tradeoffs("w0.6", [rows[0]]) == []


def test_parse_constraint():
    assert parse_constraint("evidence_recall@10:0.02") == Constraint("evidence_recall@10", 0.02)
    for bad, needle in [
        ("evidence_recall@10", "expected METRIC:MARGIN"),
        ("nope@3:0.1", "--constraint 'nope@3:0.1'"),
        ("mrr:x", "is not a number"),
        ("mrr:-0.1", "finite number >= 0"),
        ("mrr:inf", "finite number >= 0"),
    ]:
        with pytest.raises(HarnessInputError, match="--constraint") as e:
            parse_constraint(bad)
        assert needle in str(e.value)


def test_cli_prints_every_metric_and_the_excluded_settings_in_every_format(tmp_path):
    run = write_run(tmp_path, questions())
    args = ["sweep", "--run", str(run), "--fusion", "wsum,rrf,mnz", "--metric", "mrr", "--constraint", "mrr:0.2"]
    r = cli.invoke(app, args)
    assert r.exit_code == 0, r.output
    out = r.stdout
    for m in REPORTED:
        assert f"│ {m} " in out, m
    assert "excluded on dev" in out and "wsum: 7 setting(s) (w0, w0.05, w0.1, ..., w0.25, w0.3)" in out
    assert "- bm25 [95 % paired]" in out and "dev curve of wsum" in out
    md = cli.invoke(app, [*args, "--format", "markdown"])
    assert md.exit_code == 0 and "every excluded setting" in md.stdout and "| evidence\\_recall@20 |" in md.stdout
    js = cli.invoke(app, [*args, "--format", "json"])
    env = json.loads(js.stdout)
    assert env["kind"] == "sweep-multi" and len(env["data"]["excluded"]) == 7 + sum(
        1 for m in env["data"]["methods"] if m["fusion"] != "wsum" for x in m["excluded"]
    )
    iv = env["data"]["test"][0]["inputs"]["bm25"]["paired_interval"]
    assert "flags" in iv
    for bad, needle in [
        (["--fusion", "wsum,wsum"], "named twice"),
        (["--fusion", "wsum,rrf", "--level", "document"], "--level: the single-metric sweep"),
        (["--constraint", "mrr"], "expected METRIC:MARGIN"),
        (["--fusion", "rrf", "--w", "0.5"], "--w: applies to --fusion wsum only"),
    ]:
        e = cli.invoke(app, ["sweep", "--run", str(run), *bad])
        assert e.exit_code == 2 and needle in e.output, (bad, e.output)


@pytest.mark.slow
@pytest.mark.realcorpus
def test_real_run_multi_metric_sweep_with_a_constraint():
    """The committed baseline run (real gold set; dev 21 / test 21 questions, 14 test clusters), or the run named by
    ``HARNESS_SWEEP_RUN`` (e.g. a fresh USE run of bm25,vector,rrf,w0.25,w0.5,w0.75)."""
    import os
    from pathlib import Path

    default = Path(__file__).resolve().parents[1] / "runs" / "baselines" / "mx-leyes-dof-eval-v1-six-systems"
    run = Path(os.environ.get("HARNESS_SWEEP_RUN") or default)
    if not run.exists():
        pytest.skip(f"no committed baseline at {run}")
    args = ["sweep", "--run", str(run), "--fusion", "wsum,rrf,mnz", "--metric", "mrr"]
    r = cli.invoke(app, [*args, "--constraint", "evidence_recall@10:0.02"])
    assert r.exit_code == 0, r.output
    for m in METRIC_SETS["compare"]:
        assert f"│ {m} " in r.stdout, m
    assert "21 questions, 14 clusters" in r.stdout and "- bm25 [95 % paired]" in r.stdout
    assert "constraints evidence_recall@10:0.02: excluded on dev" in r.stdout
    res = multi_sweep(run, fusions=["wsum", "rrf", "mnz"], metric="mrr", constraints=["evidence_recall@10:0.02"])
    for x in res.excluded():  # every exclusion is a real loss beyond the margin against the best input on dev
        assert x["best_input_dev"] - x["dev"] > 0.02
    kept = [(m, i) for m in res.methods for i, s in enumerate(m.settings) if s not in {x["system"] for x in m.excluded}]
    best = max(res.dev_inputs["evidence_recall@10"].values())
    assert all(m.dev["evidence_recall@10"][i] >= best - 0.02 - 1e-12 for m, i in kept)
    assert res.chosen is not None and all(row["inputs"]["bm25"]["paired_interval"] for row in res.test)


def test_dev_curve_band_and_plot(tmp_path):
    run = write_run(tmp_path, questions())
    r = multi_sweep(run, fusions=["wsum", "mnz"], metric="mrr", constraints=["mrr:0.2"])
    wsum = r.methods[0]
    assert len(wsum.dev_intervals) == len(wsum.settings) == 21
    for iv, y in zip(wsum.dev_intervals, wsum.dev["mrr"], strict=True):
        assert iv is not None and iv["lower"] <= y <= iv["upper"]  # 4 dev clusters: an interval per setting
    svg = tmp_path / "curve.svg"
    res = cli.invoke(app, ["sweep", "--run", str(run), "--fusion", "wsum,mnz", "--constraint", "mrr:0.2",
                           "--plot", str(svg)])  # fmt: skip
    assert res.exit_code == 0, res.output
    text = svg.read_text("utf-8")
    assert text.lstrip().startswith("<?xml") and "<svg" in text and f"wrote {svg}" in res.stderr
    bad = cli.invoke(app, ["sweep", "--run", str(run), "--plot", str(tmp_path)])
    assert bad.exit_code == 2 and "--plot" in bad.output


def test_a_thinned_dev_curve_says_how_many_rows_it_shows(tmp_path):
    """Issue 42 item 17: the "21 settings" curve showed 11 rows without saying so; the JSON keeps all 21."""
    run = write_run(tmp_path, questions())
    args = ["sweep", "--run", str(run), "--fusion", "wsum", "--metric", "mrr"]
    r = cli.invoke(app, args)
    assert r.exit_code == 0, r.output
    text = " ".join(r.stdout.split())
    head = "dev curve of wsum (21 settings, "
    assert head in text
    shown = int(text.split(head)[1].split(" shown")[0])
    assert 0 < shown < 21
    assert f"21 settings, {shown} shown (every 2nd, the chosen and the last; all 21 in --format json" in text
    curve = r.stdout.split("dev curve of wsum")[1].split("inputs alone on dev")[0]
    assert sum(1 for line in curve.splitlines() if line.startswith("│")) == shown
    md = cli.invoke(app, [*args, "--format", "markdown"])
    assert f"<summary>dev curve of wsum (21 settings, {shown} shown (every 2nd" in md.stdout
    js = json.loads(cli.invoke(app, [*args, "--format", "json"]).stdout)
    assert len(js["data"]["methods"][0]["settings"]) == 21
