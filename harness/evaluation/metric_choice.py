"""Chosen metrics (``--metrics``): which ids a run scores, the depths they need, and scoring a stored run on ids its
summary lacks.

``harness run`` / ``harness evaluate`` score the summary's ids (:func:`harness.metrics.summary_metric_ids`) plus any
chosen with ``--metrics`` (the harness's ids and the ir_measures names of :mod:`harness.metrics.standard`, e.g.
``AP@100,nDCG@20,P@5,R@100,RR@10``). A metric at cut-off k reads the ranking of its level to depth k, so the depth
of a level grows to the largest chosen k (:func:`grow_depths`; the record's ``depths`` say so, and a note names the
growth). A run at a grown depth is not comparable with a baseline at the old depth
(:func:`harness.evaluation.runs.check_comparable`: exit 2 naming the depth to re-run the baseline with).

``compare``, ``gate``, ``power`` and ``report`` read per-question vectors through
:func:`harness.evaluation.pairing.paired_values`, which calls :func:`score_missing`: an id the run did not score
is scored from the rankings stored in ``per_question.jsonl`` (cut at the recorded depths) and the run's gold set
(its recorded path, checked against the recorded sha256), in memory only: the record on disk is not changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import HarnessInputError, IncomparableError
from harness.metrics import parse_metrics, question_metrics, summary_metric_ids

if TYPE_CHECKING:
    from harness.evaluation.runs import RunRecord

__all__ = ["DEPTH_OPTIONS", "chosen_metrics", "grow_depths", "needed_depths", "run_metric_ids", "score_missing"]

DEPTH_OPTIONS = {"docs": "--doc-depth", "chunks": "--chunk-depth"}
"""The option that sets each level's depth."""


def chosen_metrics(ids: str | Iterable[str] | None, *, option: str = "--metrics") -> tuple[str, ...]:
    """Canonical ids of a comma-separated list (or a list of such), in order, repeats dropped; ``()`` for none.

    Raises:
        HarnessInputError: an unknown or malformed id, naming ``option`` (exit 2).
    """
    if ids is None:
        return ()
    parts = [ids] if isinstance(ids, str) else list(ids)
    items = [m.strip() for part in parts for m in str(part).split(",") if m.strip()]
    try:
        return tuple(s.id for s in parse_metrics(items))
    except HarnessInputError as exc:
        raise HarnessInputError(f"{option}: {exc}") from None


def needed_depths(ids: Iterable[str]) -> dict[str, int]:
    """``{level: largest rank cut-off}`` of the ids (a budget in words needs no depth; an id without k none)."""
    out: dict[str, int] = {}
    for s in parse_metrics(list(ids)):
        if s.k is not None and not s.unit:
            out[s.level] = max(out.get(s.level, 0), s.k)
    return out


def run_metric_ids(ks: Sequence[int], chosen: Sequence[str] = ()) -> list[str]:
    """The ids a run scores and summarises: the summary's (:func:`summary_metric_ids` at ``ks``), then the chosen
    ones not among them."""
    return list(dict.fromkeys([*summary_metric_ids(sorted(set(ks))), *chosen]))


def grow_depths(options, log: Callable[[str], None] | None = None):
    """``options`` (a :class:`harness.evaluation.pipeline.RunOptions`) with each level's depth raised to the largest
    cut-off of its chosen metrics; ``log`` gets one line per grown depth."""
    need = needed_depths(options.metrics)
    doc, chunk = options.doc_depth, options.chunk_depth
    for level, current, name in (("docs", doc, "document"), ("chunks", chunk, "chunk")):
        k = need.get(level, 0)
        if k > current:
            if log is not None:
                log(
                    f"--metrics: the {name} depth grows from {current} to {k} (a metric at k reads the ranking to "
                    f"depth k; a baseline run at depth {current} is not comparable: re-run it with "
                    f"{DEPTH_OPTIONS[level]} {k})"
                )
            doc, chunk = (k, chunk) if level == "docs" else (doc, k)
    return replace(options, doc_depth=doc, chunk_depth=chunk)


