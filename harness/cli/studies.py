"""Label-free studies: known-item and coverage."""

from __future__ import annotations

from pathlib import Path

import typer

from harness.cli._checks import at_least, int_list
from harness.cli._common import FORMAT, RESULT_OUT, WORKDIR, _csv_ints, _fail, app, emit, output_format, renamed
from harness.errors import HarnessError


@app.command("known-item")
def known_item(
    corpus: Path = typer.Option(..., "--corpus", help="Corpus folder."),
    out: Path = typer.Option(..., "--out", help="Output folder (written atomically)."),
    chunk_words: str = typer.Option(
        "100",
        help="Chunk size in words; a comma list (50,100,400) runs the sensitivity study.",
        callback=int_list(1),
    ),
    query_words: int = typer.Option(20, help="Query = the first N words of each chunk.", callback=at_least(1)),
    systems: str = typer.Option("bm25", help="Comma-separated: bm25, tfidf, vector (the first is system A)."),
    coverage: bool = typer.Option(False, "--coverage", help="Also run the coverage study on the outcomes."),
    reps: int = typer.Option(5000, help="Coverage: samples per design (>= 10).", callback=at_least(10)),
    k: str = typer.Option(
        None,
        "--docs-per-sample",
        help="Coverage: documents per sample K, comma list (SRS design; each >= 2; default 5,10,20,40,80).",
        callback=int_list(2),
    ),
    k_old: str = typer.Option(None, "--K", hidden=True, help="Deprecated: --docs-per-sample.", callback=int_list(2)),
    workers: int = typer.Option(2, help="Search worker processes.", callback=at_least(1)),
    model: str = typer.Option(None, "--model", help="Embedding model of the vector system (as in `harness embed`)."),
    workdir: Path = WORKDIR,
    overwrite: bool = typer.Option(False, help="Replace an existing output folder."),
    fmt: str = FORMAT,
    result_out: str = RESULT_OUT,
) -> None:
    """Label-free known-item evaluation (chunk-as-query, hit@1 micro/macro, ICC, DEFF) on a corpus."""
    fmt = output_format(fmt, out=result_out, field="--result-out")

    from harness.studies.known_item import run_chunk_size_sensitivity, run_known_item, run_study

    common = dict(
        query_words=query_words,
        systems=systems,
        workers=workers,
        vector_model=model,
        workdir=workdir,
        overwrite=overwrite,
        progress=True,
    )
    try:
        sizes = _csv_ints(chunk_words, "--chunk-words")
        if len(sizes) > 1:
            kind = "known-item-sensitivity"
            res = run_chunk_size_sensitivity(corpus, out, sizes=sizes, **common)
        elif coverage:
            kind = "known-item-study"
            k = renamed(k, k_old, new="--docs-per-sample", old="--K") or "5,10,20,40,80"
            ks = _csv_ints(k, "--docs-per-sample")
            res = run_study(corpus, out, chunk_words=sizes[0], reps=reps, ks=ks, **common)
        else:
            kind = "known-item"
            res = run_known_item(corpus, out, chunk_words=sizes[0], **common)
    except HarnessError as exc:
        _fail(exc)
    emit(kind, res, fmt, result_out, path=out, field="--result-out")


@app.command("coverage")
def coverage_cmd(
    population: Path = typer.Option(..., "--population", help="A known-item output folder (per_document.jsonl)."),
    reps: int = typer.Option(5000, help="Samples per design (>= 10).", callback=at_least(10)),
    k: str = typer.Option(
        None,
        "--docs-per-sample",
        help="Documents per sample K, comma list (SRS design; each >= 2; default 5,10,20,40,80).",
        callback=int_list(2),
    ),
    k_old: str = typer.Option(None, "--K", hidden=True, help="Deprecated: --docs-per-sample.", callback=int_list(2)),
    types: int = typer.Option(6, help="Two-stage design: types sampled (0 skips the design).", callback=at_least(0)),
    per_type: int = typer.Option(4, help="Two-stage design: documents per type.", callback=at_least(1)),
    b: int = typer.Option(
        None,
        "--bootstrap-reps",
        help="Inner bootstrap replicates B (default 999; at least 39).",
        callback=at_least(39),
    ),
    b_old: int = typer.Option(None, "--B", hidden=True, help="Deprecated: --bootstrap-reps.", callback=at_least(39)),
    seed: int = typer.Option(0, help="Seed of the simulation (samples and bootstrap).", callback=at_least(0)),
    system: str = typer.Option(None, help="Which system's outcomes (default: the first)."),
    out: Path = typer.Option(None, "--out", help="Output folder (default: the population folder)."),
    fmt: str = FORMAT,
    result_out: str = RESULT_OUT,
) -> None:
    """Coverage of interval methods when an evaluator samples documents from this corpus (seeded simulation)."""

    from harness.studies.coverage import run_coverage

    fmt = output_format(fmt, out=result_out, field="--result-out")

    try:
        k = renamed(k, k_old, new="--docs-per-sample", old="--K") or "5,10,20,40,80"
        b = renamed(b, b_old, new="--bootstrap-reps", old="--B")
        res = run_coverage(
            population,
            reps=reps,
            ks=_csv_ints(k, "--docs-per-sample"),
            types=types,
            per_type=per_type,
            b=999 if b is None else b,
            seed=seed,
            system=system,
            out_dir=out,
            progress=True,
        )
    except HarnessError as exc:
        _fail(exc)
    emit("coverage", res, fmt, result_out, path=out or population, field="--result-out")
