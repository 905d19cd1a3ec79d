"""A read-only view of a corpus folder for validation: metadata from :func:`scan_corpus`, chunks re-made on demand.

Only the documents a gold set cites are decoded and chunked (with the chunker the gold-set manifest names), so
validating against the 507-document real corpus costs one metadata scan and hash (about a second) plus the cited
documents. No stored database is read: what is checked is what the chunker makes of the Markdown now.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.corpus.chunker import Chunk, Chunker, decode_source, get_chunker
from harness.corpus.ingest import CorpusSource, DocMeta, scan_corpus
from harness.errors import HarnessInputError

__all__ = ["CorpusView", "DocChunks", "common_heading_path", "open_corpus"]


@dataclass
class DocChunks:
    """One document re-chunked.

    Attributes:
        meta: its metadata.
        chunks: chunks in document order.
        by_id: ``{chunk_id: chunk}``.
        norm: normalised text of each chunk (chunker's normaliser), by chunk index.
        joined: ``" ".join(norm)``; a quote that occurs here but in no single chunk spans chunks.
        starts: offset of each chunk's text in ``joined``.
    """

    meta: DocMeta
    chunks: list[Chunk]
    by_id: dict[str, Chunk]
    norm: list[str]
    joined: str
    starts: list[int] = field(default_factory=list)

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
    """Corpus metadata plus lazily re-chunked documents.

    Args:
        source: the scanned corpus.
        chunker: the chunker named by the gold set's manifest.
    """

    def __init__(self, source: CorpusSource, chunker: Chunker) -> None:
        self.source = source
        self.chunker = chunker
        self.docs: dict[str, DocMeta] = {d.doc_id: d for d in source.docs}
        self._cache: dict[str, DocChunks] = {}

    def doc(self, doc_id: str) -> DocChunks | None:
        """The re-chunked document ``doc_id``, or ``None`` when the corpus has no such document.

        Raises:
            HarnessInputError: the document's file is unreadable or not UTF-8.
        """
        if doc_id in self._cache:
            return self._cache[doc_id]
        meta = self.docs.get(doc_id)
        if meta is None:
            return None
        full = self.source.root / meta.path
        try:
            data = full.read_bytes()
        except OSError as exc:
            raise HarnessInputError(f"{full}: cannot read corpus document {doc_id} ({exc.strerror})") from None
        chunks = self.chunker.chunk(doc_id, decode_source(data, origin=str(full)))
        norm = [self.chunker.normalize(c.text) for c in chunks]
        starts, pos = [], 0
        for t in norm:
            starts.append(pos)
            pos += len(t) + 1
        dc = DocChunks(
            meta=meta,
            chunks=chunks,
            by_id={c.chunk_id: c for c in chunks},
            norm=norm,
            joined=" ".join(norm),
            starts=starts,
        )
        self._cache[doc_id] = dc
        return dc

    @property
    def chunked_documents(self) -> int:
        """How many documents have been re-chunked so far."""
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
