"""``harness report RUN --split test``: every figure over the split's questions, headers naming the clusters the
intervals use; ``compare --split`` headers likewise (before: "27 clusters; test split only" with 14 used)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from test_sweep import questions, write_run
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import HarnessInputError
from harness.evaluation.compare import compare_runs
from harness.evaluation.runs import load_run
from harness.evaluation.subset import restrict_split
from harness.stats import cr2

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "runs" / "baselines" / "mx-leyes-dof-eval-v1-six-systems"
cli = CliRunner()


def test_restrict_split_recomputes_means_intervals_and_clusters_from_the_split_rows(tmp_path):
    run = load_run(write_run(tmp_path, questions()))
    sub = restrict_split(run, "test")
    test_q = ["T1", "T2", "T3"]
    assert sorted({r.qid for r in sub.per_question}) == test_q
    assert sub.manifest.clusters.n_clusters == 3 and set(sub.manifest.clusters.labels) == set(test_q)
    assert run.manifest.clusters.n_clusters == 7
    for system in ("bm25", "vector"):
        y = [r.metrics["mrr"] for r in run.rows(system) if r.qid in test_q]
        s = sub.system_summary(system)["all"]
        assert s.n_questions == 3 and s.n_clusters == 3
        assert s.overall["mrr"].mean == pytest.approx(math.fsum(y) / 3)
        ref = cr2(np.array(y), [run.clusters()[q] for q in test_q])
        assert s.overall["mrr"].intervals["cr2"].lower == pytest.approx(ref.lower)
        assert s.overall["mrr"].intervals["cr2"].upper == pytest.approx(ref.upper)
    assert restrict_split(run, "all") is run
    with pytest.raises(HarnessInputError, match="--split: 'train'"):
        restrict_split(run, "train")


def test_report_split_names_the_questions_and_clusters_used(tmp_path):
    run = write_run(tmp_path, questions())
    r = cli.invoke(app, ["report", str(run), "--split", "test", "--format", "markdown", "--out", "-"])
    assert r.exit_code == 0, r.output
    text = r.stdout
    assert "test split only: 3 questions in 3 clusters (the run has 7 questions in 7)" in text
    assert "clustering components, 3 clusters" in text
    assert "| bm25 (baseline) | 3 |" in text  # n per system: the split's questions
    whole = cli.invoke(app, ["report", str(run), "--format", "markdown", "--out", "-"])
    assert "split only" not in whole.stdout and "| bm25 (baseline) | 7 |" in whole.stdout
    html = tmp_path / "r.html"
    h = cli.invoke(app, ["report", str(run), "--split", "dev", "--out", str(html)])
    assert h.exit_code == 0, h.output
    page = html.read_text("utf-8")
    assert "dev split only: 4 questions in 4 clusters" in page and "Means over the dev split's questions" in page
    bad = cli.invoke(app, ["report", str(run), "--split", "train", "--out", "-"])
    assert bad.exit_code == 2 and "--split: 'train' is not one of all, dev, test" in bad.output


def test_compare_header_on_a_split_names_the_clusters_the_intervals_use(tmp_path):
    run = write_run(tmp_path, questions())
    rep = compare_runs(run, run, metrics=["mrr"], split="test")
    assert rep.clustering["n_clusters"] == 3 and rep.clustering["n_clusters_run"] == 7
    assert rep.comparisons[0].clusters["n"] == 3
    r = cli.invoke(app, ["compare", str(run), str(run), "--metrics", "mrr", "--split", "test"])
    out = " ".join(r.stdout.split())
    assert "3 clusters; test split only" in out and "7 clusters" not in out
    assert compare_runs(run, run, metrics=["mrr"]).clustering["n_clusters"] == 7


@pytest.mark.slow
@pytest.mark.realcorpus
def test_real_report_on_the_test_split_names_14_clusters_and_21_questions(tmp_path):
    """On the committed baseline, or the run named by ``HARNESS_SPLIT_RUN`` (any run of the real gold set)."""
    import os

    run = Path(os.environ.get("HARNESS_SPLIT_RUN") or BASELINE)
    if not run.exists():
        pytest.skip(f"no run at {run}")
    out = tmp_path / "r.md"
    r = cli.invoke(app, ["report", str(run), "--split", "test", "--format", "markdown", "--out", str(out)])
    assert r.exit_code == 0, r.output
    text = out.read_text("utf-8")
    assert "test split only: 21 questions in 14 clusters (the run has 42 questions in 27)" in text
    assert "clustering components, 14 clusters" in text
