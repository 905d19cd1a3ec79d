"""The non-inferiority gate with three outcomes: PASS, FAIL and INCONCLUSIVE (``harness gate``).

Each *check* (one per ``--metric``, one per ``--guard``) looks at the mean paired difference ``candidate - baseline``
over the same questions (a guard: over one category's questions) and its two-sided ``1 - 2 alpha`` interval
``[L, U]`` from the coverage rule's default for paired differences under the run's own design
(:func:`harness.evaluation.design.paired_method`: CR3, the jackknife CR with Satterthwaite df of Bell &
McCaffrey 2002 and Pustejovsky & Tipton 2018, for the committed baseline's design; Hansen-Hurwitz on a PPS gold set),
whose lower bound is the one-sided ``1 - alpha`` lower confidence bound of the usual non-inferiority test (Wellek
2010, "Testing Statistical Hypotheses of Equivalence and Noninferiority", ch. 2; Schuirmann 1987):

* **PASS** - non-inferiority shown: ``L > -margin``;
* **FAIL** - the candidate is shown worse than the margin: ``U < -margin`` (the same interval's upper bound);
* **INCONCLUSIVE** - neither: the interval contains ``-margin``. The reason says why in plain words: underpowered
  (the minimum detectable difference ``MDD = (t_{1-alpha, df} + t_{0.8, df}) se`` (Bloom 1995), one-sided, 80 %
  power, exceeds the margin; with the clusters a plan needs, :func:`harness.evaluation.power.plan_clusters` at
  ``delta = margin``), or the difference lies close to the margin.

Degenerate data: when every paired difference is exactly 0 the check PASSES (the candidate scores as the baseline on
every question); other degenerate cases are INCONCLUSIVE with "minimum detectable difference not estimable": every
difference equal (zero variance), one cluster carrying every non-zero difference (the interval's df would then
describe the design, not the data), fewer than 2 clusters.

Combining checks (intersection-union, Berger 1982): the gate PASSES only if every check passes, FAILS if any check
fails, and is INCONCLUSIVE otherwise. No multiplicity adjustment is made, and none is needed for the PASS decision
(an intersection-union test at level alpha is level alpha); a FAIL of any one of several checks is not
family-wise controlled.

Exit codes: 0 PASS, 1 FAIL, 2 unusable input (:class:`harness.errors.HarnessInputError`), 3 INCONCLUSIVE;
``on_inconclusive="fail"`` / ``"pass"`` maps 3 to 1 / 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from scipy import stats as sps

from harness import __version__
from harness.errors import HarnessInputError
from harness.evaluation.bounds import interval_flags
from harness.evaluation.changes import changes_between, changes_dicts
from harness.evaluation.chunkers import metrics_across_chunkers
from harness.evaluation.design import paired_method
from harness.evaluation.pairing import PairedValues, level_available, paired_values, pick_pairs
from harness.evaluation.power import plan_clusters
from harness.evaluation.regressions import regressed_questions
from harness.evaluation.runs import RunRecord, check_comparable, load_run
from harness.metrics import MetricSpec
from harness.stats import default_method, minimum_detectable_difference, paired
from harness.stats.design_evidence import RunDesign, run_design
from harness.stats.methods import get as get_method
from harness.stats.methods import paired_evidence_json

EXIT_CODES = {"PASS": 0, "FAIL": 1, "INCONCLUSIVE": 3}
"""Exit code of each decision (2 is unusable input)."""
ON_INCONCLUSIVE = {"fail": 1, "pass": 0}
"""``--on-inconclusive`` policies: the exit code an INCONCLUSIVE verdict is mapped to."""
POWER = 0.8
"""The power at which the minimum detectable difference is stated."""
ZERO_SPREAD = 1e-12
"""Paired differences whose range is below this (relative to their size, at least 1) have zero variance: float
rounding of equal differences (``x - 0.05`` over many ``x``) does not count as variation."""
COMBINATION = (
    "intersection-union: PASS only if every check passes, FAIL if any check fails, otherwise INCONCLUSIVE; "
    "no multiplicity adjustment"
)


def check_margin(value: float, option: str = "--margin") -> float:
    """``float(value)`` when it is a finite number >= 0.

    Raises:
        HarnessInputError: ``inf``, ``nan``, a negative number or a non-number, naming ``option``.
    """
    try:
        m = float(value)
    except (TypeError, ValueError):
        raise HarnessInputError(f"{option}: {value!r} is not a number (a margin is a finite number >= 0)") from None
    if isinstance(value, bool) or not math.isfinite(m) or m < 0:
        raise HarnessInputError(f"{option}: {value!r} must be a finite number >= 0 (metric units)")
    return m


@dataclass(frozen=True)
class Guard:
    """A per-category guard: the candidate must not be worse than ``margin`` on ``category``'s questions, on
    ``metric`` (``None``: the gate's first metric)."""

    category: str
    margin: float
    metric: str | None = None


def parse_guard(text: str) -> Guard:
    """Parse ``CATEGORY:MARGIN`` or ``CATEGORY:METRIC:MARGIN`` (``negative_false_premise:0.10``,
    ``monitoring:recall@10:0.05``).

    Raises:
        HarnessInputError: another shape, an empty category, a margin that is not a finite number >= 0 (naming
            ``--guard`` and the text).
    """
    parts = str(text).split(":")
    if len(parts) not in (2, 3) or not parts[0].strip():
        raise HarnessInputError(f"--guard {text!r}: expected CATEGORY:MARGIN or CATEGORY:METRIC:MARGIN")
    metric = parts[1].strip() if len(parts) == 3 else None
    if metric is not None:
        MetricSpec.parse(metric)
    return Guard(parts[0].strip(), check_margin(parts[-1].strip(), f"--guard {text!r}"), metric)


@dataclass
class GateCheck:
    """One check of the gate (a metric, or a category guard), see the module docstring.

    Attributes:
        name: ``mrr``, or ``guard monitoring: mrr``; kind: ``"metric"`` or ``"guard"``; metric; category (guards).
        margin: the non-inferiority margin (metric units, >= 0).
        decision: ``PASS``, ``FAIL`` or ``INCONCLUSIVE``; reason: why, in plain words.
        mean_baseline, mean_candidate, diff: means over the check's questions (0-1) and the mean paired difference.
        lower, upper: the two-sided ``1 - 2 alpha`` interval of ``diff`` (``lower`` is the one-sided ``1 - alpha``
            bound); ``None`` when no interval exists (fewer than 2 clusters).
        se, df: the interval's standard error and degrees of freedom (``None`` where the method has none).
        minimum_detectable_difference: at 80 % power, one-sided alpha; ``None`` when not estimable (never 0).
        clusters_needed: clusters a gold set needs for ``MDD <= margin`` (when underpowered and margin > 0).
        n_questions, n_clusters: of the check.
        not_estimable: why the MDD is not estimable (degenerate data), else ``None``.
        interval: the interval (:meth:`harness.stats.Interval.to_dict`), or ``None``.
        warnings: the interval's warnings (few clusters).
        regressions: the questions of the check the candidate does worse on, worst first, uncapped
            (:class:`harness.evaluation.regressions.Regression` as dicts: qid, category, baseline, candidate, diff,
            rank_baseline, rank_candidate, level).
    """

    name: str
    kind: str
    metric: str
    category: str | None
    margin: float
    decision: str
    reason: str
    mean_baseline: float
    mean_candidate: float
    diff: float
    lower: float | None
    upper: float | None
    se: float | None
    df: float | None
    minimum_detectable_difference: float | None
    clusters_needed: int | None
    n_questions: int
    n_clusters: int
    not_estimable: str | None = None
    interval: dict | None = None
    warnings: list[str] = field(default_factory=list)
    regressions: list[dict] = field(default_factory=list)


def _mdd(iv, alpha: float) -> float | None:
    """MDD of an interval: from its se and df; from its half-width with normal quantiles when it has no se (a
    percentile bootstrap); ``None`` when the se is 0 or a bound is infinite (the method cannot bound that side, so
    no difference is detectable at this size)."""
    if not (math.isfinite(iv.lower) and math.isfinite(iv.upper)):
        return None
    if iv.se is not None:
        se = float(iv.se)
        return float(minimum_detectable_difference(se, iv.df, alpha=alpha, power=POWER)) if se > 0 else None
    half = (iv.upper - iv.lower) / 2.0
    if not math.isfinite(half) or half <= 0:
        return None
    z = float(sps.norm.ppf(1 - alpha))
    return float(half * (z + sps.norm.ppf(POWER)) / z)


def _degenerate(pv: PairedValues) -> str | None:
    d = pv.diff
    if pv.n_clusters < 2:
        return f"the {len(d)} questions form {pv.n_clusters} cluster"
    if float(np.ptp(d)) <= ZERO_SPREAD * max(1.0, float(np.abs(d).max())):
        return f"every paired difference is {float(d.mean()):+.4f} (zero variance)"
    carriers = sorted(set(pv.clusters[d != 0].tolist()))
    if len(carriers) == 1:
        k = int(np.count_nonzero(d))
        return f"one cluster ({carriers[0]}) carries every non-zero paired difference ({k} question{'s' * (k > 1)})"
    return None


def _no_method_holds(checks: list[GateCheck], run: RunRecord, method: str) -> None:
    """When no paired interval method reaches 93 % coverage for ``run``'s design (its evidence entry's ``paired``
    default is ``None``), every check that is not exactly 0 becomes INCONCLUSIVE with that reason (issue 42 item 2):
    a PASS or FAIL on an interval that undercovers is not a verdict."""
    from harness.stats.shown import ShownIntervals, short_label, unheld
    from harness.wording import no_method_holds

    held = unheld(ShownIntervals.for_run(run).design)
    if "paired" not in held:
        return
    why = no_method_holds(short_label(method), held["paired"])
    for c in checks:
        if c.lower == c.upper == 0.0 and c.diff == 0.0:
            continue
        c.reason = f"{why} (the interval alone would read: {c.reason})"
        c.decision = "INCONCLUSIVE"


def judge(
    pv: PairedValues,
    *,
    margin: float,
    alpha: float = 0.05,
    metric: str,
    category: str | None = None,
    method: str | None = None,
) -> GateCheck:
    """One check of the gate on paired values (see the module docstring for the rule).

    Args:
        pv: the two systems' values on the check's questions (:func:`harness.evaluation.pairing.paired_values`).
        margin: finite, >= 0 (metric units); alpha: one-sided level in (0, 0.5).
        metric: the metric id; category: the guard's category, or ``None`` for a metric check.
        method: a registered paired interval method (default: :data:`harness.stats.methods.DEFAULTS`
            ``['paired']``; :func:`gate` passes the run design's, :func:`harness.evaluation.design.paired_method`).

    Returns:
        The :class:`GateCheck`.
    """
    method = method or default_method("paired")
    d = pv.diff
    name = metric if category is None else f"guard {category}: {metric}"
    base = dict(
        name=name,
        kind="metric" if category is None else "guard",
        metric=metric,
        category=category,
        margin=margin,
        mean_baseline=float(pv.a.mean()),
        mean_candidate=float(pv.b.mean()),
        diff=float(d.mean()),
        n_questions=len(d),
        n_clusters=pv.n_clusters,
    )
    iv = None
    if pv.n_clusters >= 2:
        iv = paired(pv.a, pv.b, pv.clusters, method=method, level=1 - 2 * alpha)
    zero = bool(np.all(d == 0))
    why = "every paired difference is 0" if zero else _degenerate(pv)
    mdd = None if (why or iv is None) else _mdd(iv, alpha)
    if iv is not None and why is None and mdd is None:
        why = "the interval has an infinite bound or zero width"
    lower, upper = (0.0, 0.0) if zero else (None, None)
    if iv is not None:
        lower, upper = float(iv.lower), float(iv.upper)
    extra = dict(
        lower=lower,
        upper=upper,
        se=None if iv is None or iv.se is None else float(iv.se),
        df=None if iv is None or iv.df is None else float(iv.df),
        minimum_detectable_difference=mdd,
        interval=None if iv is None else iv.to_dict(),
        warnings=[] if iv is None else list(iv.warnings),
        not_estimable=why,
    )
    if zero:
        reason = f"every paired difference is exactly 0: the candidate scores as the baseline on all {len(d)} questions"
        return GateCheck(**base, **extra, decision="PASS", reason=reason, clusters_needed=None)
    pct = f"{100 * (1 - 2 * alpha):g} %"
    if why is not None:
        reason = f"minimum detectable difference not estimable: {why}"
        return GateCheck(**base, **extra, decision="INCONCLUSIVE", reason=reason, clusters_needed=None)
    if lower > -margin:
        reason = f"non-inferior: lower bound {lower:+.4f} > -margin {-margin:+.4f}"
        return GateCheck(**base, **extra, decision="PASS", reason=reason, clusters_needed=None)
    if upper < -margin:
        reason = f"worse than the margin: upper bound {upper:+.4f} < -margin {-margin:+.4f}"
        return GateCheck(**base, **extra, decision="FAIL", reason=reason, clusters_needed=None)
    needed = None
    if mdd > margin:
        reason = f"underpowered: minimum detectable difference {mdd:.3f} > margin {margin:g}"
        if margin > 0:
            needed = plan_clusters(d, pv.clusters, margin, alpha=alpha, power=POWER)["clusters_needed"]
            reason += f"; needs about {needed} clusters (now {pv.n_clusters})"
        else:
            reason += "; a margin of 0 is shown only by a candidate that is better"
    else:
        reason = (
            f"the {pct} interval [{lower:+.4f}, {upper:+.4f}] contains -margin {-margin:+.4f}: the difference "
            f"{float(d.mean()):+.4f} lies too close to the margin to be shown either way (minimum detectable "
            f"difference {mdd:.3f} <= margin {margin:g})"
        )
    return GateCheck(**base, **extra, decision="INCONCLUSIVE", reason=reason, clusters_needed=needed)


def combine(checks: Sequence[GateCheck]) -> tuple[str, str]:
    """``(decision, reason)`` of the whole gate by intersection-union (module docstring)."""
    failed = [c for c in checks if c.decision == "FAIL"]
    if failed:
        return "FAIL", "; ".join(f"{c.name}: {c.reason}" for c in failed)
    open_ = [c for c in checks if c.decision == "INCONCLUSIVE"]
    if open_:
        return "INCONCLUSIVE", "; ".join(f"{c.name}: {c.reason}" for c in open_)
    if len(checks) == 1:
        return "PASS", f"{checks[0].name}: {checks[0].reason}"
    return "PASS", f"every check passes ({', '.join(c.name for c in checks)})"


@dataclass
class GateVerdict:
    """The gate's verdict (printed by every output format; its JSON form is :meth:`to_dict`).

    Attributes:
        decision: ``PASS``, ``FAIL`` or ``INCONCLUSIVE`` (:func:`combine`); exit_code: 0, 1 or 3, after
            ``on_inconclusive`` (``"fail"`` -> 1, ``"pass"`` -> 0, ``None`` -> 3); reason: plain words.
        alpha: one-sided level; level: the two-sided level of the check intervals (``1 - 2 alpha``).
        method, method_label: the registered paired interval method used (the coverage rule's default for
            the run's design, :func:`harness.evaluation.design.paired_method`).
        baseline, candidate: run folders; system_baseline, system_candidate: the systems compared.
        split: ``all``, ``dev`` or ``test``; goldset: ``{"name", "version", "sha256"}``; harness_version.
        missing_questions: ``{"baseline": n, "candidate": n}`` questions of the split without any ranking (scored 0).
        n_questions, n_clusters: of the split.
        checks: one :class:`GateCheck` per metric, then per guard.
        combination: how the checks combine, in words.
        warnings: few-cluster and missing-question warnings.
        report_url: a link to the HTML report (``harness gate --report-url``), shown by the Markdown and JUnit
            formats; ``None`` when not given.
        changes: the configuration facts that differ between the baseline and the candidate, ``[{"field",
            "baseline", "candidate", "scope"}]`` (:mod:`harness.evaluation.changes`); empty when none does.
    """

    decision: str
    exit_code: int
    reason: str
    on_inconclusive: str | None
    alpha: float
    level: float
    method: str
    method_label: str
    baseline: str
    candidate: str
    system_baseline: str
    system_candidate: str
    split: str
    goldset: dict
    harness_version: str
    missing_questions: dict
    n_questions: int
    n_clusters: int
    checks: list[GateCheck]
    combination: str = COMBINATION
    warnings: list[str] = field(default_factory=list)
    report_url: str | None = None
    design: RunDesign | None = None
    changes: list[dict] = field(default_factory=list)

    def missing_question_warnings(self) -> list[str]:
        """One warning per side that lacks rankings for questions of the split, with the counts (these questions
        score 0 on that side); empty when both sides rank every question."""
        systems = {"baseline": self.system_baseline, "candidate": self.system_candidate}
        return [
            f"the {side} ({systems[side]}) has no ranking for {n} of {self.n_questions} questions; they score 0"
            for side, n in self.missing_questions.items()
            if n
        ]

    def known_item_only(self) -> bool:
        """Whether this is a known-item verdict alone (``harness gate --known-item KI_DIR`` without run records): its
        checks are known-item checks (``kind`` ``known-item``) and it has no gold set."""
        return bool(self.checks) and not self.goldset and all(c.kind == "known-item" for c in self.checks)

    def to_dict(self) -> dict:
        """The JSON form: every field (``None`` where a number does not exist, never NaN); every interval carries its
        ``flags`` (:func:`harness.evaluation.bounds.interval_flags`) and ``coverage_evidence`` says what the
        coverage study measured for the paired intervals' method (``None`` when it did not)."""
        d = {k: v for k, v in asdict(self).items() if k != "design"}
        if self.known_item_only():  # its own design and evidence, nothing about a gold set (issue 42 item 3)
            d.pop("goldset", None)
            return interval_flags({**d, "coverage_evidence": self.checks[0].evidence_json()})
        return interval_flags({**d, "coverage_evidence": paired_evidence_json(self.method, design=self.design)})


def _as_guards(guards: Mapping[str, float] | Sequence[Guard | str] | None) -> list[Guard]:
    if not guards:
        return []
    if isinstance(guards, Mapping):
        return [Guard(c, check_margin(m, f"--guard {c}:{m}")) for c, m in guards.items()]
    return [g if isinstance(g, Guard) else parse_guard(g) for g in guards]


def _pair(a: RunRecord, b: RunRecord, system_baseline: str | None, system_candidate: str | None) -> tuple[str, str]:
    flags = ("--baseline-system", "--candidate-system")
    (sa, sb), *rest = pick_pairs(a, b, system_baseline, system_candidate, flags=flags)
    if rest:
        pairs = ", ".join(f"{x}/{y}" for x, y in [(sa, sb), *rest])
        raise HarnessInputError(f"several systems match ({pairs}): choose with {flags[0]} and {flags[1]}")
    return sa, sb


def gate(
    baseline: str | Path | RunRecord,
    candidate: str | Path | RunRecord,
    *,
    metric: str | Sequence[str] = "mrr",
    margin: float = 0.02,
    alpha: float = 0.05,
    system_baseline: str | None = None,
    system_candidate: str | None = None,
    guards: Mapping[str, float] | Sequence[Guard | str] | None = None,
    split: str = "all",
    on_inconclusive: str | None = None,
) -> GateVerdict:
    """Non-inferiority gate on the paired difference candidate - baseline, three-way (module docstring).

    Args:
        baseline, candidate: run record folders (or loaded records).
        metric: one metric id or several (each one check).
        margin: the non-inferiority margin of every metric check: a finite number >= 0 in metric units.
        alpha: one-sided level in (0, 0.5); the check intervals are two-sided at ``1 - 2 alpha``.
        system_baseline, system_candidate: the systems to compare when a run holds several.
        guards: per-category guards: ``{category: margin}``, or :class:`Guard` objects / ``CATEGORY[:METRIC]:MARGIN``
            strings (:func:`parse_guard`); a guard without a metric judges the first metric.
        split: ``all``, ``dev`` or ``test``: the questions judged (the gold set's ``split`` field).
        on_inconclusive: ``None`` (exit 3), ``"fail"`` (exit 1) or ``"pass"`` (exit 0) for an INCONCLUSIVE verdict.

    Returns:
        The :class:`GateVerdict`.

    Raises:
        IncomparableError / HarnessInputError: unusable or incomparable input (exit 2): a margin or guard margin
            that is not a finite number >= 0, alpha outside (0, 0.5), an unknown system, metric, split, policy or
            category, a metric one side has no rankings for.
    """
    if not 0 < alpha < 0.5:
        raise HarnessInputError(f"--alpha: {alpha} must lie in (0, 0.5)")
    margin = check_margin(margin)
    metrics = [metric] if isinstance(metric, str) else list(dict.fromkeys(metric))
    if not metrics:
        raise HarnessInputError("--metric: no metric given")
    for m in metrics:
        MetricSpec.parse(m)
    if on_inconclusive is not None and on_inconclusive not in ON_INCONCLUSIVE:
        raise HarnessInputError(f"--on-inconclusive: {on_inconclusive!r} is not one of fail, pass")
    guard_list = _as_guards(guards)
    a = baseline if isinstance(baseline, RunRecord) else load_run(baseline)
    b = candidate if isinstance(candidate, RunRecord) else load_run(candidate)
    check_comparable(a, b, chunkers_may_differ=True)
    metrics_across_chunkers(a, b, [*metrics, *[g.metric for g in guard_list if g.metric]], (), option="--metric")
    sa, sb = _pair(a, b, system_baseline, system_candidate)
    method = paired_method(a)  # Hansen-Hurwitz on a PPS gold set
    checks: list[GateCheck] = []
    values: dict[str, PairedValues] = {}
    for m in [*metrics, *[g.metric for g in guard_list if g.metric]]:
        if m in values:
            continue
        if not (level_available(a, sa, m) and level_available(b, sb, m)):
            raise HarnessInputError(f"--metric {m}: one run has no rankings at this metric's level ({sa} vs {sb})")
        values[m] = paired_values(a, b, sa, sb, m, split=split)
    for m in metrics:
        checks.append(judge(values[m], margin=margin, alpha=alpha, metric=m, method=method))
        checks[-1].regressions = [asdict(r) for r in regressed_questions(a, b, sa, sb, m, values[m])]
    for g in guard_list:
        m = g.metric or metrics[0]
        pv = values[m]
        mask = np.array([c == g.category for c in pv.categories])
        if not mask.any():
            raise HarnessInputError(f"--guard: category {g.category!r} has no questions in this gold set ({split})")
        sub = pv.where(mask)
        checks.append(judge(sub, margin=g.margin, alpha=alpha, metric=m, category=g.category, method=method))
        checks[-1].regressions = [asdict(r) for r in regressed_questions(a, b, sa, sb, m, sub)]
    _no_method_holds(checks, a, method)
    decision, reason = combine(checks)
    exit_code = EXIT_CODES[decision]
    if decision == "INCONCLUSIVE" and on_inconclusive:
        exit_code = ON_INCONCLUSIVE[on_inconclusive]
    first = values[metrics[0]]
    missing = {"baseline": first.missing_a, "candidate": first.missing_b}
    warnings = list(dict.fromkeys(w for c in checks for w in c.warnings))
    if a.manifest.clusters.warning and split == "all":
        warnings.append(a.manifest.clusters.warning)
    gs = a.manifest.goldset
    verdict = GateVerdict(
        decision=decision,
        exit_code=exit_code,
        reason=reason,
        on_inconclusive=on_inconclusive,
        alpha=alpha,
        level=1 - 2 * alpha,
        method=method,
        method_label=get_method(method).label,
        baseline=str(a.path),
        candidate=str(b.path),
        system_baseline=sa,
        system_candidate=sb,
        split=split,
        goldset={"name": gs.name, "version": gs.version, "sha256": gs.sha256},
        harness_version=__version__,
        missing_questions=missing,
        n_questions=len(first.qids),
        n_clusters=first.n_clusters,
        checks=checks,
        warnings=warnings,
        design=run_design(a, split=split),
        changes=changes_dicts(changes_between(a, b, [(sa, sb)])),
    )
    verdict.warnings += verdict.missing_question_warnings()
    return verdict
