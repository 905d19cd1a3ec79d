"""Known-item evaluation: every chunk's opening words as a query, scored by whether its own document comes first.

A label-free evaluation that scales to a whole corpus (the "chunk-as-query" design of the published study of
1,300 regulatory documents; see :data:`PUBLISHED`).

Definition (exact)
------------------
1. **Chunks.** Every document of the corpus folder is decoded (:func:`~harness.corpus.chunker.decode_source`) and
   chunked in memory with ``md-words-v1`` rules at ``max_words = chunk_words`` and ``min_tail_words`` (20): for
   ``chunk_words = 100`` these are exactly the chunks ``harness ingest`` stores; other sizes use the chunker id
   ``md-words-v1:max_words=<n>`` (the same frozen rules, another window).
2. **Index.** Every chunk of every document (single-chunk documents included) is indexed.
3. **Queries.** The query of a chunk is its source text up to the end of its ``query_words``-th word (words are
   ``\\S+`` runs, as in the chunker). A chunk with fewer than ``query_words`` words is skipped and counted
   (``skipped_short``). Chunks of documents with a single chunk are not queries (``excluded_single_chunk``): no other
   chunk of theirs could be found.
4. **Search.** The query chunk itself is excluded from its own search (its score is set to minus infinity); every
   other chunk is scored. Only positive scores are retrieved (an item sharing no term with the query is not).
   The ranking follows the project's tie rule: score descending, then chunk id ascending (string order).
5. **Outcome.** ``hit`` = 1 when the top item exists and belongs to the query's document. ``rank`` = 1-based
   position of the first same-document chunk in that ranking (``None`` when no same-document chunk has a positive
   score). ``tie`` = two or more chunks share the top score; ``tie_decided_hit`` = the chunks sharing the top score
   include both same-document and other-document chunks, so the id tie rule decided ``hit``. ``empty_query`` = the
   query has no index term (all stop words).

Systems
-------
* ``bm25``: bm25s ``lucene`` (k1 1.5, b 0.75) over the ``es-snowball-fold-v1`` analyzer
  (:mod:`harness.retrieve.bm25`); query terms are counted with multiplicity as bm25s does.
* ``tfidf``: scikit-learn ``TfidfVectorizer`` (l2 norm, smooth idf, raw tf) with the same analyzer's tokens
  (``analyzer=`` callable), cosine similarity.
* ``vector``: sign bits (1 per dimension) of sentence-transformers embeddings (:mod:`harness.retrieve.embed`,
  default model ``wordllama-l2-supercat-256``), score = number of agreeing bits (``D - hamming``); see
  :func:`_vector_scorer`. Raises "vector system unavailable" when the embedding stack is missing.

All systems are scored the same way: for a block of queries, each query's term weights times the index's posting
lists are accumulated into a dense float32 block of scores (``Q @ W.T`` for the block), term by term in the query
row's order, so two chunks with identical term weights get bit-identical scores and ties are detected exactly; the
outcomes are then a few vectorised passes over the block. Blocks run on ``workers`` forked processes.

Files written (atomically, into ``out_dir``): ``outcomes.jsonl.gz`` (one record per system and query),
``per_document.jsonl`` (per system and document: ``n``, ``s``, ``rate``), ``summary.json``.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import multiprocessing as mp
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from harness.corpus.chunker import MdWordsChunker, decode_source
from harness.corpus.ingest import scan_corpus
from harness.errors import HarnessInputError
from harness.io import atomic_directory, atomic_write_json, check_output_location, read_jsonl
from harness.progress import progress_bar
from harness.ranking import id_rank as _id_rank
from harness.studies.coverage import CoverageResult, design_diagnostics, run_coverage

__all__ = [
    "PUBLISHED",
    "SYSTEMS",
    "ChunkedCorpus",
    "HammingScorer",
    "SparseScorer",
    "KnownItemOutcomes",
    "KnownItemResult",
    "SensitivityResult",
    "chunk_corpus",
    "known_item_search",
    "run_known_item",
    "run_chunk_size_sensitivity",
    "run_study",
    "StudyResult",
    "read_outcomes",
    "paired_comparison",
]

SYSTEMS = ("bm25", "tfidf", "vector")

#: Figures of the published study (1,300 regulatory documents, 33,503 chunks of 100 words, 20-word queries, BM25).
PUBLISHED = {
    "documents": 1300,
    "chunks": 33503,
    "micro_hit1": 0.1846,
    "macro_hit1": 0.1596,
    "icc": 0.293,
    "lag1_autocorrelation": 0.17,
    "deff": 33.2,
}

_WORD_RE = re.compile(r"\S+")


# --------------------------------------------------------------------------------------------------------------
# Chunks and queries
# --------------------------------------------------------------------------------------------------------------


@dataclass
class ChunkedCorpus:
    """A corpus chunked in memory, with its known-item queries.

    Attributes:
        corpus_id, corpus_hash: from :func:`~harness.corpus.ingest.scan_corpus`.
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


def chunk_corpus(
    corpus_dir: str | Path, *, chunk_words: int = 100, query_words: int = 20, min_tail_words: int = 20
) -> ChunkedCorpus:
    """Chunk a corpus folder in memory and select its known-item queries (rules 1-3 of the module docstring).

    Args:
        corpus_dir: corpus folder (Markdown files, optional ``metadata.jsonl``).
        chunk_words: ``max_words`` of the ``md-words-v1`` windows (>= 1).
        query_words: words per query (>= 1).
        min_tail_words: ``min_tail_words`` of the chunker (20 in ``md-words-v1``).

    Returns:
        A :class:`ChunkedCorpus`.

    Raises:
        HarnessInputError: unreadable corpus (see :func:`~harness.corpus.ingest.scan_corpus`), bad sizes, or no
            query left.
    """
    if query_words < 1:
        raise HarnessInputError(f"query_words={query_words}: must be >= 1")
    chunker = _chunker_for(chunk_words, min_tail_words)
    source = scan_corpus(corpus_dir)
    doc_ids, doc_types, collections, n_per_doc = [], [], [], []
    chunk_ids: list[str] = []
    chunk_doc: list[int] = []
    chunk_index: list[int] = []
    chunk_words_l: list[int] = []
    texts: list[str] = []
    for di, d in enumerate(source.docs):
        full = source.root / d.path
        chunks = chunker.chunk(d.doc_id, decode_source(full.read_bytes(), origin=str(full)))
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
    qmask = multi & long_enough
    query_chunks = np.flatnonzero(qmask)
    query_texts = []
    for i in query_chunks:
        t = texts[i]
        m = None
        for k, m in enumerate(_WORD_RE.finditer(t), start=1):  # noqa: B007
            if k == query_words:
                break
        query_texts.append(t[: m.end()] if m is not None else "")
    if query_chunks.size == 0:
        raise HarnessInputError(
            f"{corpus_dir}: no known-item query (no multi-chunk document has a chunk of >= {query_words} words)"
        )
    return ChunkedCorpus(
        corpus_id=source.corpus_id,
        corpus_hash=source.corpus_hash,
        chunker_id=chunker.chunker_id,
        chunker_params=dict(chunker.params),
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
        query_texts=query_texts,
        skipped_short=int(np.count_nonzero(multi & ~long_enough)),
        excluded_single_chunk_docs=int(np.count_nonzero(doc_n == 1)),
        excluded_single_chunk_chunks=int(np.count_nonzero(~multi)),
    )


