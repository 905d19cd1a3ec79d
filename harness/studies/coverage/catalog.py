"""The methods the coverage study measures: every registered interval method plus the study's comparators.

Every method of the registry :data:`harness.stats.methods.INTERVALS` runs through its batched kernel, under the
designs it assumes (``design="srs"`` methods under the SRS and two-stage designs, ``design="pps"`` methods under the
PPS design; frame methods get the population's mean document size). The comparators have a kernel but no scalar
function (they are not offered by ``run``): ``chunk_bootstrap`` (rows resampled as if independent; binary outcomes),
``macro_boot_t`` (document bootstrap-t of the macro mean) and the two-stage design-based intervals.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import harness.stats.batched as batched
from harness.stats.methods import INTERVALS, display_order

#: Published 95 % coverage at K = 20 documents, 5,000 draws (1,300 regulatory documents; no FPC), by method name.
PUBLISHED_COVERAGE = {
    "iid_wald": 0.295,
    "chunk_bootstrap": 0.250,
    "iid_wald_effective": 0.890,
    "cr2": 0.857,
    "bootstrap_t": 0.884,
    "cluster_t": 0.930,
    "macro_boot_t": 0.972,
}


@dataclass(frozen=True)
class Studied:
    """A method the study runs: the registry's, or a comparator.

    Attributes: ``target`` (``micro``/``macro``), ``label``, ``kernel`` (None: computed by the design itself),
        ``fpc`` (``clusters``/``rows``/None), ``outcomes``, ``order`` (table order), ``design`` (``srs``/``pps``),
        ``registered`` (a registry method), ``frame`` (it needs the population's mean document size).
    """

    target: str
    label: str
    kernel: Callable | None
    fpc: str | None
    outcomes: tuple[str, ...]
    order: float
    design: str = "srs"
    registered: bool = False
    frame: bool = False


_ALL = ("binary", "unit", "continuous")
_COMPARATORS = {
    "macro_boot_t": Studied("macro", "cluster bootstrap-t of the macro mean", batched.macro_bootstrap_t_kernel,
                            "clusters", _ALL, 4.5),
    "chunk_bootstrap": Studied("micro", "chunk bootstrap (contrast only)", batched.row_bootstrap_kernel, "rows",
                               ("binary",), 9.5),
    "twostage_micro": Studied("micro", "two-stage design-based (weighted)", None, "clusters", _ALL, 20.0),
    "twostage_macro": Studied("macro", "two-stage design-based (weighted)", None, "clusters", _ALL, 21.0),
}  # fmt: skip


def studied() -> dict[str, Studied]:
    """``{name: Studied}`` for the registry's methods and the comparators, in table order."""
    reg = {
        m.name: Studied(m.estimand, m.label, m.kernel, m.fpc, m.outcomes, float(m.order), m.design, True, m.frame)
        for m in (INTERVALS[k] for k in display_order())
    }
    return dict(sorted({**reg, **_COMPARATORS}.items(), key=lambda kv: kv[1].order))


#: ``method name -> (target, label)`` for every method the study can report, in table order (registry + comparators).
METHODS: dict[str, tuple[str, str]] = {k: (v.target, v.label) for k, v in studied().items()}
