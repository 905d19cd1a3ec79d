"""The :class:`Interval` record every interval function in :mod:`harness.stats` returns."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np


def _plain(value: Any) -> Any:
    """Convert numpy scalars/arrays (recursively) to JSON-ready Python objects; non-finite floats stay floats."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


@dataclass(frozen=True)
class Interval:
    """A two-sided confidence interval for a mean (or a mean difference).

    Fields:
        method: short machine name, a key of the registry :data:`harness.stats.methods.INTERVALS` (``"cr2"``,
            ``"cr3"``, ``"wild_cluster"``, ``"korn_graubard"``, ...); paired intervals prefix ``"paired_"``.
        estimate: the point estimate (same units as the metric, usually a proportion in [0, 1]).
        se: the standard error used (original scale), or ``None`` where the method has none (percentile bootstrap).
        df: degrees of freedom of the reference t distribution; ``None`` for a normal (z) interval or a
            percentile bootstrap.
        lower, upper: the bounds; ``lower <= estimate <= upper`` for every method here.
        level: the two-sided confidence level in (0, 1).
        n: number of rows (questions or chunks) used; n_clusters: number of clusters (documents).
        label: a human note, e.g. ``"iid (for contrast only; ignores clustering)"``.
        extras: method-specific details: ``warnings`` (list of str), bootstrap ``B``/``seed`` and the Monte Carlo
            error of each bound, ``fpc``, ...
    """

    method: str
    estimate: float
    se: float | None
    df: float | None
    lower: float
    upper: float
    level: float
    n: int
    n_clusters: int
    label: str = ""
    extras: dict = field(default_factory=dict)

    @property
    def width(self) -> float:
        """``upper - lower``."""
        return self.upper - self.lower

    @property
    def warnings(self) -> list[str]:
        """The warnings recorded in ``extras["warnings"]`` (empty list if none)."""
        return list(self.extras.get("warnings", []))

    def to_dict(self) -> dict:
        """A JSON-ready dict of all fields (numpy scalars converted; ``inf``/``nan`` kept as Python floats)."""
        out = {
            "method": self.method,
            "estimate": float(self.estimate),
            "se": None if self.se is None else float(self.se),
            "df": None if self.df is None or (isinstance(self.df, float) and math.isinf(self.df)) else float(self.df),
            "lower": float(self.lower),
            "upper": float(self.upper),
            "level": float(self.level),
            "n": int(self.n),
            "n_clusters": int(self.n_clusters),
            "label": self.label,
            "extras": _plain(self.extras),
        }
        return out
