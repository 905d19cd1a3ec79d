"""numba kernels of :meth:`harness.retrieve.bm25.index.BM25Index.search_many` (imported lazily; numba is optional).

One term-at-a-time kernel per batch of queries over bm25s's precomputed CSC score matrix (``data``, ``indices``,
``indptr``: per-posting BM25 contributions, bm25s ``_compute_relevance_from_scores``):

* scores are accumulated exactly as bm25s does (term by term in query order, ``float32`` additions in posting
  order), so every score is bit-identical to ``bm25s.BM25.get_scores``;
* candidates are the items whose score is positive (the harness's positive-scores-only rule);
* the ranking is the exact top ``k`` under (score descending, id ascending) through a bounded heap, with the
  boundary-tie flag computed like :meth:`harness.retrieve.bm25.index.BM25Index.search`;
* queries are split into one contiguous block per thread; each block reuses one dense buffer and resets only the
  entries it touched.

Compiled functions are cached on disk (``cache=True``).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


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


def search_batch(q_ptr, q_tok, data, indices, indptr, n_items, id_rank, k, n_threads):
    """Run the kernel on a batch (CSR queries ``q_tok[q_ptr[i]:q_ptr[i+1]]``); returns ``(idx, scores, n, tie)``.

    ``n_threads`` None: one thread per 500 queries, at most ``numba.get_num_threads()`` (threads pay off on large
    batches only); 1 runs in the calling thread.
    """
    import numba

    nq = q_ptr.size - 1
    o_idx = np.full((nq, k), -1, dtype=np.int64)
    o_sc = np.zeros((nq, k), dtype=np.float32)
    o_n = np.zeros(nq, dtype=np.int64)
    o_tie = np.zeros(nq, dtype=np.bool_)
    if n_threads is None:
        n_threads = max(1, min(numba.get_num_threads(), nq // 500))
    nt = max(1, min(n_threads, nq or 1, numba.config.NUMBA_NUM_THREADS))
    if nt == 1:
        buf = np.zeros(n_items, dtype=data.dtype)
        touched = np.empty(n_items + 1, dtype=np.int64)
        _block(0, nq, q_ptr, q_tok, data, indices, indptr, id_rank, k, o_idx, o_sc, o_n, o_tie, buf, touched)
    else:
        bounds = np.linspace(0, nq, nt + 1).astype(np.int64)
        old = numba.get_num_threads()
        numba.set_num_threads(nt)
        try:
            _search_parallel(bounds, q_ptr, q_tok, data, indices, indptr, n_items, id_rank, k, o_idx, o_sc, o_n, o_tie)
        finally:
            numba.set_num_threads(old)
    return o_idx, o_sc, o_n, o_tie
