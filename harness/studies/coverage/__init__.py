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
  (:mod:`harness.studies.coverage.choice`) and the evidence file (:mod:`harness.studies.coverage.evidence`); the
  measurements block of ``docs/measurements.md`` is written by ``benchmarks/coverage_measurements.py``.

The statistics come from :mod:`harness.stats` (the registry :mod:`harness.stats.methods` and its batched kernels in
:mod:`harness.stats.batched`). The figures are drawn by :mod:`harness.report.study_plots` (the caller passes
:func:`~harness.report.study_plots.coverage_figures` as ``plots=``; this package imports nothing of the report layer).
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
    "run_coverage",
    "study_design",
    "write_coverage",
]
