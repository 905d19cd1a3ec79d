"""The retriever seam: every system returns, per query, a document ranking and a chunk ranking.

Rankings are lists of ``(id, score)`` with higher scores better, in the project's canonical order (score
descending, then id ascending; :mod:`harness.ranking`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from harness.ranking import Ranking

__all__ = ["QueryResult", "Ranking", "Retriever"]


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


class Retriever(Protocol):
    """A retrieval system evaluated by the harness."""

    name: str

    def search(self, queries: Sequence[str], *, doc_depth: int, chunk_depth: int) -> list[QueryResult]:
        """Rank documents and chunks for each query (same order as ``queries``)."""
        ...

    def config(self) -> dict:
        """Everything that identifies the system's behaviour (recorded in the run manifest)."""
        ...
