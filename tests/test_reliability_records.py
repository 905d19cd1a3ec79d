"""Issue 18 item 9: run records are verified when read, not trusted as written.

Before the fix a hand-edited ``summary.json`` showed in the report and a ``per_question.jsonl`` with every MRR set to
1.0 passed the gate. A record's manifest now lists the sha256 of every other file (``content_sha256``), written last;
``load_run`` verifies them after the declared value ranges and refuses an edited, missing or added file with one line
naming it (exit 2). A record without hashes (written before this change) loads with one notice line; ``gate`` and
``compare`` accept it only with ``--allow-unhashed``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import REPO, write_tiny_corpus, write_tiny_goldset
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import HarnessInputError
from harness.evaluation.pipeline import RunOptions, evaluate_rankings, run
from harness.evaluation.runs import check_hashed, load_run, record_hashes

BASELINE = REPO / "runs" / "baselines" / "mx-leyes-dof-eval-v1-six-systems"


OPTS = RunOptions(bootstrap_reps=200)
DOCS = ["ley-a", "ley-b", "dof-c", "dof-d"]


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> tuple[Path, Path]:
    """A BM25 run of the tiny set (every MRR 1.0) and a worse candidate: rankings that put each question's gold
    documents last (scored by ``evaluate``; the gate fails it, exit 1)."""
    tmp = tmp_path_factory.mktemp("hashed")
    corpus = write_tiny_corpus(tmp / "corpus")
    gs = write_tiny_goldset(tmp / "gs", corpus)
    base = run(gs, corpus, ["bm25"], workdir=tmp / "wd", runs_dir=tmp / "runs", run_id="base", options=OPTS)
    gold = {"SP-001": ["ley-a"], "SP-002": ["dof-c"], "MD-001": ["ley-b", "dof-d"]}  # conftest.tiny_records
    rankings = tmp / "worse.jsonl"
    rankings.write_text(
        "".join(
            json.dumps({"qid": q, "system": "worse", "docs": [d for d in DOCS if d not in g] + g}) + "\n"
            for q, g in gold.items()
        ),
        "utf-8",
    )
    worse = evaluate_rankings(gs, rankings, runs_dir=tmp / "runs", run_id="worse", options=OPTS)
    return base, worse


@pytest.fixture
def tiny_run(records) -> Path:
    return records[0]


@pytest.fixture
def rec(records, tmp_path: Path) -> Path:
    """A copy of the BM25 run."""
    dst = tmp_path / "copy"
    shutil.copytree(records[0], dst)
    return dst


@pytest.fixture
def worse(records, tmp_path: Path) -> Path:
    """A copy of the worse candidate."""
    dst = tmp_path / "cand"
    shutil.copytree(records[1], dst)
    return dst


def _manifest(rec: Path) -> dict:
    return json.loads((rec / "manifest.json").read_text("utf-8"))


def _rewrite_manifest(rec: Path, edit) -> None:
    man = _manifest(rec)
    edit(man)
    (rec / "manifest.json").write_text(json.dumps(man, indent=2), "utf-8")


def _edit_rows(rec: Path, edit) -> None:
    f = rec / "per_question.jsonl"
    rows = [json.loads(x) for x in f.read_text("utf-8").splitlines()]
    for r in rows:
        edit(r)
    f.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")


def _cli(*args) -> tuple[int, str]:
    r = CliRunner().invoke(app, [str(a) for a in args])
    return r.exit_code, r.output


def _gate(base: Path, cand: Path, tmp_path: Path, *extra) -> tuple[int, str]:
    verdict = tmp_path / "verdict.json"
    return _cli("gate", "--baseline", base, "--candidate", cand, "--verdict", verdict, *extra)


def test_a_written_record_lists_the_sha256_of_every_other_file(tiny_run: Path, capsys):
    listed = _manifest(tiny_run)["content_sha256"]
    files = sorted(p.relative_to(tiny_run).as_posix() for p in tiny_run.rglob("*") if p.is_file())
    assert sorted(listed) == [f for f in files if f not in ("manifest.json", ".harness-output.json")]
    assert {"summary.json", "per_question.jsonl", "trec/bm25.document.run", "trec/qrels.chunk.txt"} <= set(listed)
    assert listed == record_hashes(tiny_run)
    assert all(len(v) == 64 and int(v, 16) >= 0 for v in listed.values())
    load_run(tiny_run)
    assert capsys.readouterr().err == ""  # verified, so nothing to say


def test_every_mrr_set_to_one_no_longer_passes_the_gate(tiny_run: Path, worse: Path, tmp_path: Path):
    code, out = _gate(tiny_run, worse, tmp_path)
    assert code == 1 and out.startswith("FAIL"), out  # as written
    _edit_rows(worse, lambda r: r["metrics"].__setitem__("mrr", 1.0))  # on main before the fix: PASS, exit 0
    code, out = _gate(tiny_run, worse, tmp_path)
    assert code == 2, out
    assert out.strip().count("\n") == 0
    assert f"{worse / 'per_question.jsonl'}: sha256" in out.replace("\n", "") and "changed after harness" in out


def test_a_hand_edited_summary_is_refused_by_the_report(tiny_run: Path, rec: Path, tmp_path: Path):
    s = json.loads((rec / "summary.json").read_text("utf-8"))
    s["systems"]["bm25"]["all"]["overall"]["mrr"]["mean"] = 0.99
    (rec / "summary.json").write_text(json.dumps(s, indent=2), "utf-8")
    with pytest.raises(HarnessInputError, match=r"summary\.json: sha256 \w+… differs from \w+… recorded in"):
        load_run(rec)
    html = tmp_path / "r.html"
    code, out = _cli("report", rec, "--out", html)
    assert code == 2 and "summary.json: sha256" in out, out
    assert not html.exists()


@pytest.mark.parametrize("value", [5.0, -3])
def test_metric_values_out_of_range_are_refused_by_the_gate(tiny_run: Path, worse: Path, tmp_path: Path, value):
    """The typed record's declared range (0 <= metric <= 1) is checked before the hashes, with the line."""
    _edit_rows(worse, lambda r: r["metrics"].__setitem__("mrr", value))
    code, out = _gate(tiny_run, worse, tmp_path)
    assert code == 2, out
    assert "per_question.jsonl:1: field metrics.mrr: Input should be" in out.replace("\n", "")


