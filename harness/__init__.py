"""harness: a retrieval benchmark harness for RAG systems."""

__version__ = "0.1.0"
