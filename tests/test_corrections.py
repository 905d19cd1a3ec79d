"""Contributed corrections: JSONL of replacement records or RFC 6902 patches, applied in memory, diffed, validated,
and written as a new minor version only when valid (fixtures from test_validate, written to tmp_path)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import jsonpatch
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console
from test_validate import Fixture, base_records, fails

from harness.curation.apply import apply_correction
from harness.errors import HarnessInputError
from harness.goldset.corrections import (
    bump_minor,
    correct_goldset,
    diff_values,
    read_corrections,
)
from harness.goldset.io import load_goldset
from harness.io import sha256_file
from harness.report.validation import render
from harness.validate import validate

TODAY = dt.date(2026, 12, 1)
GLUED = 'Esta ley es de "orden público" y de observancia general sin excepción alguna.'
FIXED = 'Esta ley es de "orden público" y de observancia general en toda la República'


@pytest.fixture
def fx(tmp_path: Path) -> Fixture:
    return Fixture(tmp_path)


def broken_dataset(fx: Fixture) -> Path:
    """The tiny set with SP-001 citing a glued quote (V001 fails)."""

    def m(rs):
        rs[0]["gold_documents"][0]["evidence"][0]["quote"] = GLUED

    return fx.build(m)


def write_correction(path: Path, lines: list) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x, ensure_ascii=False)) + "\n" for x in lines))
    return path


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


QUOTE_PATH = "/gold_documents/0/evidence/0/quote"


# ----------------------------------------------------------------------------------------------- in memory


def test_patch_that_fixes_one_record_but_breaks_the_per_category_count(fx, tmp_path):
    ds = broken_dataset(fx)
    assert validate(ds, corpus_dir=fx.corpus, contract=fx.contract).exit_code == 1
    corr = write_correction(
        tmp_path / "fix.jsonl",
        [
            {
                "id": "SP-001",
                "patch": [
                    {"op": "test", "path": QUOTE_PATH, "value": GLUED},
                    {"op": "replace", "path": QUOTE_PATH, "value": FIXED},
                    {"op": "replace", "path": "/category", "value": "list_enumeration"},
                    {"op": "replace", "path": "/id", "value": "LI-002"},
                ],
            }
        ],
    )
    r = validate(ds, corpus_dir=fx.corpus, correction=corr, contract=fx.contract)
    assert r.exit_code == 1
    assert set(fails(r)) == {("dataset", "V011"), ("dataset", "V015")}
    assert fails(r)[("dataset", "V011")] == [
        "category single_passage: 0 questions; the contract requires 1",
        "category list_enumeration: 2 questions; the contract requires 1",
    ]
    c = r.correction
    assert c.exit_code_before == 1 and c.new_version == "1.1.0"
    assert c.records == [
        {
            "id": "SP-001",
            "new_id": "LI-002",
            "sources": [{"file": "fix.jsonl", "line": 1, "author": None, "rationale": None}],
            "changes": [
                {"path": "/id", "op": "changed", "old": "SP-001", "new": "LI-002"},
                {"path": "/category", "op": "changed", "old": "single_passage", "new": "list_enumeration"},
                {"path": QUOTE_PATH, "op": "changed", "old": GLUED, "new": FIXED},
            ],
        }
    ]
    changes = {(s["scope"], s["code"]): (s["before"], s["after"]) for s in c.status_changes}
    assert changes[("LI-002", "V001")] == ("fail", "pass")
    assert changes[("dataset", "V011")] == ("pass", "fail")
    console = Console(record=True, width=200)
    render(r, console)
    text = console.export_text()
    assert "record SP-001 -> LI-002: 3 change(s)" in text and "from fix.jsonl line 1: no rationale given" in text
    assert '/category: "single_passage" -> "list_enumeration"' in text
    assert "V011 dataset: pass -> fail" in text and "INVALID" in text
    # apply refuses to write it
    out = tmp_path / "new"
    res = apply_correction(ds, corr, out, corpus_dir=fx.corpus, contract=fx.contract, today=TODAY)
    assert not res.written and res.exit_code == 1 and not out.exists()


def test_full_replacement_record_fixes_the_set(fx, tmp_path):
    ds = broken_dataset(fx)
    rec = base_records()[0]
    rec["gold_documents"][0]["evidence"][0]["quote"] = FIXED
    corr = write_correction(tmp_path / "fix.jsonl", [rec])
    r = validate(ds, corpus_dir=fx.corpus, correction=corr, contract=fx.contract)
    assert r.exit_code == 0, fails(r)
    assert r.dataset["version"] == "1.1.0"
    assert r.correction.records[0]["changes"] == [{"path": QUOTE_PATH, "op": "changed", "old": GLUED, "new": FIXED}]
    assert r.correction.status_changes == [{"scope": "SP-001", "code": "V001", "before": "fail", "after": "pass"}]
    d = json.loads(r.to_json())
    assert d["correction"]["records"][0]["id"] == "SP-001"


def test_patches_apply_in_file_order_and_target_the_current_id(fx, tmp_path):
    ds = broken_dataset(fx)
    corr = write_correction(
        tmp_path / "c.jsonl",
        [
            {"id": "SP-001", "patch": [{"op": "replace", "path": QUOTE_PATH, "value": FIXED}]},
            {"id": "SP-001", "patch": [{"op": "add", "path": "/split", "value": "dev"}]},
            {"id": "MO-001", "patch": [{"op": "replace", "path": "/persona", "value": "periodista"}]},
        ],
    )
    cs = correct_goldset(ds, corr, today=TODAY)
    assert [(d.id, tuple(s["line"] for s in d.sources), [c.path for c in d.changes]) for d in cs.diffs] == [
        ("SP-001", (1, 2), [QUOTE_PATH, "/split"]),
        ("MO-001", (3,), ["/persona"]),
    ]
    assert cs.goldset.records[0].split == "dev"
    assert cs.changed_ids == ["SP-001", "MO-001"]


# ----------------------------------------------------------------------------------------------- unusable corrections


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ({"id": "SP-001", "patch": [{"op": "frob", "path": "/id"}]}, "field patch[0]: not a valid RFC 6902 operation"),
        ({"id": "SP-001", "patch": [{"path": "/id", "value": 1}]}, "field patch[0]: not a valid RFC 6902 operation"),
        (
            {"id": "SP-001", "patch": [{"op": "add", "path": "/x", "value": 1}, {"op": "replace", "path": "id"}]},
            "field patch[1]: not a valid RFC 6902 operation",
        ),
        ({"id": "SP-001", "patch": {"op": "remove", "path": "/id"}}, "field patch: must be a list"),
        (
            {"id": "SP-001", "patch": [], "note": "x"},
            "field note: a patch line holds only 'id', 'patch' and 'rationale'",
        ),
        ({"patch": []}, "field id: missing"),
        ({"id": "SP-001", "patch": [{"op": "remove", "path": "/nope"}]}, "field patch[0]: cannot apply remove '/nope'"),
        (
            {"id": "SP-001", "patch": [{"op": "test", "path": "/question", "value": "otra"}]},
            "field patch[0]: cannot apply test '/question'",
        ),
        ({"id": "XX-404", "patch": []}, "field id: no record with id 'XX-404'"),
        (
            {"id": "SP-001", "patch": [{"op": "remove", "path": "/question"}]},
            "record SP-001: field question: Field required",
        ),
        ({"id": "SP-001", "question": "solo esto"}, "record SP-001: field category: Field required"),
        ('{"id": "SP-001", "patch": [', "malformed JSON"),
    ],
)
def test_unusable_correction_is_exit_2_naming_file_line_and_field(fx, tmp_path, line, needle):
    ds = fx.build()
    corr = write_correction(tmp_path / "bad.jsonl", [line])
    before = tree(ds)
    with pytest.raises(HarnessInputError) as ei:
        validate(ds, correction=corr, contract=fx.contract)
    msg = str(ei.value)
    assert ei.value.exit_code == 2 and "\n" not in msg
    assert msg.startswith(f"{corr}:1: ") and needle in msg, msg
    out = tmp_path / "out"
    with pytest.raises(HarnessInputError):
        apply_correction(ds, corr, out, structural_only=True, contract=fx.contract)
    assert not out.exists() and tree(ds) == before


def test_empty_and_missing_correction_files_are_exit_2(fx, tmp_path):
    ds = fx.build()
    with pytest.raises(HarnessInputError, match="no corrections"):
        validate(ds, correction=write_correction(tmp_path / "e.jsonl", []), contract=fx.contract)
    with pytest.raises(HarnessInputError, match="file not found"):
        validate(ds, correction=tmp_path / "missing.jsonl", contract=fx.contract)


# ----------------------------------------------------------------------------------------------- apply


def test_apply_writes_a_new_minor_version_only_when_valid(fx, tmp_path):
    ds = broken_dataset(fx)
    before = tree(ds)
    (ds / "README.md").write_text("how it was built\n")
    before = tree(ds)
    corr = write_correction(
        tmp_path / "fix.jsonl", [{"id": "SP-001", "patch": [{"op": "replace", "path": QUOTE_PATH, "value": FIXED}]}]
    )
    out = tmp_path / "releases" / "tiny-v1.1"
    res = apply_correction(ds, corr, out, corpus_dir=fx.corpus, contract=fx.validators, today=TODAY)
    assert res.written and res.exit_code == 0 and res.out_dir == out
    assert res.version == "1.1.0" and res.records_changed == ["SP-001"]
    assert tree(ds) == before  # input untouched
    assert sorted(tree(out)) == ["README.md", "corrections/fix.jsonl", "tiny.jsonl", "tiny.meta.json"]
    assert (out / "corrections" / "fix.jsonl").read_bytes() == corr.read_bytes()  # the applied file is kept
    readme = (out / "README.md").read_text()
    assert readme.startswith("how it was built\n\n## Statistics (generated)\n") and "Tiny Eval 1.1.0" in readme
    # untouched records keep their bytes; the corrected one changed only in its quote
    old_lines = (ds / "tiny.jsonl").read_text().splitlines()
    new_lines = (out / "tiny.jsonl").read_text().splitlines()
    assert old_lines[1:] == new_lines[1:] and old_lines[0] != new_lines[0]
    assert json.loads(new_lines[0])["gold_documents"][0]["evidence"][0]["quote"] == FIXED
    man = json.loads((out / "tiny.meta.json").read_text())
    assert man["version"] == "1.1.0" and man["records_sha256"] == sha256_file(out / "tiny.jsonl")
    assert man["corpus_hash"] == fx.manifest["corpus_hash"]
    (entry,) = man["changelog"]
    assert entry["version"] == "1.1.0" and entry["previous_version"] == "1.0.0" and entry["date"] == "2026-12-01"
    assert entry["records_changed"] == ["SP-001"] and entry["fields_changed"] == {"SP-001": [QUOTE_PATH]}
    assert entry["corrections"] == [
        {
            "file": "fix.jsonl",
            "sha256": sha256_file(corr),
            "author": None,
            "description": None,
            "lines": [{"line": 1, "id": "SP-001", "rationale": None}],
            "kept_as": "corrections/fix.jsonl",
        }
    ]
    assert entry["previous_records_sha256"] == sha256_file(ds / "tiny.jsonl")
    assert entry["validation"]["corpus_rules"] == "checked"
    # the new version loads and validates, by the same contract (same major), records_sha256 included (V015)
    r = validate(out, corpus_dir=fx.corpus, contract=fx.validators)
    assert r.exit_code == 0 and r.dataset["version"] == "1.1.0" and Path(r.contract) == fx.contract
    assert load_goldset(out).manifest.changelog[-1]["records_changed"] == ["SP-001"]
    # a second correction on top bumps again and appends to the change log
    corr2 = write_correction(
        tmp_path / "fix2.jsonl",
        [{"id": "MO-001", "patch": [{"op": "replace", "path": "/difficulty", "value": "hard"}]}],
    )
    res2 = apply_correction(out, corr2, tmp_path / "v1.2", structural_only=True, contract=fx.validators, today=TODAY)
    man2 = json.loads((tmp_path / "v1.2" / "tiny.meta.json").read_text())
    assert res2.version == "1.2.0" and [e["version"] for e in man2["changelog"]] == ["1.1.0", "1.2.0"]
    assert man2["changelog"][-1]["validation"]["corpus_rules"] == "not checked: --structural-only (no corpus)"
    assert man2["changelog"][-1]["validation"]["structural_only"] is True
    assert sorted(tree(tmp_path / "v1.2" / "corrections")) == ["fix.jsonl", "fix2.jsonl"]
    # a file of the same name but other bytes does not replace the one the old version keeps
    (tmp_path / "other").mkdir()
    corr3 = write_correction(
        tmp_path / "other" / "fix.jsonl",
        [{"id": "MO-001", "patch": [{"op": "replace", "path": "/difficulty", "value": "easy"}]}],
    )
    res3 = apply_correction(
        tmp_path / "v1.2", corr3, tmp_path / "v1.3", structural_only=True, contract=fx.validators, today=TODAY
    )
    assert res3.written
    kept = tree(tmp_path / "v1.3" / "corrections")
    assert sorted(kept) == ["fix-1.3.0.jsonl", "fix.jsonl", "fix2.jsonl"]
    assert kept["fix.jsonl"] == corr.read_bytes() and kept["fix-1.3.0.jsonl"] == corr3.read_bytes()
    man3 = json.loads((tmp_path / "v1.3" / "tiny.meta.json").read_text())
    assert man3["changelog"][-1]["corrections"][0]["kept_as"] == "corrections/fix-1.3.0.jsonl"


def test_apply_refuses_existing_or_nested_output_and_no_op_corrections(fx, tmp_path):
    ds = fx.build()
    corr = write_correction(
        tmp_path / "c.jsonl", [{"id": "MO-001", "patch": [{"op": "replace", "path": "/difficulty", "value": "hard"}]}]
    )
    (tmp_path / "exists").mkdir()
    with pytest.raises(HarnessInputError, match="already exists"):
        apply_correction(ds, corr, tmp_path / "exists", structural_only=True, contract=fx.contract)
    with pytest.raises(HarnessInputError, match="must not be inside the input dataset"):
        apply_correction(ds, corr, ds / "v2", structural_only=True, contract=fx.contract)
    noop = write_correction(tmp_path / "noop.jsonl", [base_records()[5]])
    with pytest.raises(HarnessInputError, match="changes no record"):
        apply_correction(ds, noop, tmp_path / "new", structural_only=True, contract=fx.contract)
    assert not (tmp_path / "new").exists()


def test_apply_keeps_the_compact_style_of_the_records_file(fx, tmp_path):
    ds = fx.build()
    p = ds / "tiny.jsonl"
    rows = [json.loads(x) for x in p.read_text().splitlines()]
    p.write_text("".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows))
    corr = write_correction(
        tmp_path / "c.jsonl", [{"id": "TE-001", "patch": [{"op": "replace", "path": "/difficulty", "value": "hard"}]}]
    )
    apply_correction(ds, corr, tmp_path / "new", structural_only=True, contract=fx.contract, today=TODAY)
    line = (tmp_path / "new" / "tiny.jsonl").read_text().splitlines()[2]
    assert line == json.dumps(rows[2] | {"difficulty": "hard"}, ensure_ascii=False, separators=(",", ":"))


def test_bump_minor():
    assert bump_minor("1.0.0") == "1.1.0"
    assert bump_minor("4.0.0-pilot") == "4.1.0-pilot"
    assert bump_minor("2.9") == "2.10.0"
    with pytest.raises(HarnessInputError, match="field version"):
        bump_minor("pilot")


def test_read_corrections_kinds(tmp_path):
    p = write_correction(tmp_path / "c.jsonl", [{"id": 7, "patch": []}, "", {"id": "SP-001", "question": "q"}])
    entries = read_corrections(p)
    assert [(e.line, e.id, e.kind) for e in entries] == [(1, "7", "patch"), (3, "SP-001", "replace")]


# ----------------------------------------------------------------------------------------------- diff properties

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3),
    max_leaves=12,
)


@given(json_values, json_values)
def test_diff_is_empty_exactly_for_equal_values_and_names_resolvable_paths(a, b):
    changes = diff_values(a, b)
    same = json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert (changes == []) == same
    for c in changes:
        if c.op == "changed" and c.path:
            assert jsonpatch.JsonPointer(c.old_path or c.path).resolve(a) == c.old
            assert jsonpatch.JsonPointer(c.path).resolve(b) == c.new
        elif c.op == "added":
            assert jsonpatch.JsonPointer(c.path).resolve(b) == c.new
        elif c.op == "removed":
            assert jsonpatch.JsonPointer(c.path).resolve(a) == c.old


def test_real_style_patch_on_the_published_file_is_checked_by_the_v4_contract(tmp_path):
    published = Path(__file__).resolve().parents[2] / "shared" / "reference" / "dof-rag-eval-v4"
    if not published.is_dir():
        pytest.skip("published eval v4 reference not present in ../shared/reference")
    corr = write_correction(
        tmp_path / "c.jsonl", [{"id": "MD-001", "patch": [{"op": "replace", "path": "/required_hops", "value": 1}]}]
    )
    r = validate(published, correction=corr)
    assert r.dataset["version"] == "4.1.0-pilot" and Path(r.contract).name == "dof-rag-evidence-evaluation-v4.toml"
    assert set(fails(r)) == {("MD-001", "V030")}
    res = apply_correction(published, corr, tmp_path / "v4.1", structural_only=True)
    assert not res.written and not (tmp_path / "v4.1").exists()