@pytest.mark.parametrize("damage", ["edit", "delete", "add"])
def test_trec_files_are_verified(rec: Path, damage: str):
    run_file = rec / "trec" / "bm25.document.run"
    if damage == "edit":
        run_file.write_text(run_file.read_text("utf-8").replace(" 1 ", " 2 ", 1), "utf-8")
        match = "bm25.document.run: sha256"
    elif damage == "delete":
        run_file.unlink()
        match = "bm25.document.run: listed in .* but missing"
    else:
        (rec / "trec" / "better.document.run").write_text("SP-001 Q0 ley-a 1 9 better\n", "utf-8")
        match = r"better\.document\.run: not part of the record"
    with pytest.raises(HarnessInputError, match=match) as ei:
        load_run(rec)
    assert ei.value.exit_code == 2


def test_a_manifest_whose_hash_list_omits_a_file_or_is_malformed_is_refused(rec: Path):
    _rewrite_manifest(rec, lambda m: m["content_sha256"].pop("summary.json"))
    with pytest.raises(HarnessInputError, match="field content_sha256: does not list summary.json"):
        load_run(rec)
    _rewrite_manifest(rec, lambda m: m["content_sha256"].update({"summary.json": "xyz"}))
    with pytest.raises(HarnessInputError, match=r"manifest\.json:\d+: field content_sha256\.summary\.json"):
        load_run(rec)
    _rewrite_manifest(rec, lambda m: m["content_sha256"].update({"summary.json": "0" * 64, "../x": "0" * 64}))
    with pytest.raises(HarnessInputError, match="not a file path inside the record folder"):
        load_run(rec)


def test_an_unhashed_record_loads_with_one_notice_and_is_gated_only_when_allowed(
    tiny_run: Path, rec: Path, tmp_path: Path, capsys
):
    _rewrite_manifest(rec, lambda m: m.pop("content_sha256"))
    load_run(rec)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"harness: {rec / 'manifest.json'}: no content_sha256")
    for args in (
        ("gate", "--baseline", tiny_run, "--candidate", rec, "--verdict", tmp_path / "v.json"),
        ("compare", tiny_run, rec, "--reps", "100"),
    ):
        code, out = _cli(*args)
        assert code == 2 and "field content_sha256: missing" in out and "--allow-unhashed" in out, out
        assert out.strip().count("\n") == 0
        code, out = _cli(*args, "--allow-unhashed")
        assert code == 0, out
    assert json.loads((tmp_path / "v.json").read_text())["decision"] == "PASS"
    with pytest.raises(HarnessInputError, match="--candidate .*manifest.json: field content_sha256: missing"):
        check_hashed(rec, allow_unhashed=False, field="--candidate")
    check_hashed(rec, allow_unhashed=True, field="--candidate")
    check_hashed(tiny_run, allow_unhashed=False, field="--baseline")


def test_the_committed_baseline_is_hashed_and_reads_without_a_notice(capsys):
    """The committed baseline (regenerated for gold set 1.1.0) lists the sha256 of every file: it loads verified,
    with no notice, and the gate takes it without --allow-unhashed."""
    rec = load_run(BASELINE)
    assert rec.manifest.content_sha256 and "summary.json" in rec.manifest.content_sha256
    assert "no content_sha256" not in capsys.readouterr().err
    check_hashed(BASELINE, allow_unhashed=False, field="--baseline")
