"""What is special about a confidence interval as reported: a bound clipped to [0, 1], a side the method cannot
bound, zero width (:class:`Bounds`, :func:`bounds`).

Interval functions (:mod:`harness.stats`) clip the bounds of a [0, 1] outcome to [0, 1] and record
``extras["clipped"] = True``; a side a bootstrap-t or wild bootstrap cannot bound (an infinite bound) is then stored
as 0 or 1. Every rendering (:mod:`harness.report.format`) and every JSON output of the judging verbs
(:func:`interval_flags`) reads the same :class:`Bounds`, so such bounds are marked everywhere and never shown as if
they were measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Bounds", "bounds", "interval_flags"]


@dataclass(frozen=True)
class Bounds:
    """An interval as it is displayed: its bounds and what is special about them.

    Attributes:
        lower, upper: the bounds (``-inf`` / ``+inf`` for a side the method cannot bound, also when the record holds
            the clipped value).
        lower_clipped, upper_clipped: the bound was clipped to the value's range ([0, 1]; [-1, 1] for a paired
            difference; the method's raw bound lay beyond it).

    An interval is *degenerate* when it has zero width (``lower == upper``, both finite): all clusters gave the same
    value, and the interval measures no precision.
    """

    lower: float
    upper: float
    lower_clipped: bool = False
    upper_clipped: bool = False

    @property
    def degenerate(self) -> bool:
        """Zero width."""
        return self.lower == self.upper and math.isfinite(self.lower)

    @property
    def infinite(self) -> tuple[bool, bool]:
        """``(lower is -inf, upper is +inf)``."""
        return (self.lower == -math.inf, self.upper == math.inf)

    def marks(self) -> set[str]:
        """The marks this interval carries (``"clipped"``, ``"infinite"``, ``"degenerate"``; the keys of
        :data:`harness.report.format.LEGEND`)."""
        out = set()
        if self.lower_clipped or self.upper_clipped:
            out.add("clipped")
        if any(self.infinite):
            out.add("infinite")
        if self.degenerate:
            out.add("degenerate")
        return out

    def flags(self) -> dict:
        """The JSON field of an interval's display: ``{"degenerate", "clipped": {"lower", "upper"}, "infinite":
        {"lower", "upper"}}``."""
        lo_inf, hi_inf = self.infinite
        return {
            "degenerate": self.degenerate,
            "clipped": {"lower": self.lower_clipped, "upper": self.upper_clipped},
            "infinite": {"lower": lo_inf, "upper": hi_inf},
        }


def bounds(iv) -> Bounds | None:
    """The :class:`Bounds` of an interval given as a record (``IntervalRecord``, :class:`harness.stats.Interval`), its
    dict (``lower``, ``upper``, ``extras``), a ``(lower, upper)`` tuple, a :class:`Bounds`, or ``None``.

    Clipping comes from ``extras["clipped"]`` (set by every interval function that clips to [0, 1], and by
    :func:`harness.stats.paired` that clips a difference to ``extras["range"]`` = [-1, 1]): a bound at the range's
    low (or high) end of a clipped interval is marked clipped. A side the method cannot bound is stored clipped as
    0 or 1; it is restored to ``-inf`` / ``+inf``: for the bootstrap-t exactly, from ``extras["t_quantiles"]`` (an
    infinite quantile gives the infinite bound); for another method whose warnings say a bound is infinite, the
    clipped bound(s) at 0 / 1.
    """
    if iv is None or isinstance(iv, Bounds):
        return iv
    if isinstance(iv, tuple):
        return Bounds(float(iv[0]), float(iv[1]))
    if isinstance(iv, dict):
        lower, upper, extras = iv["lower"], iv["upper"], iv.get("extras") or {}
    else:
        lower, upper, extras = iv.lower, iv.upper, iv.extras or {}
    lower, upper = float(lower), float(upper)
    if not extras.get("clipped") or lower == upper:
        return Bounds(lower, upper)
    lo_end, hi_end = (float(x) for x in extras.get("range") or (0.0, 1.0))
    at_lo, at_hi = lower == lo_end, upper == hi_end
    tq = extras.get("t_quantiles")
    if isinstance(tq, (list, tuple)) and len(tq) == 2:
        lo_inf, hi_inf = at_lo and float(tq[1]) == math.inf, at_hi and float(tq[0]) == -math.inf
    else:
        said = any("infinite" in str(w) for w in extras.get("warnings", []))
        lo_inf, hi_inf = said and at_lo, said and at_hi
    return Bounds(
        -math.inf if lo_inf else lower,
        math.inf if hi_inf else upper,
        lower_clipped=at_lo and not lo_inf,
        upper_clipped=at_hi and not hi_inf,
    )


def interval_flags(obj):
    """A copy of a JSON-ready value in which every interval dict (one holding numeric ``lower`` and ``upper``) gains
    ``"flags"``: :meth:`Bounds.flags` of :func:`bounds` (degenerate, clipped and infinite bounds). Other values are
    copied as they are."""
    if isinstance(obj, dict):
        out = {k: interval_flags(v) for k, v in obj.items()}
        lo, hi = obj.get("lower"), obj.get("upper")
        if isinstance(lo, int | float) and isinstance(hi, int | float) and not isinstance(lo, bool):
            out["flags"] = bounds(obj).flags()
        return out
    if isinstance(obj, list | tuple):
        return [interval_flags(v) for v in obj]
    return obj
