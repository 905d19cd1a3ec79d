"""Corpus folders (source), versioned chunkers, ingest and the corpus database."""

from harness.corpus.chunker import Chunk, get_chunker, normalize_text
from harness.corpus.ingest import ingest
from harness.corpus.legal import MdLegalChunker as MdLegalChunker  # the import registers md-legal-v1 in CHUNKERS
from harness.corpus.source import scan_corpus
from harness.corpus.store import Corpus, CorpusManifest, open_db

__all__ = ["Chunk", "Corpus", "CorpusManifest", "get_chunker", "ingest", "normalize_text", "open_db", "scan_corpus"]
