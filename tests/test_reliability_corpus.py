"""Corpus folders and derived corpus databases that are not what they should be (issue 18, items 4 and 8).

* Symbolic links: a document reached through a link must resolve inside the corpus folder, with or without
  ``metadata.jsonl`` (exit 2 naming the link and its target).
* A damaged ``corpus.db`` (not a database, truncated, garbage pages, no manifest, a hot journal left by a killed
  writer) is named on stderr and rebuilt, or recovered, by the next ingest; never a traceback.
"""

from __future__ import annotations

import importlib
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.corpus.ingest import database_problem, ingest, scan_corpus
from harness.corpus.store import Corpus
from harness.errors import HarnessInputError
from harness.studies.known_item import chunk_corpus


def write_docs(root: Path, names=("a", "b", "c"), words: int = 150) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for k, name in enumerate(names):
        body = " ".join(f"palabra{(k * 17 + i) % 61}" for i in range(words))
        (root / f"{name}.md").write_text(f"# {name}\n\n{body}\n", encoding="utf-8")
    return root


# ---------------------------------------------------------------------------------------------------------------
# Symbolic links (item 4)
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside the corpus with a Markdown file and a sub-folder of Markdown files."""
    o = write_docs(tmp_path / "outside", names=("secret",))
    write_docs(o / "sub", names=("more",))
    return o


def test_linked_md_outside_the_corpus_is_refused_without_metadata(tmp_path: Path, outside: Path):
    corpus = write_docs(tmp_path / "corpus")
    link = corpus / "leak.md"
    link.symlink_to(outside / "secret.md")
    for call in (lambda: scan_corpus(corpus), lambda: ingest(corpus, tmp_path / "w"), lambda: chunk_corpus(corpus)):
        with pytest.raises(HarnessInputError) as ei:
            call()
        msg = str(ei.value)
        assert str(link) in msg and str((outside / "secret.md").resolve()) in msg and "outside" in msg
    res = CliRunner().invoke(app, ["ingest", str(corpus), "--workdir", str(tmp_path / "w")])
    assert res.exit_code == 2
    assert str((outside / "secret.md").resolve()) in res.output.replace("\n", "")
    assert not (tmp_path / "w" / "corpora").exists() or not list((tmp_path / "w" / "corpora").rglob("corpus.db"))


def test_linked_folder_outside_the_corpus_is_refused_without_metadata(tmp_path: Path, outside: Path):
    corpus = write_docs(tmp_path / "corpus")
    link = corpus / "more"
    link.symlink_to(outside / "sub", target_is_directory=True)
    with pytest.raises(HarnessInputError, match="outside the corpus") as ei:
        ingest(corpus, tmp_path / "w")
    assert str(link) in str(ei.value) and str((outside / "sub").resolve()) in str(ei.value)


def test_links_inside_the_corpus_are_read(tmp_path: Path):
    """A linked file or folder that stays inside the corpus is no problem: the file is a document (under the
    link's name), the linked folder is not walked twice."""
    corpus = write_docs(tmp_path / "corpus")
    write_docs(corpus / "real", names=("d",))
    (corpus / "alias.md").symlink_to(corpus / "a.md")
    (corpus / "again").symlink_to(corpus / "real", target_is_directory=True)
    ids = [d.doc_id for d in scan_corpus(corpus).docs]
    assert ids == ["a", "alias", "b", "c", "real/d"]


def test_discovery_order_is_path_order(tmp_path: Path):
    """Documents are in ``sorted(Path)`` order (by path components), as they always were: ``x/y`` before ``x-z``."""
    corpus = tmp_path / "corpus"
    write_docs(corpus / "x", names=("y",))
    write_docs(corpus, names=("x-z", "README", "SOURCE"))
    write_docs(corpus / ".hidden", names=("h",))
    assert [d.doc_id for d in scan_corpus(corpus).docs] == [".hidden/h", "x/y", "x-z"]


def test_metadata_path_through_a_link_outside_is_refused(tmp_path: Path, outside: Path):
    corpus = write_docs(tmp_path / "corpus")
    (corpus / "ext").symlink_to(outside / "sub", target_is_directory=True)
    meta = [{"doc_id": "a", "path": "a.md"}, {"doc_id": "m", "path": "ext/more.md"}]
    (corpus / "metadata.jsonl").write_text("\n".join(json.dumps(m) for m in meta) + "\n", encoding="utf-8")
    with pytest.raises(HarnessInputError, match=r"metadata.jsonl:2: record m: field path: .*escapes") as ei:
        scan_corpus(corpus)
    assert str((outside / "sub").resolve()) in str(ei.value)


def test_unreadable_document_is_one_located_line(tmp_path: Path):
    corpus = write_docs(tmp_path / "corpus")
    (corpus / "broken.md").symlink_to(corpus / "missing-target.md")
    with pytest.raises(HarnessInputError, match=r"broken\.md: cannot read corpus document broken"):
        scan_corpus(corpus)


# ---------------------------------------------------------------------------------------------------------------
# Damaged corpus database (item 8)
# ---------------------------------------------------------------------------------------------------------------


def _damage_not_a_database(db: Path) -> None:
    db.write_bytes(b"this is not a SQLite database\n" * 200)


def _damage_truncated(db: Path) -> None:
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 3])


