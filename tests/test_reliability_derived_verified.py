"""Issue 44 items 19 and 20: a BM25 index folder replaced by a regular file is a damaged derived file (rebuilt with
one notice), and a read-only work directory whose derived files were copied without their mtimes is verified by
content (the sha256 its manifests record) instead of refused."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

import pytest
from conftest import write_tiny_corpus, write_tiny_goldset
from test_reliability_derived import bm25_folder, outcome
from typer.testing import CliRunner

import harness.io as hio
from harness.cli import app


@pytest.fixture
def tiny(tmp_path):
    corpus = write_tiny_corpus(tmp_path / "corpus")
    return corpus, write_tiny_goldset(tmp_path / "gs", corpus), tmp_path


def run(tiny, run_id: str, workdir: str = "wd", *extra: str):
    corpus, goldset, tmp = tiny
    args = ["run", "--corpus", corpus, "--goldset", goldset, "--systems", "bm25", "--workdir", tmp / workdir]
    args += ["--runs-dir", tmp / "runs", "--run-id", run_id, "--bootstrap-reps", "100", *extra]
    return CliRunner().invoke(app, [str(a) for a in args])


def test_a_bm25_index_folder_replaced_by_a_file_is_rebuilt_with_one_notice(tiny):
    tmp = tiny[2]
    assert run(tiny, "clean").exit_code == 0
    clean = outcome(tmp, "clean")
    folder = bm25_folder(tmp, "chunk")
    shutil.rmtree(folder)
    folder.write_text("not an index\n", "utf-8")
    r = run(tiny, "after")
    assert r.exit_code == 0, r.output
    notices = [x for x in r.output.splitlines() if x.startswith("harness: bm25:")]
    assert len(notices) == 1 and "not a folder" in notices[0] and "rebuilding it" in notices[0], r.output
    assert folder.is_dir() and outcome(tmp, "after") == clean


def test_a_read_only_workdir_copied_without_mtimes_is_verified_by_content(tiny, monkeypatch):
    tmp = tiny[2]
    assert run(tiny, "clean").exit_code == 0
    clean = outcome(tmp, "clean")
    shutil.copytree(tmp / "wd", tmp / "copy", copy_function=shutil.copyfile)  # bytes only: new mtimes
    real = hio.temporary_path

    def read_only(final, **kw):  # every write under the copy fails as on a read-only file system
        if "copy" in Path(final).parts:
            raise OSError(errno.EROFS, "Read-only file system", str(final))
        return real(final, **kw)

    monkeypatch.setattr(hio, "temporary_path", read_only)
    r = run(tiny, "copied", "copy")
    assert r.exit_code == 0, r.output
    assert "harness: bm25" not in r.output and outcome(tmp, "copied") == clean
