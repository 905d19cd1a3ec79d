"""Versioned, deterministic Markdown chunkers and the quote normaliser that belongs to them.

A chunker is identified by an id such as ``md-words-v1``. Its behaviour is frozen by the golden fixture in
``tests/fixtures/chunker/``; any change of behaviour, however small, must get a new id, because gold sets cite
chunk ids (``<doc_id>#<index>``) and exact quotes produced by one specific chunker.

``md-words-v1`` (defined exactly)
---------------------------------
1. **Source text.** The file's bytes are decoded as strict UTF-8 (a leading BOM is dropped), ``\\r\\n`` and
   lone ``\\r`` become ``\\n``, and the text is NFC-normalised. Every character offset refers to this text.
2. **Lines and headings.** The text is split on ``\\n``. A heading line matches the CommonMark ATX form
   `` {0,3}(#{1,6})(?:[ \\t]+(.*?))?[ \\t#]*$`` (the closing ``#`` run is dropped). Heading lines are *not* chunk
   text. A heading of level L replaces the heading-path entries of level >= L; the heading path of a chunk is the
   list of heading texts (stripped, in order of level) in force where the chunk's section starts. Setext headings and
   code fences get no special treatment.
3. **Sections.** A section is the maximal run of non-heading lines between two heading lines (or the start/end of
   the document). Chunks never cross a section boundary.
4. **Words.** A word is a maximal run of non-whitespace characters (``\\S+`` in Python's Unicode ``re``).
5. **Windows.** The words of a section are cut into consecutive windows of ``max_words`` (100) words, no overlap.
   If the last window of a section has fewer than ``min_tail_words`` (20) words and the section has an earlier
   window, the tail is merged into that earlier window (so a chunk holds at most ``max_words + min_tail_words - 1``
   words). A section with fewer than ``min_tail_words`` words in all is one chunk.
6. **Chunks.** A chunk's text is the NFC source slice from the first character of its first word to the last
   character of its last word (inner newlines and spacing preserved); ``char_start``/``char_end`` are the slice's
   half-open offsets. Chunks are numbered from 0 in document order: ``chunk_id = f"{doc_id}#{index}"``.
7. **Normaliser** (``normalize_text``), used for quote matching and duplicate detection: NFC; typographic
   double quotes (“ ” „ ‟ « » ″) become ``"``; typographic single quotes (‘ ’ ‚ ‛ ′) become ``'``; the dashes
   ‐ ‑ ‒ – — ― − become ``-``; a backslash before ASCII punctuation is dropped (pandoc escapes); the Markdown inline
   markup characters ``*``, ``_`` and backtick are removed; every whitespace run (Unicode whitespace, NBSP
   included) becomes one space; leading and trailing spaces are stripped. Case is kept. These steps are repeated
   until the text no longer changes (so ``\\\\:`` and ``\\“`` normalise like ``:`` and ``"``; idempotent).

Changing any of the rules above changes the chunker id.
"""

from __future__ import annotations

import re
import unicodedata
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from harness.errors import HarnessInputError

__all__ = [
    "CHUNKERS",
    "Chunk",
    "Chunker",
    "MdWordsChunker",
    "decode_source",
    "get_chunker",
    "normalize_text",
    "normalize_with_offsets",
]

_HEADING_RE = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t#]*$")
_WORD_RE = re.compile(r"\S+")

_DQUOTES = "\u201c\u201d\u201e\u201f\u00ab\u00bb\u2033"
_SQUOTES = "\u2018\u2019\u201a\u201b\u2032"
_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"
_TRANSLATE = {ord(c): '"' for c in _DQUOTES}
_TRANSLATE.update({ord(c): "'" for c in _SQUOTES})
_TRANSLATE.update({ord(c): "-" for c in _DASHES})
_TRANSLATE.update({ord(c): None for c in "*_`"})
_BACKSLASH_ESCAPE_RE = re.compile(r"\\([!-/:-@\[-`{-~])")
_WS_RE = re.compile(r"\s+")


def normalize_text(text: str) -> str:
    """Normalise text for quote matching under ``md-words-v1`` (rule 7 of the module docstring).

    Args:
        text: any string (a quote, a chunk's text, a question).

    Returns:
        The normalised string; idempotent (``normalize_text(normalize_text(x)) == normalize_text(x)``).
    """
    t = unicodedata.normalize("NFC", text)
    while True:
        prev = t
        t = _BACKSLASH_ESCAPE_RE.sub(r"\1", t)
        t = t.translate(_TRANSLATE)
        t = _WS_RE.sub(" ", t).strip()
        if t == prev:
            return t


