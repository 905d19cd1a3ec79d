"""Float vectors for rescoring read from the embedding cache row by row, for slices too large to hold in memory.

:meth:`harness.retrieve.vector.VectorIndex.float_vectors` used to stack every float vector of the slice in memory
(``n * dim * 4`` bytes plus a dict of one array per chunk while reading: about 14 GB for DOF's 6.73 M chunks at 256
dimensions, so a rescored search at DOF scale did not fit a 24 GB machine). Above :data:`IN_MEMORY_BYTES` it now
returns a :class:`CachedFloatVectors`, which reads from the cache only the rows a query rescores (``M`` times the
ranking depths: a few hundred per query) and scores them with the same code as
:class:`~harness.retrieve.vector.rescore.FloatVectors`, row by row, so the cosines are the same bits.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.errors import HarnessInputError
from harness.retrieve.vector.cache import EmbeddingCache
from harness.retrieve.vector.rescore import FloatVectors

__all__ = ["IN_MEMORY_BYTES", "CachedFloatVectors"]

IN_MEMORY_BYTES = 1 << 30
"""Slices whose float vectors take more than this (bytes, ``n * dim * 4``) are read from the cache per query."""


class CachedFloatVectors:
    """The float32 vectors of a slice's chunks, in slice order, read from an open embedding cache on demand.

    Args:
        cache: an open :class:`~harness.retrieve.vector.cache.EmbeddingCache` (closed by :meth:`close`).
        key_id: the cache key of the model, chunker and width.
        text_sha256: the slice's chunks' text hashes, row ``i`` for slice chunk ``i``.
        dim: vector width.

    Raises:
        HarnessInputError: a slice text has no vector in the cache (checked once, reading no vectors).
    """

    def __init__(self, cache: EmbeddingCache, key_id: int, text_sha256: Sequence[str], dim: int):
        lost = cache.missing(key_id, text_sha256)
        if lost:
            raise HarnessInputError(f"{cache.path}: {len(lost)} slice vectors are not in the embedding cache")
        self.cache, self.key_id, self.dim = cache, key_id, int(dim)
        self.text_sha256 = text_sha256
        self.n = len(text_sha256)

    @property
    def nbytes(self) -> int:
        """Bytes the slice's vectors and norms take in the cache's float32 (what an in-memory copy would hold)."""
        return int(self.n * (self.dim * 4 + 8))

    def cosine(self, query: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """As :meth:`FloatVectors.cosine <harness.retrieve.vector.rescore.FloatVectors.cosine>`: ``float64
        (len(positions),)``, the rows read from the cache.

        Raises:
            HarnessInputError: a row vanished from the cache since the check.
        """
        pos = np.asarray(positions, dtype=np.int64).reshape(-1)
        shas = [self.text_sha256[int(p)] for p in pos]
        got = self.cache.get_many(self.key_id, shas, self.dim)
        if len(got) != len(set(shas)):
            raise HarnessInputError(f"{self.cache.path}: slice vectors left the embedding cache during the search")
        rows = np.stack([got[h] for h in shas]) if shas else np.zeros((0, self.dim), dtype=np.float32)
        return FloatVectors(rows).cosine(query, np.arange(rows.shape[0]))

    def close(self) -> None:
        """Close the cache connection."""
        self.cache.close()
