"""Paired comparison across chunkers (issue 20 item 4): compare drops the chunk-count metrics of its default list
(one stderr line) and adds the budget metrics; naming a chunk-count metric is unusable input (exit 2); the gate
judges evidence_recall@1000w; everything else check_comparable checks still has to agree."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import IncomparableError
from harness.evaluation.chunkers import metrics_across_chunkers
from harness.evaluation.compare import DEFAULT_COMPARE_METRICS, compare_runs
from harness.evaluation.gate import gate
from harness.evaluation.record import RUN_SCHEMA_VERSION
from harness.evaluation.runs import load_run, write_run_record
from harness.metrics import METRIC_SETS

runner = CliRunner()
COUNTED = ("evidence_recall@10", "evidence_recall@20", "evidence_mrr")
BUDGET = METRIC_SETS["budget"]
NO_QUOTES = {"Q-003", "Q-017"}  # questions without a located quote: no budget values, on both sides


def make_run(runs: Path, run_id: str, chunker: str, *, shift=0.0, seed=0, depth=50, n=60) -> Path:
    rng = np.random.default_rng(seed)
    base = np.random.default_rng(99).uniform(0.2, 0.8, n)
    rows = []
    labels = {}
    for i in range(n):
        q = f"Q-{i:03d}"
        labels[q] = f"c{i % 20}"
        v = float(np.clip(base[i] + shift + rng.normal(0, 0.01), 0, 1))
        metrics = {m: v for m in ("mrr", "recall@5", "recall@10", "all_hop@10", *COUNTED)}
        flags: dict = {}
        if q in NO_QUOTES:
            flags["omitted"] = dict.fromkeys(BUDGET, "no_quotes")
        else:
            metrics.update(dict.fromkeys(BUDGET, v))
        rows.append(
            {
                "system": "bm25",
                "qid": q,
                "category": "single_passage",
                "cluster": labels[q],
                "metrics": metrics,
                "flags": flags,
            }
        )
    manifest = {
        "schema_version": RUN_SCHEMA_VERSION,
        "run_id": run_id,
        "goldset": {"sha256": "a" * 64, "name": "g", "version": "1"},
        "corpus": {"corpus_hash": "h" * 64, "chunker_id": chunker},
        "depths": {"document": depth, "chunk": 200},
        "systems": ["bm25"],
        "clusters": {"mode": "components", "n_clusters": 20, "labels": labels},
    }
    return write_run_record(
        runs, run_id, manifest=manifest, per_question=rows, summary={"systems": {}}, trec_runs={}, qrels={}
    )


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    runs = tmp_path / "runs"
    return make_run(runs, "words", "md-words-v1"), make_run(runs, "legal", "md-legal-v1", shift=0.05, seed=1)


def test_default_list_drops_chunk_counts_adds_budgets_with_one_line(pair, capsys):
    rep = compare_runs(*pair)
    compared = [c.metric for c in rep.comparisons]
    assert compared == [*(m for m in DEFAULT_COMPARE_METRICS if m not in COUNTED), *BUDGET]
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "different chunkers (md-words-v1 vs md-legal-v1)" in err[0]
    assert "not compared: evidence_recall@10, evidence_recall@20" in err[0]
    budget = next(c for c in rep.comparisons if c.metric == "evidence_recall@1000w")
    assert budget.questions["wins"] + budget.questions["ties"] + budget.questions["losses"] == 60 - len(NO_QUOTES)
    assert budget.diff == pytest.approx(0.05, abs=0.01)


def test_naming_a_chunk_count_metric_is_unusable(pair):
    with pytest.raises(IncomparableError, match="--metrics evidence_mrr: counts chunks"):
        compare_runs(*pair, metrics=("mrr", "evidence_mrr"))
    with pytest.raises(IncomparableError, match="--metric evidence_recall@10: counts chunks"):
        gate(*pair, metric="evidence_recall@10")
    with pytest.raises(IncomparableError, match="evidence_recall@20"):
        gate(*pair, metric="mrr", guards=["single_passage:evidence_recall@20:0.1"])


def test_same_chunker_lists_unchanged_and_other_keys_still_checked(tmp_path, capsys):
    runs = tmp_path / "runs"
    a = make_run(runs, "a", "md-words-v1")
    b = make_run(runs, "b", "md-words-v1", shift=0.01)
    rep = compare_runs(a, b)
    assert [c.metric for c in rep.comparisons] == list(DEFAULT_COMPARE_METRICS)
    assert capsys.readouterr().err == ""
    assert metrics_across_chunkers(load_run(a), load_run(b), ["evidence_mrr"], ()) == ("evidence_mrr",)
    other = make_run(runs, "deeper", "md-legal-v1", depth=100)
    with pytest.raises(IncomparableError, match="depths.document differs"):
        compare_runs(a, other)


def test_gate_gives_a_verdict_on_evidence_recall_at_1000_words(pair):
    v = gate(*pair, metric="evidence_recall@1000w", margin=0.02)
    assert v.decision == "PASS" and v.exit_code == 0
    assert v.n_questions == 60 - len(NO_QUOTES)


def test_cli_compare_exit_0_and_explicit_exit_2(pair):
    r = runner.invoke(app, ["compare", str(pair[0]), str(pair[1]), "--json"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["compare", str(pair[0]), str(pair[1]), "--metrics", "evidence_recall@10"])
    assert r.exit_code == 2 and "counts chunks" in r.output
    r = runner.invoke(
        app,
        ["gate", "--baseline", str(pair[0]), "--candidate", str(pair[1]), "--metric", "evidence_recall@1000w"]
        + ["--verdict", str(pair[0].parent / "v.json")],
    )
    assert r.exit_code == 0, r.output
    assert json.loads((pair[0].parent / "v.json").read_text())["decision"] == "PASS"
