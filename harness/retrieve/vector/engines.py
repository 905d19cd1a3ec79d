"""Hamming search engines over the packed chunk bits of a vector index: sqlite-vec, numpy and faiss.

An engine returns, per query, a **tie-complete candidate set**: slice positions and Hamming distances that hold
every slice chunk closer than the farthest candidate, at least ``chunk_depth`` chunks and ``doc_depth`` distinct
documents (or every slice chunk). The exact rankings under the tie rule are then computed on that set
(:meth:`harness.retrieve.vector.VectorIndex.search_packed`), so all three engines return identical rankings, scores
and flags.

* ``numpy``: an exact popcount scan of every slice chunk (queries in blocks of :data:`NUMPY_BLOCK`), then the tie
  completion below over each query's distance row (``argpartition``: ranking the whole slice per query cost 1.5 s a
  query at DOF's 6.5 M chunks);
* ``sqlite-vec``: a KNN query on the vec0 table per query (``doc_pos < P`` for a partial slice); sqlite-vec's order
  among equal distances is a storage artefact, hence the tie completion below. sqlite-vec caps ``k`` at
  :data:`SQLITE_VEC_K_MAX`: past it the query falls back to the numpy scan of the same bits (flag
  ``knn_fallback="numpy"``);
* ``faiss`` (optional ``faiss-cpu``, extra ``faiss``): every pending query at once in one ``IndexBinaryFlat.search``
  per round, over a copy of the slice bits in memory (``n * dim / 8`` bytes; faiss's binary codes are the same
  bytes, and Hamming distance does not depend on the bit order within a byte). faiss breaks distance ties
  arbitrarily, hence the same tie completion.

Tie completion (:func:`tie_complete`, shared by the three engines): fetch the ``k`` nearest, ``k`` starting at
``2 * max(chunk_depth, doc_depth) + 16``; unless the fetch holds the whole slice, keep only the chunks strictly
closer than the ``k``-th distance (an exact ``k``-nearest set holds every chunk at those distances); a query whose
kept set holds fewer than ``chunk_depth`` chunks or ``doc_depth`` documents is fetched again with ``4 k``, until
``k`` reaches the slice size.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from harness.errors import HarnessInputError
from harness.retrieve.binary import hamming_distances

__all__ = [
    "BACKENDS",
    "FAISS_MISSING",
    "SQLITE_VEC_K_MAX",
    "Candidates",
    "FaissEngine",
    "HammingEngine",
    "NumpyEngine",
    "SqliteVecEngine",
    "tie_complete",
]

SQLITE_VEC_K_MAX = 4096
"""sqlite-vec refuses ``k`` above this in a KNN query."""

NUMPY_BLOCK = 8
"""Queries per numpy scan block: the block's distance rows are ``NUMPY_BLOCK * n * 4`` bytes (208 MB at 6.5 M)."""

BACKENDS = ("sqlite-vec", "numpy", "faiss")
"""The engines; all return identical rankings, scores and flags."""

FAISS_MISSING = "faiss backend unavailable: pip install faiss-cpu"

Candidates = tuple[np.ndarray | None, np.ndarray, dict]
"""``(positions, distances, flags)`` of one query: ``int64`` slice positions (``None``: every slice chunk, in slice
order) and their Hamming distances, plus flags such as ``{"knn_fallback": "numpy"}``."""

Fetch = Callable[[Sequence[int], int], list[tuple[np.ndarray, np.ndarray]]]


class HammingEngine(Protocol):
    """A search engine: tie-complete candidates per packed query."""

    name: str

    def candidates(self, q: np.ndarray, chunk_depth: int, doc_depth: int) -> list[Candidates]:
        """Candidates for each row of ``q`` (``uint8 (m, dim/8)``, binarised like the index's chunks)."""
        ...


