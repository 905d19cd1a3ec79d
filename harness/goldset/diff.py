"""A complete, reviewable diff of two JSON values (a record before and after a correction).

* **Objects** are compared key by key (keys of the old value first, then keys only in the new one).
* **Lists** are compared by content, not by position: the items are aligned with :class:`difflib.SequenceMatcher`
  over their canonical JSON, so an item inserted at the front is one ``added`` item and the others are unchanged.
  Where a run of old items is replaced by a run of new ones, items are paired in order by similarity
  (:func:`similarity` >= :data:`PAIR_SIMILARITY`, the pairing of largest total similarity; a moved quote keeps its
  text and changes its chunk) and each pair is diffed inside; the others are ``removed`` / ``added``.
* **Strings** that differ are kept whole (``old``, ``new``) and, when either is longer than :data:`LONG_STRING`
  characters, also as a word-level diff (``words``: ``[["=", text], ["-", text], ["+", text], ...]``), so a change
  late in a long quote is shown where it is.
* Other values differ when their JSON type or value differs (``1`` and ``1.0`` and ``True`` differ).

Nothing is truncated: a renderer may elide long unchanged runs of words, never a change.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["LONG_STRING", "PAIR_SIMILARITY", "FieldChange", "diff_values", "similarity", "word_diff"]

LONG_STRING = 80
"""Strings longer than this (in characters, old or new) also get a word-level diff."""

PAIR_SIMILARITY = 0.5
"""Two replaced list items are diffed as one changed item when their similarity is at least this."""

_MAX_PAIRING_CELLS = 40_000
"""Above this many (old x new) candidate pairs, replaced items are paired by position instead (bounded work)."""


@dataclass(frozen=True)
class FieldChange:
    """One difference.

    Attributes:
        path: RFC 6901 JSON pointer of the value in the new record (``removed``: in the old record).
        op: ``added``, ``removed`` or ``changed``.
        old, new: the whole old and new values (``None`` where absent).
        old_path: the pointer in the old record when a changed list item moved (else ``None``).
        words: word-level diff of two long strings, ``[[op, text], ...]`` with op ``=`` (both), ``-`` (old only) or
            ``+`` (new only); the ``=`` and ``-`` texts joined with spaces give ``old``, ``=`` and ``+`` give
            ``new`` (whitespace collapsed). ``None`` for short strings and other values.
    """

    path: str
    op: Literal["added", "removed", "changed"]
    old: Any = None
    new: Any = None
    old_path: str | None = None
    words: list[list[str]] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``old_path`` and ``words`` only when set)."""
        out: dict[str, Any] = {"path": self.path, "op": self.op, "old": self.old, "new": self.new}
        if self.old_path is not None:
            out["old_path"] = self.old_path
        if self.words is not None:
            out["words"] = self.words
        return out


def _ptr(parts: list) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _canon(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def similarity(a: Any, b: Any) -> float:
    """Similarity in [0, 1] of two JSON values: 0 for different JSON kinds (object, list, string, other), else the
    :class:`difflib.SequenceMatcher` ratio of their canonical JSON texts (keys sorted)."""

    def kind(v: Any) -> str:
        return "object" if isinstance(v, dict) else "list" if isinstance(v, list) else type(v).__name__

    if kind(a) != kind(b):
        return 0.0
    return difflib.SequenceMatcher(None, _canon(a), _canon(b), autojunk=False).ratio()


def word_diff(old: str, new: str) -> list[list[str]]:
    """Word-level diff of two strings (words = runs of non-space characters), as ``[[op, text], ...]`` with
    consecutive words of one op joined by a space (see :class:`FieldChange`)."""
    a, b = old.split(), new.split()
    out: list[list[str]] = []

    def put(op: str, words: list[str]) -> None:
        if words:
            out.append([op, " ".join(words)])

    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            put("=", a[i1:i2])
        else:
            put("-", a[i1:i2])
            put("+", b[j1:j2])
    return out


def _pair(old: list, new: list) -> list[tuple[int | None, int | None]]:
    """Order-preserving pairing of a replaced run ``old`` -> ``new`` maximising the total similarity of the pairs
    (each >= :data:`PAIR_SIMILARITY`); unpaired items come back as ``(i, None)`` / ``(None, j)``."""
    n, m = len(old), len(new)
    if n * m > _MAX_PAIRING_CELLS:
        k = min(n, m)
        return [(i, i) for i in range(k)] + [(i, None) for i in range(k, n)] + [(None, j) for j in range(k, m)]
    sim = [[similarity(old[i], new[j]) for j in range(m)] for i in range(n)]
    best = [[0.0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            take = sim[i][j] + best[i + 1][j + 1] if sim[i][j] >= PAIR_SIMILARITY else -1.0
            best[i][j] = max(take, best[i + 1][j], best[i][j + 1])
    out: list[tuple[int | None, int | None]] = []
    i = j = 0
    while i < n and j < m:
        if sim[i][j] >= PAIR_SIMILARITY and best[i][j] == sim[i][j] + best[i + 1][j + 1]:
            out.append((i, j))
            i, j = i + 1, j + 1
        elif best[i][j] == best[i + 1][j]:
            out.append((i, None))
            i += 1
        else:
            out.append((None, j))
            j += 1
    out += [(k, None) for k in range(i, n)] + [(None, k) for k in range(j, m)]
    return out


def _align(old: list, new: list) -> list[tuple[int | None, int | None]]:
    """Pairs ``(old index | None, new index | None)`` in document order (see the module docstring)."""
    sm = difflib.SequenceMatcher(None, [_canon(x) for x in old], [_canon(x) for x in new], autojunk=False)
    out: list[tuple[int | None, int | None]] = []
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            out += list(zip(range(i1, i2), range(j1, j2), strict=True))
        elif tag == "delete":
            out += [(i, None) for i in range(i1, i2)]
        elif tag == "insert":
            out += [(None, j) for j in range(j1, j2)]
        else:
            out += [
                (None if a is None else i1 + a, None if b is None else j1 + b) for a, b in _pair(old[i1:i2], new[j1:j2])
            ]
    return out


def diff_values(old: Any, new: Any, _path: list | None = None, _old_path: list | None = None) -> list[FieldChange]:
    """Every difference between two JSON values, in document order (see the module docstring).

    Returns:
        :class:`FieldChange` per added, removed or changed value; ``[]`` when the values are equal (JSON types
        compared too).
    """
    path = _path or []
    opath = path if _old_path is None else _old_path
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[FieldChange] = []
        for k in old:
            if k in new:
                out += diff_values(old[k], new[k], path + [k], opath + [k])
            else:
                out.append(FieldChange(_ptr(opath + [k]), "removed", old=old[k]))
        for k in new:
            if k not in old:
                out.append(FieldChange(_ptr(path + [k]), "added", new=new[k]))
        return out
    if isinstance(old, list) and isinstance(new, list):
        out = []
        for i, j in _align(old, new):
            if j is None:
                out.append(FieldChange(_ptr(opath + [i]), "removed", old=old[i]))
            elif i is None:
                out.append(FieldChange(_ptr(path + [j]), "added", new=new[j]))
            else:
                out += diff_values(old[i], new[j], path + [j], opath + [i])
        return out
    if type(old) is type(new) and old == new:
        return []
    words = None
    if isinstance(old, str) and isinstance(new, str) and max(len(old), len(new)) > LONG_STRING:
        words = word_diff(old, new)
    moved = _ptr(opath) if opath != path else None
    return [FieldChange(_ptr(path), "changed", old=old, new=new, old_path=moved, words=words)]
