"""Rule 5's summaries and the study runs of :mod:`harness.studies.known_item`: one known-item run
(:func:`run_known_item`), the same at several chunk sizes (:func:`run_chunk_size_sensitivity`), and a run followed
by the coverage study (:func:`run_study`); their output files; the paired comparison of two systems.

Files written (atomically, into ``out_dir``): ``outcomes.jsonl.gz`` (one record per system and query),
``per_document.jsonl`` (per system and document: ``n``, ``s``, ``rate``), ``summary.json`` (last; its field
``content_sha256`` records the other two files' sha256, verified by :mod:`harness.evaluation.known_item_folder`
when the folder is read back).
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from harness.errors import HarnessInputError
from harness.io import atomic_directory, atomic_write_json, check_output_location, read_jsonl, sha256_file
from harness.progress import progress_bar, stage
from harness.ranking import id_rank as rank_ids
from harness.studies.coverage import CoverageResult, design_diagnostics, run_coverage
from harness.studies.known_item.cache import load_outcomes, load_tokens, outcome_key, save_outcomes, save_tokens
from harness.studies.known_item.corpus import ChunkedCorpus, chunk_corpus
from harness.studies.known_item.scorers import ScorerInputs
from harness.studies.known_item.search import KnownItemOutcomes, known_item_search
from harness.studies.known_item.systems import FACES, StudySystems, plan_study_systems
from harness.studies.options import CoverageOptions, KnownItemOptions, split_fields

if TYPE_CHECKING:
    pass

__all__ = [
    "PUBLISHED",
    "KnownItemResult",
    "SensitivityResult",
    "StudyResult",
    "paired_comparison",
    "read_outcomes",
    "run_chunk_size_sensitivity",
    "run_known_item",
    "run_study",
]

HASHED_FILES = ("outcomes.jsonl.gz", "per_document.jsonl")
"""The files whose sha256 ``summary.json`` records (field ``content_sha256``); the same names as
:data:`harness.evaluation.known_item_folder.HASHED_FILES`, which verifies them."""

#: Figures of the published study (1,300 regulatory documents, 33,503 chunks of 100 words, 20-word queries, BM25).
PUBLISHED = {
    "documents": 1300,
    "chunks": 33503,
    "micro_hit1": 0.1846,
    "macro_hit1": 0.1596,
    "icc": 0.293,
    "lag1_autocorrelation": 0.17,
    "deff": 33.2,
}


def _per_doc(hit: np.ndarray, qdoc: np.ndarray, n_docs: int) -> tuple[np.ndarray, np.ndarray]:
    n = np.bincount(qdoc, minlength=n_docs)
    s = np.bincount(qdoc, weights=hit, minlength=n_docs).astype(np.int64)
    return n, s


def _group_rates(labels: list[str], n: np.ndarray, s: np.ndarray, *, min_docs: int = 0) -> dict:
    """Micro and macro rates per label over documents with n > 0; labels with < min_docs documents -> "other"."""
    present = n > 0
    cnt = Counter(lab for lab, p in zip(labels, present, strict=True) if p)
    out: dict[str, dict] = {}
    groups: dict[str, list[int]] = defaultdict(list)
    for i, (lab, p) in enumerate(zip(labels, present, strict=True)):
        if p:
            groups[lab if cnt[lab] >= min_docs else "other"].append(i)
    for lab in sorted(groups, key=lambda g: (-len(groups[g]), g)):
        ix = np.asarray(groups[lab])
        out[lab] = {
            "documents": int(ix.size),
            "queries": int(n[ix].sum()),
            "micro_hit1": float(s[ix].sum() / n[ix].sum()),
            "macro_hit1": float(np.mean(s[ix] / n[ix])),
        }
    return out


def paired_comparison(hit_a: np.ndarray, hit_b: np.ndarray, qdoc: np.ndarray, *, level: float = 0.95) -> dict:
    """Paired comparison of two systems on the same known-item queries (B - A).

    Args:
        hit_a, hit_b: shape (Q,), 0/1 outcomes of systems A and B on the same queries.
        qdoc: shape (Q,), document of each query (the clusters).
        level: confidence level.

    Returns:
        ``micro_diff`` with a CR2 interval (documents as clusters, Satterthwaite df;
        :func:`harness.stats.paired`), ``macro_diff`` with a t interval over per-document rate differences
        (:func:`harness.stats.cluster_t`), ``both_hit``/``only_a``/``only_b``/``neither`` query counts,
        ``share_queries_equal`` and ``share_documents_tied`` (documents whose two rates are equal).
    """
    from harness.stats import cluster_t, paired

    a = np.asarray(hit_a, dtype=np.float64)
    b = np.asarray(hit_b, dtype=np.float64)
    _, codes = np.unique(qdoc, return_inverse=True)
    g = int(codes.max()) + 1
    micro = paired(a, b, codes, method="cr2", level=level)
    macro = cluster_t(b - a, codes, level=level, clip=False)
    ra = np.bincount(codes, weights=a, minlength=g)
    rb = np.bincount(codes, weights=b, minlength=g)
    a1, b1 = a > 0, b > 0
    return {
        "queries": int(a.size),
        "documents": g,
        "micro_diff": float(micro.estimate),
        "micro_ci": [float(micro.lower), float(micro.upper)],
        "micro_se_cr2": float(micro.se),
        "micro_df": float(micro.df),
        "macro_diff": float(macro.estimate),
        "macro_ci": [float(macro.lower), float(macro.upper)],
        "macro_se": float(macro.se),
        "both_hit": int(np.count_nonzero(a1 & b1)),
        "only_a": int(np.count_nonzero(a1 & ~b1)),
        "only_b": int(np.count_nonzero(~a1 & b1)),
        "neither": int(np.count_nonzero(~a1 & ~b1)),
        "share_queries_equal": float(np.mean(a1 == b1)),
        "share_documents_tied": float(np.mean(ra == rb)),
        "level": level,
        "method": "CR2 (documents as clusters, Satterthwaite df) for micro; t over document differences for macro",
    }


def _system_summary(cc: ChunkedCorpus, o: KnownItemOutcomes) -> dict:
    qdoc = cc.chunk_doc[cc.query_chunks]
    n, s = _per_doc(o.hit, qdoc, len(cc.doc_ids))
    present = n > 0
    rates = s[present] / n[present]
    y_sorted_by_doc = o.hit  # queries are in (document, chunk) order already
    diag = design_diagnostics(
        n[present], s[present], y=y_sorted_by_doc, cluster=qdoc, position=cc.chunk_index[cc.query_chunks]
    )
    nq = int(o.hit.size)
    ranks = o.rank[o.rank > 0]
    return {
        "system": o.system,
        "queries": nq,
        "documents": int(present.sum()),
        "hits": int(o.hit.sum()),
        "micro_hit1": float(o.hit.mean()),
        "macro_hit1": float(rates.mean()),
        "mrr_first_same_doc": float(np.sum(1.0 / ranks) / nq) if nq else float("nan"),
        "share_same_doc_not_retrieved": float(np.mean(o.rank == 0)),
        "median_rank": float(np.median(ranks)) if ranks.size else None,
        "share_tie_top": float(o.tie.mean()),
        "share_tie_decided_hit": float(o.tie_decided_hit.mean()),
        "empty_queries": int(o.empty_query.sum()),
        "per_document": {
            "share_at_zero": float(np.mean(rates == 0)),
            "share_at_one": float(np.mean(rates == 1)),
            "quantiles": {str(q): float(np.quantile(rates, q)) for q in (0.1, 0.25, 0.5, 0.75, 0.9)},
        },
        "by_doc_type": _group_rates(cc.doc_types, n, s, min_docs=5),
        "by_collection": _group_rates(cc.collections, n, s),
        "diagnostics": diag,
        "search_seconds": round(o.seconds, 3),
        "build_seconds": round(o.build_seconds, 3),
        "queries_per_second": round(nq / o.seconds, 1) if o.seconds > 0 else None,
        "config": o.config,
    }


@dataclass
class KnownItemResult:
    """What :func:`run_known_item` produced.

    Attributes:
        out_dir: folder holding ``outcomes.jsonl.gz``, ``per_document.jsonl``, ``summary.json``.
        summary: the content of ``summary.json``.
        corpus: the :class:`ChunkedCorpus` (not serialised).
        outcomes: ``{system: KnownItemOutcomes}``.
    """

    out_dir: Path | None
    summary: dict
    corpus: ChunkedCorpus | None = None
    outcomes: dict[str, KnownItemOutcomes] = field(default_factory=dict)


def _outcome_lines(cc: ChunkedCorpus, o: KnownItemOutcomes) -> list[str]:
    lines = []
    qd = cc.chunk_doc[cc.query_chunks]
    for k, ci in enumerate(cc.query_chunks):
        di = int(qd[k])
        r = int(o.rank[k])
        rec = {
            "doc_id": cc.doc_ids[di],
            "doc_type": cc.doc_types[di],
            "collection": cc.collections[di],
            "chunk_index": int(cc.chunk_index[ci]),
            "n_words": int(cc.chunk_words[ci]),
            "system": o.system,
            "hit": int(o.hit[k]),
            "rank": r if r > 0 else None,
            "tie": bool(o.tie[k]),
            "tie_decided_hit": bool(o.tie_decided_hit[k]),
            "empty_query": bool(o.empty_query[k]),
        }
        lines.append(json.dumps(rec, ensure_ascii=False, separators=(",", ":")))
    return lines


def _run_system(
    name: str, cc: ChunkedCorpus, systems: StudySystems, id_rank: np.ndarray, *, workers: int, batch_size: int
) -> KnownItemOutcomes:
    """Build system ``name`` (its face, :mod:`.systems`) and search every query of ``cc`` with it."""
    progress = systems.inputs.progress
    with stage(f"known-item {name}: index build", enabled=progress):
        scorer, config, build = systems.build(name)
    empty = scorer.empty_queries()
    if not getattr(scorer, "fork_safe", True):
        workers = 1
    t1 = time.perf_counter()
    with progress_bar(f"known-item {name}", scorer.n_queries, enabled=progress) as cb:
        hit, rank, tie, tie_dec, top = known_item_search(
            scorer, cc.query_chunks, cc.chunk_doc, id_rank, batch_size=batch_size, workers=workers, progress=cb
        )
    secs = time.perf_counter() - t1
    return KnownItemOutcomes(name, hit, rank, tie, tie_dec, empty, top, secs, build, config)


def run_known_item(
    corpus_dir: str | Path,
    out_dir: str | Path | None,
    options: KnownItemOptions | None = None,
    **fields: Any,
) -> KnownItemResult:
    """Run the known-item study on a corpus folder and write its files (``harness known-item``).

    Args:
        corpus_dir: corpus folder.
        out_dir: output folder (written atomically as a whole); ``None`` writes nothing.
        options: the study's options (:class:`~harness.studies.options.KnownItemOptions`: chunking, queries,
            systems, workers, vector defaults, work directory, depth); ``fields`` replace some of them
            (``systems="bm25,tfidf"``). ``systems`` are names of the registry (:mod:`harness.retrieve.registry`, as
            in ``harness run``: ``bm25``, ``tfidf``, ``vector:rescore=0``, ``rrf:bm25+tfidf``,
            ``mine=py:MODULE:ATTR``); the first is system A of the paired comparisons. Each is scored through its
            face (:mod:`.systems`). With ``chunker``, ``chunk_words`` and ``min_tail_words`` are unused (recorded as
            ``None``). ``workdir``: the embedding cache the ``vector`` system reads and extends (``None``: embed in
            memory).
            Also ``cache``: with ``workdir``, read and write each system's outcomes in the content-addressed cache
            (:mod:`.cache`: an unchanged system on an unchanged corpus, chunking and query words is not searched
            again; not with ``sample``); ``plugin_timeout``: seconds a ``py:`` retriever may take per block.

    Returns:
        A :class:`KnownItemResult` (render it with ``rich.print``).

    Raises:
        HarnessInputError: unreadable corpus, unknown, unavailable or refused system (two-stage), ``out_dir`` exists
            without ``overwrite``, ``chunk_depth < 1``.
        TypeError: a keyword that is no option.
    """
    o = KnownItemOptions.of(options, **fields)
    chunk_words, query_words, min_tail_words, chunker = o.chunk_words, o.query_words, o.min_tail_words, o.chunker
    systems, workers, batch_size, vector_model = o.systems, o.workers, o.batch_size, o.vector_model
    workdir, overwrite, progress, chunk_depth = o.workdir, o.overwrite, o.progress, o.chunk_depth
    sample, design, seed = o.sample, o.design, o.seed
    plan = plan_study_systems(systems, vector_model)  # an unknown name is refused before any work
    systems = list(plan.names)
    for name, node in plan.nodes.items():
        if getattr(node.options, "analyzer", None) is not None:
            raise HarnessInputError(
                f"--systems: {name!r}: the known-item study analyses its chunks once for all its systems; give the "
                "analyzer to the whole study with --analyzer"
            )
    if chunk_depth < 1:
        raise HarnessInputError(f"--chunk-depth: {chunk_depth} is below 1")
    if out_dir is not None:  # refuse before any work: an output over an input, or a folder harness did not write
        check_output_location(out_dir, (corpus_dir, workdir))
        if Path(out_dir).exists() and not overwrite:
            raise HarnessInputError(f"--out {out_dir}: already exists; refusing to overwrite")
    t0 = time.perf_counter()
    with stage(f"known-item: re-chunk the corpus ({chunker or f'{chunk_words} words'})", enabled=progress):
        cc = chunk_corpus(
            corpus_dir, chunk_words=chunk_words, query_words=query_words, min_tail_words=min_tail_words, chunker=chunker
        )
    t_chunk = time.perf_counter() - t0
    drawn = None
    if sample is not None:
        from harness.studies.known_item.sample import bound_draws, draw_documents, restrict

        bound_draws(cc, sample, design, field="--sample", per_document=True)
        drawn = draw_documents(cc, sample, design, seed)
        cc = restrict(cc, drawn)
    id_rank = rank_ids(cc.chunk_ids)
    from harness.retrieve.analyzer import ANALYZERS, choose_analyzer, language_mismatch

    choice = choose_analyzer(o.analyzer, cc.doc_languages, where="--analyzer")
    analyzer = ANALYZERS[choice.analyzer_id]()
    mismatch = language_mismatch(cc.texts[:: max(1, len(cc.texts) // 2000)][:2000], choice.analyzer_id)
    use_cache = o.cache and workdir is not None and drawn is None  # a sample's outcomes are not the corpus's
    keys = {n: outcome_key(cc, query_words, analyzer.config(), plan, n, chunk_depth, FACES) for n in systems}
    searched = {
        plan.key(n): load_outcomes(workdir, keys[n], n, int(cc.query_chunks.size)) for n in systems if use_cache
    }
    searched = {k: v for k, v in searched.items() if v is not None}  # identity -> outcomes (two names search once)
    t1, t_tok, faces = time.perf_counter(), 0.0, None
    if any(plan.key(n) not in searched for n in systems):  # tokenise and build only when a system is searched
        with stage(f"known-item: tokenise {len(cc.texts)} chunks and their queries", enabled=progress):
            got = load_tokens(workdir, cc, query_words, analyzer.config()) if use_cache else None
            tokens, qtokens = got or (analyzer.tokenize_many(cc.texts), analyzer.tokenize_many(cc.query_texts))
            if use_cache and got is None:
                save_tokens(workdir, cc, query_words, analyzer.config(), tokens, qtokens)
        t_tok = time.perf_counter() - t1
        inputs = ScorerInputs(
            chunk_texts=cc.texts,
            query_texts=cc.query_texts,
            chunk_tokens=tokens,
            query_tokens=qtokens,
            chunker_id=cc.chunker_id,
            workdir=Path(workdir) if workdir is not None else None,
            progress=progress,
            corpus_dir=Path(corpus_dir),
        )
        faces = StudySystems(
            plan, inputs, cc.chunk_ids, cc.query_chunks, id_rank, depth=chunk_depth, timeout=o.plugin_timeout
        )
    outcomes: dict[str, KnownItemOutcomes] = {}
    for name in systems:
        key = plan.key(name)
        if key not in searched:
            searched[key] = _run_system(name, cc, faces, id_rank, workers=workers, batch_size=batch_size)
            if use_cache:
                save_outcomes(workdir, keys[name], searched[key])
        outcomes[name] = dataclasses.replace(searched[key], system=name)
    qdoc = cc.chunk_doc[cc.query_chunks]
    n_docs_q = int(np.unique(qdoc).size)
    summary = {
        "corpus_id": cc.corpus_id,
        "corpus_hash": cc.corpus_hash,
        "corpus_dir": str(Path(corpus_dir).resolve()),
        "config": {
            "chunker_id": cc.chunker_id,
            "chunker_params": cc.chunker_params,
            "chunk_words": chunk_words if chunker is None else None,
            "query_words": query_words,
            "analyzer": analyzer.config(),
            "analyzer_choice": choice.record(),
            "systems": systems,
            "system_options": plan.record(),
            "chunk_depth": chunk_depth,
            "workers": workers,
            "batch_size": batch_size,
            "tie_rule": "score descending, then chunk id ascending; positive scores only; query chunk excluded",
        },
        "counts": {
            "documents_in_corpus": len(cc.doc_ids),
            "chunks": cc.n_chunks,
            "queries": int(cc.query_chunks.size),
            "documents": n_docs_q,
            "skipped_short": cc.skipped_short,
            "excluded_single_chunk_docs": cc.excluded_single_chunk_docs,
            "excluded_single_chunk_chunks": cc.excluded_single_chunk_chunks,
        },
        "timing": {"chunk_seconds": round(t_chunk, 3), "tokenize_seconds": round(t_tok, 3)},
        "systems": {name: _system_summary(cc, o) for name, o in outcomes.items()},
        "paired": {},
        "published": PUBLISHED,
    }
    first = systems[0]
    for name in systems[1:]:
        summary["paired"][f"{first} vs {name}"] = paired_comparison(outcomes[first].hit, outcomes[name].hit, qdoc)
    if drawn is not None:
        from harness.studies.known_item.sample import sample_summary

        summary["sample"] = sample_summary(cc, drawn, outcomes)
    summary["timing"]["total_seconds"] = round(time.perf_counter() - t0, 3)
    summary["analyzer_notes"] = [choice.note] if choice.note else []
    summary["warnings"] = [mismatch] if mismatch else []  # the language check (harness.retrieve.analyzer)
    result = KnownItemResult(
        out_dir=Path(out_dir) if out_dir is not None else None, summary=summary, corpus=cc, outcomes=outcomes
    )
    if out_dir is not None:
        _write_outputs(Path(out_dir), cc, outcomes, summary, overwrite=overwrite, inputs=(corpus_dir, workdir))
    return result


def _write_outputs(
    out: Path,
    cc: ChunkedCorpus,
    outcomes: dict[str, KnownItemOutcomes],
    summary: dict,
    *,
    overwrite: bool,
    inputs: Sequence,
) -> None:
    qdoc = cc.chunk_doc[cc.query_chunks]
    with atomic_directory(out, overwrite=overwrite, inputs=inputs, kind="known-item") as tmp:
        buf = io.BytesIO()
        with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz:
            for o in outcomes.values():
                gz.write(("\n".join(_outcome_lines(cc, o)) + "\n").encode("utf-8"))
        (tmp / "outcomes.jsonl.gz").write_bytes(buf.getvalue())
        lines = []
        for name, o in outcomes.items():
            n, s = _per_doc(o.hit, qdoc, len(cc.doc_ids))
            for di in np.flatnonzero(n > 0):
                lines.append(
                    json.dumps(
                        {
                            "system": name,
                            "doc_id": cc.doc_ids[di],
                            "doc_type": cc.doc_types[di],
                            "collection": cc.collections[di],
                            "n": int(n[di]),
                            "s": int(s[di]),
                            "rate": float(s[di] / n[di]),
                        },
                        ensure_ascii=False,
                    )
                )
        (tmp / "per_document.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        # verified when read back (harness.evaluation.known_item_folder, HASHED_FILES)
        summary["content_sha256"] = {name: sha256_file(tmp / name) for name in HASHED_FILES}
        atomic_write_json(tmp / "summary.json", summary)


def read_outcomes(path: str | Path, *, system: str | None = None) -> list[dict]:
    """Read ``outcomes.jsonl.gz`` (optionally one system's records).

    Raises:
        HarnessInputError: missing or malformed file.
    """
    return [rec for _, rec in read_jsonl(path) if system is None or rec.get("system") == system]


# --------------------------------------------------------------------------------------------------------------
# Chunk-size sensitivity
# --------------------------------------------------------------------------------------------------------------


@dataclass
class SensitivityResult:
    """The same known-item study at several chunk sizes.

    Attributes:
        out_dir: parent folder (one sub-folder ``words-<n>`` per size, plus ``sensitivity.json``).
        rows: one dict per size (micro, macro, ICC, DEFF, lag-1, queries, ...).
        runs: ``{chunk_words: KnownItemResult}``.
    """

    out_dir: Path | None
    rows: list[dict]
    runs: dict[int, KnownItemResult] = field(default_factory=dict)


def run_chunk_size_sensitivity(
    corpus_dir: str | Path,
    out_dir: str | Path | None,
    options: KnownItemOptions | None = None,
    *,
    sizes: Sequence[int] = (50, 100, 400),
    **fields: Any,
) -> SensitivityResult:
    """Run :func:`run_known_item` at several chunk sizes (``md-words-v1`` windows).

    Args:
        corpus_dir: corpus folder.
        out_dir: parent output folder; each size goes to ``out_dir/words-<n>``; ``None`` writes nothing.
        options, fields: as in :func:`run_known_item` (``chunk_words`` is each of ``sizes``).
        sizes: chunk sizes in words.

    Returns:
        A :class:`SensitivityResult`.

    Raises:
        HarnessInputError: a ``chunker`` given (the sizes are windows of ``md-words-v1``); see
            :func:`run_known_item`.
    """
    o = KnownItemOptions.of(options, **fields)
    if o.chunker is not None:
        raise HarnessInputError("--chunker: runs one chunking; give it without a list of --chunk-words")
    if out_dir is not None:
        check_output_location(out_dir, (corpus_dir, o.workdir))
    rows = []
    runs = {}
    for size in sizes:
        sub = None if out_dir is None else Path(out_dir) / f"words-{size}"
        res = run_known_item(corpus_dir, sub, o, chunk_words=size)
        runs[size] = res
        for name, s in res.summary["systems"].items():
            d = s["diagnostics"]
            rows.append(
                {
                    "chunk_words": size,
                    "system": name,
                    "queries": s["queries"],
                    "documents": s["documents"],
                    "micro_hit1": s["micro_hit1"],
                    "macro_hit1": s["macro_hit1"],
                    "icc": d["icc"],
                    "deff": d["deff"],
                    "lag1_autocorrelation": d["lag1_autocorrelation"],
                    "queries_per_second": s["queries_per_second"],
                    "skipped_short": res.summary["counts"]["skipped_short"],
                }
            )
    if out_dir is not None:
        atomic_write_json(Path(out_dir) / "sensitivity.json", {"rows": rows, "published": PUBLISHED})
    return SensitivityResult(Path(out_dir) if out_dir is not None else None, rows, runs)


@dataclass
class StudyResult:
    """The whole study on one corpus: the known-item run, then the coverage study on its first system.

    Attributes:
        known_item: the :class:`KnownItemResult` (files in ``out_dir``).
        coverage: the :class:`harness.studies.coverage.CoverageResult` (``coverage.json``, ``coverage.csv`` and plots
            in the same folder).
    """

    known_item: KnownItemResult
    coverage: CoverageResult


def run_study(
    corpus_dir: str | Path,
    out_dir: str | Path,
    options: KnownItemOptions | None = None,
    coverage: CoverageOptions | None = None,
    **fields: Any,
) -> StudyResult:
    """Known-item run plus coverage study in one call (the issue's "full study from one command").

    Args:
        corpus_dir, out_dir: as in :func:`run_known_item`.
        options: the known-item options (default: :class:`KnownItemOptions` with systems ``bm25, tfidf``).
        coverage: the coverage options (:func:`harness.studies.coverage.run_coverage`; population = the first
            system's outcomes; default threads = the known-item ``workers``, progress likewise).
        fields: fields of either options class, replacing theirs (``systems=..., reps=...``).

    Returns:
        A :class:`StudyResult`.

    Raises:
        TypeError: a keyword that is no option of either class.
    """
    ki_fields, cov_fields = split_fields(fields, KnownItemOptions, CoverageOptions)
    if options is None:
        ki_fields.setdefault("systems", ("bm25", "tfidf"))
    o = KnownItemOptions.of(options, **ki_fields)
    if coverage is None:
        cov_fields = {"threads": o.workers, "progress": o.progress, **cov_fields}
    ki = run_known_item(corpus_dir, out_dir, o)
    first = next(iter(ki.summary["systems"]))
    cov = run_coverage(out_dir, CoverageOptions.of(coverage, **cov_fields), system=first)
    return StudyResult(ki, cov)
