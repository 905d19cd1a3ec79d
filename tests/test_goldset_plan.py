"""Issue 29 item 3b: ``harness goldset plan`` draws a gold set's documents by PPS and records the draws; a run on such
a gold set clusters by draw and reports Hansen-Hurwitz intervals; ``compare`` / ``gate`` use the paired Hansen-Hurwitz
interval.

Golden values of the paired Hansen-Hurwitz interval: it is the Hansen-Hurwitz t interval of the per-question
differences b - a with the draws as PSUs. R is not installable on this machine, so no new R run was made for this
issue. The reference values are the "HH difference" line that R survey 4.1.1 (R 4.2.2) printed for
tests/r/pps_wu_golden.R (``svymean`` + ``confint(df = degf)`` on ``svydesign(ids = ~draw, probs = ~pi)`` of those
differences; output and sessionInfo() in tests/r/pps_wu_golden.out). Here ``a`` and ``b`` are built so that
``b - a`` equals that script's ``y_diff``. The closed-form with-replacement formula (Cochran 1977 eq. 9A.6: mean of
the draw means, variance s_r^2 / K, t on K - 1 df) is also written out independently below, and hypothesis checks the
invariants (antisymmetry in a and b, shift equivariance, duplicated draws).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conftest import tiny_records, write_tiny_corpus, write_tiny_goldset
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import HarnessInputError
from harness.evaluation.compare import compare_runs
from harness.evaluation.runs import load_run
from harness.goldset.io import load_goldset
from harness.stats.design_evidence import run_design
from harness.stats.paired import paired
from harness.studies.goldset_plan import plan_goldset

runner = CliRunner()

# tests/r/pps_wu_golden.R: draw_diff, y_diff and the "HH difference" line of tests/r/pps_wu_golden.out
DRAW_DIFF = [1, 1, 2, 3, 3, 3, 4, 4, 5, 5, 5, 5, 6, 7, 7, 8, 8, 8]
Y_DIFF = [1, 0, -1, 0.5, 0, 0, -0.5, 1, 0, 0, 1, -1, 0.25, 0, 0.75, -0.25, 0, 1]
R_HH_DIFFERENCE = (0.098958333333333329, 0.16516013678769509, 7, -0.29158333151123211, 0.48949999817789874)


def _closed_form(d, draws, level=0.95):
    d, draws = np.asarray(d, float), np.asarray(draws)
    r = np.array([d[draws == g].mean() for g in np.unique(draws)])
    k = r.size
    m, se = r.mean(), r.std(ddof=1) / math.sqrt(k)
    t = stats.t.ppf(0.5 + level / 2, k - 1)
    return m, se, k - 1, m - t * se, m + t * se


def test_paired_hansen_hurwitz_equals_r_survey_and_the_closed_form():
    rng = np.random.default_rng(0)
    a = rng.random(len(Y_DIFF))
    b = a + np.asarray(Y_DIFF)
    iv = paired(a, b, DRAW_DIFF, method="hansen_hurwitz")
    got = (iv.estimate, iv.se, iv.df, iv.lower, iv.upper)
    assert got == pytest.approx(R_HH_DIFFERENCE, abs=1e-12)
    assert got == pytest.approx(_closed_form(b - a, DRAW_DIFF), abs=1e-12)
    assert iv.method == "paired_hansen_hurwitz"


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(-1, 1, allow_nan=False), min_size=6, max_size=40),
    st.integers(2, 6),
    st.floats(-0.5, 0.5, allow_nan=False),
)
def test_paired_hansen_hurwitz_invariants(values, k, shift):
    d = np.asarray(values)
    draws = np.arange(d.size) % k
    a = np.full(d.size, -2.0)  # off [0, 1]: the arithmetic unclipped (a unit metric's difference is clipped to [-1, 1])
    iv = paired(a, d + a, draws, method="hansen_hurwitz")
    back = paired(d + a, a, draws, method="hansen_hurwitz")
    assert back.estimate == pytest.approx(-iv.estimate, abs=1e-12)
    assert back.lower == pytest.approx(-iv.upper, abs=1e-12) and back.upper == pytest.approx(-iv.lower, abs=1e-12)
    moved = paired(a, d + a + shift, draws, method="hansen_hurwitz")
    assert moved.estimate == pytest.approx(iv.estimate + shift, abs=1e-12)
    assert moved.upper - moved.lower == pytest.approx(iv.upper - iv.lower, abs=1e-9)
    ref = _closed_form(d, draws)
    assert (iv.estimate, iv.lower, iv.upper) == pytest.approx((ref[0], ref[3], ref[4]), abs=1e-9)


def test_plan_records_the_draws_in_the_manifest(tmp_path):
    corpus = write_tiny_corpus(tmp_path / "corpus")
    res = plan_goldset(corpus, tmp_path / "plan", documents=5, design="pps", seed=3, chunk_words=5, query_words=2)
    man = json.loads((tmp_path / "plan" / "plan.meta.json").read_text("utf-8"))
    assert man == res.manifest and man["name"] == "plan" and man["chunker_version"] == "md-words-v1"
    d = man["design"]
    assert d["sampling"] == "pps" and d["seed"] == 3 and d["documents"] == 5 and len(d["draws"]) == 5
    assert [x["draw"] for x in d["draws"]] == list(range(5))
    assert all(0 < x["p"] <= 1 for x in d["draws"]) and "chunk-queries per document" in d["size_measure"]
    assert (tmp_path / "plan" / "plan.jsonl").read_text() == ""
    assert "| draw |" in (tmp_path / "plan" / "PLAN.md").read_text()
    again = plan_goldset(corpus, tmp_path / "plan2", documents=5, design="pps", seed=3, chunk_words=5, query_words=2)
    assert again.draws == res.draws  # seeded
    with pytest.raises(HarnessInputError, match="already exists"):
        plan_goldset(corpus, tmp_path / "plan", documents=5)
    r = runner.invoke(app, ["goldset", "plan", "--corpus", str(corpus), "--out", str(tmp_path / "p3"),
                            "--documents", "4", "--seed", "1", "--chunk-words", "5", "--query-words", "2",
                            "--format", "json"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert len(json.loads(r.stdout)["data"]["draws"]) == 4
    bad = runner.invoke(app, ["goldset", "plan", "--corpus", str(corpus), "--out", str(tmp_path / "p4"),
                              "--design", "quota"])  # fmt: skip
    assert bad.exit_code == 2 and not (tmp_path / "p4").exists()


DRAWS = [{"draw": 0, "doc_id": "ley-a", "p": 0.4}, {"draw": 1, "doc_id": "dof-c", "p": 0.2},
         {"draw": 2, "doc_id": "ley-b", "p": 0.3}, {"draw": 3, "doc_id": "ley-a", "p": 0.4}]  # fmt: skip


def _pps_goldset(tmp_path):
    corpus = write_tiny_corpus(tmp_path / "corpus")
    recs = tiny_records()
    extra = dict(recs[0], id="SP-003")  # a second question on ley-a: dealt to its second draw
    gs = write_tiny_goldset(tmp_path / "gs", corpus, [*recs, extra], design={"sampling": "pps", "seed": 0,
                            "draws": DRAWS})  # fmt: skip
    return corpus, gs


@pytest.mark.slow  # tens of seconds on the shared machine
def test_a_run_on_a_pps_gold_set_reports_hansen_hurwitz_and_compare_uses_it(tmp_path):
    corpus, gs = _pps_goldset(tmp_path)
    args = ["run", "--corpus", str(corpus), "--goldset", str(gs), "--workdir", str(tmp_path / "wd"), "--runs-dir",
            str(tmp_path / "runs"), "--systems", "bm25,tfidf", "--bootstrap-reps", "200"]  # fmt: skip
    r = runner.invoke(app, [*args, "--run-id", "pps"])
    assert r.exit_code == 0, r.output
    run = load_run(tmp_path / "runs" / "pps")
    assert run.manifest.goldset.model_extra["design"]["sampling"] == "pps"
    labels = {row.qid: row.cluster for row in run.rows("bm25")}
    assert labels == {"SP-001": "draw-0", "SP-003": "draw-3", "SP-002": "draw-1", "MD-001": "draw-2"}
    ivs = run.summary.systems["bm25"]["all"].overall["mrr"].intervals
    assert {"hansen_hurwitz", "hansen_hurwitz_logit", "cr2"} <= set(ivs)
    y = [row.metrics["mrr"] for row in run.rows("bm25")]
    hh = ivs["hansen_hurwitz"]
    cl = [labels[row.qid] for row in run.rows("bm25")]
    m, se, df, lo, hi = _closed_form(y, np.asarray(cl))
    assert (hh.estimate, hh.df) == pytest.approx((m, df)) and hh.lower == pytest.approx(max(lo, 0.0))
    design = run_design(run)
    assert design.sampling == "pps" and "chunk-weighted mean" in design.estimand
    rep = compare_runs(run, run, system_a="bm25", system_b="tfidf", metrics=["mrr"], reps=200)
    assert rep.method == "hansen_hurwitz" and rep.comparisons[0].interval["method"] == "paired_hansen_hurwitz"
    cmp = ["compare", str(run.path), str(run.path), "--baseline-system", "bm25", "--candidate-system", "tfidf",
           "--metric", "mrr", "--reps", "200"]  # fmt: skip
    out = " ".join(runner.invoke(app, cmp).stdout.split())
    assert "Estimand: difference of the corpus's chunk-weighted mean (PPS) (docs/goldsets.md#estimand-pps)" in out
    assert "Hansen-Hurwitz t [PPS] paired intervals" in out


def test_a_question_off_the_draws_is_refused(tmp_path):
    corpus = write_tiny_corpus(tmp_path / "corpus")
    gs = write_tiny_goldset(tmp_path / "gs", corpus, design={"sampling": "pps", "draws": DRAWS[:2]})
    from harness.evaluation.design import design_clusters

    with pytest.raises(HarnessInputError, match=r"record MD-001: field gold_documents\[0\]: 'ley-b' is none of"):
        design_clusters(load_goldset(gs), {})
