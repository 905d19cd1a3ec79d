"""The interval-method registry: every confidence-interval method of the harness, declared once.

Each method is one scalar function (rows in, :class:`~harness.stats.interval.Interval` out; in its own module under
:mod:`harness.stats`) plus one batched ``(reps, K)`` kernel (:mod:`harness.stats.batched` protocol), registered here
with its metadata. Everything that lists interval methods reads this table: :func:`all_intervals` (the intervals of
every run summary), :func:`paired` (comparisons), the report's display order (:func:`display_order`) and the coverage
study (:mod:`harness.studies.coverage`). Adding a method is one module plus one :func:`register` line below.

Designs: most methods read the sample as the documents an evaluator drew with equal probability (``design="srs"``,
the reading of any gold set); ``design="pps"`` methods (Hansen-Hurwitz) assume documents drawn with probability
proportional to size, with replacement. Methods with ``frame=True`` (Wu's v_g) also need the population's mean
document size. Only SRS methods without a frame are computed by ``run`` (:attr:`IntervalMethod.in_runs`); the
coverage study measures all of them. Its measured coverage of each method is the committed evidence file
``harness/stats/coverage_evidence.json`` (written by ``harness coverage --write-evidence``), read by
:func:`coverage_evidence`.

Outcome types (nested): ``"binary"`` (every value 0 or 1: hit@k, all_hop@k), ``"unit"`` (values in [0, 1]: recall,
MRR) and ``"continuous"`` (anything, e.g. paired differences). A method declares the types it applies to; a
proportion-only method applies to ``"binary"`` (and maybe ``"unit"``) only. :data:`DEFAULTS` names the method for
each outcome type where no run design applies; a run's renderings, ``compare`` and ``gate`` show the default for the
run's own design (:mod:`harness.stats.shown`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Literal

import numpy as np

import harness.stats.batched as batched
from harness.stats._core import as_vector, encode_clusters, fail
from harness.stats.bootstrap import cluster_bootstrap
from harness.stats.cr2 import cr2
from harness.stats.cr3 import cr3, cr3_kernel
from harness.stats.design_evidence import RunDesign, design_coverage, design_notes, estimand_note
from harness.stats.evidence import CoverageEvidence, coverage_evidence
from harness.stats.interval import Interval
from harness.stats.korn_graubard import korn_graubard, korn_graubard_kernel
from harness.stats.pps import hansen_hurwitz, hansen_hurwitz_kernel
from harness.stats.simple import cluster_t, iid_wald, iid_wald_effective
from harness.stats.wild import wild_cluster_bootstrap, wild_cluster_kernel
from harness.stats.wu import wu_kernel, wu_ratio

OUTCOMES = ("binary", "unit", "continuous")
ANY = OUTCOMES
UNIT = ("binary", "unit")
BINARY = ("binary",)


@dataclass(frozen=True)
class IntervalMethod:
    """One registered interval method.

    Attributes:
        name: machine name, the key under ``intervals`` in ``summary.json`` (``paired_<name>`` for a paired one).
        label: short human label (tables, figure legends).
        interval: the scalar function ``f(y, [clusters,] *, level, clip, [weights], [fpc], [B, seed]) -> Interval``
            (which keywords it takes is given by the flags below).
        kernel: the batched kernel ``k(batch, level, factors, draws) -> [(lower, upper), ...]``
            (:mod:`harness.stats.batched`); row i equals ``interval`` on sample i, unweighted and unclipped.
        estimand: ``"micro"`` (the row mean) or ``"macro"`` (the mean of cluster means).
        outcomes: the outcome types it applies to (subset of :data:`OUTCOMES`).
        clustered: the scalar function takes the cluster labels (False: iid methods, labels only validated).
        weights: it takes row weights.
        fpc: ``"clusters"`` (population number of clusters), ``"rows"`` (population number of rows) or None.
        resampling: it takes ``B`` and ``seed``.
        paired: it is offered for paired differences (:func:`paired`).
        contrast_only: shown for contrast only (ignores clustering).
        order: display order (report tables, coverage tables; ascending).
        design: the document sampling design the interval assumes: ``"srs"`` (equal-probability sampling, the
            reading of a gold set) or ``"pps"`` (probability proportional to size, with replacement).
        frame: it needs ``frame_mean_size``, the mean number of rows per document over the whole population.
    """

    name: str
    label: str
    interval: Callable[..., Interval]
    kernel: Callable[..., list]
    estimand: Literal["micro", "macro"] = "micro"
    outcomes: tuple[str, ...] = ANY
    clustered: bool = True
    weights: bool = False
    fpc: Literal["clusters", "rows"] | None = None
    resampling: bool = False
    paired: bool = True
    contrast_only: bool = False
    order: int = 0
    design: Literal["srs", "pps"] = "srs"
    frame: bool = False

    @property
    def in_runs(self) -> bool:
        """True when ``run`` computes it: an SRS-design method that needs nothing but the sampled rows."""
        return self.design == "srs" and not self.frame

    @property
    def proportion_only(self) -> bool:
        """True when the method does not apply to a continuous outcome."""
        return "continuous" not in self.outcomes

    def applies_to(self, outcome: str) -> bool:
        """Whether the method applies to outcomes of type ``outcome`` (one of :data:`OUTCOMES`)."""
        return outcome in self.outcomes

    def compute(
        self, y, clusters, *, level=0.95, weights=None, fpc=None, B=5000, seed=0, clip=True, frame_mean_size=None
    ) -> Interval:
        """Call :attr:`interval` with the keywords this method takes (``weights``/``fpc``/``B``/``seed``/
        ``frame_mean_size`` only when declared; a method without weights raises when weights are given, so nothing
        is silently unweighted; a frame method raises without ``frame_mean_size``)."""
        kw: dict = {"level": level, "clip": clip}
        if self.frame:
            if frame_mean_size is None:
                raise fail(self.name, "frame_mean_size", "this method needs the population's mean document size")
            kw["frame_mean_size"] = frame_mean_size
        elif frame_mean_size is not None:
            raise fail(self.name, "frame_mean_size", "this method takes no frame")
        if weights is not None:
            if not self.weights:
                raise fail(self.name, "weights", "this method takes no weights")
            kw["weights"] = weights
        if fpc is not None:
            if self.fpc is None:
                raise fail(self.name, "fpc", "this method takes no finite-population correction")
            kw["fpc"] = fpc
        if self.resampling:
            kw.update(B=B, seed=seed)
        if self.clustered:
            return self.interval(y, clusters, **kw)
        encode_clusters(clusters, np.asarray(y).size, self.name)
        return self.interval(y, **kw)


__all__ = [
    "DEFAULTS",
    "INTERVALS",
    "CoverageEvidence",
    "IntervalMethod",
    "all_intervals",
    "coverage_evidence",
    "evidence_by_metric",
    "evidence_notes",
    "paired_evidence_json",
    "paired_evidence_lines",
    "paired_evidence_note",
    "Recorded",
    "default_method",
    "display_order",
    "get",
    "kernel_bounds",
    "outcome_type",
    "register",
]

#: name -> method, in registration order (the order of ``summary.json``).
INTERVALS: dict[str, IntervalMethod] = {}

#: The method per outcome type and for paired differences where no run design applies (samples of K whole documents:
#: the coverage study's own design; :func:`paired` without a method; the impact study). It is the method the
#: coverage study's rule picked from its measurements for that design (:mod:`harness.studies.coverage.choice`; the
#: committed evidence file records the same choice, tests/test_coverage_evidence.py checks they agree). What a
#: gold-set run, ``compare`` and ``gate`` show is the rule's default for **the run's own design**
#: (:mod:`harness.stats.shown`), not this.
#: ``unit``: ``cr2_logit`` since the evidence was measured with the default embedder ``use`` (issue 29): the rule picks
#: it there (78.8 % against CR2's 76.5 % at the lowest population, w100 vector reciprocal rank; neither holds).
DEFAULTS: dict[str, str] = {"binary": "cr2", "unit": "cr2_logit", "continuous": "cr2", "paired": "cr2"}


def register(method: IntervalMethod) -> IntervalMethod:
    """Add ``method`` to :data:`INTERVALS` (a name may be registered once)."""
    if method.name in INTERVALS:
        raise ValueError(f"interval method {method.name!r} registered twice")
    if not set(method.outcomes) <= set(OUTCOMES) or not method.outcomes:
        raise ValueError(f"interval method {method.name!r}: outcomes must be a non-empty subset of {OUTCOMES}")
    INTERVALS[method.name] = method
    return method


def get(name: str) -> IntervalMethod:
    """The registered method ``name``. Raises HarnessInputError for an unknown name (listing the known ones)."""
    try:
        return INTERVALS[name]
    except KeyError:
        raise fail("methods", "method", f"unknown interval method {name!r} (known: {', '.join(INTERVALS)})") from None


def display_order() -> tuple[str, ...]:
    """Method names in display order (report tables, coverage tables)."""
    return tuple(m.name for m in sorted(INTERVALS.values(), key=lambda m: (m.order, m.name)))


def default_method(outcome: str) -> str:
    """The default method for ``outcome`` (one of :data:`OUTCOMES`, or ``"paired"``), from :data:`DEFAULTS`."""
    if outcome not in DEFAULTS:
        raise fail("methods", "outcome", f"must be one of {', '.join(DEFAULTS)}, got {outcome!r}")
    return DEFAULTS[outcome]


def outcome_type(y) -> str:
    """``"binary"`` when every value is 0 or 1, ``"unit"`` when all lie in [0, 1], else ``"continuous"``."""
    yv = as_vector(y, "y", "outcome_type")
    if np.all((yv == 0.0) | (yv == 1.0)):
        return "binary"
    if yv.min() >= 0.0 and yv.max() <= 1.0:
        return "unit"
    return "continuous"


def all_intervals(y, clusters, *, weights=None, level=0.95, B=5000, seed=0) -> dict[str, Interval]:
    """Every registered interval a run can compute that applies to ``y``, keyed by method name, for side-by-side
    reports.

    Methods come in registration order; those whose outcome types exclude ``y``'s (:func:`outcome_type`) are left
    out (e.g. ``"cr2_logit"`` unless every ``y`` lies in [0, 1]), and so are those that need a PPS design or the
    population's document sizes (:attr:`IntervalMethod.in_runs`). Resampling methods get ``B`` and ``seed``.
    ``weights`` go to the methods that take them; the others are computed unweighted and say so in their
    ``extras["warnings"]``.

    Args: ``y`` (N,) finite floats; ``clusters`` (N,) labels, >= 2 clusters; ``weights`` (N,) or None;
        ``level`` in (0, 1); ``B`` >= 100; ``seed`` int.
    Returns: ``dict[str, Interval]``. Raises: HarnessInputError on bad inputs.
    """
    kind = outcome_type(y)
    out: dict[str, Interval] = {}
    for m in INTERVALS.values():
        if not (m.in_runs and m.applies_to(kind)):
            continue
        iv = m.compute(y, clusters, level=level, weights=weights if m.weights else None, B=B, seed=seed)
        if weights is not None and not m.weights:
            extras = dict(iv.extras)
            note = "unweighted (this method takes no weights)"
            extras["warnings"] = [*extras.get("warnings", []), note]
            iv = replace(iv, extras=extras)
        out[m.name] = iv
    return out


#: ``(outcome class, names of the interval methods recorded)`` of one metric: the values of the ``metrics`` mappings
#: below. The class is the metric's declared one (:attr:`harness.metrics.MetricFamily.outcome`; stats knows no metric).
Recorded = tuple[str, Iterable[str]]


def _by_class(metrics: Mapping[str, Recorded]) -> dict[str, list[str]]:
    by_class: dict[str, list[str]] = {}
    for metric, (outcome, _names) in metrics.items():
        by_class.setdefault(outcome, []).append(metric)
    return by_class


def evidence_by_metric(
    method: str | Mapping[str, str],
    metrics: Mapping[str, Recorded],
    *,
    design: RunDesign | None = None,
    path: str | Path | None = None,
    source: str | None = None,
) -> dict:
    """The JSON form of :func:`evidence_notes`: ``{"estimand", "design", "metrics": {metric: {"method", "outcome",
    "measured", "min", "max", ..., "text"}}}`` (:func:`harness.stats.design_evidence.design_coverage`; ``measured``
    false when the coverage was not measured for this design; ``method`` the interval shown). Arguments as
    :func:`evidence_notes`; with a per-class ``method``, each entry adds ``"chosen_for"``: ``source`` (``None`` when
    the design itself was measured)."""
    design = design or RunDesign("srs", ())
    out = {}
    for cls, ids in _by_class(metrics).items():
        shown = method if isinstance(method, str) else method.get(cls, "cr2")
        cov = design_coverage(shown, cls, design, path=path, labels=_labels())
        if not isinstance(method, str):
            cov["chosen_for"] = source
        out.update({m: cov for m in ids})
    return {"estimand": design.estimand, "design": design.to_dict(), "metrics": out}


def evidence_notes(
    method: str | Mapping[str, str],
    metrics: Mapping[str, Recorded],
    *,
    design: RunDesign | None = None,
    path: str | Path | None = None,
    source: str | None = None,
    estimand: bool = True,
) -> list[str]:
    """The lines printed under a table of ``method``'s intervals: the estimand in words, then per outcome class the
    coverage measured for the run's own design (:mod:`harness.stats.design_evidence`).

    Args:
        method: the method whose intervals a table shows (``"cr2"``), or ``{outcome class: method}`` (the run's
            own defaults: :meth:`harness.stats.shown.ShownIntervals.by_class`).
        metrics: ``{metric id: (its outcome class, names of the interval methods recorded for it)}`` (the table's
            metrics, in order; :data:`Recorded`).
        design: the run's design (:func:`harness.stats.design_evidence.run_design`); None: an unknown design, whose
            coverage is "not measured".
        path: another evidence file (tests); default the committed one.
        source: where a per-class choice comes from when the design was not measured
            (:attr:`harness.stats.shown.ShownIntervals.source`).
        estimand: print the estimand line (False under every table of an output but the first).

    Returns:
        ``["Estimand: mean over the gold set's documents, ...", "CR2 (Satterthwaite t) intervals of hit@1 (binary):
        measured coverage 91–95 % for this design (...)" or "...: not measured for this design: run `harness
        coverage --run RUN`", ...]``.
    """
    by_class = _by_class(metrics)
    notes = design_notes(method, by_class, design or RunDesign("srs", ()), path=path, labels=_labels(), source=source)
    return notes if estimand else notes[1:]


def paired_evidence_note(method: str, *, design: RunDesign | None = None, path: str | Path | None = None) -> str:
    """The note ``compare`` and ``gate`` print beside ``method``'s paired intervals: the coverage measured for paired
    differences under the run's design (the estimand goes on its own line: :func:`paired_evidence_lines`)."""
    design = design or RunDesign("srs", ())
    cov = design_coverage(method, "paired", design, path=path, labels=_labels())
    return f"{_label_of(method)} paired intervals: {cov['text']}"


def paired_evidence_lines(method: str, *, design: RunDesign | None = None, path: str | Path | None = None) -> list[str]:
    """The two lines ``compare`` and ``gate`` print once per output beside ``method``'s paired intervals: the
    estimand (a difference of the design's means, at most 100 characters with its docs anchor,
    :func:`harness.stats.design_evidence.estimand_note`) and :func:`paired_evidence_note`."""
    design = design or RunDesign("srs", ())
    return [estimand_note(design, paired=True), paired_evidence_note(method, design=design, path=path)]


def paired_evidence_json(method: str, *, design: RunDesign | None = None, path: str | Path | None = None) -> dict:
    """The JSON form of :func:`paired_evidence_note`: ``{"estimand", "design", **design_coverage(...)}``."""
    design = design or RunDesign("srs", ())
    cov = design_coverage(method, "paired", design, path=path, labels=_labels())
    return {
        "estimand": f"difference of the {design.estimand.removeprefix('the ')}",
        "estimand_id": design.estimand_id,
        "design": design.to_dict(),
        **cov,
    }


def _labels() -> dict[str, str]:
    return {n: m.label for n, m in INTERVALS.items()}


def _label_of(method: str) -> str:
    m = INTERVALS.get(method.removeprefix("paired_"))
    return method if m is None else m.label


def kernel_bounds(
    name: str, batch: batched.ClusterBatch, level: float, factors: Sequence, draws: batched.Resamples
) -> list[batched.Bounds]:
    """Run method ``name``'s batched kernel (``[(lower, upper)]`` per factor; see :mod:`harness.stats.batched`)."""
    return get(name).kernel(batch, level, factors, draws)


# --------------------------------------------------------------------------------------------------------------
# The registry (registration order = the order of summary.json; `order` = display order)
# --------------------------------------------------------------------------------------------------------------


register(IntervalMethod("cr2", "CR2 (Satterthwaite t)", cr2, batched.cr2_kernel, weights=True, fpc="clusters"))
register(IntervalMethod("cr2_logit", "CR2, logit scale", partial(cr2, transform="logit"), batched.cr2_logit_kernel,
                        outcomes=UNIT, weights=True, fpc="clusters", paired=False, order=1))  # fmt: skip
register(IntervalMethod("bootstrap_percentile", "cluster bootstrap percentile", partial(cluster_bootstrap,
                        kind="percentile"), batched.bootstrap_percentile_kernel, weights=True, fpc="clusters",
                        resampling=True, order=3))  # fmt: skip
register(IntervalMethod("bootstrap_t", "cluster bootstrap-t", partial(cluster_bootstrap, kind="bootstrap_t"),
                        batched.bootstrap_t_kernel, weights=True, fpc="clusters", resampling=True,
                        order=2))  # fmt: skip
register(IntervalMethod("cluster_t", "t over cluster means", cluster_t, batched.cluster_t_kernel, estimand="macro",
                        fpc="clusters", order=4))  # fmt: skip
register(IntervalMethod("iid_wald", "iid Wald (contrast only)", iid_wald, batched.iid_wald_kernel, clustered=False,
                        fpc="rows", contrast_only=True, order=9))  # fmt: skip
register(IntervalMethod("iid_wald_effective", "effective-size Wald", iid_wald_effective,
                        batched.iid_wald_effective_kernel, fpc="clusters", paired=False, order=8))  # fmt: skip
register(IntervalMethod("cr3", "CR3 jackknife (Satterthwaite t)", cr3, cr3_kernel, weights=True, fpc="clusters",
                        order=5))  # fmt: skip
register(IntervalMethod("wild_cluster", "wild cluster bootstrap (WCR)", wild_cluster_bootstrap, wild_cluster_kernel,
                        resampling=True, order=6))  # fmt: skip
register(IntervalMethod("korn_graubard", "Korn-Graubard", korn_graubard, korn_graubard_kernel, outcomes=BINARY,
                        weights=True, fpc="clusters", paired=False, order=7))  # fmt: skip
register(IntervalMethod("wu_v3", "Wu (1982) v_3 on CR2 [frame]", partial(wu_ratio, g=3.0), partial(wu_kernel, g=3.0),
                        fpc="clusters", order=10, frame=True))  # fmt: skip
register(IntervalMethod("wu_v3_logit", "Wu v_3, logit scale [frame]", partial(wu_ratio, g=3.0, transform="logit"),
                        partial(wu_kernel, g=3.0, transform="logit"), outcomes=UNIT, fpc="clusters", paired=False,
                        order=11, frame=True))  # fmt: skip
register(IntervalMethod("hansen_hurwitz", "Hansen-Hurwitz t [PPS]", hansen_hurwitz, hansen_hurwitz_kernel, order=12,
                        design="pps"))  # fmt: skip
register(IntervalMethod("hansen_hurwitz_logit", "Hansen-Hurwitz t, logit scale [PPS]",
                        partial(hansen_hurwitz, transform="logit"), partial(hansen_hurwitz_kernel, transform="logit"),
                        outcomes=UNIT, paired=False, order=13, design="pps"))  # fmt: skip
register(IntervalMethod("bca", "cluster bootstrap BCa", partial(cluster_bootstrap, kind="bca"), batched.bca_kernel,
                        weights=True, fpc="clusters", resampling=True, order=3))  # fmt: skip
