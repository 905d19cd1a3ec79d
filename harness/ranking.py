"""The project's one tie rule: **score descending, then id ascending** (Python ``str`` comparison of the ids).

Every ranking the harness produces, reads, fuses or scores is ordered by this rule, and every cut at a depth keeps
the first ``depth`` items in this order, so a tie at the cut-off is decided by id, never by the order in which an
index or a top-k routine happened to return the items. trec_eval also re-sorts a run by score, but breaks score
ties by id *descending* (``tests/test_metrics.py`` pins the difference); the harness keeps ascending everywhere and
records ``*_tie_at_boundary`` flags wherever the id decided a cut.

Pure Python (lists of pairs):

* :func:`sort_key`: the key of one ``(id, score)`` pair;
* :func:`canonical_ranking`: the canonical ranking of any pairs (duplicates keep their best score, NaN refused);
* :func:`sort_ranking`: the same order without removing duplicates (external rankings are kept as written).

numpy (index arrays over ``n`` items whose ids are ranked once by :func:`id_rank`):

* :func:`id_rank`: each id's position in ascending string order;
* :func:`top_k_by_score`: the top ``k`` positive scores (BM25: an item sharing no term is not retrieved);
* :func:`cut_in_tie`: whether such a cut at ``k`` fell in a score tie (the boundary-tie flag);
* :func:`top_k_by_distance`: the top ``k`` smallest distances (Hamming), with the boundary-tie flag.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from harness.errors import MetricError

__all__ = [
    "Ranking",
    "canonical_ranking",
    "cut_in_tie",
    "id_rank",
    "sort_key",
    "sort_ranking",
    "top_k_by_distance",
    "top_k_by_score",
]

Ranking = list[tuple[str, float]]
"""A ranking: ``[(id, score)]``, higher score better, in canonical order."""


def sort_key(pair: tuple[str, float]) -> tuple[float, str]:
    """The sort key of an ``(id, score)`` pair under the tie rule: ``(-score, id)``."""
    return (-pair[1], pair[0])


def canonical_ranking(items: Iterable[tuple[str | int, float]], depth: int | None = None) -> Ranking:
    """The project's one canonical ranking: score descending, then id ascending (string comparison).

    Args:
        items: ``(id, score)`` pairs in any order, higher score better; ids may be ``int`` or ``str``.
        depth: keep the first ``depth`` entries (``None``: all). Must be >= 0.

    Returns:
        A new list of ``(str(id), float(score))``. An id that occurs more than once keeps its best (highest)
        score, i.e. its first occurrence in canonical order. The input is not modified.

    Raises:
        MetricError: a score is NaN.
        ValueError: ``depth`` is negative or not an int.
    """
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 0):
        raise ValueError(f"canonical_ranking: depth must be an int >= 0 or None, got {depth!r}")
    best: dict[str, float] = {}
    for item_id, score in items:
        key = str(item_id)
        s = float(score)
        if math.isnan(s):
            raise MetricError(f"canonical_ranking: score of id {key!r} is NaN")
        prev = best.get(key)
        if prev is None or s > prev:
            best[key] = s
    ranking = sorted(best.items(), key=sort_key)
    return ranking if depth is None else ranking[:depth]


def sort_ranking(items: Iterable[tuple[str | int, float]]) -> Ranking:
    """``(id, score)`` pairs as ``(str, float)`` sorted by the tie rule, **duplicates kept** (a stable sort).

    Used where a ranking written by someone else is stored as given (``harness evaluate``); scoring then makes it
    canonical (:func:`canonical_ranking`).
    """
    return sorted(((str(i), float(s)) for i, s in items), key=sort_key)


def id_rank(ids: Sequence[str]) -> np.ndarray:
    """Position of each id in ascending string order (Python ``str`` comparison), ``int64`` of shape ``(n,)``.

    A stable sort: equal ids (which a ranking never holds) keep their order.
    """
    order = sorted(range(len(ids)), key=ids.__getitem__)
    rank = np.empty(len(ids), dtype=np.int64)
    rank[order] = np.arange(len(ids), dtype=np.int64)
    return rank


def top_k_by_score(scores: np.ndarray, rank: np.ndarray, k: int) -> np.ndarray:
    """Indices of the top ``k`` **positive** scores under (score descending, id ascending).

    Args:
        scores: shape ``(n,)``, float.
        rank: shape ``(n,)``, int; each item's id rank (:func:`id_rank`).
        k: depth (>= 1).

    Returns:
        ``int64`` indices (at most ``k``) in canonical order; items with a score <= 0 are never returned. Ties at
        the boundary are resolved by ``rank``.
    """
    pos = np.flatnonzero(scores > 0)
    if pos.size == 0:
        return pos
    s = scores[pos]
    if pos.size > k:
        thr = np.partition(s, pos.size - k)[pos.size - k]
        keep = s >= thr
        pos, s = pos[keep], s[keep]
    order = np.lexsort((rank[pos], -s.astype(np.float64)))
    return pos[order[:k]]


def cut_in_tie(scores: np.ndarray, top: np.ndarray, k: int) -> bool:
    """Whether a cut at depth ``k`` (:func:`top_k_by_score`'s ``top``) fell in a score tie: ``k`` items were kept
    and an item left out scores the same as the last one kept, so the id decided the cut.

    Args:
        scores: shape ``(n,)``, the scores the cut was made on.
        top: the indices kept, in canonical order.
        k: the depth of the cut.
    """
    if top.size != k or k == 0:
        return False
    last = scores[top[-1]]
    return bool(np.count_nonzero(scores == last) > np.count_nonzero(scores[top] == last))


def top_k_by_distance(dist: np.ndarray, rank: np.ndarray, k: int) -> tuple[np.ndarray, bool]:
    """Exact top ``k`` under (distance ascending, id ascending), and whether the boundary falls in a tie.

    This is the tie rule on the score ``-distance``.

    Args:
        dist: ``(n,)`` distances (any real dtype).
        rank: ``(n,)`` int, each item's id rank (:func:`id_rank`); breaks distance ties.
        k: depth (``>= 0``).

    Returns:
        ``(indices, tie_at_boundary)``: at most ``k`` ``int64`` indices into ``dist`` in canonical order, and
        ``True`` when some item left out has the same distance as the last item kept (the id rule decided the cut).
    """
    n = dist.shape[0]
    if k <= 0 or n == 0:
        return np.empty(0, dtype=np.int64), False
    if n <= k:
        return np.lexsort((rank, dist)).astype(np.int64), False
    kth = np.partition(dist, k - 1)[k - 1]
    cand = np.flatnonzero(dist <= kth)
    order = np.lexsort((rank[cand], dist[cand]))
    return cand[order[:k]].astype(np.int64), bool(cand.size > k)
