"""Verbs that score systems: run and evaluate."""

from __future__ import annotations

from pathlib import Path

import typer

from harness.cli._common import FORMAT, JSON_ALIAS, OUT, RUNS_DIR, WORKDIR, _fail, app, emit, err_console, output_format
from harness.errors import HarnessError


@app.command()
def run(
    corpus: Path = typer.Option(..., "--corpus", help="Corpus folder."),
    goldset: Path = typer.Option(..., "--goldset", help="Dataset folder or JSONL."),
    systems: str = typer.Option("bm25", help="Comma-separated: bm25, vector, rrf, rrf:k=K, wW, two-stage:S."),
    workdir: Path = WORKDIR,
    runs_dir: Path = RUNS_DIR,
    run_id: str = typer.Option(None, "--run-id", help="Run record name (default: time-based, unique)."),
    doc_depth: int = typer.Option(50, help="Document ranking depth."),
    chunk_depth: int = typer.Option(200, help="Chunk ranking depth."),
    clustering: str = typer.Option("components", help="components | first-document | none."),
    seed: int = typer.Option(0, help="Seed for bootstrap intervals."),
    bootstrap_reps: int = typer.Option(5000, "--bootstrap-reps", help="Cluster bootstrap replicates."),
    model: str = typer.Option(None, help="Embedding model for the vector system (default: the packaged static model)."),
    index_fraction: float = typer.Option(None, help="Vector index: chronological share of chunks to index."),
    until: str = typer.Option(None, help="Vector index: index documents dated up to this ISO date."),
    vector_backend: str = typer.Option(
        "sqlite-vec", help="Hamming search engine: sqlite-vec, numpy or faiss (identical results; faiss is fastest)."
    ),
    binarize: str = typer.Option("sign", help="Vector bits: sign (value > 0) or centered (value > the slice's mean)."),
    fmt: str = FORMAT,
    out: str = OUT,
    as_json: bool = JSON_ALIAS,
) -> None:
    """Run systems on a gold set over a corpus, print the tables and write a run record."""
    from harness.evaluation.pipeline import RunOptions
    from harness.evaluation.pipeline import run as do_run
    from harness.evaluation.runs import load_run

    fmt = output_format(fmt, as_json, out=out)
    quiet = fmt != "table"
    opts = RunOptions(
        doc_depth=doc_depth,
        chunk_depth=chunk_depth,
        clustering=clustering,
        seed=seed,
        bootstrap_reps=bootstrap_reps,
        extra={
            "model": model,
            "index_fraction": index_fraction,
            "until": until,
            "vector_backend": vector_backend,
            "binarize": binarize,
        },
    )
    log = (lambda m: err_console.print(m, highlight=False)) if not quiet else None
    try:
        path = do_run(
            goldset,
            corpus,
            systems.split(","),
            workdir=workdir,
            runs_dir=runs_dir,
            run_id=run_id,
            options=opts,
            progress=not quiet,
            log=log,
        )
        rec = load_run(path)
    except HarnessError as exc:
        _fail(exc)
    emit("run", rec, fmt, out, path=path)


@app.command()
def evaluate(
    goldset: Path = typer.Option(..., "--goldset", help="Dataset folder or JSONL."),
    rankings: Path = typer.Option(..., "--rankings", help="TREC run file or JSONL of ranked ids with scores."),
    runs_dir: Path = RUNS_DIR,
    run_id: str = typer.Option(None, "--run-id"),
    level: str = typer.Option(None, help="Force 'document' or 'chunk' for a TREC file."),
    doc_depth: int = typer.Option(50),
    chunk_depth: int = typer.Option(200),
    clustering: str = typer.Option("components"),
    seed: int = typer.Option(0),
    fmt: str = FORMAT,
    out: str = OUT,
    as_json: bool = JSON_ALIAS,
) -> None:
    """Score rankings produced by any other system with the same metrics and write a run record."""
    from harness.evaluation.pipeline import RunOptions, evaluate_rankings
    from harness.evaluation.runs import load_run

    fmt = output_format(fmt, as_json, out=out)
    opts = RunOptions(doc_depth=doc_depth, chunk_depth=chunk_depth, clustering=clustering, seed=seed)
    try:
        path = evaluate_rankings(goldset, rankings, runs_dir=runs_dir, run_id=run_id, options=opts, level=level)
        rec = load_run(path)
    except HarnessError as exc:
        _fail(exc)
    emit("run", rec, fmt, out, path=path)
