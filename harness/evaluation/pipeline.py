"""The ``run`` and ``evaluate`` verbs: retrieve for every gold question, score, add intervals, write a run record.

Data flows one way: corpus -> chunks -> indexes -> rankings -> fused rankings -> per-question metrics ->
intervals -> run record.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from harness.corpus import scan_cache
from harness.corpus.chunker import CHUNKERS
from harness.corpus.ingest import ingest, scan_corpus
from harness.corpus.store import Corpus
from harness.corpus.view import CorpusView
from harness.defaults import DEFAULT_CHUNK_DEPTH, DEFAULT_DOC_DEPTH, DEFAULT_KS
from harness.errors import HarnessInputError
from harness.evaluation.evidence import chunk_extents, resolve_evidence
from harness.evaluation.metric_choice import grow_depths
from harness.evaluation.pairing import check_split
from harness.evaluation.record_writer import write_record
from harness.evaluation.runs import (
    check_run_id,
    default_run_id,
    holding_run_id,
)
from harness.evaluation.scoring import NO_EVIDENCE_NOTE, OMITTED_NOTES, cr2_df, gold_clusters, score_results
from harness.evaluation.subset import Subset, restrict_goldset
from harness.evaluation.trec import KnownIds, read_rankings
from harness.goldset.io import GoldSet, load_goldset
from harness.memory import peak_rss_mib
from harness.metrics import ChunkExtent
from harness.progress import stage
from harness.retrieve.registry import SystemPlan, SystemSet, plan_systems
from harness.validate.scoring import check_before_scoring, scoring_view

__all__ = [
    "NO_EVIDENCE_NOTE",
    "OMITTED_NOTES",
    "RunOptions",
    "cr2_df",
    "evaluate_rankings",
    "run",
    "score_results",
    "split_slice",
]
"""``score_results``, ``cr2_df`` and the two notes live in :mod:`harness.evaluation.scoring` (re-exported here)."""


@dataclass
class RunOptions:
    """Options of a run (recorded in the manifest).

    Attributes:
        doc_depth, chunk_depth: ranking depths (documents 50, chunks 200).
        ks: the cut-offs of the @k metrics.
        clustering: question clustering (``components``, ``first-document``, ``none``); ``None``: the gold set's
            design's (:func:`harness.evaluation.design.run_clustering`: ``none`` for ``independent``, else
            ``components``). An explicit value is recorded.
        seed, bootstrap_reps, level: of the intervals.
        system_defaults: ``{kind: typed options}``, the defaults of every system of that kind in the run (e.g.
            ``{"vector": VectorOptions(binarize="centered")}``; a name's own options override them;
            :mod:`harness.retrieve.registry`). Each system's resolved options are recorded in the manifest's
            ``system_options``.
        split: ``all`` (default), ``dev`` or ``test``: the questions the tables show. Every question is still
            scored and recorded (so the record stays comparable); the summary gains the split as a slice and the
            manifest records ``split`` (:func:`split_slice`).
        chunker: the chunker to run under (``md-legal-v1``...); ``None``: the gold set's own. Under another
            chunker the evidence chunks are derived from the quotes (:mod:`harness.evaluation.evidence`).
        metrics: ids scored and summarised beside the summary's (``--metrics``: ``AP@100``, ``nDCG@20``,
            ``recall@50``...); a level's depth grows to the largest cut-off chosen
            (:mod:`harness.evaluation.metric_choice`); recorded in the manifest's ``metrics``.
        subset: the questions scored and recorded (``--qids``, ``--category``; :mod:`harness.evaluation.subset`);
            the manifest's ``subset`` names it.
        settings: ``{setting: where its value came from}`` of the project settings (:mod:`harness.config`: flag,
            environment, ``harness.toml``, ``[tool.harness]``, default), recorded as the manifest's ``settings``.
    """

    doc_depth: int = DEFAULT_DOC_DEPTH
    chunk_depth: int = DEFAULT_CHUNK_DEPTH
    ks: tuple[int, ...] = DEFAULT_KS
    clustering: str | None = None
    seed: int = 0
    bootstrap_reps: int = 5000
    level: float = 0.95
    system_defaults: Mapping[str, BaseModel] = field(default_factory=dict)
    split: str = "all"
    chunker: str | None = None
    metrics: tuple[str, ...] = ()
    subset: Subset = field(default_factory=Subset)
    settings: Mapping[str, str] = field(default_factory=dict)


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


@holding_run_id("run")
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
    overwrite: bool = False,
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
        run_id: folder name (default: time-based); an existing id is refused unless ``overwrite``.
        options: depths, ks, clustering, seed, system defaults.
        progress: show progress bars.
        log: a callable receiving one-line progress messages.
        overwrite: replace an existing record of that id, only one harness wrote (:func:`check_run_id`).

    Returns:
        The run record's folder.

    Raises:
        HarnessInputError: unusable input: a gold set that fails the checks before scoring (records hash, corpus
            identity, corpus rules V001-V005 on the ingested chunks, structural rules:
            :func:`harness.validate.scoring.check_before_scoring`), ingest errors, an unknown system; the run id
            exists (:func:`check_run_id`).
    """
    say = log or (lambda _m: None)
    options = grow_depths(options or RunOptions(), say)
    plan = plan_systems(systems, defaults=options.system_defaults)
    timings: dict[str, float] = {}
    peak: dict[str, float] = {}
    run_id = default_run_id() if run_id is None else run_id
    check_run_id(runs_dir, run_id, overwrite=overwrite)
    t0 = time.perf_counter()
    goldset = load_goldset(goldset_path)
    restrict_goldset(goldset, options.subset)  # refuse bad --qids / --category before any work
    split_qids = split_slice(goldset, options.split)
    own_chunker = goldset.manifest.chunker_version if goldset.manifest else "md-words-v1"
    if own_chunker not in CHUNKERS:
        raise HarnessInputError(
            f"{goldset.manifest_path}: field chunker_version: unknown chunker {own_chunker!r} "
            f"(known: {', '.join(sorted(CHUNKERS))}); this gold set cannot be run on a corpus here"
        )
    chunker_id = options.chunker or own_chunker
    if chunker_id not in CHUNKERS:
        raise HarnessInputError(f"--chunker: unknown chunker {chunker_id!r} (known: {', '.join(sorted(CHUNKERS))})")
    db_path, cmanifest, created = ingest(corpus_dir, workdir, chunker_id=chunker_id, progress=progress)
    timings["ingest"] = round(time.perf_counter() - t0, 3)
    peak["ingest"] = peak_rss_mib()
    say(
        f"corpus {cmanifest.corpus_id}: {cmanifest.n_documents} documents, {cmanifest.n_chunks} chunks"
        f" ({'ingested' if created else 'already ingested'}; {timings['ingest']:.1f} s to load the gold set and "
        f"{'ingest' if created else 'check'} the corpus: the record's timings_s.ingest)"
    )
    corpus = Corpus(db_path)
    try:
        if chunker_id == own_chunker:
            check_before_scoring(goldset, CorpusView.from_database(corpus))
        else:  # the gold set's chunk ids are its own chunker's: its rules are checked on that chunking
            where = str(goldset.manifest_path or goldset.records_path)
            with scoring_view(corpus_dir, own_chunker, workdir, where=where) as view:
                check_before_scoring(goldset, view)
        t_ev = time.perf_counter()
        source = scan_corpus(corpus_dir, stat_cache=scan_cache.cache_path(workdir, corpus_dir))  # no re-read
        evidence = resolve_evidence(goldset, source, chunker_id, workdir=workdir)
        if chunker_id != own_chunker:
            goldset = dataclasses.replace(goldset, records=evidence.records(goldset))
        extents = chunk_extents(corpus)
        timings["evidence"] = round(time.perf_counter() - t_ev, 3)
        peak["evidence"] = peak_rss_mib()
        labels = gold_clusters(goldset, options.clustering)  # the whole set's: a subset is a domain
        goldset, subset_info = restrict_goldset(goldset, options.subset)
        split_qids = {k: v & {r.qid for r in goldset.records} for k, v in split_qids.items()}
        sysset = SystemSet(plan, corpus, Path(workdir), progress=progress, log=say)
        queries = [r.question for r in goldset.records]
        qids = [r.qid for r in goldset.records]
        results = sysset.search_all(queries, qids, doc_depth=options.doc_depth, chunk_depth=options.chunk_depth)
        per_query_ms = {k.removesuffix("_ms_per_query"): v for k, v in sysset.timings.items() if "_ms_" in k}
        timings.update({k: v for k, v in sysset.timings.items() if "_ms_" not in k})
        peak.update(sysset.peak_rss_mib)  # after each system's index build and search
        peak["search"] = peak_rss_mib()
        t1 = time.perf_counter()
        with stage("metrics and intervals", enabled=progress):
            rows, summary, clusters_info = score_results(
                goldset,
                results,
                options,
                n_docs=cmanifest.n_documents,
                n_chunks=cmanifest.n_chunks,
                slices={**sysset.slices(goldset), **split_qids},
                evidence=evidence,
                extents=extents,
                clusters=labels,
            )
        timings["metrics_and_intervals"] = round(time.perf_counter() - t1, 3)
        peak["metrics_and_intervals"] = peak_rss_mib()
        if sysset.warnings:  # a plugin's unknown ids (issue 26 item 9)
            summary = summary.model_copy(update={"warnings": [*summary.warnings, *sysset.warnings]})
        say(
            f"metrics and intervals: {timings['metrics_and_intervals']:.1f} s (the record's "
            "timings_s.metrics_and_intervals)"
        )
        return write_record(
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
                "analyzers": sysset.analyzer_choices(),
                "coverage": sysset.coverage_info(goldset),
                "timings_s": timings,
                "per_query_ms": per_query_ms,
                "peak_rss_mib": peak,
                "index_bytes": sysset.index_bytes(),
                "evidence": evidence.info(),
                **_split_extra(options),
                **_choice_extra(options, subset_info),
            },
            overwrite=overwrite,
        )
    finally:
        corpus.close()


