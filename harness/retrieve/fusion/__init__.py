"""Fusion of per-system ranked lists for one question (the caller fuses documents and chunks separately).

The ``FUSIONS`` registry maps each method's id to its :class:`~harness.retrieve.fusion.base.FusionMethod` (name
grammar, typed options, function, formula); :func:`parse_fusion` is the only parser of fusion names. A name is
``HEAD[:key=value...][:INPUT+INPUT...]`` (grammar: :mod:`harness.retrieve.names`):

* ``rrf``, ``rrf:k=30``, ``rrf:k=10:bm25+mine`` — RRF (:mod:`~harness.retrieve.fusion.rrf`), any number of inputs;
* ``w0.25``, ``w0.6:bm25+mine`` — weighted CombSUM of min-max scores (:mod:`~harness.retrieve.fusion.wsum`), exactly
  two inputs, the weight on the first;
* ``mnz``, ``mnz:bm25+mine`` — CombMNZ of min-max scores (:mod:`~harness.retrieve.fusion.comb_mnz`).

Without inputs a fusion reads ``bm25+vector`` (``rrf`` = ``rrf:bm25+vector``). Each input is any system name of the
run (an alias, ``bm25``, ``vector:binarize=centered``, a plugin, another fusion: a fusion with its own inputs is
given an alias first, ``hyb=w0.5:bm25+mine``, because ``+`` separates inputs). A new method is one module with a
``METHOD`` record plus one line in ``FUSIONS``.

Every input list is first made canonical and cut (:func:`harness.ranking.canonical_ranking`: score descending, then
id ascending; an id that occurs twice in one list keeps its best score), then the first ``depth`` entries. Every
output is canonical too. Agreement with ranx (``ranx.fuse``, methods ``rrf`` and ``wsum`` with
``norm="min-max"``): identical values on inputs without ties (up to float rounding: sums here are ``math.fsum``, so
they do not depend on list order). Two deliberate differences:

1. ties: ranx orders equal fused scores its own way; here the one tie rule (score desc, id asc) applies, to the
   inputs (which fixes RRF ranks) and to the output;
2. constant lists: ranx min-max divides by ``max(max - min, 1e-9)`` and so maps a list whose scores are all
   equal (or a one-result list) to 0; here such a list maps to 1 (every item is that system's best).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import ValidationError

from harness.errors import HarnessInputError
from harness.ranking import Ranking
from harness.retrieve.fusion import comb_mnz as _comb_mnz
from harness.retrieve.fusion import rrf as _rrf
from harness.retrieve.fusion import wsum as _wsum
from harness.retrieve.fusion.base import FusionMethod, FusionOptions, FusionSpecError, Pairs
from harness.retrieve.fusion.normalize import minmax
from harness.retrieve.fusion.rrf import rrf
from harness.retrieve.fusion.wsum import weighted_fusion, wsum
from harness.retrieve.names import parse_name, split_inputs

__all__ = [
    "fuse_results",
    "DEFAULT_INPUTS",
    "FUSIONS",
    "FusionMethod",
    "FusionOptions",
    "FusionSpec",
    "FusionSpecError",
    "fusion_method",
    "minmax",
    "parse_fusion",
    "rrf",
    "weighted_fusion",
    "wsum",
]

FUSIONS: dict[str, FusionMethod] = {m.name: m for m in (_rrf.METHOD, _wsum.METHOD, _comb_mnz.METHOD)}
"""The fusion registry: ``{method id: FusionMethod}``."""

DEFAULT_INPUTS: tuple[str, ...] = ("bm25", "vector")
"""The inputs of a fusion name that names none (``rrf`` = ``rrf:bm25+vector``)."""


def fusion_method(head: str) -> tuple[FusionMethod, dict] | None:
    """The method whose head grammar matches ``head`` in full, with the options written in the head, or ``None``."""
    for method in FUSIONS.values():
        if m := method.head.fullmatch(head):
            return method, method.from_head(m)
    return None


def _one_line(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(x) for x in err["loc"]) or "options"
    return f"{loc}: {err['msg']} (got {err.get('input')!r})"


@dataclass(frozen=True)
class FusionSpec:
    """A fusion system parsed from its name (see the module docstring).

    Call it on the input lists: ``spec(lists, depth=50)`` or ``spec.fuse(lists, depth=50)``, one list per input in
    input order. ``config()`` and ``formula`` go into the run manifest.

    Attributes:
        method: the method id (``"rrf"``, ``"wsum"``, ...; a key of :data:`FUSIONS`).
        options: its typed options (e.g. :class:`~harness.retrieve.fusion.rrf.RRFOptions`).
        inputs: the input system names, in order.
    """

    method: str
    options: FusionOptions
    inputs: tuple[str, ...] = field(default=DEFAULT_INPUTS)

    @classmethod
    def parse(cls, name: str, *, where: str = "fusion") -> FusionSpec:
        """Parse a fusion system name.

        Raises:
            FusionSpecError: unknown method, malformed name or number, an option the method does not take, an
                option out of range (``w`` outside [0, 1], ``k`` < 0), the wrong number of inputs, an input that is
                not a system name.
        """
        text = name.strip() if isinstance(name, str) else ""
        try:
            parsed = parse_name(text, where=where)
        except HarnessInputError as exc:
            raise FusionSpecError(str(exc)) from None
        found = fusion_method(parsed.head)
        if found is None:
            known = ", ".join(sorted(FUSIONS))
            raise FusionSpecError(
                f"{where}: unknown fusion {name!r}; expected 'rrf', 'rrf:k=<number >= 0>', 'w<weight in [0, 1]>' "
                f"(e.g. w0.25) or another method of the registry ({known}), optionally ':<input>+<input>'"
            )
        method, head_options = found
        clash = sorted(set(head_options) & set(parsed.options))
        if clash:
            raise FusionSpecError(f"{where}: {name!r}: {clash[0]} is given in the name already")
        try:
            options = method.options(**head_options, **parsed.options)
        except ValidationError as exc:
            raise FusionSpecError(f"{where}: {name!r}: {_one_line(exc)}") from None
        try:
            inputs = (
                DEFAULT_INPUTS if parsed.rest is None else tuple(split_inputs(parsed.rest, where=f"{where}: {name!r}"))
            )
        except HarnessInputError as exc:
            raise FusionSpecError(str(exc)) from None
        for inp in inputs:
            if not (inp[:1].isalpha() or inp[:1] == "_"):
                raise FusionSpecError(f"{where}: {name!r}: input {inp!r} is not a system name")
        if method.n_inputs is not None and len(inputs) != method.n_inputs:
            raise FusionSpecError(
                f"{where}: {name!r}: {method.name} takes exactly {method.n_inputs} inputs, got {len(inputs)}"
            )
        return cls(method.name, options, inputs)

    @property
    def _method(self) -> FusionMethod:
        return FUSIONS[self.method]

    @property
    def name(self) -> str:
        """Canonical name (``rrf`` for k = 60; input depths written only when they are not the defaults, as
        ``rrf[input_depth=100]``; inputs written only when they are not ``bm25+vector``)."""
        head = self._method.canonical_head(self.options)
        depths = [
            f"{key}={getattr(self.options, key)}"
            for key in ("input_depth", "chunk_input_depth")
            if getattr(self.options, key) != type(self.options).model_fields[key].default
        ]
        if depths:
            base, sep, rest = head.partition(":")
            head = f"{base}[{';'.join(depths)}]{sep}{rest}"
        return head if self.inputs == DEFAULT_INPUTS else f"{head}:{'+'.join(self.inputs)}"

    @property
    def k(self) -> float | None:
        """The RRF constant (``None`` for other methods)."""
        return getattr(self.options, "k", None)

    @property
    def w(self) -> float | None:
        """The weight of the first input of a ``w<weight>`` system (``None`` for other methods)."""
        return getattr(self.options, "w", None)

    @property
    def formula(self) -> str:
        """The formula, for the run manifest."""
        return self._method.formula(self.options, self.inputs)

    def config(self) -> dict:
        """What identifies this fusion in a run manifest: name, method, parameters, input names, formula."""
        return {
            "fusion": self.name,
            "method": self.method,
            "params": self._method.params(self.options),
            "input_names": list(self.inputs),
            "input_depth": {"document": self.options.input_depth, "chunk": self.options.chunk_input_depth},
            "formula": self.formula,
        }

    def fuse(self, lists: Sequence[Pairs], *, depth: int | None = None, level: str | None = None) -> Ranking:
        """Fuse one list per input (an input without rankings at this level gives an empty list).

        Args:
            lists: one ranked list per input, in input order.
            depth: cut of each input list when ``level`` is not given (``None``: whole lists).
            level: ``docs``/``document`` or ``chunks``/``chunk``: cut each input list at this fusion's input depth
                of that level (:class:`~harness.retrieve.fusion.base.FusionOptions`; ``depth`` is then ignored).
                What a run, the sweep and the known-item study use, so that a run's depth never changes what is
                fused.

        Returns:
            The fused ranking over the union of the cut lists, canonical, not cut again (the caller cuts it at the
            run's depth).

        Raises:
            ValueError: a number of lists other than the method's number of inputs.
        """
        n = self._method.n_inputs
        if n is not None and len(lists) != n:
            raise ValueError(f"fusion {self.name}: needs exactly {n} lists {list(self.inputs)}, got {len(lists)}")
        cut = depth if level is None else self.options.input_depth_of(level)
        return self._method.fuse(lists, self.options, cut)

    __call__ = fuse


def parse_fusion(name: str, *, where: str = "fusion") -> FusionSpec:
    """:meth:`FusionSpec.parse`."""
    return FusionSpec.parse(name, where=where)


def fuse_results(spec: FusionSpec, inputs: Sequence[Sequence]) -> list:
    """A fusion system's results: per query (``inputs`` holds one list of
    :class:`~harness.retrieve.base.QueryResult` per input, in input order, aligned by query), each level fused at
    the fusion's own input depth (:meth:`FusionSpec.fuse` with ``level``); a level no input ranks stays ``None``,
    and one only some inputs rank is fused from those, flagged ``partial_doc_fusion`` / ``partial_chunk_fusion``.

    Returns:
        One :class:`~harness.retrieve.base.QueryResult` per query.
    """
    from harness.retrieve.base import QueryResult

    out = []
    for per_q in zip(*inputs, strict=True):
        res, flags = {}, {}
        for level in ("docs", "chunks"):
            lists = [getattr(r, level) for r in per_q]
            if all(x is None for x in lists):
                res[level] = None
                continue
            if any(x is None for x in lists):
                flags["partial_doc_fusion" if level == "docs" else "partial_chunk_fusion"] = True
            res[level] = spec.fuse([x or [] for x in lists], level=level)  # the fusion's own input depth
        out.append(QueryResult(docs=res["docs"], chunks=res["chunks"], flags=flags))
    return out