# --------------------------------------------------------------------------------------------------------------
# The search kernel
# --------------------------------------------------------------------------------------------------------------


@dataclass
class KnownItemOutcomes:
    """Per-query outcomes of one system (arrays aligned with ``ChunkedCorpus.query_chunks``).

    Attributes:
        system: system name.
        hit: shape (Q,), int8 in {0, 1}.
        rank: shape (Q,), int64; 1-based rank of the first same-document chunk, 0 when none was retrieved.
        tie: shape (Q,), bool; two or more chunks share the top score.
        tie_decided_hit: shape (Q,), bool; the tied top chunks include same- and other-document chunks.
        empty_query: shape (Q,), bool; the query had no index term.
        top_chunk: shape (Q,), int64; position of the top chunk, -1 when nothing was retrieved.
        seconds: wall time of the search (index build excluded).
        build_seconds: wall time of the index build.
        config: what identifies the system.
    """

    system: str
    hit: np.ndarray
    rank: np.ndarray
    tie: np.ndarray
    tie_decided_hit: np.ndarray
    empty_query: np.ndarray
    top_chunk: np.ndarray
    seconds: float = 0.0
    build_seconds: float = 0.0
    config: dict = field(default_factory=dict)


class SparseScorer:
    """Scores of a block of queries as ``Q[start:stop] @ W.T`` accumulated densely (float32).

    Each query's term weights times the index's posting lists are added term by term in the query row's order, so
    two chunks with identical term weights get bit-identical scores (ties are exact).

    Args:
        index_t: shape (V, N) CSR, term x chunk weights (non-negative).
        queries: shape (Q, V) CSR, query term weights.
    """

    def __init__(self, index_t: sp.csr_matrix, queries: sp.csr_matrix):
        self.index_t = index_t.tocsr()
        self.queries = queries.tocsr()
        if self.index_t.shape[0] != self.queries.shape[1]:
            raise ValueError(f"shapes: queries {self.queries.shape}, index_t {self.index_t.shape}")
        self.n_queries, self.n_chunks = self.queries.shape[0], self.index_t.shape[1]
        self.dtype = np.result_type(self.index_t.dtype, self.queries.dtype, np.float32)

    def empty_queries(self) -> np.ndarray:
        """shape (Q,), bool: queries without any index term."""
        return np.diff(self.queries.indptr) == 0

    def __call__(self, out: np.ndarray, start: int, stop: int) -> np.ndarray:
        s = out[: stop - start]
        s.fill(0.0)
        qp, qi, qv = self.queries.indptr, self.queries.indices, self.queries.data
        ip, ix, dat = self.index_t.indptr, self.index_t.indices, self.index_t.data
        for r in range(stop - start):
            row = s[r]
            for k in range(qp[start + r], qp[start + r + 1]):
                t = qi[k]
                a, b = ip[t], ip[t + 1]
                if b > a:
                    row[ix[a:b]] += qv[k] * dat[a:b]
        return s


class HammingScorer:
    """Scores of a block of queries as the number of agreeing sign bits, ``D - hamming(q, c)`` (float32, exact).

    Args:
        query_bits: shape (Q, D/8) packed query bits (:func:`harness.retrieve.binary.pack_signs`).
        chunk_bits: shape (N, D/8) packed chunk bits, same convention.
        dim: D.
    """

    def __init__(self, query_bits: np.ndarray, chunk_bits: np.ndarray, dim: int):
        self.query_bits, self.chunk_bits, self.dim = query_bits, chunk_bits, int(dim)
        self.n_queries, self.n_chunks = query_bits.shape[0], chunk_bits.shape[0]
        self.dtype = np.dtype(np.float32)

    def empty_queries(self) -> np.ndarray:
        """shape (Q,), bool: never empty (every text has an embedding)."""
        return np.zeros(self.n_queries, dtype=bool)

    def __call__(self, out: np.ndarray, start: int, stop: int) -> np.ndarray:
        from harness.retrieve.binary import hamming_distances

        s = out[: stop - start]
        np.subtract(self.dim, hamming_distances(self.query_bits[start:stop], self.chunk_bits), out=s, casting="unsafe")
        return s


def _block_outcomes(
    s: np.ndarray, q_self: np.ndarray, lo: np.ndarray, hi: np.ndarray, id_rank: np.ndarray
) -> tuple[np.ndarray, ...]:
    """Known-item outcomes from a dense score block ``s`` (shape (b, N); modified: query chunks set to -inf).

    Columns are chunks in (document, chunk) order, so the chunks of a query's document are ``lo:hi``.
    """
    b = s.shape[0]
    rows = np.arange(b)
    s[rows, q_self] = -np.inf
    m = s.max(axis=1)
    n_top = np.count_nonzero(s == m[:, None], axis=1)
    top_col = s.argmax(axis=1)
    has_top = m > 0
    tie = has_top & (n_top > 1)
    tie_decided = np.zeros(b, dtype=bool)
    for r in np.flatnonzero(tie):
        cols = np.flatnonzero(s[r] == m[r])
        top_col[r] = cols[np.argmin(id_rank[cols])]
        same = (cols >= lo[r]) & (cols < hi[r])
        tie_decided[r] = bool(same.any() and not same.all())
    hit = has_top & (top_col >= lo) & (top_col < hi)
    top_col = np.where(has_top, top_col, -1)
    # best same-document chunk (the query chunk is -inf) and the first one in canonical order
    sstar = np.empty(b, dtype=s.dtype)
    first = np.zeros(b, dtype=np.int64)
    for r in range(b):
        seg = s[r, lo[r] : hi[r]]
        j = int(seg.argmax())
        sstar[r] = seg[j]
        first[r] = lo[r] + j
    has_same = sstar > 0
    gt = np.count_nonzero(s > sstar[:, None], axis=1)
    n_eq = np.count_nonzero(s == sstar[:, None], axis=1)
    before = np.zeros(b, dtype=np.int64)
    for r in np.flatnonzero(has_same & (n_eq > 1)):
        cols = np.flatnonzero(s[r] == sstar[r])
        same = cols[(cols >= lo[r]) & (cols < hi[r])]
        fr = id_rank[same].min()
        before[r] = np.count_nonzero(id_rank[cols] < fr)
    rank = np.where(has_same, 1 + gt + before, 0)
    return hit.astype(np.int8), rank, tie, tie_decided, top_col


