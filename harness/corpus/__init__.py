"""Corpus folders (source), versioned chunkers, ingest and the corpus database.

Importing any ``harness.corpus`` module runs this file, so it stays light: it imports only the chunkers (importing
:mod:`harness.corpus.legal` registers ``md-legal-v1`` in :data:`harness.corpus.chunker.CHUNKERS`, so
:func:`~harness.corpus.chunker.get_chunker` knows every chunker whichever corpus module was imported first). The
other names below are loaded on first use (PEP 562), so ``import harness.corpus.view`` does not load the ingest
machinery (SQLite writer, progress bars).

* :mod:`harness.corpus.source` - a corpus folder (:func:`scan_corpus`, documents and metadata);
* :mod:`harness.corpus.chunker`, :mod:`harness.corpus.legal` - the versioned chunkers and quote normalisation;
* :mod:`harness.corpus.ingest`, :mod:`harness.corpus.store` - the corpus database (:func:`ingest`, :class:`Corpus`);
* :mod:`harness.corpus.view`, :mod:`harness.corpus.quotes` - a gold set's documents re-chunked in memory and the
  quote search over them (used by validation, gold-set authoring and the evidence metrics alike).
"""

from harness.corpus.chunker import Chunk, get_chunker, normalize_text
from harness.corpus.legal import MdLegalChunker as MdLegalChunker  # the import registers md-legal-v1 in CHUNKERS

__all__ = ["Chunk", "Corpus", "CorpusManifest", "get_chunker", "ingest", "normalize_text", "open_db", "scan_corpus"]

_LAZY = {
    "ingest": "harness.corpus.ingest",
    "scan_corpus": "harness.corpus.source",
    "Corpus": "harness.corpus.store",
    "CorpusManifest": "harness.corpus.store",
    "open_db": "harness.corpus.store",
}


def __getattr__(name: str):
    """``ingest``, ``scan_corpus``, ``Corpus``, ``CorpusManifest``, ``open_db``: imported on first use."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
