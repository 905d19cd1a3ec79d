"""Issue 42 item 6: trec_eval spellings read as the ir_measures ids (never the harness's own ndcg@k/recall@k), with a
``note:`` line; another case only where it names one family; a near id for an unknown metric and for ``show``."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write_tiny_corpus
from typer.testing import CliRunner

from harness import metrics
from harness.cli import app
from harness.errors import MetricError
from harness.metrics import MetricSpec

BASELINE = Path(__file__).resolve().parents[1] / "runs" / "baselines" / "mx-leyes-dof-eval-v1-six-systems"
GATE = ["gate", "--baseline", str(BASELINE), "--candidate", str(BASELINE), "--baseline-system", "bm25"]
GATE += ["--candidate-system", "w0.75"]


@pytest.mark.parametrize(
    ("trec", "ir_measures"),
    [("ndcg_cut_10", "nDCG@10"), ("P_5", "P@5"), ("recall_10", "R@10"), ("map_cut_100", "AP@100"),
     ("recip_rank", "RR"), ("success_10", "Success@10"), ("map", "AP"), ("ndcg", "nDCG")],
)  # fmt: skip
def test_trec_eval_spellings_are_the_ir_measures_ids(trec, ir_measures, capsys):
    assert MetricSpec.parse(trec).id == ir_measures
    err = capsys.readouterr().err
    assert err == "" or err.startswith(f"note: {trec} (trec_eval) is read as {ir_measures} (ir_measures id")


def test_another_case_only_where_it_names_one_family():
    assert MetricSpec.parse("MRR").id == "mrr" and MetricSpec.parse("Recall@10").id == "recall@10"
    with pytest.raises(MetricError, match=r"metric 'NDCG@10' is ambiguous: 'ndcg@10' or 'nDCG@10'"):
        MetricSpec.parse("NDCG@10")
    with pytest.raises(MetricError, match=r"unknown metric 'mrrr'; did you mean 'mrr'\?"):
        MetricSpec.parse("mrrr")
    with pytest.raises(MetricError, match=r"unknown metric 'MAP' \(trec_eval's MAP is AP here\)"):
        MetricSpec.parse("MAP@10")  # not a trec_eval spelling (map_cut_10 is): the hint says what to write


def test_gate_reads_trec_eval_names_with_a_note(monkeypatch):
    monkeypatch.setattr(metrics, "_NOTED", set())  # the note prints once per process and spelling
    r = CliRunner().invoke(app, [*GATE, "--metric", "ndcg_cut_10"])
    assert r.exit_code == 0, r.output
    assert r.stderr.startswith(
        "note: ndcg_cut_10 (trec_eval) is read as nDCG@10 (ir_measures id, trec_eval semantics, not the harness's "
        "own ndcg@10)"
    )
    assert r.stdout.startswith("PASS: nDCG@10 w0.75 - bm25 = +0.0425")
    r = CliRunner().invoke(app, [*GATE, "--metric", "MRR"])
    assert r.exit_code == 0 and r.stdout.startswith("PASS: mrr w0.75 - bm25 = +0.0378"), r.output
    assert "note: MRR is read as mrr (metric ids are case-sensitive)" in r.stderr
    r = CliRunner().invoke(app, [*GATE, "--metric", "NDCG@10"])
    assert r.exit_code == 2
    assert r.stderr.strip() == "error: metric 'NDCG@10' is ambiguous: 'ndcg@10' or 'nDCG@10' (ids are " \
        "case-sensitive); give one"  # fmt: skip
    r = CliRunner().invoke(app, [*GATE, "--metric", "mrrr"])
    assert r.exit_code == 2 and r.stderr.startswith("error: unknown metric 'mrrr'; did you mean 'mrr'?; known: ")


def test_unknown_command_and_chunk_get_the_nearest_id(tmp_path):
    r = CliRunner().invoke(app, ["rnu"])
    assert r.exit_code == 2 and "Did you mean 'run'?" in r.output
    corpus = write_tiny_corpus(tmp_path / "corpus")
    r = CliRunner().invoke(app, ["show", "ley-aa#0", "--corpus", str(corpus)])
    assert r.exit_code == 2
    assert r.stderr.startswith("error: CHUNK_ID 'ley-aa#0': document 'ley-aa' is not in the corpus")
    assert r.stderr.rstrip().endswith("did you mean 'ley-a#0'?")
    far = CliRunner().invoke(app, ["show", "zzzzzzzz#0", "--corpus", str(corpus)])
    assert far.exit_code == 2 and "did you mean" not in far.stderr
