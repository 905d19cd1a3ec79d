"""The known-item gate on the real corpus (issue 30, done-when).

* bm25 against tfidf with margin 0.01 FAILs (exit 1); bm25 against itself PASSes (exit 0), and so does
  ``bm25:b=0.7``, whose census difference lies within half the margin;
* a deliberately worse candidate, ``benchmarks/ki_plugins.py:DropBest10`` (bm25 that drops its best hit for 10 % of
  queries), FAILs on the known-item check, while its gold-set twin (the baseline's bm25 export with the best document
  and chunk dropped for the same 10 % rule, scored by ``harness evaluate``) is INCONCLUSIVE on the gold set.

Nothing hard-codes a figure of the corpus: every number asserted is read from the outputs. The known-item runs use
``$HARNESS_REAL_WORKDIR`` when set (its caches make them warm), else a temporary work directory (cold: minutes).
"""

from __future__ import annotations

import json
import os
import sys

import pytest
from conftest import REAL_CORPUS, REAL_GOLDSET, REPO
from typer.testing import CliRunner

from harness.cli import app

pytestmark = [pytest.mark.realcorpus, pytest.mark.slow]
runner = CliRunner()


def _invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def _verdict(r) -> dict:
    doc = json.loads(r.stdout)
    return doc.get("data", doc)


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    if not (REAL_CORPUS / "metadata.jsonl").exists():
        pytest.skip("the real corpus is not here")
    tmp = tmp_path_factory.mktemp("ki-real")
    wd = os.environ.get("HARNESS_REAL_WORKDIR") or str(tmp / "wd")
    systems = "bm25,tfidf,bm25:b=0.7,drop=py:benchmarks/ki_plugins.py:DropBest10"
    old = os.environ.get("HARNESS_WORKDIR")
    os.environ["HARNESS_WORKDIR"] = wd  # DropBest10 reads the study's cached tokens from it
    try:
        r = _invoke(
            "known-item",
            "--corpus",
            REAL_CORPUS,
            "--out",
            tmp / "ki",
            "--systems",
            systems,
            "--workdir",
            wd,
            "--chunk-depth",
            10,
            "--format",
            "json",
        )  # fmt: skip  (hit@1 reads rank 1 only)
    finally:
        os.environ.pop("HARNESS_WORKDIR") if old is None else os.environ.__setitem__("HARNESS_WORKDIR", old)
    assert r.exit_code == 0, r.output
    r = _invoke("run", "--corpus", REAL_CORPUS, "--goldset", REAL_GOLDSET, "--systems", "bm25", "--workdir", wd,
                "--runs-dir", tmp / "runs", "--run-id", "base", "--format", "json")  # fmt: skip
    assert r.exit_code == 0, r.output
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        from ki_plugins import drop_trec
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    dropped = drop_trec(tmp / "runs" / "base", REAL_GOLDSET, tmp / "drop.trec")
    r = _invoke("evaluate", "--goldset", REAL_GOLDSET, "--rankings", tmp / "drop.trec", "--runs-dir", tmp / "runs",
                "--run-id", "drop", "--format", "json")  # fmt: skip
    assert r.exit_code == 0, r.output
    return {"ki": tmp / "ki", "runs": tmp / "runs", "dropped": dropped}


def _ki(real, candidate, margin=0.01):
    return _invoke("gate", "--known-item", real["ki"], "--baseline-system", "bm25", "--candidate-system", candidate,
                   "--known-item-margin", margin, "--format", "json")  # fmt: skip


def test_tfidf_fails_itself_and_a_near_identical_bm25_pass(real):
    r = _ki(real, "tfidf")
    assert r.exit_code == 1, r.output
    c = _verdict(r)["checks"][0]
    assert c["decision"] == "FAIL" and c["census_diff"] < -0.01 and c["upper"] < -0.01
    assert c["n_documents"] > 400 and c["coverage"]["coverage"] > 0.85 and c["minimum_detectable_difference"] < 0.02
    assert _ki(real, "bm25").exit_code == 0
    r = _ki(real, "bm25:b=0.7")
    c = _verdict(r)["checks"][0]
    assert abs(c["census_diff"]) <= 0.005 and r.exit_code == 0, r.output


def test_worse_candidate_fails_known_item_while_gold_set_is_inconclusive(real):
    assert real["dropped"]  # the 10 % rule picks some gold-set questions
    r = _ki(real, "drop")
    assert r.exit_code == 1, r.output
    assert _verdict(r)["checks"][0]["census_diff"] < -0.01
    gold = _invoke("gate", "--baseline", real["runs"] / "base", "--candidate", real["runs"] / "drop",
                   "--baseline-system", "bm25", "--candidate-system", "drop", "--metric", "mrr", "--margin", 0.02,
                   "--format", "json")  # fmt: skip
    assert gold.exit_code == 3 and _verdict(gold)["decision"] == "INCONCLUSIVE", gold.output