@holding_run_id("eval")
def evaluate_rankings(
    goldset_path: str | Path,
    rankings_path: str | Path,
    *,
    runs_dir: str | Path = "runs",
    run_id: str | None = None,
    options: RunOptions | None = None,
    level: str | None = None,
    corpus_dir: str | Path | None = None,
    workdir: str | Path = ".harness",
    log: Callable[[str], None] | None = None,
    overwrite: bool = False,
    progress: bool = False,
) -> Path:
    """Score rankings produced by any other system and write a run record.

    Args:
        goldset_path: dataset folder or JSONL.
        rankings_path: a TREC run file (``qid Q0 id rank score tag``; the tag names the system; a chunk id holds
            ``#`` unless ``level`` says otherwise) or JSONL lines ``{"qid": .., "system": .., "docs": [[id, score],
            ..], "chunks": [[id, score], ..]}`` (either list may be absent).
        runs_dir, run_id, options, overwrite, progress: as for :func:`run`.
        level: force ``document`` or ``chunk`` for a TREC file.
        corpus_dir: optional: the corpus the rankings come from. The gold set is first checked as ``run`` checks it
            (corpus identity, gold document ids, corpus rules V001-V005, on the database ingested in ``workdir`` if
            there is one, else on the cited documents of the folder); then the corpus is ingested into ``workdir``
            under the gold set's chunker if need be, the ids are checked against every document and chunk it holds
            (ids it does not hold are warned about, with counts), depths are clamped to its size, and the budget
            metrics get their chunk word counts and offsets. Without it only the records hash and the structural
            rules are checked (``log`` gets one line naming what was skipped), ids are checked against the gold
            set's (:class:`~harness.evaluation.trec.KnownIds`) and the budget metrics are not applicable (mean
            ``None`` with a note).
        workdir: derived files of ``corpus_dir``.
        log: receives the line naming what was not checked.

    Returns:
        The run record's folder.

    Raises:
        HarnessInputError: unreadable or malformed rankings (``file:line: field``), a score that is not finite,
            unknown question ids, a file none of whose ids is known (:func:`~harness.evaluation.trec.
            read_rankings`); a gold set that fails the checks before scoring
            (:func:`harness.validate.scoring.check_before_scoring`); the run id exists (:func:`check_run_id`). The
            import's warnings (unknown ids, constant scores, duplicates, one level only) go to the summary's
            ``warnings``.
    """
    options = grow_depths(options or RunOptions(), log)
    run_id = default_run_id("eval") if run_id is None else run_id
    check_run_id(runs_dir, run_id, overwrite=overwrite)
    goldset = load_goldset(goldset_path)
    split_qids = split_slice(goldset, options.split)
    if corpus_dir is None:
        note = check_before_scoring(goldset).skipped_note()
        if note and log is not None:
            log(note)
    else:
        chunker_id = goldset.manifest.chunker_version if goldset.manifest else "md-words-v1"
        where = str(goldset.manifest_path or goldset.records_path)
        with scoring_view(corpus_dir, chunker_id, workdir, where=where) as view:
            check_before_scoring(goldset, view)
    man = goldset.manifest
    corpus_info: dict = {
        "corpus_id": man.corpus_version if man else None,
        "corpus_hash": man.corpus_hash if man else None,
        "chunker_id": man.chunker_version if man else None,
    }
    known, sizes = KnownIds.of_goldset(goldset), {}
    evidence, extents = None, None
    if corpus_dir is not None:
        known, corpus_info, extents = _corpus_ids(goldset, corpus_dir, workdir)
        sizes = {"n_docs": corpus_info["n_documents"], "n_chunks": corpus_info["n_chunks"]}
        evidence = resolve_evidence(goldset, scan_corpus(corpus_dir), corpus_info["chunker_id"], workdir=workdir)
    imported = read_rankings(rankings_path, level=level, known_qids={r.qid for r in goldset.records}, known_ids=known)
    labels = gold_clusters(goldset, options.clustering)  # the whole set's: a subset is a domain
    goldset, subset_info = restrict_goldset(goldset, options.subset)
    kept = {r.qid for r in goldset.records}
    results = {s: {q: r for q, r in per_q.items() if q in kept} for s, per_q in imported.results.items()}
    split_qids = {k: v & kept for k, v in split_qids.items()}
    with stage("metrics and intervals", enabled=progress):
        rows, summary, clusters_info = score_results(
            goldset, results, options, slices=split_qids, evidence=evidence, extents=extents, clusters=labels, **sizes
        )
    if imported.warnings:
        summary = summary.model_copy(update={"warnings": list(imported.warnings)})
    return write_record(
        runs_dir,
        run_id,
        goldset,
        results,
        rows,
        summary,
        clusters_info,
        options,
        kind="evaluate",
        corpus=corpus_info,
        system_configs={s: {"system": s, "source": "external rankings"} for s in results},
        extra={
            "rankings_file": str(rankings_path),
            **({"evidence": evidence.info()} if evidence is not None else {}),
            **_split_extra(options),
            **_choice_extra(options, subset_info),
        },
        overwrite=overwrite,
    )


