"""Quote checking: is a quote one contiguous span of the chunk it cites, and if not, why not.

All comparisons are made on text passed through the chunker's normaliser (for ``md-words-v1``: typographic quotes
and dashes folded, ``*``/``_``/backtick markup removed, whitespace collapsed; see :mod:`harness.corpus.chunker`).

Diagnosis of a failing quote, in this order:

1. the quote occurs in the document's chunks joined with one space but in no single chunk: it **spans** chunks
   (all of them are named);
2. it occurs inside another single chunk of the same document: **wrong chunk** (that chunk is named);
3. otherwise it is **not contiguous**: :func:`closest_match` aligns the quote to the cited chunk word by word with
   :class:`difflib.SequenceMatcher` (no junk heuristic), takes the longest common run of words and the runs next to
   it (gaps of at most ``max(5, quote words)`` words), and reports the chunk span they cover as the closest contiguous
   match (for a glued quote: the passage with the omitted words put back), the first quote word where quote and span
   diverge, and the words the quote omits where it glues two runs that are not adjacent in the chunk.

Bounded work per finding, whatever the quote's length (a 20 MB quote is checked in the time of a normal one): the
exact searches (steps 1-2) are substring searches, linear in the document; the closest-match alignment (step 3)
compares at most the first ``len(chunk) +`` :data:`COMPARED_CHARS` characters of the normalised quote (a contiguous
match cannot be longer than the chunk, so the divergence always lies within them), and
every excerpt a finding carries (closest match, divergence, omitted words; in its message and in its details, so in
every output format) has at most :data:`EXCERPT_CHARS` characters (a longer one is cut and ends in ``…``). The
length of the whole normalised quote is still reported (``quote_chars``), beside the characters aligned
(``compared_chars``).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from harness.corpus.chunker import Chunk
from harness.corpus.view import DocChunks

__all__ = [
    "COMPARED_CHARS",
    "EXCERPT_CHARS",
    "Occurrence",
    "QuoteCheck",
    "check_quote",
    "choose_occurrence",
    "closest_chunk",
    "closest_match",
    "excerpt",
    "quote_occurrences",
]

_CTX = 8  # words shown around a divergence

COMPARED_CHARS = 500
"""Characters of a normalised quote beyond the cited chunk's length that the closest-match alignment compares at most
(the longest quote of the real gold set has 485 characters, so every one of them is compared whole)."""

EXCERPT_CHARS = 500
"""Characters of any one excerpt a quote finding carries at most (closest match, divergence, omitted words)."""


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` itself when it has at most ``limit`` characters, else its first ``limit - 1`` characters and ``…``
    (so exactly ``limit``)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _compared(quote_norm: str, limit: int) -> str:
    """The first ``limit`` characters of a normalised quote, cut at its last space within them when that keeps at
    least half of them (else at the limit, inside a long word)."""
    if len(quote_norm) <= limit:
        return quote_norm
    cut = quote_norm.rfind(" ", 0, limit + 1)
    return quote_norm[:cut] if cut >= limit // 2 else quote_norm[:limit]


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

    Only the first ``len(chunk_norm) +`` :data:`COMPARED_CHARS` characters of the quote are aligned (cut at a word
    boundary), so the work is bounded by the chunk's length whatever the quote's; every returned string has at most
    :data:`EXCERPT_CHARS` characters (:func:`excerpt`).

    Returns:
        ``{"closest": str, "similarity": float in [0, 1], "diverges_at_word": int | None (0-based quote word),
        "quote_from_divergence": str, "chunk_from_divergence": str, "omitted": list[str], "quote_chars": int,
        "compared_chars": int}``; ``omitted`` lists the chunk words left out between two runs that the quote glues
        together; ``quote_chars`` is the length of the whole normalised quote, ``compared_chars`` that of the part
        aligned (the same unless the quote is longer than the chunk by more than :data:`COMPARED_CHARS`).
    """
    compared = _compared(quote_norm, len(chunk_norm) + COMPARED_CHARS)
    cm = _align(compared, chunk_norm)
    return {
        **{k: excerpt(v) if isinstance(v, str) else v for k, v in cm.items()},
        "omitted": [excerpt(x) for x in cm["omitted"]],
        "quote_chars": len(quote_norm),
        "compared_chars": len(compared),
    }


def _align(quote_norm: str, chunk_norm: str) -> dict:
    """:func:`closest_match` on the quote as given (no caps)."""
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
    # Grow a region of matching runs around the longest one while the gaps (in chunk and in quote) stay short;
    # the chunk words that region covers, stretched to the quote's length at both ends, are the closest match.
    gap = max(5, len(qw))
    k = max(range(len(blocks)), key=lambda i: (blocks[i].size, -blocks[i].b, -blocks[i].a))
    lo_i = hi_i = k
    while lo_i > 0:
        p, c = blocks[lo_i - 1], blocks[lo_i]
        if c.a - (p.a + p.size) > gap or c.b - (p.b + p.size) > gap:
            break
        lo_i -= 1
    while hi_i < len(blocks) - 1:
        c, n = blocks[hi_i], blocks[hi_i + 1]
        if n.a - (c.a + c.size) > gap or n.b - (c.b + c.size) > gap:
            break
        hi_i += 1
    region = blocks[lo_i : hi_i + 1]
    first, last = region[0], region[-1]
    start = max(first.a - first.b, 0)
    end = min(last.a + last.size + (len(qw) - last.b - last.size), len(cw))
    closest = _words(cw, start, end)
    offset = first.a - first.b  # chunk word aligned with quote word 0 (may be negative)
    diverge = None
    for i in range(len(qw)):
        j = offset + i
        if j < 0 or j >= len(cw) or cw[j] != qw[i]:
            diverge = i
            break
    if diverge is None and end - start > len(qw):  # pragma: no cover - a full match is caught before
        diverge = len(qw)
    omitted = [
        _words(cw, b1.a + b1.size, b2.a)
        for b1, b2 in zip(region, region[1:], strict=False)
        if b2.b == b1.b + b1.size and b2.a > b1.a + b1.size
    ]
    similarity = difflib.SequenceMatcher(None, closest, quote_norm, autojunk=False).ratio()
    return {
        "closest": closest,
        "similarity": round(similarity, 4),
        "diverges_at_word": diverge,
        "quote_from_divergence": _words(qw, diverge, diverge + _CTX) if diverge is not None else "",
        "chunk_from_divergence": _words(cw, offset + diverge, offset + diverge + _CTX) if diverge is not None else "",
        "omitted": omitted,
    }


