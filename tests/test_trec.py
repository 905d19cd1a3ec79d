"""One TREC module: rankings in (TREC run files, JSONL) and TREC runs and qrels out, round-tripping exactly."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import HarnessInputError
from harness.evaluation.trec import read_rankings, trec_qrels_lines, trec_run_lines
from harness.goldset.io import load_goldset


def test_run_lines_read_back_as_the_same_rankings(tmp_path: Path):
    # rankings in the harness's tie order (score descending, then id ascending): d1 before d2 at 3.5
    docs = {"Q1": [("d1", 3.5), ("d2", 3.5), ("d3", 0.25)], "Q2": [("d9", 1.0)]}
    lines = trec_run_lines("sys", "document", docs)
    # the tie is written one float32 step apart, so tools that re-sort by score keep the harness's order
    assert lines[:2] == ["Q1 Q0 d1 1 3.5 sys", "Q1 Q0 d2 2 3.49999976 sys"] and lines[-1] == "Q2 Q0 d9 1 1 sys"
    f = tmp_path / "sys.document.run"
    f.write_text("\n".join(lines) + "\n", "utf-8")
    back = read_rankings(f).results
    assert [d for d, _ in back["sys"]["Q1"].docs] == ["d1", "d2", "d3"]
    assert back["sys"]["Q2"].docs == [("d9", 1.0)] and back["sys"]["Q2"].chunks is None
    chunks = trec_run_lines("sys", "chunk", {"Q1": [("d1#0", 2.0)]})
    f.write_text("\n".join(chunks) + "\n", "utf-8")
    assert read_rankings(f).results["sys"]["Q1"].chunks == [("d1#0", 2.0)]


def test_qrels_lines_of_a_gold_set(tiny_goldset: Path):
    gs = load_goldset(tiny_goldset)
    docs = trec_qrels_lines(gs, "document")
    chunks = trec_qrels_lines(gs, "chunk")
    assert "SP-001 0 ley-a 2" in docs and "MD-001 0 ley-b 2" in docs and "MD-001 0 dof-d 2" in docs
    assert chunks == ["SP-001 0 ley-a#0 1", "SP-002 0 dof-c#0 1", "MD-001 0 ley-b#0 1", "MD-001 0 dof-d#0 1"]


def test_malformed_trec_line_is_located(tmp_path: Path):
    f = tmp_path / "bad.run"
    f.write_text("Q1 Q0 d1 1 2.0 sys\nQ1 Q0 d2 2 x sys\n", "utf-8")
    with pytest.raises(HarnessInputError, match=r"bad\.run:2: field score: 'x' is not a number"):
        read_rankings(f)
