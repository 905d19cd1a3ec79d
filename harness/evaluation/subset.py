"""Question subsets: ``--qids`` and ``--category`` on ``run``, ``evaluate``, ``compare``, ``gate`` and ``report``.

One place decides which questions a verb reads:

* ``run`` / ``evaluate`` score and record only the subset (:func:`restrict_goldset`); the manifest's ``subset``
  names it (:meth:`Subset.record`: the qids and categories asked for, the questions kept, out of how many), the
  questions keep the clusters of the whole gold set (a subset is a domain of its design), and every interval is over
  them;
* ``compare`` / ``gate`` / ``report`` filter both run records before pairing (:func:`restrict_run`): the rows of the
  subset, the baseline's recorded cluster labels of those questions (so ``n_clusters`` counts the clusters actually
  used, and the clustering's ``mode`` reads ``components, subset <label>``, so every header that names the
  clustering names the subset), the manifest's ``subset`` saying so.

``--qids`` and ``--category`` take comma-separated lists (repeatable on the command line); given together, a
question must satisfy both. ``--split`` (the gold set's ``split`` field) keeps its meaning on every verb.

Refused (:class:`~harness.errors.HarnessInputError`, exit 2, nothing written): a question id or a category the
gold set (or run) does not hold, every one named; a subset without any question.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from harness.errors import HarnessInputError
from harness.stats import satterthwaite_df

if TYPE_CHECKING:
    from harness.evaluation.runs import RunRecord
    from harness.goldset.io import GoldSet

__all__ = [
    "Subset",
    "load_report_runs",
    "load_restricted",
    "restrict_goldset",
    "restrict_run",
    "restrict_split",
    "resummarise",
]

_SHOWN = 10


def _items(values: str | Iterable[str] | None) -> tuple[str, ...]:
    if values is None:
        return ()
    parts = [values] if isinstance(values, str) else list(values)
    return tuple(dict.fromkeys(x.strip() for p in parts for x in str(p).split(",") if x.strip()))


def _named(items: list[str]) -> str:
    more = f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else ""
    return ", ".join(items[:_SHOWN]) + more


@dataclass(frozen=True)
class Subset:
    """The questions a verb reads.

    Attributes:
        qids: question ids asked for (``()``: no restriction by id).
        categories: categories asked for (``()``: no restriction by category).
    """

    qids: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()

    @classmethod
    def of(cls, qids: str | Iterable[str] | None = None, categories: str | Iterable[str] | None = None) -> Subset:
        """From the options' values: comma-separated strings or lists of them (``None``: not given)."""
        return cls(_items(qids), _items(categories))

    @property
    def is_all(self) -> bool:
        """No restriction."""
        return not self.qids and not self.categories

    @property
    def label(self) -> str:
        """``qids SP-001, SP-002; category monitoring`` (``all questions`` without restriction)."""
        parts = []
        if self.qids:
            parts.append(f"qids {_named(list(self.qids))}")
        if self.categories:
            parts.append(f"category {', '.join(self.categories)}")
        return "; ".join(parts) or "all questions"

    def select(self, categories: Mapping[str, str], *, where: str) -> list[str]:
        """The question ids of ``categories`` (``{qid: category}``, in order) that the subset keeps.

        Raises:
            HarnessInputError: ids or categories ``where`` (a gold set, a run) does not hold, all named; an empty
                selection.
        """
        unknown = [q for q in self.qids if q not in categories]
        if unknown:
            raise HarnessInputError(
                f"{where}: --qids: {len(unknown)} question id{'s' * (len(unknown) > 1)} not in it: {_named(unknown)}"
            )
        present = set(categories.values())
        bad = [c for c in self.categories if c not in present]
        if bad:
            raise HarnessInputError(
                f"{where}: --category: {', '.join(bad)} not among its categories ({', '.join(sorted(present))})"
            )
        keep = [
            q
            for q, c in categories.items()
            if (not self.qids or q in self.qids) and (not self.categories or c in self.categories)
        ]
        if not keep:
            raise HarnessInputError(f"{where}: --qids/--category: no question is {self.label}")
        return keep

    def record(self, kept: list[str], total: int, n_clusters: int | None = None) -> dict:
        """The manifest's ``subset`` section: ``{"qids", "categories", "label", "n_questions", "of"}`` (and
        ``n_clusters`` when given)."""
        out = {
            "qids": list(self.qids),
            "categories": list(self.categories),
            "label": self.label,
            "n_questions": len(kept),
            "of": total,
        }
        if n_clusters is not None:
            out["n_clusters"] = n_clusters
        return out


