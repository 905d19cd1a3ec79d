"""Text analyzers for BM25 and TF-IDF, one per corpus language, in a registry keyed by a stable id.

Every analyzer maps a text to index terms; its id goes into index cache keys and run manifests, so changing any
rule of an analyzer means a new id. The registry (:data:`ANALYZERS`, id -> class) and the language map
(:data:`LANGUAGE_ANALYZERS`, ISO 639-1 code -> id):

====  ========================  =============================================  ==================================
code  id                        stop words                                     stemmer (PyStemmer Snowball)
====  ========================  =============================================  ==================================
es    ``es-snowball-fold-v1``   ``bm25s.stopwords.STOPWORDS_SPANISH`` (313)     ``spanish``, then accents folded
en    ``en-snowball-v1``        ``bm25s.stopwords.STOPWORDS_EN`` (33)           ``english``
pt    ``pt-snowball-v1``        ``bm25s.stopwords.STOPWORDS_PORTUGUESE`` (207)  ``portuguese``
fr    ``fr-snowball-v1``        ``bm25s.stopwords.STOPWORDS_FRENCH`` (157)      ``french``
de    ``de-snowball-v1``        ``bm25s.stopwords.STOPWORDS_GERMAN`` (232)      ``german``
it    ``it-snowball-v1``        ``bm25s.stopwords.STOPWORDS_ITALIAN`` (279)     ``italian``
--    ``neutral-word-v1``       none                                           none
====  ========================  =============================================  ==================================

bm25s's lists are NLTK's stop-word corpus (snapshot named in ``bm25s.tokenization``), except English, which is the
33-word Lucene / Elasticsearch English list (bm25s's default ``stopwords="en"``). Any other ISO 639-1 code maps to
``neutral-word-v1`` (:func:`analyzer_for_language`).

``es-snowball-fold-v1`` (defined exactly; the project's original analyzer, unchanged):

1. NFC, then ``str.lower()``.
2. Tokens are the matches of ``\\w+`` (Unicode word characters: letters, digits, underscore). Single-character
   tokens and numbers (article numerals such as ``27``, years such as ``2024``, ordinals such as ``5o``) are kept.
3. Tokens in bm25s's Spanish stop-word list (``bm25s.stopwords.STOPWORDS_SPANISH``, 313 words, accented forms)
   are dropped.
4. Each remaining token is stemmed with the Snowball Spanish stemmer (PyStemmer ``Stemmer('spanish')``), which
   expects accented input; *then* accents are folded (NFD, combining marks removed, so ``ñ`` -> ``n``).
   Stemming before folding matters: the Spanish stemmer's suffix rules use the accented forms.

Changing any rule changes :attr:`SpanishAnalyzer.analyzer_id` (indexes are keyed by it).

Which analyzer a run uses (:func:`resolve_analyzer`): a system's own option (``bm25:analyzer=pt``), else the run's
``--analyzer``, else the language every ``metadata.jsonl`` record of the corpus declares (``language``), else
``es-snowball-fold-v1`` (a corpus that declares no language, or whose records disagree), said in one line.
:func:`language_check` compares a sample of the corpus with the analyzer's language (stop-word hit rates).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import ClassVar, Protocol

import bm25s.stopwords
import Stemmer
from bm25s.stopwords import STOPWORDS_SPANISH

from harness.errors import HarnessInputError

_TOKEN_RE = re.compile(r"\w+")
_TOKEN2_RE = re.compile(r"\w\w+")  # bm25s's default (?u)\b\w\w+\b: runs of two or more word characters


def fold_accents(token: str) -> str:
    """Remove combining marks after NFD decomposition (``"acción"`` -> ``"accion"``, ``"ñ"`` -> ``"n"``)."""
    decomposed = unicodedata.normalize("NFD", token)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


class _TermAnalyzer:
    """Shared by the stemming analyzers: NFC, ``str.lower()``, the class's token pattern (:attr:`TOKENS`), then each
    subclass's ``_term(token) -> term | None`` per token (``None``: dropped; stems cached per distinct token)."""

    TOKENS: ClassVar[re.Pattern[str]] = _TOKEN_RE
    _term: Callable[[str], str | None]  # defined by each subclass

    def tokenize(self, text: str) -> list[str]:
        """Analyse one text into index terms (may be empty)."""
        get = self._term
        terms = []
        for tok in self.TOKENS.findall(unicodedata.normalize("NFC", text).lower()):
            t = get(tok)
            if t is not None:
                terms.append(t)
        return terms

    def tokenize_many(self, texts: Iterable[str]) -> list[list[str]]:
        """Analyse many texts."""
        return [self.tokenize(t) for t in texts]


