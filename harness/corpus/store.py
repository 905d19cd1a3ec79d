"""The corpus database: one SQLite file per (corpus hash, chunker) under the work directory.

Opened through apsw (it bundles SQLite and can load extensions; many Python builds' ``sqlite3`` cannot) with
sqlite-vec loaded, so vector tables live in the same file.

Schema::

    documents(doc_id TEXT PRIMARY KEY, path TEXT, title TEXT, date TEXT, institution TEXT, doc_type TEXT,
              collection TEXT, section TEXT, words INTEGER, n_chunks INTEGER, sha256 TEXT, meta_json TEXT)
    chunks(rowid INTEGER PRIMARY KEY,             -- dense 1..N in (document order, chunk index)
           chunk_id TEXT UNIQUE, doc_id TEXT, chunk_index INTEGER, heading_path TEXT (JSON list),
           char_start INTEGER, char_end INTEGER, n_words INTEGER, text TEXT, text_sha256 TEXT)
    manifest(key TEXT PRIMARY KEY, value TEXT)    -- JSON values; see CorpusManifest
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import apsw
import sqlite_vec

from harness.errors import HarnessInputError

SCHEMA_VERSION = 1

BUSY_TIMEOUT_MS = 30_000
"""How long a connection waits for another process's write lock before SQLite reports ``BusyError``."""

DAMAGE_ERRORS = (apsw.NotADBError, apsw.CorruptError, apsw.SQLError)
"""SQLite errors that mean a file is not (or no longer) a corpus database (not a database, corrupt pages, a missing
table); busy, locked or I/O errors do not."""

SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS documents(
  doc_id TEXT PRIMARY KEY, path TEXT NOT NULL, title TEXT, date TEXT, institution TEXT, doc_type TEXT,
  collection TEXT, section TEXT, words INTEGER, n_chunks INTEGER, sha256 TEXT NOT NULL, meta_json TEXT);
CREATE TABLE IF NOT EXISTS chunks(
  rowid INTEGER PRIMARY KEY, chunk_id TEXT NOT NULL UNIQUE, doc_id TEXT NOT NULL, chunk_index INTEGER NOT NULL,
  heading_path TEXT NOT NULL, char_start INTEGER NOT NULL, char_end INTEGER NOT NULL, n_words INTEGER NOT NULL,
  text TEXT NOT NULL, text_sha256 TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc_id, chunk_index);
