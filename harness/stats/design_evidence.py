"""What a run's intervals estimate, and the coverage measured for the run's own design, in words for every rendering.

A gold-set run's intervals are computed over its questions, clustered (:mod:`harness.goldset.clusters`). Its design is
the cluster-size vector (questions per cluster) plus how the gold set's documents were drawn:

* ``srs`` (any gold set not planned by ``harness goldset plan --design pps``): the question mean estimates the **mean
  over the gold set's documents, each weighted by its questions** - in expectation the corpus's document-level mean
  (every document once) when the documents were drawn at random - and **not** the corpus's chunk-weighted mean;
* ``pps`` (documents drawn with probability proportional to their queries, with replacement, recorded in the dataset
  manifest): the Hansen-Hurwitz mean estimates the **corpus's chunk-weighted mean** (:mod:`harness.stats.pps`);
* ``independent`` (the dataset manifest's ``design.sampling: independent``, what ``harness goldset import`` writes
  for TREC/BEIR/qrels judgements): each question an independent draw from a query population and its own cluster;
  the question mean estimates the **mean over the query population the questions were drawn from** (no
  finite-population correction). Its coverage evidence was measured at K = 10, 20 and 40 questions; a run of more
  independent questions shows the entry of the largest measured K not above its own (coverage of these t-type
  intervals approaches nominal as K grows).

Each design has an id (:data:`DESIGN_IDS`: what the dataset manifest's ``design.sampling`` says) and an estimand id
(:data:`ESTIMAND_IDS`), the keys of :data:`ESTIMANDS`, which a run's summary stores.

The coverage printed beside an interval is the one measured for that design (``harness coverage --run RUN``; entries
of :class:`harness.stats.evidence.DesignEvidence` in the committed evidence file, matched on the sorted cluster sizes
and the sampling), never a figure measured for another design; an unmatched design prints ``not measured for this
design: run `harness coverage --run RUN```. Samples of K whole documents drawn at random (known-item ``--sample K``
``--design srs``) have no interval that holds on this corpus's populations (docs/measurements.md): they print
``coverage not guaranteed: measured A-B %; sample documents by PPS``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.relpath import shown_path
from harness.stats.evidence import DesignEvidence, committed_evidence

#: The estimand of each design, in plain words (every rendering prints one of these).
ESTIMANDS = {
    "srs": "mean over the gold set's documents, each weighted by its questions; not the corpus's chunk-weighted mean",
    "pps": "the corpus's chunk-weighted mean (documents drawn with probability proportional to their queries, "
    "Hansen–Hurwitz)",
    "srs-documents": "the corpus's chunk-weighted mean from K whole documents drawn at random",
    "independent": "the mean over the query population the questions were drawn from (each question an independent "
    "draw; no finite-population correction)",
}
SAMPLINGS = ("srs", "independent", "pps")
#: The design id of each sampling (the dataset manifest's ``design.sampling``), stored in a run's summary.
DESIGN_IDS = {"srs": "from-documents", "independent": "independent", "pps": "pps"}
#: The estimand id (a key of :data:`ESTIMANDS`) of each sampling, stored in a run's summary.
ESTIMAND_IDS = {"srs": "srs", "independent": "independent", "pps": "pps"}
#: The smallest number of clusters the coverage rule's evidence covers (the smallest K measured).
MIN_CLUSTERS = 10


def recorded_sampling(design: Mapping | None) -> str:
    """The :class:`RunDesign` sampling of a run manifest's ``goldset.design``
    (:func:`harness.evaluation.design.design_info`): ``pps``; ``independent`` unless an explicit ``--clustering``
    overrode it (recorded as ``clustering``; then ``srs``); else ``srs`` (questions from documents, also for an
    absent or unknown design)."""
    design = design if isinstance(design, Mapping) else {}
    declared = design.get("sampling") or "from-documents"
    if declared == "independent" and design.get("clustering") not in (None, "none"):
        return "srs"
    return {"independent": "independent", "pps": "pps"}.get(str(declared), "srs")


def design_advice(n_questions: int, sizes: Iterable[int], sampling: str = "srs") -> str | None:
    """One line when a design yields fewer clusters than the coverage rule needs (fewer than :data:`MIN_CLUSTERS`),
    or one cluster holds most (more than half) of the questions, naming the design that fits imported judgements;
    else ``None``. ``sizes``: questions per cluster."""
    sizes = sorted((int(x) for x in sizes), reverse=True)
    g = len(sizes)
    if n_questions < 2 or (g >= MIN_CLUSTERS and sizes[0] * 2 <= n_questions):
        return None
    how = f"{g} cluster{'s' if g != 1 else ''}" + (f", the largest holding {sizes[0]}" if g > 1 else "")
    why = "no interval" if g < 2 else f"the coverage rule needs >= {MIN_CLUSTERS} clusters of comparable size"
    if sampling == "independent":
        return f"design independent: {n_questions} questions form {how} ({why}); add questions"
    if sampling == "pps":
        return f"design pps: {n_questions} questions form {how} ({why}); plan more draws (goldset plan --documents)"
    return (
        f"design {DESIGN_IDS.get(sampling, sampling)}: {n_questions} questions form {how} (questions sharing gold "
        f"documents; {why}); judgements of independently drawn queries (TREC/BEIR/qrels) fit design.sampling: "
        "independent (`harness goldset import` writes it)"
    )


@dataclass(frozen=True)
class RunDesign:
    """The design of a run's intervals.

    Attributes:
        sampling: ``"srs"`` or ``"pps"`` (module docstring).
        cluster_sizes: questions per cluster, descending (length = the number of clusters G).
        run: how to name the run in the hint (its folder, or its id).
    """

    sampling: str
    cluster_sizes: tuple[int, ...]
    run: str = "RUN"

    @classmethod
    def from_clusters(cls, clusters: Iterable[str], *, sampling: str = "srs", run: str = "RUN") -> RunDesign:
        """The design of questions labelled ``clusters`` (one label per question). Raises ValueError for an unknown
        ``sampling``."""
        if sampling not in SAMPLINGS:
            raise ValueError(f"sampling {sampling!r}: expected one of {', '.join(SAMPLINGS)}")
        sizes = tuple(sorted(Counter(str(c) for c in clusters).values(), reverse=True))
        return cls(sampling, sizes, run)

    @property
    def estimand(self) -> str:
        """The estimand in plain words (:data:`ESTIMANDS`)."""
        return ESTIMANDS[self.estimand_id]

    @property
    def design_id(self) -> str:
        """The design's id (:data:`DESIGN_IDS`: ``from-documents``, ``independent``, ``pps``)."""
        return DESIGN_IDS[self.sampling]

    @property
    def estimand_id(self) -> str:
        """The estimand's id (a key of :data:`ESTIMANDS`)."""
        return ESTIMAND_IDS[self.sampling]

    def key(self) -> tuple[str, tuple[int, ...]]:
        """``(sampling, cluster sizes descending)``, compared with :meth:`DesignEvidence.key`."""
        return self.sampling, self.cluster_sizes

    def describe(self) -> str:
        """``27 clusters of 6, 3 (×3), 2 (×4), 1 (×19) questions, documents drawn at random``; for independent
        questions ``independent queries: 76 clusters (one question each)``."""
        if self.sampling == "independent":
            return f"independent queries: {len(self.cluster_sizes)} clusters (one question each)"
        cnt = Counter(self.cluster_sizes)
        parts = [str(v) if k == 1 else f"{v} (×{k})" for v, k in sorted(cnt.items(), reverse=True)]
        how = "drawn at random" if self.sampling == "srs" else "drawn by PPS with replacement"
        return f"{len(self.cluster_sizes)} clusters of {', '.join(parts)} questions, documents {how}"

    def to_dict(self) -> dict:
        """JSON form (``design_id`` and ``estimand_id``: :data:`DESIGN_IDS`, :data:`ESTIMAND_IDS`)."""
        return {
            "sampling": self.sampling,
            "design_id": self.design_id,
            "cluster_sizes": list(self.cluster_sizes),
            "estimand_id": self.estimand_id,
            "estimand": self.estimand,
        }


