"""Paired comparisons between systems, from run records only (the gate: :mod:`harness.evaluation.gate`; power
planning: :mod:`harness.evaluation.power`).

Everything reads per-question metric vectors from run records through :mod:`harness.evaluation.pairing`: aligned by
question id, restricted to a split when asked (``all``, ``dev``, ``test``: the gold set's ``split`` field), with the
clusters recorded with the baseline run (connected components of questions sharing gold documents by default), so
questions that share documents are not counted as independent trials. Intervals are the coverage rule's default for
the run's own design (:mod:`harness.stats.shown`; paired: :func:`harness.evaluation.design.paired_method`), named in
every output.

This module computes every number the report shows about runs beyond the recorded summary:
:func:`category_intervals` (per category, the shown method for the category's design) and :func:`paired_table`
(paired differences against a baseline with the gate's three-way verdict, :func:`harness.evaluation.gate.judge`, and
Holm across the candidates), so ``harness report`` prints exactly what ``harness compare`` and ``harness gate``
print.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from harness.errors import HarnessInputError
from harness.evaluation.bounds import interval_flags
from harness.evaluation.changes import changes_between, changes_dicts
from harness.evaluation.chunkers import metrics_across_chunkers
from harness.evaluation.design import paired_method
from harness.evaluation.gate import judge
from harness.evaluation.pairing import check_split, level_available, paired_values, pick_pairs, require_clusters
from harness.evaluation.regressions import regressed_questions
from harness.evaluation.runs import RunRecord, check_comparable, load_run
from harness.goldset.schema import CATEGORIES
from harness.metrics import METRIC_SETS, outcome_of
from harness.stats import holm, paired, randomization_test
from harness.stats.design_evidence import RunDesign, run_design
from harness.stats.methods import INTERVALS, outcome_type, paired_evidence_json
from harness.stats.methods import get as get_method
from harness.stats.shown import ShownIntervals

DEFAULT_COMPARE_METRICS = METRIC_SETS["compare"]


def _wtl(diff: np.ndarray, eps: float = 1e-12) -> dict[str, int]:
    return {
        "wins": int((diff > eps).sum()),
        "ties": int((np.abs(diff) <= eps).sum()),
        "losses": int((diff < -eps).sum()),
    }


def _p_floor(alpha: float, cluster_diffs: np.ndarray, eps: float = 1e-12) -> str | None:
    """The sentence of :func:`harness.wording.randomisation_floor` when the two-sided sign-flip test on
    ``cluster_diffs`` (one mean difference per cluster) cannot reach ``p < alpha`` (its smallest attainable p is
    ``2 / 2^m``, m the clusters whose difference is not 0: a zero cluster's sign flip changes nothing); else None."""
    from harness.wording import randomisation_floor, randomisation_floor_applies

    m = int((np.abs(cluster_diffs) > eps).sum())
    alpha = round(alpha, 12)
    return randomisation_floor(alpha, m) if m and randomisation_floor_applies(alpha, m) else None


@dataclass
class MetricComparison:
    """Paired difference B - A for one metric and one pair of systems.

    Attributes:
        system_a, system_b, metric: what is compared; mean_a, mean_b, diff: means over the questions (0-1) and the
            mean paired difference B - A.
        interval: the paired interval (:meth:`harness.stats.Interval.to_dict`; the method of
            :func:`harness.evaluation.design.paired_method`).
        p_randomization: cluster sign-flip p; p_holm: Holm across the pairs of this metric (``None`` with one pair).
        questions, clusters: win / tie / loss counts (clusters: of cluster-mean differences; ``n`` clusters).
        per_category: ``{category: {"n", "diff", wins/ties/losses, "interval"?}}`` (an interval with >= 2 clusters:
            ``lower``, ``upper``, ``df``, ``method``, ``warnings``).
        missing_a, missing_b: questions without any ranking (scored 0) on each side.
        warnings: the interval's warnings (few clusters).
        p_floor: when the sign-flip test cannot reach ``p < 1 - level`` (``2 / 2^m > alpha``, m the clusters with a
            non-zero difference), the sentence saying so and that the verdict uses the interval
            (:func:`harness.wording.randomisation_floor`); else ``None``.
        regressions: the questions B does worse on than A, worst first, every one
            (:class:`harness.evaluation.regressions.Regression` as dicts: qid, category, baseline (A), candidate (B),
            diff, rank_baseline, rank_candidate of the first gold item at the metric's level, level).
    """

    system_a: str
    system_b: str
    metric: str
    mean_a: float
    mean_b: float
    diff: float
    interval: dict
    p_randomization: float
    p_holm: float | None
    questions: dict
    clusters: dict
    per_category: dict = field(default_factory=dict)
    missing_a: int = 0
    missing_b: int = 0
    warnings: list[str] = field(default_factory=list)
    regressions: list[dict] = field(default_factory=list)
    p_floor: str | None = None


@dataclass
class ComparisonReport:
    """Everything ``harness compare`` prints.

    Attributes:
        run_a, run_b: the run folders; clustering: ``{"mode", "n_clusters"}`` of the baseline run; on a split,
            ``n_clusters`` counts the clusters the intervals use (those of the split's questions) and
            ``n_clusters_run`` the run's.
        split: ``all``, ``dev`` or ``test``; method, method_label, level: the paired interval method and its level.
        comparisons: one :class:`MetricComparison` per (pair, metric).
        notes: what was not compared and why; warnings: few-cluster warnings (deduplicated).
        changes: the configuration facts that differ between the two sides, ``[{"field", "baseline", "candidate",
            "scope"}]`` (:mod:`harness.evaluation.changes`); empty when none does.
    """

    run_a: str
    run_b: str
    clustering: dict
    comparisons: list[MetricComparison]
    notes: list[str] = field(default_factory=list)
    split: str = "all"
    method: str = "cr2"
    method_label: str = ""
    level: float = 0.95
    warnings: list[str] = field(default_factory=list)
    design: RunDesign | None = None
    changes: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-serialisable form; every interval carries its ``flags``
        (:func:`harness.evaluation.bounds.interval_flags`)."""
        return interval_flags(
            {
                "run_a": self.run_a,
                "run_b": self.run_b,
                "split": self.split,
                "method": self.method,
                "method_label": self.method_label,
                "coverage_evidence": paired_evidence_json(self.method, design=self.design),
                "level": self.level,
                "clustering": self.clustering,
                "comparisons": [asdict(c) for c in self.comparisons],
                "notes": list(self.notes),
                "warnings": list(self.warnings),
                "changes": [dict(c) for c in self.changes],
            }
        )


def _category_order(cats) -> list[str]:
    present = set(cats)
    return [c for c in CATEGORIES if c in present] + sorted(present - set(CATEGORIES))


def compare_runs(
    run_a: str | Path | RunRecord,
    run_b: str | Path | RunRecord,
    *,
    metrics: Sequence[str] | None = None,
    system_a: str | None = None,
    system_b: str | None = None,
    level: float = 0.95,
    reps: int = 10000,
    seed: int = 0,
    split: str = "all",
) -> ComparisonReport:
    """Paired differences B - A with clustered intervals and randomisation tests.

    Args:
        run_a, run_b: run record folders (or loaded records). They may be the same folder, in which case its
            first system is compared with each of the others.
        metrics: metric ids; ``None``: :data:`DEFAULT_COMPARE_METRICS` (across chunkers: less the chunk-count
            metrics, plus the budget metrics; :func:`harness.evaluation.chunkers.metrics_across_chunkers`).
        system_a, system_b: systems to compare when a run holds several.
        level: interval level.
        reps: randomisation-test sign flips (exact enumeration when 2**clusters <= reps).
        seed: for the randomisation test.
        split: ``all``, ``dev`` or ``test``: the questions compared (the gold set's ``split`` field).

    Returns:
        A :class:`ComparisonReport`: per (pair, metric) the interval of the mean paired difference from the
        coverage rule's default paired method for the run's design (:func:`harness.evaluation.design.
        paired_method`: CR3 for the committed baseline's design, Hansen-Hurwitz on a PPS gold set), the cluster-level
        paired randomisation
        p-value (sign flips of cluster sums), Holm-adjusted p-values across pairs for each metric when several pairs
        are compared, win/tie/loss counts at question and cluster level, and the same per category.

    Raises:
        IncomparableError: different gold-set sha256, corpus hash, chunker id or depths (exit 2).
        HarnessInputError: unknown system, metric or split; a split without questions.
    """
    check_split(split)
    a = run_a if isinstance(run_a, RunRecord) else load_run(run_a)
    b = run_b if isinstance(run_b, RunRecord) else load_run(run_b)
    check_comparable(a, b, chunkers_may_differ=True)
    metrics = metrics_across_chunkers(a, b, metrics, DEFAULT_COMPARE_METRICS)
    pairs = pick_pairs(a, b, system_a, system_b)
    method = paired_method(a)  # Hansen-Hurwitz on a PPS gold set
    out: list[MetricComparison] = []
    skipped: list[str] = []
    for metric in metrics:
        group: list[MetricComparison] = []
        for sa, sb in pairs:
            if not (level_available(a, sa, metric) and level_available(b, sb, metric)):
                skipped.append(f"{metric} ({sa} vs {sb}): one side has no rankings at this level")
                continue
            pv = paired_values(a, b, sa, sb, metric, split=split)
            cl = pv.clusters
            split_text = "" if split == "all" else f" of split {split}"
            require_clusters(a, cl, f"the {len(cl)} questions{split_text} of {metric}, {sa} vs {sb}")
            ya, yb, d = pv.a, pv.b, pv.diff
            iv = paired(ya, yb, cl, method=method, level=level)
            p = randomization_test(d, cl, reps=reps, seed=seed)
            uniq = sorted(set(cl))
            cdiff = np.array([d[cl == c].mean() for c in uniq])
            cats = np.array(pv.categories)
            per_cat = {}
            for c in _category_order(pv.categories):
                m = cats == c
                entry = {"n": int(m.sum()), "diff": float(d[m].mean()), **_wtl(d[m])}
                if len(set(cl[m])) >= 2:
                    civ = paired(ya[m], yb[m], cl[m], method=method, level=level)
                    entry["interval"] = {
                        "method": civ.method,
                        "lower": civ.lower,
                        "upper": civ.upper,
                        "df": civ.df,
                        "warnings": civ.warnings,
                        "extras": {k: civ.extras[k] for k in ("clipped", "range") if k in civ.extras},
                    }
                per_cat[c] = entry
            group.append(
                MetricComparison(
                    system_a=sa,
                    system_b=sb,
                    metric=metric,
                    mean_a=float(ya.mean()),
                    mean_b=float(yb.mean()),
                    diff=float(d.mean()),
                    interval=iv.to_dict(),
                    p_randomization=float(p),
                    p_holm=None,
                    questions=_wtl(d),
                    clusters={"n": len(uniq), **_wtl(cdiff)},
                    per_category=per_cat,
                    missing_a=pv.missing_a,
                    missing_b=pv.missing_b,
                    warnings=iv.warnings,
                    regressions=[asdict(r) for r in regressed_questions(a, b, sa, sb, metric, pv)],
                    p_floor=_p_floor(1 - level, cdiff),
                )
            )
        if len(group) > 1:
            for c, ph in zip(group, holm([c.p_randomization for c in group]), strict=True):
                c.p_holm = float(ph)
        out.extend(group)
    notes = [f"not compared: {x}" for x in skipped]
    others_a = [x for x in a.systems if x not in {p[0] for p in pairs}]
    others_b = [x for x in b.systems if x not in {p[1] for p in pairs}]
    if (others_a or others_b) and not (system_a or system_b):
        notes.append(
            "compared "
            + ", ".join(f"{x} (A) with {y} (B)" for x, y in pairs)
            + f"; not compared: A {others_a or '-'}, B {others_b or '-'}"
            + " (choose with --baseline-system / --candidate-system)"
        )
    if len(pairs) == 1:
        notes.append("one pair compared, so no Holm adjustment")
    for c in out:
        if c.p_floor:
            notes.append(f"{c.metric} {c.system_b} - {c.system_a}: {c.p_floor}")
    for c in out:
        for side, n, s in (("A", c.missing_a, c.system_a), ("B", c.missing_b, c.system_b)):
            note = f"{side} ({s}) has no ranking for {n} questions; they score 0"
            if n and note not in notes:
                notes.append(note)
    warnings = list(dict.fromkeys(w for c in out for w in c.warnings))
    if a.manifest.clusters.warning and split == "all":
        warnings.append(a.manifest.clusters.warning)
    clustering = _cluster_info(a)
    if split != "all" and out:  # the clusters the intervals use: those of the split's questions
        clustering |= {"n_clusters": out[0].clusters["n"], "n_clusters_run": clustering["n_clusters"]}
    return ComparisonReport(
        run_a=str(a.path),
        run_b=str(b.path),
        clustering=clustering,
        comparisons=out,
        notes=notes,
        split=split,
        method=method,
        method_label=get_method(method).label,
        level=level,
        warnings=warnings,
        design=run_design(a, split=split),
        changes=changes_dicts(changes_between(a, b, pairs)),
    )


def _cluster_info(run: RunRecord) -> dict:
    c = run.manifest.clusters
    return {"mode": c.mode, "n_clusters": c.n_clusters}


@dataclass(frozen=True)
class CategoryInterval:
    """The mean of one metric over one category's questions, with its interval.

    Attributes:
        category, metric: what is averaged.
        n, n_clusters: questions and clusters of the category.
        mean: ``math.fsum(values) / n`` (metric units, 0-1).
        interval: ``(lower, upper)`` at the requested level over the category's questions and clusters (clipped to
            [0, 1]), from ``method``; ``None`` with fewer than 2 clusters or when the method refuses the data.
        extras: the interval's extras (``clipped``, ``warnings``; :class:`harness.stats.Interval`), for the displays.
        method: the interval method (a name of :data:`harness.stats.methods.INTERVALS`; :func:`category_intervals`).
        source: ``None`` when the category's own design was measured in the coverage evidence, else where the
            method comes from (``"the nearest measured design (27 clusters)"``; :func:`harness.stats.shown.
            design_defaults`).
    """

    category: str
    metric: str
    n: int
    n_clusters: int
    mean: float
    interval: tuple[float, float] | None
    extras: dict = field(default_factory=dict)
    method: str = "cr2"
    source: str | None = None

    def interval_dict(self) -> dict | None:
        """``{"lower", "upper", "extras"}`` of the interval (what the displays read its marks from), or ``None``."""
        return None if self.interval is None else {"lower": self.interval[0], "upper": self.interval[1],
                                                   "extras": dict(self.extras)}  # fmt: skip


def category_intervals(
    run: RunRecord, system: str, *, metrics: Sequence[str] = ("mrr",), level: float = 0.95
) -> list[CategoryInterval]:
    """Per-category means with cluster-robust intervals for one system of a run, using the clusters recorded with
    the run (a question without a recorded label is its own cluster).

    The interval is the one every other table shows (:class:`harness.stats.shown.ShownIntervals`), chosen for the
    category's own design: its cluster sizes and the run's sampling. Categories hold few clusters, a design the
    coverage evidence has not measured, so the choice is the rule's default for the nearest measured design (CR2 on
    the logit scale for MRR on the committed baseline's corpus) and ``source`` says so; a method that needs more than
    the rows (a frame, weights) or does not apply to the values falls back to CR2 (:func:`harness.stats.cr2`,
    Satterthwaite df; Pustejovsky & Tipton 2018).

    Categories come in the eval v4 order, then any others sorted; a metric absent from a question's row is skipped
    for that category. Their intervals are wide and their coverage is not measured.

    Returns:
        One :class:`CategoryInterval` per (category, metric) present.
    """
    labels = run.clusters()
    rows = run.rows(system)
    sampling = run_design(run, system).sampling
    recorded = _recorded_methods(run, system)
    out: list[CategoryInterval] = []
    for cat in _category_order(r.category for r in rows):
        sel = [r for r in rows if r.category == cat]
        cl = [labels.get(r.qid, r.cluster or r.qid) for r in sel]
        shown = ShownIntervals.for_design(RunDesign.from_clusters(cl, sampling=sampling, run=str(run.path)))
        for m in metrics:
            if any(m not in r.metrics for r in sel):
                continue
            y = [float(r.metrics[m]) for r in sel]
            name = _category_method(shown, m, recorded.get(m, ()), y)
            iv, extras = None, {}
            if len(set(cl)) >= 2:
                try:
                    res = INTERVALS[name].compute(y, cl, level=level)
                    iv, extras = (res.lower, res.upper), dict(res.extras)
                except HarnessInputError:
                    iv = None
            out.append(
                CategoryInterval(
                    cat, m, len(sel), len(set(cl)), math.fsum(y) / len(y), iv, extras, method=name, source=shown.source
                )
            )
    return out


def _recorded_methods(run: RunRecord, system: str) -> dict[str, list[str]]:
    """``{metric: interval methods the run recorded}`` for the system's ``all`` slice (its outcome class)."""
    sl = run.summary.systems.get(system, {}).get("all")
    if sl is None:
        return {}
    return {m: list(e.intervals) for m, e in sl.overall.items() if e is not None}


def _category_method(shown: ShownIntervals, metric: str, recorded: Sequence[str], y: Sequence[float]) -> str:
    """The shown method for one category's values, or ``cr2`` when it needs more than the rows or does not apply."""
    name = shown.method(outcome_of(metric), recorded or ("cr2",))
    m = INTERVALS.get(name)
    if m is None or m.frame or not m.applies_to(outcome_type(y)):
        return "cr2"
    return name


@dataclass
class PairedRow:
    """One candidate against the baseline on one metric (see :func:`paired_table`).

    Attributes:
        label, baseline: display names of the candidate and the baseline.
        metric: metric id; mean_a / mean_b: baseline / candidate means; diff: mean paired difference candidate -
            baseline.
        lower, upper: two-sided interval of ``diff`` at the table's level
            (:func:`harness.evaluation.design.paired_method`);
            se, df: its standard error and df (``None`` when the method has none).
        lower_one_sided, upper_one_sided: the gate's ``1 - 2 alpha`` interval (its lower bound is the one-sided
            ``1 - alpha`` bound the gate compares with -margin); ``None`` when the gate has none.
        decision: the gate's verdict on this metric (``PASS``, ``FAIL``, ``INCONCLUSIVE``;
            :func:`harness.evaluation.gate.judge`), reason: why; noninferior: ``decision == "PASS"``.
        p: cluster sign-flip randomisation p; p_holm: Holm-adjusted across the candidates of this metric (``None``
            with one candidate).
        questions, clusters: win / tie / loss counts of the candidate (clusters: of cluster-mean differences).
        warnings: the interval's warnings.
        interval: the two-sided interval (:meth:`harness.stats.Interval.to_dict`).
    """

    label: str
    baseline: str
    metric: str
    mean_a: float
    mean_b: float
    diff: float
    lower: float
    upper: float
    se: float | None
    df: float | None
    lower_one_sided: float | None
    upper_one_sided: float | None
    decision: str
    reason: str
    noninferior: bool
    p: float
    p_holm: float | None
    questions: dict
    clusters: dict
    warnings: list[str] = field(default_factory=list)
    interval: dict = field(default_factory=dict)


def paired_table(
    baseline: tuple[str, RunRecord, str],
    candidates: Sequence[tuple[str, RunRecord, str]],
    metrics: Sequence[str],
    *,
    alpha: float = 0.05,
    margin: float = 0.02,
    level: float = 0.95,
    reps: int = 10000,
    seed: int = 0,
    split: str = "all",
) -> list[PairedRow]:
    """Paired differences candidate - baseline for every candidate and metric, as :func:`compare_runs` computes them,
    with the gate's three-way verdict on each (:func:`harness.evaluation.gate.judge`, the same numbers ``harness
    gate`` prints) and Holm across the candidates per metric.

    Args:
        baseline: ``(label, run, system)``.
        candidates: ``(label, run, system)`` each (every run comparable with the baseline's).
        metrics: metric ids (a metric a side has no ranking for is left out, as in :func:`compare_runs`).
        alpha: one-sided level of the gate; margin: the non-inferiority margin (metric units, >= 0).
        level: two-sided level of ``lower``/``upper``.
        reps, seed: randomisation test sign flips and seed.
        split: ``all``, ``dev`` or ``test``.

    Returns:
        Rows in candidate order, then metric order.

    Raises:
        IncomparableError / HarnessInputError: as :func:`compare_runs`.
    """
    b_label, b_run, b_system = baseline
    rows: list[PairedRow] = []
    for label, run, system in candidates:
        rep = compare_runs(
            b_run,
            run,
            metrics=tuple(metrics),
            system_a=b_system,
            system_b=system,
            level=level,
            reps=reps,
            seed=seed,
            split=split,
        )
        for c in rep.comparisons:
            iv = c.interval
            pv = paired_values(b_run, run, b_system, system, c.metric, split=split)
            check = judge(pv, margin=margin, alpha=alpha, metric=c.metric, method=rep.method)
            rows.append(
                PairedRow(
                    label=label,
                    baseline=b_label,
                    metric=c.metric,
                    mean_a=c.mean_a,
                    mean_b=c.mean_b,
                    diff=c.diff,
                    lower=iv["lower"],
                    upper=iv["upper"],
                    se=iv.get("se"),
                    df=iv.get("df"),
                    lower_one_sided=check.lower,
                    upper_one_sided=check.upper,
                    decision=check.decision,
                    reason=check.reason,
                    noninferior=check.decision == "PASS",
                    p=c.p_randomization,
                    p_holm=None,
                    questions=c.questions,
                    clusters=c.clusters,
                    warnings=list(c.warnings),
                    interval=dict(iv),
                )
            )
    for m in metrics:
        grp = [r for r in rows if r.metric == m]
        if len(grp) > 1:
            for r, ph in zip(grp, holm([r.p for r in grp]), strict=True):
                r.p_holm = float(ph)
    return rows
