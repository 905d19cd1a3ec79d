"""What every fusion method shares: the method record of the ``FUSIONS`` registry, its options base, number checks.

A fusion method is one module (``rrf.py``, ``wsum.py``, ``comb_mnz.py``) holding its function, its typed options
(a :class:`FusionOptions` subclass) and a :class:`FusionMethod` record named ``METHOD``; the registry
(:data:`harness.retrieve.fusion.FUSIONS`) lists the records. Inputs are made canonical and cut first
(:func:`harness.ranking.canonical_ranking`: score descending, then id ascending; an id that occurs twice in one list
keeps its best score), then the first ``depth`` entries; every output is canonical too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from harness.defaults import DEFAULT_CHUNK_DEPTH, DEFAULT_DOC_DEPTH
from harness.errors import HarnessInputError
from harness.ranking import Ranking

__all__ = ["NUMBER", "FusionMethod", "FusionOptions", "FusionSpecError", "Pairs", "finite", "fmt"]

Pairs = Iterable[tuple[str | int, float]]
"""One ranked list: ``(id, score)`` pairs, higher score better, in any order."""

NUMBER = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
"""A non-negative decimal number as written in a system name (``60``, ``0.25``, ``.3``, ``1e3``)."""


class FusionSpecError(HarnessInputError, ValueError):
    """An unknown or malformed fusion system name (exit code 2)."""


class FusionOptions(BaseModel):
    """Base of every fusion method's typed options (frozen; unknown keys refused).

    Every method also takes its **input depths**, fixed system options (issue 42 item 16): each input list is cut to
    its first ``input_depth`` documents (default :data:`~harness.defaults.DEFAULT_DOC_DEPTH`, 50) and
    ``chunk_input_depth`` chunks (default :data:`~harness.defaults.DEFAULT_CHUNK_DEPTH`, 200) before fusing, whatever
    the run's depth. A run whose depth grows for a deeper metric (``--metrics AP@100``) therefore fuses the same lists
    and every shallower metric keeps its value; the deeper cut-offs read what the fused union of the cut lists holds.
    Given in a name as ``rrf[input_depth=100]`` (integers 1..100000).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_depth: int = Field(DEFAULT_DOC_DEPTH, ge=1, le=100_000)
    chunk_input_depth: int = Field(DEFAULT_CHUNK_DEPTH, ge=1, le=100_000)

    def input_depth_of(self, level: str) -> int:
        """The input cut of ``level`` (``docs``/``document`` or ``chunks``/``chunk``)."""
        return self.input_depth if level in ("docs", "document") else self.chunk_input_depth


def finite(name: str, value: object) -> float:
    """``float(value)`` for a real, finite, non-bool number.

    Raises:
        ValueError: anything else, naming ``name``.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return v


def fmt(x: float) -> str:
    """Shortest text of ``x`` (``60``, ``0.25``)."""
    return str(int(x)) if x.is_integer() and abs(x) < 1e16 else repr(x)


@dataclass(frozen=True)
class FusionMethod:
    """One entry of the ``FUSIONS`` registry.

    Attributes:
        name: the method's id in run records (``"rrf"``, ``"wsum"``).
        head: regular expression of the name's head (``rrf``, ``w<weight>``), matched in full.
        options: the typed options model (a :class:`FusionOptions` subclass).
        from_head: options written in the head itself (``w0.25`` -> ``{"w": 0.25}``), from the head's match.
        fuse: ``fuse(lists, options, depth) -> Ranking``: one list per input, in input order (an input without the
            level contributes an empty list), each cut at ``depth`` (``None``: whole list).
        formula: ``formula(options, input_names) -> str`` for the run manifest.
        params: ``params(options) -> dict`` for the run manifest.
        canonical_head: ``canonical_head(options) -> str``: the shortest name giving these options (``rrf`` for
            k = 60, ``rrf:k=30``, ``w0.25``).
        n_inputs: the exact number of inputs, or ``None`` (one or more).
        reference: the paper or reference implementation.
    """

    name: str
    head: re.Pattern
    options: type[FusionOptions]
    fuse: Callable[[Sequence[Pairs], FusionOptions, int | None], Ranking]
    formula: Callable[[FusionOptions, Sequence[str]], str]
    params: Callable[[FusionOptions], dict]
    canonical_head: Callable[[FusionOptions], str]
    from_head: Callable[[re.Match], dict] = lambda _m: {}
    n_inputs: int | None = None
    reference: str = ""
