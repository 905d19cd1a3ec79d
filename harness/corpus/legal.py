r"""``md-legal-v1``: a legal-structure chunker for Mexican federal laws and DOF publications.

Natural units of this text are articles (``**Artículo 2 Bis.-**``), fracciones (``**XIV.**``, ``I.``),
transitorios (``**PRIMERO.-**``, ``**ARTÍCULO ÚNICO.-**``) and, in DOF notes, the ordinal points and cláusulas of
acuerdos and convenios (``PRIMERA. OBJETO.``). ``md-legal-v1`` starts a unit at each of them, merges short units
and splits long ones, so that a chunk is, as far as the word limits allow, one article or one fracción. Like every
chunker id, its behaviour is frozen (``tests/fixtures/chunker/md-legal-v1.expected.json``); any change of the rules
below needs a new id.

``md-legal-v1`` (defined exactly)
---------------------------------
1. **Source text, lines, headings, sections, words, heading paths** are those of ``md-words-v1``
   (:mod:`harness.corpus.chunker`, rules 1-4, the same ``_HEADING_RE`` and ``_WORD_RE``): NFC text with ``\n``
   line ends, split on ``\n``; ATX heading lines are not chunk text and set the heading path; a section is the
   maximal run of non-heading lines between headings; a word is ``\S+``. Chunks never cross a section boundary.
   Lines without a word are ignored below.
2. **Start lines.** A line (without its ``\n``) is a *start line* of kind K when ``re.match`` (at the line's first
   character) succeeds for the first of the patterns below, tried in this order (case-sensitive except inside
   ``(?i:...)``; ``\w`` is Unicode). ``{NAME}`` stands for the string defined under that name; a line indented
   under another continues it (join without the indentation). A test checks this list against the code::

       transitorio = {PREFIX}(?:(?:ART[ÍI]CULOS?|Art[íi]culos?|DISPOSICIONES|Disposiciones)[ \t]+)?
                     (?:TRANSITORI[OA]S?|Transitori[oa]s?)(?![^\W_])
       article     = {PREFIX}(?:ART[ÍI]CULO|Art[íi]culo)(?:{EMPH}[ \t]+{EMPH}|[ \t]+)(?:{NUM}|{ORD})
                     (?:[ \t]*{PUNCT}|{EMPH}|[ \t]*$)
       ordinal     = {PREFIX}{ORD}[ \t]*{EMPH}?[ \t]*{PUNCT}
       fraccion    = {PREFIX}{ROMAN}{EMPH}?[ \t]*(?:\.[ \t]*-|\.){EMPH}?(?![^\W_])
       PREFIX      = [ \t]*(?:>[ \t]*)*(?:\*\*|__|\*|_)?[ \t]*
       EMPH        = (?:\*\*|__|\*|_)
       PUNCT       = [.:\-–—]
       ROMAN       = (?=[IVXL])(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})
       NUM         = \d+(?:,\d{3})*(?:o|º|°|ª)?(?:[ \t-]*(?:(?i:bis|ter|qu[áa]ter|quintus|quinquies|sexies|septies|
                     octies|nonies|decies)|[A-Z])(?![^\W_])(?:[ \t]*\d+)?)*
       ORD         = (?=[A-ZÁÉÍÓÚÜ])(?i:[uú]nic[oa]|und[eé]cim[oa]|duod[eé]cim[oa]|{TENS}(?:[ \t]*{UNITS})?|
                     {UNITS})(?![^\W_])
       UNITS       = (?:primer[oa]?|segund[oa]|tercer[oa]?|cuart[oa]|quint[oa]|sext[oa]|s[eé]ptim[oa]|octav[oa]|
                     noven[oa])
       TENS        = (?:d[eé]cim[oa]|vig[eé]sim[oa]|trig[eé]sim[oa]|cuadrag[eé]sim[oa]|quincuag[eé]sim[oa]|
                     sexag[eé]sim[oa]|septuag[eé]sim[oa]|octog[eé]sim[oa]|nonag[eé]sim[oa])

   So: an optional blockquote (``>``) and emphasis opener; then, for an *article*, ``Artículo``/``ARTICULO``
   (``**Artículo** **5.-**`` too) and a number (``1o``, ``1,099``, ``2 Bis``, ``170-B``, ``1390 Bis 2``) or a
   Spanish ordinal 1st-99th (``Primero``, ``DÉCIMO PRIMERO``, ``Decimosexto``, ``Único``), followed by
   punctuation, an emphasis closer or the line end (``*Artículo reformado DOF ...*`` and ``Artículo 27 de la ...``
   are not starts); a bare ordinal followed by punctuation is an *ordinal* (transitorios ``PRIMERO.-``, acuerdo
   points, convenio cláusulas ``SEGUNDA.``); a Roman numeral I-XCIX followed by ``.`` or ``.-`` and then no letter
   or digit is a *fracción* (``C.`` is not: in this corpus it is an apartado or "Ciudadano"); ``TRANSITORIOS`` /
   ``Disposiciones Transitorias`` paragraphs that are not headings are *transitorio* markers. Incisos (``a)``),
   apartados (``A.``) and OCR-damaged numerals (``lI.``) are not starts.
3. **Units.** In each section, a unit begins at every start line and runs to the line before the next start line;
   the lines before the first start line form one *lead* unit. Kinds ``transitorio``, ``article`` and ``ordinal``
   are *article-level*; ``fraccion`` and ``lead`` are not.
4. **Split rule** (a unit of more than ``max_words`` (250) words). Each of its lines with n > ``max_words`` words is
   cut into k = ceil(n / ``max_words``) parts, part i (0-based) holding words floor(i·n/k) .. floor((i+1)·n/k) - 1.
   The unit's lines and parts are then packed in order: a line (or part) joins the current piece while the piece
   stays at or under ``max_words`` words, otherwise it starts the next piece. The first piece has the unit's kind,
   the others kind ``continuation`` (not article-level). A unit of at most ``max_words`` words is one piece.
5. **Merge rule** (``min_words`` = 40). The pieces of a section are visited in order with a current chunk c (empty
   at the section start). Piece p joins c when c is non-empty, words(c) + words(p) <= ``max_words`` and either
   words(c) < ``min_words`` or (words(p) < ``min_words`` and p is not article-level); otherwise c is closed (if
   non-empty) and p starts the next chunk. The last chunk of a section is closed at the section end. Hence a chunk
   under 40 words absorbs what follows it (within the section, also across articles: a run of ``(Se deroga)``
   articles becomes one chunk); a short fracción, lead or continuation joins the chunk before it; an article-level
   start never joins backwards; a unit of 40 or more words starts its own chunk unless the chunk before it has
   fewer than 40 words and room for it.
6. **Bounds.** Every chunk holds 1 .. ``max_words`` (250) words (no exception: 4 and 5 never exceed it). A chunk
   has fewer than ``min_words`` words only if the next piece of its section would overflow it or it is the last of
   its section.
7. **Chunks.** As ``md-words-v1`` rule 6: a chunk's text is the NFC source slice from the first character of its
   first word to the last character of its last word; ``char_start``/``char_end`` are the half-open offsets; the
   heading path is that of its section; chunks are numbered from 0 in document order, ``chunk_id =
   f"{doc_id}#{index}"``. Every word outside heading lines lies in exactly one chunk, in order.
8. **Normaliser:** :func:`harness.corpus.chunker.normalize_text` (``md-words-v1`` rule 7), unchanged.

Why 250 and 40 (measured on ``mx-leyes-dof`` before the fixture was frozen: 143,415 units, 63,071 articles;
``benchmarks/bench_chunkers.py``): 250 words is the smallest context budget of the evidence-recall-at-budget metrics
(``evidence_recall@250w``), so every chunk fits alone in every budget; 88.6 % of articles (an article-level start to
the next one or to the next heading, fracciones included) and 97.2 % of units have at most 250 words. 57.6 % of units
have fewer than 40 words (fracción median 27, article median 46); with ``min_words`` 40, 6.2 % of the 82,292 chunks
have fewer than 40 words (34.1 % with 20, 17.9 % with 30), while a fracción of 40 words or more still starts its
own chunk (20,434 chunks start at a fracción, 35,114 at an article, 9,649 at an ordinal, 183 at a transitorio).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from harness.corpus.chunker import _HEADING_RE, _WORD_RE, CHUNKERS, Chunk, Chunker

__all__ = ["ARTICLE_LEVEL", "DEFINITIONS", "KINDS", "START_PATTERNS", "MdLegalChunker", "classify_line", "expand"]

DEFINITIONS: dict[str, str] = {
    "transitorio": r"{PREFIX}(?:(?:ART[ÍI]CULOS?|Art[íi]culos?|DISPOSICIONES|Disposiciones)[ \t]+)?"
    r"(?:TRANSITORI[OA]S?|Transitori[oa]s?)(?![^\W_])",
    "article": r"{PREFIX}(?:ART[ÍI]CULO|Art[íi]culo)(?:{EMPH}[ \t]+{EMPH}|[ \t]+)(?:{NUM}|{ORD})"
    r"(?:[ \t]*{PUNCT}|{EMPH}|[ \t]*$)",
    "ordinal": r"{PREFIX}{ORD}[ \t]*{EMPH}?[ \t]*{PUNCT}",
    "fraccion": r"{PREFIX}{ROMAN}{EMPH}?[ \t]*(?:\.[ \t]*-|\.){EMPH}?(?![^\W_])",
    "PREFIX": r"[ \t]*(?:>[ \t]*)*(?:\*\*|__|\*|_)?[ \t]*",
    "EMPH": r"(?:\*\*|__|\*|_)",
    "PUNCT": r"[.:\-–—]",
    "ROMAN": r"(?=[IVXL])(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})",
    "NUM": r"\d+(?:,\d{3})*(?:o|º|°|ª)?(?:[ \t-]*(?:(?i:bis|ter|qu[áa]ter|quintus|quinquies|sexies|septies|"
    r"octies|nonies|decies)|[A-Z])(?![^\W_])(?:[ \t]*\d+)?)*",
    "ORD": r"(?=[A-ZÁÉÍÓÚÜ])(?i:[uú]nic[oa]|und[eé]cim[oa]|duod[eé]cim[oa]|{TENS}(?:[ \t]*{UNITS})?|"
    r"{UNITS})(?![^\W_])",
    "UNITS": r"(?:primer[oa]?|segund[oa]|tercer[oa]?|cuart[oa]|quint[oa]|sext[oa]|s[eé]ptim[oa]|octav[oa]|"
    r"noven[oa])",
    "TENS": r"(?:d[eé]cim[oa]|vig[eé]sim[oa]|trig[eé]sim[oa]|cuadrag[eé]sim[oa]|quincuag[eé]sim[oa]|"
    r"sexag[eé]sim[oa]|septuag[eé]sim[oa]|octog[eé]sim[oa]|nonag[eé]sim[oa])",
}
"""Rule 2's definitions exactly as the module docstring writes them (``{NAME}`` refers to another entry)."""

