"""Gold-set verbs: validate, goldset apply, goldset resolve, goldset import."""

from __future__ import annotations

from pathlib import Path

import typer

from harness.cli._checks import at_least
from harness.cli._common import (
    FORMAT,
    JSON_ALIAS,
    OUT,
    RESULT_OUT,
    _fail,
    app,
    console,
    emit,
    err_console,
    goldset_app,
    output_format,
)
from harness.errors import HarnessError, HarnessInputError


@app.command()
def validate(
    dataset: Path = typer.Argument(..., help="Dataset folder (*.meta.json + records JSONL) or a records JSONL."),
    corpus: Path = typer.Option(
        None, "--corpus", help="Corpus folder: re-chunk it and check quotes, chunks, documents."
    ),
    correction: Path = typer.Option(None, "--correction", help="JSONL correction (full records or RFC 6902 patches)."),
    contract: Path = typer.Option(
        None, "--contract", help="Contract file or folder (default: validators/<slug>-v<major>.toml)."
    ),
    fmt: str = FORMAT,
    out: str = OUT,
    as_json: bool = JSON_ALIAS,
) -> None:
    """Validate a gold set: exit 0 valid, 1 invalid records, 2 unusable input. Never modifies input."""
    from harness.validate import validate as do_validate

    fmt = output_format(fmt, as_json, out=out)
    try:
        report = do_validate(dataset, corpus_dir=corpus, correction=correction, contract=contract)
    except HarnessError as exc:
        _fail(exc)
    emit("validation", report, fmt, out)
    raise typer.Exit(report.exit_code)


@goldset_app.command("apply")
def goldset_apply(
    dataset: Path = typer.Argument(..., help="Dataset folder (never modified)."),
    correction: Path = typer.Option(..., "--correction", help="JSONL correction file."),
    out: Path = typer.Option(..., "--out", help="New dataset folder (must not exist)."),
    corpus: Path = typer.Option(None, "--corpus", help="Corpus folder to check the corrected set against."),
    contract: Path = typer.Option(None, "--contract"),
    fmt: str = FORMAT,
    result_out: str = RESULT_OUT,
) -> None:
    """Write the corrected set as a new minor version, only when it validates (exit 0), else exit 1."""
    from harness.validate import apply_correction

    fmt = output_format(fmt, out=result_out, field="--result-out")
    try:
        res = apply_correction(dataset, correction, out, corpus_dir=corpus, contract=contract)
    except HarnessError as exc:
        _fail(exc)
    emit("goldset-apply", res, fmt, result_out, path=res.out_dir, field="--result-out")
    raise typer.Exit(res.exit_code)


def _say(text: str, *, err: bool = False) -> None:
    (err_console if err else console).print(text, markup=False, highlight=False, soft_wrap=True)


@goldset_app.command("resolve")
def goldset_resolve(
    records: Path = typer.Argument(..., help="Records JSONL: documents and exact quotes; chunk ids may be missing."),
    corpus: Path = typer.Option(..., "--corpus", help="Corpus folder the quotes come from (read only)."),
    out: Path = typer.Option(..., "--out", help="New dataset folder (must not exist)."),
    chunker: str = typer.Option("md-words-v1", "--chunker", help="Chunker whose chunk ids the evidence cites."),
    name: str = typer.Option(None, "--name", help="Gold-set name (default: the contract's, else the file stem)."),
    version: str = typer.Option(None, "--version", help="Version (default: <contract major>.0.0, else 1.0.0)."),
    contract: Path = typer.Option(
        None, "--contract", help="Contract the set must meet (default: write a starter contract into the folder)."
    ),
) -> None:
    """Fill chunk ids, indexes and heading paths from the quotes; split quotes at chunk boundaries; write the set.

    Exit 0 written, 1 resolved but a validation rule fails (nothing written), 2 a quote or record that cannot be
    resolved, or unusable input (one line per problem; nothing written).
    """
    from harness.goldset.resolve import ResolveError, resolve_goldset
    from harness.validate import render

    try:
        res = resolve_goldset(records, corpus, out, chunker=chunker, name=name, version=version, contract=contract)
    except ResolveError as exc:
        for line in exc.problems:
            _say(line, err=True)
        _fail(HarnessInputError(f"{len(exc.problems)} problem(s) above; nothing written"))
    except HarnessError as exc:
        _fail(exc)
    for note in res.notes:
        _say(f"note: {note}")
    built = res.built
    assert built is not None
    if built.written is None:
        render(built.report, console)
        _say("not written: the resolved set does not validate")
        raise typer.Exit(1)
    contract_note = f"; starter contract {built.contract_written}" if built.contract_written else ""
    _say(
        f"wrote {built.written}: {len(res.records)} questions, {res.quotes} quotes resolved "
        f"({res.split} split at chunk boundaries){contract_note}"
    )


