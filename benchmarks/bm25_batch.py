"""A batched BM25 search path over the harness's persisted bm25s indexes (a proposal for ``harness.retrieve.bm25``).

Why: ``BM25Index.search`` answers one query at a time through ``bm25s.BM25.get_scores`` (one ``np.add.at`` per query
term over a dense score vector) and :func:`harness.retrieve.bm25.top_k_exact` (a full pass over all scores). Both
are O(number of items) per query in numpy. Evaluation always has every query at once, so this module scores a whole
batch in one compiled kernel that touches only the postings of the query terms:

* scores are accumulated exactly as bm25s does (term by term in query order, ``float32`` additions in posting
  order; bm25s ``_compute_relevance_from_scores``), so every score is bit-identical to ``get_scores``;
* the candidates are the items touched by some query term, kept when their score is positive (the harness's
  positive-scores-only rule);
* the ranking is the exact top ``depth`` under (score descending, id ascending), with the boundary tie flagged the
  same way as ``BM25Index.search``;
* queries are split into one contiguous block per thread; each block reuses one dense buffer and resets only the
  entries it touched.

numba is optional (it is installed with ``ranx`` and bm25s's ``core`` extra). Without it the same results come from a
numpy loop (:func:`search_terms_numpy`), which still avoids ``np.add.at`` (postings of one term hold each item at
most once, so a fancy-index ``+=`` adds in the same order and gives the same floats).

Public entry points: :func:`search_many` (one :class:`~harness.retrieve.bm25.BM25Index`) and
:func:`search_system_many` (the ``bm25`` system: documents and chunks, the same ``QueryResult`` objects as
``BM25System.search``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from harness.retrieve.base import QueryResult, Ranking
from harness.retrieve.bm25 import top_k_exact

try:  # optional accelerator
    import numba
    from numba import njit, prange

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised where numba is absent
    numba = None
    HAVE_NUMBA = False

__all__ = [
    "HAVE_NUMBA",
    "query_token_ids",
    "terms_to_ids",
    "search_terms",
    "search_terms_numpy",
    "search_many",
    "search_system_many",
]


def query_token_ids(index, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Analyse ``texts`` and map their terms to the index's token ids (unknown terms dropped, repeats kept).

    Returns:
        ``(q_ptr, q_tok)``: CSR-style layout, ``q_tok[q_ptr[i]:q_ptr[i+1]]`` are query ``i``'s token ids
        (``int64``), in the analyser's order (the order bm25s sums them in).
    """
    vocab = index.vocab
    tok = index.analyzer.tokenize
    lens = np.zeros(len(texts) + 1, dtype=np.int64)
    flat: list[int] = []
    for i, t in enumerate(texts):
        ids = [vocab[w] for w in tok(t) if w in vocab]
        flat.extend(ids)
        lens[i + 1] = len(ids)
    return np.cumsum(lens), np.asarray(flat, dtype=np.int64)


def _arrays(index):
    s = index.retriever.scores
    return np.asarray(s["data"]), np.asarray(s["indices"]), np.asarray(s["indptr"]), int(s["num_docs"])


def search_terms_numpy(index, q_ptr: np.ndarray, q_tok: np.ndarray, depth: int):
    """numpy fallback of :func:`search_terms`: one query at a time, same results.

    Scores are accumulated with a fancy-index ``+=`` per term instead of bm25s's ``np.add.at`` (the postings of one
    term hold each item at most once, so the additions and their order are the same); the selection is
    :func:`harness.retrieve.bm25.top_k_exact`.
    """
    data, indices, indptr, n = _arrays(index)
    id_rank = index._id_rank
    nq = q_ptr.size - 1
    out_idx = np.full((nq, depth), -1, dtype=np.int64)
    out_sc = np.zeros((nq, depth), dtype=np.float32)
    out_n = np.zeros(nq, dtype=np.int64)
    out_tie = np.zeros(nq, dtype=np.bool_)
    for q in range(nq):
        toks = q_tok[q_ptr[q] : q_ptr[q + 1]]
        if toks.size == 0:
            continue
        sc = np.zeros(n, dtype=data.dtype)
        for t in toks.tolist():
            a, b = indptr[t], indptr[t + 1]
            sc[indices[a:b]] += data[a:b]
        top = top_k_exact(sc, id_rank, depth)
        k = top.size
        out_idx[q, :k] = top
        out_sc[q, :k] = sc[top]
        out_n[q] = k
        if k == depth:
            last = sc[top[-1]]
            out_tie[q] = np.count_nonzero(sc == last) > np.count_nonzero(sc[top] == last)
    return out_idx, out_sc, out_n, out_tie