def tie_complete(
    fetch: Fetch,
    m: int,
    n: int,
    chunk_depth: int,
    doc_depth: int,
    doc_idx: np.ndarray,
    *,
    k_max: int | None = None,
) -> list[tuple[np.ndarray, np.ndarray] | None]:
    """The tie-completion loop of the module docstring, in rounds over every pending query.

    Args:
        fetch: ``fetch(queries, k)`` -> per query ``(positions int64, distances int64)`` of its ``k`` nearest slice
            chunks (an exact ``k``-nearest set, any order within a distance), sorted by distance ascending.
        m: number of queries; n: slice size.
        chunk_depth, doc_depth: what the set must hold.
        doc_idx: ``(n,)`` each slice chunk's document index.
        k_max: the engine's largest ``k`` (``None``: unbounded).

    Returns:
        Per query ``(positions, distances)``, or ``None`` when completing it needed ``k > k_max``.
    """
    empty = np.empty(0, dtype=np.int64)
    if n == 0 or (chunk_depth == 0 and doc_depth == 0):
        return [(empty, empty) for _ in range(m)]
    results: list[tuple[np.ndarray, np.ndarray] | None] = [None] * m
    todo = list(range(m))
    k = 2 * max(chunk_depth, doc_depth) + 16  # overshoot: a second round costs as much as a scan
    while todo:
        k = min(k, n)
        if k_max is not None and k > k_max:
            break
        retry = []
        for qi, (idx, d) in zip(todo, fetch(todo, k), strict=True):
            exhausted = idx.shape[0] < k or k == n
            if not exhausted:
                keep = d < d[-1]
                idx, d = idx[keep], d[keep]
            if exhausted or (idx.shape[0] >= chunk_depth and np.unique(doc_idx[idx]).shape[0] >= doc_depth):
                results[qi] = (idx, d)
            else:
                retry.append(qi)
        todo = retry
        k *= 4
    return results


class NumpyEngine:
    """Exact popcount scan of every slice chunk, tie-completed per query on its distance row.

    Args:
        bits: ``bits() -> uint8 (n, dim/8)``, the slice's packed bits in slice order (read lazily).
        doc_idx: ``(n,)`` each slice chunk's document index.
    """

    name = "numpy"

    def __init__(self, bits: Callable[[], np.ndarray], doc_idx: np.ndarray):
        self._bits = bits
        self._doc_idx = doc_idx

    def candidates(self, q: np.ndarray, chunk_depth: int, doc_depth: int) -> list[Candidates]:
        """Tie-complete candidates per query (:func:`tie_complete`) from its exact distances to every slice chunk."""
        bits = self._bits()
        n = bits.shape[0]
        out: list[Candidates] = []
        for start in range(0, q.shape[0], NUMPY_BLOCK):
            dist = hamming_distances(q[start : start + NUMPY_BLOCK], bits)

            def fetch(todo: Sequence[int], k: int, dist=dist) -> list[tuple[np.ndarray, np.ndarray]]:
                got = []
                for r in todo:
                    row = dist[r]
                    part = np.argpartition(row, k - 1)[:k] if k < n else np.arange(n)
                    idx = part[np.argsort(row[part], kind="stable")].astype(np.int64)
                    got.append((idx, row[idx].astype(np.int64)))
                return got

            done = tie_complete(fetch, dist.shape[0], n, chunk_depth, doc_depth, self._doc_idx)
            out.extend((idx, d, {}) for idx, d in done)  # type: ignore[misc]
        return out


