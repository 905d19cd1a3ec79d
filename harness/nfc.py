"""Unicode normalisation at the input boundary: every text and identifier read from a user's file is NFC.

The same question, id or name can be written in two Unicode forms: composed (NFC, ``ó`` = U+00F3) or decomposed (NFD,
``o`` + U+0301), canonically equivalent and shown alike, but different strings. Without a rule, a gold set in NFD
changed the vector results of the same questions (MRR 0.136 -> 0.118, rrf recall@10 0.393 -> 0.500; issue 18 item
10) and an NFD id matched nothing. Harness therefore normalises to NFC (Unicode Standard Annex #15, `unicodedata`)
where inputs enter: gold-set records and manifests (:func:`harness.goldset.io.load_goldset`; ``relpath`` excepted,
a file path like the corpus's), ranking files
(:func:`harness.evaluation.trec.read_rankings`: question ids, system tags, document and chunk ids), corpus metadata
(:func:`harness.corpus.source.scan_corpus`: ids, titles, dates and every other field, file paths excepted, since a
path names a file the file system may hold in either form) and system names typed on the command line. Corpus text
is decoded to NFC by every chunker (:func:`harness.corpus.chunker.decode_source`, rule 1 of ``md-words-v1``), so
corpus and questions meet in one form. Input already in NFC comes back as equal strings, so no committed number
moves.
"""

from __future__ import annotations

import unicodedata
from typing import Any

__all__ = ["nfc"]


def nfc(value: Any, *, keep: frozenset[str] | set[str] = frozenset()) -> Any:
    """``value`` with every string in NFC: a string itself, or the keys and values of dicts and the items of lists
    and tuples, recursively (a new container; the input is not modified). Other values are returned as they are.

    Args:
        value: a string or a parsed JSON value.
        keep: dict keys, at any depth, whose values are kept as written (file paths: ``path``, ``relpath``).

    ``unicodedata.is_normalized`` is checked first, so text already in NFC (the usual case) costs one linear scan.
    """
    if isinstance(value, str):
        return value if unicodedata.is_normalized("NFC", value) else unicodedata.normalize("NFC", value)
    if isinstance(value, dict):
        return {nfc(k): v if k in keep else nfc(v, keep=keep) for k, v in value.items()}
    if isinstance(value, list):
        return [nfc(v, keep=keep) for v in value]
    if isinstance(value, tuple):
        return tuple(nfc(v, keep=keep) for v in value)
    return value
