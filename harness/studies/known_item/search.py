"""Rules 4-5 of the known-item study (:mod:`harness.studies.known_item`): the dense block search kernel.

For a block of queries a :class:`Scorer` fills a dense float32 block of scores against every chunk; the outcomes
(hit, rank of the first same-document chunk, ties) are then a few vectorised passes over the block. Blocks run on
``workers`` forked processes (the index is shared copy-on-write), threads where the platform cannot fork.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

__all__ = ["KnownItemOutcomes", "Scorer", "known_item_search"]


class Scorer(Protocol):
    """What :func:`known_item_search` scores with (:class:`~harness.studies.known_item.scorers.SparseScorer`,
    :class:`~harness.studies.known_item.scorers.HammingScorer`).

    Attributes:
        n_queries: Q.
        n_chunks: N.
        dtype: dtype of the score block (float32 or wider).
    """

    n_queries: int
    n_chunks: int
    dtype: np.dtype

    def empty_queries(self) -> np.ndarray:
        """shape (Q,), bool: queries that cannot score anything (no index term)."""
        ...

    def __call__(self, out: np.ndarray, start: int, stop: int) -> np.ndarray:
        """Fill ``out[: stop - start]`` (shape (stop - start, N)) with the non-negative scores of queries
        ``start:stop`` against every chunk and return that view."""
        ...


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
    scorer: Scorer,
    query_chunks: np.ndarray,
    chunk_doc: np.ndarray,
    id_rank: np.ndarray,
    *,
    batch_size: int = 32,
    workers: int = 2,
    task_queries: int = 512,
    progress: Callable[[int], None] | None = None,
    backend: str = "auto",
) -> tuple[np.ndarray, ...]:
    """Score every query against every chunk and return the known-item outcomes (rules 4-5 of the package docstring).

    Args:
        scorer: a :class:`Scorer`: fills ``out[: stop - start]`` (shape (stop - start, N)) with the scores of
            queries ``start:stop`` against every chunk and returns that view. Scores are non-negative; only
            positive ones count as retrieved.
        query_chunks: shape (Q,), the chunk each query came from (excluded from its own search).
        chunk_doc: shape (N,), non-decreasing document index per chunk (each document's chunks contiguous).
        id_rank: shape (N,), position of each chunk id in ascending string order (the tie rule).
        batch_size: queries per block (memory: ``batch_size * N * 4`` bytes per worker).
        workers: parallel workers: forked processes where the platform can fork (the index is shared
            copy-on-write; the per-term numpy calls are too small to scale on threads), threads elsewhere.
        task_queries: queries per task handed to a worker (rounded to whole blocks).
        progress: called with the number of queries finished in each block.
        backend: ``"auto"``: a float32 sparse scorer (``bm25``, ``tfidf``) runs the compiled kernel of
            :mod:`._numba` on ``workers`` threads when numba is installed (same outcomes, one row at a time);
            ``"numpy"``: the dense blocks always.

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
    if backend == "auto" and _sparse_kernel(scorer) is not None:
        return _sparse_kernel(scorer)(scorer, query_chunks, q_lo, q_hi, id_rank, max(1, workers), progress)
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


def _sparse_kernel(scorer):
    """The compiled outcome kernel for a float32 sparse scorer, or None (another scorer, or no numba)."""
    if not hasattr(scorer, "index_t") or np.dtype(scorer.dtype) != np.float32:
        return None
    try:
        from harness.studies.known_item._numba import sparse_outcomes
    except ImportError:
        return None
    return sparse_outcomes


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