def restrict_goldset(goldset: GoldSet, subset: Subset) -> tuple[GoldSet, dict | None]:
    """``(the gold set with only the subset's records, the manifest's subset section)``; unchanged and ``None``
    without restriction. The sha256 stays the whole file's (the record names the subset beside it).

    Raises:
        HarnessInputError: as :meth:`Subset.select`, naming the gold set's file.
    """
    if subset.is_all:
        return goldset, None
    keep = set(subset.select({r.qid: r.category for r in goldset.records}, where=str(goldset.records_path)))
    records = [r for r in goldset.records if r.qid in keep]
    return replace(goldset, records=records), subset.record([r.qid for r in records], len(goldset.records))


def restrict_run(run: RunRecord, subset: Subset) -> RunRecord:
    """A copy of ``run`` holding the subset's rows only, its cluster labels and count restricted to them and its
    manifest's ``subset`` naming the restriction (the files are not changed); ``run`` itself without restriction.

    Raises:
        HarnessInputError: as :meth:`Subset.select`, naming the run's ``per_question.jsonl``.
    """
    if subset.is_all:
        return run
    cats = {r.qid: r.category for r in run.per_question}
    keep = set(subset.select(cats, where=str(run.path / "per_question.jsonl")))
    rows = [r for r in run.per_question if r.qid in keep]
    labels = {q: c for q, c in run.manifest.clusters.labels.items() if q in keep}
    used = [labels.get(q, q) for q in sorted(keep)]
    n_cl = len(set(used))
    df = satterthwaite_df(used)
    warning = (
        f"Satterthwaite df {df:.1f} < 4 ({n_cl} clusters in the subset {subset.label}): intervals are unreliable"
        if df is not None and df < 4
        else None
    )
    mode = f"{run.manifest.clusters.mode}, subset {subset.label}"  # every header naming the clustering names it
    clusters = run.manifest.clusters.model_copy(
        update={"mode": mode, "labels": labels, "n_clusters": n_cl, "df": df, "warning": warning}
    )
    extra = dict(run.manifest.model_extra or {})
    extra["subset"] = subset.record(sorted(keep), len(cats), n_cl)
    manifest = run.manifest.model_copy(update={"clusters": clusters, **extra})
    return replace(run, manifest=manifest, per_question=rows)


def load_restricted(path, subset: Subset):
    """:func:`harness.evaluation.runs.load_run` then :func:`restrict_run`; ``path`` itself without restriction (the
    verb loads it)."""
    if subset.is_all:
        return path
    from harness.evaluation.runs import load_run

    return restrict_run(load_run(path), subset)