class SpanishAnalyzer(_TermAnalyzer):
    """The ``es-snowball-fold-v1`` analyzer (see the module docstring).

    Stems are cached per distinct token, so analysing a corpus costs one regex pass plus dictionary look-ups.
    """

    analyzer_id = "es-snowball-fold-v1"
    language = "es"  # ISO 639-1

    def __init__(self) -> None:
        self._stemmer = Stemmer.Stemmer("spanish")
        self._stop = frozenset(STOPWORDS_SPANISH)
        self._cache: dict[str, str | None] = {}

    def config(self) -> dict:
        """Identifies the analyzer in run manifests and index keys."""
        return {
            "analyzer_id": self.analyzer_id,
            "token_pattern": r"\w+",
            "stopwords": "bm25s.stopwords.STOPWORDS_SPANISH",
            "n_stopwords": len(self._stop),
            "stemmer": "snowball-spanish (PyStemmer)",
            "order": "lowercase > stopwords > stem > fold accents",
        }

    def _term(self, tok: str) -> str | None:
        term = self._cache.get(tok, "")
        if term != "":
            return term
        if tok in self._stop:
            term = None
        else:
            term = fold_accents(self._stemmer.stemWord(tok))
        self._cache[tok] = term
        return term


class Analyzer(Protocol):
    """What BM25 and TF-IDF need of an analyzer (every class of :data:`ANALYZERS` is one)."""

    analyzer_id: str
    language: str | None

    def config(self) -> dict:
        """Identifies the analyzer in run manifests and index keys."""
        ...

    def tokenize(self, text: str) -> list[str]:
        """Analyse one text into index terms."""
        ...

    def tokenize_many(self, texts: Iterable[str]) -> list[list[str]]:
        """Analyse many texts."""
        ...


class _SnowballAnalyzer(_TermAnalyzer):
    """Shared rules of the ``<code>-snowball-v1`` analyzers (each subclass's docstring defines one exactly):

    1. NFC, then ``str.lower()``.
    2. Tokens are the matches of ``\\w\\w+``: maximal runs of two or more Unicode word characters (bm25s's default
       token pattern ``(?u)\\b\\w\\w+\\b``, the reference tokenisation of BEIR's BM25 figures): one-character
       tokens (``s`` of a possessive, ``i``, single digits) are dropped, numbers of two or more digits kept.
    3. Tokens in the subclass's bm25s stop-word list are dropped (the list holds lowercase NFC words, accented where
       the language accents them, so they match step 1's tokens).
    4. Each remaining token is stemmed with the subclass's Snowball stemmer (PyStemmer). No accent folding.

    Stems are cached per distinct token.
    """

    TOKENS: ClassVar[re.Pattern[str]] = _TOKEN2_RE
    analyzer_id: ClassVar[str]
    language: ClassVar[str]
    stemmer_name: ClassVar[str]
    stopwords_name: ClassVar[str]

    def __init__(self) -> None:
        self._stemmer = Stemmer.Stemmer(self.stemmer_name)
        self._stop = frozenset(getattr(bm25s.stopwords, self.stopwords_name))
        self._cache: dict[str, str | None] = {}

    def config(self) -> dict:
        """Identifies the analyzer in run manifests and index keys."""
        return {
            "analyzer_id": self.analyzer_id,
            "token_pattern": r"\w\w+",
            "stopwords": f"bm25s.stopwords.{self.stopwords_name}",
            "n_stopwords": len(self._stop),
            "stemmer": f"snowball-{self.stemmer_name} (PyStemmer)",
            "order": "lowercase > stopwords > stem",
        }

    def _term(self, tok: str) -> str | None:
        term = self._cache.get(tok, "")
        if term != "":
            return term
        term = None if tok in self._stop else self._stemmer.stemWord(tok)
        self._cache[tok] = term
        return term


