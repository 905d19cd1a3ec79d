"""The retriever seam: every system returns, per query, a document ranking, a chunk ranking, or both.

Rankings are lists of ``(id, score)`` with higher scores better, in the project's canonical order (score
descending, then id ascending; :mod:`harness.ranking`). Document ids are the corpus's ``doc_id``s, chunk ids
``<doc_id>#<index>`` under the corpus's chunker.

The protocol a system implements (and a user's own retriever given as ``--systems mine=py:MODULE:ATTR``,
:mod:`harness.retrieve.plugin`)::

    class MyRetriever:
        def search(self, queries, *, doc_depth, chunk_depth):   # -> list[QueryResult], one per query, same order
            ...
        def config(self):                                       # -> dict, recorded in the run manifest
            ...

``QueryResult.docs`` or ``.chunks`` is ``None`` at a level the system does not rank; a system may return at most
``doc_depth`` documents and ``chunk_depth`` chunks (more are cut). Scores must be real numbers (NaN is refused).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from harness.corpus.store import Corpus
from harness.ranking import Ranking

__all__ = ["QueryResult", "Ranking", "Reranker", "Retriever", "SystemContext"]


@dataclass
class QueryResult:
    """What a system returned for one query.

    Attributes:
        docs: document ranking (``None`` when the system does not rank documents).
        chunks: chunk ranking (``None`` when it does not rank chunks).
        flags: notes such as ``{"empty_query": True}`` or ``{"tie_at_boundary": True}``.
    """

    docs: Ranking | None
    chunks: Ranking | None
    flags: dict = field(default_factory=dict)


@runtime_checkable
class Retriever(Protocol):
    """A retrieval system evaluated by the harness (see the module docstring)."""

    def search(self, queries: Sequence[str], *, doc_depth: int, chunk_depth: int) -> list[QueryResult]:
        """Rank documents and/or chunks for each query (same order as ``queries``)."""
        ...

    def config(self) -> dict:
        """Everything that identifies the system's behaviour (recorded in the run manifest)."""
        ...


@runtime_checkable
class Reranker(Protocol):
    """A cross-encoder seam: one relevance score per ``(query, passage)`` pair, higher better."""

    def predict(self, pairs: Sequence[tuple[str, str]]) -> Sequence[float]:
        """Scores, one per pair, in the pairs' order."""
        ...


@dataclass
class SystemContext:
    """What a system factory of the registry (:mod:`harness.retrieve.registry`) may use to build its system.

    Attributes:
        corpus: the open corpus of the run (read-write: vector indexes are tables in its database).
        workdir: derived files (indexes, embedding cache, extracted models).
        progress: show progress bars while building.
        log: receives one-line messages (``"bm25: indexes loaded in 0.3 s"``).
    """

    corpus: Corpus
    workdir: Path
    progress: bool = False
    log: Callable[[str], None] = field(default=lambda _m: None)
