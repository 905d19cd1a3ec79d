"""Writing a run record from scored results: the manifest and TREC files shared by ``run`` and ``evaluate``
(:mod:`harness.evaluation.pipeline`), written atomically by :func:`harness.evaluation.runs.write_run_record`."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from harness import __version__
from harness.evaluation.design import design_info
from harness.evaluation.record import ClusterInfo, QuestionRow, Summary
from harness.evaluation.runs import RUN_SCHEMA_VERSION, git_commit, library_versions, write_run_record
from harness.evaluation.trec import trec_qrels_lines, trec_run_lines
from harness.goldset.io import GoldSet
from harness.retrieve.base import QueryResult

__all__ = ["goldset_info", "write_record"]


def goldset_info(goldset: GoldSet, clustering: str | None = None) -> dict:
    """The manifest's ``goldset`` section: name, version, sha256, path, size, the versions it was built for and its
    sampling design (:func:`harness.evaluation.design.design_info`; ``clustering``: an explicit ``--clustering``)."""
    man = goldset.manifest
    return {
        "name": goldset.name,
        "version": goldset.version,
        "sha256": goldset.sha256,
        "path": str(goldset.records_path),
        "n_questions": len(goldset.records),
        "corpus_version": man.corpus_version if man else None,
        "chunker_version": man.chunker_version if man else None,
        **design_info(goldset, clustering),  # the declared design (a PPS plan's draws; an explicit clustering)
    }


def write_record(
    runs_dir: str | Path,
    run_id: str,
    goldset: GoldSet,
    results: dict[str, dict[str, QueryResult]],
    rows: list[QuestionRow],
    summary: Summary,
    clusters_info: ClusterInfo,
    options: Any,
    *,
    kind: str,
    corpus: dict,
    system_configs: dict,
    extra: dict,
    overwrite: bool = False,
) -> Path:
    """Assemble the manifest and TREC files shared by ``run`` and ``evaluate`` and write the record atomically
    (``rows``, ``summary`` and ``clusters_info`` as :func:`harness.evaluation.scoring.score_results` builds them)."""
    manifest = {
        "schema_version": RUN_SCHEMA_VERSION,
        "run_id": run_id,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "kind": kind,
        "goldset": goldset_info(goldset, getattr(options, "clustering", None)),
        "corpus": corpus,
        "systems": list(results),
        "system_configs": system_configs,
        "depths": {"document": options.doc_depth, "chunk": options.chunk_depth},
        "ks": list(options.ks),
        "seed": options.seed,
        "bootstrap_reps": options.bootstrap_reps,
        "level": options.level,
        "clusters": clusters_info.model_dump(),
        "harness_version": __version__,
        "git_commit": git_commit(),
        "libraries": library_versions(),
        **({"settings": dict(options.settings)} if getattr(options, "settings", None) else {}),
        **extra,
    }
    trec_runs = {}
    for system, per_q in results.items():
        trec_runs[(system, "document")] = trec_run_lines(
            system, "document", {q: r.docs or [] for q, r in per_q.items()}, options.doc_depth
        )
        trec_runs[(system, "chunk")] = trec_run_lines(
            system, "chunk", {q: r.chunks or [] for q, r in per_q.items()}, options.chunk_depth
        )
    qrels = {lv: trec_qrels_lines(goldset, lv) for lv in ("document", "chunk")}
    return write_run_record(
        runs_dir,
        run_id,
        manifest=manifest,
        per_question=rows,
        summary=summary,
        trec_runs=trec_runs,
        qrels=qrels,
        overwrite=overwrite,
    )