def known_item_search(
    scorer: Callable[[np.ndarray, int, int], np.ndarray] | SparseScorer | HammingScorer,
    query_chunks: np.ndarray,
    chunk_doc: np.ndarray,
    id_rank: np.ndarray,
    *,
    batch_size: int = 32,
    workers: int = 2,
    task_queries: int = 512,
    progress: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, ...]:
    """Score every query against every chunk and return the known-item outcomes (rules 4-5 of the module docstring).

    Args:
        scorer: fills ``out[: stop - start]`` (shape (stop - start, N)) with the scores of queries ``start:stop``
            against every chunk and returns that view; has ``n_queries``, ``n_chunks`` and ``dtype``
            (:class:`SparseScorer`, :class:`HammingScorer`). Scores are non-negative; only positive ones count as
            retrieved.
        query_chunks: shape (Q,), the chunk each query came from (excluded from its own search).
        chunk_doc: shape (N,), non-decreasing document index per chunk (each document's chunks contiguous).
        id_rank: shape (N,), position of each chunk id in ascending string order (the tie rule).
        batch_size: queries per block (memory: ``batch_size * N * 4`` bytes per worker).
        workers: parallel workers: forked processes where the platform can fork (the index is shared
            copy-on-write; the per-term numpy calls are too small to scale on threads), threads elsewhere.
        task_queries: queries per task handed to a worker (rounded to whole blocks).
        progress: called with the number of queries finished in each block.

    Returns:
        ``(hit, rank, tie, tie_decided_hit, top_chunk)``: arrays of shape (Q,) (see :class:`KnownItemOutcomes`).

    Raises:
        ValueError: inconsistent shapes, or chunks not grouped by document.
    """
    n_q, n = scorer.n_queries, scorer.n_chunks
    if chunk_doc.size != n or id_rank.size != n or query_chunks.size != n_q:
        raise ValueError(f"shapes: {n_q} queries x {n} chunks, chunk_doc {chunk_doc.shape}, id_rank {id_rank.shape}")
    if n > 1 and np.any(np.diff(chunk_doc) < 0):
        raise ValueError("chunk_doc must be non-decreasing (chunks grouped by document)")
    n_docs = int(chunk_doc.max()) + 1 if n else 0
    doc_lo = np.searchsorted(chunk_doc, np.arange(n_docs), side="left")
    doc_hi = np.searchsorted(chunk_doc, np.arange(n_docs), side="right")
    q_doc = chunk_doc[query_chunks]
    q_lo, q_hi = doc_lo[q_doc], doc_hi[q_doc]
    hit = np.zeros(n_q, dtype=np.int8)
    rank = np.zeros(n_q, dtype=np.int64)
    tie = np.zeros(n_q, dtype=bool)
    tie_dec = np.zeros(n_q, dtype=bool)
    top = np.full(n_q, -1, dtype=np.int64)
    state = (scorer, query_chunks, q_lo, q_hi, id_rank, batch_size, n_q, n, scorer.dtype)
    starts = list(range(0, n_q, batch_size))
    per_task = max(1, task_queries // batch_size)
    tasks = [starts[i : i + per_task] for i in range(0, len(starts), per_task)]

    def store(results: list) -> None:
        for a, z, out in results:
            hit[a:z], rank[a:z], tie[a:z], tie_dec[a:z], top[a:z] = out
            if progress is not None:
                progress(z - a)

    if workers <= 1 or len(tasks) == 1:
        for t in tasks:
            store(_search_blocks(state, t))
    elif "fork" in mp.get_all_start_methods():
        key = id(state)
        _FORK_STATE[key] = state
        try:
            with mp.get_context("fork").Pool(workers) as pool:
                for res in pool.imap_unordered(_fork_job, [(key, t) for t in tasks]):
                    store(res)
        finally:
            _FORK_STATE.pop(key, None)
    else:  # pragma: no cover - platforms without fork
        with ThreadPoolExecutor(workers) as ex:
            for res in ex.map(lambda t: _search_blocks(state, t), tasks):
                store(res)
    return hit, rank, tie, tie_dec, top


_FORK_STATE: dict[int, tuple] = {}


def _search_blocks(state: tuple, starts: list[int]) -> list:
    scorer, query_chunks, q_lo, q_hi, id_rank, batch_size, n_q, n, dtype = state
    buf = np.empty((batch_size, n), dtype=dtype)
    out = []
    for a in starts:
        z = min(a + batch_size, n_q)
        s = scorer(buf, a, z)
        out.append((a, z, _block_outcomes(s, query_chunks[a:z], q_lo[a:z], q_hi[a:z], id_rank)))
    return out


def _fork_job(args: tuple) -> list:
    key, starts = args
    return _search_blocks(_FORK_STATE[key], starts)


# --------------------------------------------------------------------------------------------------------------
# Systems: index matrices and query matrices
# --------------------------------------------------------------------------------------------------------------


def _bm25_scorer(chunk_tokens: list[list[str]], query_tokens: list[list[str]]) -> tuple:
    import bm25s

    from harness.retrieve.analyzer import SpanishAnalyzer
    from harness.retrieve.bm25 import BM25_PARAMS, BM25Index

    idx = BM25Index.build([str(i) for i in range(len(chunk_tokens))], chunk_tokens, SpanishAnalyzer())
    sc = idx.retriever.scores
    v = len(sc["indptr"]) - 1
    index_t = sp.csr_matrix(
        (np.asarray(sc["data"], dtype=np.float32), np.asarray(sc["indices"]), np.asarray(sc["indptr"])),
        shape=(v, int(sc["num_docs"])),
    )
    vocab = idx.vocab
    rows, cols = [], []
    for i, toks in enumerate(query_tokens):
        ids = [vocab[t] for t in toks if t in vocab and vocab[t] < v]
        rows.extend([i] * len(ids))
        cols.extend(ids)
    q = sp.csr_matrix(
        (np.ones(len(rows), dtype=np.float32), (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))),
        shape=(len(query_tokens), v),
    )
    q.sum_duplicates()
    config = {"system": "bm25", "library": f"bm25s {bm25s.__version__}", "params": BM25_PARAMS}
    return SparseScorer(index_t, q), config


