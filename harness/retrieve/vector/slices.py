"""Chronological slices of a corpus: the documents a partial vector index covers.

Documents are ordered chronologically: by ``date`` (ISO, ascending), ties by ``doc_id`` (string order), documents
without a date last. ``index_fraction=F`` (0 < F <= 1) selects the shortest prefix of that order whose chunks cover
at least ``ceil(F * n_chunks)`` chunks; ``until=DATE`` selects the documents dated on or before ``DATE`` (undated
documents excluded). Either way, only whole documents.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass

from harness.corpus.store import Corpus
from harness.errors import HarnessInputError

__all__ = ["CorpusSlice", "chronological_order", "parse_date", "select_slice"]


def parse_date(value: str | None, where: str) -> dt.date | None:
    """``value`` as a date (``None`` for ``None`` or ``""``).

    Raises:
        HarnessInputError: not an ISO date, naming ``where``.
    """
    if value is None or value == "":
        return None
    try:
        return dt.date.fromisoformat(str(value))
    except ValueError:
        raise HarnessInputError(f"{where}: {value!r} is not an ISO date (YYYY-MM-DD)") from None


def chronological_order(corpus: Corpus) -> list[str]:
    """Document ids by (date ascending, doc_id ascending), undated documents last (by doc_id)."""
    docs = corpus.documents()
    keyed = []
    for d in docs.values():
        date = parse_date(d.date, f"{corpus.path}: document {d.doc_id}: field date")
        keyed.append((date is None, date or dt.date.min, d.doc_id))
    keyed.sort()
    return [k[2] for k in keyed]


@dataclass(frozen=True)
class CorpusSlice:
    """A chronological prefix of the corpus' documents.

    Attributes:
        doc_order: every doc id in chronological order.
        n_docs: the prefix length ``P`` (documents ``doc_order[:P]`` are in the slice).
        n_chunks: chunks of the slice's documents.
        n_total_chunks, n_total_docs: of the corpus.
        index_fraction, until: what was asked (``None`` for the whole corpus).
    """

    doc_order: tuple[str, ...]
    n_docs: int
    n_chunks: int
    n_total_chunks: int
    n_total_docs: int
    index_fraction: float | None
    until: str | None

    @property
    def doc_ids(self) -> tuple[str, ...]:
        """The slice's documents, chronologically."""
        return self.doc_order[: self.n_docs]

    @property
    def is_full(self) -> bool:
        """True when every document is in the slice."""
        return self.n_docs == self.n_total_docs


def select_slice(corpus: Corpus, *, index_fraction: float | None = None, until: str | None = None) -> CorpusSlice:
    """The documents a partial index covers (see the module docstring).

    Args:
        corpus: the corpus.
        index_fraction: ``0 < F <= 1``: the shortest chronological prefix covering ``ceil(F * n_chunks)`` chunks.
        until: ISO date: documents dated on or before it.

    Raises:
        HarnessInputError: both given, ``F`` outside (0, 1], ``until`` not an ISO date.
    """
    if index_fraction is not None and until is not None:
        raise HarnessInputError("index_fraction and until are mutually exclusive; give one")
    docs = corpus.documents()
    order = chronological_order(corpus)
    counts = [int(docs[d].n_chunks or 0) for d in order]
    total = sum(counts)
    if index_fraction is not None:
        f = float(index_fraction)
        if not (0.0 < f <= 1.0) or math.isnan(f):
            raise HarnessInputError(f"index_fraction: {index_fraction!r} is not in (0, 1]")
        target = math.ceil(round(f * total, 9))
        p, covered = 0, 0
        while p < len(order) and covered < target:
            covered += counts[p]
            p += 1
        if f == 1.0:
            p = len(order)
    elif until is not None:
        limit = parse_date(until, "until")
        p = 0
        for d in order:
            date = parse_date(docs[d].date, d)
            if date is None or date > limit:
                break
            p += 1
    else:
        p = len(order)
    return CorpusSlice(
        doc_order=tuple(order),
        n_docs=p,
        n_chunks=sum(counts[:p]),
        n_total_chunks=total,
        n_total_docs=len(order),
        index_fraction=None if index_fraction is None else float(index_fraction),
        until=None if until is None else str(until),
    )
