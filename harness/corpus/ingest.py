"""Ingest a Markdown corpus (one file per document, optional ``metadata.jsonl``) into the corpus database.

``metadata.jsonl`` (one JSON object per document): required ``doc_id`` and ``path`` (relative to the corpus
folder, inside it); optional ``title``, ``date`` (ISO), ``institution``, ``doc_type``, ``section`` or ``edition``,
``collection``; other keys are kept in ``meta_json``. Without ``metadata.jsonl`` every ``**/*.md`` file is a
document whose id is its path without the ``.md`` suffix.

The database goes to ``<workdir>/corpora/<name>-<hash12>-<chunker_id>/corpus.db`` and is written to a temporary
file first and renamed, so an interrupted ingest leaves nothing half written. Re-ingesting an unchanged corpus is a
no-op (same hash, same chunker: the existing database is returned).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from harness.corpus.chunker import decode_source, get_chunker
from harness.corpus.store import CorpusManifest, open_db, read_manifest, write_manifest
from harness.errors import HarnessInputError
from harness.io import canonical_json, read_jsonl
from harness.progress import progress_bar

__all__ = ["DocMeta", "CorpusSource", "scan_corpus", "ingest", "corpus_db_path", "DEFAULT_WORKDIR"]

DEFAULT_WORKDIR = Path(".harness")


@dataclass
class DocMeta:
    """One document's metadata (``metadata.jsonl`` record or derived from its path)."""

    doc_id: str
    path: str
    title: str | None = None
    date: str | None = None
    institution: str | None = None
    doc_type: str | None = None
    collection: str | None = None
    section: str | None = None
    words: int | None = None
    extra: dict = field(default_factory=dict)
    sha256: str = ""


@dataclass
class CorpusSource:
    """A scanned corpus folder: its documents' metadata and hashes (nothing chunked yet)."""

    root: Path
    name: str
    docs: list[DocMeta]
    corpus_hash: str

    @property
    def corpus_id(self) -> str:
        """``name@hash12``."""
        return f"{self.name}@{self.corpus_hash[:12]}"

    @property
    def date_range(self) -> tuple[str | None, str | None]:
        """(first, last) document date."""
        dates = sorted(d.date for d in self.docs if d.date)
        return (dates[0], dates[-1]) if dates else (None, None)


_KNOWN = {"doc_id", "path", "title", "date", "institution", "doc_type", "collection", "section", "edition", "words"}


def _safe_relpath(root: Path, rel: object, where: str) -> str:
    if not isinstance(rel, str) or not rel:
        raise HarnessInputError(f"{where}: field path: must be a non-empty string")
    p = PurePosixPath(rel)
    if p.is_absolute() or ".." in p.parts or "\\" in rel:
        raise HarnessInputError(f"{where}: field path: {rel!r} escapes the corpus directory")
    full = (root / rel).resolve()
    if not full.is_relative_to(root.resolve()):
        raise HarnessInputError(f"{where}: field path: {rel!r} escapes the corpus directory")
    if not full.is_file():
        raise HarnessInputError(f"{where}: field path: {rel!r} does not exist")
    return rel


def _read_metadata(root: Path) -> list[DocMeta]:
    meta_path = root / "metadata.jsonl"
    docs: list[DocMeta] = []
    seen_ids: dict[str, int] = {}
    seen_paths: dict[str, int] = {}
    for line, obj in read_jsonl(meta_path):
        where = f"{meta_path}:{line}"
        doc_id = obj.get("doc_id")
        if isinstance(doc_id, int) and not isinstance(doc_id, bool):
            doc_id = str(doc_id)
        if not isinstance(doc_id, str) or not doc_id.strip():
            raise HarnessInputError(f"{where}: field doc_id: missing or not a string")
        if doc_id in seen_ids:
            raise HarnessInputError(f"{where}: field doc_id: duplicate {doc_id!r} (first at line {seen_ids[doc_id]})")
        seen_ids[doc_id] = line
        rel = _safe_relpath(root, obj.get("path"), f"{where}: record {doc_id}")
        if rel in seen_paths:
            first = seen_paths[rel]
            raise HarnessInputError(f"{where}: record {doc_id}: field path: {rel!r} already used at line {first}")
        seen_paths[rel] = line
        date = obj.get("date")
        if date is not None:
            try:
                dt.date.fromisoformat(str(date))
            except ValueError:
                raise HarnessInputError(f"{where}: record {doc_id}: field date: {date!r} is not an ISO date") from None
        docs.append(
            DocMeta(
                doc_id=doc_id,
                path=rel,
                title=obj.get("title"),
                date=date,
                institution=obj.get("institution"),
                doc_type=obj.get("doc_type"),
                collection=obj.get("collection"),
                section=obj.get("section", obj.get("edition")),
                words=obj.get("words"),
                extra={k: v for k, v in obj.items() if k not in _KNOWN},
            )
        )
    return docs


def _discover(root: Path) -> list[DocMeta]:
    docs = []
    for p in sorted(root.rglob("*.md")):
        rel = p.relative_to(root).as_posix()
        if rel in ("SOURCE.md", "README.md"):
            continue
        docs.append(DocMeta(doc_id=rel[: -len(".md")], path=rel))
    return docs