def _has(run: RunRecord, metric: str) -> bool:
    return all(metric in r.metrics or metric in (r.flags.get("omitted") or {}) for r in run.per_question)


def score_missing(run: RunRecord, metrics: Iterable[str]) -> list[str]:
    """Score, from the stored rankings, the ids of ``metrics`` some row of ``run`` lacks, into the loaded rows
    (``row.metrics``, and ``flags`` ``omitted`` / ``undefined``); the files are not changed.

    Returns:
        The ids scored (empty when the run had them all).

    Raises:
        IncomparableError: a cut-off beyond the recorded depth of its level (naming the depth to re-run with).
        HarnessInputError: a budget metric (it needs the corpus's chunk extents), a chunk-level id of a run under
            another chunker than its gold set's, a gold set missing or changed since the run (naming its path).
    """
    missing = [s for s in parse_metrics(list(metrics)) if not _has(run, s.id)]
    if not missing:
        return []
    depths = {"docs": run.manifest.depths.document, "chunks": run.manifest.depths.chunk}
    for s in missing:
        if s.unit:
            raise HarnessInputError(
                f"{run.path}: metric {s.id} is not in the run and needs the corpus's chunk word counts; re-run "
                f"with --metrics {s.id}"
            )
        if s.k is not None and s.k > depths[s.level]:
            raise IncomparableError(
                f"{run.path}: metric {s.id} needs the {'document' if s.level == 'docs' else 'chunk'} ranking to "
                f"depth {s.k}; the run records depth "
                f"{depths[s.level]}: re-run it with {DEPTH_OPTIONS[s.level]} {s.k} (or --metrics {s.id})"
            )
    from harness.goldset.io import load_goldset

    info = run.manifest.goldset
    where = Path(info.path or "")
    if not info.path or not where.exists():
        raise HarnessInputError(
            f"{run.path}/manifest.json: field goldset.path: {info.path!r} not found; metric "
            f"{missing[0].id} is not in the run and is scored from the gold set (or re-run with --metrics)"
        )
    gs = load_goldset(where)
    if info.sha256 and gs.sha256 != info.sha256:
        raise HarnessInputError(
            f"{run.path}/manifest.json: field goldset.sha256: the gold set at {where} changed since the run; "
            f"metric {missing[0].id} cannot be scored from it (re-run with --metrics {missing[0].id})"
        )
    own = gs.manifest.chunker_version if gs.manifest else None
    if any(s.level == "chunks" for s in missing) and own and run.manifest.corpus.chunker_id not in (None, own):
        raise HarnessInputError(
            f"{run.path}: chunk-level metrics not in the run cannot be scored afterwards under chunker "
            f"{run.manifest.corpus.chunker_id} (the gold set's is {own}); re-run with --metrics"
        )
    by_id = gs.by_id()
    ids = [s.id for s in missing]
    corpus = run.manifest.corpus
    for row in run.per_question:
        rec = by_id.get(row.qid)
        if rec is None:
            raise HarnessInputError(f"{run.path}/per_question.jsonl: question {row.qid!r} is not in the gold set")
        docs = None if row.flags.get("evaluated_docs") is False else row.rankings.document
        chunks = None if row.flags.get("evaluated_chunks") is False else row.rankings.chunk
        res = question_metrics(
            rec,
            docs,
            chunks,
            metrics=ids,
            doc_depth=depths["docs"],
            chunk_depth=depths["chunks"],
            n_docs_in_corpus=corpus.n_documents,
            n_chunks_in_corpus=corpus.n_chunks,
        )
        row.metrics.update(res.metrics)
        if res.omitted:
            row.flags["omitted"] = {**(row.flags.get("omitted") or {}), **res.omitted}
        if res.undefined:
            row.flags["undefined"] = [*(row.flags.get("undefined") or []), *res.undefined]
    return ids
