"""A read-only view of a corpus for validation: its metadata and the chunks of the documents a gold set cites.

Two sources, the same view:

* a corpus **folder** (:func:`open_corpus`, ``harness validate --corpus``): metadata from :func:`scan_corpus`, and
  only the documents the gold set cites are decoded and chunked (with the chunker the gold-set manifest names), so
  validating against the 507-document real corpus costs one metadata scan and hash (about a second) plus the cited
  documents; what is checked is what the chunker makes of the Markdown now;
* an ingested **database** (:meth:`CorpusView.from_database`, ``harness run`` before scoring): the documents and
  chunks the systems will retrieve, read from ``corpus.db`` (nothing is re-chunked): what is checked is exactly
  what is scored.
"""

from __future__ import annotations

import bisect
import functools
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness.corpus.chunker import Chunk, Chunker, decode_source, get_chunker
from harness.corpus.source import CorpusSource, DocMeta, scan_corpus
from harness.errors import HarnessInputError

if TYPE_CHECKING:  # a database is only read through the object given (validation loads no SQLite code)
    from harness.corpus.store import Corpus

__all__ = ["CorpusView", "DocChunks", "LazyNormalized", "common_heading_path", "open_corpus"]


class LazyNormalized(Sequence[str]):
    """The normalised text of each chunk, computed on first access of each item (a valid quote is checked against
    its cited chunk only, so most chunks of a long law are never normalised; normalising all 2,000 chunks of the
    Constitution costs about a second)."""

    def __init__(self, chunks: Sequence[Chunk], normalize: Callable[[str], str]) -> None:
        self._chunks = chunks
        self._normalize = normalize
        self._done: list[str | None] = [None] * len(chunks)

    def __len__(self) -> int:
        return len(self._chunks)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        t = self._done[i]
        if t is None:
            t = self._done[i] = self._normalize(self._chunks[i].text)
        return t


class DocChunks:
    """One document chunked.

    Attributes:
        meta: its metadata.
        chunks: chunks in document order.
        by_id: ``{chunk_id: chunk}``.
        norm: normalised text of each chunk (chunker's normaliser), by chunk index (computed on access).
        joined: ``" ".join(norm)``; a quote that occurs here but in no single chunk spans chunks (computed on
            first access).
        starts: offset of each chunk's text in ``joined``.
    """

    def __init__(self, meta: DocMeta, chunks: list[Chunk], normalize: Callable[[str], str]) -> None:
        self.meta = meta
        self.chunks = chunks
        self.by_id: dict[str, Chunk] = {c.chunk_id: c for c in chunks}
        self.norm = LazyNormalized(chunks, normalize)

    @functools.cached_property
    def joined(self) -> str:
        """See the class docstring."""
        return " ".join(self.norm)

    @functools.cached_property
    def starts(self) -> list[int]:
        """See the class docstring."""
        out, pos = [], 0
        for t in self.norm:
            out.append(pos)
            pos += len(t) + 1
        return out

    def chunks_of_span(self, start: int, end: int) -> list[Chunk]:
        """Chunks overlapped by the half-open span ``[start, end)`` of :attr:`joined`."""
        first = bisect.bisect_right(self.starts, start) - 1
        last = bisect.bisect_right(self.starts, max(start, end - 1)) - 1
        return self.chunks[max(first, 0) : last + 1]


def common_heading_path(chunks: Sequence[Chunk], normalize: Callable[[str], str]) -> list[str]:
    """The longest common prefix of the chunks' heading paths, entries compared after ``normalize``.

    This is the heading path a gold document citing these chunks carries (rule V004; ``goldset resolve`` writes
    it). Returns the entries as the first chunk spells them; ``[]`` for no chunks or no common entry.
    """
    if not chunks:
        return []
    common = list(chunks[0].heading_path)
    for c in chunks[1:]:
        k = 0
        while k < min(len(common), len(c.heading_path)) and normalize(common[k]) == normalize(c.heading_path[k]):
            k += 1
        common = common[:k]
    return common