@goldset_app.command("import")
def goldset_import(
    out: Path = typer.Option(..., "--out", help="New dataset folder (must not exist)."),
    qrels: Path = typer.Option(None, "--qrels", help="TREC qrels file: 'qid iter docid rel' per line."),
    queries: Path = typer.Option(None, "--queries", help="Queries: TSV 'qid<TAB>text' or JSONL {id|_id, text}."),
    corpus: Path = typer.Option(None, "--corpus", help="Corpus the judged documents are in (checked, identity kept)."),
    beir: Path = typer.Option(None, "--beir", help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv."),
    split: str = typer.Option("test", "--split", help="BEIR qrels split: test, dev or train."),
    corpus_out: Path = typer.Option(None, "--corpus-out", help="BEIR: corpus folder to write (default <out>-corpus)."),
    name: str = typer.Option(None, "--name", help="Gold-set name (default: the qrels file stem / BEIR folder-split)."),
    version: str = typer.Option("1.0.0", "--version", help="Version of the new set."),
    category: str = typer.Option("imported", "--category", help="Category of every question."),
    required_rel: int = typer.Option(
        2,
        "--required-rel",
        help="Smallest rel of a required (grade 2) document; lower rel >= 1 is grade 1.",
        callback=at_least(1),
    ),
    chunker: str = typer.Option("md-words-v1", "--chunker", help="Chunker recorded for runs (no evidence cites it)."),
) -> None:
    """Import TREC qrels + queries, or a BEIR folder, as a documents-only gold set.

    rel <= 0 is dropped, rel >= --required-rel (2) is a required document (grade 2), a lower rel >= 1 a useful one
    (grade 1). A BEIR import also writes a corpus folder. Exit 0 written, 1 a validation rule fails (nothing
    written), 2 unusable input.
    """
    from harness.goldset.importers import import_beir, import_qrels
    from harness.validate import render

    try:
        if beir is not None:
            if qrels is not None or queries is not None or corpus is not None:
                raise HarnessInputError("--beir: give either --beir DIR or --qrels FILE --queries FILE, not both")
            res = import_beir(
                beir,
                out,
                split=split,
                corpus_out=corpus_out,
                name=name,
                version=version,
                category=category,
                required_rel=required_rel,
                chunker=chunker,
            )
        else:
            if qrels is None or queries is None:
                raise HarnessInputError("--qrels: give --qrels FILE and --queries FILE (or --beir DIR)")
            if corpus_out is not None:
                raise HarnessInputError("--corpus-out: only a BEIR import writes a corpus folder")
            res = import_qrels(
                qrels,
                queries,
                out,
                corpus_dir=corpus,
                name=name,
                version=version,
                category=category,
                required_rel=required_rel,
                chunker=chunker,
            )
    except HarnessError as exc:
        _fail(exc)
    if res.queries_without_relevant:
        _say(f"note: {len(res.queries_without_relevant)} judged queries have no relevant document and were left out")
    if res.without_required:
        _say(
            f"note: {len(res.without_required)} of {len(res.records)} questions have no document with rel >= "
            f"{required_rel}: their recall@k, all_hop@k and hit@k are undefined (0); for binary qrels use "
            "--required-rel 1"
        )
    built = res.built
    assert built is not None
    if built.written is None:
        render(built.report, console)
        _say("not written: the imported set does not validate")
        raise typer.Exit(1)
    grades = ", ".join(f"grade {g}: {n}" for g, n in res.grades.items())
    corpus_note = f"; corpus {res.corpus_dir}" if beir is not None else ""
    _say(
        f"wrote {built.written}: {len(res.records)} questions, {sum(res.grades.values())} gold documents ({grades}); "
        f"{res.dropped_nonrelevant} judgements with rel <= 0 dropped{corpus_note}"
    )
