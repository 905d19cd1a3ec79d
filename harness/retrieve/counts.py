"""Term counts of a corpus's chunks and documents, analysed once, as integer row arrays (the input of the
``bm25`` and ``tfidf`` systems' index builds).

Rows are ``(item, term, count)`` triples with ``item`` the chunk (or document) position, ``term`` an id of the
returned vocabulary and ``count`` the term's frequency there; ``length`` is each item's token count. Documents are
their title, then each new heading, then their chunks' tokens, in order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

import numpy as np
import scipy.sparse as sp

from harness.corpus.store import Corpus
from harness.retrieve.analyzer import SpanishAnalyzer
from harness.retrieve.bm25.index import _document_sums, count_terms

__all__ = ["chunk_term_counts", "counted_batches", "document_term_counts", "query_term_matrix"]


def chunk_term_counts(analyzer: SpanishAnalyzer, batches: Iterable[Sequence[str]]):
    """Chunk texts, given as consecutive batches (e.g. :meth:`Corpus.iter_chunk_texts`), analysed one batch at a
    time straight into (item, term, count, length) arrays: no more than one batch of texts or token lists is
    alive."""
    vocab: dict[str, int] = {}
    parts = []
    offset = 0
    for texts in batches:
        parts.append(count_terms(analyzer.tokenize_many(texts), vocab, offset))
        offset += len(texts)
    if not parts:
        parts.append(count_terms([], vocab))
    cols = [list(a) for a in zip(*parts, strict=True)]
    del parts
    out = []
    for c in cols:  # one column at a time: at most one column is held twice
        out.append(np.concatenate(c))
        c.clear()
    item, term, count, length = out
    return item, term, count, length, vocab


def document_term_counts(corpus: Corpus, analyzer: SpanishAnalyzer, chunk_docs, item, term, count, length, vocab):
    """Document-index rows from the chunk rows: title, then each new heading, then the chunk tokens.

    Same terms and counts as the token-list form
    (:meth:`harness.retrieve.bm25.system.BM25System._document_tokens`, kept as the reference); the vocabulary is
    the chunk vocabulary extended by title and heading terms.
    """
    docs = corpus.documents()
    doc_ids = list(docs)
    pos = {d: i for i, d in enumerate(doc_ids)}
    vocab = dict(vocab)
    ex_item: list[int] = []
    ex_term: list[int] = []

    def extra(i: int, text: str) -> None:
        toks = analyzer.tokenize(text)
        ex_item.extend([i] * len(toks))
        ex_term.extend(vocab.setdefault(t, len(vocab)) for t in toks)

    for d in doc_ids:
        extra(pos[d], docs[d].title or "")
    heading_rows = corpus.conn.execute("SELECT heading_path FROM chunks ORDER BY rowid").fetchall()
    last: dict[str, str] = {}
    for doc, (hp,) in zip(chunk_docs, heading_rows, strict=True):
        if last.get(doc) != hp:
            path = json.loads(hp)
            if path:
                extra(pos[doc], path[-1])
            last[doc] = hp
    chunk_doc = np.fromiter((pos[d] for d in chunk_docs), dtype=np.int64, count=len(chunk_docs))
    e_item = np.asarray(ex_item, dtype=np.int64)
    e_term = np.asarray(ex_term, dtype=np.int64)
    v = max(len(vocab), 1)
    ukeys, d_count = _document_sums(chunk_doc, item, term, count, e_item, e_term, v, len(doc_ids))
    d_len = np.bincount(chunk_doc, weights=length, minlength=len(doc_ids)).astype(np.int64)
    d_len += np.bincount(e_item, minlength=len(doc_ids))
    return doc_ids, (ukeys // v).astype(np.int32), (ukeys % v).astype(np.int32), d_count, d_len, vocab


def counted_batches(batches: Iterable[Sequence[str]], advance) -> Iterable[Sequence[str]]:
    """``batches`` unchanged, calling ``advance(len(batch))`` after each (a progress display; ``None``: none)."""
    for batch in batches:
        yield batch
        if advance is not None:
            advance(len(batch))


def query_term_matrix(token_lists: Sequence[Sequence[str]], vocab: dict[str, int], n_terms: int) -> sp.csr_matrix:
    """``(Q, n_terms)`` float32 CSR of term counts, one row per analysed query, with multiplicity (a repeated term
    counts once per occurrence, as bm25s's ``get_scores`` sums it); terms not in ``vocab`` or with an id
    ``>= n_terms`` are dropped, so a query without any index term is an empty row."""
    rows: list[int] = []
    cols: list[int] = []
    for i, toks in enumerate(token_lists):
        ids = [vocab[t] for t in toks if t in vocab and vocab[t] < n_terms]
        rows.extend([i] * len(ids))
        cols.extend(ids)
    q = sp.csr_matrix(
        (np.ones(len(rows), dtype=np.float32), (np.asarray(rows, np.int64), np.asarray(cols, np.int64))),
        shape=(len(token_lists), n_terms),
    )
    q.sum_duplicates()
    return q
