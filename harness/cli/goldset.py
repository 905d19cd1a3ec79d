"""Gold-set verbs: validate, goldset apply, goldset resolve, goldset import, goldset plan, goldset split."""

from __future__ import annotations

from pathlib import Path

import typer

from harness.cli._checks import at_least, number
from harness.cli._common import (
    FORMAT,
    JSON_ALIAS,
    OUT,
    RESULT_OUT,
    _fail,
    app,
    check_paths,
    console,
    emit,
    err_console,
    goldset_app,
    notice,
    output_format,
    warn,
)
from harness.errors import HarnessInputError
from harness.terminal_safe import escape_controls

CORRECTION = typer.Option(
    None,
    "--correction",
    help="JSONL correction (full records or RFC 6902 patches); repeat it to apply several files, in order, as one "
    "new version.",
)
AUTHOR = typer.Option(
    None, "--author", help="Author of the correction files whose header names none (recorded in the change log)."
)
DESCRIPTION = typer.Option(
    None, "--description", help="Description of the correction files whose header gives none (change log)."
)
IMPACT = typer.Option(
    None,
    "--impact",
    help="Run record to re-score against the old and the corrected set (paired differences per metric); repeatable.",
)


def _correction_files(paths: list[Path] | None, author: str | None, description: str | None):
    """The parsed correction files, with ``--author``/``--description`` for those whose header gives none."""
    from harness.goldset.corrections import read_correction_file

    if not paths:
        if author is not None or description is not None:
            raise HarnessInputError("--author/--description: they describe a --correction; none given")
        return None
    return [read_correction_file(p, author=author, description=description) for p in paths]


def _inputs(dataset, corpus, contract, correction, impact) -> list[tuple[str, Path]]:
    """``(option, path)`` of each input of ``validate`` and ``goldset apply`` (for :func:`check_paths`)."""
    many = [("--correction", p) for p in correction or ()] + [("--impact", p) for p in impact or ()]
    return [("DATASET", dataset), ("--corpus", corpus), ("--contract", contract), *many]


@app.command()
def validate(
    dataset: Path = typer.Argument(..., help="Dataset folder (*.meta.json + records JSONL) or a records JSONL."),
    corpus: Path = typer.Option(
        None, "--corpus", help="Corpus folder: re-chunk it and check quotes, chunks, documents."
    ),
    correction: list[Path] = CORRECTION,
    author: str = AUTHOR,
    description: str = DESCRIPTION,
    impact: list[Path] = IMPACT,
    contract: Path = typer.Option(
        None, "--contract", help="Contract file or folder (default: validators/<slug>-v<major>.toml)."
    ),
    fmt: str = FORMAT,
    out: str = OUT,
    as_json: bool = JSON_ALIAS,
) -> None:
    """Validate a gold set: exit 0 valid, 1 invalid records, 2 unusable input. Never modifies input.

    Without --corpus the corpus rules (V001-V005) are not checked, and every format says so (a warning line on
    stderr too). Warnings (V034) never change the exit code.
    """
    from harness.validate import validate as do_validate

    fmt = output_format(fmt, as_json, out=out, kind="validation")
    check_paths(
        [("--out", out)],
        _inputs(dataset, corpus, contract, correction, impact),
    )
    files = _correction_files(correction, author, description)
    report = do_validate(dataset, corpus_dir=corpus, correction=files, contract=contract, impact=_impact(impact))
    note = report.skipped_note()
    if note:
        _say(note, err=True)
    emit("validation", report, fmt, out)
    raise typer.Exit(report.exit_code)