class EnglishAnalyzer(_SnowballAnalyzer):
    """``en-snowball-v1``: NFC and ``str.lower()``; tokens ``\\w\\w+`` (runs of two or more word characters; one-
    character tokens dropped); tokens in ``bm25s.stopwords.STOPWORDS_EN`` dropped (33 words: the Lucene /
    Elasticsearch English stop list, bm25s's ``stopwords="en"``); each remaining token stemmed with Snowball
    ``english`` (Porter2; PyStemmer ``Stemmer('english')``). No accent folding. The same terms as
    ``bm25s.tokenize(texts, stopwords="en", stemmer=Stemmer.Stemmer("english"))`` (which lowercases, keeps
    ``(?u)\\b\\w\\w+\\b`` tokens, drops stop words, then stems), plus NFC."""

    analyzer_id = "en-snowball-v1"
    language = "en"
    stemmer_name = "english"
    stopwords_name = "STOPWORDS_EN"


class PortugueseAnalyzer(_SnowballAnalyzer):
    """``pt-snowball-v1``: NFC and ``str.lower()``; tokens ``\\w\\w+`` (runs of two or more word characters, so the
    articles ``a`` / ``o`` and one-digit numbers are dropped); tokens in ``bm25s.stopwords.STOPWORDS_PORTUGUESE``
    dropped (207 words, NLTK's Portuguese list, accented forms); each remaining token stemmed with Snowball
    ``portuguese`` (PyStemmer ``Stemmer('portuguese')``). No accent folding."""

    analyzer_id = "pt-snowball-v1"
    language = "pt"
    stemmer_name = "portuguese"
    stopwords_name = "STOPWORDS_PORTUGUESE"


class FrenchAnalyzer(_SnowballAnalyzer):
    """``fr-snowball-v1``: NFC and ``str.lower()``; tokens ``\\w\\w+`` (runs of two or more word characters, so
    ``l'état`` gives ``état`` alone); tokens in ``bm25s.stopwords.STOPWORDS_FRENCH`` dropped (157 words, NLTK's French
    list, accented forms); each remaining token stemmed with Snowball ``french`` (PyStemmer ``Stemmer('french')``).
    No accent folding."""

    analyzer_id = "fr-snowball-v1"
    language = "fr"
    stemmer_name = "french"
    stopwords_name = "STOPWORDS_FRENCH"


class GermanAnalyzer(_SnowballAnalyzer):
    """``de-snowball-v1``: NFC and ``str.lower()``; tokens ``\\w\\w+`` (runs of two or more word characters;
    compounds are not split); tokens in ``bm25s.stopwords.STOPWORDS_GERMAN`` dropped (232 words, NLTK's German list,
    with umlauts and ``ß``); each remaining token stemmed with Snowball ``german`` (PyStemmer ``Stemmer('german')``,
    whose rules map ``ß`` to ``ss`` and umlauts to their base vowels). No other folding."""

    analyzer_id = "de-snowball-v1"
    language = "de"
    stemmer_name = "german"
    stopwords_name = "STOPWORDS_GERMAN"


class ItalianAnalyzer(_SnowballAnalyzer):
    """``it-snowball-v1``: NFC and ``str.lower()``; tokens ``\\w\\w+`` (runs of two or more word characters, so
    ``dell'anno`` gives ``dell`` and ``anno``); tokens in ``bm25s.stopwords.STOPWORDS_ITALIAN`` dropped (279 words,
    NLTK's Italian list, accented forms); each remaining token stemmed with Snowball ``italian`` (PyStemmer
    ``Stemmer('italian')``). No accent folding."""

    analyzer_id = "it-snowball-v1"
    language = "it"
    stemmer_name = "italian"
    stopwords_name = "STOPWORDS_ITALIAN"