def scan_corpus(corpus_dir: str | Path, *, name: str | None = None) -> CorpusSource:
    """Read metadata and hash every document (no chunking).

    Args:
        corpus_dir: the corpus folder.
        name: corpus name; default the folder's name.

    Returns:
        A :class:`CorpusSource` whose ``corpus_hash`` is sha256 over the sorted per-document hashes, each
        ``sha256(canonical_json(metadata) + "\\0" + file bytes)``.

    Raises:
        HarnessInputError: missing folder, malformed or inconsistent ``metadata.jsonl`` (duplicate doc_id, a path
            that escapes the folder or does not exist), no documents.
    """
    root = Path(corpus_dir)
    if not root.is_dir():
        raise HarnessInputError(f"{root}: corpus directory not found")
    docs = _read_metadata(root) if (root / "metadata.jsonl").exists() else _discover(root)
    if not docs:
        raise HarnessInputError(f"{root}: empty corpus (no documents)")
    hashes = []
    for d in docs:
        h = hashlib.sha256()
        meta = {
            "doc_id": d.doc_id,
            "path": d.path,
            "title": d.title,
            "date": d.date,
            "institution": d.institution,
            "doc_type": d.doc_type,
            "collection": d.collection,
            "section": d.section,
            **d.extra,
        }
        h.update(canonical_json(meta).encode("utf-8") + b"\0")
        h.update((root / d.path).read_bytes())
        d.sha256 = h.hexdigest()
        hashes.append(d.sha256)
    corpus_hash = hashlib.sha256("\n".join(sorted(hashes)).encode("ascii")).hexdigest()
    return CorpusSource(root=root, name=name or root.resolve().name, docs=docs, corpus_hash=corpus_hash)


def corpus_db_path(workdir: str | Path, source: CorpusSource, chunker_id: str) -> Path:
    """Where the database of ``source`` chunked by ``chunker_id`` lives under ``workdir``."""
    return Path(workdir) / "corpora" / f"{source.name}-{source.corpus_hash[:12]}-{chunker_id}" / "corpus.db"


def ingest(
    corpus_dir: str | Path,
    workdir: str | Path = DEFAULT_WORKDIR,
    *,
    chunker_id: str = "md-words-v1",
    name: str | None = None,
    progress: bool = False,
) -> tuple[Path, CorpusManifest, bool]:
    """Ingest (or find the existing ingest of) a corpus.

    Args:
        corpus_dir: corpus folder (read-only access suffices).
        workdir: where derived files go.
        chunker_id: a registered chunker id.
        name: corpus name (default: folder name).
        progress: show a rich progress bar.

    Returns:
        ``(db_path, manifest, created)``; ``created`` is False when an identical ingest already existed.

    Raises:
        HarnessInputError: see :func:`scan_corpus`; a document that is not UTF-8.
    """
    t0 = time.perf_counter()
    chunker = get_chunker(chunker_id)
    source = scan_corpus(corpus_dir, name=name)
    db_path = corpus_db_path(workdir, source, chunker.chunker_id)
    if db_path.exists():
        conn = open_db(db_path, readonly=True)
        try:
            existing = read_manifest(conn)
        finally:
            conn.close()
        if existing is not None and existing.corpus_hash == source.corpus_hash:
            return db_path, existing, False
    db_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = db_path.with_name(f".{db_path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    try:
        conn = open_db(tmp, create=True)
        n_chunks = 0
        n_words = 0
        rowid = 0
        with progress_bar("ingest", len(source.docs), enabled=progress) as bar, conn:
            for d in source.docs:
                full = source.root / d.path
                text = decode_source(full.read_bytes(), origin=str(full))
                chunks = chunker.chunk(d.doc_id, text)
                rows = []
                for c in chunks:
                    rowid += 1
                    rows.append(
                        (
                            rowid,
                            c.chunk_id,
                            d.doc_id,
                            c.index,
                            json.dumps(list(c.heading_path), ensure_ascii=False),
                            c.char_start,
                            c.char_end,
                            c.n_words,
                            c.text,
                            hashlib.sha256(c.text.encode("utf-8")).hexdigest(),
                        )
                    )
                conn.executemany("INSERT INTO chunks VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
                words = sum(c.n_words for c in chunks)
                conn.execute(
                    "INSERT INTO documents VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        d.doc_id,
                        d.path,
                        d.title,
                        d.date,
                        d.institution,
                        d.doc_type,
                        d.collection,
                        d.section,
                        words,
                        len(chunks),
                        d.sha256,
                        json.dumps(d.extra, ensure_ascii=False),
                    ),
                )
                n_chunks += len(chunks)
                n_words += words
                if bar is not None:
                    bar(1)
            date_min, date_max = source.date_range
            manifest = CorpusManifest(
                name=source.name,
                corpus_hash=source.corpus_hash,
                corpus_id=source.corpus_id,
                n_documents=len(source.docs),
                n_chunks=n_chunks,
                n_words=n_words,
                date_min=date_min,
                date_max=date_max,
                chunker_id=chunker.chunker_id,
                chunker_params=dict(chunker.params),
                source_dir=str(source.root.resolve()),
                ingest_seconds=round(time.perf_counter() - t0, 3),
            )
            write_manifest(conn, manifest)
        conn.close()
        os.replace(tmp, db_path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    return db_path, manifest, True
