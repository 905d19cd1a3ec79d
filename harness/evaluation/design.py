"""The sampling design a gold set records and what runs, ``compare`` and ``gate`` do with it.

The dataset manifest's ``design.sampling`` says how the questions were sampled (:data:`DECLARED`):

* ``from-documents`` (the default when absent: eval v4 and every set authored here): questions written on documents
  drawn at random; clusters are the connected components of questions sharing a gold document (``--clustering``,
  default ``components``);
* ``independent`` (what ``harness goldset import`` writes for TREC/BEIR/qrels judgements): each question an
  independent draw from a query population, so each question is its own cluster (``none``); the question mean
  estimates the mean over that query population. An explicit ``--clustering`` on ``run``/``evaluate`` overrides it
  and is recorded (``goldset.design.clustering``); the run is then read as ``from-documents``;
* ``pps``: below.

A gold set whose dataset manifest has ``design.sampling == "pps"`` (documents drawn with probability proportional to
their queries, with replacement; :mod:`harness.studies.goldset_plan`) is read as K Hansen-Hurwitz draws:

* clusters: each question belongs to one draw (label ``draw-<j>``): the draw of its first gold document; a document
  drawn several times deals its questions to its draws in question-id order (round robin), so every draw is its own
  cluster (:func:`design_clusters`);
* intervals: a run adds the Hansen-Hurwitz intervals (``hansen_hurwitz``; ``hansen_hurwitz_logit`` for metrics in
  [0, 1]) of the chunk-weighted mean to the summary (:func:`run_intervals`); ``compare`` and ``gate`` use the paired
  Hansen-Hurwitz interval (:func:`paired_method`);
* the run manifest's ``goldset.design`` records the plan (:func:`design_info`), which renderings read
  (:func:`harness.stats.design_evidence.run_design`).

Any other gold set is read as before (clusters of the chosen ``--clustering``); every rendering shows, per outcome
class, the coverage rule's default for the run's design (:mod:`harness.stats.shown`).
"""

from __future__ import annotations

from harness.errors import HarnessInputError
from harness.stats import all_intervals
from harness.stats.methods import INTERVALS, outcome_type
from harness.stats.shown import ShownIntervals

#: The values of a dataset manifest's ``design.sampling`` (module docstring); absent means ``from-documents``.
DECLARED = ("from-documents", "independent", "pps")
#: What a run's :class:`harness.stats.design_evidence.RunDesign` calls each declared design.
RUN_SAMPLING = {"from-documents": "srs", "independent": "independent", "pps": "pps"}
#: The clustering each declared design implies when ``--clustering`` is not given.
DESIGN_CLUSTERING = {"from-documents": "components", "independent": "none", "pps": "components"}


def _manifest_design(goldset) -> dict | None:
    man = getattr(goldset, "manifest", None)
    extra = (getattr(man, "model_extra", None) or {}) if man is not None else {}
    design = extra.get("design")
    return design if isinstance(design, dict) else None


def declared_sampling(goldset) -> str:
    """The gold set's declared ``design.sampling`` (one of :data:`DECLARED`; ``from-documents`` when absent).

    Raises:
        HarnessInputError: a ``design.sampling`` that is none of :data:`DECLARED` (naming the manifest and field).
    """
    design = _manifest_design(goldset)
    sampling = "from-documents" if design is None or design.get("sampling") is None else design.get("sampling")
    if sampling not in DECLARED:
        where = getattr(goldset, "manifest_path", None) or getattr(goldset, "records_path", "gold set")
        raise HarnessInputError(f"{where}: field design.sampling: {sampling!r} is none of {', '.join(DECLARED)}")
    return str(sampling)


def run_clustering(goldset, requested: str | None) -> str:
    """The clustering a run uses: ``requested`` (an explicit ``--clustering``) when given, else the declared
    design's (:data:`DESIGN_CLUSTERING`: ``none`` for ``independent``, ``components`` otherwise)."""
    return requested if requested is not None else DESIGN_CLUSTERING[declared_sampling(goldset)]


def gold_design(goldset) -> dict | None:
    """The manifest's ``design`` section when it says ``sampling: pps`` (else None)."""
    design = _manifest_design(goldset)
    return design if design is not None and declared_sampling(goldset) == "pps" else None


def design_clusters(goldset, clusters: dict[str, str]) -> dict[str, str]:
    """``{qid: draw label}`` for a PPS gold set (module docstring), else ``clusters`` unchanged.

    Raises:
        HarnessInputError: a question whose first gold document is none of the draws' (naming manifest, record and
            field), or a malformed ``design.draws``.
    """
    design = gold_design(goldset)
    if design is None:
        return clusters
    where = goldset.manifest_path or goldset.records_path
    draws: dict[str, list[int]] = {}
    try:
        for d in design["draws"]:
            draws.setdefault(str(d["doc_id"]), []).append(int(d["draw"]))
    except (KeyError, TypeError, ValueError):
        raise HarnessInputError(f"{where}: field design.draws: need [{{draw, doc_id, p}}, ...]") from None
    dealt: dict[str, int] = {}
    out = {}
    for rec in sorted(goldset.records, key=lambda r: r.qid):
        doc = str(rec.gold_documents[0].document_id) if rec.gold_documents else None
        if doc not in draws:
            raise HarnessInputError(
                f"{where}: record {rec.qid}: field gold_documents[0]: {doc!r} is none of the plan's drawn documents "
                "(design.draws); a PPS gold set's questions are written on its draws"
            )
        i = dealt.get(doc, 0)
        dealt[doc] = i + 1
        out[rec.qid] = f"draw-{draws[doc][i % len(draws[doc])]}"
    return out


def run_intervals(goldset, y, clusters, options) -> dict:
    """:func:`harness.stats.all_intervals` at ``options.level`` (``bootstrap_reps``, ``seed``), plus for a PPS gold
    set the Hansen-Hurwitz intervals (logit for values in [0, 1] as well)."""
    level = options.level
    ivs = all_intervals(y, clusters, level=level, B=options.bootstrap_reps, seed=options.seed)
    if gold_design(goldset) is not None:
        for name in ("hansen_hurwitz", "hansen_hurwitz_logit"):
            if INTERVALS[name].applies_to(outcome_type(y)):
                ivs[name] = INTERVALS[name].compute(y, clusters, level=level)
    return ivs


def design_info(goldset, clustering: str | None = None) -> dict:
    """``{"design": {...}}`` for the run manifest's ``goldset`` section: a PPS gold set's plan; ``{"sampling":
    "independent"}`` for an independent one (plus ``"clustering"`` when ``clustering``, an explicit
    ``--clustering``, overrides the design's ``none``); ``{"sampling": "from-documents"}`` when the manifest
    declares it; ``{}`` when it declares nothing (the committed baseline's record is unchanged)."""
    design = gold_design(goldset)
    if design is not None:
        return {"design": design}
    declared = declared_sampling(goldset)
    if declared == "independent":
        over = clustering is not None and clustering != DESIGN_CLUSTERING["independent"]
        return {"design": {"sampling": "independent", **({"clustering": clustering} if over else {})}}
    return {"design": {"sampling": declared}} if _manifest_design(goldset) is not None else {}


def paired_method(run) -> str:
    """The paired interval ``compare`` and ``gate`` use on ``run``'s gold set: the coverage rule's default for
    paired differences under the run's own design (:class:`harness.stats.shown.ShownIntervals`: CR3 for the committed
    baseline's design on this corpus, ``hansen_hurwitz`` for a PPS gold set, the nearest measured design's default
    for an unmeasured one)."""
    return ShownIntervals.for_run(run).paired
