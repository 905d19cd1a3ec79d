"""``did you mean``: the known id nearest a mistyped one (a metric, a chunk's document, a command), the way
``harness rnu`` gets ``run`` from click."""

from __future__ import annotations

from collections.abc import Iterable


def nearest_id(text: str, known: Iterable[str], *, cutoff: float = 0.6) -> str | None:
    """The id of ``known`` nearest ``text`` ignoring case (:func:`difflib.get_close_matches`: Ratcliff-Obershelp
    similarity ``2 M / T`` >= ``cutoff``, in [0, 1]), or None when none is that close."""
    import difflib

    pool: dict[str, str] = {}
    for k in known:
        pool.setdefault(k.lower(), k)
    got = difflib.get_close_matches(text.lower(), list(pool), n=1, cutoff=cutoff)
    return pool[got[0]] if got else None


def did_you_mean(text: str, known: Iterable[str]) -> str:
    """``"; did you mean 'X'?"`` for the nearest known id (:func:`nearest_id`), or ``""``."""
    near = nearest_id(text, known)
    return f"; did you mean {near!r}?" if near is not None and near != text else ""
