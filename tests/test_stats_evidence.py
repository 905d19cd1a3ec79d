"""The evidence reader (harness.stats.evidence): schema validation, one-line errors, and the note beside intervals."""

from __future__ import annotations

import json

import pytest

from harness.errors import HarnessInputError
from harness.stats.evidence import read_evidence
from harness.stats.methods import coverage_evidence


def _file(tmp_path, **over):
    data = {
        "description": "toy populations",
        "corpus": "toy",
        "populations": ["a", "b"],
        "k_min": 10,
        "k_max": 80,
        "level": 0.95,
        "reps": 100,
        "B": 9,
        "seed": 0,
        "generated_by": "test",
        "defaults": {"binary": "cr2", "unit": "cr2", "continuous": "cr2", "paired": "cr2"},
        "rule": "r",
        "methods": {
            "cr2": {
                "binary": {"min": 0.7194, "max": 0.9249, "min_k20": 0.72, "where_min": "a K=20", "populations": 2},
                "paired": {"min": 0.861, "max": 0.861, "where_min": "b K=10", "populations": 1},
            }
        },
    }
    data.update(over)
    path = tmp_path / "ev.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_the_note_beside_an_interval(tmp_path):
    path = _file(tmp_path)
    ev = coverage_evidence("cr2", "binary", path=path)
    assert ev.text == "measured coverage 72–92 % at K = 10–80 on toy populations"
    assert coverage_evidence("paired_cr2", "paired", path=path).text.startswith("measured coverage 86 % at K")
    assert coverage_evidence("cr2", "unit", path=path) is None
    assert coverage_evidence("cr3", "binary", path=path) is None
    assert coverage_evidence("cr2", "binary", path=tmp_path / "missing.json") is None


@pytest.mark.parametrize(
    "over,match",
    [
        ({"k_min": "ten"}, "field k_min"),
        ({"methods": {"cr2": {"binary": {"min": 1.5, "max": 1, "where_min": "a", "populations": 1}}}}, "field methods"),
        ({"extra": 1}, "field extra"),
    ],
)
def test_malformed_files_fail_with_one_line(tmp_path, over, match):
    path = _file(tmp_path, **over)
    with pytest.raises(HarnessInputError, match=match) as exc:
        read_evidence(path)
    assert "\n" not in str(exc.value) and str(path) in str(exc.value)


def test_unreadable_files(tmp_path):
    with pytest.raises(HarnessInputError, match="file not found"):
        read_evidence(tmp_path / "none.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{", encoding="utf-8")
    with pytest.raises(HarnessInputError, match="cannot read the evidence file"):
        read_evidence(bad)
