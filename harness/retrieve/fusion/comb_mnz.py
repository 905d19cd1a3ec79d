"""CombMNZ of min-max normalised scores (Fox & Shaw 1994; Lee 1997 min-max; ranx ``fuse(method="mnz")``).

``score(d) = n(d) * sum_i minmax_i(d)``, where ``n(d)`` is the number of (cut) input lists that hold ``d``: an item
found by several systems is promoted by how many found it. An item at the bottom of a list (normalised to 0) still
counts in ``n(d)``, as in ranx's ``comb_mnz`` (``sum(scores) * len(scores)`` over the runs holding the id). Names:
``mnz`` (inputs ``bm25+vector``), ``mnz:bm25+mine``, any number of inputs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from harness.ranking import Ranking, canonical_ranking
from harness.retrieve.fusion.base import FusionMethod, FusionOptions, Pairs
from harness.retrieve.fusion.normalize import minmax

__all__ = ["METHOD", "MNZOptions", "comb_mnz"]


def comb_mnz(lists: Sequence[Pairs], *, depth: int | None = None) -> Ranking:
    """CombMNZ: each list cut at ``depth`` and min-max normalised, then ``n(d) * sum_i minmax_i(d)``.

    Args:
        lists: one ranked list per system (higher better).
        depth: cut of each input list (``None``: whole list).

    Returns:
        ``[(id, n(id) * sum_i minmax_i(id))]`` in canonical order over the union of the cut lists (not cut again);
        scores lie in [0, n_lists ** 2]. A constant or one-item list normalises to 1 (ranx: 0).

    Raises:
        ValueError: an infinite score. harness.errors.MetricError: a NaN score.
    """
    parts: dict[str, list[float]] = {}
    for lst in lists:
        for item, v in minmax(canonical_ranking(lst, depth)).items():
            parts.setdefault(item, []).append(v)
    return canonical_ranking((item, len(v) * math.fsum(v)) for item, v in parts.items())


class MNZOptions(FusionOptions):
    """Options of an ``mnz`` system (none)."""


def _formula(_o: MNZOptions, inputs: Sequence[str]) -> str:
    return (
        f"score(d) = n(d) * sum_i minmax_i(d) over {', '.join(inputs)}; n(d) = lists holding d; "
        "minmax = (s - min)/(max - min), constant list -> 1; absent = 0; each list canonical (score desc, id asc) "
        "and cut at depth [CombMNZ, Fox & Shaw 1994; min-max, Lee 1997]"
    )


METHOD = FusionMethod(
    name="mnz",
    head=re.compile(r"mnz"),
    options=MNZOptions,
    fuse=lambda lists, _o, depth: comb_mnz(lists, depth=depth),
    formula=_formula,
    params=lambda _o: {},
    canonical_head=lambda _o: "mnz",
    reference="Fox & Shaw 1994 (CombMNZ); Lee 1997 (min-max); ranx fuse(method='mnz', norm='min-max')",
)
