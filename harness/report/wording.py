"""The report's wording of a gate's evidence: :func:`gate_evidence_lines`, over the sentences keyed by id in
:mod:`harness.wording` (a leaf module, so that the layers below ``report/`` word a result the same way without
importing up); every name of that module is re-exported here."""

from __future__ import annotations

from harness.wording import *  # noqa: F403  (the sentences keyed by id)
from harness.wording import estimand_line, known_item_coverage


def gate_evidence_lines(verdict) -> list[str]:
    """The estimand and coverage lines a gate output prints once: a known-item verdict (no gold set) its own
    (:func:`estimand_line` ``known-item``, :func:`known_item_coverage`), else the gold-set design's
    (:func:`harness.stats.methods.paired_evidence_lines`)."""
    from harness.evaluation.known_item_gate import known_item_only
    from harness.stats.methods import paired_evidence_lines

    if known_item_only(verdict):
        cov = verdict.checks[0].coverage
        return [estimand_line("known-item", paired=True), known_item_coverage(cov)]
    return paired_evidence_lines(verdict.method, design=verdict.design)
