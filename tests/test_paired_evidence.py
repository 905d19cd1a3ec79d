"""compare and gate print, beside their paired intervals, what the coverage study measured for that method on paired
differences under the run's own design (issue 29; issue 21 item 3), and the estimand, in every format."""

from __future__ import annotations

import json

import pytest
from conftest import REPO
from typer.testing import CliRunner

from harness.cli import app
from harness.evaluation.runs import load_run
from harness.stats.design_evidence import run_design
from harness.stats.methods import paired_evidence_json, paired_evidence_note
from harness.stats.shown import ShownIntervals

BASELINE = REPO / "runs" / "baselines" / "mx-leyes-dof-eval-v1-six-systems"
runner = CliRunner()
VERBS = {
    "compare": ["compare", str(BASELINE), str(BASELINE), "--baseline-system", "bm25", "--candidate-system", "w0.75",
                "--metric", "mrr", "--reps", "200"],
    "gate": ["gate", "--baseline", str(BASELINE), "--candidate", str(BASELINE), "--baseline-system", "bm25",
             "--candidate-system", "w0.75", "--metric", "mrr"],
}  # fmt: skip


def test_the_note_is_this_designs_evidence_for_paired_cr2():
    design = run_design(load_run(BASELINE))
    note = paired_evidence_note("cr2", design=design)
    assert note.startswith("CR3 jackknife") or note.startswith("CR2 (Satterthwaite t) paired intervals")
    js = paired_evidence_json("cr2", design=design)
    assert js["method"] == "cr2" and js["outcome"] == "paired" and js["text"] in note
    assert "K = 10–80" not in note
    unknown = paired_evidence_json("no-such-method", design=design)
    assert not unknown["measured"] and unknown["text"].startswith("not measured for this design")


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_every_format_carries_this_designs_coverage(verb):
    method = ShownIntervals.for_run(load_run(BASELINE)).paired  # the rule's paired default for this design: cr3
    assert method == "cr3"
    text = paired_evidence_json(method, design=run_design(load_run(BASELINE)))["text"]
    table = runner.invoke(app, VERBS[verb])
    assert table.exit_code in (0, 3), table.output
    flat = " ".join(table.stdout.split())
    assert (
        "paired intervals: " + text.split(" (")[0] in flat
        and "Estimand: difference of the mean over the gold set's documents (docs/goldsets.md#estimand-srs)" in flat
    )
    md = runner.invoke(app, [*VERBS[verb], "--format", "markdown"])
    assert text.split(" (")[0] in " ".join(md.stdout.split()).replace("\\", "")
    data = json.loads(runner.invoke(app, [*VERBS[verb], "--format", "json"]).stdout)["data"]
    assert data["coverage_evidence"]["method"] == method and data["coverage_evidence"]["text"] == text