def _identity(tokens):
    return tokens


def _tfidf_scorer(chunk_tokens: list[list[str]], query_tokens: list[list[str]]) -> tuple:
    import sklearn
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(analyzer=_identity, lowercase=False, dtype=np.float32)
    x = vec.fit_transform(chunk_tokens)
    q = vec.transform(query_tokens).tocsr()
    index_t = x.T.tocsr()
    params = {k: vec.get_params()[k] for k in ("norm", "use_idf", "smooth_idf", "sublinear_tf")}
    config = {
        "system": "tfidf",
        "library": f"scikit-learn {sklearn.__version__}",
        "params": params,
        "similarity": "cosine",
    }
    return SparseScorer(index_t, q.astype(np.float32)), config


EMBED_BLOCK = 4096  # texts (queries, in-memory passages) embedded per call; fixed, so the display changes nothing


def _embed_in_blocks(fn, texts: list[str], dim: int, progress: bool, label: str) -> np.ndarray:
    """``fn(texts)`` (an embedder's ``embed_queries`` / ``embed_passages``) called on consecutive blocks of
    :data:`EMBED_BLOCK` texts, rows stacked in input order (float32, shape (len(texts), dim)), a progress
    bar advanced per block."""
    parts = []
    with progress_bar(label, len(texts), enabled=progress) as cb:
        for s in range(0, len(texts), EMBED_BLOCK):
            parts.append(np.asarray(fn(texts[s : s + EMBED_BLOCK]), dtype=np.float32))
            if cb is not None:
                cb(len(parts[-1]))
    return np.concatenate(parts) if parts else np.zeros((0, dim), dtype=np.float32)


def _vector_scorer(
    texts: list[str],
    query_texts: list[str],
    model: str | None,
    *,
    chunker_id: str,
    workdir: str | Path | None = None,
    progress: bool = False,
) -> tuple:
    """The ``vector`` system: sign bits of sentence-transformers embeddings, scored by agreeing bits.

    Chunks are embedded with the embedder's passage prompt, queries with its query prompt
    (:func:`harness.retrieve.embed.load_embedder`, default model ``wordllama-l2-supercat-256``), binarised with
    :func:`harness.retrieve.binary.pack_signs` (bit = value > 0); score = ``D - hamming``, so ranking by score is
    ranking by Hamming distance ascending, ties by chunk id. With ``workdir``, chunk embeddings go through the
    shared embedding cache ``<workdir>/embeddings/cache.sqlite`` under ``chunker_id``
    (:func:`harness.retrieve.vector.cached_passage_embeddings`): at 100-word chunks these are the vectors
    ``harness embed`` stores, so nothing is embedded twice; other chunk sizes get their own key. Queries are
    always embedded (they carry the query prompt), :data:`EMBED_BLOCK` at a time. Without ``workdir``
    everything is embedded in memory. ``progress`` shows a bar for the chunk embeddings (cache hits count as done)
    and one for the queries.

    Raises:
        HarnessInputError: "vector system unavailable: ..." when the embedding stack cannot be imported or the
            model cannot be loaded.
    """
    try:
        from harness.retrieve.binary import pack_signs
        from harness.retrieve.embed import DEFAULT_MODEL, load_embedder
    except ImportError as exc:  # pragma: no cover - depends on the optional [vectors] extra
        raise HarnessInputError(f"vector system unavailable: {exc} (install the [vectors] extra)") from None
    try:
        emb = load_embedder(model or DEFAULT_MODEL)
    except ImportError as exc:  # pragma: no cover - depends on the optional [vectors] extra
        raise HarnessInputError(f"vector system unavailable: {exc} (install the [vectors] extra)") from None
    except HarnessInputError as exc:
        raise HarnessInputError(f"vector system unavailable: {exc}") from None
    cache_stats: dict | None = None
    label = f"embed {emb.model_id}"
    if workdir is None:
        passages = _embed_in_blocks(emb.embed_passages, texts, emb.dim, progress, f"{label} chunks")
    else:
        from harness.retrieve.vector import EmbeddingCache, cached_passage_embeddings

        cache = EmbeddingCache.for_workdir(workdir)
        try:
            with progress_bar(f"{label} chunks (cache)", len(set(texts)), enabled=progress) as cb:
                passages, cache_stats = cached_passage_embeddings(cache, emb, chunker_id, texts, progress=cb)
        finally:
            cache.close()
    chunk_bits = pack_signs(passages)
    query_bits = pack_signs(_embed_in_blocks(emb.embed_queries, query_texts, emb.dim, progress, f"{label} queries"))
    config = {"system": "vector", "embedder": emb.config(), "bits": "value > 0, LSB first", "score": "dim - hamming"}
    if cache_stats is not None:
        config["embedding_cache"] = {"path": str(Path(workdir) / "embeddings" / "cache.sqlite"), **cache_stats}
    return HammingScorer(query_bits, chunk_bits, emb.dim), config


# --------------------------------------------------------------------------------------------------------------
# Summaries
# --------------------------------------------------------------------------------------------------------------


def _per_doc(hit: np.ndarray, qdoc: np.ndarray, n_docs: int) -> tuple[np.ndarray, np.ndarray]:
    n = np.bincount(qdoc, minlength=n_docs)
    s = np.bincount(qdoc, weights=hit, minlength=n_docs).astype(np.int64)
    return n, s


