"""A run record restricted to one split of its gold set (``harness report RUN --split test``).

:func:`restrict_run` returns a :class:`~harness.evaluation.runs.RunRecord` (in memory; nothing is written) holding
only the rows of the split's questions (the ``split`` field recorded in every row of ``per_question.jsonl``:
:func:`harness.evaluation.pairing.split_qids`), with

* the summary's ``all`` slice recomputed from those rows: per metric the mean over the split's questions (a
  question the metric is omitted for, ``flags["omitted"]``, left out as the run left it out) and every interval
  method :func:`harness.stats.all_intervals` would compute, over the split's clusters (with the run's level, bootstrap
  replicates and seed); per-category means; question and cluster counts. Metrics the run could not measure (mean
  ``None``) keep the run's note. The resampling methods are computed for :data:`RESAMPLED` only. Other slices
  (``covered``...) are dropped: they were computed over all questions;
* the manifest's clustering restricted to the split: ``n_clusters`` the clusters of its questions, ``labels``
  theirs, the Satterthwaite df of that design and its few-cluster warning.

So every table, interval and paired difference computed from the restricted record is the split's, and its headers
name the clusters actually used (the test split of ``mx-leyes-dof-eval-v1``: 21 questions in 14 clusters).
"""

from __future__ import annotations

import math
from collections import defaultdict

from harness.evaluation.pairing import split_qids
from harness.evaluation.record import CategorySummary, ClusterInfo, MetricSummary, SliceSummary, Summary
from harness.evaluation.runs import RunRecord
from harness.metrics import METRIC_SETS
from harness.stats import satterthwaite_df
from harness.stats.methods import INTERVALS, outcome_type

__all__ = ["RESAMPLED", "restrict_run"]

RESAMPLED: tuple[str, ...] = METRIC_SETS["compare"]
"""The metrics whose split summary also gets the resampling intervals (bootstrap, wild); the others get the analytic
methods only (CR2, CR3, cluster t, Wald...), which keeps a 14-system report on a split to seconds."""


def _metric(rows, metric: str, labels: dict[str, str], run: RunRecord, whole: MetricSummary | None) -> MetricSummary:
    if whole is not None and whole.mean is None:
        return whole
    kept = [r for r in rows if metric in r.metrics]
    if not kept:
        return MetricSummary(mean=None, note="no question of the split has a value for this metric")
    y = [float(r.metrics[metric]) for r in kept]
    cl = [labels.get(r.qid, r.qid) for r in kept]
    intervals = {}
    notes = []
    if len(set(cl)) >= 2:
        m = run.manifest
        kind = outcome_type(y)
        for meth in INTERVALS.values():
            if not (meth.in_runs and meth.applies_to(kind)) or (meth.resampling and metric not in RESAMPLED):
                continue
            iv = meth.compute(y, cl, level=m.level, B=m.bootstrap_reps or 5000, seed=m.seed)
            intervals[meth.name] = iv.to_dict()
    else:
        notes.append("no interval: the slice holds fewer than 2 clusters")
    if len(kept) < len(rows):
        notes.append(f"{len(rows) - len(kept)} of {len(rows)} questions excluded (no value recorded)")
    return MetricSummary(mean=math.fsum(y) / len(y), intervals=intervals, note="; ".join(notes) or None)


def restrict_run(run: RunRecord, split: str) -> RunRecord:
    """``run`` restricted to the questions of ``split`` (module docstring); ``all`` returns ``run`` itself.

    Raises:
        HarnessInputError: an unknown split, or one holding no question of the run
            (:func:`harness.evaluation.pairing.split_qids`).
    """
    qids = split_qids(run, split)
    if qids is None:
        return run
    rows = [r for r in run.per_question if r.qid in qids]
    labels = {q: c for q, c in run.clusters().items() if q in qids}
    for r in rows:
        labels.setdefault(r.qid, r.cluster or r.qid)
    systems: dict[str, dict[str, SliceSummary]] = {}
    for system in run.systems:
        mine = [r for r in rows if r.system == system]
        if not mine:
            continue
        whole = run.system_summary(system).get("all")
        metrics = list(whole.overall) if whole is not None else list(mine[0].metrics)
        by_cat: dict[str, list] = defaultdict(list)
        for r in mine:
            by_cat[r.category].append(r)
        per_category = {
            cat: CategorySummary(
                n_questions=len(rs),
                n_evaluated=sum(1 for r in rs if not r.flags.get("missing")),
                n_missing=sum(1 for r in rs if r.flags.get("missing")),
                metrics={
                    m: math.fsum(float(r.metrics[m]) for r in rs if m in r.metrics)
                    / max(1, sum(1 for r in rs if m in r.metrics))
                    for m in metrics
                    if any(m in r.metrics for r in rs)
                },
            )
            for cat, rs in by_cat.items()
        }
        systems[system] = {
            "all": SliceSummary(
                levels=dict(whole.levels) if whole is not None else {},
                n_questions=len(mine),
                n_clusters=len({labels[r.qid] for r in mine}),
                overall={
                    m: _metric(mine, m, labels, run, whole.overall.get(m) if whole is not None else None)
                    for m in metrics
                },
                per_category=per_category,
            )
        }
    summary = Summary(systems=systems, metric_ids=list(run.summary.metric_ids), warnings=list(run.summary.warnings))
    n_cl = len(set(labels.values()))
    df = satterthwaite_df(list(labels.values()))
    warning = (
        f"Satterthwaite df {df:.1f} < 4 ({n_cl} clusters in the {split} split): intervals are unreliable"
        if df is not None and df < 4
        else None
    )
    clusters = ClusterInfo(mode=run.manifest.clusters.mode, n_clusters=n_cl, df=df, labels=labels, warning=warning)
    manifest = run.manifest.model_copy(update={"clusters": clusters})
    return RunRecord(path=run.path, manifest=manifest, summary=summary, per_question=rows)