@goldset_app.command("apply")
def goldset_apply(
    dataset: Path = typer.Argument(..., help="Dataset folder (never modified)."),
    correction: list[Path] = typer.Option(
        ..., "--correction", help="JSONL correction file; repeat it to apply several, in order, as one version."
    ),
    out: Path = typer.Option(..., "--out", help="New dataset folder (must not exist)."),
    corpus: Path = typer.Option(None, "--corpus", help="Corpus folder to check the corrected set against."),
    structural_only: bool = typer.Option(
        False,
        "--structural-only",
        help="Write without a corpus: the corpus rules V001-V005 are not checked (the change log records it).",
    ),
    author: str = AUTHOR,
    description: str = DESCRIPTION,
    impact: list[Path] = IMPACT,
    contract: Path = typer.Option(
        None, "--contract", help="Contract file or folder (default: validators/<slug>-v<major>.toml)."
    ),
    fmt: str = FORMAT,
    result_out: str = RESULT_OUT,
) -> None:
    """Write the corrected set as a new minor version, only when it validates (exit 0), else exit 1.

    Needs --corpus (or --structural-only). The new folder's README statistics are regenerated from the records.
    """
    from harness.curation.apply import apply_correction

    fmt = output_format(fmt, out=result_out, field="--result-out", kind="goldset-apply")
    check_paths(
        [("--out", out), ("--result-out", result_out)],
        _inputs(dataset, corpus, contract, correction, impact),
    )
    files = _correction_files(correction, author, description)
    res = apply_correction(
        dataset,
        files,
        out,
        corpus_dir=corpus,
        structural_only=structural_only,
        contract=contract,
        impact=_impact(impact),
    )
    emit("goldset-apply", res, fmt, result_out, path=res.out_dir, field="--result-out")
    raise typer.Exit(res.exit_code)


def _impact(runs: list[Path] | None):
    """The ``--impact`` runs as the validator's metric-impact hook (``None`` without runs)."""
    if not runs:  # nothing loads the run records, or statistics, without them
        return None
    from harness.evaluation.impact import impact_of

    return impact_of(runs)


def _say(text: str, *, err: bool = False) -> None:
    """One line (control characters from inputs, newlines included, escaped: :mod:`harness.terminal_safe`)."""
    (err_console if err else console).print(escape_controls(text), markup=False, highlight=False, soft_wrap=True)


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
    from harness.curation.resolve import ResolveError, resolve_goldset
    from harness.report.validation import render

    check_paths([("--out", out)], [("RECORDS", records), ("--corpus", corpus), ("--contract", contract)])
    try:
        res = resolve_goldset(records, corpus, out, chunker=chunker, name=name, version=version, contract=contract)
    except ResolveError as exc:
        for line in exc.problems:
            _say(line, err=True)
        _fail(HarnessInputError(f"{len(exc.problems)} problem(s) above; nothing written"))
    for note in res.notes:
        notice(f"note: {note}")
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


#: The one line ``goldset import`` prints about the design it wrote (``{n}``: the number of questions).
DESIGN_NOTES = {
    "independent": "design: independent (design.sampling in the manifest): each of the {n} queries is its own "
    "cluster; intervals estimate the mean over the query population they were drawn from (--design from-documents "
    "or run --clustering components to cluster queries sharing gold documents)",
    "from-documents": "design: from-documents (design.sampling in the manifest): queries sharing a gold document "
    "form one cluster",
}


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
    language: str = typer.Option(
        None,
        "--language",
        help="BEIR: the corpus's ISO 639-1 code (en, pt, ...), written into every metadata.jsonl record (changes the "
        "corpus hash); it picks BM25's and TF-IDF's analyzer. Without it runs use es-snowball-fold-v1.",
    ),
    design: str = typer.Option(
        "independent",
        "--design",
        help="How the queries were sampled (the manifest's design.sampling): independent (each query its own "
        "cluster) or from-documents (clusters of queries sharing gold documents).",
    ),
) -> None:
    """Import TREC qrels + queries, or a BEIR folder, as a documents-only gold set.

    rel <= 0 is dropped, rel >= --required-rel (2) is a required document (grade 2), a lower rel >= 1 a useful one
    (grade 1). A BEIR import also writes a corpus folder. Exit 0 written, 1 a validation rule fails (nothing
    written), 2 unusable input.
    """
    from harness.curation.importers import import_beir, import_qrels
    from harness.report.validation import render

    if beir is not None:
        if qrels is not None or queries is not None or corpus is not None:
            raise HarnessInputError("--beir: give either --beir DIR or --qrels FILE --queries FILE, not both")
        check_paths(
            [("--out", out), ("--corpus-out", corpus_out or out.with_name(out.name + "-corpus"))],
            [("--beir", beir)],
        )
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
            language=language,
            design=design,
        )
    else:
        if qrels is None or queries is None:
            raise HarnessInputError("--qrels: give --qrels FILE and --queries FILE (or --beir DIR)")
        if corpus_out is not None:
            raise HarnessInputError("--corpus-out: only a BEIR import writes a corpus folder")
        if language is not None:
            raise HarnessInputError(
                "--language: a --qrels import writes no corpus; declare the language in the corpus's metadata.jsonl "
                '(a "language" field on every record) or pass --analyzer to run'
            )
        check_paths([("--out", out)], [("--qrels", qrels), ("--queries", queries), ("--corpus", corpus)])
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
            design=design,
        )
    if res.queries_without_relevant:
        notice(f"note: {len(res.queries_without_relevant)} judged queries have no relevant document and were left out")
    if res.without_required:
        warn(
            f"{len(res.without_required)} of {len(res.records)} questions have no document with rel >= "
            f"{required_rel}: their recall@k, all_hop@k and hit@k are undefined (0); for binary qrels use "
            "--required-rel 1"
        )
    for w in res.warnings:
        warn(w)
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
    notice(DESIGN_NOTES[design].format(n=len(res.records)))