class SqliteVecEngine:
    """KNN queries on the vec0 table, tie-completed, with the numpy scan past :data:`SQLITE_VEC_K_MAX`.

    Args:
        conn: the corpus database connection (sqlite-vec loaded).
        table: the vec0 table.
        slot: ``(max_rowid + 1,)`` slice position of each chunk rowid (-1 outside the slice).
        doc_idx: ``(n,)`` each slice chunk's document index.
        max_pos: documents ``doc_pos < max_pos`` are in the slice; ``None``: the whole table.
        bits: as for :class:`NumpyEngine` (the fallback).
        stats: counters ``knn_calls`` and ``knn_fallbacks`` (updated).
    """

    name = "sqlite-vec"

    def __init__(self, conn, table: str, slot: np.ndarray, doc_idx: np.ndarray, max_pos: int | None, bits, stats: dict):
        self.conn, self.table, self._slot, self._doc_idx = conn, table, slot, doc_idx
        self._max_pos, self._bits, self.stats = max_pos, bits, stats

    def _knn(self, qblob: bytes, k: int) -> tuple[np.ndarray, np.ndarray]:
        self.stats["knn_calls"] += 1
        sql = f'SELECT rowid, distance FROM "{self.table}" WHERE embedding MATCH vec_bit(?) AND k = ?'
        args: tuple = (qblob, k)
        if self._max_pos is not None:
            sql += " AND doc_pos < ?"
            args += (self._max_pos,)
        rows = self.conn.execute(sql, args).fetchall()
        rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        dist = np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows)).astype(np.int64)
        idx = self._slot[rowids]
        if (idx < 0).any():
            raise HarnessInputError(f"{self.table}: KNN returned a chunk outside the indexed slice")
        return idx, dist

    def candidates(self, q: np.ndarray, chunk_depth: int, doc_depth: int) -> list[Candidates]:
        """Tie-complete KNN candidates per query; the numpy scan for a query that needs ``k`` past the cap."""
        blobs = [row.tobytes() for row in q]
        got = tie_complete(
            lambda todo, k: [self._knn(blobs[i], k) for i in todo],
            q.shape[0],
            self._doc_idx.shape[0],
            chunk_depth,
            doc_depth,
            self._doc_idx,
            k_max=SQLITE_VEC_K_MAX,
        )
        out: list[Candidates] = []
        for qi, cand in enumerate(got):
            if cand is None:
                self.stats["knn_fallbacks"] += 1
                out.append((None, hamming_distances(q[qi], self._bits()), {"knn_fallback": "numpy"}))
            else:
                out.append((cand[0], cand[1], {}))
        return out


class FaissEngine:
    """``faiss.IndexBinaryFlat`` over the slice bits (built on first use), tie-completed in batched rounds.

    Args:
        dim: bits per vector.
        bits: as for :class:`NumpyEngine`.
        doc_idx: ``(n,)`` each slice chunk's document index.
        stats: counter ``faiss_searches`` (one per round; updated).

    Raises:
        HarnessInputError: faiss is not installed (on first search).
    """

    name = "faiss"

    def __init__(self, dim: int, bits, doc_idx: np.ndarray, stats: dict):
        self.dim, self._bits, self._doc_idx, self.stats = int(dim), bits, doc_idx, stats
        self._index = None

    def index(self):
        """The ``faiss.IndexBinaryFlat`` of the slice's bits (built once)."""
        if self._index is None:
            try:
                import faiss
            except ImportError:
                raise HarnessInputError(FAISS_MISSING) from None
            index = faiss.IndexBinaryFlat(self.dim)
            bits = self._bits()
            if bits.shape[0]:
                index.add(np.ascontiguousarray(bits))
            self._index = index
        return self._index

    def candidates(self, q: np.ndarray, chunk_depth: int, doc_depth: int) -> list[Candidates]:
        """Tie-complete candidates of every query, all pending queries in one faiss search per round."""
        index = self.index()

        def fetch(todo: Sequence[int], k: int) -> list[tuple[np.ndarray, np.ndarray]]:
            self.stats["faiss_searches"] += 1
            dist, lab = index.search(q[np.asarray(todo, dtype=np.int64)], k)
            return [(lab[r].astype(np.int64), dist[r].astype(np.int64)) for r in range(len(todo))]

        got = tie_complete(fetch, q.shape[0], self._doc_idx.shape[0], chunk_depth, doc_depth, self._doc_idx)
        return [(idx, d, {}) for idx, d in got]  # type: ignore[misc]
