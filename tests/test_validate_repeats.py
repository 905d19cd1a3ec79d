"""Repeated ids and questions are reported once per group with a count, so the findings grow linearly with the
repeats (issue 44 item 9: 20,000 draft records with repeated questions took 13.5 min and 2 GB for 44 MB of
findings: every record listed every other)."""

from __future__ import annotations

from pathlib import Path

from harness.goldset.io import GoldSet
from harness.goldset.schema import GoldRecord
from harness.validate.rules import RULES, Context
from harness.validate.rules.records import LISTED


def _records(n: int, *, same_id: bool = False, alternative: bool = False) -> list[GoldRecord]:
    out = []
    for i in range(n):
        gd = [{"document_id": "D", "grade": 2, "alternatives": [{"document_id": "A"}] if alternative else []}]
        if alternative:
            gd.append({"document_id": "A", "grade": 2})
        rec = {"id": "Q" if same_id else f"Q{i}", "category": "c", "question": "¿La MISMA pregunta?",
               "gold_documents": gd}  # fmt: skip
        out.append(GoldRecord.model_validate(rec))
    return out


def _findings(code: str, records: list[GoldRecord]) -> list:
    gs = GoldSet(records=records, manifest=None, records_path=Path("drafts.jsonl"))
    ctx = Context(goldset=gs, lines=list(range(1, len(records) + 1)), contract=None)
    fn = RULES[code][1]
    return [f for i, rec in enumerate(records) for f in fn(ctx, i, rec) if f.status == "fail"]


def _size(findings) -> int:
    return sum(len(f.message) for f in findings)


def test_repeated_questions_are_listed_once_with_a_count_and_grow_linearly():
    small, big = _findings("V021", _records(500)), _findings("V021", _records(2500))
    assert len(small) == 500 and len(big) == 2500  # every repeat still fails: one finding per record
    assert _size(big) < 150 * 2500  # was 2,499 ids per record: about 40 kB each
    assert _size(big) / _size(small) < 5.5  # linear (5 x the records), not quadratic (25 x)
    first, later = big[0], big[1]
    assert first.details["records"] == 2500 and first.message.count("(line ") == LISTED
    assert first.message.endswith(f"and {2499 - LISTED:,} more")
    assert later.message == "the same question (after normalisation) is asked by Q0 (line 1) and 2,498 more " \
        "record(s), listed at line 1"  # fmt: skip


def test_two_records_keep_the_plain_message():
    f = _findings("V021", _records(2))
    assert [x.message for x in f] == ["the same question (after normalisation) is asked by Q1 (line 2)",
                                      "the same question (after normalisation) is asked by Q0 (line 1)"]  # fmt: skip


def test_repeated_ids_are_listed_once_with_a_count():
    f = _findings("V020", _records(3000, same_id=True))
    assert len(f) == 3000 and _size(f) < 150 * 3000
    assert f[0].message.startswith("id 'Q' is also used at line 2, line 3") and f[0].message.endswith("2,994 more")
    assert f[1].message == "id 'Q' is also used at line 1 and 2,998 more record(s), listed at line 1"


def test_alternative_conflicts_shared_by_many_records_are_listed_with_a_count():
    f = _findings("V035", _records(2000, alternative=True))
    assert len(f) == 2000 and _size(f) < 200 * 2000
    assert f[0].message.startswith("A is an alternative of D here, but Q0 (line 1), Q1 (line 2)")
    assert "and 1,995 more list(s) D and A" in f[0].message
