"""The rule that picks the default interval method per outcome type from the coverage study's measurements.

Outcome classes (the keys of :data:`harness.stats.methods.DEFAULTS`) and the populations that are their evidence:
``binary`` (hit@1 populations; hit@k and all_hop@k in runs), ``unit`` (reciprocal-rank populations; MRR, recall,
evidence recall), ``continuous`` and ``paired`` (paired-difference populations; ``compare`` and ``gate``).

Candidates for a class: the registered methods a run can compute (SRS design, no frame;
:attr:`~harness.stats.methods.IntervalMethod.in_runs`) that estimate the micro mean (the reported number), are not for
contrast only, and apply to the class's outcome type (``paired`` also needs ``paired=True``); a proportion-only method
can therefore be the default for ``binary`` only.

Rule (issue 21), over the SRS designs with K in ``[10, 80]`` on every population of the class, all on the same samples
(the study draws one set of samples per population and K for every method):

* **target**: coverage >= 93 % at K = 20 and >= 91 % at every K = 10-80, with mean width (finite intervals) at most
  1.15x CR2's at every population and every K the study ran (K = 5 included: the width limit is not restricted to
  the coverage range);
* among the candidates within the width limit, the default is the one with the highest minimum coverage, restricted
  to those that meet the target if any does; ties go to the narrower (smaller largest width ratio), then to the
  registry's display order. When none meets the target, the result says by how much the default misses it.

The same summaries are computed for every other registered method too (frame-aware Wu v_3 under SRS, Hansen-Hurwitz
under the PPS design, with its width relative to SRS CR2 at the same K), for the evidence file and the tables; they
are never the default, since a run cannot compute them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from harness.stats.methods import DEFAULTS, INTERVALS, display_order
from harness.studies.coverage.results import CoverageResult

TARGET_K20 = 0.93
TARGET_ALL = 0.91
WIDTH_LIMIT = 1.15
K_RANGE = (10, 80)
CLASSES = ("binary", "unit", "continuous", "paired")

RULE = (
    "target: coverage >= 93 % at K = 20 and >= 91 % at every K = 10-80 on every population, mean width (finite "
    "intervals) <= 1.15 x CR2's at every K studied; default = the candidate within the width limit with the "
    "highest minimum coverage over K = 10-80 (among those meeting the target, if any); candidates: registered "
    "methods a run can compute (SRS design, no frame) that estimate the reported micro mean"
)


def classes_of(population: dict) -> tuple[str, ...]:
    """The outcome classes a population (``CoverageResult.population``) is evidence for."""
    if population.get("paired"):
        return ("continuous", "paired")
    return (str(population["outcome"]),)


def _candidate(name: str, cls: str) -> bool:
    m = INTERVALS[name]
    outcome = "continuous" if cls == "paired" else cls
    ok = m.in_runs and m.estimand == "micro" and not m.contrast_only and m.applies_to(outcome)
    return ok and (m.paired or cls != "paired")


@dataclass
class MethodSummary:
    """One method's measurements over a class's populations (K in :data:`K_RANGE`).

    Attributes: ``method``; ``design`` whose samples were used (``srs``/``pps``); ``candidate`` (may be the
        default); ``min_coverage``/``max_coverage``/``min_coverage_k20`` (fractions; k20 None when K = 20 was not
        run); ``where`` (population and K of the minimum); ``mc_margin`` (the Monte Carlo margin there);
        ``max_width_ratio`` (mean width / SRS CR2's at the same population and K, over every K studied; None when
        CR2 has no finite mean width); ``max_infinite_share``; ``within_width``; ``meets_target``; ``populations``.
    """

    method: str
    design: str
    candidate: bool
    min_coverage: float
    max_coverage: float
    min_coverage_k20: float | None
    where: str
    mc_margin: float
    max_width_ratio: float | None
    max_infinite_share: float
    within_width: bool
    meets_target: bool
    populations: int

    def to_dict(self) -> dict:
        """JSON form."""
        return dict(self.__dict__)


@dataclass
class ClassChoice:
    """The rule's result for one outcome class.

    Attributes: ``outcome`` (class); ``chosen`` (the default the rule picks, or the current one without evidence);
        ``current`` (:data:`~harness.stats.methods.DEFAULTS` now); ``meets_target``; ``shortfall_k20`` /
        ``shortfall_all`` (how far the chosen method's minimum coverage at K = 20 / over K = 10-80 lies below 93 %
        / 91 %, 0 when met); ``populations`` (labels); ``methods`` (every registered method's summary, candidates
        first, by minimum coverage).
    """

    outcome: str
    chosen: str
    current: str
    meets_target: bool
    shortfall_k20: float | None
    shortfall_all: float | None
    populations: list[str]
    methods: list[MethodSummary] = field(default_factory=list)

    def summary(self, method: str) -> MethodSummary | None:
        """The summary of ``method``, or None."""
        return next((m for m in self.methods if m.method == method), None)

    def to_dict(self) -> dict:
        """JSON form."""
        return {
            **{k: v for k, v in self.__dict__.items() if k != "methods"},
            "methods": [m.to_dict() for m in self.methods],
        }


def _summaries(results: Sequence[CoverageResult], cls: str) -> list[MethodSummary]:
    lo_k, hi_k = K_RANGE
    out = []
    for name in display_order():
        design = INTERVALS[name].design
        covs: list[tuple[float, str, float]] = []
        k20: list[float] = []
        ratios: list[float] = []
        inf: list[float] = []
        n_pops = 0
        for res in results:
            seen = False
            for d in res.designs:
                if d.design != design or name not in d.rows:
                    continue
                row = d.rows[name]
                base = res.design("srs", d.k)
                ref = None if base is None else base.rows.get("cr2", {}).get("mean_width")
                if ref is not None and math.isfinite(ref) and ref > 0:  # the width limit holds at every K studied
                    ratios.append(row["mean_width"] / ref if math.isfinite(row["mean_width"]) else math.inf)
                if not lo_k <= d.k <= hi_k:
                    continue
                seen = True
                covs.append((row["coverage"], f"{res.label} K={d.k}", row["mc_margin"]))
                if d.k == 20:
                    k20.append(row["coverage"])
                inf.append(row["infinite_share"])
            n_pops += seen
        if not covs:
            continue
        low = min(covs, key=lambda c: c[0])
        wmax = max(ratios) if ratios else None
        within = wmax is not None and wmax <= WIDTH_LIMIT
        meets = within and low[0] >= TARGET_ALL and bool(k20) and min(k20) >= TARGET_K20
        out.append(
            MethodSummary(
                method=name,
                design=design,
                candidate=_candidate(name, cls),
                min_coverage=low[0],
                max_coverage=max(c[0] for c in covs),
                min_coverage_k20=min(k20) if k20 else None,
                where=low[1],
                mc_margin=low[2],
                max_width_ratio=wmax,
                max_infinite_share=max(inf),
                within_width=within,
                meets_target=meets,
                populations=n_pops,
            )
        )
    order = list(display_order())
    out.sort(key=lambda m: (not m.candidate, -m.min_coverage, order.index(m.method)))
    return out


def choose_class(results: Sequence[CoverageResult], cls: str) -> ClassChoice:
    """Apply the rule (module docstring) to the populations of ``results`` that are evidence for ``cls``.

    Raises:
        ValueError: ``cls`` not one of :data:`CLASSES`.
    """
    if cls not in CLASSES:
        raise ValueError(f"outcome class {cls!r}: expected one of {', '.join(CLASSES)}")
    pops = [r for r in results if cls in classes_of(r.population)]
    current = DEFAULTS[cls]
    if not pops:
        return ClassChoice(cls, current, current, False, None, None, [])
    rows = _summaries(pops, cls)
    order = list(display_order())
    pool = [m for m in rows if m.candidate and m.within_width]
    if any(m.meets_target for m in pool):
        pool = [m for m in pool if m.meets_target]
    pool.sort(key=lambda m: (-m.min_coverage, m.max_width_ratio or 0.0, order.index(m.method)))
    if not pool:
        return ClassChoice(cls, current, current, False, None, None, [r.label for r in pops], rows)
    best = pool[0]
    k20 = best.min_coverage_k20
    return ClassChoice(
        outcome=cls,
        chosen=best.method,
        current=current,
        meets_target=best.meets_target,
        shortfall_k20=None if k20 is None else max(0.0, TARGET_K20 - k20),
        shortfall_all=max(0.0, TARGET_ALL - best.min_coverage),
        populations=[r.label for r in pops],
        methods=rows,
    )


def choose_defaults(results: Sequence[CoverageResult]) -> dict[str, ClassChoice]:
    """:func:`choose_class` for every class of :data:`CLASSES` (``{class: ClassChoice}``)."""
    return {cls: choose_class(results, cls) for cls in CLASSES}


# ----------------------------------------------------------------------------------------------------------------
# Display
# ----------------------------------------------------------------------------------------------------------------


def fmt_pct(x: float | None, digits: int = 1) -> str:
    """A fraction as ``92.3 %``; ``-`` for None/NaN."""
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.{digits}f} %"


def fmt_ratio(x: float | None) -> str:
    """A ratio with 2 decimals; ``-`` for None or non-finite."""
    return "-" if x is None or not math.isfinite(x) else f"{x:.2f}"


def verdict(c: ClassChoice) -> str:
    """``meets the target`` or by how much the chosen method misses it."""
    if not c.populations:
        return "no evidence"
    if c.meets_target:
        return "meets the target"
    return (
        f"misses by {100 * (c.shortfall_k20 or 0.0):.1f} pts at K = 20 and {100 * (c.shortfall_all or 0.0):.1f} pts "
        f"over K = {K_RANGE[0]}–{K_RANGE[1]}"
    )


def choice_table(choice: Mapping[str, ClassChoice]):
    """A rich table of the rule's result per outcome class."""
    from rich.table import Table
    from rich.text import Text

    t = Table(title=f"Default interval per outcome type (rule over K = {K_RANGE[0]}–{K_RANGE[1]}, SRS)")
    for col in ("outcome", "default", "was", "min coverage (where)", "min at K=20", "max width / CR2", "verdict"):
        t.add_column(col, justify="right" if col.startswith(("min", "max")) else "left")
    for cls, c in choice.items():
        s = c.summary(c.chosen)
        t.add_row(
            cls,
            c.chosen,
            c.current,
            Text("-" if s is None else f"{fmt_pct(s.min_coverage)} ({s.where})"),
            "-" if s is None else fmt_pct(s.min_coverage_k20),
            "-" if s is None else fmt_ratio(s.max_width_ratio),
            verdict(c),
        )
    return t