def resummarise(run: RunRecord, extra: Sequence[str] = ()) -> RunRecord:
    """A copy of ``run`` whose summary is recomputed from its rows (after :func:`restrict_run`) by the one
    summariser, :func:`harness.evaluation.scoring.summarise`, with the run's recorded design (a PPS gold set's
    Hansen-Hurwitz intervals), cluster labels, level, seed and replicates: per system, the ``all`` slice and the
    ``dev``/``test`` slices of its rows. What ``report`` shows on a subset; equal, field for field, to the summary of
    a run on the gold set cut to the same questions. ``extra``: metric ids summarised beside the run's (each must be
    in the rows: :func:`harness.evaluation.metric_choice.score_missing`).
    """
    from types import SimpleNamespace

    from harness.evaluation.record import Summary
    from harness.evaluation.scoring import SummaryContext, recorded_design, summarise
    from harness.metrics import QuestionResult
    from harness.stats.design_evidence import recorded_sampling

    man = run.manifest
    options = SimpleNamespace(level=man.level, bootstrap_reps=man.bootstrap_reps or 5000, seed=man.seed)
    wanted = list(dict.fromkeys([*run.summary.metric_ids, *extra]))
    out = {}
    for system in run.systems:
        rows = run.rows(system)
        if not rows:
            continue
        qres = [
            QuestionResult(
                qid=r.qid,
                category=r.category,
                metrics=dict(r.metrics),
                evaluated_docs=r.flags.get("evaluated_docs", True) is not False,
                evaluated_chunks=r.flags.get("evaluated_chunks", True) is not False,
                doc_depth=man.depths.document,
                chunk_depth=man.depths.chunk,
                gold_doc_ranks=dict(r.gold_doc_ranks),
                gold_chunk_ranks=dict(r.gold_chunk_ranks),
                omitted=dict(r.flags.get("omitted") or {}),
            )
            for r in rows
        ]
        ctx = SummaryContext(
            clusters={r.qid: man.clusters.labels.get(r.qid, r.cluster or r.qid) for r in rows},
            design_source=recorded_design(run),
            options=options,
            metric_ids=[m for m in wanted if all(m in q.metrics or m in q.omitted for q in qres)],
            sampling=recorded_sampling((man.goldset.model_extra or {}).get("design")),
        )
        slices = {"all": {r.qid for r in rows}, **{s: {r.qid for r in rows if r.split == s} for s in ("dev", "test")}}
        out[system] = summarise(qres, [r.flags for r in rows], slices, ctx)
    summary = Summary(
        systems=out,
        metric_ids=wanted,
        warnings=list(run.summary.warnings),
        design_id=run.summary.design_id,
        estimand_id=run.summary.estimand_id,
    )
    return replace(run, summary=summary)


def load_report_runs(paths, subset: Subset, metrics: Sequence[str] = ()) -> list[RunRecord]:
    """The run records of ``harness report`` restricted to ``subset``, the ``metrics`` a run did not score scored
    from its stored rankings (:func:`harness.evaluation.metric_choice.score_missing`), and their summaries recomputed
    when either happened (:func:`resummarise`); loaded as they are otherwise."""
    from harness.evaluation.metric_choice import score_missing
    from harness.evaluation.runs import load_run

    out = []
    for p in paths:
        rec = restrict_run(_subset_named(load_run(p)), subset)
        added = score_missing(rec, metrics)
        summarised = all(m in rec.summary.metric_ids for m in metrics)
        out.append(rec if subset.is_all and not added and summarised else resummarise(rec, metrics))
    return out


def _subset_named(run: RunRecord) -> RunRecord:
    """``run`` with, in memory, its clustering mode naming the subset it scored (``run --qids``), so every header
    that names the clustering names it; ``run`` itself when it scored every question."""
    sub = (run.manifest.model_extra or {}).get("subset")
    if not sub:
        return run
    mode = f"{run.manifest.clusters.mode}, subset {sub['label']}"
    clusters = run.manifest.clusters.model_copy(update={"mode": mode})
    return replace(run, manifest=run.manifest.model_copy(update={"clusters": clusters}))


def restrict_split(run: RunRecord, split: str) -> RunRecord:
    """``run`` restricted to the questions of one split of its gold set (``harness report RUN --split test``): the
    rows of the split's questions (the ``split`` recorded in each row: :func:`harness.evaluation.pairing.split_qids`)
    and their clusters (:func:`restrict_run`), the summary recomputed over them (:func:`resummarise`: means, every
    interval over the clusters actually used, counts), the clustering's mode left as the run's (the report's note names
    the split). ``all`` returns ``run`` itself.

    Raises:
        HarnessInputError: an unknown split, or one holding no question of the run.
    """
    from harness.evaluation.pairing import split_qids

    qids = split_qids(run, split)
    if qids is None:
        return run
    order = [q for q in dict.fromkeys(r.qid for r in run.per_question) if q in qids]
    sub = restrict_run(run, Subset(qids=tuple(order)))
    clusters = sub.manifest.clusters.model_copy(update={"mode": run.manifest.clusters.mode})
    extra = dict(sub.manifest.model_extra or {})
    extra["subset"] = {**extra["subset"], "label": f"{split} split"}
    return resummarise(replace(sub, manifest=sub.manifest.model_copy(update={"clusters": clusters, **extra})))
