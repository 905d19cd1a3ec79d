"""A corpus folder as a source of documents: metadata, hashes, and each document decoded and chunked.

``metadata.jsonl`` (one JSON object per document): required ``doc_id`` and ``path`` (relative to the corpus
folder, inside it); optional ``title``, ``date`` (ISO), ``institution``, ``doc_type``, ``section`` or ``edition``,
``collection``, ``language`` (an ISO 639-1 code such as ``en``: the analyzer of BM25 and TF-IDF,
:mod:`harness.retrieve.analyzer`); other keys (``language`` included) are kept in ``extra`` and, like every field,
enter the corpus hash. Without ``metadata.jsonl`` every ``**/*.md`` file is a document
whose id is its path without the ``.md`` suffix (``SOURCE.md`` and ``README.md`` at the top are not documents).
Every metadata string (ids included) is read in NFC (:mod:`harness.nfc`), except ``path``, which names a file as the
file system holds it; two documents whose ids differ only in their Unicode form are one id twice (refused). A
document id, from either source, follows :mod:`harness.ids` (no whitespace, control character or ``#``, the
separator of chunk ids): one that does not is refused naming the file, line and field.

Symbolic links: a document reached through a link (a linked file, or a file inside a linked folder) must resolve
inside the corpus folder; one that leads outside is refused, naming the link and its target, whether the documents
come from ``metadata.jsonl`` or from the folder walk. Linked folders are not descended into by the walk (their
files, when inside the corpus, are found under their real path).

Both the ingest (:func:`harness.corpus.ingest.ingest`) and the in-memory known-item chunking
(:func:`harness.studies.known_item.chunk_corpus`) read documents through :func:`iter_document_chunks`, so they
decode and chunk a document the same way.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from harness.corpus.chunker import Chunk, Chunker, decode_source
from harness.errors import HarnessInputError
from harness.io import canonical_json, read_jsonl
from harness.nfc import nfc

__all__ = ["CorpusSource", "DocMeta", "iter_document_chunks", "read_document", "scan_corpus"]


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

    def manifest_fields(self) -> dict[str, str | int | None]:
        """The corpus fields of a gold set's manifest: ``corpus_version``, ``corpus_hash``, ``corpus_documents``,
        ``corpus_date_min``, ``corpus_date_max`` (ISO dates or None)."""
        lo, hi = self.date_range
        return {
            "corpus_version": self.corpus_id,
            "corpus_hash": self.corpus_hash,
            "corpus_documents": len(self.docs),
            "corpus_date_min": lo,
            "corpus_date_max": hi,
        }


_KNOWN = {"doc_id", "path", "title", "date", "institution", "doc_type", "collection", "section", "edition", "words"}


def _refuse_outside_link(link: Path, real_root: Path) -> None:
    """Raise when the symbolic link ``link`` resolves outside ``real_root`` (or to nothing)."""
    target = Path(os.path.realpath(link))
    if not target.is_relative_to(real_root):
        raise HarnessInputError(
            f"{link}: symbolic link to {target} leads outside the corpus directory {real_root}; refusing to read it"
        )


def _links_on_the_way(root: Path, rel: str) -> Iterator[Path]:
    """The symbolic links among ``root / rel`` and its parents below ``root`` (outermost first)."""
    p = root
    for part in PurePosixPath(rel).parts:
        p = p / part
        if p.is_symlink():
            yield p


class _Containment:
    """Whether a relative path, symbolic links resolved, names a regular file inside ``root``.

    Same answer as ``(root / rel).resolve().is_relative_to(root.resolve())`` and ``is_file()``, at one ``lstat`` per
    document: the real path of each folder is computed once (memoised; a corpus of 657,867 documents in about 7,000
    date folders otherwise paid two ``realpath`` walks per document, most of a warm ingest's time at DOF scale), and
    the file itself is resolved only when it is a symbolic link.
    """

    def __init__(self, root: Path):
        self.root = root
        self.real_root = os.path.realpath(root)
        self._dirs: dict[str, str] = {}

    def _real_dir(self, folder: str) -> str:
        real = self._dirs.get(folder)
        if real is None:
            real = self._dirs[folder] = os.path.realpath(os.path.join(self.root, folder))
        return real

    def check(self, rel: str) -> tuple[bool, bool]:
        """``(inside, is_file)`` of ``root / rel`` (``rel`` has no ``..`` and is not absolute)."""
        folder, _sep, name = rel.rpartition("/")
        real = os.path.join(self._real_dir(folder), name)
        try:
            st = os.lstat(real)
        except OSError:
            return _inside(real, self.real_root), False
        if stat.S_ISLNK(st.st_mode):
            real = os.path.realpath(real)
            return _inside(real, self.real_root), os.path.isfile(real)
        return _inside(real, self.real_root), stat.S_ISREG(st.st_mode)


def _inside(path: str, real_root: str) -> bool:
    return path == real_root or path.startswith(real_root.rstrip("/") + "/")


def _safe_relpath(root: Path, rel: object, where: str, containment: _Containment | None = None) -> str:
    if not isinstance(rel, str) or not rel:
        raise HarnessInputError(f"{where}: field path: must be a non-empty string")
    p = PurePosixPath(rel)
    if p.is_absolute() or ".." in p.parts or "\\" in rel:
        raise HarnessInputError(f"{where}: field path: {rel!r} escapes the corpus directory")
    inside, is_file = (containment or _Containment(root)).check(p.as_posix())
    if not inside:
        links = list(_links_on_the_way(root, rel))
        via = f" (through the symbolic link {links[0]} to {os.path.realpath(links[0])})" if links else ""
        raise HarnessInputError(f"{where}: field path: {rel!r} escapes the corpus directory{via}")
    if not is_file:
        raise HarnessInputError(f"{where}: field path: {rel!r} does not exist")
    return rel


def _read_metadata(root: Path) -> list[DocMeta]:
    meta_path = root / "metadata.jsonl"
    docs: list[DocMeta] = []
    seen_ids: dict[str, int] = {}
    seen_paths: dict[str, int] = {}
    containment = _Containment(root)
    for line, raw in read_jsonl(meta_path):
        where = f"{meta_path}:{line}"
        obj = nfc(raw, keep={"path"})
        doc_id = obj.get("doc_id")
        if isinstance(doc_id, int) and not isinstance(doc_id, bool):
            doc_id = str(doc_id)
        if not isinstance(doc_id, str) or not doc_id.strip():
            raise HarnessInputError(f"{where}: field doc_id: missing or not a string")
        from harness.ids import check_item_id  # lazily: `import harness.validate` stays within its module budget

        check_item_id(doc_id, f"{where}: field doc_id", what="document id", document=True)  # '#', whitespace
        if doc_id in seen_ids:
            raise HarnessInputError(f"{where}: field doc_id: duplicate {doc_id!r} (first at line {seen_ids[doc_id]})")
        seen_ids[doc_id] = line
        rel = _safe_relpath(root, obj.get("path"), f"{where}: record {doc_id}", containment)
        if rel in seen_paths:
            first = seen_paths[rel]
            raise HarnessInputError(f"{where}: record {doc_id}: field path: {rel!r} already used at line {first}")
        seen_paths[rel] = line
        language = obj.get("language")
        if language is not None and not (isinstance(language, str) and re.fullmatch(r"[a-z]{2}", language)):
            raise HarnessInputError(
                f"{where}: record {doc_id}: field language: {language!r} is not an ISO 639-1 code (two lowercase "
                "letters, e.g. en)"
            )
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
    """Every ``*.md`` file under ``root`` (linked folders not descended into), in ``sorted(Path)`` order.

    Raises:
        HarnessInputError: a linked ``.md`` file or a linked folder resolves outside ``root``.
    """
    real_root = Path(os.path.realpath(root))
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):  # followlinks=False: linked folders are listed, not walked
        base = Path(dirpath)
        for d in dirnames:
            if (base / d).is_symlink():
                _refuse_outside_link(base / d, real_root)
        for f in filenames:
            if f.endswith(".md"):
                p = base / f
                if p.is_symlink():
                    _refuse_outside_link(p, real_root)
                found.append(p)
    docs = []
    seen: dict[str, str] = {}
    for p in sorted(found):
        rel = p.relative_to(root).as_posix()
        if rel in ("SOURCE.md", "README.md"):
            continue
        doc_id = nfc(rel[: -len(".md")])
        from harness.ids import check_item_id

        check_item_id(doc_id, f"{root / rel}: field doc_id (the file name)", what="document id", document=True)
        if doc_id in seen:
            raise HarnessInputError(
                f"{root / rel}: document id {doc_id!r} (in NFC) is also the id of {root / seen[doc_id]}: two file "
                "names that differ only in their Unicode form"
            )
        seen[doc_id] = rel
        docs.append(DocMeta(doc_id=doc_id, path=rel))
    return docs


def scan_corpus(corpus_dir: str | Path, *, name: str | None = None, stat_cache: Path | None = None) -> CorpusSource:
    """Read metadata and hash every document (no chunking).

    Args:
        corpus_dir: the corpus folder.
        name: corpus name; default the folder's name.
        stat_cache: a scan record (:mod:`harness.corpus.scan_cache`): reused, reading no document, when
            ``metadata.jsonl`` and every document have their recorded stat keys; (re)written after a full scan.

    Returns:
        A :class:`CorpusSource` whose ``corpus_hash`` is sha256 over the sorted per-document hashes, each
        ``sha256(canonical_json(metadata) + "\\0" + file bytes)``.

    Raises:
        HarnessInputError: missing folder, malformed or inconsistent ``metadata.jsonl`` (duplicate doc_id, a path
            that escapes the folder or does not exist), a symbolic link leading outside the folder, an unreadable
            document, no documents.
    """
    root = Path(corpus_dir)
    if not root.is_dir():
        raise HarnessInputError(f"{root}: corpus directory not found")
    has_meta = (root / "metadata.jsonl").exists()
    stat_cache = stat_cache if has_meta else None
    if stat_cache is not None:
        from harness.corpus import scan_cache  # only when asked: `import harness.validate` stays light

        hit = scan_cache.lookup(stat_cache, root)
        try:
            cached = None if hit is None else [DocMeta(**rec) for rec in hit[0]]
        except TypeError:  # a record of other fields: scan in full
            cached = None
        from harness.ids import id_problem

        if cached is not None and any(id_problem(d.doc_id, document=True) for d in cached):
            cached = None  # recorded before ids were checked: the full scan names the record
        if cached is not None and hit is not None:
            return CorpusSource(root=root, name=name or root.resolve().name, docs=cached, corpus_hash=hit[1])
        meta_key = scan_cache.stat_key(root / "metadata.jsonl")  # before reading it: a later edit is noticed
    docs = _read_metadata(root) if has_meta else _discover(root)
    if not docs:
        raise HarnessInputError(f"{root}: empty corpus (no documents)")
    hashes = []
    keys: list = []
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
        if stat_cache is not None:
            keys.append(scan_cache.stat_key(root / d.path))  # before the read: a later write is noticed
        h.update(_read_bytes(root / d.path, d.doc_id))
        d.sha256 = h.hexdigest()
        hashes.append(d.sha256)
    corpus_hash = hashlib.sha256("\n".join(sorted(hashes)).encode("ascii")).hexdigest()
    if stat_cache is not None:
        scan_cache.store(stat_cache, root, meta_key, [dataclasses.asdict(d) for d in docs], keys, corpus_hash)
    return CorpusSource(root=root, name=name or root.resolve().name, docs=docs, corpus_hash=corpus_hash)


def _read_bytes(full: Path, doc_id: str) -> bytes:
    try:
        return full.read_bytes()
    except OSError as exc:
        raise HarnessInputError(f"{full}: cannot read corpus document {doc_id} ({exc.strerror or exc})") from None


def read_document(source: CorpusSource, doc: DocMeta) -> str:
    """The decoded text of one document of ``source`` (rule 1 of ``md-words-v1``:
    :func:`~harness.corpus.chunker.decode_source`).

    Raises:
        HarnessInputError: the file is unreadable or not UTF-8 (naming the file).
    """
    full = source.root / doc.path
    return decode_source(_read_bytes(full, doc.doc_id), origin=str(full))


def iter_document_chunks(source: CorpusSource, chunker: Chunker) -> Iterator[tuple[DocMeta, list[Chunk]]]:
    """Each document of ``source`` in order, with its chunks (``chunker.chunk(doc_id, text)``, chunk order).

    One document is decoded at a time, so memory holds one document's text and chunks (plus whatever the caller
    keeps).

    Raises:
        HarnessInputError: see :func:`read_document`.
    """
    for d in source.docs:
        yield d, chunker.chunk(d.doc_id, read_document(source, d))
