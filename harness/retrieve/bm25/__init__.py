"""BM25 retrieval with bm25s over the corpus's analyzer (:mod:`harness.retrieve.analyzer`; ``es-snowball-fold-v1``
unless the corpus declares a language): a chunk index and a whole-document index.

* :mod:`harness.retrieve.bm25.index`: one persisted index (:class:`BM25Index`), its bit-identical integer build
  (:func:`lucene_csc`; the rows come from :func:`harness.retrieve.counts.count_terms`) and its batched search;
* :mod:`harness.retrieve.bm25.system`: the ``bm25`` system (:class:`BM25System`), its options and registry factory;
* :mod:`harness.retrieve.bm25._numba`: the compiled batched kernel (optional numba, imported lazily).
"""

from harness.retrieve.bm25.index import BM25_PARAMS, BM25Index, have_numba, lucene_csc
from harness.retrieve.bm25.system import BM25Options, BM25System, combine_levels, open_bm25_system

__all__ = [
    "BM25_PARAMS",
    "BM25Index",
    "BM25Options",
    "BM25System",
    "combine_levels",
    "have_numba",
    "lucene_csc",
    "open_bm25_system",
]
