"""Float rescoring of binary candidates: Hamming finds ``M`` times the candidates the rankings need, exact cosine on the
cached float vectors orders them.

This is the standard recipe for binary indexes (Shakir, Aarsen & Lee, "Binary and Scalar Embedding Quantization for
Significantly Faster & Cheaper Retrieval", Hugging Face blog, 2024, "rescoring"; Jégou, Douze & Schmid, "Product
Quantization for Nearest Neighbor Search", TPAMI 2011, re-ranking with exact distances): the bits make the search
cheap, the floats make the order right, and cosine scores almost never tie, so the boundary ties of Hamming distances
go away.

Candidates of one query (``M >= 1``, depths ``chunk_depth`` and ``doc_depth``)
------------------------------------------------------------------------------
From the Hamming distances of a tie-complete set (:mod:`harness.retrieve.vector.engines`, asked for depths
``M * chunk_depth`` and ``M * doc_depth``):

* the exact top ``M * chunk_depth`` chunks under the tie rule (distance ascending, chunk id ascending), and
* for each of the exact top ``M * doc_depth`` documents (by their best chunk's distance, then document id), that
  best chunk (smallest distance, then chunk id);

their union is the candidate set ``C``. Every chunk of ``C`` is scored by the cosine of the query's and the chunk's
float vectors (float64 arithmetic on the float32 vectors: ``dot(q, c) / (|q| |c|)``, 0 when either norm is 0). The
chunk ranking is the top ``chunk_depth`` of ``C`` by cosine (ties by chunk id ascending, :mod:`harness.ranking`); a
document's score is the best cosine of its chunks in ``C``, and the document ranking is the top ``doc_depth`` of
those (ties by document id). Chunks outside ``C`` are not ranked.
"""

from __future__ import annotations

import numpy as np

from harness.errors import HarnessInputError
from harness.ranking import top_k_by_distance

__all__ = ["FloatVectors", "RESCORE_RULE", "rescore_candidates", "rescore_positions"]

RESCORE_RULE = (
    "candidates: exact Hamming top M*chunk_depth chunks plus the best chunk of each of the Hamming top M*doc_depth "
    "documents; scored by cosine of the float vectors (float64), ties by id ascending; chunks outside the "
    "candidates are not ranked"
)


class FloatVectors:
    """The float32 passage vectors of an index's chunks, in the index's slice order, with float64 norms.

    Args:
        vectors: ``float32 (n, dim)``, row ``i`` for slice chunk ``i``.

    Raises:
        HarnessInputError: not 2-D, or non-finite values.
    """

    def __init__(self, vectors: np.ndarray):
        v = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32))
        if v.ndim != 2:
            raise HarnessInputError(f"float vectors of shape {v.shape}; expected (n, dim)")
        if not np.isfinite(v).all():
            raise HarnessInputError("float vectors hold NaN or infinite values")
        self.vectors = v
        self.norms = np.sqrt(np.einsum("ij,ij->i", v.astype(np.float64), v.astype(np.float64)))

    @property
    def nbytes(self) -> int:
        """Bytes held (vectors and norms)."""
        return int(self.vectors.nbytes + self.norms.nbytes)

    def cosine(self, query: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """Cosine of ``query`` (``(dim,)``) with the chunks at ``positions``: ``float64 (len(positions),)``, each row
        computed on its own (the same value whatever the other positions are)."""
        q = np.asarray(query, dtype=np.float64).reshape(-1)
        if q.shape[0] != self.vectors.shape[1]:
            raise HarnessInputError(f"query vector of width {q.shape[0]}; the index has {self.vectors.shape[1]}")
        rows = self.vectors[positions].astype(np.float64)
        dots = np.einsum("ij,j->i", rows, q)
        denom = self.norms[positions] * float(np.sqrt(q @ q))
        out = np.zeros(rows.shape[0], dtype=np.float64)
        np.divide(dots, denom, out=out, where=denom > 0)
        return out


def rescore_positions(
    idx: np.ndarray,
    dist: np.ndarray,
    chunk_rank: np.ndarray,
    doc_idx: np.ndarray,
    chunk_k: int,
    doc_k: int,
) -> np.ndarray:
    """The candidate set ``C`` of the module docstring, as indices into ``idx`` (sorted, unique).

    Args:
        idx: ``(c,)`` slice positions of a tie-complete set; dist: ``(c,)`` their Hamming distances.
        chunk_rank: ``(c,)`` id rank of each candidate chunk; doc_idx: ``(c,)`` its document index (document
            indices are in document id order).
        chunk_k, doc_k: ``M * chunk_depth`` and ``M * doc_depth``.
    """
    top_chunks, _ = top_k_by_distance(dist, chunk_rank, chunk_k)
    if doc_k <= 0 or idx.size == 0:
        return np.unique(top_chunks)
    # best chunk per document: order by (document, distance, chunk id) and take each document's first row
    order = np.lexsort((chunk_rank, dist, doc_idx))
    first = np.ones(order.size, dtype=bool)
    first[1:] = doc_idx[order][1:] != doc_idx[order][:-1]
    best = order[first]  # one candidate row per document, in document index order
    top_docs, _ = top_k_by_distance(dist[best], doc_idx[best], doc_k)
    return np.unique(np.concatenate([top_chunks, best[top_docs]]))


def rescore_candidates(
    cand: np.ndarray,
    cosine: np.ndarray,
    chunk_rank: np.ndarray,
    doc_idx: np.ndarray,
    chunk_depth: int,
    doc_depth: int,
) -> tuple[np.ndarray, bool, np.ndarray, np.ndarray, bool]:
    """Rankings of the candidates by cosine (module docstring).

    Args:
        cand: ``(c,)`` candidate slice positions; cosine: ``(c,)`` their cosines (float64).
        chunk_rank, doc_idx: ``(c,)`` each candidate's chunk id rank and document index.
        chunk_depth, doc_depth: ranking depths.

    Returns:
        ``(chunk_order, chunk_tie, doc_ids, doc_scores, doc_tie)``: indices into ``cand`` of the top chunks in
        canonical order and whether the chunk cut fell in a tie; the top documents' indices and their scores (best
        cosine) and whether the document cut fell in a tie.
    """
    corder, ctie = top_k_by_distance(-cosine, chunk_rank, chunk_depth)
    if cand.size == 0:
        return corder, ctie, np.empty(0, dtype=np.int64), np.empty(0), False
    docs, inv = np.unique(doc_idx, return_inverse=True)
    best = np.full(docs.size, -np.inf)
    np.maximum.at(best, inv, cosine)
    dorder, dtie = top_k_by_distance(-best, docs, doc_depth)
    return corder, ctie, docs[dorder], best[dorder], dtie