KINDS = ("transitorio", "article", "ordinal", "fraccion")
"""Start-line kinds in the order their patterns are tried (rule 2)."""

_NAME_RE = re.compile(r"\{([A-Z]+)\}")


def expand(name: str) -> str:
    """The regular expression of ``DEFINITIONS[name]`` with every ``{NAME}`` replaced, recursively.

    Raises:
        KeyError: an unknown name.
    """
    return _NAME_RE.sub(lambda m: expand(m.group(1)), DEFINITIONS[name])


START_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple((k, re.compile(expand(k))) for k in KINDS)
"""The start-line patterns of rule 2, in the order they are tried: ``(kind, compiled pattern)``."""

ARTICLE_LEVEL = frozenset({"transitorio", "article", "ordinal"})
"""Unit kinds that never join the chunk before them (rule 5)."""

# One alternation with a group per kind: for a match anchored at the line start, ``re`` returns the first
# alternative that matches, which is exactly "the first pattern in START_PATTERNS order" (same kind on all 591,690
# lines of the corpus; 1.24 s instead of 1.66 s for four separate matches).
_START_RE = re.compile("|".join(f"(?P<{kind}>{rx.pattern})" for kind, rx in START_PATTERNS))

_Spans = list[tuple[int, int]]


def classify_line(line: str) -> str | None:
    """Kind of start line (rule 2 of the module docstring), or None for a line that starts no unit.

    Args:
        line: one line of the NFC source, without its ``\\n``.

    Returns:
        ``"transitorio"``, ``"article"``, ``"ordinal"``, ``"fraccion"`` or None.
    """
    m = _START_RE.match(line)
    return None if m is None else m.lastgroup


