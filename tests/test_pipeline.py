"""Pipeline-level facts: clusters and degrees of freedom of gold sets, run records, evaluate round trip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REFERENCE_V4

from harness.evaluation.pipeline import RunOptions, cr2_df, evaluate_rankings, run
from harness.evaluation.runs import load_run
from harness.goldset.clusters import question_clusters
from harness.goldset.io import load_goldset


@pytest.mark.realcorpus
def test_published_v4_has_7_clusters_and_df_near_5():
    if not REFERENCE_V4.exists():
        pytest.skip(f"reference gold set not found at {REFERENCE_V4}")
    gs = load_goldset(REFERENCE_V4)
    labels = question_clusters(gs.records)
    assert len(set(labels.values())) == 7
    # CR2 Satterthwaite df of a mean depends on the cluster sizes only (10, 7, 7, 6, 5, 4, 3)
    assert cr2_df(list(labels.values())) == pytest.approx(5.2386, abs=1e-3)


def test_clusterings(tiny_goldset: Path):
    gs = load_goldset(tiny_goldset)
    assert len(set(question_clusters(gs.records).values())) == 3
    assert question_clusters(gs.records, "first-document")["MD-001"] == "ley-b"
    assert question_clusters(gs.records, "none") == {"SP-001": "SP-001", "SP-002": "SP-002", "MD-001": "MD-001"}


def test_alternatives_do_not_join_clusters(tiny_corpus: Path, tmp_path: Path):
    from conftest import tiny_records, write_tiny_goldset

    recs = tiny_records()
    recs[0]["gold_documents"][0]["alternatives"] = [{"document_id": "dof-c"}]
    gs = load_goldset(write_tiny_goldset(tmp_path / "gs", tiny_corpus, recs))
    labels = question_clusters(gs.records)
    assert labels["SP-001"] != labels["SP-002"]


def test_run_record_round_trip_and_evaluate_equivalence(tiny_corpus: Path, tiny_goldset: Path, tmp_path: Path):
    """Scoring the TREC file a run wrote with `evaluate` reproduces the run's document metrics exactly."""
    opts = RunOptions(bootstrap_reps=200)
    path = run(
        tiny_goldset,
        tiny_corpus,
        ["bm25"],
        workdir=tmp_path / "wd",
        runs_dir=tmp_path / "runs",
        run_id="a",
        options=opts,
    )
    rec = load_run(path)
    assert rec.systems == ["bm25"] and rec.manifest.clusters.n_clusters == 3
    ev = load_run(
        evaluate_rankings(
            tiny_goldset, path / "trec" / "bm25.document.run", runs_dir=tmp_path / "runs", run_id="b", options=opts
        )
    )
    for m in ("mrr", "recall@5", "all_hop@10", "ndcg@10"):
        assert ev.metric_vector("bm25", m) == rec.metric_vector("bm25", m)
    qrels = (path / "trec" / "qrels.document.txt").read_text().split("\n")
    assert "MD-001 0 ley-b 2" in qrels and "MD-001 0 dof-d 2" in qrels
    summary = json.loads((path / "summary.json").read_text())
    iv = summary["systems"]["bm25"]["all"]["overall"]["mrr"]["intervals"]
    assert {"cr2", "iid_wald"} <= set(iv)