@goldset_app.command("plan")
def goldset_plan(
    corpus: Path = typer.Option(..., "--corpus", help="Corpus folder the gold set will be written on."),
    out: Path = typer.Option(..., "--out", help="New dataset folder (must not exist)."),
    documents: int = typer.Option(
        27, "--documents", help="Documents (draws) to write questions on.", callback=at_least(2)
    ),
    design: str = typer.Option(
        "pps",
        "--design",
        help="pps: draws with replacement, probability proportional to each document's chunk-queries (runs then "
        "report the Hansen-Hurwitz chunk-weighted mean); srs: documents at random (the document-level mean).",
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the draws.", callback=at_least(0)),
    name: str = typer.Option(
        None,
        "--name",
        help="Gold-set name, which names the files inside --out: a plain name (no '/', not starting with '.'; "
        "default: the folder's name).",
    ),
    chunk_words: int = typer.Option(
        100, help="Size measure: chunk-queries of md-words-v1 windows of N words.", callback=at_least(1)
    ),
    query_words: int = typer.Option(20, help="Size measure: a query is a chunk's first N words.", callback=at_least(1)),
    fmt: str = FORMAT,
    result_out: str = RESULT_OUT,
) -> None:
    """Draw the documents on which to write a gold set's questions and record the draws in a new dataset manifest
    (docs/goldsets.md, "Planning a gold set by PPS")."""
    from harness.studies.goldset_plan import plan_goldset

    fmt = output_format(fmt, out=result_out, field="--result-out")
    check_paths([("--out", out), ("--result-out", result_out)], [("--corpus", corpus)])
    res = plan_goldset(
        corpus,
        out,
        documents=documents,
        design=design,
        seed=seed,
        name=name,
        chunk_words=chunk_words,
        query_words=query_words,
    )
    emit("goldset-plan", res, fmt, result_out, path=res.out_dir, field="--result-out")


@goldset_app.command("split")
def goldset_split(
    dataset: Path = typer.Argument(..., help="Dataset folder (never modified)."),
    out: Path = typer.Option(..., "--out", help="New dataset folder (must not exist)."),
    seed: int = typer.Option(
        ..., "--seed", help="Seed of the assignment (the same seed gives the same split).", callback=at_least(0)
    ),
    dev_fraction: float = typer.Option(
        0.5,
        "--dev-fraction",
        help="Share of questions on dev, in (0, 1).",
        callback=number(0, 1, open_lower=True, open_upper=True),
    ),
    contract: Path = typer.Option(
        None, "--contract", help="Contract file or folder (default: the input's, as validate finds it)."
    ),
    fmt: str = FORMAT,
    result_out: str = RESULT_OUT,
    as_json: bool = JSON_ALIAS,
) -> None:
    """Assign dev/test splits, whole clusters (questions sharing a gold document) on one side, categories balanced.

    Writes the set as a new minor version (records and manifest carry the split; change log names the seed). Exit 0
    written, 1 the new set fails its contract or cannot be split (one cluster; nothing written), 2 unusable input
    (records edited after their release among them).
    """
    from harness.curation.splitset import write_split

    fmt = output_format(fmt, as_json, out=result_out, field="--result-out", kind="goldset-split")
    check_paths([("--out", out), ("--result-out", result_out)], [("DATASET", dataset), ("--contract", contract)])
    res = write_split(dataset, out, seed=seed, dev_fraction=dev_fraction, contract=contract)
    emit("goldset-split", res, fmt, result_out, field="--result-out")
    if res.out_dir is None:
        raise typer.Exit(1)
    plan = res.plan
    if plan.replaced:
        notice(f"note: {plan.replaced} question(s) had another split before; the new folder carries the new one")