class CorpusView:
    """Corpus metadata plus lazily chunked documents.

    Args:
        source: the scanned corpus (for a database: its identity and document metadata, :meth:`from_database`).
        chunker: the chunker named by the gold set's manifest.
        load_chunks: ``(doc_id) -> chunks`` of one document; default: decode the document's file under
            ``source.root`` and chunk it with ``chunker``.
    """

    def __init__(
        self, source: CorpusSource, chunker: Chunker, load_chunks: Callable[[str], list[Chunk]] | None = None
    ) -> None:
        self.source = source
        self.chunker = chunker
        self.docs: dict[str, DocMeta] = {d.doc_id: d for d in source.docs}
        self._load_chunks = load_chunks or self._chunk_file
        self._cache: dict[str, DocChunks] = {}

    @classmethod
    def from_database(cls, corpus: Corpus) -> CorpusView:
        """The view of an ingested corpus database: identity from its manifest, documents from ``documents``,
        each cited document's chunks read from ``chunks`` (in chunk order) instead of re-chunking the Markdown.

        Raises:
            HarnessInputError: the database's chunker is unknown here.
        """
        m = corpus.manifest
        docs = [
            DocMeta(
                doc_id=r.doc_id,
                path=r.path,
                title=r.title,
                date=r.date,
                institution=r.institution,
                doc_type=r.doc_type,
                collection=r.collection,
                section=r.section,
                words=r.words,
                extra=r.meta,
                sha256=r.sha256,
            )
            for r in corpus.documents().values()
        ]
        source = CorpusSource(root=Path(m.source_dir), name=m.name, docs=docs, corpus_hash=m.corpus_hash)

        def load(doc_id: str) -> list[Chunk]:
            rows = corpus.conn.execute(
                "SELECT chunk_id, chunk_index, heading_path, char_start, char_end, n_words, text FROM chunks "
                "WHERE doc_id = ? ORDER BY chunk_index",
                (doc_id,),
            ).fetchall()
            return [Chunk(r[0], doc_id, r[1], tuple(json.loads(r[2])), r[3], r[4], r[5], r[6]) for r in rows]

        return cls(source, get_chunker(m.chunker_id), load)

    def _chunk_file(self, doc_id: str) -> list[Chunk]:
        full = self.source.root / self.docs[doc_id].path
        try:
            data = full.read_bytes()
        except OSError as exc:
            raise HarnessInputError(f"{full}: cannot read corpus document {doc_id} ({exc.strerror})") from None
        return self.chunker.chunk(doc_id, decode_source(data, origin=str(full)))

    def doc(self, doc_id: str) -> DocChunks | None:
        """The chunked document ``doc_id``, or ``None`` when the corpus has no such document.

        Raises:
            HarnessInputError: the document's file is unreadable or not UTF-8.
        """
        if doc_id in self._cache:
            return self._cache[doc_id]
        meta = self.docs.get(doc_id)
        if meta is None:
            return None
        dc = DocChunks(meta, self._load_chunks(doc_id), self.chunker.normalize)
        self._cache[doc_id] = dc
        return dc

    @property
    def chunked_documents(self) -> int:
        """How many documents have been chunked (or read from the database) so far."""
        return len(self._cache)

    def locate_chunk(self, chunk_id: str) -> Chunk | None:
        """Find a chunk by id anywhere in the corpus, for ids of the form ``<doc_id>#<index>``; else ``None``."""
        doc_id, sep, idx = chunk_id.rpartition("#")
        if not sep or not idx.isdigit() or doc_id not in self.docs:
            return None
        dc = self.doc(doc_id)
        return dc.by_id.get(chunk_id) if dc is not None else None


def open_corpus(corpus_dir: str | Path, chunker_id: str, *, where: str = "manifest") -> CorpusView:
    """Scan ``corpus_dir`` and look up ``chunker_id``.

    Args:
        corpus_dir: the corpus folder.
        chunker_id: the manifest's ``chunker_version``.
        where: the manifest path, for messages.

    Raises:
        HarnessInputError: the folder is missing or unreadable, its metadata is malformed, or the chunker is
            unknown (exit code 2).
    """
    root = Path(corpus_dir)
    if not root.is_dir():
        raise HarnessInputError(f"{root}: field corpus_dir: corpus directory not found")
    try:
        chunker = get_chunker(chunker_id)
    except HarnessInputError as exc:
        raise HarnessInputError(f"{where}: field chunker_version: {exc}") from None
    try:
        source = scan_corpus(root)
    except OSError as exc:
        raise HarnessInputError(f"{exc.filename or root}: field corpus_dir: cannot read ({exc.strerror})") from None
    return CorpusView(source, chunker)
