"""Term counts of a corpus's chunks and documents, analysed once, as integer row arrays (the input of the
``bm25`` and ``tfidf`` systems' index builds).

Rows are ``(item, term, count)`` triples with ``item`` the chunk (or document) position, ``term`` an id of the
returned vocabulary and ``count`` the term's frequency there; ``length`` is each item's token count. Documents are
their title, then each new heading, then their chunks' tokens, in order.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterable, Sequence

import numpy as np
import scipy.sparse as sp

from harness.corpus.store import Corpus
from harness.retrieve.analyzer import Analyzer

__all__ = [
    "chunk_term_counts",
    "count_terms",
    "counted_batches",
    "document_term_counts",
    "query_term_matrix",
]

DOC_BLOCK = 1 << 22  # chunk (item, term) rows summed per document at a time by the document-index build


def count_terms(token_lists: Sequence[Sequence[str]], vocab: dict[str, int], item_offset: int = 0):
    """Per-item term counts of analysed token lists, growing ``vocab`` (first occurrence order, like ``build``).

    Returns:
        ``(item, term, count, length)``: ``(item, term, count)`` ``int32`` with one row per distinct term of an item
        (items numbered from ``item_offset``, rows item-major), ``length`` (``int64``) the token count of each list.
    """
    lens = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(token_lists))
    flat = np.fromiter(
        (vocab.setdefault(t, len(vocab)) for toks in token_lists for t in toks), dtype=np.int64, count=int(lens.sum())
    )
    v = max(len(vocab), 1)
    rows = np.repeat(np.arange(len(token_lists), dtype=np.int64), lens)
    keys, cnt = np.unique(rows * v + flat, return_counts=True)
    return (keys // v + item_offset).astype(np.int32), (keys % v).astype(np.int32), cnt.astype(np.int32), lens


def _sum_by_key(keys: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(unique keys ascending, summed int32 weights)`` of int64 ``keys`` and int32 ``weights`` of equal length."""
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    weights = weights[order]
    del order
    starts = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]])) if keys.size else keys[:0]
    sums = np.add.reduceat(weights, starts) if starts.size else weights[:0]
    return keys[starts], sums.astype(np.int32, copy=False)


def _document_sums(chunk_doc, item, term, count, e_item, e_term, v: int, n_docs: int):
    """Summed counts per ``(document, term)`` key ``doc * v + term``, keys ascending.

    Rows: the chunk rows (``item`` chunk positions, ``term``, ``count``) mapped to their document by ``chunk_doc``,
    plus one count per extra (title/heading) token ``(e_item, e_term)``. When documents are contiguous and in
    order in the chunk rows (``chunk_doc`` and ``item`` non-decreasing, as ``harness ingest`` writes them), the
    rows are summed one document range at a time, about ``DOC_BLOCK`` rows each, and the ranges' outputs
    concatenate in key order: no temporary spans all rows. Otherwise one range holds all rows (one sort).

    Returns:
        ``(doc int32, term int32, sums int32)``, in ``(doc, term)`` order: split from the int64 keys block by block
        (at DOF scale, 6.73 M chunks, the whole-corpus int64 keys and their quotient and remainder temporaries were
        most of the build's peak).
    """
    n = int(item.size)
    extra_keys = e_item * v + e_term
    ordered = (chunk_doc.size < 2 or bool(np.all(chunk_doc[1:] >= chunk_doc[:-1]))) and (
        n < 2 or bool(np.all(item[1:] >= item[:-1]))
    )
    block = DOC_BLOCK if ordered else max(n, 1)  # unordered: one range over all rows (one sort)
    e_order = np.argsort(e_item, kind="stable")
    e_doc, extra_keys = e_item[e_order], extra_keys[e_order]
    out_d: list[np.ndarray] = []
    out_t: list[np.ndarray] = []
    out_c: list[np.ndarray] = []
    s, d0 = 0, 0
    while d0 < n_docs:
        t = min(s + block, n)
        if t >= n:
            d1, e = n_docs - 1, n
        else:
            d1 = int(chunk_doc[item[t - 1]])  # the block ends with the whole of this document
            last_chunk = int(np.searchsorted(chunk_doc, d1, side="right")) - 1
            e = int(np.searchsorted(item, last_chunk, side="right"))
        keys = chunk_doc[item[s:e]]
        keys *= v
        keys += term[s:e]
        lo = int(np.searchsorted(e_doc, d0, side="left"))
        hi = int(np.searchsorted(e_doc, d1, side="right"))
        k, c = _sum_by_key(
            np.concatenate([keys, extra_keys[lo:hi]]),
            np.concatenate([count[s:e], np.ones(hi - lo, dtype=np.int32)]),
        )
        del keys
        out_d.append((k // v).astype(np.int32))
        out_t.append((k % v).astype(np.int32))
        out_c.append(c)
        del k
        s, d0 = e, d1 + 1
    return tuple(_concat_int32(parts) for parts in (out_d, out_t, out_c))


def _concat_int32(parts: list[np.ndarray]) -> np.ndarray:
    """``np.concatenate(parts)`` as int32, emptying ``parts`` (so one column is held twice at most)."""
    out = np.concatenate(parts).astype(np.int32, copy=False) if parts else np.zeros(0, np.int32)
    parts.clear()
    return out


def chunk_term_counts(analyzer: Analyzer, batches: Iterable[Sequence[str]]):
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


def document_term_counts(corpus: Corpus, analyzer: Analyzer, chunk_docs, item, term, count, length, vocab):
    """Document-index rows from the chunk rows: title, then each new heading, then the chunk tokens.

    Same terms and counts as the token-list form
    (:meth:`harness.retrieve.bm25.system.BM25System._document_tokens`, kept as the reference); the vocabulary is
    the chunk vocabulary extended by title and heading terms.
    """
    docs = corpus.documents()
    doc_ids = list(docs)
    pos = {d: i for i, d in enumerate(doc_ids)}
    vocab = dict(vocab)
    ex_item = array("q")  # 8 bytes a token (a list of ints takes 8 more per entry, and objects above 256)
    ex_term = array("q")

    def extra(i: int, text: str) -> None:
        toks = analyzer.tokenize(text)
        ex_item.extend([i] * len(toks))
        ex_term.extend(vocab.setdefault(t, len(vocab)) for t in toks)

    for d in doc_ids:
        extra(pos[d], docs[d].title or "")
    heading_rows = corpus.conn.execute("SELECT heading_path FROM chunks ORDER BY rowid")  # streamed, not fetched
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
    d_len = np.bincount(chunk_doc, weights=length, minlength=len(doc_ids)).astype(np.int64)
    d_len += np.bincount(e_item, minlength=len(doc_ids))
    d_item, d_term, d_count = _document_sums(chunk_doc, item, term, count, e_item, e_term, v, len(doc_ids))
    return doc_ids, d_item, d_term, d_count, d_len, vocab


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
