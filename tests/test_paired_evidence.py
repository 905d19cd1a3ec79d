"""compare and gate print, beside their paired intervals, what the coverage study measured for that method on paired
differences (issue 21 item 3: "print its measured coverage beside every interval it produces"), in every format."""

from __future__ import annotations

import json

import pytest
from conftest import REPO
from typer.testing import CliRunner

from harness.cli import app
from harness.stats.methods import coverage_evidence, paired_evidence_json, paired_evidence_note

BASELINE = REPO / "runs" / "baselines" / "mx-leyes-dof-eval-v1-six-systems"
runner = CliRunner()
VERBS = {
    "compare": ["compare", str(BASELINE), str(BASELINE), "--baseline-system", "bm25", "--candidate-system", "w0.75",
                "--metric", "mrr", "--reps", "200"],
    "gate": ["gate", "--baseline", str(BASELINE), "--candidate", str(BASELINE), "--baseline-system", "bm25",
             "--candidate-system", "w0.75", "--metric", "mrr"],
}  # fmt: skip


def test_the_note_is_the_committed_evidence_for_paired_cr2():
    ev = coverage_evidence("cr2", "paired")
    assert ev is not None and 0 < ev.min <= ev.max <= 1
    note = paired_evidence_note("cr2")
    assert note.startswith("CR2") and ev.text in note
    assert paired_evidence_json("cr2") == {**ev.model_dump(mode="json"), "text": ev.text}
    assert paired_evidence_note("no-such-method") is None and paired_evidence_json("no-such-method") is None


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_every_format_carries_the_measured_coverage(verb):
    text = coverage_evidence("cr2", "paired").text
    table = runner.invoke(app, VERBS[verb])
    assert table.exit_code in (0, 3), table.output
    assert "paired intervals: measured coverage" in " ".join(table.stdout.split())
    md = runner.invoke(app, [*VERBS[verb], "--format", "markdown"])
    assert text in md.stdout
    data = json.loads(runner.invoke(app, [*VERBS[verb], "--format", "json"]).stdout)["data"]
    assert data["coverage_evidence"]["method"] == "cr2" and data["coverage_evidence"]["text"] == text
