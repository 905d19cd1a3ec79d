"""``goldset split`` refuses what it cannot honestly version (issue 44 items 10 and 11): a gold set whose questions
form one cluster (it wrote a version with an empty test side, exit 0), and records edited after their release (it
versioned them without a word, where ``validate`` and ``run`` refuse them)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.curation.splitset import write_split
from harness.errors import HarnessInputError
from harness.goldset.io import load_goldset
from harness.goldset.split import SplitRefusedError, assign_split

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "datasets" / "mx-leyes-dof-eval-v1"
RECORDS = "mx_leyes_dof_eval_v1.jsonl"
MANIFEST = "mx_leyes_dof_eval_v1.meta.json"


def _copy(tmp_path: Path) -> Path:
    dst = tmp_path / "gs"
    shutil.copytree(REAL, dst)
    return dst


def _rewrite(ds: Path, edit, *, rehash: bool) -> None:
    """Apply ``edit`` to every record; with ``rehash`` the manifest's records_sha256 follows (a released version)."""
    lines = (ds / RECORDS).read_text("utf-8").splitlines()
    text = "".join(json.dumps(edit(json.loads(x)), ensure_ascii=False) + "\n" for x in lines)
    (ds / RECORDS).write_text(text, "utf-8")
    if rehash:
        man = json.loads((ds / MANIFEST).read_text("utf-8"))
        man["records_sha256"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
        (ds / MANIFEST).write_text(json.dumps(man, ensure_ascii=False, indent=2) + "\n", "utf-8")


def _one_cluster(rec: dict) -> dict:
    common = dict(rec["gold_documents"][0], document_id="ley-constitucion-politica", grade=1, role="context")
    rec["gold_documents"] = [*rec["gold_documents"], common]  # every question shares one gold document
    return rec


def test_a_one_cluster_gold_set_is_refused_with_exit_1_and_the_reason(tmp_path):
    ds = _copy(tmp_path)
    _rewrite(ds, _one_cluster, rehash=True)
    gs = load_goldset(ds)
    with pytest.raises(SplitRefusedError, match=r"all 42 questions are one cluster"):
        assign_split(gs.records, seed=0)
    out = tmp_path / "split"
    r = CliRunner().invoke(app, ["goldset", "split", str(ds), "--out", str(out), "--seed", "1"])
    assert r.exit_code == 1, r.output
    lines = [x for x in r.output.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: {ds / RECORDS}: field gold_documents: all 42 questions")
    assert "the other side would be empty" in lines[0] and not out.exists()


def test_records_edited_after_the_release_are_refused_before_a_version_is_written(tmp_path):
    ds = _copy(tmp_path)
    _rewrite(ds, lambda r: dict(r, question=r["question"] + " (editada)"), rehash=False)
    out = tmp_path / "split"
    with pytest.raises(HarnessInputError, match=r"records were edited after this version was written"):
        write_split(ds, out, seed=1)
    r = CliRunner().invoke(app, ["goldset", "split", str(ds), "--out", str(out), "--seed", "1"])
    assert r.exit_code == 2, r.output
    lines = [x for x in r.output.splitlines() if x.strip()]
    assert (
        len(lines) == 1 and f"{ds / RECORDS}: records sha256" in lines[0] and "differs from records_sha256" in lines[0]
    )
    assert not out.exists()
    # the same edit, released (the manifest's hash follows the records): split as before
    _rewrite(ds, lambda r: r, rehash=True)
    ok = CliRunner().invoke(app, ["goldset", "split", str(ds), "--out", str(out), "--seed", "1"])
    assert ok.exit_code == 0, ok.output
