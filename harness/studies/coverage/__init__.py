"""The coverage study: how often each interval method covers the population value when an evaluator samples documents.

* :mod:`harness.studies.coverage.population` - :class:`Population`, :func:`load_population` (a known-item output
  folder, or a CSV of ``doc_id,hit[,doc_type]`` / ``doc_id,y[,doc_type]`` rows);
* :mod:`harness.studies.coverage.study` - the designs (:func:`study_design`), :func:`run_coverage`, results and their
  files (:func:`write_coverage`, :func:`load_coverage`).

The statistics come from :mod:`harness.stats` (the registry :mod:`harness.stats.methods` and its batched kernels in
:mod:`harness.stats.batched`); the figures from :mod:`harness.report.plots`.
"""

from __future__ import annotations

from harness.stats.design import design_diagnostics
from harness.studies.coverage.population import Population, load_population
from harness.studies.coverage.study import (
    METHODS,
    PUBLISHED_COVERAGE,
    CoverageResult,
    DesignResult,
    load_coverage,
    run_coverage,
    study_design,
    write_coverage,
)

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
    """The two coverage figures live in :mod:`harness.report.plots`; imported on first use (matplotlib is heavy)."""
    if name in ("plot_coverage_vs_k", "plot_width_vs_k"):
        from harness.report import plots

        return getattr(plots, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
