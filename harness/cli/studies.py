"""Label-free studies: known-item and coverage."""

from __future__ import annotations

from pathlib import Path

import typer

from harness.cli._checks import at_least, int_list
from harness.cli._common import FORMAT, RESULT_OUT, WORKDIR, _csv_ints, _fail, app, emit, output_format
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
    systems: str = typer.Option(
        "bm25",
        help="Comma-separated: bm25, tfidf, vector, vector:<option>=<value> (e.g. vector:rescore=0, "
        "vector:model=e5-small); the first is system A.",
    ),
    coverage: bool = typer.Option(False, "--coverage", help="Also run the coverage study on the outcomes."),
    reps: int = typer.Option(5000, help="Coverage: samples per design (>= 10).", callback=at_least(10)),
    k: str = typer.Option(
        "5,10,20,40,80", "--K", help="Coverage: documents per sample (SRS design; each >= 2).", callback=int_list(2)
    ),
    workers: int = typer.Option(2, help="Search worker processes.", callback=at_least(1)),
    model: str = typer.Option(None, "--model", help="Default embedding model of vector systems (as in `harness run`)."),
    binarize: str = typer.Option(None, help="Default bits of vector systems: sign or centered (default: the model's)."),
    rescore: int = typer.Option(
        None, help="Default float rescoring of vector systems: M (default 1), 0 = Hamming.", callback=at_least(0)
    ),
    workdir: Path = WORKDIR,
    overwrite: bool = typer.Option(False, help="Replace an existing output folder."),
    fmt: str = FORMAT,
    result_out: str = RESULT_OUT,
) -> None:
    """Label-free known-item evaluation (chunk-as-query, hit@1 micro/macro, ICC, DEFF) on a corpus."""
    fmt = output_format(fmt, out=result_out, field="--result-out")

    from harness.cli.run import vector_options
    from harness.studies.known_item import run_chunk_size_sensitivity, run_known_item, run_study

    try:
        vector = vector_options(model, None, None, None, binarize, rescore)
    except HarnessError as exc:
        _fail(exc)
    common = dict(
        query_words=query_words,
        systems=systems,
        workers=workers,
        vector_model=vector,
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
            res = run_study(corpus, out, chunk_words=sizes[0], reps=reps, ks=_csv_ints(k, "--K"), **common)
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
        "5,10,20,40,80", "--K", help="Documents per sample (SRS design; each >= 2).", callback=int_list(2)
    ),
    types: int = typer.Option(6, help="Two-stage design: types sampled (0 skips the design).", callback=at_least(0)),
    per_type: int = typer.Option(4, help="Two-stage design: documents per type.", callback=at_least(1)),
    b: int = typer.Option(999, "--B", help="Inner bootstrap replicates (>= 39).", callback=at_least(39)),
    seed: int = typer.Option(0, callback=at_least(0)),
    system: str = typer.Option(None, help="Which system's outcomes (default: the first)."),
    out: Path = typer.Option(None, "--out", help="Output folder (default: the population folder)."),
    fmt: str = FORMAT,
    result_out: str = RESULT_OUT,
) -> None:
    """Coverage of interval methods when an evaluator samples documents from this corpus (seeded simulation)."""

    from harness.studies.coverage import run_coverage

    fmt = output_format(fmt, out=result_out, field="--result-out")

    try:
        res = run_coverage(
            population,
            reps=reps,
            ks=_csv_ints(k, "--K"),
            types=types,
            per_type=per_type,
            b=b,
            seed=seed,
            system=system,
            out_dir=out,
        )
    except HarnessError as exc:
        _fail(exc)
    emit("coverage", res, fmt, result_out, path=out or population, field="--result-out")
