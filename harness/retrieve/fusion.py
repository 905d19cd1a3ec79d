"""Fusion of per-system ranked lists for one question (the caller fuses documents and chunks separately).

Every input list is first made canonical and cut: :func:`harness.ranking.canonical_ranking` (score descending,
then id ascending; an id that occurs twice in one list keeps its first occurrence in that order, i.e. its best
score), then the first ``depth`` entries. Every output is canonical too.

Methods:

* **RRF** (Cormack, Clarke & Büttcher, SIGIR 2009): ``score(d) = sum_i 1 / (k + rank_i(d))``, ranks from 1;
  a list that lacks ``d`` contributes 0.
* **Weighted CombSUM of min-max normalised scores** (Fox & Shaw 1994 CombSUM; Lee 1997 min-max normalisation):
  ``score(d) = sum_i w_i * minmax_i(d)``; a list that lacks ``d`` contributes 0.

Agreement with ranx (``ranx.fuse``, methods ``rrf`` and ``wsum`` with ``norm="min-max"``): identical values on
inputs without ties (up to float rounding: sums here are ``math.fsum``, so they do not depend on list order).
Two deliberate differences:

1. ties: ranx orders equal fused scores its own way; here the one tie rule (score desc, id asc) applies, to the
   inputs (which fixes RRF ranks) and to the output;
2. constant lists: ranx min-max divides by ``max(max - min, 1e-9)`` and so maps a list whose scores are all
   equal (or a one-result list) to 0; here such a list maps to 1 (every item is that system's best).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from harness.errors import HarnessInputError
from harness.ranking import Ranking, canonical_ranking

__all__ = ["FusionSpec", "FusionSpecError", "minmax", "parse_fusion", "rrf", "weighted_fusion", "wsum"]

_Pairs = Iterable[tuple[str | int, float]]


class FusionSpecError(HarnessInputError, ValueError):
    """An unknown or malformed fusion system name (exit code 2)."""


def _finite(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return v


def rrf(lists: Sequence[_Pairs], *, k: float = 60, depth: int | None = None) -> Ranking:
    """Reciprocal rank fusion (Cormack, Clarke & Büttcher 2009; ranx ``fuse(method="rrf")``).

    Args:
        lists: one ranked list of ``(id, score)`` per system, higher score better, in any order.
        k: the RRF constant, finite and >= 0 (0 allowed: the top item then scores 1 per list).
        depth: each input list is cut to its first ``depth`` canonical entries (``None``: whole list).

    Returns:
        ``[(id, sum_i 1/(k + rank_i))]`` in canonical order, over the union of the cut lists (not cut again).
        Scores lie in (0, n_lists / (k + 1)].

    Raises:
        ValueError: ``k`` negative or not finite; ``depth`` negative.
        harness.metrics.MetricError: a NaN score.
    """
    kf = _finite("rrf k", k)
    if kf < 0:
        raise ValueError(f"rrf k must be >= 0, got {k!r}")
    parts: dict[str, list[float]] = {}
    for lst in lists:
        for rank, (item, _) in enumerate(canonical_ranking(lst, depth), start=1):
            parts.setdefault(item, []).append(1.0 / (kf + rank))
    return canonical_ranking((item, math.fsum(v)) for item, v in parts.items())


def minmax(ranking: _Pairs) -> dict[str, float]:
    """Min-max normalisation of one list's scores to [0, 1] (Lee 1997): ``(s - min) / (max - min)``.

    Args:
        ranking: ``(id, score)`` pairs, higher better (orient scores first: e.g. negated Hamming distances).
            Duplicate ids keep their best score.

    Returns:
        ``{id: normalised score}``: the best item maps to 1 and the worst to 0. A list whose scores are all
        equal, or with a single result, maps every item to 1 (ranx maps it to 0). Empty list: ``{}``.

    Raises:
        ValueError: an infinite score. harness.metrics.MetricError: a NaN score.
    """
    ranked = canonical_ranking(ranking)
    if not ranked:
        return {}
    hi, lo = ranked[0][1], ranked[-1][1]
    if not (math.isfinite(hi) and math.isfinite(lo)):
        raise ValueError("minmax: scores must be finite")
    if hi == lo:
        return {item: 1.0 for item, _ in ranked}
    span = hi - lo
    if math.isinf(span):  # overflow of max - min: halve everything (exact up to subnormals)
        return {item: (s / 2 - lo / 2) / (hi / 2 - lo / 2) for item, s in ranked}
    return {item: (s - lo) / span for item, s in ranked}


def wsum(lists: Sequence[_Pairs], weights: Sequence[float], *, depth: int | None = None) -> Ranking:
    """Weighted CombSUM of min-max normalised scores (Fox & Shaw 1994; Lee 1997; ranx ``wsum`` + ``min-max``).

    Each list is cut at ``depth``, then normalised by :func:`minmax` over what is left.

    Args:
        lists: one ranked list per system (higher better).
        weights: one finite weight >= 0 per list (they need not sum to 1).
        depth: cut of each input list (``None``: whole list).

    Returns:
        ``[(id, sum_i w_i * minmax_i(id))]`` in canonical order over the union of the cut lists; a list lacking
        the id contributes 0. Scores lie in [0, sum(weights)].

    Raises:
        ValueError: ``len(weights) != len(lists)``; a negative or non-finite weight; an infinite score.
    """
    if len(weights) != len(lists):
        raise ValueError(f"wsum: {len(weights)} weights for {len(lists)} lists")
    ws = [_finite("wsum weight", w) for w in weights]
    if any(w < 0 for w in ws):
        raise ValueError(f"wsum: weights must be >= 0, got {list(weights)!r}")
    parts: dict[str, list[float]] = {}
    for lst, w in zip(lists, ws, strict=True):
        for item, v in minmax(canonical_ranking(lst, depth)).items():
            parts.setdefault(item, []).append(w * v)
    return canonical_ranking((item, math.fsum(v)) for item, v in parts.items())


def weighted_fusion(bm25: _Pairs, vector: _Pairs, w: float, depth: int | None = None) -> Ranking:
    """``w * minmax(bm25) + (1 - w) * minmax(vector)`` (the ``w<float>`` systems), via :func:`wsum`.

    Args:
        bm25: the BM25 list (higher better).
        vector: the vector list, already oriented higher-is-better (negated Hamming distances).
        w: weight of BM25 in [0, 1].
        depth: cut of each input list.

    Raises:
        ValueError: ``w`` outside [0, 1].
    """
    wf = _finite("weighted_fusion w", w)
    if not 0.0 <= wf <= 1.0:
        raise ValueError(f"weighted_fusion: w must lie in [0, 1], got {w!r}")
    return wsum([bm25, vector], [wf, 1.0 - wf], depth=depth)


# --------------------------------------------------------------------------------------------------------------
# System names

_NUM = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_RRF_RE = re.compile(rf"rrf(?::k=({_NUM}))?")
_W_RE = re.compile(rf"w({_NUM})")


def _fmt(x: float) -> str:
    """Shortest text of ``x`` (``60``, ``0.25``)."""
    return str(int(x)) if x.is_integer() and abs(x) < 1e16 else repr(x)


@dataclass(frozen=True)
class FusionSpec:
    """A fusion system parsed from its name: ``rrf``, ``rrf:k=30``, ``w0.25``, ``w<float in [0, 1]>``.

    Call it on the per-system lists: ``spec(lists, depth=50)`` or ``spec.fuse(lists, depth=50)``. RRF takes any
    number of lists; ``w<float>`` takes exactly two, ``[bm25, vector]``. ``config()`` and ``formula`` go into the
    run manifest.

    Attributes:
        method: ``"rrf"`` or ``"wsum"``.
        k: RRF constant (``rrf`` only; 60 by default).
        w: BM25 weight (``wsum`` only).
    """

    method: Literal["rrf", "wsum"]
    k: float | None = None
    w: float | None = None

    @classmethod
    def parse(cls, name: str) -> FusionSpec:
        """Parse a system name.

        Raises:
            FusionSpecError: unknown name, malformed number, ``w`` outside [0, 1].
        """
        text = name.strip() if isinstance(name, str) else ""
        if m := _RRF_RE.fullmatch(text):
            return cls("rrf", k=60.0 if m.group(1) is None else float(m.group(1)))
        if m := _W_RE.fullmatch(text):
            w = float(m.group(1))
            if not 0.0 <= w <= 1.0:
                raise FusionSpecError(f"fusion {name!r}: the weight must lie in [0, 1]")
            return cls("wsum", w=w)
        raise FusionSpecError(
            f"unknown fusion {name!r}; expected 'rrf', 'rrf:k=<number >= 0>' or 'w<weight in [0, 1]>' (e.g. w0.25)"
        )

    @property
    def name(self) -> str:
        """Canonical name (``rrf`` for k = 60)."""
        if self.method == "rrf":
            return "rrf" if self.k == 60 else f"rrf:k={_fmt(self.k)}"
        return f"w{_fmt(self.w)}"

    @property
    def formula(self) -> str:
        """The formula, for the run manifest."""
        cut = "each list canonical (score desc, id asc) and cut at depth"
        if self.method == "rrf":
            return (
                f"score(d) = sum_i 1/({_fmt(self.k)} + rank_i(d)); rank_i from 1; absent = 0; {cut} "
                "[RRF, Cormack, Clarke & Buettcher 2009]"
            )
        return (
            f"score(d) = {_fmt(self.w)}*minmax(bm25)(d) + {_fmt(1.0 - self.w)}*minmax(vector)(d); "
            f"minmax = (s - min)/(max - min), constant list -> 1; absent = 0; {cut} "
            "[CombSUM, Fox & Shaw 1994; min-max, Lee 1997]"
        )

    def config(self) -> dict:
        """What identifies this fusion in a run manifest: name, method, parameters, formula."""
        params = {"k": self.k} if self.method == "rrf" else {"weights": [self.w, 1.0 - self.w]}
        return {"fusion": self.name, "method": self.method, "params": params, "formula": self.formula}

    def fuse(self, lists: Sequence[_Pairs], *, depth: int | None = None) -> Ranking:
        """Fuse ``lists`` (see :func:`rrf`, :func:`weighted_fusion`); also ``spec(lists, depth=...)``.

        Raises:
            ValueError: a ``w`` system given other than two lists.
        """
        if self.method == "rrf":
            return rrf(lists, k=self.k, depth=depth)
        if len(lists) != 2:
            raise ValueError(f"fusion {self.name}: needs exactly two lists [bm25, vector], got {len(lists)}")
        return weighted_fusion(lists[0], lists[1], self.w, depth=depth)

    __call__ = fuse


def parse_fusion(name: str) -> FusionSpec:
    """:meth:`FusionSpec.parse`."""
    return FusionSpec.parse(name)