def _damage_garbage_pages(db: Path) -> None:
    data = bytearray(db.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    for off in range(page, len(data), page * 2):  # every other page after the first: b-tree pages broken
        data[off : off + page] = bytes((off * 7 + i) % 251 for i in range(min(page, len(data) - off)))
    db.write_bytes(bytes(data))


def _damage_empty_sqlite(db: Path) -> None:
    import apsw

    db.unlink()
    apsw.Connection(str(db)).execute("CREATE TABLE unrelated(x)")


@pytest.mark.parametrize(
    "damage", [_damage_not_a_database, _damage_truncated, _damage_garbage_pages, _damage_empty_sqlite]
)
def test_damaged_database_is_named_and_rebuilt(tmp_path: Path, damage):
    corpus = write_docs(tmp_path / "corpus", names=tuple(f"d{i:02d}" for i in range(30)), words=900)
    work = tmp_path / "w"
    db, first, created = ingest(corpus, work)
    assert created and first.n_chunks > 200
    damage(db)
    assert database_problem(db)[1] is not None
    lines: list[str] = []
    db2, again, created2 = ingest(corpus, work, log=lines.append)
    assert db2 == db and created2
    assert (again.n_documents, again.n_chunks, again.corpus_hash) == (30, first.n_chunks, first.corpus_hash)
    assert len(lines) == 1 and str(db) in lines[0] and "damaged corpus database" in lines[0], lines
    assert database_problem(db) == (again, None)
    with Corpus(db) as cp:
        assert len(cp.chunk_keys()[0]) == first.n_chunks


def test_damaged_database_through_the_cli(tmp_path: Path):
    corpus = write_docs(tmp_path / "corpus")
    work = tmp_path / "w"
    db, _, _ = ingest(corpus, work)
    _damage_not_a_database(db)
    res = CliRunner().invoke(app, ["ingest", str(corpus), "--workdir", str(work)])
    assert res.exit_code == 0, res.output
    assert "damaged corpus database" in res.output and "Traceback" not in res.output
    assert "(ingested;" in res.output


def test_opening_a_damaged_database_names_it(tmp_path: Path):
    corpus = write_docs(tmp_path / "corpus")
    db, _, _ = ingest(corpus, tmp_path / "w")
    _damage_not_a_database(db)
    with pytest.raises(HarnessInputError, match=r"corpus\.db: damaged corpus database .*harness ingest"):
        Corpus(db)


HOT_JOURNAL = r"""
import sys, time
from harness.corpus.store import open_db

conn = open_db(sys.argv[1])
conn.execute("PRAGMA cache_size=1")
conn.execute("BEGIN IMMEDIATE")
conn.execute("DELETE FROM chunks")
for i in range(2000):
    conn.execute("INSERT INTO manifest VALUES (?, ?)", (f"pad{i}", "x" * 500))
print("writing", flush=True)
time.sleep(600)
"""


def test_hot_journal_of_a_killed_writer_is_rolled_back_not_rebuilt(tmp_path: Path):
    """A writer killed inside a transaction (a vector build, say) leaves a hot journal: a read-only open cannot
    roll it back (ReadOnlyError). The ingest opens it read-write once, SQLite rolls back, and the database is
    reused as it was."""
    corpus = write_docs(tmp_path / "corpus", names=tuple(f"d{i:02d}" for i in range(20)), words=600)
    work = tmp_path / "w"
    db, first, _ = ingest(corpus, work)
    p = subprocess.Popen([sys.executable, "-c", HOT_JOURNAL, str(db)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "writing"
    p.send_signal(signal.SIGKILL)
    p.wait()
    p.stdout.close()
    assert db.with_name("corpus.db-journal").exists()
    lines: list[str] = []
    db2, again, created = ingest(corpus, work, log=lines.append)
    assert not created and again == first and lines == []
    with Corpus(db) as cp:
        assert len(cp.chunk_keys()[0]) == first.n_chunks


def test_manifest_disagreeing_with_the_rows_is_damage(tmp_path: Path):
    corpus = write_docs(tmp_path / "corpus")
    db, first, _ = ingest(corpus, tmp_path / "w")
    with Corpus(db) as cp:
        cp.conn.execute("DELETE FROM chunks WHERE rowid = (SELECT max(rowid) FROM chunks)")
    manifest, problem = database_problem(db)
    assert manifest is None and f"{first.n_chunks - 1} chunks stored" in problem


def test_read_only_workdir_still_serves_an_earlier_ingest(tmp_path: Path, monkeypatch):
    """When the lock file cannot be created (a read-only work directory), an earlier ingest of the same corpus is
    still used; anything that would need writing is one located line."""
    ingest_mod = importlib.import_module("harness.corpus.ingest")  # the package re-exports a function `ingest`

    corpus = write_docs(tmp_path / "corpus")
    work = tmp_path / "w"
    db, first, _ = ingest(corpus, work)

    def read_only(path, **_kw):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(ingest_mod, "file_lock", read_only)
    assert ingest(corpus, work) == (db, first, False)
    other = write_docs(tmp_path / "other", names=("z",))
    with pytest.raises(HarnessInputError, match=r"cannot write the work directory \(Permission denied\)"):
        ingest(other, work)


def test_busy_database_is_not_mistaken_for_damage(tmp_path: Path, monkeypatch):
    """A database another connection holds an exclusive lock on (a long write) is busy, not damaged: one line,
    exit 2, nothing removed."""
    import apsw

    import harness.corpus.store as store

    corpus = write_docs(tmp_path / "corpus")
    work = tmp_path / "w"
    db, first, _ = ingest(corpus, work)
    monkeypatch.setattr(store, "BUSY_TIMEOUT_MS", 50)
    writer = apsw.Connection(str(db))
    writer.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(HarnessInputError, match=r"corpus\.db: cannot read the corpus database now .*try again"):
            ingest(corpus, work)
        assert db.is_file()
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert ingest(corpus, work) == (db, first, False)
