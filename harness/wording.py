"""Sentences printed beside the intervals, keyed by id (issue 42): one place for the wording every format shares.

Each function returns plain text (no markup); a rendering escapes it like any other string. The texts are built from
the measured numbers passed in, never typed in. A leaf module (it imports no harness module): the statistics, the
evaluation and the studies word a result with it without importing ``report/`` (the layers), and
:mod:`harness.report.wording` re-exports it beside the report's own ``gate_evidence_lines``.
"""

from __future__ import annotations

__all__ = [
    "ESTIMAND_DOC",
    "ESTIMAND_PAGES",
    "ESTIMAND_SHORT",
    "KNOWN_ITEM_STUDY",
    "TARGET_PCT",
    "below_target",
    "estimand_anchor",
    "estimand_line",
    "known_item_coverage",
    "no_method_holds",
    "randomisation_floor",
    "randomisation_floor_applies",
]

#: The coverage target of the rule (:data:`harness.studies.coverage.goldset.THRESHOLD`), as printed.
TARGET_PCT = 93


def no_method_holds(reference: str, minimum: float | None) -> str:
    """``no_method_holds``: what ``harness coverage --run`` and a run's coverage line say when no interval method
    reaches the target for a design; ``reference`` is the reference method's label (CR2), ``minimum`` its minimum
    coverage in [0, 1] (None when not measured)."""
    return (
        f"no interval method holds for this design: {below_target(reference, minimum)}; sample documents by PPS "
        "(`--design pps`) or add clusters"
    )


def below_target(reference: str, minimum: float | None) -> str:
    """``below_target``: the label of the interval shown when no method holds: ``CR2 below 93 % for this design
    (min 64.8 %)``; ``minimum`` in [0, 1] or None."""
    tail = "" if minimum is None else f" (min {100 * minimum:.1f} %)"
    return f"{reference} below {TARGET_PCT} % for this design{tail}"


def randomisation_floor(alpha: float, m: int) -> str:
    """``randomisation_floor``: why a sign-flip randomisation p cannot fall below ``alpha`` with ``m`` clusters of
    non-zero difference (two-sided smallest attainable p = 2 / 2^m, Good 2005, *Permutation, Parametric and Bootstrap
    Tests*, ch. 3), and what the verdict uses instead."""
    floor = 2.0 / 2**m
    return (
        f"the randomisation test cannot reach p < {alpha:g} with {m} clusters (smallest p = 2/2^{m} = {floor:.3g}); "
        "the verdict uses the interval"
    )


def randomisation_floor_applies(alpha: float, m: int) -> bool:
    """Whether :func:`randomisation_floor` applies: ``2 / 2^m > alpha`` (``m`` >= 0 clusters with a non-zero
    difference)."""
    return 2.0 / 2**m > alpha


#: The page holding the full estimand texts, one anchor ``estimand-<id>`` per estimand id.
ESTIMAND_DOC = "docs/goldsets.md"

#: The estimand of each estimand id in a few words (the full text: :data:`harness.stats.design_evidence.ESTIMANDS`,
#: and the docs anchor :func:`estimand_anchor`).
ESTIMAND_SHORT = {
    "srs": "mean over the gold set's documents",
    "independent": "query population's mean",
    "pps": "corpus's chunk-weighted mean (PPS)",
    "srs-documents": "mean of K whole documents",
    "known-item": "corpus's chunk-query mean",
}


#: Estimands whose full text lives on another page than :data:`ESTIMAND_DOC` (the known-item check has no gold set).
ESTIMAND_PAGES = {"known-item": "docs/ci.md"}


def estimand_anchor(estimand_id: str) -> str:
    """``docs/goldsets.md#estimand-srs``: where the full text of estimand ``estimand_id`` lives (the known-item
    check's: ``docs/ci.md#estimand-known-item``)."""
    return f"{ESTIMAND_PAGES.get(estimand_id, ESTIMAND_DOC)}#estimand-{estimand_id}"


def estimand_line(estimand_id: str, *, paired: bool = False) -> str:
    """``estimand_line``: the one line (at most 100 characters) an output prints for its estimand, linking the full
    text: ``Estimand: the mean over the gold set's documents (docs/goldsets.md#estimand-srs)``; ``paired``: the
    difference of that mean between two systems (``compare``, ``gate``).

    Raises:
        KeyError: an unknown estimand id.
    """
    what = ("difference of the " if paired else "the ") + ESTIMAND_SHORT[estimand_id]
    return f"Estimand: {what} ({estimand_anchor(estimand_id)})"


#: Where the known-item gate's interval was chosen by measurement (the generated block of docs/measurements.md).
KNOWN_ITEM_STUDY = "docs/measurements.md, block known-item-gate"


def known_item_coverage(coverage: dict) -> str:
    """``known_item_coverage``: the coverage line of a known-item check (its own design: the corpus's chunk-queries,
    documents as clusters), nominal and measured side by side, from :func:`harness.evaluation.known_item_gate.
    measured_coverage`'s dict (``level``, ``coverage``, ``mc_margin``, ``coverage_95``, ``reps``, ``documents``; an
    empty dict: not measured)."""
    if not coverage:
        return (
            f"CR2 paired intervals, documents as clusters: coverage not measured; the design study: {KNOWN_ITEM_STUDY}"
        )
    margin = coverage.get("mc_margin")
    pm = "" if margin is None else f" ± {100 * margin:.1f}"
    c95 = coverage.get("coverage_95")
    tail = "" if c95 is None else f"; nominal 95 %, measured {100 * c95:.1f} %"
    return (
        f"CR2 paired intervals, documents as clusters: nominal {100 * coverage['level']:g} %, measured "
        f"{100 * coverage['coverage']:.1f}{pm} %{tail} ({coverage['reps']} samples of {coverage['documents']} "
        f"documents drawn with replacement from this corpus); the design study: {KNOWN_ITEM_STUDY}"
    )
