"""What a correction does to runs' metrics (``harness validate --correction ... --impact RUN``).

For each run record given, the rankings it stored for each system and question (``per_question.jsonl``, cut at the
run's depths) are scored twice with :func:`harness.metrics.question_metrics` at the run's depths: against the gold
set before the correction and against the corrected set. Per system and metric the result is the old and new mean
and the **paired difference new - old** over the questions, with the coverage rule's paired interval for the
corrected set's design (:func:`harness.stats.paired`; :mod:`harness.stats.shown`: CR3 or CR2 cluster-robust,
Pustejovsky & Tipton 2018) at the run's level, the questions
clustered as the run clustered them (its ``clusters.mode``) on the *corrected* set (a correction that adds a gold
document can merge clusters; the new clustering is the one later runs will use).

Checks before anything is reported: the run was scored against exactly the uncorrected set (its ``goldset.sha256``
equals the records' sha256), and re-scoring the stored rankings against it reproduces every stored per-question
value of the metrics asked for (so the "old" column is the run as recorded, not an approximation).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import HarnessInputError
from harness.evaluation.runs import RunRecord, load_run
from harness.goldset.clusters import question_clusters
from harness.goldset.io import GoldSet
from harness.metrics import METRIC_SETS, question_metrics
from harness.stats import paired
from harness.stats.design_evidence import RunDesign, run_design
from harness.stats.shown import ShownIntervals

__all__ = ["IMPACT_METRICS", "Impact", "correction_impact", "impact_of", "rescore"]

IMPACT_METRICS: tuple[str, ...] = METRIC_SETS["compare"]
"""The metrics whose change is shown (the ``compare`` set of :data:`harness.metrics.METRIC_SETS`)."""

_TOL = 1e-12


@dataclass
class Impact:
    """The metric impact of a correction on some runs.

    Attributes:
        method: the paired interval method: the coverage rule's default for the corrected set's design (its
            clusters; :class:`harness.stats.shown.ShownIntervals`).
        level: confidence level of the intervals (the first run's).
        metrics: the metric ids.
        runs: ``[{"run_id", "path", "systems": {system: {metric: {"old", "new", "diff", "interval": {"low",
            "high"} | None, "questions_changed", "changed": {qid: [old, new]}}}}}]``.
    """

    method: str
    level: float
    metrics: tuple[str, ...]
    runs: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"method": self.method, "level": self.level, "metrics": list(self.metrics), "runs": self.runs}


def rescore(rec: RunRecord, goldset: GoldSet, system: str, metrics: Sequence[str]) -> dict[str, dict[str, float]]:
    """``{qid: {metric: value}}`` of one system's stored rankings scored against ``goldset`` at the run's depths.

    A question of ``goldset`` the run has no row for scores as a system that returned nothing (0).
    """
    rows = {r.qid: r for r in rec.rows(system)}
    out = {}
    for g in goldset.records:
        row = rows.get(g.qid)
        docs = row.rankings.document if row is not None else None
        chunks = row.rankings.chunk if row is not None else None
        qr = question_metrics(
            g,
            docs,
            chunks,
            metrics=list(metrics),
            doc_depth=rec.manifest.depths.document,
            chunk_depth=rec.manifest.depths.chunk,
            n_docs_in_corpus=rec.manifest.corpus.n_documents,
            n_chunks_in_corpus=rec.manifest.corpus.n_chunks,
        )
        out[g.qid] = {m: float(qr.metrics[m]) for m in metrics}
    return out


def _check_old(rec: RunRecord, old: GoldSet, system: str, scored: dict[str, dict[str, float]]) -> None:
    for row in rec.rows(system):
        for m, v in scored.get(row.qid, {}).items():
            if m in row.metrics and abs(float(row.metrics[m]) - v) > _TOL:
                raise HarnessInputError(
                    f"{rec.path}: per_question.jsonl: system {system} question {row.qid}: field metrics.{m}: stored "
                    f"{row.metrics[m]!r}, re-scored against {old.name} {old.version} {v!r}: the stored rankings do "
                    "not reproduce the run, so its impact cannot be shown"
                )


def correction_impact(
    old: GoldSet, new: GoldSet, runs: Sequence[str | Path], *, metrics: Sequence[str] = IMPACT_METRICS
) -> Impact:
    """Re-score each run's stored rankings against ``old`` and ``new`` (see the module docstring).

    Args:
        old: the gold set the runs were scored against.
        new: the corrected set (same questions; ids may be renamed by the correction, matched by position).
        runs: run record folders.
        metrics: metric ids (default :data:`IMPACT_METRICS`).

    Returns:
        :class:`Impact`.

    Raises:
        HarnessInputError: a run that cannot be loaded, was scored against another gold set, or whose stored
            rankings do not reproduce its stored metrics; a corrected set with another number of questions.
    """
    if len(old.records) != len(new.records):
        raise HarnessInputError(
            f"--impact: the corrected set has {len(new.records)} questions, the old {len(old.records)}"
        )
    out: Impact | None = None
    for path in runs:
        rec = load_run(path)
        gs = rec.manifest.goldset
        if gs.sha256 != old.sha256:
            raise HarnessInputError(
                f"{rec.path}: field goldset.sha256: the run was scored against {gs.name} {gs.version} "
                f"({(gs.sha256 or 'no hash')[:12]}), not the records corrected here ({old.name} {old.version}, "
                f"{old.sha256[:12]})"
            )
        labels = question_clusters(new.records, rec.manifest.clusters.mode or "components")
        new_ids = [r.qid for r in new.records]
        clusters = [labels[q] for q in new_ids]
        if out is None:  # the corrected set's design: its clusters, the run's sampling (harness.stats.shown)
            design = RunDesign.from_clusters(clusters, sampling=run_design(rec).sampling, run=str(rec.path))
            method = ShownIntervals.for_design(design).paired
            out = Impact(method=method, level=rec.manifest.level, metrics=tuple(metrics))
        per_system: dict[str, Any] = {}
        for system in rec.systems:
            before = rescore(rec, old, system, metrics)
            _check_old(rec, old, system, before)
            after_by_new = rescore(rec, new, system, metrics)
            olds = [before[r.qid] for r in old.records]
            news = [after_by_new[q] for q in new_ids]
            res: dict[str, Any] = {}
            for m in metrics:
                y0 = np.array([x[m] for x in olds])
                y1 = np.array([x[m] for x in news])
                changed = {
                    new_ids[i]: [float(y0[i]), float(y1[i])] for i in range(len(new_ids)) if abs(y1[i] - y0[i]) > _TOL
                }
                if not changed:
                    interval = {"low": 0.0, "high": 0.0}
                elif len(set(clusters)) < 2:
                    interval = None
                else:
                    iv = paired(y0, y1, clusters, method=method, level=rec.manifest.level)
                    interval = {"low": float(iv.lower), "high": float(iv.upper)}
                res[m] = {
                    "old": float(y0.mean()),
                    "new": float(y1.mean()),
                    "diff": float((y1 - y0).mean()),
                    "interval": interval,
                    "questions_changed": len(changed),
                    "changed": changed,
                }
            per_system[system] = res
        out.runs.append({"run_id": rec.run_id, "path": str(rec.path), "systems": per_system})
    if out is None:
        raise HarnessInputError("--impact: no run given")
    return out


def impact_of(runs: Sequence[str | Path], *, metrics: Sequence[str] = IMPACT_METRICS):
    """The hook :func:`harness.validate.validate` (``impact=``) calls with the old and the corrected set: it
    re-scores ``runs`` with :func:`correction_impact` and returns the JSON-ready :class:`Impact` dict.

    Raises (when called): see :func:`correction_impact`.
    """
    runs = tuple(runs)

    def hook(old: GoldSet, new: GoldSet) -> dict:
        return correction_impact(old, new, runs, metrics=metrics).to_dict()

    return hook