class NeutralAnalyzer:
    """``neutral-word-v1``, for languages without a stemmer here: NFC, ``str.lower()``, tokens ``\\w+`` (Unicode word
    characters), every token kept as it is: no stop words, no stemming, no folding."""

    analyzer_id = "neutral-word-v1"
    language: str | None = None

    def config(self) -> dict:
        """Identifies the analyzer in run manifests and index keys."""
        return {
            "analyzer_id": self.analyzer_id,
            "token_pattern": r"\w+",
            "stopwords": None,
            "stemmer": None,
            "order": "lowercase",
        }

    def tokenize(self, text: str) -> list[str]:
        """Analyse one text into index terms (may be empty)."""
        return _TOKEN_RE.findall(unicodedata.normalize("NFC", text).lower())

    def tokenize_many(self, texts: Iterable[str]) -> list[list[str]]:
        """Analyse many texts."""
        return [self.tokenize(t) for t in texts]


DEFAULT_ANALYZER = SpanishAnalyzer.analyzer_id
"""The analyzer of a corpus that declares no language (or whose records disagree): the project's original one."""

ANALYZERS: dict[str, type] = {
    c.analyzer_id: c
    for c in (
        SpanishAnalyzer,
        EnglishAnalyzer,
        PortugueseAnalyzer,
        FrenchAnalyzer,
        GermanAnalyzer,
        ItalianAnalyzer,
        NeutralAnalyzer,
    )
}
"""``{analyzer id: class}``: every analyzer, by its stable id."""

LANGUAGE_ANALYZERS: dict[str, str] = {c.language: c.analyzer_id for c in ANALYZERS.values() if c.language}
"""``{ISO 639-1 code: analyzer id}`` for the languages with a stemmer here (es, en, pt, fr, de, it)."""

LANGUAGE_NAMES = {"es": "Spanish", "en": "English", "pt": "Portuguese", "fr": "French", "de": "German", "it": "Italian"}

_ISO_639_1 = re.compile(r"[a-z]{2}")


def is_language_code(value: object) -> bool:
    """True for a two-letter lowercase ISO 639-1 code (``"en"``); the shape is checked, not the list of codes."""
    return isinstance(value, str) and _ISO_639_1.fullmatch(value) is not None


def analyzer_for_language(code: str) -> str:
    """The analyzer id for an ISO 639-1 code: a Snowball analyzer for es, en, pt, fr, de, it, ``neutral-word-v1``
    for any other code."""
    return LANGUAGE_ANALYZERS.get(code, NeutralAnalyzer.analyzer_id)


def analyzer_id_of(name: str, *, where: str = "--analyzer") -> str:
    """The analyzer id a user's name means: an id of :data:`ANALYZERS`, ``neutral``, or an ISO 639-1 code
    (:func:`analyzer_for_language`).

    Raises:
        HarnessInputError: neither (one line naming ``where`` and the known ids).
    """
    name = str(name).strip()
    if name in ANALYZERS:
        return name
    if name == "neutral":
        return NeutralAnalyzer.analyzer_id
    if is_language_code(name):
        return analyzer_for_language(name)
    raise HarnessInputError(
        f"{where}: unknown analyzer {name!r} (an ISO 639-1 code such as en, or one of: {', '.join(ANALYZERS)})"
    )


def get_analyzer(name: str, *, where: str = "--analyzer") -> Analyzer:
    """A new analyzer for an id, ``neutral`` or an ISO 639-1 code (:func:`analyzer_id_of`)."""
    return ANALYZERS[analyzer_id_of(name, where=where)]()


# --------------------------------------------------------------------------------------------------------------------
# Which analyzer a corpus gets