def _choice_extra(options: RunOptions, subset_info: dict | None) -> dict:
    """The manifest's ``metrics`` (the ids chosen with ``--metrics``) and ``subset`` (``--qids``/``--category``)."""
    return {
        **({"metrics": list(options.metrics)} if options.metrics else {}),
        **({"subset": subset_info} if subset_info else {}),
    }


def _corpus_ids(
    goldset: GoldSet, corpus_dir: str | Path, workdir: str | Path
) -> tuple[KnownIds, dict, dict[str, ChunkExtent]]:
    """Every document and chunk id of ``corpus_dir`` (ingested with the gold set's chunker), its manifest and its
    chunk extents (:func:`~harness.evaluation.evidence.chunk_extents`; the gold set has been checked against the
    corpus before: :func:`harness.validate.scoring.check_before_scoring`)."""
    chunker_id = goldset.manifest.chunker_version if goldset.manifest else "md-words-v1"
    if chunker_id not in CHUNKERS:
        raise HarnessInputError(f"{goldset.manifest_path}: field chunker_version: unknown chunker {chunker_id!r}")
    db_path, cmanifest, _created = ingest(corpus_dir, workdir, chunker_id=chunker_id)
    corpus = Corpus(db_path)
    try:
        known = KnownIds(
            frozenset(corpus.documents()),
            frozenset(corpus.chunk_keys()[0]),
            f"corpus {cmanifest.corpus_id}",
            complete=True,
        )
        extents = chunk_extents(corpus)
    finally:
        corpus.close()
    return known, {**cmanifest.to_dict(), "db": str(db_path)}, extents