CREATE TABLE IF NOT EXISTS manifest(key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


@dataclass
class CorpusManifest:
    """What identifies an ingested corpus.

    Attributes:
        name: corpus name (the corpus folder's name unless given).
        corpus_hash: hex sha256 over the sorted per-document hashes (each over the document's metadata record
            and its bytes).
        corpus_id: ``f"{name}@{corpus_hash[:12]}"``.
        n_documents, n_chunks, n_words: counts.
        date_min, date_max: first and last metadata ``date`` (ISO), ``None`` when no document has one.
        chunker_id, chunker_params: the chunker that produced the chunks.
        source_dir: absolute path of the corpus folder at ingest time (informative only).
        schema_version: of this database layout.
    """

    name: str
    corpus_hash: str
    corpus_id: str
    n_documents: int
    n_chunks: int
    n_words: int
    date_min: str | None
    date_max: str | None
    chunker_id: str
    chunker_params: dict = field(default_factory=dict)
    source_dir: str = ""
    schema_version: int = SCHEMA_VERSION
    ingest_seconds: float = 0.0

    def to_dict(self) -> dict:
        """Plain dict (JSON-serialisable)."""
        return asdict(self)


def open_db(path: str | Path, *, readonly: bool = False, create: bool = False) -> apsw.Connection:
    """Open a corpus database with sqlite-vec loaded.

    Args:
        path: database file.
        readonly: open read-only.
        create: create the file and schema if missing.

    Raises:
        HarnessInputError: the file is missing (and ``create`` is false) or is not a corpus database.
    """
    path = Path(path)
    if not create and not path.exists():
        raise HarnessInputError(f"{path}: corpus database not found (run `harness ingest` first)")
    flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    conn = apsw.Connection(str(path), flags=flags)
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    conn.enable_load_extension(False)
    conn.setbusytimeout(BUSY_TIMEOUT_MS)
    if create and not readonly:
        conn.execute(SCHEMA_SQL)
    return conn


def read_manifest(conn: apsw.Connection) -> CorpusManifest | None:
    """The manifest stored in ``conn``, or ``None`` when the database is incomplete."""
    try:
        rows = dict(conn.execute("SELECT key, value FROM manifest").fetchall())
    except apsw.SQLError:
        return None
    if "corpus" not in rows:
        return None
    return CorpusManifest(**json.loads(rows["corpus"]))


def write_manifest(conn: apsw.Connection, manifest: CorpusManifest) -> None:
    """Store ``manifest`` (replacing any previous one)."""
    conn.execute(
        "INSERT OR REPLACE INTO manifest(key, value) VALUES ('corpus', ?)",
        (json.dumps(manifest.to_dict(), ensure_ascii=False),),
    )


@dataclass
class DocumentRow:
    """A row of ``documents`` (see the module docstring)."""

    doc_id: str
    path: str
    title: str | None
    date: str | None
    institution: str | None
    doc_type: str | None
    collection: str | None
    section: str | None
    words: int
    n_chunks: int
    sha256: str
    meta: dict


class Corpus:
    """Read access to an ingested corpus database.

    Attributes:
        path: the database file.
        conn: an apsw connection with sqlite-vec loaded (read-write so vector indexes can be added).
        manifest: the :class:`CorpusManifest`.

    Raises:
        HarnessInputError: missing, damaged (not a database, corrupt) or incomplete database, naming the file.
    """

    def __init__(self, path: str | Path, *, readonly: bool = False):
        self.path = Path(path)
        self.conn = open_db(self.path, readonly=readonly)
        try:
            manifest = read_manifest(self.conn)
        except DAMAGE_ERRORS as exc:
            self.conn.close()
            raise HarnessInputError(
                f"{self.path}: damaged corpus database ({type(exc).__name__}: {exc}); it is derived: "
                "`harness ingest` removes and rebuilds it"
            ) from None
        if manifest is None:
            self.conn.close()
            raise HarnessInputError(f"{self.path}: not a complete corpus database (no manifest)")
        self.manifest = manifest
        self._documents: dict[str, DocumentRow] | None = None

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def __enter__(self) -> Corpus:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def documents(self) -> dict[str, DocumentRow]:
        """``{doc_id: DocumentRow}`` in ingest order (cached)."""
        if self._documents is None:
            rows = self.conn.execute(
                "SELECT doc_id, path, title, date, institution, doc_type, collection, section, words, n_chunks, "
                "sha256, meta_json FROM documents ORDER BY rowid"
            ).fetchall()
            self._documents = {r[0]: DocumentRow(*r[:11], meta=json.loads(r[11] or "{}")) for r in rows}
        return self._documents

    def chunk_table(self) -> tuple[list[int], list[str], list[str], list[str]]:
        """All chunks in rowid order as parallel lists ``(rowids, chunk_ids, doc_ids, texts)``."""
        rows = self.conn.execute("SELECT rowid, chunk_id, doc_id, text FROM chunks ORDER BY rowid").fetchall()
        return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], [r[3] for r in rows]

    def chunk_keys(self) -> tuple[list[str], list[str]]:
        """All chunks in rowid order as parallel lists ``(chunk_ids, doc_ids)`` (no texts)."""
        rows = self.conn.execute("SELECT chunk_id, doc_id FROM chunks ORDER BY rowid").fetchall()
        return [r[0] for r in rows], [r[1] for r in rows]

    def iter_chunk_texts(self, batch: int = 4096) -> Iterator[list[str]]:
        """Chunk texts in rowid order, ``batch`` at a time (the last list may be shorter; none when empty).

        Keyset pagination on rowid, so at most one batch of texts is alive: a build over millions of chunks never
        holds them all. The same order as :meth:`chunk_table` and :meth:`chunk_keys`.

        Raises:
            ValueError: ``batch`` < 1.
        """
        if batch < 1:
            raise ValueError(f"batch={batch}: must be >= 1")
        last = -1
        while True:
            rows = self.conn.execute(
                "SELECT rowid, text FROM chunks WHERE rowid > ? ORDER BY rowid LIMIT ?", (last, batch)
            ).fetchall()
            if not rows:
                return
            last = rows[-1][0]
            yield [r[1] for r in rows]

    def chunk_info(self) -> dict[str, tuple[str, int, list[str]]]:
        """``{chunk_id: (doc_id, chunk_index, heading_path)}``."""
        rows = self.conn.execute("SELECT chunk_id, doc_id, chunk_index, heading_path FROM chunks").fetchall()
        return {r[0]: (r[1], r[2], json.loads(r[3])) for r in rows}

    def document_texts(self) -> tuple[list[str], list[str]]:
        """``(doc_ids, texts)`` for whole-document indexing: title, then each new heading and chunk text in order."""
        docs = self.documents()
        parts: dict[str, list[str]] = {d: [docs[d].title or ""] for d in docs}
        last_path: dict[str, str] = {}
        for doc_id, hp, text in self.conn.execute(
            "SELECT doc_id, heading_path, text FROM chunks ORDER BY rowid"
        ).fetchall():
            if last_path.get(doc_id) != hp:
                path = json.loads(hp)
                if path:
                    parts[doc_id].append(path[-1])
                last_path[doc_id] = hp
            parts[doc_id].append(text)
        ids = list(docs)
        return ids, ["\n".join(parts[d]) for d in ids]
