"""Which recorded interval every rendering of a run shows: the rule's default for the run's own design.

A run records every interval method that applies to each metric (``summary.json``). What a table, a report, a JSON
export or ``compare``/``gate`` *shows* is one of them per outcome class, chosen by the coverage study's rule (at the
run's K, the candidate within 1.15x CR2's width that covers >= 93 % on every population, the highest minimum;
:mod:`harness.studies.coverage.choice`) **for the run's own design** (:class:`harness.stats.design_evidence.RunDesign`:
its cluster sizes and how its documents were drawn):

* a design measured in the committed evidence (``harness/stats/coverage_evidence.json``, ``designs``): that entry's
  ``defaults`` (for the committed baseline's design on this corpus: CR2 on the logit scale for binary and unit
  metrics, CR3 for continuous values and paired differences; Hansen-Hurwitz on a PPS gold set);
* an unmeasured design of the same sampling: the defaults of the measured design with the nearest number of clusters
  (its coverage still reads "not measured for this design", :func:`harness.stats.design_evidence.design_coverage`);
* no evidence at all: :func:`fallback` (the registry's :data:`harness.stats.methods.DEFAULTS` for documents drawn
  at random, Hansen-Hurwitz for PPS).

A metric whose run lacks the chosen method (a record written before that method was computed) shows CR2.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from harness.stats.design_evidence import SHORT, RunDesign, matching_design, slice_design
from harness.stats.evidence import committed_evidence
from harness.stats.methods import DEFAULTS, INTERVALS, Recorded

#: Classes a rendering shows an interval for; ``paired`` is the class of ``compare``/``gate`` differences.
CLASSES = ("binary", "unit", "continuous", "paired")

#: Hansen-Hurwitz per class (PPS designs without evidence; logit for values in [0, 1]).
PPS_FALLBACK: dict[str, str] = {
    "binary": "hansen_hurwitz_logit",
    "unit": "hansen_hurwitz_logit",
    "continuous": "hansen_hurwitz",
    "paired": "hansen_hurwitz",
}


#: The reference interval shown, per class, when no method reaches 93 % for a design: CR2 (Hansen-Hurwitz for PPS).
REFERENCE_SHOWN: dict[str, dict[str, str]] = {
    "srs": dict.fromkeys(CLASSES, "cr2"),
    "independent": dict.fromkeys(CLASSES, "cr2"),
    "pps": {"binary": "hansen_hurwitz", "unit": "hansen_hurwitz", "continuous": "hansen_hurwitz",
            "paired": "hansen_hurwitz"},
}  # fmt: skip


def fallback(sampling: str) -> dict[str, str]:
    """``{class: method}`` without evidence: the registry's :data:`~harness.stats.methods.DEFAULTS` (``srs``, read
    when called) or :data:`PPS_FALLBACK` (``pps``)."""
    return dict(PPS_FALLBACK) if sampling == "pps" else {c: DEFAULTS[c] for c in CLASSES}


def short_label(method: str) -> str:
    """``CR2-logit`` for ``cr2_logit`` (a ``paired_`` prefix is ignored; :data:`~harness.stats.design_evidence.SHORT`,
    the short names of titles such as ``95 % CR2-logit intervals``); the registry label for other methods."""
    name = method.removeprefix("paired_")
    if name in SHORT:
        return SHORT[name]
    m = INTERVALS.get(name)
    return name if m is None else m.label


def design_defaults(design: RunDesign, *, path: str | Path | None = None) -> tuple[dict[str, str], str | None]:
    """``({class: method}, source)``: the methods a run of ``design`` shows, and where they come from.

    Args:
        design: the run's design (:func:`harness.stats.design_evidence.run_design`).
        path: another evidence file (tests); default the committed one.

    Returns:
        The defaults for every class of :data:`CLASSES` (a class the evidence lacks takes :func:`fallback`'s), and
        ``None`` when the design itself was measured, else a phrase naming the design whose defaults are used
        (``"the nearest measured design (27 clusters)"``) or ``"no coverage evidence"``.
    """
    entry = matching_design(design, path=path)
    source: str | None = None
    if entry is None:
        ev = committed_evidence(path)
        same = [d for d in (ev.designs if ev is not None else []) if d.sampling == design.sampling]
        g = len(design.cluster_sizes)
        if same:
            entry = min(same, key=lambda d: (abs(len(d.cluster_sizes) - g), len(d.cluster_sizes)))
            source = f"the nearest measured design ({len(entry.cluster_sizes)} clusters)"
        else:
            source = "no coverage evidence"
    out = fallback(design.sampling)
    if entry is not None:
        ref = REFERENCE_SHOWN[design.sampling]
        for k, v in entry.defaults.items():
            if k in out and v is None:  # no method holds for this design: the reference, labelled below 93 %
                out[k] = ref[k]
            elif k in out and v.removeprefix("paired_") in INTERVALS:
                out[k] = v
    return out, source


def unheld(design: RunDesign, *, path: str | Path | None = None) -> dict[str, float | None]:
    """``{class: minimum coverage of the method shown}`` for the classes of ``design``'s own evidence entry whose
    default is ``None`` (no method reaches 93 %; :func:`harness.studies.coverage.goldset.choose`); empty when every
    class has a default or the design was not measured."""
    entry = matching_design(design, path=path)
    if entry is None:
        return {}
    ref = REFERENCE_SHOWN[design.sampling]
    out: dict[str, float | None] = {}
    for k, v in entry.defaults.items():
        if v is None and k in ref:
            got = entry.methods.get(ref[k].removeprefix("paired_"), {}).get(k)
            out[k] = None if got is None else got.min
    return out


@dataclass(frozen=True)
class ShownIntervals:
    """The interval method shown per metric for one run (or one slice of it).

    Attributes:
        design: the slice's :class:`RunDesign`.
        defaults: ``{class: method}`` (:func:`design_defaults`), classes of :data:`CLASSES`.
        source: ``None`` when the design was measured; else where the defaults come from (:func:`design_defaults`).
    """

    design: RunDesign
    defaults: Mapping[str, str] = field(default_factory=dict)
    source: str | None = None

    @classmethod
    def for_design(cls, design: RunDesign, *, path: str | Path | None = None) -> ShownIntervals:
        """The choice for ``design`` (:func:`design_defaults`)."""
        defaults, source = design_defaults(design, path=path)
        return cls(design, defaults, source)

    @classmethod
    def for_run(cls, run, slice_name: str = "all", *, path: str | Path | None = None) -> ShownIntervals:
        """The choice for one slice of a run record (read duck-typed; :func:`slice_design`)."""
        return cls.for_design(slice_design(run, slice_name), path=path)

    @property
    def paired(self) -> str:
        """The paired method ``compare`` and ``gate`` use (a name of :func:`harness.stats.paired_methods`)."""
        return self.defaults["paired"].removeprefix("paired_")

    def method(self, outcome: str, recorded: Iterable[str]) -> str:
        """The method shown for a metric of outcome class ``outcome`` (the metric's declared class,
        :attr:`harness.metrics.MetricFamily.outcome`) whose run recorded the methods ``recorded``: the class's
        default, or ``cr2`` when that one is not recorded."""
        names = set(recorded)
        chosen = self.defaults[outcome]
        return chosen if chosen in names else "cr2"

    def by_class(self, metrics: Mapping[str, Recorded]) -> dict[str, str]:
        """``{class: method shown}`` over ``{metric: (outcome class, recorded methods)}``, in the metrics' order (a
        class whose metrics lack its default shows ``cr2``, :meth:`method`)."""
        out: dict[str, str] = {}
        for outcome, names in metrics.values():
            out.setdefault(outcome, self.method(outcome, names))
        return out

    def phrase(self, metrics: Mapping[str, Recorded]) -> str:
        """``CR2-logit`` when one method is shown, else ``CR2-logit (binary, unit), CR3 (continuous)``."""
        groups: dict[str, list[str]] = {}
        for cls, m in self.by_class(metrics).items():
            groups.setdefault(m, []).append(cls)
        if not groups:
            return short_label(self.defaults["unit"])
        if len(groups) == 1:
            return short_label(next(iter(groups)))
        return ", ".join(f"{short_label(m)} ({', '.join(c)})" for m, c in groups.items())


def category_interval_label(values: Iterable) -> tuple[str, str | None]:
    """``(label, source)`` of per-category intervals (:class:`harness.evaluation.compare.CategoryInterval`, read
    duck-typed: ``method``, ``source``, ``interval``) for captions and headings: the short name(s) of their methods
    (``CR2-logit``; ``CR2`` when none has an interval) and, when the categories' designs were not measured, where
    the choice comes from (``"the rule's default for the nearest measured design (27 clusters); coverage not measured
    for a category's design"``), else ``None``."""
    vals = list(values)
    names = sorted({short_label(v.method) for v in vals if v.interval is not None}) or ["CR2"]
    sources = sorted({v.source for v in vals if v.interval is not None and v.source})
    source = None
    if sources:
        source = f"the rule's default for {'; '.join(sources)}; coverage not measured for a category's design"
    return ", ".join(names), source
