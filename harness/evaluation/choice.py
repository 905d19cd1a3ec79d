"""The interval a run shows, chosen once and stored in each metric entry (``outcome``, ``interval``, ``evidence``,
``estimand_id`` of :class:`~harness.evaluation.record.MetricSummary`).

The summariser (:func:`harness.evaluation.scoring.summarise`) calls :func:`choose_slice` with the slice's own design
(its questions' clusters and the gold set's sampling): per metric, the declared outcome class
(:func:`harness.metrics.outcome_of`), the method the coverage rule picks for that class and design
(:class:`harness.stats.shown.ShownIntervals`; CR2 when the run did not record it), its bounds, and the evidence behind
it. :func:`refresh` is the loader's side (:func:`harness.evaluation.runs.load_run`): a record written before schema 3
gets the same fields computed on read (the design from its rows, :func:`harness.stats.design_evidence.slice_design`),
and a record whose ``evidence_sha256`` differs from the installed evidence file gets its choice recomputed, with one
note in the summary's ``warnings``. The stored numbers (means, every interval) never change.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from functools import lru_cache

from harness.evaluation.record import EvidenceRef, MetricSummary, ShownInterval, SliceDesign, SliceSummary
from harness.metrics import outcome_of
from harness.stats.design_evidence import RunDesign, design_coverage, slice_design
from harness.stats.evidence import EVIDENCE_PATH
from harness.stats.shown import ShownIntervals

__all__ = ["choose_slice", "design_id", "evidence_sha256", "refresh"]


@lru_cache(maxsize=1)
def evidence_sha256() -> str | None:
    """Hex sha256 of the installed coverage evidence file (:data:`harness.stats.evidence.EVIDENCE_PATH`); ``None``
    when it is absent."""
    return hashlib.sha256(EVIDENCE_PATH.read_bytes()).hexdigest() if EVIDENCE_PATH.exists() else None


def design_id(design: RunDesign) -> str:
    """``<sampling>-G<clusters>-<12 hex digits of the sha256 of the sizes>`` (``srs-G27-3f2a...``): one id per design
    (:meth:`harness.stats.design_evidence.RunDesign.key`), short whatever the number of clusters."""
    sizes = ",".join(map(str, design.cluster_sizes))
    return f"{design.sampling}-G{len(design.cluster_sizes)}-{hashlib.sha256(sizes.encode()).hexdigest()[:12]}"


def _choose(metric: str, entry: MetricSummary, shown: ShownIntervals) -> MetricSummary:
    outcome = outcome_of(metric)
    fields: dict = {"outcome": outcome, "estimand_id": shown.design.estimand_id, "interval": None, "evidence": None}
    if entry.mean is not None and entry.intervals:
        method = shown.method(outcome, entry.intervals)
        iv = entry.intervals[method]
        cov = design_coverage(method, outcome, shown.design)
        fields["interval"] = ShownInterval(method=method, lo=iv.lower, hi=iv.upper)
        fields["evidence"] = EvidenceRef(
            design_id=design_id(shown.design),
            coverage_min=cov["min"],
            measured=cov["measured"],
            evidence_sha256=evidence_sha256(),
        )
    return entry.model_copy(update=fields)


def choose_slice(sl: SliceSummary, design: RunDesign) -> SliceSummary:
    """``sl`` with its ``design`` and, in every metric entry, the shown interval chosen for ``design`` (module
    docstring)."""
    shown = ShownIntervals.for_design(design)
    overall = {m: _choose(m, e, shown) for m, e in sl.overall.items()}
    return sl.model_copy(
        update={"overall": overall, "design": SliceDesign(sampling=design.sampling, cluster_sizes=design.cluster_sizes)}
    )


def _stale(sl: SliceSummary) -> tuple[bool, bool]:
    """``(some entry lacks the choice, some entry's evidence sha256 differs from the installed file's)``."""
    missing = any(e.outcome is None for e in sl.overall.values())
    sha = evidence_sha256()
    stale = any(e.evidence is not None and e.evidence.evidence_sha256 != sha for e in sl.overall.values())
    return missing, stale


def refresh(run):
    """``run`` (a :class:`harness.evaluation.runs.RunRecord`) with every metric entry's choice present and made with
    the installed evidence: computed for entries of a record before schema 3 (upgrade), recomputed, with one note in
    ``summary.warnings``, where an entry's ``evidence_sha256`` differs from the installed file's. ``run`` itself when
    nothing is to do. A slice's design is its recorded ``design``, else :func:`slice_design` of the run."""
    systems, changed = {}, False
    for system, slices in run.summary.systems.items():
        systems[system] = {}
        for name, sl in slices.items():
            missing, stale = _stale(sl)
            if missing or stale:
                d = sl.design
                design = RunDesign(d.sampling, tuple(d.cluster_sizes), str(run.path)) if d else None
                sl = choose_slice(sl, design or slice_design(run, name, system))
                changed = changed or stale
            systems[system][name] = sl
    warnings = list(run.summary.warnings)
    if changed:
        warnings.append(
            "the coverage evidence file changed since this run was recorded: the shown intervals were chosen again "
            "on read, from the recorded intervals (no number changed)"
        )
    summary = run.summary.model_copy(update={"systems": systems, "warnings": warnings})
    return replace(run, summary=summary)
