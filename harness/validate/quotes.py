"""Quote checking: is a quote one contiguous span of the chunk it cites, and if not, why not.

All comparisons are made on text passed through the chunker's normaliser (for ``md-words-v1``: typographic quotes
and dashes folded, ``*``/``_``/backtick markup removed, whitespace collapsed; see :mod:`harness.corpus.chunker`).

Diagnosis of a failing quote, in this order:

1. the quote occurs in the document's chunks joined with one space but in no single chunk: it **spans** chunks
   (all of them are named);
2. it occurs inside another single chunk of the same document: **wrong chunk** (that chunk is named);
3. otherwise it is **not contiguous**: :func:`closest_match` aligns the quote to the cited chunk word by word with
   :class:`difflib.SequenceMatcher` (no junk heuristic) on the longest common run of words, reports that aligned
   chunk span as the closest contiguous match, the first quote word where they diverge, and the words the quote
   omits where it glues two matching runs that are not adjacent in the chunk.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from harness.validate.corpusview import DocChunks

__all__ = ["QuoteCheck", "check_quote", "closest_match"]

_CTX = 8  # words shown around a divergence


@dataclass(frozen=True)
class QuoteCheck:
    """Outcome of one quote check.

    Attributes:
        ok: the normalised quote is a substring of the normalised chunk.
        kind: ``"ok"``, ``"empty"``, ``"spans_chunks"``, ``"other_chunk"`` or ``"not_contiguous"``.
        message: one line for people.
        details: machine-readable specifics (chunk ids, closest match, divergence, omitted words).
    """

    ok: bool
    kind: str
    message: str
    details: dict = field(default_factory=dict)


def _words(ws: list[str], a: int, b: int) -> str:
    return " ".join(ws[max(a, 0) : max(b, 0)])


def closest_match(quote_norm: str, chunk_norm: str) -> dict:
    """Closest contiguous match of a normalised quote in a normalised chunk (word-level difflib alignment).

    Returns:
        ``{"closest": str, "similarity": float in [0, 1], "diverges_at_word": int | None (0-based quote word),
        "quote_from_divergence": str, "chunk_from_divergence": str, "omitted": list[str]}``; ``omitted`` lists the
        chunk words left out between two runs that the quote glues together.
    """
    qw = quote_norm.split(" ")
    cw = chunk_norm.split(" ") if chunk_norm else []
    sm = difflib.SequenceMatcher(None, cw, qw, autojunk=False)
    blocks = [b for b in sm.get_matching_blocks() if b.size]
    if not blocks:
        return {
            "closest": "",
            "similarity": 0.0,
            "diverges_at_word": 0,
            "quote_from_divergence": _words(qw, 0, _CTX),
            "chunk_from_divergence": "",
            "omitted": [],
        }
    best = max(blocks, key=lambda b: (b.size, -b.b, -b.a))
    anchor = best.a - best.b  # chunk word index aligned with quote word 0
    lo, hi = max(anchor, 0), min(anchor + len(qw), len(cw))
    closest = _words(cw, lo, hi)
    diverge = None
    for k in range(len(qw)):
        j = anchor + k
        if j < 0 or j >= len(cw) or cw[j] != qw[k]:
            diverge = k
            break
    omitted = []
    for b1, b2 in zip(blocks, blocks[1:], strict=False):
        if b2.b == b1.b + b1.size and b2.a > b1.a + b1.size:
            omitted.append(_words(cw, b1.a + b1.size, b2.a))
    similarity = difflib.SequenceMatcher(None, closest, quote_norm, autojunk=False).ratio()
    out = {
        "closest": closest,
        "similarity": round(similarity, 4),
        "diverges_at_word": diverge,
        "quote_from_divergence": _words(qw, diverge, diverge + _CTX) if diverge is not None else "",
        "chunk_from_divergence": (_words(cw, anchor + diverge, anchor + diverge + _CTX) if diverge is not None else ""),
        "omitted": omitted,
    }
    return out


def check_quote(doc: DocChunks, chunk_index: int, quote: str, normalize) -> QuoteCheck:
    """Check one quote against chunk ``chunk_index`` of ``doc``.

    Args:
        doc: the re-chunked document.
        chunk_index: index of the cited chunk in ``doc.chunks``.
        quote: the quote as written in the gold set.
        normalize: the chunker's normaliser.

    Returns:
        A :class:`QuoteCheck` (see the module docstring for the diagnosis order).
    """
    q = normalize(quote)
    cited = doc.chunks[chunk_index]
    if not q:
        return QuoteCheck(False, "empty", "quote is empty after normalisation")
    if q in doc.norm[chunk_index]:
        return QuoteCheck(True, "ok", "quote is a contiguous span of the chunk")
    spans: list[list[str]] = []
    singles: list[str] = []
    start = doc.joined.find(q)
    while start != -1:
        ids = [c.chunk_id for c in doc.chunks_of_span(start, start + len(q))]
        if len(ids) > 1:
            spans.append(ids)
        else:
            singles.append(ids[0])
        start = doc.joined.find(q, start + 1)
    if spans:
        # prefer a span that includes the cited chunk
        span = next((s for s in spans if cited.chunk_id in s), spans[0])
        names = " and ".join(span) if len(span) == 2 else ", ".join(span)
        return QuoteCheck(
            False,
            "spans_chunks",
            f"quote spans chunks {names}: it is contiguous in the document but crosses a chunk boundary",
            {"chunks": span, "cited": cited.chunk_id},
        )
    if singles:
        return QuoteCheck(
            False,
            "other_chunk",
            f"quote is not in cited chunk {cited.chunk_id} but in chunk {singles[0]}",
            {"found_in": sorted(set(singles), key=singles.index), "cited": cited.chunk_id},
        )
    cm = closest_match(q, doc.norm[chunk_index])
    if cm["omitted"]:
        gap = cm["omitted"][0]
        msg = f"quote is not contiguous in chunk {cited.chunk_id}: it omits {len(gap.split())} word(s) «{gap}»"
    else:
        msg = f"quote is not contiguous in chunk {cited.chunk_id}"
    if cm["diverges_at_word"] is not None:
        msg += (
            f"; diverges from the closest match at quote word {cm['diverges_at_word'] + 1}: "
            f"quote «{cm['quote_from_divergence']}» vs chunk «{cm['chunk_from_divergence']}»"
        )
    return QuoteCheck(False, "not_contiguous", msg, {"cited": cited.chunk_id, **cm})