def run_design(run, system: str | None = None, split: str = "all") -> RunDesign:
    """The design of a run record (:class:`harness.evaluation.runs.RunRecord`, read duck-typed): the cluster sizes of
    one system's questions (default the first) and the sampling the gold set recorded (``manifest.goldset`` field
    ``design.sampling``, written for a gold set made by ``harness goldset plan``; else ``"srs"``); ``split``: only the
    questions of that split (``dev``/``test``), as ``compare --split`` and ``gate --split`` use."""
    systems = list(run.manifest.systems)
    who = system or (systems[0] if systems else None)
    rows = [r for r in run.per_question if r.system == who and (split == "all" or r.split == split)]
    labels = [r.cluster if r.cluster is not None else r.qid for r in rows]
    extra = getattr(run.manifest.goldset, "model_extra", None) or {}
    return RunDesign.from_clusters(labels, sampling=recorded_sampling(extra.get("design")), run=str(run.path))


def matching_design(design: RunDesign, *, path: str | Path | None = None) -> DesignEvidence | None:
    """The committed evidence entry measured for exactly ``design`` (same sampling and cluster sizes), or None; for
    ``independent`` questions the entry of the largest measured K not above the run's number of questions (module
    docstring)."""
    ev = committed_evidence(path)
    if ev is None:
        return None
    if design.sampling == "independent":
        g = len(design.cluster_sizes)
        fits = [d for d in ev.designs if d.sampling == "independent" and len(d.cluster_sizes) <= g]
        return max(fits, key=lambda d: len(d.cluster_sizes), default=None)
    return next((d for d in ev.designs if d.key() == design.key()), None)