def normalize_with_offsets(text: str) -> tuple[str, list[int]]:
    """``normalize_text(text)`` together with, per output character, the offset of the input character it comes from.

    The steps of :func:`normalize_text` (rule 7 of ``md-words-v1``, repeated until stable)
    applied to ``(character, offset)`` pairs: a dropped escaping backslash or markup character drops its pair, a
    translated character keeps its offset, a whitespace run becomes one space at the run's first offset. ``text``
    must already be NFC (chunk texts are); a property test checks the string equals ``normalize_text``.

    Returns:
        ``(normalised, offsets)`` with ``len(offsets) == len(normalised)``, offsets strictly increasing in
        ``[0, len(text))``.
    """
    chars = list(text)
    offs = list(range(len(text)))
    while True:
        prev = "".join(chars)
        drop = {m.start() for m in _BACKSLASH_ESCAPE_RE.finditer(prev)}
        pairs = [(c, o) for i, (c, o) in enumerate(zip(chars, offs, strict=True)) if i not in drop]
        pairs = [(t, o) for c, o in pairs if (t := _TRANSLATE.get(ord(c), c)) is not None]
        cur = "".join(c for c, _ in pairs)
        out: list[tuple[str, int]] = []
        last = 0
        for m in _WS_RE.finditer(cur):
            out += pairs[last : m.start()]
            out.append((" ", pairs[m.start()][1]))
            last = m.end()
        out += pairs[last:]
        while out and out[0][0] == " ":
            out.pop(0)
        while out and out[-1][0] == " ":
            out.pop()
        chars = [c for c, _ in out]
        offs = [o for _, o in out]
        if "".join(chars) == prev:
            return prev, offs


def decode_source(data: bytes, *, origin: str = "<bytes>") -> str:
    """Decode a Markdown source as rule 1 of ``md-words-v1`` prescribes.

    Args:
        data: raw file bytes.
        origin: file name used in the error message.

    Returns:
        The NFC text with ``\\n`` line ends.

    Raises:
        HarnessInputError: the bytes are not valid UTF-8 (message names the file and the byte offset).
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HarnessInputError(f"{origin}: not valid UTF-8 at byte {exc.start}") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return unicodedata.normalize("NFC", text)


@dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk of one document.

    Attributes:
        chunk_id: ``f"{doc_id}#{index}"``.
        doc_id: the document's id.
        index: 0-based position of the chunk in its document.
        heading_path: heading texts in force, outermost first (may be empty).
        char_start: offset of the first character in the NFC source text (inclusive).
        char_end: offset after the last character (exclusive).
        n_words: number of words (``\\S+`` runs) in the chunk.
        text: ``source[char_start:char_end]``.
    """

    chunk_id: str
    doc_id: str
    index: int
    heading_path: tuple[str, ...]
    char_start: int
    char_end: int
    n_words: int
    text: str


@dataclass(frozen=True)
class Chunker(ABC):
    """Base of versioned chunkers; ``chunker_id`` and ``params`` identify the behaviour exactly."""

    chunker_id: str
    params: dict = field(default_factory=dict)

    @abstractmethod
    def chunk(self, doc_id: str, text: str) -> list[Chunk]:
        """Split the NFC ``text`` of document ``doc_id`` into chunks."""

    def normalize(self, text: str) -> str:
        """The quote normaliser that belongs to this chunker."""
        return normalize_text(text)


@dataclass(frozen=True)
class MdWordsChunker(Chunker):
    """``md-words-v1``: heading-bounded windows of at most ``max_words`` words (see the module docstring)."""

    chunker_id: str = "md-words-v1"
    params: dict = field(default_factory=lambda: {"max_words": 100, "min_tail_words": 20})

    def chunk(self, doc_id: str, text: str) -> list[Chunk]:
        """Chunk one document.

        Args:
            doc_id: document id (used in chunk ids).
            text: source text already decoded with :func:`decode_source` (NFC, ``\\n`` line ends).

        Returns:
            Chunks in document order; an empty list for a document without words.
        """
        max_words = int(self.params["max_words"])
        min_tail = int(self.params["min_tail_words"])
        chunks: list[Chunk] = []
        path: list[tuple[int, str]] = []
        section_start = 0
        section_path: tuple[str, ...] = ()

        def flush(start: int, end: int) -> None:
            if end <= start:
                return
            spans = [m.span() for m in _WORD_RE.finditer(text, start, end)]
            if not spans:
                return
            windows = [spans[i : i + max_words] for i in range(0, len(spans), max_words)]
            if len(windows) > 1 and len(windows[-1]) < min_tail:
                tail = windows.pop()
                windows[-1] = windows[-1] + tail
            for w in windows:
                s, e = w[0][0], w[-1][1]
                idx = len(chunks)
                chunks.append(
                    Chunk(
                        chunk_id=f"{doc_id}#{idx}",
                        doc_id=doc_id,
                        index=idx,
                        heading_path=section_path,
                        char_start=s,
                        char_end=e,
                        n_words=len(w),
                        text=text[s:e],
                    )
                )

        pos = 0
        n = len(text)
        while pos <= n:
            nl = text.find("\n", pos)
            line_end = n if nl == -1 else nl
            m = _HEADING_RE.match(text, pos, line_end)
            if m is not None:
                flush(section_start, pos)
                level = len(m.group(1))
                title = (m.group(2) or "").strip()
                path = [(lv, t) for lv, t in path if lv < level]
                path.append((level, title))
                section_path = tuple(t for _, t in path)
                section_start = line_end + 1 if nl != -1 else n
            if nl == -1:
                break
            pos = nl + 1
        flush(section_start, n)
        return chunks


CHUNKERS: dict[str, Chunker] = {"md-words-v1": MdWordsChunker()}


def get_chunker(chunker_id: str) -> Chunker:
    """Return the chunker registered under ``chunker_id``.

    Raises:
        HarnessInputError: unknown chunker id (exit code 2 at the CLI).
    """
    try:
        return CHUNKERS[chunker_id]
    except KeyError:
        known = ", ".join(sorted(CHUNKERS))
        raise HarnessInputError(f"unknown chunker {chunker_id!r} (known: {known})") from None