def declared_language(languages: Iterable[object]) -> tuple[str | None, str]:
    """The language a corpus declares, from its documents' ``language`` values (``None`` where a record has none).

    Returns:
        ``(code, description)``: ``code`` when every record declares the same one, else ``None`` with why
        (``"declares no language"`` or ``"records disagree on language (en 3, fr 1, none 2)"``).
    """
    counts: dict[str, int] = {}
    for v in languages:
        key = v if isinstance(v, str) and v else "none"
        counts[key] = counts.get(key, 0) + 1
    if not counts or set(counts) == {"none"}:
        return None, "declares no language"
    if len(counts) == 1:
        code = next(iter(counts))
        return code, f"declares language {code}"
    detail = ", ".join(f"{k} {n}" for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return None, f"records disagree on language ({detail})"


@dataclass(frozen=True)
class AnalyzerChoice:
    """The analyzer a system uses and why.

    Attributes:
        analyzer_id: the id (:data:`ANALYZERS`).
        chosen_by: ``"option"`` (a system's ``analyzer=`` or the run's ``--analyzer``), ``"corpus language"`` or
            ``"default"`` (the corpus declares none, or its records disagree).
        note: the one line a run prints when the default was taken (``None`` otherwise).
    """

    analyzer_id: str
    chosen_by: str
    note: str | None = None

    def record(self) -> dict:
        """``{"analyzer_id", "chosen_by"}`` for the run manifest."""
        return {"analyzer_id": self.analyzer_id, "chosen_by": self.chosen_by}


def choose_analyzer(option: str | None, languages: Iterable[object], *, where: str = "analyzer") -> AnalyzerChoice:
    """The analyzer of a system: ``option`` (an id, ``neutral`` or a code) when given, else the corpus's declared
    language (:func:`declared_language` over ``languages``), else :data:`DEFAULT_ANALYZER` with a one-line note.

    Raises:
        HarnessInputError: an unknown ``option`` (naming ``where``).
    """
    if option is not None:
        return AnalyzerChoice(analyzer_id_of(option, where=where), "option")
    code, why = declared_language(languages)
    if code is not None:
        return AnalyzerChoice(analyzer_for_language(code), "corpus language")
    return AnalyzerChoice(
        DEFAULT_ANALYZER,
        "default",
        f"analyzer: the corpus {why}, so BM25 and TF-IDF use {DEFAULT_ANALYZER} (Spanish); declare `language` in "
        "metadata.jsonl (goldset import: --language) or pass --analyzer",
    )


# --------------------------------------------------------------------------------------------------------------------
# Language check

DETECTION_STOPWORDS = {
    "es": "STOPWORDS_SPANISH",
    "en": "STOPWORDS_EN_PLUS",
    "pt": "STOPWORDS_PORTUGUESE",
    "fr": "STOPWORDS_FRENCH",
    "de": "STOPWORDS_GERMAN",
    "it": "STOPWORDS_ITALIAN",
}
"""The stop-word lists the language check counts (all NLTK's lists as bm25s ships them; English is NLTK's 179-word
``STOPWORDS_EN_PLUS``, of a size comparable with the others, not the 33-word list ``en-snowball-v1`` drops)."""

CHECK_MIN_RATE = 0.15
"""The detected language's stop-word share of the sample's tokens must be at least this (running text in any of
the six languages is 30-50 %; lists of names, tables or numbers stay below and are not judged)."""

CHECK_RATIO = 1.5
"""... and at least this many times the share of the analyzer's own language."""

CHECK_MIN_TOKENS = 200
"""Fewer tokens in the sample: no check."""


def stopword_rates(texts: Iterable[str]) -> tuple[dict[str, float], int]:
    """Per language of :data:`DETECTION_STOPWORDS`, the share of the texts' ``\\w+`` tokens (NFC, lowercased) that
    are in its stop-word list.

    Returns:
        ``({code: share in [0, 1]}, n_tokens)``; shares are 0 when there is no token.
    """
    lists = {c: frozenset(getattr(bm25s.stopwords, n)) for c, n in DETECTION_STOPWORDS.items()}
    hits = dict.fromkeys(lists, 0)
    n = 0
    for text in texts:
        for tok in _TOKEN_RE.findall(unicodedata.normalize("NFC", text).lower()):
            n += 1
            for c, words in lists.items():
                if tok in words:
                    hits[c] += 1
    return {c: (h / n if n else 0.0) for c, h in hits.items()}, n


def detect_language(texts: Iterable[str]) -> tuple[str | None, dict[str, float]]:
    """The language a sample reads as: the code with the highest stop-word share (:func:`stopword_rates`) when it
    is at least :data:`CHECK_MIN_RATE` over at least :data:`CHECK_MIN_TOKENS` tokens, else ``None``.

    Returns:
        ``(code or None, {code: share})``.
    """
    rates, n = stopword_rates(texts)
    best = max(rates, key=lambda c: (rates[c], c))
    if n < CHECK_MIN_TOKENS or rates[best] < CHECK_MIN_RATE:
        return None, rates
    return best, rates


def language_mismatch(texts: Iterable[str], analyzer_id: str, *, fix: str | None = None) -> str | None:
    """The warning (without ``warning:``) when the texts read as another language than the analyzer's, else ``None``.

    The texts read as language L (:func:`detect_language`) and L's stop-word share is at least :data:`CHECK_RATIO`
    times that of the analyzer's language (the neutral analyzer has none: any detected language counts).

    Args:
        texts: a sample of the corpus (:func:`corpus_sample`).
        analyzer_id: the analyzer in use.
        fix: what to tell the user (default: ``pass --language L to goldset import (or --analyzer L)``).
    """
    found, rates = detect_language(texts)
    own = ANALYZERS[analyzer_id].language
    if found is None or found == own:
        return None
    if own is not None and rates[found] < CHECK_RATIO * rates.get(own, 0.0):
        return None
    fix = fix or f"pass --language {found} to goldset import (or --analyzer {found})"
    return f"the corpus reads as {LANGUAGE_NAMES[found]} ({found}) but is analysed with {analyzer_id}; {fix}"


SAMPLE_CHUNKS = 2000
"""Chunks read by :func:`corpus_sample` (evenly spaced over the corpus)."""

SAMPLE_CHARS = 2000
"""Characters kept of each sampled text."""


def corpus_sample(corpus, n: int = SAMPLE_CHUNKS) -> list[str]:
    """Up to ``n`` chunk texts of an ingested corpus, evenly spaced by rowid (deterministic), each cut at
    :data:`SAMPLE_CHARS` characters."""
    total = int(corpus.manifest.n_chunks)
    if total <= 0:
        return []
    step = max(1, total // n)
    rowids = list(range(1, total + 1, step))[:n]
    out: list[str] = []
    for a in range(0, len(rowids), 500):
        part = rowids[a : a + 500]
        marks = ",".join("?" * len(part))
        rows = corpus.conn.execute(f"SELECT text FROM chunks WHERE rowid IN ({marks})", part).fetchall()
        out += [r[0][:SAMPLE_CHARS] for r in rows]
    return out


def corpus_languages(corpus) -> list[object]:
    """The ``language`` of every document of an ingested corpus (``None`` where a record declares none)."""
    return [d.meta.get("language") for d in corpus.documents().values()]


def option_analyzer(value: object) -> str | None:
    """Validate a system's ``analyzer`` option (``bm25:analyzer=pt``): the analyzer id it means, or ``None``.

    Raises:
        ValueError: not an analyzer id, ``neutral`` or an ISO 639-1 code (pydantic reports it as the option's error).
    """
    if value is None:
        return None
    try:
        return analyzer_id_of(str(value), where="analyzer")
    except HarnessInputError as exc:
        raise ValueError(str(exc).removeprefix("analyzer: ")) from None


def system_analyzer(context, option: str | None) -> tuple[Analyzer, AnalyzerChoice]:
    """The analyzer of a ``bm25`` / ``tfidf`` system of a run (:func:`choose_analyzer` over the run's corpus), and
    the choice, which the system keeps as ``analyzer_choice`` (the run records it and prints its note once)."""
    choice = choose_analyzer(option, corpus_languages(context.corpus))
    return ANALYZERS[choice.analyzer_id](), choice


def check_analyzers(systems: Iterable, corpus, log) -> list[str]:
    """Say once that the default analyzer was taken (one line through ``log``) and check a sample of the corpus
    against each distinct analyzer in use by ``systems`` (built retrievers carrying an ``analyzer_choice``;
    :func:`language_mismatch`).

    Returns:
        The warnings of the run (one per mismatching analyzer), in order.
    """
    choices = [c for obj in systems if (c := getattr(obj, "analyzer_choice", None)) is not None]
    for note in dict.fromkeys(c.note for c in choices if c.note):
        log(note)
    ids = list(dict.fromkeys(c.analyzer_id for c in choices))
    if not ids:
        return []
    sample = corpus_sample(corpus)
    return [w for aid in ids if (w := language_mismatch(sample, aid)) is not None]
