"""Verbs that score systems: run and evaluate."""

from __future__ import annotations

from pathlib import Path

import typer

from harness.cli._checks import at_least, depth
from harness.cli._common import (
    FORMAT,
    JSON_ALIAS,
    OUT,
    RUNS_DIR,
    WORKDIR,
    app,
    check_paths,
    detail,
    emit,
    is_quiet,
    notice,
    output_format,
    plugin_files,
    settings_sources,
)
from harness.defaults import DEFAULT_CHUNK_DEPTH, DEFAULT_DOC_DEPTH, DEFAULT_KS
from harness.errors import HarnessInputError

OVERWRITE = typer.Option(
    False, "--overwrite", help="Replace an existing run record of --run-id (only a folder harness wrote)."
)
SPLIT = typer.Option(
    "all", "--split", help="Questions the tables show: all, dev or test (every question is still scored and recorded)."
)
METRICS = typer.Option(
    None,
    "--metrics",
    help="Metrics scored beside the summary's, comma-separated: the harness's ids (recall@50, ndcg@20, ...) or "
    "ir_measures names with trec_eval semantics (RR, RR@10, AP, AP@100, nDCG@20, P@5, R@100, Success@10, Judged@10; "
    "chunk level: chunk.AP@100, ...); depths grow to the largest k (docs/metrics.md).",
)
QIDS = typer.Option(
    None, "--qids", help="Score and record only these question ids (comma-separated, repeatable; unknown ids: exit 2)."
)
CATEGORY = typer.Option(
    None, "--category", help="Score and record only these categories (comma-separated, repeatable; with --qids: both)."
)


def _timing_lines(manifest) -> list[str]:
    """``--verbose`` lines of a run's timings, each with its unit: ``timings_s.*`` in seconds, ``per_query_ms.*`` in
    milliseconds (older records kept ``<system>_ms_per_query`` in ``timings_s``: milliseconds too), ``peak_rss_mib.*``
    in MiB."""
    extra = manifest.model_extra or {}
    out = [
        f"timings_s.{k}: {v:g} {'ms' if k.endswith('_ms_per_query') else 's'}" for k, v in manifest.timings_s.items()
    ]
    out += [f"per_query_ms.{k}: {v:g} ms" for k, v in (extra.get("per_query_ms") or {}).items()]
    out += [f"peak_rss_mib.{k}: {v:g} MiB (process peak so far)" for k, v in (extra.get("peak_rss_mib") or {}).items()]
    return out


ANALYZER_HELP = (
    "Analyzer of every bm25 and tfidf system of the run: an ISO 639-1 code (en, pt, es, fr, de, it; another code: "
    "neutral-word-v1) or an analyzer id (en-snowball-v1, es-snowball-fold-v1, neutral-word-v1, ...); default: the "
    "language the corpus's metadata.jsonl declares, else es-snowball-fold-v1 (bm25:analyzer=X for one system)."
)


def analyzer_defaults(analyzer: str | None) -> dict:
    """``--analyzer`` as the ``bm25`` and ``tfidf`` defaults of a run (``{}`` when not given).

    Raises:
        HarnessInputError: an unknown analyzer (one line naming ``--analyzer``).
    """
    if analyzer is None:
        return {}
    from harness.retrieve.analyzer import analyzer_id_of
    from harness.retrieve.bm25 import BM25Options
    from harness.retrieve.tfidf import TfidfOptions

    aid = analyzer_id_of(analyzer, where="--analyzer")
    return {"bm25": BM25Options(analyzer=aid), "tfidf": TfidfOptions(analyzer=aid)}


def vector_options(model, index_fraction, until, backend, binarize, rescore=None):
    """The ``vector`` options the CLI flags give (``--model``, ``--index-fraction``, ``--until``,
    ``--vector-backend``, ``--binarize``, ``--rescore``), as a :class:`~harness.retrieve.vector.VectorOptions` in
    which only the flags given are set (a flag left out takes each system's own default: ``vector:model=e5-small``
    keeps e5's centred bits unless ``--binarize`` is given).

    Raises:
        HarnessInputError: a value out of range, naming its flag (``--binarize: ...``).
    """
    from pydantic import ValidationError

    from harness.retrieve.vector import VectorOptions

    flags = {
        "model": ("--model", model),
        "index_fraction": ("--index-fraction", index_fraction),
        "until": ("--until", until),
        "backend": ("--vector-backend", backend),
        "binarize": ("--binarize", binarize),
        "rescore": ("--rescore", rescore),
    }
    try:
        return VectorOptions(**{k: v for k, (_flag, v) in flags.items() if v is not None})
    except ValidationError as exc:
        err = exc.errors()[0]
        flag = flags[str(err["loc"][0])][0] if err["loc"] else "--index-fraction/--until"
        msg = err["msg"].removeprefix("Value error, ")
        raise HarnessInputError(f"{flag}: {msg} (got {err.get('input')!r})") from None


