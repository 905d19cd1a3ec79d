"""`harness run` and `harness evaluate` check what they score (issue 16 item 3, issue 18 item 4): the records hash, the
corpus rules V001-V005 on the ingested database, the structural rules; records_file inside the dataset folder,
empty gold lists and coerced types refused at load; `validate` and `goldset apply` without a corpus; symlinks.

Each test below failed before its fix: a wrong chunk id ran (exit 0) and scored 0, edited records ran under the
released version, `../x.jsonl` was read, an empty gold list ran, `goldset apply` wrote without a corpus and copied
a link's target.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_validate import Fixture
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import HarnessInputError
from harness.evaluation.pipeline import evaluate_rankings, run
from harness.goldset.corrections import correct_goldset
from harness.goldset.io import load_goldset
from harness.io import sha256_file
from harness.validate.scoring import check_before_scoring

runner = CliRunner()


@pytest.fixture
def fx(tmp_path: Path) -> Fixture:
    return Fixture(tmp_path)


def hashed(fx: Fixture, mutate=None) -> Path:
    """A dataset whose manifest declares the records' sha256 (as a released version does)."""
    ds = fx.build(mutate)
    man = json.loads((ds / "tiny.meta.json").read_text())
    man["records_sha256"] = sha256_file(ds / "tiny.jsonl")
    (ds / "tiny.meta.json").write_text(json.dumps(man))
    return ds


def wrong_chunk(rs):
    ev = rs[0]["gold_documents"][0]["evidence"][0]
    ev["chunk_id"] = ev["chunk_id"].split("#")[0] + "#2"
    ev["chunk_index"] = 2


def rankings_file(fx: Fixture, path: Path) -> Path:
    rows = [
        {"qid": r.qid, "docs": [[str(r.gold_documents[0].document_id), 1.0]]} for r in load_goldset(fx.build()).records
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in rows))
    return path


def test_run_refuses_a_wrong_chunk_id_naming_rule_and_record(fx, tmp_path):
    ds = hashed(fx, wrong_chunk)
    with pytest.raises(HarnessInputError) as ei:
        run(ds, fx.corpus, ["bm25"], workdir=tmp_path / "w", runs_dir=tmp_path / "runs", run_id="r")
    msg = str(ei.value)
    assert ei.value.exit_code == 2 and "\n" not in msg
    assert "record SP-001: V001 quote-contiguous" in msg or "record SP-001: V002 chunk-exists" in msg, msg
    assert "tiny.jsonl:1:" in msg and "not scored" in msg
    assert not (tmp_path / "runs" / "r").exists()


def test_run_checks_the_ingested_database_and_scores_a_valid_set(fx, tmp_path):
    ds = hashed(fx)
    path = run(ds, fx.corpus, ["bm25"], workdir=tmp_path / "w", runs_dir=tmp_path / "runs", run_id="ok")
    assert (path / "per_question.jsonl").is_file()


def test_run_and_evaluate_refuse_records_edited_after_release(fx, tmp_path):
    ds = hashed(fx)
    p = ds / "tiny.jsonl"
    p.write_text(p.read_text().replace("¿", "¿ ", 1))
    for call in (
        lambda: run(ds, fx.corpus, ["bm25"], workdir=tmp_path / "w", runs_dir=tmp_path / "runs", run_id="r"),
        lambda: evaluate_rankings(ds, rankings_file(fx, tmp_path / "r.jsonl"), runs_dir=tmp_path / "runs"),
    ):
        with pytest.raises(HarnessInputError, match="differs from records_sha256 .* the records were edited"):
            call()


def test_evaluate_without_corpus_says_what_it_skipped_and_with_corpus_checks_the_rules(fx, tmp_path):
    ds = hashed(fx, wrong_chunk)
    rk = rankings_file(fx, tmp_path / "r.jsonl")
    said: list[str] = []
    evaluate_rankings(ds, rk, runs_dir=tmp_path / "runs", run_id="a", log=said.append)
    assert len(said) == 1 and "no --corpus: the corpus rules V001, V002, V003, V004, V005" in said[0]
    assert "records hash (checked)" in said[0]
    with pytest.raises(HarnessInputError, match="record SP-001: V00[12]"):
        evaluate_rankings(ds, rk, runs_dir=tmp_path / "runs", run_id="b", corpus_dir=fx.corpus, workdir=tmp_path / "w")
    # the CLI: one stderr line naming what was skipped; exit 2 with the corpus
    res = runner.invoke(
        app, ["evaluate", "--goldset", str(ds), "--rankings", str(rk), "--runs-dir", str(tmp_path / "c")]
    )
    assert res.exit_code == 0, res.output
    res = runner.invoke(
        app,
        [
            "evaluate",
            "--goldset",
            str(ds),
            "--rankings",
            str(rk),
            "--runs-dir",
            str(tmp_path / "d"),
            "--corpus",
            str(fx.corpus),
        ],
    )
    assert res.exit_code == 2 and "V00" in res.output


def test_structural_rules_are_checked_without_a_corpus(fx):
    def dup(rs):
        rs[1]["id"] = rs[0]["id"]

    gs = load_goldset(fx.build(dup))
    with pytest.raises(HarnessInputError, match="V020 unique-id"):
        check_before_scoring(gs)


