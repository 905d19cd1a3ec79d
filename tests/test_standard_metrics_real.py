"""Issue 31's done-when on the real corpus: ``harness run ... --metrics AP@100,nDCG@20,P@5,R@100,RR@10`` writes those
metrics for every system, and pytrec_eval on the record's exports reproduces each one per question exactly on the
42-question gold set (ties included: the exports' scores carry the harness's tie order; alternatives: the
ir_measures names are defined over the exported qrels, so there is no difference to allow for).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import REAL_CORPUS, REAL_GOLDSET, REPO
from test_standard_metrics import DONE_WHEN, parse_qrels, pytrec
from typer.testing import CliRunner

from harness.cli import app
from harness.evaluation.runs import load_run

pytestmark = [pytest.mark.realcorpus, pytest.mark.slow]
WORKDIR = Path(os.environ.get("HARNESS_WORKDIR", REPO / ".harness"))


def test_done_when_run_metrics_reproduced_by_pytrec_eval_on_42_questions(tmp_path: Path):
    if not REAL_CORPUS.exists():
        pytest.skip(f"real corpus not found at {REAL_CORPUS}")
    chunk = ",chunk.AP@100,chunk.nDCG@20,chunk.RR@10"
    args = ["-q", "run", "--corpus", str(REAL_CORPUS), "--goldset", str(REAL_GOLDSET), "--systems",
            "bm25,tfidf", "--workdir", str(WORKDIR), "--runs-dir", str(tmp_path), "--run-id", "real",
            "--bootstrap-reps", "200", "--metrics", ",".join(DONE_WHEN) + chunk, "--format", "json"]  # fmt: skip
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    path = tmp_path / "real"
    rec = load_run(path)
    assert rec.manifest.depths.document == 100 and len({r.qid for r in rec.per_question}) == 42
    rows = [json.loads(x) for x in (path / "per_question.jsonl").read_text("utf-8").splitlines()]
    n_values = 0
    for level, metrics in (("document", DONE_WHEN), ("chunk", ("chunk.AP@100", "chunk.nDCG@20", "chunk.RR@10"))):
        qrels = parse_qrels((path / "trec" / f"qrels.{level}.txt").read_text("utf-8").splitlines())
        assert len(qrels) == 42
        for system in rec.systems:
            lines = (path / "trec" / f"{system}.{level}.run").read_text("utf-8").splitlines()
            for metric in metrics:
                mine = {r["qid"]: r["metrics"][metric] for r in rows if r["system"] == system}
                assert mine == pytrec(qrels, lines, metric), (system, metric)
                n_values += len(mine)
                assert rec.summary.systems[system]["all"].overall[metric].mean is not None
    assert n_values == 2 * 8 * 42
    # ties are exercised: rankings with equal scores inside the depth (resolved by id, read back by the tools)
    tied = sum(
        1
        for r in rows
        for level in ("document", "chunk")
        if len({s for _, s in r["rankings"][level]}) < len(r["rankings"][level])
    )
    assert tied > 0
