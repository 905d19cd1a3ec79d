"""Typed run records: the schema-2 contract, the upgrade of schema 1 (the committed baseline), declared value ranges
refused on load with one located line, no absolute machine path, and the JSON line locator."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pytest
from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import HarnessInputError, IncomparableError
from harness.evaluation.pipeline import RunOptions, run
from harness.evaluation.record import RUN_SCHEMA_VERSION, json_value_line
from harness.evaluation.runs import check_comparable, load_run, record_hashes

BASELINE = REPO / "runs" / "baselines" / "mx-leyes-dof-eval-v1-six-systems"
SCHEMA_1 = REPO / "tests" / "fixtures" / "run-schema-1"


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    from conftest import write_tiny_corpus, write_tiny_goldset

    tmp = tmp_path_factory.mktemp("records")
    corpus = write_tiny_corpus(tmp / "corpus")
    gs = write_tiny_goldset(tmp / "gs", corpus)
    return run(
        gs,
        corpus,
        ["bm25"],
        workdir=tmp / "wd",
        runs_dir=tmp / "runs",
        run_id="r",
        options=RunOptions(bootstrap_reps=200),
    )


def _copy(src: Path, tmp: Path) -> Path:
    dst = tmp / src.name
    shutil.copytree(src, dst)
    return dst


def _reseal(rec: Path) -> None:
    """Record the hashes of a deliberately edited record (else load_run refuses the edit: test_reliability_records)."""
    man = json.loads((rec / "manifest.json").read_text("utf-8"))
    man["content_sha256"] = record_hashes(rec)
    (rec / "manifest.json").write_text(json.dumps(man, indent=2), "utf-8")


def _strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


# --------------------------------------------------------------------------------------------------------------
# Schema 1: the committed baseline loads, upgraded, every number as on disk
# --------------------------------------------------------------------------------------------------------------


def test_a_schema_1_record_is_upgraded_on_read():
    """The record committed as the baseline before 2026-12-01 (schema 1), cut to two systems and five ranks per
    ranking in tests/fixtures/run-schema-1 (the baseline itself is schema 2 since its regeneration)."""
    raw_manifest = json.loads((SCHEMA_1 / "manifest.json").read_text("utf-8"))
    assert raw_manifest["schema_version"] == 1
    rec = load_run(SCHEMA_1)
    assert rec.upgraded_from == 1 and rec.manifest.schema_version == RUN_SCHEMA_VERSION == 3
    assert rec.systems == ["bm25", "vector"]
    assert (rec.manifest.depths.document, rec.manifest.depths.chunk) == (50, 200)
    # the absolute source folder of the old record becomes relative to the working directory
    assert rec.manifest.corpus.source_dir == os.path.relpath(raw_manifest["corpus"]["source_dir"])
    assert rec.manifest.goldset.path == raw_manifest["goldset"]["path"]
    whole = rec.system_summary("bm25")["all"]
    assert whole.levels == {"document": True, "chunk": True}
    assert set(whole.counts.by_level) == {"document", "chunk"}
    # rankings moved from docs/chunks to rankings.document/chunk, unchanged
    raw_rows = [json.loads(x) for x in (SCHEMA_1 / "per_question.jsonl").read_text("utf-8").splitlines()]
    assert len(raw_rows) == len(rec.per_question) == 2 * 42
    for raw, row in zip(raw_rows, rec.per_question, strict=True):
        assert (row.system, row.qid) == (raw["system"], raw["qid"])
        assert row.metrics == raw["metrics"]
        assert [list(x) for x in row.rankings.document] == raw["docs"]
        assert [list(x) for x in row.rankings.chunk] == raw["chunks"]
    # every mean and interval bound exactly as on disk (infinite bounds stay infinite)
    raw_summary = json.loads((SCHEMA_1 / "summary.json").read_text("utf-8"))
    checked = 0
    for system, slices in raw_summary["systems"].items():
        for sl, s in slices.items():
            for metric, entry in s["overall"].items():
                got = rec.system_summary(system)[sl].overall[metric]
                assert got.mean == entry["mean"]
                for method, iv in entry["intervals"].items():
                    assert (got.intervals[method].lower, got.intervals[method].upper) == (iv["lower"], iv["upper"])
                    assert got.intervals[method].extras == iv["extras"]
                    checked += 1
    assert checked > 250  # two systems: 266 means and bounds


def test_a_new_record_is_comparable_with_the_upgraded_baseline_keys(tiny_run):
    """Comparability reads the same typed keys from both schemas (here they differ only in the gold set)."""
    with pytest.raises(IncomparableError, match="goldset.sha256 differs"):
        check_comparable(load_run(BASELINE), load_run(tiny_run))


# --------------------------------------------------------------------------------------------------------------
# Schema 2 as written
# --------------------------------------------------------------------------------------------------------------


def test_written_record_uses_one_level_vocabulary_and_no_absolute_path(tiny_run, tmp_path):
    man = json.loads((tiny_run / "manifest.json").read_text("utf-8"))
    summary = json.loads((tiny_run / "summary.json").read_text("utf-8"))
    rows = [json.loads(x) for x in (tiny_run / "per_question.jsonl").read_text("utf-8").splitlines()]
    assert man["schema_version"] == summary["schema_version"] == 3
    assert man["depths"] == {"document": 50, "chunk": 200}
    whole = summary["systems"]["bm25"]["all"]
    assert whole["levels"] == {"document": True, "chunk": True}
    assert set(whole["counts"]["by_level"]) == {"document", "chunk"}
    assert set(rows[0]) >= {"system", "qid", "metrics", "rankings"} and "docs" not in rows[0]
    assert set(rows[0]["rankings"]) == {"document", "chunk"}
    # the tiny corpus and gold set live under an absolute temporary folder: the record names them relatively
    assert [s for s in _strings(man) if os.path.isabs(s)] == []
    for section, key in (("goldset", "path"), ("corpus", "source_dir"), ("corpus", "db")):
        assert Path(man[section][key]).resolve().exists(), (section, key)
    # key paths consumers rely on
    assert isinstance(summary["systems"]["bm25"]["all"]["overall"]["mrr"]["mean"], float)
    iv = summary["systems"]["bm25"]["all"]["overall"]["mrr"]["intervals"]["cr2"]
    assert iv["lower"] <= iv["upper"]


def test_level_keys_in_older_spellings_are_read_and_written_in_the_new_one(tiny_run, tmp_path):
    rec = _copy(tiny_run, tmp_path)
    s = json.loads((rec / "summary.json").read_text("utf-8"))
    s["systems"]["bm25"]["all"]["levels"] = {"docs": True, "chunks": False}
    (rec / "summary.json").write_text(json.dumps(s), "utf-8")
    _reseal(rec)
    assert load_run(rec).system_summary("bm25")["all"].levels == {"document": True, "chunk": False}


# --------------------------------------------------------------------------------------------------------------
# Declared ranges: refused on load, one located line, exit 2
# --------------------------------------------------------------------------------------------------------------


def _edit_row(rec: Path, index: int, edit) -> int:
    lines = (rec / "per_question.jsonl").read_text("utf-8").splitlines()
    row = json.loads(lines[index])
    edit(row)
    lines[index] = json.dumps(row)
    (rec / "per_question.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    return index + 1


@pytest.mark.parametrize("value", [5.0, -3, float("nan")])
def test_metric_outside_0_1_is_refused_naming_file_line_field(tiny_run, tmp_path, value):
    rec = _copy(tiny_run, tmp_path)
    line = _edit_row(rec, 1, lambda r: r["metrics"].__setitem__("mrr", value))
    with pytest.raises(HarnessInputError) as ei:
        load_run(rec)
    msg = str(ei.value)
    assert msg.startswith(f"{rec / 'per_question.jsonl'}:{line}: field metrics.mrr: ") and "\n" not in msg
    assert ei.value.exit_code == 2


def _summary_edit(rec: Path, edit) -> str:
    s = json.loads((rec / "summary.json").read_text("utf-8"))
    edit(s)
    text = json.dumps(s, indent=2)
    (rec / "summary.json").write_text(text, "utf-8")
    return text


def _line_of(text: str, needle: str) -> int:
    return next(i for i, x in enumerate(text.splitlines(), start=1) if needle in x)


@pytest.mark.parametrize(
    ("edit", "field", "needle"),
    [
        (lambda o: o["mrr"].__setitem__("mean", 1.5), "mrr.mean", '"mean": 1.5'),
        (
            lambda o: o["mrr"]["intervals"]["cr2"].__setitem__("lower", float("nan")),
            "mrr.intervals.cr2.lower",
            '"lower": NaN',
        ),
        (
            lambda o: o["mrr"]["intervals"]["cr2"].__setitem__("lower", 2.0),
            "mrr.intervals.cr2: lower bound 2.0 exceeds",
            None,
        ),
        (
            lambda o: o["mrr"]["intervals"]["cr2"].__setitem__("n_clusters", -1),
            "mrr.intervals.cr2.n_clusters",
            '"n_clusters": -1',
        ),
    ],
)
def test_summary_value_outside_its_range_is_refused_with_its_line(tiny_run, tmp_path, edit, field, needle):
    rec = _copy(tiny_run, tmp_path)
    text = _summary_edit(rec, lambda s: edit(s["systems"]["bm25"]["all"]["overall"]))
    with pytest.raises(HarnessInputError) as ei:
        load_run(rec)
    msg = str(ei.value)
    assert f"field systems.bm25.all.overall.{field}" in msg and "\n" not in msg
    where = f"{rec / 'summary.json'}:"
    assert msg.startswith(where)
    if needle is not None:
        assert msg.startswith(f"{where}{_line_of(text, needle)}: ")


def test_infinite_bounds_are_accepted(tiny_run, tmp_path):
    rec = _copy(tiny_run, tmp_path)
    _summary_edit(
        rec, lambda s: s["systems"]["bm25"]["all"]["overall"]["mrr"]["intervals"]["cr2"].update(upper=math.inf)
    )
    _reseal(rec)
    assert load_run(rec).system_summary("bm25")["all"].overall["mrr"].intervals["cr2"].upper == math.inf


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda m: m.__setitem__("schema_version", 4), "field schema_version: 4 is not a run-record schema"),
        (lambda m: m["depths"].__setitem__("document", 0), "field depths.document"),
        (lambda m: m["goldset"].__setitem__("path", "/abs/gold.jsonl"), "field goldset.path: absolute path"),
        (lambda m: m.__setitem__("level", 1.5), "field level"),
    ],
)
def test_manifest_value_outside_its_range_is_refused(tiny_run, tmp_path, edit, message):
    rec = _copy(tiny_run, tmp_path)
    man = json.loads((rec / "manifest.json").read_text("utf-8"))
    edit(man)
    (rec / "manifest.json").write_text(json.dumps(man, indent=2), "utf-8")
    with pytest.raises(HarnessInputError, match=message) as ei:
        load_run(rec)
    assert str(ei.value).startswith(str(rec / "manifest.json"))


def test_cli_refuses_a_tampered_record_with_one_line(tiny_run, tmp_path):
    rec = _copy(tiny_run, tmp_path)
    line = _edit_row(rec, 0, lambda r: r["metrics"].__setitem__("mrr", 5.0))
    for args in (["compare", rec, rec], ["report", rec, "--out", tmp_path / "r.html"]):
        r = CliRunner().invoke(app, [str(a) for a in args])
        assert r.exit_code == 2, r.output
        assert r.output.strip().count("\n") == 0 and f"per_question.jsonl:{line}: field metrics.mrr" in r.output
    assert not (tmp_path / "r.html").exists()


def test_incomplete_record_is_refused(tiny_run, tmp_path):
    rec = _copy(tiny_run, tmp_path)
    (rec / "summary.json").unlink()
    with pytest.raises(HarnessInputError, match=r"summary\.json: file not found \(not a complete run record\)"):
        load_run(rec)
    # the hidden temporary folder a killed run leaves, even when complete inside, is not a record
    tmp = tmp_path / ".r.x1y2.tmp"
    shutil.copytree(tiny_run, tmp)
    with pytest.raises(HarnessInputError, match="temporary folder of an unfinished write"):
        load_run(tmp)


# --------------------------------------------------------------------------------------------------------------
# The JSON line locator
# --------------------------------------------------------------------------------------------------------------

_keys = st.text(alphabet="abcxyz_", min_size=1, max_size=4)
_json = st.recursive(
    st.one_of(st.integers(-5, 5), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=5), st.none()),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_keys, inner, max_size=3)),
    max_leaves=12,
)


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, (*prefix, i))


def _value_at(obj, path):
    for p in path:
        obj = obj[p]
    return obj


@settings(max_examples=80, deadline=None)
@given(_json)
def test_json_value_line_finds_the_line_of_every_value(obj):
    compact = json.dumps(obj)
    assert all(json_value_line(compact, p) == 1 for p in _paths(obj))
    text = json.dumps(obj, indent=1)
    lines = text.splitlines()
    for path in _paths(obj):
        got = lines[json_value_line(text, path) - 1].strip()
        head = json.dumps(_value_at(obj, path), indent=1).splitlines()[0]
        if path and isinstance(path[-1], str):
            assert got.startswith(json.dumps(path[-1]) + ": " + head), (path, got)
        else:
            assert got.startswith(head), (path, got)


def test_json_value_line_of_a_missing_field_is_its_parent():
    text = json.dumps({"a": {"b": 1}, "c": [1, {"d": 2}]}, indent=2)
    assert json_value_line(text, ("a", "zzz")) == 2  # "a": {
    assert json_value_line(text, ("c", 1, "d")) == 8
    assert json_value_line("not json", ("a",)) in (1, None)