@pytest.mark.parametrize("name", ["../x.jsonl", "../../x.jsonl", "/etc/hostname", "sub/../../x.jsonl"])
def test_records_file_must_stay_inside_the_dataset_folder(fx, tmp_path, name):
    ds = fx.build()
    (tmp_path / "x.jsonl").write_text((ds / "tiny.jsonl").read_text())
    man = json.loads((ds / "tiny.meta.json").read_text())
    man["records_file"] = name
    (ds / "tiny.meta.json").write_text(json.dumps(man))
    with pytest.raises(HarnessInputError, match="field records_file: .* (not a path inside|leads outside)"):
        load_goldset(ds)
    corr = tmp_path / "c.jsonl"
    corr.write_text(json.dumps({"id": "SP-001", "patch": []}) + "\n")
    res = runner.invoke(
        app, ["goldset", "apply", str(ds), "--correction", str(corr), "--out", str(tmp_path / "o"), "--structural-only"]
    )
    assert res.exit_code == 2 and "field records_file" in res.output and "Traceback" not in res.output


def test_records_file_that_is_a_link_out_of_the_folder_is_refused(fx, tmp_path):
    ds = fx.build()
    (tmp_path / "x.jsonl").write_text((ds / "tiny.jsonl").read_text())
    (ds / "tiny.jsonl").unlink()
    os.symlink(tmp_path / "x.jsonl", ds / "tiny.jsonl")
    with pytest.raises(HarnessInputError, match="leads outside the dataset folder"):
        load_goldset(ds)


def test_empty_gold_list_and_coerced_types_are_refused_at_load(fx):
    ds = fx.build(lambda rs: rs[0].update(gold_documents=[]))
    with pytest.raises(HarnessInputError, match="record SP-001: field gold_documents"):
        load_goldset(ds)
    corr = ds.parent / "empty.jsonl"
    corr.write_text(json.dumps({"id": "MO-001", "patch": [{"op": "replace", "path": "/gold_documents", "value": []}]}))
    with pytest.raises(HarnessInputError, match="empty.jsonl:1: record MO-001: field gold_documents: empty"):
        correct_goldset(fx.build(), corr)
    ds = fx.build(lambda rs: rs[0].update(required_hops="1"))
    with pytest.raises(HarnessInputError, match="record SP-001: field required_hops"):
        load_goldset(ds)


def test_validate_without_corpus_says_so_on_stderr_and_in_json(fx):
    ds = fx.build()
    res = runner.invoke(app, ["validate", str(ds), "--contract", str(fx.contract), "--format", "json"])
    assert res.exit_code == 0
    assert "warning: V001, V002, V003, V004, V005 corpus rules not checked (no --corpus)" in res.stderr
    data = json.loads(res.stdout)["data"]
    assert data["skipped"]["rules"] == ["V001", "V002", "V003", "V004", "V005"]
    md = runner.invoke(app, ["validate", str(ds), "--contract", str(fx.contract), "--format", "markdown"])
    assert "corpus rules NOT checked" in md.stdout and "V001, V002, V003, V004, V005" in md.stdout


def test_goldset_apply_refuses_to_write_without_a_corpus_unless_structural_only(fx, tmp_path):
    ds = fx.build()
    corr = tmp_path / "c.jsonl"
    corr.write_text(json.dumps({"id": "MO-001", "patch": [{"op": "replace", "path": "/difficulty", "value": "hard"}]}))
    args = ["goldset", "apply", str(ds), "--correction", str(corr), "--contract", str(fx.contract)]
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "a")])
    assert res.exit_code == 2 and "--structural-only" in res.output and not (tmp_path / "a").exists()
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "b"), "--structural-only"])
    assert res.exit_code == 0, res.output
    entry = json.loads((tmp_path / "b" / "tiny.meta.json").read_text())["changelog"][-1]
    assert entry["validation"]["structural_only"] is True
    assert entry["validation"]["corpus_rules"].startswith("not checked")
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "c"), "--corpus", str(fx.corpus)])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "c" / "tiny.meta.json").read_text())["changelog"][-1]["validation"] == {
        "contract": fx.contract.name,
        "corpus_id": load_goldset(ds).manifest.corpus_version,
        "corpus_rules": "checked",
        "structural_only": False,
        "warnings": 0,
    }


@pytest.mark.parametrize("what", ["file", "folder"])
def test_goldset_apply_refuses_a_dataset_folder_holding_a_symlink(fx, tmp_path, what):
    ds = fx.build()
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "key.txt").write_text("do not copy")
    os.symlink(secret / "key.txt" if what == "file" else secret, ds / "notes")
    corr = tmp_path / "c.jsonl"
    corr.write_text(json.dumps({"id": "MO-001", "patch": [{"op": "replace", "path": "/difficulty", "value": "hard"}]}))
    res = runner.invoke(
        app,
        [
            "goldset",
            "apply",
            str(ds),
            "--correction",
            str(corr),
            "--out",
            str(tmp_path / "o"),
            "--structural-only",
            "--contract",
            str(fx.contract),
        ],
    )
    assert res.exit_code == 2 and f"{ds / 'notes'}: a symbolic link in the dataset folder" in res.output
    assert not (tmp_path / "o").exists()


def test_bare_records_file_runs_with_corpus_identity_not_applicable(fx, tmp_path):
    ds = fx.build()
    recs = tmp_path / "bare.jsonl"
    recs.write_text((ds / "tiny.jsonl").read_text())
    path = run(recs, fx.corpus, ["bm25"], workdir=tmp_path / "w", runs_dir=tmp_path / "runs", run_id="bare")
    assert path.is_dir()
