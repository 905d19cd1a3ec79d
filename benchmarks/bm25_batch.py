"""Compatibility shim: the batched BM25 path now lives in the library (``BM25Index.search_many``).

The kernel (numba, with a numpy fallback) is :meth:`harness.retrieve.bm25.BM25Index.search_many`, and
``BM25System.search`` uses it. This module keeps the names the benchmarks import (``search_many``,
``search_system_many``, ``default_threads``, ``HAVE_NUMBA``) as thin wrappers; it holds no kernel of its own.
``per_query_system_search`` is the former per-query ``BM25System.search`` loop (``BM25Index.search`` on both indexes,
one query at a time), kept as the reference the benchmarks compare against.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from harness.retrieve.base import QueryResult, Ranking
from harness.retrieve.bm25 import combine_levels, have_numba

HAVE_NUMBA = have_numba()

__all__ = ["HAVE_NUMBA", "search_many", "search_system_many", "per_query_system_search", "default_threads"]


def search_many(
    index,
    texts: Sequence,
    depth: int,
    *,
    n_threads: int | None = None,
    analysed: bool = False,
    backend: str = "auto",
) -> list[tuple[Ranking, dict]]:
    """``index.search_many(...)`` (see :meth:`harness.retrieve.bm25.BM25Index.search_many`)."""
    return index.search_many(texts, depth, analysed=analysed, n_threads=n_threads, backend=backend)


def search_system_many(
    system,
    queries: Sequence[str],
    *,
    doc_depth: int,
    chunk_depth: int,
    n_threads: int | None = None,
    backend: str = "auto",
) -> list[QueryResult]:
    """``system.search(queries, ...)`` with an explicit thread count and backend (``auto``, ``numba``, ``numpy``)."""
    terms = [system.analyzer.tokenize(q) for q in queries]
    kw = {"n_threads": n_threads, "analysed": True, "backend": backend}
    return combine_levels(
        system.doc_index.search_many(terms, doc_depth, **kw), system.chunk_index.search_many(terms, chunk_depth, **kw)
    )


def per_query_system_search(system, queries: Sequence[str], *, doc_depth: int, chunk_depth: int) -> list[QueryResult]:
    """The former ``BM25System.search``: ``BM25Index.search`` per query on both indexes (the reference path)."""
    return combine_levels(
        [system.doc_index.search(q, doc_depth) for q in queries],
        [system.chunk_index.search(q, chunk_depth) for q in queries],
    )


def default_threads() -> int:
    """Threads the batched path uses by default (``numba``'s setting, else the CPU count)."""
    if HAVE_NUMBA:
        import numba

        return numba.get_num_threads()
    return os.cpu_count() or 1
