"""numba kernel of the known-item search for a :class:`~harness.studies.known_item.scorers.SparseScorer` (imported
lazily; numba is optional).

Per query, one row of scores is accumulated exactly as :meth:`SparseScorer.__call__` does (term by term in the
query row's order, ``float32`` products ``weight * posting`` added in posting order, then the query's offset), so
every score is bit-identical; the outcomes of rules 4-5 (:func:`harness.studies.known_item.search._block_outcomes`)
are then read in two passes over the row (the query's document, then every chunk) instead of a dozen vectorised
passes over a dense block: same hit, rank, tie, tie_decided_hit and top chunk.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, nogil=True)
def _one(q, qp, qi, qv, ip, ix, dat, offsets, has_off, q_self, lo, hi, id_rank, buf):
    for k in range(qp[q], qp[q + 1]):
        t = qi[k]
        w = qv[k]
        for j in range(ip[t], ip[t + 1]):
            buf[ix[j]] += w * dat[j]
    if has_off:
        off = offsets[q]
        for c in range(buf.shape[0]):
            buf[c] += off
    buf[q_self] = -np.inf
    # best same-document chunk (first in column order among equals), as seg.argmax()
    sstar = buf[lo]
    for c in range(lo + 1, hi):
        if buf[c] > sstar:
            sstar = buf[c]
    fr = -1
    if sstar > 0:
        for c in range(lo, hi):
            if buf[c] == sstar and (fr < 0 or id_rank[c] < fr):
                fr = id_rank[c]
    m = -np.inf
    top = -1
    top_rank = 0
    n_top = 0
    same_top = False
    other_top = False
    gt = 0
    before = 0
    for c in range(buf.shape[0]):
        s = buf[c]
        if s > m:
            m = s
            top = c
            top_rank = id_rank[c]
            n_top = 1
            same_top = lo <= c < hi
            other_top = not same_top
        elif s == m:
            n_top += 1
            if id_rank[c] < top_rank:
                top = c
                top_rank = id_rank[c]
            if lo <= c < hi:
                same_top = True
            else:
                other_top = True
        if sstar > 0:
            if s > sstar:
                gt += 1
            elif s == sstar and id_rank[c] < fr:
                before += 1
    buf[:] = 0
    has_top = m > 0
    tie = has_top and n_top > 1
    hit = has_top and lo <= top < hi
    rank = 1 + gt + before if sstar > 0 else 0
    return hit, rank, tie, tie and same_top and other_top, top if has_top else -1


@njit(cache=True, parallel=True)
def _run(bounds, qp, qi, qv, ip, ix, dat, offsets, has_off, q_self, q_lo, q_hi, id_rank, n, hit, rank, tie, tdec,
         top):  # fmt: skip
    for blk in prange(bounds.shape[0] - 1):
        buf = np.zeros(n, dtype=np.float32)
        for q in range(bounds[blk], bounds[blk + 1]):
            h, r, t, d, c = _one(q, qp, qi, qv, ip, ix, dat, offsets, has_off, q_self[q], q_lo[q], q_hi[q], id_rank,
                                 buf)  # fmt: skip
            hit[q] = h
            rank[q] = r
            tie[q] = t
            tdec[q] = d
            top[q] = c


def sparse_outcomes(scorer, query_chunks, q_lo, q_hi, id_rank, threads: int, progress=None, step: int = 4096):
    """Known-item outcomes ``(hit, rank, tie, tie_decided_hit, top_chunk)`` of a ``SparseScorer`` (module docstring).

    Args:
        scorer: a :class:`~harness.studies.known_item.scorers.SparseScorer` with float32 weights.
        query_chunks, q_lo, q_hi: per query, its own chunk and its document's chunk range ``[lo, hi)``.
        id_rank: (N,) rank of each chunk id in ascending string order.
        threads: numba threads (>= 1).
        progress: called with the number of queries done after each step of ``step`` queries.
    """
    import numba

    qs, it = scorer.queries, scorer.index_t
    qp, qi = qs.indptr.astype(np.int64), qs.indices.astype(np.int64)
    qv = np.asarray(qs.data, dtype=np.float32)
    ip, ix = it.indptr.astype(np.int64), it.indices.astype(np.int64)
    dat = np.asarray(it.data, dtype=np.float32)
    has_off = scorer.offsets is not None
    offsets = scorer.offsets if has_off else np.zeros(1, dtype=np.float32)
    nq, n = scorer.n_queries, scorer.n_chunks
    hit = np.zeros(nq, dtype=np.int8)
    rank = np.zeros(nq, dtype=np.int64)
    tie = np.zeros(nq, dtype=np.bool_)
    tdec = np.zeros(nq, dtype=np.bool_)
    top = np.full(nq, -1, dtype=np.int64)
    nt = max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS))
    old = numba.get_num_threads()
    numba.set_num_threads(nt)
    try:
        for a in range(0, nq, step):
            z = min(a + step, nq)
            bounds = np.linspace(a, z, nt + 1).astype(np.int64)
            _run(bounds, qp, qi, qv, ip, ix, dat, offsets, has_off, np.asarray(query_chunks, dtype=np.int64),
                 q_lo.astype(np.int64), q_hi.astype(np.int64), np.asarray(id_rank, dtype=np.int64), n, hit, rank, tie,
                 tdec, top)  # fmt: skip
            if progress is not None:
                progress(z - a)
    finally:
        numba.set_num_threads(old)
    return hit, rank, tie, tdec, top