if HAVE_NUMBA:

    @njit(cache=True, inline="always")
    def _worse(s1, r1, s2, r2):
        """Is (score s1, id rank r1) ranked after (s2, r2) under (score desc, id asc)?"""
        return s1 < s2 or (s1 == s2 and r1 > r2)

    @njit(cache=True, nogil=True)
    def _sift_down(hs, hr, hi, pos, length):
        s, r, d = hs[pos], hr[pos], hi[pos]
        while True:
            c = 2 * pos + 1
            if c >= length:
                break
            if c + 1 < length and _worse(hs[c + 1], hr[c + 1], hs[c], hr[c]):
                c += 1
            if not _worse(hs[c], hr[c], s, r):
                break
            hs[pos], hr[pos], hi[pos] = hs[c], hr[c], hi[c]
            pos = c
        hs[pos], hr[pos], hi[pos] = s, r, d

    @njit(cache=True, nogil=True)
    def _sift_up(hs, hr, hi, pos):
        s, r, d = hs[pos], hr[pos], hi[pos]
        while pos > 0:
            p = (pos - 1) >> 1
            if not _worse(s, r, hs[p], hr[p]):
                break
            hs[pos], hr[pos], hi[pos] = hs[p], hr[p], hi[p]
            pos = p
        hs[pos], hr[pos], hi[pos] = s, r, d

    @njit(cache=True, nogil=True)
    def _offer(s, r, d, hs, hr, hx, length, k):
        """Offer item ``d`` (score ``s``, id rank ``r``) to the heap of the ``k`` best; returns the new length."""
        if length < k:
            hs[length], hr[length], hx[length] = s, r, d
            _sift_up(hs, hr, hx, length)
            return length + 1
        if _worse(hs[0], hr[0], s, r):
            hs[0], hr[0], hx[0] = s, r, d
            _sift_down(hs, hr, hx, 0, length)
        return length

    @njit(cache=True, nogil=True)
    def _block(lo, hi, q_ptr, q_tok, data, indices, indptr, id_rank, k, out_idx, out_sc, out_n, out_tie, buf, touched):
        """Queries ``lo..hi-1``: accumulate, keep positives, heap top-k, tie flag, reset the buffer.

        Two equivalent strategies, chosen per query by its number of postings P against the number of items N:

        * sparse (P < N / 8): record each item when its score first turns positive (branch-free; bm25s's
          precomputed per-posting scores are >= 0 -- lucene idf > 0, robertson floors idf at 0 -- so a score never
          decreases), then select among those items only and reset only them;
        * dense: scan all N scores against the running threshold (the test that is almost always false comes
          first, so the branch predicts well), remembering the items offered to the heap (every item scoring the
          final threshold is among them, which gives the tie count), then clear the buffer.
        """
        n_items = buf.shape[0]
        hs = np.empty(k, dtype=np.float32)
        hr = np.empty(k, dtype=np.int64)
        hx = np.empty(k, dtype=np.int64)
        for q in range(lo, hi):
            n_post = 0
            for p in range(q_ptr[q], q_ptr[q + 1]):
                n_post += indptr[q_tok[p] + 1] - indptr[q_tok[p]]
            sparse = n_post * 8 < n_items
            m = 0
            for p in range(q_ptr[q], q_ptr[q + 1]):
                t = q_tok[p]
                if sparse:
                    for j in range(indptr[t], indptr[t + 1]):
                        d = indices[j]
                        old = buf[d]
                        new = old + data[j]
                        buf[d] = new
                        touched[m] = d
                        m += (old == 0) & (new > 0)
                else:
                    for j in range(indptr[t], indptr[t + 1]):
                        buf[indices[j]] += data[j]
            length = 0
            thr = np.float32(0.0)
            if sparse:
                for i in range(m):
                    d = touched[i]
                    s = buf[d]
                    if s >= thr:
                        length = _offer(s, id_rank[d], d, hs, hr, hx, length, k)
                        if length == k:
                            thr = hs[0]
            else:
                for d in range(n_items):
                    s = buf[d]
                    if s >= thr and s > 0:
                        touched[m] = d  # every item offered; the tie count below needs only these
                        m += 1
                        length = _offer(s, id_rank[d], d, hs, hr, hx, length, k)
                        if length == k:
                            thr = hs[0]
            if length == k:
                last = hs[0]
                n_eq = 0  # an item scoring `last` was offered (its score was >= the threshold then)
                for i in range(m):
                    n_eq += buf[touched[i]] == last
                n_top = 0
                for r in range(k):
                    n_top += hs[r] == last
                out_tie[q] = n_eq > n_top
            out_n[q] = length
            while length > 0:  # pop worst first into the last free slot
                out_idx[q, length - 1] = hx[0]
                out_sc[q, length - 1] = hs[0]
                length -= 1
                hs[0], hr[0], hx[0] = hs[length], hr[length], hx[length]
                _sift_down(hs, hr, hx, 0, length)
            if sparse:
                for i in range(m):
                    buf[touched[i]] = 0
            else:
                buf[:] = 0

    @njit(cache=True, parallel=True)
    def _search_parallel(bounds, q_ptr, q_tok, data, indices, indptr, n_items, id_rank, k, o_idx, o_sc, o_n, o_tie):
        for b in prange(bounds.shape[0] - 1):
            buf = np.zeros(n_items, dtype=data.dtype)
            touched = np.empty(n_items + 1, dtype=np.int64)  # one spare slot: the branch-free write
            _block(bounds[b], bounds[b + 1], q_ptr, q_tok, data, indices, indptr, id_rank, k, o_idx, o_sc, o_n,
                   o_tie, buf, touched)  # fmt: skip


