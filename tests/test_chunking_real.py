"""On the real corpus and gold set: `harness run --chunker md-legal-v1` scores evidence derived from the quotes (no
hand-made chunk ids), and the gate between the md-words-v1 and md-legal-v1 runs gives a verdict on
evidence_recall@1000w (issue 20, "done when"). Builds the md-legal-v1 ingest and BM25 indexes when cold."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import REAL_CORPUS, REAL_GOLDSET, REPO

from harness.corpus.store import Corpus
from harness.evaluation.compare import compare_runs
from harness.evaluation.gate import gate
from harness.evaluation.pipeline import RunOptions, run

pytestmark = [pytest.mark.realcorpus, pytest.mark.slow]
WORKDIR = Path(os.environ.get("HARNESS_WORKDIR", REPO / ".harness"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("chunking-runs")
    return {
        ch: run(
            REAL_GOLDSET,
            REAL_CORPUS,
            ["bm25"],
            workdir=WORKDIR,
            runs_dir=out,
            run_id=ch,
            options=RunOptions(chunker=ch),
        )
        for ch in ("md-words-v1", "md-legal-v1")
    }


def test_md_legal_run_scores_evidence_derived_from_quotes(runs):
    m = json.loads((runs["md-legal-v1"] / "manifest.json").read_text())
    ev = m["evidence"]
    assert m["corpus"]["chunker_id"] == ev["chunker_id"] == "md-legal-v1" and ev["goldset_chunker"] == "md-words-v1"
    assert ev["n_quotes"] == ev["n_resolved"] > 0 and ev["n_unresolved"] == 0
    qrels = [line.split()[2] for line in (runs["md-legal-v1"] / "trec" / "qrels.chunk.txt").read_text().splitlines()]
    with Corpus(m["corpus"]["db"]) as c:
        known = set(c.chunk_keys()[0])
    assert qrels and all(cid in known for cid in qrels)  # every evidence chunk is a chunk of md-legal-v1
    words_qrels = (runs["md-words-v1"] / "trec" / "qrels.chunk.txt").read_text()
    assert qrels != [line.split()[2] for line in words_qrels.splitlines()]
    summary = json.loads((runs["md-legal-v1"] / "summary.json").read_text())["systems"]["bm25"]["all"]["overall"]
    for b in (250, 500, 1000, 2000):
        assert 0.0 < summary[f"evidence_recall@{b}w"]["mean"] <= 1.0
        assert "cr2" in summary[f"evidence_recall@{b}w"]["intervals"]


def test_gate_between_the_chunkers_gives_a_verdict_on_evidence_recall_at_1000_words(runs):
    v = gate(runs["md-words-v1"], runs["md-legal-v1"], metric="evidence_recall@1000w", margin=0.02)
    assert v.decision in ("PASS", "FAIL", "INCONCLUSIVE") and v.exit_code in (0, 1, 3)
    assert v.checks[0].lower is not None and v.checks[0].upper is not None
    rep = compare_runs(runs["md-words-v1"], runs["md-legal-v1"])
    compared = {c.metric for c in rep.comparisons}
    assert "evidence_recall@1000w" in compared and "mrr" in compared and "evidence_mrr" not in compared
