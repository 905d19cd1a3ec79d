"""The one vocabulary for ranking levels: ``"document"`` and ``"chunk"``.

A system returns up to two rankings per question: documents (ids are corpus ``doc_id``s) and chunks (ids
``<doc_id>#<index>`` under the corpus's chunker). Every record, table, option and message names a level with one of
these two words; :func:`parse_level` accepts the older spellings (``docs``/``chunks``, ``doc``) at the boundary.
"""

from __future__ import annotations

from typing import Literal

from harness.errors import HarnessInputError

Level = Literal["document", "chunk"]
LEVELS: tuple[Level, ...] = ("document", "chunk")

_ALIASES: dict[str, Level] = {
    "document": "document",
    "documents": "document",
    "docs": "document",
    "doc": "document",
    "chunk": "chunk",
    "chunks": "chunk",
}


def parse_level(text: str, *, field: str = "level") -> Level:
    """``"document"`` or ``"chunk"`` from any accepted spelling (case-insensitive).

    Raises:
        HarnessInputError: anything else, naming ``field``.
    """
    try:
        return _ALIASES[str(text).strip().lower()]
    except KeyError:
        raise HarnessInputError(f"{field}: {text!r} is not a level (document or chunk)") from None