@dataclass(frozen=True)
class Occurrence:
    """One occurrence of a normalised quote in a document.

    Attributes:
        start, end: half-open character span in :attr:`DocChunks.joined` (the document's normalised chunks joined
            with one space).
        chunks: the chunks the span overlaps, in order (one: the quote is a contiguous span of that chunk; several:
            it crosses their boundaries).
    """

    start: int
    end: int
    chunks: tuple[Chunk, ...]

    def parts(self, doc: DocChunks) -> list[tuple[Chunk, str]]:
        """The quote split at chunk boundaries: ``(chunk, part)`` per chunk, each part a contiguous span of that
        chunk's normalised text (the joining spaces between chunks are dropped; no part is empty)."""
        out = []
        for c in self.chunks:
            lo = doc.starts[c.index]
            hi = lo + len(doc.norm[c.index])
            part = doc.joined[max(self.start, lo) : min(self.end, hi)].strip()
            if part:
                out.append((c, part))
        return out


def quote_occurrences(doc: DocChunks, quote_norm: str) -> list[Occurrence]:
    """Every occurrence of a normalised quote in the document, in document order (the one search of the project:
    V001 and ``goldset resolve`` both use it).

    Args:
        doc: the re-chunked document.
        quote_norm: the quote after the chunker's normaliser (non-empty).

    Returns:
        The occurrences (overlapping ones included), each with the chunks it covers; ``[]`` when the quote is not
        a contiguous span of the document.
    """
    out: list[Occurrence] = []
    if not quote_norm:
        return out
    start = doc.joined.find(quote_norm)
    while start != -1:
        end = start + len(quote_norm)
        out.append(Occurrence(start, end, tuple(doc.chunks_of_span(start, end))))
        start = doc.joined.find(quote_norm, start + 1)
    return out


def closest_chunk(doc: DocChunks, quote_norm: str, *, candidates: int = 5) -> tuple[int, dict] | None:
    """The chunk of ``doc`` whose closest contiguous match to a (not found) normalised quote is best.

    Chunks are shortlisted by how many distinct quote words they contain (the ``candidates`` best, ties by index),
    then ranked by the :func:`closest_match` similarity (ties: the smaller index).

    Returns:
        ``(chunk_index, closest_match(...))``, or ``None`` for a document without chunks.
    """
    if not doc.chunks:
        return None
    words = set(quote_norm.split(" "))
    overlap = [(-len(words.intersection(t.split(" "))), i) for i, t in enumerate(doc.norm)]
    short = [i for _, i in sorted(overlap)[: max(candidates, 1)]]
    best: tuple[float, int, dict] | None = None
    for i in short:
        cm = closest_match(quote_norm, doc.norm[i])
        if best is None or (cm["similarity"], -i) > (best[0], -best[1]):
            best = (cm["similarity"], i, cm)
    assert best is not None
    return best[1], best[2]


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
    for occ in quote_occurrences(doc, q):
        ids = [c.chunk_id for c in occ.chunks]
        if len(ids) > 1:
            spans.append(ids)
        else:
            singles.append(ids[0])
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
    if cm["compared_chars"] < cm["quote_chars"]:
        msg += f" (a quote of {cm['quote_chars']} characters: its first {cm['compared_chars']} were aligned)"
    return QuoteCheck(False, "not_contiguous", msg, {"cited": cited.chunk_id, **cm})


def choose_occurrence(occs: list[Occurrence], hint: int | None) -> tuple[Occurrence, str | None]:
    """The occurrence to cite and, when the choice was not forced, why (``harness goldset resolve``, step 1 of
    :mod:`harness.curation.resolve`, and the evidence matcher :mod:`harness.evaluation.evidence`).

    Args:
        occs: the quote's occurrences (:func:`quote_occurrences`; not empty).
        hint: the chunk index the evidence item names, or ``None``.

    Returns:
        ``(occurrence, reason or None)``: the occurrence containing chunk ``hint``, else the first inside a single
        chunk, else the first (one quote matcher in the project).
    """
    if len(occs) == 1:
        return occs[0], None
    where = ", ".join(" + ".join(c.chunk_id for c in o.chunks) for o in occs[:4]) + (", ..." if len(occs) > 4 else "")
    if hint is not None:
        for o in occs:
            if any(c.index == hint for c in o.chunks):
                return o, None
    single = [o for o in occs if len(o.chunks) == 1]
    pick = single[0] if single else occs[0]
    why = "the first inside one chunk" if single else "the first"
    return pick, f"quote occurs {len(occs)} times ({where}); cited {pick.chunks[0].chunk_id}, {why}"
