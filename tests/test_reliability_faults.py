"""Issue 26 items 8 and 18: storage faults are one line with the real cause (exit 2), and no error names a
temporary folder that is gone by the time the user reads it.

Item 8: before the fix a read-only work directory without the evidence cache, a full disk and a full runs folder
gave tracebacks; on a full disk the ingest's real error (``database or disk is full``) could be hidden behind
SQLite's "cannot rollback". Writes of outputs (:func:`harness.io.atomic_write_text`,
:func:`harness.io.atomic_directory`)
now turn a file-system ``OSError`` (no space, read-only, permission, too many links) into one line naming the
user's path (:func:`harness.io.write_error`); the ingest looks for the storage cause along the exception chain
(:func:`harness.corpus.ingest.storage_cause`) and removes its temporary database. The faults are simulated by
raising the ``OSError`` / ``apsw.FullError`` the system raises, at the place it raises it.

Item 18: ``goldset import --beir`` with two ids equal in NFC named ``.<out>-corpus.<pid>-<random>.tmp/metadata.jsonl``,
a folder deleted before the message was read. The duplicate is now found in ``corpus.jsonl`` (naming its lines), and
any error raised while an output folder is written names the output's path, not its temporary.
"""

from __future__ import annotations

import errno
import importlib
import json
import unicodedata
from pathlib import Path

import apsw
import pytest
from conftest import write_tiny_corpus, write_tiny_goldset
from typer.testing import CliRunner

import harness.evaluation.runs as runs_mod
import harness.io as hio
from harness.cli import app
from harness.errors import HarnessInputError
from harness.progress import PLAIN_LINE

ingest = importlib.import_module("harness.corpus.ingest")  # the package exports a function of that name


def _one_line(r, *needles) -> str:
    assert r.exit_code == 2, r.output
    lines = [x for x in r.output.strip().splitlines() if not PLAIN_LINE.match(x)]  # progress lines aside
    assert len(lines) == 1 and lines[0].startswith("error: "), r.output
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if ".tmp" in p.name or ".old" in p.name)


def test_a_full_disk_during_the_ingest_names_the_real_cause(tmp_path: Path, monkeypatch):
    corpus = write_tiny_corpus(tmp_path / "corpus")
    real = ingest.write_manifest

    def full(conn, manifest):  # SQLite's answer when a page cannot be written
        real(conn, manifest)
        raise apsw.FullError("FullError: database or disk is full")

    monkeypatch.setattr(ingest, "write_manifest", full)
    r = CliRunner().invoke(app, ["ingest", str(corpus), "--workdir", str(tmp_path / "wd")])
    _one_line(r, "corpus.db: cannot write the corpus database (database or disk is full)", "--workdir")
    assert _leftovers(tmp_path / "wd") == [] and not list((tmp_path / "wd").rglob("corpus.db"))


def test_the_cause_is_found_behind_a_cannot_rollback():
    try:
        try:
            raise apsw.FullError("FullError: database or disk is full")
        except apsw.FullError:
            raise apsw.SQLError("SQLError: cannot rollback - no transaction is active") from None
    except apsw.SQLError as exc:
        exc.__context__ = exc.__context__ or apsw.FullError("database or disk is full")
        assert ingest.storage_cause(exc) == "database or disk is full"
    assert ingest.storage_cause(OSError(errno.ENOSPC, "No space left on device")) == "No space left on device"
    assert ingest.storage_cause(ValueError("x")) is None


@pytest.fixture
def tiny(tmp_path: Path) -> dict[str, Path]:
    corpus = write_tiny_corpus(tmp_path / "corpus")
    return {"corpus": corpus, "gs": write_tiny_goldset(tmp_path / "gs", corpus), "tmp": tmp_path}


def _run(tiny, *more):
    t = tiny["tmp"]
    return CliRunner().invoke(app, ["-q", "run", "--corpus", str(tiny["corpus"]), "--goldset", str(tiny["gs"]),
                                    "--workdir", str(t / "wd"), "--runs-dir", str(t / "runs"), "--run-id", "x",
                                    "--bootstrap-reps", "100", *more])  # fmt: skip


@pytest.mark.parametrize(
    ("code", "why"), [(errno.ENOSPC, "No space left on device"), (errno.EDQUOT, "Disk quota exceeded")]
)
def test_a_full_runs_folder_while_writing_the_record_is_one_line(tiny, monkeypatch, code, why):
    def full(model):
        raise OSError(code, why)

    monkeypatch.setattr(runs_mod, "_dump", full)  # the record's summary.json is written into the temporary
    r = _run(tiny)
    line = _one_line(r, f"--run-id {tiny['tmp'] / 'runs' / 'x'}: cannot write ({why}); nothing written")
    assert ".tmp" not in line
    runs = tiny["tmp"] / "runs"
    assert not runs.exists() or list(runs.iterdir()) == []  # no half-written record, no temporary


def test_a_runs_folder_with_too_many_entries_is_one_line(tiny, monkeypatch):
    real = hio.tempfile.mkdtemp

    def too_many(*a, **k):  # the runs folder holds as many sub-folders as its file system allows
        if Path(k.get("dir", "")).name == "runs":
            raise OSError(errno.EMLINK, "Too many links")
        return real(*a, **k)

    monkeypatch.setattr(hio.tempfile, "mkdtemp", too_many)
    _one_line(_run(tiny), "--run-id", "cannot write (Too many links)")


def test_a_read_only_workdir_without_the_evidence_cache_is_one_line(tiny, monkeypatch):
    """The corpus was ingested earlier; the work directory is read-only now and holds no evidence cache."""
    assert _run(tiny, "--run-id", "first").exit_code == 0
    for p in (tiny["tmp"] / "wd" / "evidence").iterdir():
        p.unlink()
    real = hio.temporary_path

    def read_only(final, **kw):
        if "evidence" in Path(final).parts:
            raise OSError(errno.EROFS, "Read-only file system", str(final))
        return real(final, **kw)

    monkeypatch.setattr(hio, "temporary_path", read_only)
    _one_line(_run(tiny, "--run-id", "second"), "evidence", "cannot write (Read-only file system)")
    assert not (tiny["tmp"] / "runs" / "second").exists()


def test_an_error_inside_an_output_folder_names_the_output_not_its_temporary(tmp_path: Path):
    final = tmp_path / "out"
    with pytest.raises(HarnessInputError) as err:
        with hio.atomic_directory(final) as tmp:
            raise HarnessInputError(f"{tmp / 'metadata.jsonl'}:3: field doc_id: bad")
    assert str(err.value) == f"{final / 'metadata.jsonl'}:3: field doc_id: bad (nothing written)"
    assert list(tmp_path.iterdir()) == []


def test_beir_ids_equal_in_nfc_are_named_in_corpus_jsonl(tmp_path: Path):
    beir = tmp_path / "b"
    (beir / "qrels").mkdir(parents=True)
    nfc_id = unicodedata.normalize("NFC", "docé")
    docs = [{"_id": "doc1", "text": "x y"}, {"_id": nfc_id, "text": "a b"},
            {"_id": unicodedata.normalize("NFD", nfc_id), "text": "c d"}]  # fmt: skip
    (beir / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (beir / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "x"}) + "\n")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tdoc1\t2\n")
    r = CliRunner().invoke(app, ["goldset", "import", "--beir", str(beir), "--out", str(tmp_path / "gs")])
    line = _one_line(r, f"{beir / 'corpus.jsonl'}:3: document", "repeated _id (the same as at line 2 in Unicode NFC")
    assert ".tmp" not in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]
