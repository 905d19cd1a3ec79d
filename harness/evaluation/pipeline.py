"""The ``run`` and ``evaluate`` verbs: retrieve for every gold question, score, add intervals, write a run record.

Data flows one way: corpus -> chunks -> indexes -> rankings -> fused rankings -> per-question metrics ->
intervals -> run record.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from harness import __version__
from harness.corpus.chunker import CHUNKERS
from harness.corpus.ingest import ingest
from harness.corpus.store import Corpus
from harness.errors import HarnessInputError, StaleGoldsetError
from harness.evaluation.pairing import check_split
from harness.evaluation.runs import (
    RUN_SCHEMA_VERSION,
    default_run_id,
    git_commit,
    library_versions,
    write_run_record,
)
from harness.evaluation.trec import read_rankings, trec_qrels_lines, trec_run_lines
from harness.goldset.clusters import question_clusters
from harness.goldset.io import GoldSet, load_goldset
from harness.metrics import MetricSpec, aggregate, question_metrics, summary_metric_ids
from harness.retrieve.base import QueryResult
from harness.retrieve.registry import SystemPlan, SystemSet, plan_systems
from harness.stats import all_intervals, satterthwaite_df

DEFAULT_DOC_DEPTH = 50
DEFAULT_CHUNK_DEPTH = 200
DEFAULT_KS = (1, 5, 10, 20)
NO_EVIDENCE_NOTE = (
    "not applicable: no question of the gold set cites evidence chunks (a documents-only set), so chunk-level "
    "metrics are undefined"
)
"""The summary note of a chunk-level metric over questions none of which cites evidence (mean ``None``, not 0)."""


@dataclass
class RunOptions:
    """Options of a run (recorded in the manifest).

    Attributes:
        doc_depth, chunk_depth: ranking depths (documents 50, chunks 200).
        ks: the cut-offs of the @k metrics.
        clustering: question clustering (``components``, ``first-document``, ``none``).
        seed, bootstrap_reps, level: of the intervals.
        system_defaults: ``{kind: typed options}``, the defaults of every system of that kind in the run (e.g.
            ``{"vector": VectorOptions(binarize="centered")}``; a name's own options override them;
            :mod:`harness.retrieve.registry`). Each system's resolved options are recorded in the manifest's
            ``system_options``.
        split: ``all`` (default), ``dev`` or ``test``: the questions the tables show. Every question is still
            scored and recorded (so the record stays comparable); the summary gains the split as a slice and the
            manifest records ``split`` (:func:`split_slice`).
    """

    doc_depth: int = DEFAULT_DOC_DEPTH
    chunk_depth: int = DEFAULT_CHUNK_DEPTH
    ks: tuple[int, ...] = DEFAULT_KS
    clustering: str = "components"
    seed: int = 0
    bootstrap_reps: int = 5000
    level: float = 0.95
    system_defaults: Mapping[str, BaseModel] = field(default_factory=dict)
    split: str = "all"


def split_slice(goldset: GoldSet, split: str) -> dict[str, set[str]]:
    """``{split: question ids}`` of a ``dev`` or ``test`` split (the gold set's ``split`` field); ``{}`` for ``all``.

    Raises:
        HarnessInputError: an unknown split, or one without questions (naming the gold set's field).
    """
    if check_split(split) == "all":
        return {}
    qids = {r.qid for r in goldset.records if r.split == split}
    if not qids:
        raise HarnessInputError(
            f"{goldset.records_path}: field split: --split {split}: the gold set has no {split} question"
        )
    return {split: qids}


def _split_extra(options: RunOptions) -> dict:
    return {} if options.split == "all" else {"split": options.split}


def cr2_df(cluster_labels: Sequence[str]) -> float | None:
    """Satterthwaite degrees of freedom of the CR2 interval for a mean over these clusters
    (:func:`harness.stats.satterthwaite_df`: it depends on the design only); ``None`` with fewer than 2 clusters."""
    return satterthwaite_df(list(cluster_labels))


def check_goldset_against_corpus(goldset: GoldSet, corpus: Corpus) -> None:
    """Refuse a gold set built against another corpus or chunker, or naming unknown documents.

    Raises:
        StaleGoldsetError: manifest ``corpus_hash`` or ``chunker_version`` differs from the corpus given.
        HarnessInputError: a gold document id that the corpus does not hold (``file:line: record: field``).
    """
    man = goldset.manifest
    src = goldset.manifest_path or goldset.records_path
    if man is not None:
        if man.corpus_hash and man.corpus_hash != corpus.manifest.corpus_hash:
            raise StaleGoldsetError(
                f"{src}: field corpus_hash: gold set built against {man.corpus_hash[:12]}, "
                f"corpus given is {corpus.manifest.corpus_hash[:12]} ({corpus.manifest.corpus_id})"
            )
        if man.chunker_version != corpus.manifest.chunker_id:
            raise StaleGoldsetError(
                f"{src}: field chunker_version: gold set uses {man.chunker_version!r}, "
                f"corpus was chunked with {corpus.manifest.chunker_id!r}"
            )
    docs = corpus.documents()
    for rec in goldset.records:
        for i, g in enumerate(rec.gold_documents):
            if str(g.document_id) not in docs:
                raise HarnessInputError(
                    f"{goldset.records_path}:{goldset.line_of.get(rec.qid, '?')}: record {rec.qid}: "
                    f"field gold_documents[{i}].document_id: unknown document {g.document_id!r}"
                )


def score_results(
    goldset: GoldSet,
    results: dict[str, dict[str, QueryResult]],
    options: RunOptions,
    *,
    n_docs: int | None = None,
    n_chunks: int | None = None,
    slices: dict[str, set[str]] | None = None,
) -> tuple[list[dict], dict, dict]:
    """Per-question metrics, summaries and intervals for every system.

    Args:
        goldset: the gold set.
        results: ``{system: {qid: QueryResult}}``; a question missing for a system scores 0 and is counted.
        options: depths, ks, clustering, seed.
        n_docs, n_chunks: corpus sizes (depths larger than these are clamped and recorded).
        slices: extra question subsets to summarise (``{"covered": {qid, ...}}``); ``all`` is always there.

    Returns:
        ``(per_question_rows, summary, clusters_info)``. A chunk-level metric of a slice in which no question cites
        evidence (a documents-only gold set) has mean ``None``, no intervals and :data:`NO_EVIDENCE_NOTE` in the
        summary; its per-question values stay 0 and are listed as undefined.
    """
    clusters = question_clusters(goldset.records, options.clustering)
    by_id = goldset.by_id()
    metric_ids = summary_metric_ids(options.ks)
    rows: list[dict] = []
    summary: dict = {"systems": {}, "metric_ids": metric_ids}
    all_slices = {"all": {r.qid for r in goldset.records}}
    all_slices.update(slices or {})
    for system, per_q in results.items():
        levels = {
            "docs": any(r is not None and r.docs is not None for r in per_q.values()),
            "chunks": any(r is not None and r.chunks is not None for r in per_q.values()),
        }
        qres = []
        for rec in goldset.records:
            res = per_q.get(rec.qid)
            qr = question_metrics(
                rec,
                res.docs if res is not None else None,
                res.chunks if res is not None else None,
                doc_depth=options.doc_depth,
                chunk_depth=options.chunk_depth,
                ks=options.ks,
                n_docs_in_corpus=n_docs,
                n_chunks_in_corpus=n_chunks,
            )
            qres.append(qr)
            rows.append(
                {
                    "system": system,
                    "qid": rec.qid,
                    "category": rec.category,
                    "split": rec.split,
                    "cluster": clusters[rec.qid],
                    "metrics": qr.metrics,
                    "gold_doc_ranks": qr.gold_doc_ranks,
                    "gold_chunk_ranks": qr.gold_chunk_ranks,
                    "flags": {**qr.flags, **(res.flags if res is not None else {"missing": True})},
                    "rankings": {
                        "document": [[i, s] for i, s in (res.docs or [])][: options.doc_depth] if res else [],
                        "chunk": [[i, s] for i, s in (res.chunks or [])][: options.chunk_depth] if res else [],
                    },
                }
            )
        sys_summary: dict = {}
        for slice_name, qids in all_slices.items():
            sel = [q for q in qres if q.qid in qids]
            if not sel:
                continue
            agg = aggregate(sel, metric_ids)
            y_cl = [clusters[q.qid] for q in sel]
            overall = {}
            enough = len(set(y_cl)) >= 2
            cites_evidence = any(by_id[q.qid].evidence_chunks() for q in sel)
            for m in metric_ids:
                y = [q.metrics[m] for q in sel]
                level = MetricSpec.parse(m).level
                if level == "chunks" and not cites_evidence:
                    overall[m] = {"mean": None, "intervals": {}, "note": NO_EVIDENCE_NOTE}
                    continue
                if not levels[level]:
                    overall[m] = {
                        "mean": None,
                        "intervals": {},
                        "note": "not available: the system returned no "
                        + ("chunk" if level == "chunks" else "document")
                        + " rankings",
                    }
                    continue
                if enough:
                    ivs = all_intervals(y, y_cl, level=options.level, B=options.bootstrap_reps, seed=options.seed)
                    intervals = {k: v.to_dict() for k, v in ivs.items()}
                else:
                    intervals = {}
                overall[m] = {"mean": agg["overall"][m], "intervals": intervals}
                if not enough:
                    overall[m]["note"] = "no interval: the slice holds fewer than 2 clusters"
            sys_summary[slice_name] = {
                "levels": levels,
                "n_questions": len(sel),
                "n_clusters": len(set(y_cl)),
                "overall": overall,
                "per_category": agg["per_category"],
                "counts": {k: v for k, v in agg.items() if k not in ("overall", "per_category")},
                "flag_shares": _flag_shares([per_q.get(q.qid) for q in sel]),
            }
        summary["systems"][system] = sys_summary
    n_cl = len(set(clusters.values()))
    df = cr2_df(list(clusters.values()))
    clusters_info = {
        "mode": options.clustering,
        "n_clusters": n_cl,
        "df": df,
        "labels": clusters,
        "warning": (
            f"Satterthwaite df {df:.1f} < 4 ({n_cl} clusters): intervals are unreliable; "
            "add questions over other documents"
            if df is not None and df < 4
            else None
        ),
    }
    return rows, summary, clusters_info


def run(
    goldset_path: str | Path,
    corpus_dir: str | Path,
    systems: Sequence[str] | SystemPlan,
    *,
    workdir: str | Path = ".harness",
    runs_dir: str | Path = "runs",
    run_id: str | None = None,
    options: RunOptions | None = None,
    progress: bool = False,
    log: Callable[[str], None] | None = None,
) -> Path:
    """Run ``systems`` on every question of a gold set over a corpus and write a run record.

    Args:
        goldset_path: dataset folder or JSONL.
        corpus_dir: the corpus folder (read-only access suffices).
        systems: names such as ``bm25``, ``vector``, ``vector:binarize=centered``, ``rrf``, ``rrf:bm25+mine``,
            ``w0.5``, ``two-stage:rrf``, ``mine=py:plugins/mine.py:Mine`` (:mod:`harness.retrieve.registry`), or a
            :class:`~harness.retrieve.registry.SystemPlan` (a replay: :meth:`SystemPlan.from_record`).
        workdir: derived files (database, indexes, caches).
        runs_dir: where the run record goes.
        run_id: folder name (default: time-based); an existing id is refused.
        options: depths, ks, clustering, seed, system defaults.
        progress: show progress bars.
        log: a callable receiving one-line progress messages.

    Returns:
        The run record's folder.

    Raises:
        HarnessInputError: unusable input (see :func:`check_goldset_against_corpus`, ingest, unknown system).
    """
    options = options or RunOptions()
    plan = plan_systems(systems, defaults=options.system_defaults)
    say = log or (lambda _m: None)
    timings: dict[str, float] = {}
    run_id = run_id or default_run_id()
    if (Path(runs_dir) / run_id).exists():
        raise HarnessInputError(f"{Path(runs_dir) / run_id}: run id exists already; refusing to overwrite")
    t0 = time.perf_counter()
    goldset = load_goldset(goldset_path)
    split_qids = split_slice(goldset, options.split)
    chunker_id = goldset.manifest.chunker_version if goldset.manifest else "md-words-v1"
    if chunker_id not in CHUNKERS:
        raise HarnessInputError(
            f"{goldset.manifest_path}: field chunker_version: unknown chunker {chunker_id!r} "
            f"(known: {', '.join(sorted(CHUNKERS))}); this gold set cannot be run on a corpus here"
        )
    db_path, cmanifest, created = ingest(corpus_dir, workdir, chunker_id=chunker_id, progress=progress)
    timings["ingest"] = round(time.perf_counter() - t0, 3)
    say(
        f"corpus {cmanifest.corpus_id}: {cmanifest.n_documents} documents, {cmanifest.n_chunks} chunks"
        f" ({'ingested' if created else 'already ingested'} in {timings['ingest']:.1f} s)"
    )
    corpus = Corpus(db_path)
    try:
        check_goldset_against_corpus(goldset, corpus)
        sysset = SystemSet(plan, corpus, Path(workdir), progress=progress, log=say)
        queries = [r.question for r in goldset.records]
        qids = [r.qid for r in goldset.records]
        results = sysset.search_all(queries, qids, doc_depth=options.doc_depth, chunk_depth=options.chunk_depth)
        timings.update(sysset.timings)
        t1 = time.perf_counter()
        rows, summary, clusters_info = score_results(
            goldset,
            results,
            options,
            n_docs=cmanifest.n_documents,
            n_chunks=cmanifest.n_chunks,
            slices={**sysset.slices(goldset), **split_qids},
        )
        timings["metrics_and_intervals"] = round(time.perf_counter() - t1, 3)
        return _write_record(
            runs_dir,
            run_id,
            goldset,
            results,
            rows,
            summary,
            clusters_info,
            options,
            kind="run",
            corpus={**cmanifest.to_dict(), "db": str(db_path)},
            system_configs=sysset.configs(),
            extra={
                "system_options": plan.record(),
                "coverage": sysset.coverage_info(goldset),
                "timings_s": timings,
                "index_bytes": sysset.index_bytes(),
                **_split_extra(options),
            },
        )
    finally:
        corpus.close()


def _flag_shares(results: Sequence[QueryResult | None]) -> dict[str, float]:
    """Share of questions carrying each retrieval flag (e.g. ``chunk_tie_at_boundary``: the chunk ranking's cut-off
    fell inside a run of equal scores and was resolved by id; ``empty_query``; ``knn_fallback``)."""
    n = len(results)
    counts: dict[str, int] = {}
    for r in results:
        for k, v in ((r.flags if r is not None else {"missing": True}) or {}).items():
            if v:
                counts[k] = counts.get(k, 0) + 1
    return {k: c / n for k, c in sorted(counts.items())} if n else {}


def _goldset_info(goldset: GoldSet) -> dict:
    man = goldset.manifest
    return {
        "name": goldset.name,
        "version": goldset.version,
        "sha256": goldset.sha256,
        "path": str(goldset.records_path),
        "n_questions": len(goldset.records),
        "corpus_version": man.corpus_version if man else None,
        "chunker_version": man.chunker_version if man else None,
    }


def evaluate_rankings(
    goldset_path: str | Path,
    rankings_path: str | Path,
    *,
    runs_dir: str | Path = "runs",
    run_id: str | None = None,
    options: RunOptions | None = None,
    level: str | None = None,
) -> Path:
    """Score rankings produced by any other system and write a run record.

    Args:
        goldset_path: dataset folder or JSONL.
        rankings_path: a TREC run file (``qid Q0 id rank score tag``; the tag names the system; a chunk id holds
            ``#`` unless ``level`` says otherwise) or JSONL lines ``{"qid": .., "system": .., "docs": [[id, score],
            ..], "chunks": [[id, score], ..]}`` (either list may be absent).
        runs_dir, run_id, options: as for :func:`run`.
        level: force ``document`` or ``chunk`` for a TREC file.

    Returns:
        The run record's folder.

    Raises:
        HarnessInputError: unreadable or malformed rankings (``file:line: field``), unknown question ids.
    """
    options = options or RunOptions()
    run_id = run_id or default_run_id("eval")
    goldset = load_goldset(goldset_path)
    split_qids = split_slice(goldset, options.split)
    results = read_rankings(rankings_path, level=level, known_qids={r.qid for r in goldset.records})
    rows, summary, clusters_info = score_results(goldset, results, options, slices=split_qids)
    man = goldset.manifest
    return _write_record(
        runs_dir,
        run_id,
        goldset,
        results,
        rows,
        summary,
        clusters_info,
        options,
        kind="evaluate",
        corpus={
            "corpus_id": man.corpus_version if man else None,
            "corpus_hash": man.corpus_hash if man else None,
            "chunker_id": man.chunker_version if man else None,
        },
        system_configs={s: {"system": s, "source": "external rankings"} for s in results},
        extra={"rankings_file": str(rankings_path), **_split_extra(options)},
    )


def _write_record(
    runs_dir: str | Path,
    run_id: str,
    goldset: GoldSet,
    results: dict[str, dict[str, QueryResult]],
    rows: list[dict],
    summary: dict,
    clusters_info: dict,
    options: RunOptions,
    *,
    kind: str,
    corpus: dict,
    system_configs: dict,
    extra: dict,
) -> Path:
    """Assemble the manifest and TREC files shared by ``run`` and ``evaluate`` and write the record atomically."""
    manifest = {
        "schema_version": RUN_SCHEMA_VERSION,
        "run_id": run_id,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "kind": kind,
        "goldset": _goldset_info(goldset),
        "corpus": corpus,
        "systems": list(results),
        "system_configs": system_configs,
        "depths": {"document": options.doc_depth, "chunk": options.chunk_depth},
        "ks": list(options.ks),
        "seed": options.seed,
        "bootstrap_reps": options.bootstrap_reps,
        "level": options.level,
        "clusters": clusters_info,
        "harness_version": __version__,
        "git_commit": git_commit(),
        "libraries": library_versions(),
        **extra,
    }
    trec_runs = {}
    for system, per_q in results.items():
        trec_runs[(system, "document")] = trec_run_lines(
            system, "document", {q: r.docs or [] for q, r in per_q.items()}
        )
        trec_runs[(system, "chunk")] = trec_run_lines(system, "chunk", {q: r.chunks or [] for q, r in per_q.items()})
    qrels = {lv: trec_qrels_lines(goldset, lv) for lv in ("document", "chunk")}
    return write_run_record(
        runs_dir, run_id, manifest=manifest, per_question=rows, summary=summary, trec_runs=trec_runs, qrels=qrels
    )