def _group_rates(labels: list[str], n: np.ndarray, s: np.ndarray, *, min_docs: int = 0) -> dict:
    """Micro and macro rates per label over documents with n > 0; labels with < min_docs documents -> "other"."""
    present = n > 0
    cnt = Counter(lab for lab, p in zip(labels, present, strict=True) if p)
    out: dict[str, dict] = {}
    groups: dict[str, list[int]] = defaultdict(list)
    for i, (lab, p) in enumerate(zip(labels, present, strict=True)):
        if p:
            groups[lab if cnt[lab] >= min_docs else "other"].append(i)
    for lab in sorted(groups, key=lambda g: (-len(groups[g]), g)):
        ix = np.asarray(groups[lab])
        out[lab] = {
            "documents": int(ix.size),
            "queries": int(n[ix].sum()),
            "micro_hit1": float(s[ix].sum() / n[ix].sum()),
            "macro_hit1": float(np.mean(s[ix] / n[ix])),
        }
    return out


def paired_comparison(hit_a: np.ndarray, hit_b: np.ndarray, qdoc: np.ndarray, *, level: float = 0.95) -> dict:
    """Paired comparison of two systems on the same known-item queries (B - A).

    Args:
        hit_a, hit_b: shape (Q,), 0/1 outcomes of systems A and B on the same queries.
        qdoc: shape (Q,), document of each query (the clusters).
        level: confidence level.

    Returns:
        ``micro_diff`` with a CR2 interval (documents as clusters, Satterthwaite df;
        :func:`harness.stats.paired`), ``macro_diff`` with a t interval over per-document rate differences
        (:func:`harness.stats.cluster_t`), ``both_hit``/``only_a``/``only_b``/``neither`` query counts,
        ``share_queries_equal`` and ``share_documents_tied`` (documents whose two rates are equal).
    """
    from harness.stats import cluster_t, paired

    a = np.asarray(hit_a, dtype=np.float64)
    b = np.asarray(hit_b, dtype=np.float64)
    _, codes = np.unique(qdoc, return_inverse=True)
    g = int(codes.max()) + 1
    micro = paired(a, b, codes, method="cr2", level=level)
    macro = cluster_t(b - a, codes, level=level, clip=False)
    ra = np.bincount(codes, weights=a, minlength=g)
    rb = np.bincount(codes, weights=b, minlength=g)
    a1, b1 = a > 0, b > 0
    return {
        "queries": int(a.size),
        "documents": g,
        "micro_diff": float(micro.estimate),
        "micro_ci": [float(micro.lower), float(micro.upper)],
        "micro_se_cr2": float(micro.se),
        "micro_df": float(micro.df),
        "macro_diff": float(macro.estimate),
        "macro_ci": [float(macro.lower), float(macro.upper)],
        "macro_se": float(macro.se),
        "both_hit": int(np.count_nonzero(a1 & b1)),
        "only_a": int(np.count_nonzero(a1 & ~b1)),
        "only_b": int(np.count_nonzero(~a1 & b1)),
        "neither": int(np.count_nonzero(~a1 & ~b1)),
        "share_queries_equal": float(np.mean(a1 == b1)),
        "share_documents_tied": float(np.mean(ra == rb)),
        "level": level,
        "method": "CR2 (documents as clusters, Satterthwaite df) for micro; t over document differences for macro",
    }


def _system_summary(cc: ChunkedCorpus, o: KnownItemOutcomes) -> dict:
    qdoc = cc.chunk_doc[cc.query_chunks]
    n, s = _per_doc(o.hit, qdoc, len(cc.doc_ids))
    present = n > 0
    rates = s[present] / n[present]
    y_sorted_by_doc = o.hit  # queries are in (document, chunk) order already
    diag = design_diagnostics(
        n[present], s[present], y=y_sorted_by_doc, cluster=qdoc, position=cc.chunk_index[cc.query_chunks]
    )
    nq = int(o.hit.size)
    ranks = o.rank[o.rank > 0]
    return {
        "system": o.system,
        "queries": nq,
        "documents": int(present.sum()),
        "hits": int(o.hit.sum()),
        "micro_hit1": float(o.hit.mean()),
        "macro_hit1": float(rates.mean()),
        "mrr_first_same_doc": float(np.sum(1.0 / ranks) / nq) if nq else float("nan"),
        "share_same_doc_not_retrieved": float(np.mean(o.rank == 0)),
        "median_rank": float(np.median(ranks)) if ranks.size else None,
        "share_tie_top": float(o.tie.mean()),
        "share_tie_decided_hit": float(o.tie_decided_hit.mean()),
        "empty_queries": int(o.empty_query.sum()),
        "per_document": {
            "share_at_zero": float(np.mean(rates == 0)),
            "share_at_one": float(np.mean(rates == 1)),
            "quantiles": {str(q): float(np.quantile(rates, q)) for q in (0.1, 0.25, 0.5, 0.75, 0.9)},
        },
        "by_doc_type": _group_rates(cc.doc_types, n, s, min_docs=5),
        "by_collection": _group_rates(cc.collections, n, s),
        "diagnostics": diag,
        "search_seconds": round(o.seconds, 3),
        "build_seconds": round(o.build_seconds, 3),
        "queries_per_second": round(nq / o.seconds, 1) if o.seconds > 0 else None,
        "config": o.config,
    }


# --------------------------------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------------------------------


@dataclass
class KnownItemResult:
    """What :func:`run_known_item` produced.

    Attributes:
        out_dir: folder holding ``outcomes.jsonl.gz``, ``per_document.jsonl``, ``summary.json``.
        summary: the content of ``summary.json``.
        corpus: the :class:`ChunkedCorpus` (not serialised).
        outcomes: ``{system: KnownItemOutcomes}``.
    """

    out_dir: Path | None
    summary: dict
    corpus: ChunkedCorpus | None = None
    outcomes: dict[str, KnownItemOutcomes] = field(default_factory=dict)

    def __rich__(self):
        from rich.console import Group

        return Group(*_render_summary(self.summary))


def _fmt_pct(x: float | None, digits: int = 2) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.{digits}f} %"


def _fmt_points(x: float | None, digits: int = 2) -> str:
    """A difference of two proportions in percentage points, signed (``+1.23 pts``)."""
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:+.{digits}f} pts"


