"""The ``vector`` system: binary (1 bit per dimension) chunk vectors in sqlite-vec, ranked by Hamming distance.

Modules, one job each:

* :mod:`~harness.retrieve.vector.cache`: the embedding cache (float32 passage embeddings by model, weights,
  chunker and text; shared by the index build, the known-item study and the Ray build);
* :mod:`~harness.retrieve.vector.slices`: chronological slices of a corpus (partial indexes);
* :mod:`~harness.retrieve.vector.store`: the vec0 tables, their records and centring vectors, the resumable build;
* :mod:`~harness.retrieve.vector.engines`: the sqlite-vec, numpy and faiss Hamming engines and their one
  tie-completion loop;
* :mod:`~harness.retrieve.vector.rescore`: float rescoring of the Hamming candidates (cosine on the cached floats);
* :mod:`~harness.retrieve.vector.system`: :class:`VectorIndex` (the retriever) and :func:`open_vector_system`
  (the registry factory, from :class:`VectorOptions`).

Bits are :mod:`harness.retrieve.binary`'s (sign or mean-centred, packed LSB first, = sqlite-vec
``vec_quantize_binary``); the tie rule is :mod:`harness.ranking`'s.
"""

from harness.retrieve.vector.cache import EmbeddingCache, cached_passage_embeddings
from harness.retrieve.vector.engines import BACKENDS, SQLITE_VEC_K_MAX
from harness.retrieve.vector.slices import CorpusSlice, chronological_order, select_slice
from harness.retrieve.vector.system import DEFAULT_RESCORE, VectorIndex, VectorOptions, open_vector_system

__all__ = [
    "BACKENDS",
    "DEFAULT_RESCORE",
    "SQLITE_VEC_K_MAX",
    "CorpusSlice",
    "EmbeddingCache",
    "VectorIndex",
    "VectorOptions",
    "cached_passage_embeddings",
    "chronological_order",
    "open_vector_system",
    "select_slice",
]