def _split_unit(lines: list[_Spans], max_words: int) -> list[_Spans]:
    """Rule 4: cut lines over ``max_words`` into k equal parts, then pack lines/parts into pieces <= max_words."""
    parts: list[_Spans] = []
    for spans in lines:
        n = len(spans)
        if n <= max_words:
            parts.append(spans)
        else:
            k = -(-n // max_words)
            parts.extend(spans[i * n // k : (i + 1) * n // k] for i in range(k))
    pieces: list[_Spans] = [[]]
    for part in parts:
        if pieces[-1] and len(pieces[-1]) + len(part) > max_words:
            pieces.append([])
        pieces[-1].extend(part)
    return pieces


def _merge_section(units: list[tuple[str, list[_Spans]]], max_words: int, min_words: int) -> list[_Spans]:
    """Rules 4-5 for one section: the word spans of each of its chunks, in order."""
    out: list[_Spans] = []
    cur: _Spans = []
    for kind, lines in units:
        if sum(len(x) for x in lines) <= max_words:
            pieces = [[s for x in lines for s in x]]
        else:
            pieces = _split_unit(lines, max_words)
        for j, piece in enumerate(pieces):
            article_level = j == 0 and kind in ARTICLE_LEVEL
            fits = len(cur) + len(piece) <= max_words
            if cur and fits and (len(cur) < min_words or (len(piece) < min_words and not article_level)):
                cur.extend(piece)
            else:
                if cur:
                    out.append(cur)
                cur = list(piece)
    if cur:
        out.append(cur)
    return out


@dataclass(frozen=True)
class MdLegalChunker(Chunker):
    """``md-legal-v1``: articles, fracciones and transitorios as chunks of 1-250 words (see the module docstring).

    ``params``: ``max_words`` (250, the hard upper bound of a chunk's words) and ``min_words`` (40, the merge
    threshold). Other values give a different chunker and must get a different ``chunker_id``.
    """

    chunker_id: str = "md-legal-v1"
    params: dict = field(default_factory=lambda: {"max_words": 250, "min_words": 40})

    def chunk(self, doc_id: str, text: str) -> list[Chunk]:
        """Chunk one document.

        Args:
            doc_id: document id (used in chunk ids).
            text: source text already decoded with :func:`harness.corpus.chunker.decode_source` (NFC, ``\\n``).

        Returns:
            Chunks in document order, each of 1 .. ``max_words`` words; an empty list for a document without words.
        """
        max_words = int(self.params["max_words"])
        min_words = int(self.params["min_words"])
        chunks: list[Chunk] = []

        def flush(units: list[tuple[str, list[_Spans]]], heading_path: tuple[str, ...]) -> None:
            for spans in _merge_section(units, max_words, min_words):
                s, e = spans[0][0], spans[-1][1]
                idx = len(chunks)
                chunks.append(
                    Chunk(
                        chunk_id=f"{doc_id}#{idx}",
                        doc_id=doc_id,
                        index=idx,
                        heading_path=heading_path,
                        char_start=s,
                        char_end=e,
                        n_words=len(spans),
                        text=text[s:e],
                    )
                )

        path: list[tuple[int, str]] = []
        section_path: tuple[str, ...] = ()
        units: list[tuple[str, list[_Spans]]] = []
        pos = 0
        n = len(text)
        while pos <= n:
            nl = text.find("\n", pos)
            line_end = n if nl == -1 else nl
            m = _HEADING_RE.match(text, pos, line_end)
            if m is not None:
                flush(units, section_path)
                units = []
                level = len(m.group(1))
                path = [(lv, t) for lv, t in path if lv < level]
                path.append((level, (m.group(2) or "").strip()))
                section_path = tuple(t for _, t in path)
            else:
                spans = [w.span() for w in _WORD_RE.finditer(text, pos, line_end)]
                if spans:
                    kind = classify_line(text[pos:line_end])
                    if kind is not None or not units:
                        units.append((kind or "lead", [spans]))
                    else:
                        units[-1][1].append(spans)
            if nl == -1:
                break
            pos = nl + 1
        flush(units, section_path)
        return chunks


CHUNKERS["md-legal-v1"] = MdLegalChunker()
