"""Look a chunk up by id in a corpus folder (``harness show CHUNK_ID --corpus DIR``): its text, heading path and
place in its document, optionally with its neighbours.

A chunk id is ``<document id>#<index>`` (:mod:`harness.corpus.chunker`, rule 6). Only the chunk's document is read
and chunked (with the chunker named, ``md-words-v1`` by default); the corpus is scanned for its metadata.
Text shown on a terminal goes through :func:`visible`: every control or format character except newline and tab
(ESC, BEL, carriage return, bidi overrides...) is written as ``\\xNN`` / ``\\uNNNN``, so a document cannot move the
cursor, recolour the terminal or reorder what is shown.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import Path

from harness.corpus.chunker import Chunk, decode_source, get_chunker
from harness.corpus.source import scan_corpus
from harness.errors import HarnessInputError

__all__ = ["ChunkLookup", "lookup_chunk", "parse_chunk_id", "visible"]


def visible(text: str) -> str:
    """``text`` with every control (Cc) or format (Cf) character other than ``\\n`` and ``\\t`` escaped as
    ``\\xNN`` (code points < 256) or ``\\uNNNN``; other characters unchanged."""
    out = []
    for ch in text:
        if ch in "\n\t" or unicodedata.category(ch) not in ("Cc", "Cf"):
            out.append(ch)
        else:
            cp = ord(ch)
            out.append(f"\\x{cp:02x}" if cp < 256 else f"\\u{cp:04x}")
    return "".join(out)


def parse_chunk_id(chunk_id: str) -> tuple[str, int]:
    """``"ley-073-lgn#35"`` -> ``("ley-073-lgn", 35)``.

    Raises:
        HarnessInputError: no ``#``, an empty document id, or an index that is not a non-negative integer.
    """
    doc, sep, idx = chunk_id.rpartition("#")
    if not sep or not doc or not idx.isdigit() or not idx.isascii():
        raise HarnessInputError(f"CHUNK_ID {visible(chunk_id)!r}: expected <document id>#<index>, e.g. ley-073-lgn#35")
    return doc, int(idx)


@dataclass
class ChunkLookup:
    """A chunk and its neighbours.

    Attributes:
        chunk_id, doc_id, index: the chunk asked for; chunker: the chunker id.
        path: the document's file, relative to the corpus; title, date: from ``metadata.jsonl`` (``None`` if absent).
        n_chunks: chunks in the document; chunks: the chunk asked for and its ``around`` neighbours on each side,
            in document order.
    """

    chunk_id: str
    doc_id: str
    index: int
    chunker: str
    path: str
    title: str | None
    date: str | None
    n_chunks: int
    chunks: list[Chunk]

    def to_dict(self) -> dict:
        """A JSON-ready dict (text as in the corpus; escape it before showing it on a terminal)."""
        return {
            "chunk_id": self.chunk_id,
            "doc_id": self.doc_id,
            "index": self.index,
            "chunker": self.chunker,
            "path": self.path,
            "title": self.title,
            "date": self.date,
            "n_chunks": self.n_chunks,
            "chunks": [
                {
                    "chunk_id": c.chunk_id,
                    "index": c.index,
                    "heading_path": list(c.heading_path),
                    "char_start": c.char_start,
                    "char_end": c.char_end,
                    "n_words": c.n_words,
                    "text": c.text,
                }
                for c in self.chunks
            ],
        }


def lookup_chunk(
    corpus_dir: str | Path, chunk_id: str, *, chunker: str = "md-words-v1", around: int = 0
) -> ChunkLookup:
    """Read and chunk the chunk's document; return the chunk and ``around`` neighbours on each side.

    Args:
        corpus_dir: a corpus folder (Markdown files plus ``metadata.jsonl``).
        chunk_id: ``<document id>#<index>``.
        chunker: a registered chunker id.
        around: neighbours to include on each side (>= 0).

    Raises:
        HarnessInputError: a malformed chunk id, an unknown chunker or document, an index past the document's
            last chunk, an unreadable corpus or document, ``around`` < 0.
    """
    if around < 0:
        raise HarnessInputError(f"--around {around}: must be >= 0")
    doc_id, index = parse_chunk_id(chunk_id)
    chunker_obj = get_chunker(chunker)
    root = Path(corpus_dir)
    if not root.is_dir():
        raise HarnessInputError(f"--corpus {root}: corpus directory not found")
    try:
        source = scan_corpus(root)
    except OSError as exc:
        raise HarnessInputError(f"{exc.filename or root}: --corpus: cannot read ({exc.strerror})") from None
    meta = next((d for d in source.docs if d.doc_id == doc_id), None)
    if meta is None:
        from harness.suggest import nearest_id

        near = nearest_id(doc_id, [d.doc_id for d in source.docs])
        hint = "" if near is None else f"; did you mean {visible(f'{near}#{index}')!r}?"
        raise HarnessInputError(
            f"CHUNK_ID {visible(chunk_id)!r}: document {visible(doc_id)!r} is not in the corpus {root} "
            f"({len(source.docs)} documents){hint}"
        )
    full = root / meta.path
    try:
        data = full.read_bytes()
    except OSError as exc:
        raise HarnessInputError(f"{full}: cannot read corpus document {doc_id} ({exc.strerror})") from None
    chunks = chunker_obj.chunk(doc_id, decode_source(data, origin=str(full)))
    n = len(chunks)
    if index >= n:
        last = f"0-{n - 1}" if n else "none: the document has no words"
        raise HarnessInputError(
            f"CHUNK_ID {visible(chunk_id)!r}: {doc_id} has {n} chunk(s) under {chunker} (indexes {last})"
        )
    lo, hi = max(0, index - around), min(n, index + around + 1)
    return ChunkLookup(
        chunk_id=f"{doc_id}#{index}",
        doc_id=doc_id,
        index=index,
        chunker=chunker_obj.chunker_id,
        path=str(meta.path),
        title=meta.title,
        date=meta.date,
        n_chunks=n,
        chunks=chunks[lo:hi],
    )
