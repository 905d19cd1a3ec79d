"""End to end on the real corpus and the real gold set: six systems with intervals, then the CI gate against the
baseline kept in runs/baselines/. Derived files go to the repository's .harness/ (git-ignored) so that CI pays for
ingest and embedding once; ../shared stays read-only."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import REAL_CORPUS, REAL_GOLDSET, REPO
from typer.testing import CliRunner

from harness.cli import app

pytestmark = pytest.mark.realcorpus
WORKDIR = Path(os.environ.get("HARNESS_WORKDIR", REPO / ".harness"))
BASELINE = REPO / "runs" / "baselines" / "mx-leyes-dof-eval-v1-six-systems"
SYSTEMS = "bm25,vector,rrf,w0.25,w0.5,w0.75"


@pytest.fixture(scope="module")
def six_system_run(tmp_path_factory) -> Path:
    if not REAL_CORPUS.exists():
        pytest.skip(f"real corpus not found at {REAL_CORPUS}")
    runs = tmp_path_factory.mktemp("runs")
    r = CliRunner().invoke(
        app,
        [
            "run",
            "--corpus",
            str(REAL_CORPUS),
            "--goldset",
            str(REAL_GOLDSET),
            "--systems",
            SYSTEMS,
            # the default model (use), the CI baseline's: its embedding is cached in WORKDIR, shared with
            # tests/test_baseline.py, so the suite embeds the corpus once (runs/README.md)
            "--workdir",
            str(WORKDIR),
            "--runs-dir",
            str(runs),
            "--run-id",
            "ci",
        ],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    assert "mrr per category" in r.output and "evidence_recall@20" in r.output
    return runs / "ci"


def test_six_systems_with_intervals(six_system_run: Path):
    summary = json.loads((six_system_run / "summary.json").read_text())
    manifest = json.loads((six_system_run / "manifest.json").read_text())
    assert list(summary["systems"]) == SYSTEMS.split(",")
    assert manifest["clusters"]["n_clusters"] >= 15 and manifest["clusters"]["df"] > 4
    for system, s in summary["systems"].items():
        overall = s["all"]["overall"]
        assert s["all"]["n_questions"] == 42
        for m in ("mrr", "recall@5", "recall@10", "all_hop@10", "evidence_recall@20"):
            iv = overall[m]["intervals"]["cr2"]
            assert iv["lower"] <= overall[m]["mean"] <= iv["upper"], (system, m)
    assert manifest["coverage"]["n_indexed_chunks"] == manifest["corpus"]["n_chunks"]
    assert (six_system_run / "trec" / "w0.5.chunk.run").exists()
    # BM25 and the strongest hybrid find most gold documents; the ordering is a measured fact, not a requirement
    assert summary["systems"]["bm25"]["all"]["overall"]["recall@10"]["mean"] > 0.5


def test_gate_against_the_kept_baseline(six_system_run: Path, tmp_path: Path):
    if not BASELINE.exists():
        pytest.fail(f"baseline run record missing: {BASELINE}")
    for system in ("bm25", "w0.75"):
        r = CliRunner().invoke(
            app,
            [
                "gate",
                "--baseline",
                str(BASELINE),
                "--candidate",
                str(six_system_run),
                "--metric",
                "mrr",
                "--margin",
                "0.02",
                "--baseline-system",
                system,
                "--candidate-system",
                system,
                "--verdict",
                str(tmp_path / f"{system}.json"),
            ],
        )
        assert r.exit_code == 0, r.output
        verdict = json.loads((tmp_path / f"{system}.json").read_text())
        assert verdict["decision"] == "PASS"
        # like against like: the same model, weights and settings; only the run facts (commit) may differ
        assert [c for c in verdict["changes"] if c["scope"] == "system"] == [], verdict["changes"]