RESCORE_HELP = (
    "Default float rescoring of vector systems: re-score M times the ranking depths of Hamming candidates by cosine "
    "on the cached float vectors; 0 = Hamming only (default 1; vector:rescore=M)."
)
MODEL_HELP = (
    "Default embedding model of vector systems: use (default, USE multilingual v3), e5-small, wordllama, minilm, a "
    "local folder or a hub id (vector:model=M)."
)


@app.command()
def run(
    ctx: typer.Context,
    corpus: Path = typer.Option(..., "--corpus", help="Corpus folder."),
    goldset: Path = typer.Option(..., "--goldset", help="Dataset folder or JSONL."),
    systems: str = typer.Option(
        "bm25",
        help="Comma-separated system names: bm25, tfidf, vector, vector:model=e5-small, vector:rescore=0, fusions "
        "(rrf, rrf:k=K, wW and the other methods of harness.retrieve.fusion.FUSIONS; of named inputs: rrf:bm25+mine, "
        "w0.6:bm25+vector), two-stage:S, two-stage\\[reranker=py:FILE.py:ATTR]:S, and your own retriever as "
        "NAME=py:MODULE_OR_FILE.py:ATTR (docs/systems.md).",
    ),
    workdir: Path = WORKDIR,
    runs_dir: Path = RUNS_DIR,
    run_id: str = typer.Option(None, "--run-id", help="Run record name (default: time-based, unique)."),
    overwrite: bool = OVERWRITE,
    doc_depth: int = typer.Option(
        DEFAULT_DOC_DEPTH, help=f"Document ranking depth (>= the largest k, {max(DEFAULT_KS)}).", callback=depth()
    ),
    chunk_depth: int = typer.Option(
        DEFAULT_CHUNK_DEPTH, help=f"Chunk ranking depth (>= the largest k, {max(DEFAULT_KS)}).", callback=depth()
    ),
    clustering: str = typer.Option(
        None, help="components | first-document | none (default: the gold set's design: none for independent)."
    ),
    seed: int = typer.Option(0, help="Seed for bootstrap intervals.", callback=at_least(0)),
    bootstrap_reps: int = typer.Option(
        5000, "--bootstrap-reps", help="Cluster bootstrap replicates (>= 100).", callback=at_least(100)
    ),
    model: str = typer.Option(None, help=MODEL_HELP),
    index_fraction: float = typer.Option(
        None, help="Default vector index slice: chronological share of chunks (vector:index_fraction=F)."
    ),
    until: str = typer.Option(None, help="Default vector index slice: documents dated up to this ISO date."),
    vector_backend: str = typer.Option(
        "sqlite-vec",
        help="Default Hamming search engine: sqlite-vec, numpy or faiss (identical results; vector:backend=B).",
    ),
    binarize: str = typer.Option(
        None,
        help="Default vector bits: sign (value > 0) or centered (value > the slice's mean); default: the model's "
        "(centered for e5-small, sign otherwise; vector:binarize=B).",
    ),
    rescore: int = typer.Option(None, help=RESCORE_HELP, callback=at_least(0)),
    analyzer: str = typer.Option(None, "--analyzer", help=ANALYZER_HELP),
    split: str = SPLIT,
    metrics: list[str] = METRICS,
    qids: list[str] = QIDS,
    category: list[str] = CATEGORY,
    chunker: str = typer.Option(
        None,
        "--chunker",
        help="Chunker to run under (e.g. md-legal-v1; default: the gold set's own). The evidence chunks are derived "
        "from the gold set's quotes; the corpus is ingested and indexed for that chunker.",
    ),
    fmt: str = FORMAT,
    out: str = OUT,
    as_json: bool = JSON_ALIAS,
) -> None:
    """Run systems on a gold set over a corpus, print the tables and write a run record."""
    from harness.evaluation.metric_choice import chosen_metrics
    from harness.evaluation.pipeline import RunOptions
    from harness.evaluation.pipeline import run as do_run
    from harness.evaluation.runs import default_run_id, load_run
    from harness.evaluation.subset import Subset
    from harness.retrieve.names import split_systems

    fmt = output_format(fmt, as_json, out=out, kind="run")
    run_id = default_run_id() if run_id is None else run_id  # the record's path, for the output check
    check_paths(
        [("--out", out), ("--run-id", runs_dir / run_id)],
        [("--corpus", corpus), ("--goldset", goldset), *plugin_files(systems)],
    )
    quiet = is_quiet()  # stage and progress lines go to stderr whatever --format is (never silent in CI)
    vector = vector_options(model, index_fraction, until, vector_backend, binarize, rescore)
    opts = RunOptions(
        doc_depth=doc_depth,
        chunk_depth=chunk_depth,
        clustering=clustering,
        seed=seed,
        bootstrap_reps=bootstrap_reps,
        system_defaults={"vector": vector, **analyzer_defaults(analyzer)},
        split=split,
        chunker=chunker,
        metrics=chosen_metrics(metrics),
        subset=Subset.of(qids, category),
        settings=settings_sources(ctx),
    )
    path = do_run(
        goldset,
        corpus,
        split_systems(systems),
        workdir=workdir,
        runs_dir=runs_dir,
        run_id=run_id,
        options=opts,
        progress=not quiet,
        log=None if quiet else notice,
        overwrite=overwrite,
    )
    rec = load_run(path)
    for line in _timing_lines(rec.manifest):  # --verbose: every recorded timing under its record key, with its unit
        detail(line)
    emit("run", rec, fmt, out, path=path)