def _render_summary(summary: dict) -> list:
    from rich.table import Table

    out = []
    cfg = summary["config"]
    t = Table(
        title=(f"Known-item hit@1 - {summary['corpus_id']}, {cfg['chunker_id']}, {cfg['query_words']}-word queries"),
        caption=(
            f"{summary['counts']['queries']} queries from {summary['counts']['documents']} documents; "
            f"{summary['counts']['skipped_short']} short chunks skipped; "
            f"{summary['counts']['excluded_single_chunk_docs']} single-chunk documents excluded"
        ),
    )
    for col in ("system", "micro", "macro", "ICC", "DEFF", "N_eff", "lag-1 r", "ties@1", "q/s"):
        t.add_column(col, justify="right" if col != "system" else "left")
    pub = summary.get("published", {})
    for name, s in summary["systems"].items():
        d = s["diagnostics"]
        t.add_row(
            name,
            _fmt_pct(s["micro_hit1"]),
            _fmt_pct(s["macro_hit1"]),
            f"{d['icc']:.3f}",
            f"{d['deff']:.1f}",
            f"{d['n_eff']:.0f}",
            f"{d['lag1_autocorrelation']:.3f}",
            _fmt_pct(s["share_tie_top"], 1),
            f"{s['queries_per_second']:.0f}" if s["queries_per_second"] else "-",
        )
    if pub:
        t.add_row(
            "published (bm25)",
            _fmt_pct(pub["micro_hit1"]),
            _fmt_pct(pub["macro_hit1"]),
            f"{pub['icc']:.3f}",
            f"{pub['deff']:.1f}",
            "-",
            f"{pub['lag1_autocorrelation']:.2f}",
            "-",
            "-",
            style="dim",
        )
    out.append(t)
    first = next(iter(summary["systems"].values()))
    bt = Table(title=f"hit@1 by doc_type ({first['system']}; types with < 5 documents pooled as 'other')")
    for col in ("doc_type", "docs", "queries", "micro", "macro"):
        bt.add_column(col, justify="left" if col == "doc_type" else "right")
    for lab, r in first["by_doc_type"].items():
        bt.add_row(lab, str(r["documents"]), str(r["queries"]), _fmt_pct(r["micro_hit1"]), _fmt_pct(r["macro_hit1"]))
    out.append(bt)
    ct = Table(title=f"hit@1 by collection ({first['system']})")
    for col in ("collection", "docs", "queries", "micro", "macro"):
        ct.add_column(col, justify="left" if col == "collection" else "right")
    for lab, r in first["by_collection"].items():
        ct.add_row(lab, str(r["documents"]), str(r["queries"]), _fmt_pct(r["micro_hit1"]), _fmt_pct(r["macro_hit1"]))
    out.append(ct)
    for key, p in summary.get("paired", {}).items():
        pt = Table(title=f"paired {key} (B - A), {p['queries']} queries, {p['documents']} documents")
        for col in ("measure", "difference", "95 % interval", "note"):
            pt.add_column(col)
        pt.add_row(
            "micro",
            _fmt_points(p["micro_diff"]),
            f"[{_fmt_points(p['micro_ci'][0])}, {_fmt_points(p['micro_ci'][1])}]",
            f"CR2, df {p['micro_df']:.1f}",
        )
        pt.add_row(
            "macro",
            _fmt_points(p["macro_diff"]),
            f"[{_fmt_points(p['macro_ci'][0])}, {_fmt_points(p['macro_ci'][1])}]",
            "t over documents",
        )
        pt.add_row(
            "agreement",
            "",
            "",
            f"only A {p['only_a']}, only B {p['only_b']}; documents tied {_fmt_pct(p['share_documents_tied'], 1)}",
        )
        out.append(pt)
    return out


def _outcome_lines(cc: ChunkedCorpus, o: KnownItemOutcomes) -> list[str]:
    lines = []
    qd = cc.chunk_doc[cc.query_chunks]
    for k, ci in enumerate(cc.query_chunks):
        di = int(qd[k])
        r = int(o.rank[k])
        rec = {
            "doc_id": cc.doc_ids[di],
            "doc_type": cc.doc_types[di],
            "collection": cc.collections[di],
            "chunk_index": int(cc.chunk_index[ci]),
            "n_words": int(cc.chunk_words[ci]),
            "system": o.system,
            "hit": int(o.hit[k]),
            "rank": r if r > 0 else None,
            "tie": bool(o.tie[k]),
            "tie_decided_hit": bool(o.tie_decided_hit[k]),
            "empty_query": bool(o.empty_query[k]),
        }
        lines.append(json.dumps(rec, ensure_ascii=False, separators=(",", ":")))
    return lines


def _run_system(
    name: str,
    cc: ChunkedCorpus,
    tokens: list[list[str]],
    qtokens: list[list[str]],
    id_rank: np.ndarray,
    *,
    workers: int,
    batch_size: int,
    progress: bool,
    vector_model: str | None = None,
    workdir: str | Path | None = None,
) -> KnownItemOutcomes:
    t0 = time.perf_counter()
    if name == "bm25":
        scorer, config = _bm25_scorer(tokens, qtokens)
    elif name == "tfidf":
        scorer, config = _tfidf_scorer(tokens, qtokens)
    elif name == "vector":
        scorer, config = _vector_scorer(
            cc.texts, cc.query_texts, vector_model, chunker_id=cc.chunker_id, workdir=workdir, progress=progress
        )
    else:
        raise HarnessInputError(f"--systems: unknown system {name!r} (known: {', '.join(SYSTEMS)})")
    build = time.perf_counter() - t0
    empty = scorer.empty_queries()
    t1 = time.perf_counter()
    with progress_bar(f"known-item {name}", scorer.n_queries, enabled=progress) as cb:
        hit, rank, tie, tie_dec, top = known_item_search(
            scorer, cc.query_chunks, cc.chunk_doc, id_rank, batch_size=batch_size, workers=workers, progress=cb
        )
    secs = time.perf_counter() - t1
    return KnownItemOutcomes(name, hit, rank, tie, tie_dec, empty, top, secs, build, config)