def _pct(lo: float, hi: float) -> str:
    a, b = f"{100 * lo:.1f}", f"{100 * hi:.1f}"
    return f"{a} %" if a == b else f"{a}–{b} %"


#: Short names of the interval methods, as tables and notes print them (``cr2_logit`` -> ``CR2-logit``).
SHORT = {
    "cr2": "CR2",
    "cr2_logit": "CR2-logit",
    "cr3": "CR3",
    "hansen_hurwitz": "HH",
    "hansen_hurwitz_logit": "HH-logit",
    "korn_graubard": "Korn-Graubard",
}


def _label(method: str, labels: Mapping[str, str] | None) -> str:
    return (labels or {}).get(method.removeprefix("paired_"), method)


def design_coverage(
    method: str,
    outcome: str,
    design: RunDesign,
    *,
    path: str | Path | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict:
    """The coverage of ``method``'s intervals for outcomes of class ``outcome`` under ``design``, as JSON.

    Returns:
        ``{"method", "outcome", "measured", "min", "max", "mc_margin", "populations", "reps", "holds", "default",
        "default_min", "default_max", "text"}`` (``holds`` false and ``default`` None when no method reaches 93 % for
        this design); ``measured`` false (and ``min``/``max`` None) when the committed
        evidence has no entry for this design or class, ``text`` then saying how to measure it.
    """
    entry = matching_design(design, path=path)
    got = None if entry is None else entry.methods.get(method.removeprefix("paired_"), {}).get(outcome)
    out: dict = {"method": method, "outcome": outcome, "measured": got is not None, "min": None, "max": None}
    if got is None or entry is None:
        run = shown_path(design.run, pasteable=True)  # relative to the working directory: pasted there, it works
        out["text"] = f"not measured for this design: run `harness coverage --run {run}`"
        return out
    default = entry.defaults.get(outcome)
    dflt = entry.methods.get(default or "", {}).get(outcome)
    margin = got.mc_margin
    what = design.describe()
    if design.sampling == "independent" and len(entry.cluster_sizes) != len(design.cluster_sizes):
        what += f"; measured at K = {len(entry.cluster_sizes)}, the largest K measured not above the run's"
    text = (
        f"measured coverage {_pct(got.min, got.max)} of nominal {round(100 * entry.level):g} % intervals for this "
        f"design ({what}) on {entry.description}"
        f" (R = {entry.reps} per population"
        + ("" if margin is None else f", Monte Carlo ± {100 * margin:.1f} pts")
        + ")"
    )
    if default and dflt is not None and default != method.removeprefix("paired_"):
        text += f"; this design's default by the rule: {_label(default, labels)}, measured {_pct(dflt.min, dflt.max)}"
    if outcome in entry.defaults and default is None:  # no method reaches 93 % (issue 42 item 2)
        from harness.wording import no_method_holds

        short = SHORT.get(method.removeprefix("paired_"), _label(method, labels))
        text += "; " + no_method_holds(short, got.min)
    out.update(
        holds=default is not None,
        min=got.min,
        max=got.max,
        mc_margin=margin,
        populations=got.populations,
        reps=entry.reps,
        default=default,
        default_min=None if dflt is None else dflt.min,
        default_max=None if dflt is None else dflt.max,
        text=text,
    )
    return out


def estimand_note(design: RunDesign, *, paired: bool = False) -> str:
    """The design's estimand in one line of at most 100 characters linking its full text
    (:func:`harness.wording.estimand_line`)."""
    from harness.wording import estimand_line

    return estimand_line(design.estimand_id, paired=paired)


def design_notes(
    method: str | Mapping[str, str],
    by_class: Mapping[str, list[str]],
    design: RunDesign,
    *,
    path: str | Path | None = None,
    labels: Mapping[str, str] | None = None,
    source: str | None = None,
) -> list[str]:
    """The lines a table of intervals prints: the estimand, then one coverage line per outcome class.

    Args:
        method: the method the table shows for every class (``"cr2"``), or ``{class: method}`` (the run's own
            defaults, :class:`harness.stats.shown.ShownIntervals`; a class missing from it shows ``cr2``).
        by_class: ``{outcome class: [metric ids]}`` in table order.
        design: the run's :class:`RunDesign`.
        path: another evidence file (tests).
        labels: ``{method: label}`` (the registry's labels).
        source: where a per-class choice comes from when the design itself was not measured (``"the nearest
            measured design (27 clusters)"``); printed after the coverage.
    """
    lines = [estimand_note(design)]
    for cls, ids in by_class.items():
        extra = ""
        if not isinstance(method, str):
            shown = method.get(cls, "cr2")
        elif design.sampling == "pps" and not method.startswith("hansen_hurwitz"):  # the run's PPS intervals
            shown = "hansen_hurwitz_logit" if cls in ("binary", "unit") else "hansen_hurwitz"
            extra = f" (in summary.json; the table shows {_label(method, labels)}, which assumes documents at random)"
        else:
            shown = method
        cov = design_coverage(shown, cls, design, path=path, labels=labels)
        line = f"{_label(shown, labels)} intervals of {', '.join(ids)} ({cls}){extra}: {cov['text']}"
        if source and not isinstance(method, str):
            line += f"; shown as the rule's default for {source}"
        lines.append(line)
    return lines


def srs_documents_note(
    method: str, outcome: str, *, path: str | Path | None = None, labels: Mapping[str, str] | None = None
) -> str:
    """What a sample of K whole documents drawn at random prints beside ``method``'s interval: ``coverage not
    guaranteed: measured A–B %; sample documents by PPS`` (A-B: the committed evidence's range for that design;
    without evidence, no range)."""
    ev = committed_evidence(path)
    got = None if ev is None else ev.methods.get(method, {}).get(outcome)
    span = "" if got is None else f": measured {_pct(got.min, got.max)} at K = {ev.k_min}–{ev.k_max}"
    return f"{_label(method, labels)}: coverage not guaranteed{span}; sample documents by PPS (`--design pps`)"


def slice_design(run, slice_name: str = "all", system: str | None = None) -> RunDesign:
    """The design of one slice of a run's questions: :func:`run_design` for ``all`` (and for a slice of the same
    questions and clusters); for a smaller slice (``covered``) a design whose cluster sizes are unknown here, so its
    coverage reads "not measured for this design"."""
    full = run_design(run, system)
    if slice_name == "all":
        return full
    who = system or (list(run.manifest.systems) or [None])[0]
    sums = run.summary.systems.get(who, {}) if who is not None else {}
    a, s = sums.get("all"), sums.get(slice_name)
    same = a is not None and s is not None and (a.n_questions, a.n_clusters) == (s.n_questions, s.n_clusters)
    return full if same else RunDesign(full.sampling, (), full.run)
