"""The grammar of system names: ``NAME[:key=value...][:REST]``, one tokenizer for every kind of system.

A system name is a *head*, then options, then (for systems that take other systems) the rest::

    name     := head [ "[" option { ";" option } "]" ] { ":" option } [ ":" rest ]
    option   := key "=" value            key: [a-z_][a-z0-9_]*
    rest     := any text; starts at the first ":"-segment that is not an option

Examples: ``bm25``; ``vector:binarize=centered``; ``vector[model=/models/e5:small]`` (a bracketed value may hold
``:``); ``rrf:k=10:bm25+mine`` (head ``rrf``, option ``k=10``, rest ``bm25+mine``); ``w0.6:bm25+mine`` (the weight
is part of the head); ``two-stage[reranker=py:rerank.py:make;rerank_top=20]:rrf:bm25+mine`` (rest
``rrf:bm25+mine``, itself a system name).

Options written in brackets and as ``:key=value`` segments are the same options; a key given twice is refused.
Values are text here; each system's typed options model (pydantic) converts and checks them. What the rest means is
the kind's business: a fusion splits it into inputs at ``+`` (:func:`split_inputs`), two-stage reads one system name.

A list of systems (``--systems``) is split at commas outside brackets (:func:`split_systems`); an item
``alias=NAME`` gives the system ``NAME`` the name ``alias`` (``mine=py:plugins/mine.py:Retriever``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.errors import HarnessInputError

__all__ = ["ALIAS_RE", "ParsedName", "parse_name", "split_inputs", "split_systems", "split_top"]

_KEY = r"[a-z_][a-z0-9_]*"
_OPTION_RE = re.compile(rf"({_KEY})=(.*)", re.DOTALL)
ALIAS_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_.-]*)=(.+)", re.DOTALL)
"""``alias=NAME``: an alias is a letter or ``_`` followed by letters, digits, ``_``, ``.`` or ``-`` (no ``:``)."""


def split_top(text: str, sep: str) -> list[str]:
    """Split ``text`` at ``sep`` outside ``[...]`` brackets (brackets do not nest).

    Raises:
        HarnessInputError: an unbalanced bracket.
    """
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            if depth:
                raise HarnessInputError(f"{text!r}: brackets do not nest")
            depth = 1
        elif ch == "]":
            if not depth:
                raise HarnessInputError(f"{text!r}: ']' without '['")
            depth = 0
        elif ch == sep and not depth:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        raise HarnessInputError(f"{text!r}: '[' without ']'")
    parts.append(text[start:])
    return parts


def split_systems(text: str) -> list[str]:
    """The items of a comma-separated list of systems, stripped, empty items dropped (commas inside brackets kept).

    Raises:
        HarnessInputError: an unbalanced bracket.
    """
    return [p.strip() for p in split_top(text, ",") if p.strip()]


def split_inputs(rest: str, *, where: str) -> list[str]:
    """The ``+``-separated input names of a fusion (outside brackets), each stripped.

    Raises:
        HarnessInputError: an empty input (``bm25++vector``, a trailing ``+``).
    """
    parts = [p.strip() for p in split_top(rest, "+")]
    if any(not p for p in parts):
        raise HarnessInputError(f"{where}: empty input in {rest!r} (inputs are NAME+NAME...)")
    return parts


@dataclass(frozen=True)
class ParsedName:
    """A system name split by the grammar of the module docstring.

    Attributes:
        text: the name as written (stripped).
        head: the head (``"bm25"``, ``"w0.6"``, ``"two-stage"``, ``"py"``).
        options: ``{key: value}`` in the order written (values are text).
        rest: the text after the options, or ``None``.
    """

    text: str
    head: str
    options: dict[str, str]
    rest: str | None


def _add(options: dict[str, str], key: str, value: str, where: str) -> None:
    if key in options:
        raise HarnessInputError(f"{where}: option {key!r} given twice")
    options[key] = value


def parse_name(text: str, *, where: str = "--systems") -> ParsedName:
    """Split a system name into head, options and rest (see the module docstring).

    Args:
        text: one system name.
        where: what the message names (the option or file the name came from).

    Raises:
        HarnessInputError: an empty name or head, an empty ``:`` segment, a bracketed option without ``=``, a key
            given twice, text after ``]`` that does not start with ``:``, unbalanced brackets.
    """
    name = text.strip()
    here = f"{where}: {name!r}" if name else where
    if not name:
        raise HarnessInputError(f"{where}: empty system name")
    options: dict[str, str] = {}
    head, _, after = name.partition(":")
    if "[" in head:
        bracket = name.index("[")
        close = name.find("]", bracket)
        if close < 0:
            raise HarnessInputError(f"{here}: '[' without ']'")
        head = name[:bracket]
        for item in name[bracket + 1 : close].split(";"):
            m = _OPTION_RE.fullmatch(item.strip())
            if m is None:
                raise HarnessInputError(f"{here}: bracketed option {item.strip()!r} is not key=value")
            _add(options, m.group(1), m.group(2).strip(), here)
        after = name[close + 1 :]
        if after and not after.startswith(":"):
            raise HarnessInputError(f"{here}: expected ':' after ']', got {after[:1]!r}")
        after = after[1:]
        if after == "" and name.endswith(":"):
            raise HarnessInputError(f"{here}: empty segment after ':'")
    elif name.endswith(":"):
        raise HarnessInputError(f"{here}: empty segment after ':'")
    if not head or "]" in head:
        raise HarnessInputError(f"{here}: no system name before ':' or '['")
    rest: str | None = None
    if after:
        segments = split_top(after, ":")
        for i, seg in enumerate(segments):
            m = _OPTION_RE.fullmatch(seg)
            if m is None:
                if not seg.strip():
                    raise HarnessInputError(f"{here}: empty segment between ':'")
                rest = ":".join(segments[i:])
                break
            _add(options, m.group(1), m.group(2), here)
    return ParsedName(text=name, head=head, options=options, rest=rest)