def run_known_item(
    corpus_dir: str | Path,
    out_dir: str | Path | None,
    *,
    chunk_words: int = 100,
    query_words: int = 20,
    systems: Sequence[str] | str = ("bm25",),
    min_tail_words: int = 20,
    workers: int = 2,
    batch_size: int = 32,
    vector_model: str | None = None,
    workdir: str | Path | None = None,
    overwrite: bool = False,
    progress: bool = False,
) -> KnownItemResult:
    """Run the known-item study on a corpus folder and write its files (``harness known-item``).

    Args:
        corpus_dir: corpus folder.
        out_dir: output folder (written atomically as a whole); ``None`` writes nothing.
        chunk_words: chunk size in words (``md-words-v1`` windows).
        query_words: words per query.
        systems: names from :data:`SYSTEMS`, a sequence or a comma-separated string; the first is system A of the
            paired comparisons (each other system is compared with it).
        min_tail_words: chunker tail rule (20 in ``md-words-v1``).
        workers: parallel search workers (forked processes; see :func:`known_item_search`).
        batch_size: queries per block.
        vector_model: embedding model of the ``vector`` system (default ``wordllama-l2-supercat-256``; see
            :func:`harness.retrieve.embed.load_embedder`).
        workdir: work directory whose embedding cache the ``vector`` system reads and extends (``None``: embed in
            memory, nothing cached).
        overwrite: replace an existing ``out_dir``.
        progress: show rich progress bars.

    Returns:
        A :class:`KnownItemResult` (render it with ``rich.print``).

    Raises:
        HarnessInputError: unreadable corpus, unknown or unavailable system, ``out_dir`` exists without
            ``overwrite``.
    """
    if isinstance(systems, str):
        systems = [s.strip() for s in systems.split(",") if s.strip()]
    systems = list(dict.fromkeys(systems))
    if not systems:
        raise HarnessInputError("--systems: no system given")
    for s in systems:
        if s not in SYSTEMS:
            raise HarnessInputError(f"--systems: unknown system {s!r} (known: {', '.join(SYSTEMS)})")
    if out_dir is not None:  # refuse before any work: an output over an input, or a folder harness did not write
        check_output_location(out_dir, (corpus_dir, workdir))
        if Path(out_dir).exists() and not overwrite:
            raise HarnessInputError(f"--out {out_dir}: already exists; refusing to overwrite")
    t0 = time.perf_counter()
    cc = chunk_corpus(corpus_dir, chunk_words=chunk_words, query_words=query_words, min_tail_words=min_tail_words)
    t_chunk = time.perf_counter() - t0
    from harness.retrieve.analyzer import SpanishAnalyzer

    analyzer = SpanishAnalyzer()
    t1 = time.perf_counter()
    tokens = analyzer.tokenize_many(cc.texts)
    qtokens = analyzer.tokenize_many(cc.query_texts)
    t_tok = time.perf_counter() - t1
    id_rank = _id_rank(cc.chunk_ids)
    outcomes: dict[str, KnownItemOutcomes] = {}
    for name in systems:
        outcomes[name] = _run_system(
            name,
            cc,
            tokens,
            qtokens,
            id_rank,
            workers=workers,
            batch_size=batch_size,
            progress=progress,
            vector_model=vector_model,
            workdir=workdir,
        )
    qdoc = cc.chunk_doc[cc.query_chunks]
    n_docs_q = int(np.unique(qdoc).size)
    summary = {
        "corpus_id": cc.corpus_id,
        "corpus_hash": cc.corpus_hash,
        "corpus_dir": str(Path(corpus_dir).resolve()),
        "config": {
            "chunker_id": cc.chunker_id,
            "chunker_params": cc.chunker_params,
            "chunk_words": chunk_words,
            "query_words": query_words,
            "analyzer": analyzer.config(),
            "systems": systems,
            "workers": workers,
            "batch_size": batch_size,
            "tie_rule": "score descending, then chunk id ascending; positive scores only; query chunk excluded",
        },
        "counts": {
            "documents_in_corpus": len(cc.doc_ids),
            "chunks": cc.n_chunks,
            "queries": int(cc.query_chunks.size),
            "documents": n_docs_q,
            "skipped_short": cc.skipped_short,
            "excluded_single_chunk_docs": cc.excluded_single_chunk_docs,
            "excluded_single_chunk_chunks": cc.excluded_single_chunk_chunks,
        },
        "timing": {"chunk_seconds": round(t_chunk, 3), "tokenize_seconds": round(t_tok, 3)},
        "systems": {name: _system_summary(cc, o) for name, o in outcomes.items()},
        "paired": {},
        "published": PUBLISHED,
    }
    first = systems[0]
    for name in systems[1:]:
        summary["paired"][f"{first} vs {name}"] = paired_comparison(outcomes[first].hit, outcomes[name].hit, qdoc)
    summary["timing"]["total_seconds"] = round(time.perf_counter() - t0, 3)
    result = KnownItemResult(
        out_dir=Path(out_dir) if out_dir is not None else None, summary=summary, corpus=cc, outcomes=outcomes
    )
    if out_dir is not None:
        _write_outputs(Path(out_dir), cc, outcomes, summary, overwrite=overwrite, inputs=(corpus_dir, workdir))
    return result


