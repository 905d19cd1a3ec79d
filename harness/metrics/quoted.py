r"""The inputs of the budget family (:mod:`harness.metrics.budget`): quoted evidence characters and chunk extents.

Both are plain values, made by :mod:`harness.evaluation.evidence` (quotes located in the documents' NFC text; chunk
offsets and word counts from the corpus database) and read at scoring time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["ChunkExtent", "QuotedEvidence", "Spans", "intersection_length", "merge_spans"]

Spans = tuple[tuple[int, int], ...]
"""Half-open character spans ``((start, end), ...)``, sorted, disjoint and not touching (see :func:`merge_spans`)."""


def merge_spans(spans: Iterable[tuple[int, int]]) -> Spans:
    """Sorted union of half-open spans; touching or overlapping spans are merged, empty ones dropped.

    Raises:
        ValueError: a span with ``start > end`` or a negative offset.
    """
    items = []
    for s, e in spans:
        if s < 0 or e < s:
            raise ValueError(f"span ({s}, {e}): must satisfy 0 <= start <= end")
        if e > s:
            items.append((s, e))
    items.sort()
    out: list[tuple[int, int]] = []
    for s, e in items:
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return tuple(out)


def intersection_length(a: Spans, b: Spans) -> int:
    """Total length of the intersection of two merged span lists (a linear merge of both)."""
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


@dataclass(frozen=True, slots=True)
class ChunkExtent:
    r"""Where a chunk lies in its document and how long it is.

    Attributes:
        doc_id: the chunk's document.
        char_start, char_end: half-open offsets in the document's NFC source text (``Chunk.char_start/char_end``).
        n_words: the chunker's words in the chunk (``\S+`` runs of its text; ``Chunk.n_words``), >= 0.
    """

    doc_id: str
    char_start: int
    char_end: int
    n_words: int


@dataclass(frozen=True)
class QuotedEvidence:
    """The quoted evidence characters ``E_q`` of one question (:mod:`harness.metrics.budget`).

    Attributes:
        spans: ``{document id: merged spans of its evidence characters}`` (offsets in the NFC source text).
    """

    spans: Mapping[str, Spans]

    @property
    def n_chars(self) -> int:
        """``|E_q|``, the number of evidence characters."""
        return sum(e - s for sp in self.spans.values() for s, e in sp)
