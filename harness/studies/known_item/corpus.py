"""Rules 1-3 of the known-item study (:mod:`harness.studies.known_item`): the corpus chunked in memory and the
known-item queries (the first ``query_words`` words of each chunk of a multi-chunk document)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from harness.corpus.chunker import Chunker, MdWordsChunker, get_chunker
from harness.corpus.source import iter_document_chunks, scan_corpus
from harness.errors import HarnessInputError

__all__ = ["ChunkedCorpus", "chunk_corpus"]

_WORD_RE = re.compile(r"\S+")


@dataclass
class ChunkedCorpus:
    """A corpus chunked in memory, with its known-item queries.

    Attributes:
        corpus_id, corpus_hash: from :func:`~harness.corpus.source.scan_corpus`.
        chunker_id, chunker_params: the chunker used.
        doc_ids, doc_types, collections: per document (ingest order); missing metadata is ``"unknown"``.
        doc_n_chunks: shape (D,), chunks per document.
        chunk_ids: ``f"{doc_id}#{index}"`` per chunk, documents in order, chunks in order (length N).
        chunk_doc: shape (N,), int document index of each chunk.
        chunk_index: shape (N,), position of the chunk in its document.
        chunk_words: shape (N,), words per chunk.
        texts: chunk texts.
        query_words: words per query.
        query_chunks: shape (Q,), chunk positions used as queries (ascending).
        query_texts: the Q query strings.
        skipped_short: chunks of multi-chunk documents with fewer than ``query_words`` words.
        excluded_single_chunk_docs, excluded_single_chunk_chunks: documents with one chunk, and their chunks.
        doc_languages: per document, the ``language`` its metadata declares (``None`` where none): the study's
            analyzer (:func:`harness.retrieve.analyzer.choose_analyzer`).
    """

    corpus_id: str
    corpus_hash: str
    chunker_id: str
    chunker_params: dict
    doc_ids: list[str]
    doc_types: list[str]
    collections: list[str]
    doc_n_chunks: np.ndarray
    chunk_ids: list[str]
    chunk_doc: np.ndarray
    chunk_index: np.ndarray
    chunk_words: np.ndarray
    texts: list[str]
    query_words: int
    query_chunks: np.ndarray
    query_texts: list[str]
    skipped_short: int
    excluded_single_chunk_docs: int
    excluded_single_chunk_chunks: int
    doc_languages: list = field(default_factory=list)

    @property
    def n_chunks(self) -> int:
        """N, the number of indexed chunks."""
        return len(self.chunk_ids)


def _chunker_for(chunk_words: int, min_tail_words: int) -> MdWordsChunker:
    if chunk_words < 1 or min_tail_words < 1:
        raise HarnessInputError(f"chunk_words={chunk_words}, min_tail_words={min_tail_words}: must be >= 1")
    if chunk_words == 100 and min_tail_words == 20:
        return MdWordsChunker()
    cid = f"md-words-v1:max_words={chunk_words}"
    if min_tail_words != 20:
        cid += f",min_tail_words={min_tail_words}"
    return MdWordsChunker(chunker_id=cid, params={"max_words": chunk_words, "min_tail_words": min_tail_words})


def _registered(chunker_id: str) -> Chunker:
    try:
        return get_chunker(chunker_id)
    except HarnessInputError as exc:
        raise HarnessInputError(f"--chunker: {exc}") from None


def _query_text(text: str, query_words: int) -> str:
    """``text`` up to the end of its ``query_words``-th ``\\S+`` word (all of it when it has fewer)."""
    m = None
    for k, m in enumerate(_WORD_RE.finditer(text), start=1):  # noqa: B007
        if k == query_words:
            break
    return text[: m.end()] if m is not None else ""


def chunk_corpus(
    corpus_dir: str | Path,
    *,
    chunk_words: int = 100,
    query_words: int = 20,
    min_tail_words: int = 20,
    chunker: str | None = None,
) -> ChunkedCorpus:
    """Chunk a corpus folder in memory and select its known-item queries (rules 1-3 of the package docstring).

    Documents are read and chunked by :func:`harness.corpus.source.iter_document_chunks`, the loop the ingest
    uses, so at 100-word chunks these are exactly the chunks ``harness ingest`` stores.

    Args:
        corpus_dir: corpus folder (Markdown files, optional ``metadata.jsonl``).
        chunk_words: ``max_words`` of the ``md-words-v1`` windows (>= 1).
        query_words: words per query (>= 1).
        min_tail_words: ``min_tail_words`` of the chunker (20 in ``md-words-v1``).
        chunker: a registered chunker id (``md-legal-v1``) used instead of the ``md-words-v1`` windows
            (``chunk_words`` and ``min_tail_words`` are then not used); ``None``: the windows.

    Returns:
        A :class:`ChunkedCorpus`.

    Raises:
        HarnessInputError: unreadable corpus (see :func:`~harness.corpus.source.scan_corpus`), bad sizes, an unknown
            chunker, or no query left.
    """
    if query_words < 1:
        raise HarnessInputError(f"query_words={query_words}: must be >= 1")
    chunker_obj: Chunker = _chunker_for(chunk_words, min_tail_words) if chunker is None else _registered(chunker)
    source = scan_corpus(corpus_dir)
    doc_ids, doc_types, collections, n_per_doc = [], [], [], []
    chunk_ids: list[str] = []
    chunk_doc: list[int] = []
    chunk_index: list[int] = []
    chunk_words_l: list[int] = []
    texts: list[str] = []
    for di, (d, chunks) in enumerate(iter_document_chunks(source, chunker_obj)):
        doc_ids.append(d.doc_id)
        doc_types.append(d.doc_type or "unknown")
        collections.append(d.collection or "unknown")
        n_per_doc.append(len(chunks))
        for c in chunks:
            chunk_ids.append(c.chunk_id)
            chunk_doc.append(di)
            chunk_index.append(c.index)
            chunk_words_l.append(c.n_words)
            texts.append(c.text)
    doc_n = np.asarray(n_per_doc, dtype=np.int64)
    cdoc = np.asarray(chunk_doc, dtype=np.int64)
    cwords = np.asarray(chunk_words_l, dtype=np.int64)
    multi = doc_n[cdoc] >= 2 if cdoc.size else np.zeros(0, bool)
    long_enough = cwords >= query_words
    query_chunks = np.flatnonzero(multi & long_enough)
    if query_chunks.size == 0:
        raise HarnessInputError(
            f"{corpus_dir}: no known-item query (no multi-chunk document has a chunk of >= {query_words} words)"
        )
    return ChunkedCorpus(
        corpus_id=source.corpus_id,
        corpus_hash=source.corpus_hash,
        chunker_id=chunker_obj.chunker_id,
        chunker_params=dict(chunker_obj.params),
        doc_ids=doc_ids,
        doc_types=doc_types,
        collections=collections,
        doc_n_chunks=doc_n,
        chunk_ids=chunk_ids,
        chunk_doc=cdoc,
        chunk_index=np.asarray(chunk_index, dtype=np.int64),
        chunk_words=cwords,
        texts=texts,
        query_words=query_words,
        query_chunks=query_chunks,
        query_texts=[_query_text(texts[i], query_words) for i in query_chunks],
        skipped_short=int(np.count_nonzero(multi & ~long_enough)),
        excluded_single_chunk_docs=int(np.count_nonzero(doc_n == 1)),
        excluded_single_chunk_chunks=int(np.count_nonzero(~multi)),
        doc_languages=[d.extra.get("language") for d in source.docs],
    )