def _write_outputs(
    out: Path,
    cc: ChunkedCorpus,
    outcomes: dict[str, KnownItemOutcomes],
    summary: dict,
    *,
    overwrite: bool,
    inputs: Sequence,
) -> None:
    qdoc = cc.chunk_doc[cc.query_chunks]
    with atomic_directory(out, overwrite=overwrite, inputs=inputs, kind="known-item") as tmp:
        buf = io.BytesIO()
        with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz:
            for o in outcomes.values():
                gz.write(("\n".join(_outcome_lines(cc, o)) + "\n").encode("utf-8"))
        (tmp / "outcomes.jsonl.gz").write_bytes(buf.getvalue())
        lines = []
        for name, o in outcomes.items():
            n, s = _per_doc(o.hit, qdoc, len(cc.doc_ids))
            for di in np.flatnonzero(n > 0):
                lines.append(
                    json.dumps(
                        {
                            "system": name,
                            "doc_id": cc.doc_ids[di],
                            "doc_type": cc.doc_types[di],
                            "collection": cc.collections[di],
                            "n": int(n[di]),
                            "s": int(s[di]),
                            "rate": float(s[di] / n[di]),
                        },
                        ensure_ascii=False,
                    )
                )
        (tmp / "per_document.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        atomic_write_json(tmp / "summary.json", summary)


def read_outcomes(path: str | Path, *, system: str | None = None) -> list[dict]:
    """Read ``outcomes.jsonl.gz`` (optionally one system's records).

    Raises:
        HarnessInputError: missing or malformed file.
    """
    return [rec for _, rec in read_jsonl(path) if system is None or rec.get("system") == system]


# --------------------------------------------------------------------------------------------------------------
# Chunk-size sensitivity
# --------------------------------------------------------------------------------------------------------------


@dataclass
class SensitivityResult:
    """The same known-item study at several chunk sizes.

    Attributes:
        out_dir: parent folder (one sub-folder ``words-<n>`` per size, plus ``sensitivity.json``).
        rows: one dict per size (micro, macro, ICC, DEFF, lag-1, queries, ...).
        runs: ``{chunk_words: KnownItemResult}``.
    """

    out_dir: Path | None
    rows: list[dict]
    runs: dict[int, KnownItemResult] = field(default_factory=dict)

    def __rich__(self):
        from rich.table import Table

        t = Table(title="Chunk-size sensitivity of known-item hit@1")
        for col in ("chunk words", "system", "queries", "docs", "micro", "macro", "ICC", "DEFF", "lag-1 r", "q/s"):
            t.add_column(col, justify="right")
        for r in self.rows:
            t.add_row(
                str(r["chunk_words"]),
                r["system"],
                str(r["queries"]),
                str(r["documents"]),
                _fmt_pct(r["micro_hit1"]),
                _fmt_pct(r["macro_hit1"]),
                f"{r['icc']:.3f}",
                f"{r['deff']:.1f}",
                f"{r['lag1_autocorrelation']:.3f}",
                f"{r['queries_per_second']:.0f}",
            )
        return t


def run_chunk_size_sensitivity(
    corpus_dir: str | Path,
    out_dir: str | Path | None,
    *,
    sizes: Sequence[int] = (50, 100, 400),
    query_words: int = 20,
    systems: Sequence[str] | str = ("bm25",),
    workers: int = 2,
    vector_model: str | None = None,
    workdir: str | Path | None = None,
    overwrite: bool = False,
    progress: bool = False,
) -> SensitivityResult:
    """Run :func:`run_known_item` at several chunk sizes (``md-words-v1`` rules, ``min_tail_words`` 20).

    Args:
        corpus_dir: corpus folder.
        out_dir: parent output folder; each size goes to ``out_dir/words-<n>``; ``None`` writes nothing.
        sizes: chunk sizes in words.
        query_words, systems, workers, vector_model, workdir, overwrite, progress: as in :func:`run_known_item`.

    Returns:
        A :class:`SensitivityResult`.
    """
    if out_dir is not None:
        check_output_location(out_dir, (corpus_dir, workdir))
    rows = []
    runs = {}
    for size in sizes:
        sub = None if out_dir is None else Path(out_dir) / f"words-{size}"
        res = run_known_item(
            corpus_dir,
            sub,
            chunk_words=size,
            query_words=query_words,
            systems=systems,
            workers=workers,
            vector_model=vector_model,
            workdir=workdir,
            overwrite=overwrite,
            progress=progress,
        )
        runs[size] = res
        for name, s in res.summary["systems"].items():
            d = s["diagnostics"]
            rows.append(
                {
                    "chunk_words": size,
                    "system": name,
                    "queries": s["queries"],
                    "documents": s["documents"],
                    "micro_hit1": s["micro_hit1"],
                    "macro_hit1": s["macro_hit1"],
                    "icc": d["icc"],
                    "deff": d["deff"],
                    "lag1_autocorrelation": d["lag1_autocorrelation"],
                    "queries_per_second": s["queries_per_second"],
                    "skipped_short": res.summary["counts"]["skipped_short"],
                }
            )
    if out_dir is not None:
        atomic_write_json(Path(out_dir) / "sensitivity.json", {"rows": rows, "published": PUBLISHED})
    return SensitivityResult(Path(out_dir) if out_dir is not None else None, rows, runs)


@dataclass
class StudyResult:
    """The whole study on one corpus: the known-item run, then the coverage study on its first system.

    Attributes:
        known_item: the :class:`KnownItemResult` (files in ``out_dir``).
        coverage: the :class:`harness.studies.coverage.CoverageResult` (``coverage.json``, ``coverage.csv`` and plots
            in the same folder).
    """

    known_item: KnownItemResult
    coverage: CoverageResult

    def __rich__(self):
        from rich.console import Group

        return Group(self.known_item, self.coverage)


def run_study(
    corpus_dir: str | Path,
    out_dir: str | Path,
    *,
    chunk_words: int = 100,
    query_words: int = 20,
    min_tail_words: int = 20,
    systems: Sequence[str] | str = ("bm25", "tfidf"),
    reps: int = 5000,
    ks: Sequence[int] = (5, 10, 20, 40, 80),
    types: int = 6,
    per_type: int = 4,
    b: int = 999,
    seed: int = 0,
    workers: int = 2,
    vector_model: str | None = None,
    workdir: str | Path | None = None,
    overwrite: bool = False,
    progress: bool = False,
) -> StudyResult:
    """Known-item run plus coverage study in one call (the issue's "full study from one command").

    Args:
        corpus_dir, out_dir, chunk_words, query_words, min_tail_words, systems, workers, vector_model, workdir,
            overwrite, progress: as in :func:`run_known_item`.
        reps, ks, types, per_type, b, seed: as in :func:`harness.studies.coverage.run_coverage` (population = the first
            system's outcomes).

    Returns:
        A :class:`StudyResult`.
    """
    ki = run_known_item(
        corpus_dir,
        out_dir,
        chunk_words=chunk_words,
        query_words=query_words,
        min_tail_words=min_tail_words,
        systems=systems,
        workers=workers,
        vector_model=vector_model,
        workdir=workdir,
        overwrite=overwrite,
        progress=progress,
    )
    first = next(iter(ki.summary["systems"]))
    cov = run_coverage(
        out_dir, reps=reps, ks=ks, types=types, per_type=per_type, b=b, seed=seed, system=first, threads=workers
    )
    return StudyResult(ki, cov)


def load_per_document(out_dir: str | Path) -> list[dict]:
    """Read ``per_document.jsonl`` of a known-item output folder (records with system, doc_id, n, s, ...)."""
    path = Path(out_dir) / "per_document.jsonl"
    recs = []
    for line, obj in read_jsonl(path):
        for k in ("system", "doc_id", "n", "s"):
            if k not in obj:
                raise HarnessInputError(f"{path}:{line}: record {obj.get('doc_id', '?')}: field {k}: missing")
        recs.append(obj)
    if not recs:
        raise HarnessInputError(f"{path}: no records")
    return recs
