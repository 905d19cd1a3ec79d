"""Spanish text analyzer for BM25 and TF-IDF: lowercase, stop words, Snowball stemming, then accent folding.

``es-snowball-fold-v1`` (defined exactly):

1. NFC, then ``str.lower()``.
2. Tokens are the matches of ``\\w+`` (Unicode word characters: letters, digits, underscore). Single-character
   tokens and numbers (article numerals such as ``27``, years such as ``2024``, ordinals such as ``5o``) are kept.
3. Tokens in bm25s's Spanish stop-word list (``bm25s.stopwords.STOPWORDS_SPANISH``, 313 words, accented forms)
   are dropped.
4. Each remaining token is stemmed with the Snowball Spanish stemmer (PyStemmer ``Stemmer('spanish')``), which
   expects accented input; *then* accents are folded (NFD, combining marks removed, so ``ñ`` -> ``n``).
   Stemming before folding matters: the Spanish stemmer's suffix rules use the accented forms.

Changing any rule changes :attr:`SpanishAnalyzer.analyzer_id` (indexes are keyed by it).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

import Stemmer
from bm25s.stopwords import STOPWORDS_SPANISH

_TOKEN_RE = re.compile(r"\w+")


def fold_accents(token: str) -> str:
    """Remove combining marks after NFD decomposition (``"acción"`` -> ``"accion"``, ``"ñ"`` -> ``"n"``)."""
    decomposed = unicodedata.normalize("NFD", token)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


class SpanishAnalyzer:
    """The ``es-snowball-fold-v1`` analyzer (see the module docstring).

    Stems are cached per distinct token, so analysing a corpus costs one regex pass plus dictionary look-ups.
    """

    analyzer_id = "es-snowball-fold-v1"

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

    def tokenize(self, text: str) -> list[str]:
        """Analyse one text into index terms (may be empty)."""
        terms = []
        get = self._term
        for tok in _TOKEN_RE.findall(unicodedata.normalize("NFC", text).lower()):
            t = get(tok)
            if t is not None:
                terms.append(t)
        return terms

    def tokenize_many(self, texts: Iterable[str]) -> list[list[str]]:
        """Analyse many texts."""
        return [self.tokenize(t) for t in texts]