def search_terms(
    index, q_ptr: np.ndarray, q_tok: np.ndarray, depth: int, *, n_threads: int | None = None, backend: str = "auto"
):
    """Top ``depth`` items of every query of a batch (token ids, see :func:`query_token_ids`).

    Args:
        index: a :class:`harness.retrieve.bm25.BM25Index` (its bm25s score matrix and id ranks are used).
        q_ptr, q_tok: the batch (CSR layout).
        depth: ranking depth (>= 1).
        backend: ``"auto"`` (numba when installed), ``"numba"`` or ``"numpy"``.
        n_threads: numba threads (default: one per 500 queries, at most ``numba.get_num_threads()``); 1 runs in the
            calling thread.

    Returns:
        ``(idx, scores, n, tie)``: ``idx`` ``(n_queries, depth)`` ``int64`` item positions in canonical order
        (``-1`` padded), ``scores`` the matching ``float32`` scores (bit-identical to ``get_scores``), ``n`` the
        number of items ranked per query, ``tie`` whether an item left out scores the same as the last one kept.
    """
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    if backend not in ("auto", "numba", "numpy"):
        raise ValueError(f"backend must be auto, numba or numpy, got {backend!r}")
    if backend == "numba" and not HAVE_NUMBA:
        raise ImportError("numba is not installed")
    if backend == "numpy" or not HAVE_NUMBA:
        return search_terms_numpy(index, q_ptr, q_tok, depth)
    data, indices, indptr, n = _arrays(index)
    nq = q_ptr.size - 1
    o_idx = np.full((nq, depth), -1, dtype=np.int64)
    o_sc = np.zeros((nq, depth), dtype=np.float32)
    o_n = np.zeros(nq, dtype=np.int64)
    o_tie = np.zeros(nq, dtype=np.bool_)
    if n_threads is None:  # threads pay off on large batches only (and not at all on a loaded machine)
        n_threads = max(1, min(numba.get_num_threads(), nq // 500))
    nt = max(1, min(n_threads, nq or 1))
    bounds = np.linspace(0, nq, nt + 1).astype(np.int64)
    rank = np.ascontiguousarray(index._id_rank, dtype=np.int64)
    if nt == 1:
        buf = np.zeros(n, dtype=data.dtype)
        touched = np.empty(n + 1, dtype=np.int64)
        _block(0, nq, q_ptr, q_tok, data, indices, indptr, rank, depth, o_idx, o_sc, o_n, o_tie, buf, touched)
    else:
        old = numba.get_num_threads()
        numba.set_num_threads(min(nt, numba.config.NUMBA_NUM_THREADS))
        try:
            _search_parallel(bounds, q_ptr, q_tok, data, indices, indptr, n, rank, depth, o_idx, o_sc, o_n, o_tie)
        finally:
            numba.set_num_threads(old)
    return o_idx, o_sc, o_n, o_tie


_IDS: dict[int, tuple[list, np.ndarray]] = {}


def _id_array(index) -> np.ndarray:
    """``index.ids`` as a numpy object array, built once per index (in bm25.py: an attribute set in ``__init__``)."""
    hit = _IDS.get(id(index))
    if hit is None or hit[0] is not index.ids:
        hit = (index.ids, np.asarray(index.ids, dtype=object))
        _IDS[id(index)] = hit
    return hit[1]


def _rankings(index, idx, sc, n) -> list[Ranking]:
    ids = _id_array(index)
    out = []
    for row_i, row_s, k in zip(idx, sc, n.tolist(), strict=True):
        out.append(list(zip(ids[row_i[:k]].tolist(), row_s[:k].tolist(), strict=True)))
    return out


def terms_to_ids(index, term_lists: Sequence[Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
    """Like :func:`query_token_ids` for queries already analysed (lists of terms)."""
    vocab = index.vocab
    lens = np.zeros(len(term_lists) + 1, dtype=np.int64)
    flat: list[int] = []
    for i, terms in enumerate(term_lists):
        ids = [vocab[w] for w in terms if w in vocab]
        flat.extend(ids)
        lens[i + 1] = len(ids)
    return np.cumsum(lens), np.asarray(flat, dtype=np.int64)


def search_many(
    index,
    texts: Sequence[str],
    depth: int,
    *,
    n_threads: int | None = None,
    analysed: bool = False,
    backend: str = "auto",
) -> list[tuple[Ranking, dict]]:
    """``[index.search(t, depth) for t in texts]``, computed as one batch (same rankings, scores and flags).

    With ``analysed=True`` the queries are lists of analysed terms instead of texts.
    """
    q_ptr, q_tok = terms_to_ids(index, texts) if analysed else query_token_ids(index, texts)
    idx, sc, n, tie = search_terms(index, q_ptr, q_tok, depth, n_threads=n_threads, backend=backend)
    ranks = _rankings(index, idx, sc, n)
    out = []
    for i, r in enumerate(ranks):
        flags: dict = {}
        if q_ptr[i + 1] == q_ptr[i]:
            flags["empty_query"] = True
        elif tie[i]:
            flags["tie_at_boundary"] = True
        out.append((r, flags))
    return out


def search_system_many(
    system,
    queries: Sequence[str],
    *,
    doc_depth: int,
    chunk_depth: int,
    n_threads: int | None = None,
    backend: str = "auto",
) -> list[QueryResult]:
    """``system.search(queries, ...)`` of a :class:`harness.retrieve.bm25.BM25System`, batched."""
    terms = [system.analyzer.tokenize(q) for q in queries]  # one analysis for both indexes (same analyzer)
    kw = {"n_threads": n_threads, "analysed": True, "backend": backend}
    docs = search_many(system.doc_index, terms, doc_depth, **kw)
    chunks = search_many(system.chunk_index, terms, chunk_depth, **kw)
    out = []
    for (d, f1), (c, f2) in zip(docs, chunks, strict=True):
        flags = {}
        if f1.get("empty_query") or f2.get("empty_query"):
            flags["empty_query"] = True
        if f1.get("tie_at_boundary"):
            flags["doc_tie_at_boundary"] = True
        if f2.get("tie_at_boundary"):
            flags["chunk_tie_at_boundary"] = True
        out.append(QueryResult(docs=d, chunks=c, flags=flags))
    return out


def default_threads() -> int:
    """Threads the batched path uses by default (``numba``'s setting, else the CPU count)."""
    return numba.get_num_threads() if HAVE_NUMBA else (os.cpu_count() or 1)
