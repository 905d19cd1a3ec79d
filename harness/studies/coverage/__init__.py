"""The coverage study: how often each interval method covers the population value when an evaluator samples documents.

* :mod:`harness.studies.coverage.population` - :class:`Population`, :func:`load_population` (a known-item output
  folder: hit@1, reciprocal rank or a paired difference of two systems; or a CSV of ``doc_id,hit[,doc_type]`` /
  ``doc_id,y[,doc_type]`` rows);
* :mod:`harness.studies.coverage.synthetic` - a seeded population built like the published study's;
* :mod:`harness.studies.coverage.catalog` - the methods studied (registry + comparators);
* :mod:`harness.studies.coverage.study` - the designs (:func:`study_design`: SRS, two-stage, PPS) and
  :func:`run_coverage` (one population);
* :mod:`harness.studies.coverage.results` - results and their files (:func:`write_coverage`, :func:`load_coverage`);
* :mod:`harness.studies.coverage.suite` - many populations at once (:func:`run_suite`), the default-method rule
  (:mod:`harness.studies.coverage.choice`), the evidence file (:mod:`harness.studies.coverage.evidence`) and the
  measurements block of ``docs/measurements.md`` (:mod:`harness.studies.coverage.measurements`).

The statistics come from :mod:`harness.stats` (the registry :mod:`harness.stats.methods` and its batched kernels in
:mod:`harness.stats.batched`); the figures from :mod:`harness.report.study_plots`.
"""

from __future__ import annotations

from harness.stats.design import design_diagnostics
from harness.studies.coverage.catalog import METHODS, PUBLISHED_COVERAGE
from harness.studies.coverage.population import Population, load_population
from harness.studies.coverage.results import CoverageResult, DesignResult, load_coverage, write_coverage
from harness.studies.coverage.study import run_coverage, study_design

__all__ = [
    "METHODS",
    "PUBLISHED_COVERAGE",
    "CoverageResult",
    "DesignResult",
    "Population",
    "design_diagnostics",
    "load_coverage",
    "load_population",
    "plot_coverage_vs_k",
    "plot_width_vs_k",
    "run_coverage",
    "study_design",
    "write_coverage",
]


def __getattr__(name: str):
    """The coverage figures live in :mod:`harness.report.study_plots`, imported on first use (matplotlib is heavy)."""
    if name in ("plot_coverage_vs_k", "plot_width_vs_k"):
        from harness.report import study_plots as plots

        return getattr(plots, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
