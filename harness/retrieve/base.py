"""The retriever seam: every system returns, per query, a document ranking and a chunk ranking.

Rankings are lists of ``(id, score)`` with higher scores better, in the project's canonical order (score
descending, then id ascending; :func:`harness.metrics.canonical_ranking`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

Ranking = list[tuple[str, float]]


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


def sort_ranking(items: Iterable[tuple[str, float]]) -> Ranking:
    """Sort ``(id, score)`` pairs by score descending, then id ascending (the project's one tie rule)."""
    return sorted(((str(i), float(s)) for i, s in items), key=lambda x: (-x[1], x[0]))


def collapse_to_documents(chunks: Ranking, chunk_doc: dict[str, str], depth: int | None = None) -> Ranking:
    """Rank documents by their best chunk (first occurrence in the canonical chunk ranking).

    Args:
        chunks: a canonical chunk ranking.
        chunk_doc: ``{chunk_id: doc_id}``.
        depth: keep at most this many documents.

    Returns:
        ``[(doc_id, score of its best chunk)]`` in canonical order.
    """
    seen: dict[str, float] = {}
    for cid, score in chunks:
        d = chunk_doc[cid]
        if d not in seen:
            seen[d] = score
            if depth is not None and len(seen) >= depth:
                break
    return sort_ranking(seen.items())