@app.command()
def evaluate(
    ctx: typer.Context,
    goldset: Path = typer.Option(..., "--goldset", help="Dataset folder or JSONL."),
    rankings: Path = typer.Option(..., "--rankings", help="TREC run file or JSONL of ranked ids with scores."),
    corpus: Path = typer.Option(
        None,
        "--corpus",
        help="Corpus the rankings come from: check the gold set's quotes, chunk ids and documents against it (as "
        "run does; without it only the records hash and the structural rules are checked) and warn, with counts, "
        "about ranked ids it does not hold; gives evidence_recall@<B>w its chunk word counts and offsets (without "
        "it those metrics are not applicable).",
    ),
    workdir: Path = WORKDIR,
    runs_dir: Path = RUNS_DIR,
    run_id: str = typer.Option(None, "--run-id", help="Run record name (default: time-based, unique)."),
    overwrite: bool = OVERWRITE,
    level: str = typer.Option(None, help="Force 'document' or 'chunk' for a TREC file."),
    doc_depth: int = typer.Option(
        DEFAULT_DOC_DEPTH,
        help=f"Document ranking depth (>= the largest k, {max(DEFAULT_KS)}; deeper ranks are cut).",
        callback=depth(),
    ),
    chunk_depth: int = typer.Option(
        DEFAULT_CHUNK_DEPTH,
        help=f"Chunk ranking depth (>= the largest k, {max(DEFAULT_KS)}; deeper ranks are cut).",
        callback=depth(),
    ),
    clustering: str = typer.Option(
        None, help="components | first-document | none (default: the gold set's design: none for independent)."
    ),
    seed: int = typer.Option(0, help="Seed for bootstrap intervals.", callback=at_least(0)),
    bootstrap_reps: int = typer.Option(
        5000, "--bootstrap-reps", help="Cluster bootstrap replicates (>= 100).", callback=at_least(100)
    ),
    split: str = SPLIT,
    metrics: list[str] = METRICS,
    qids: list[str] = QIDS,
    category: list[str] = CATEGORY,
    fmt: str = FORMAT,
    out: str = OUT,
    as_json: bool = JSON_ALIAS,
) -> None:
    """Score rankings produced by any other system with the same metrics and write a run record."""
    from harness.evaluation.metric_choice import chosen_metrics
    from harness.evaluation.pipeline import RunOptions, evaluate_rankings
    from harness.evaluation.runs import default_run_id, load_run
    from harness.evaluation.subset import Subset

    fmt = output_format(fmt, as_json, out=out, kind="run")
    run_id = default_run_id("eval") if run_id is None else run_id  # the record's path, for the output check
    check_paths(
        [("--out", out), ("--run-id", runs_dir / run_id)],
        [("--goldset", goldset), ("--rankings", rankings), ("--corpus", corpus)],
    )
    opts = RunOptions(
        doc_depth=doc_depth,
        chunk_depth=chunk_depth,
        clustering=clustering,
        seed=seed,
        bootstrap_reps=bootstrap_reps,
        split=split,
        metrics=chosen_metrics(metrics),
        subset=Subset.of(qids, category),
        settings=settings_sources(ctx),
    )
    path = evaluate_rankings(
        goldset,
        rankings,
        runs_dir=runs_dir,
        run_id=run_id,
        options=opts,
        level=level,
        corpus_dir=corpus,
        workdir=workdir,
        log=notice,
        overwrite=overwrite,
        progress=True,
    )
    rec = load_run(path)
    emit("run", rec, fmt, out, path=path)
