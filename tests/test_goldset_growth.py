"""Gold sets anyone can grow: the alternatives-consistency rule (V035) and ``harness show`` (a chunk's text and
heading path, looked up by id)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from harness.cli import app
from harness.goldset.io import load_goldset
from harness.validate import validate

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "datasets" / "mx-leyes-dof-eval-v1"
runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def write_correction(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------------------ V035


def test_v035_flags_an_alternative_that_another_record_requires_as_a_second_hop(tmp_path: Path):
    """The new-user trial's correction: TE-004 gets ley-hist-320-lgn-2019 (the 2019 law, which the 2025 law
    abrogates) as an alternative of ley-073-lgn, while MD-001 requires both laws as two distinct hops."""
    ok = validate(REAL)
    # the committed set is consistent
    assert ok.rule_summary()["V035"]["fail"] == 0 and ok.rule_summary()["V035"]["pass"] == 2
    corr = write_correction(
        tmp_path / "good.jsonl",
        [
            {
                "id": "TE-004",
                "patch": [
                    {
                        "op": "add",
                        "path": "/gold_documents/0/alternatives/-",
                        "value": {"document_id": "ley-hist-320-lgn-2019"},
                    }
                ],
            }
        ],
    )
    bad = validate(REAL, correction=corr)
    fails = [(qid, f) for qid, code, f in bad.failures() if code == "V035"]
    assert len(fails) == 1
    ((qid, f),) = fails
    assert qid == "TE-004" and f.where.startswith("gold_documents[0].alternatives[")
    assert "ley-hist-320-lgn-2019 is an alternative of ley-073-lgn here, but MD-001 (line " in f.message
    assert "two distinct required gold documents (hops)" in f.message
    # NE-005 lists ley-262-loefam (an alternative of ley-073-lgn in TE-004) only as a useful (grade 1) document:
    # that is not a contradiction, and is not flagged
    ne5 = load_goldset(REAL).by_id()["NE-005"]
    assert {str(g.document_id): g.effective_grade for g in ne5.gold_documents}["ley-262-loefam"] == 1
