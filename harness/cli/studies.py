"""Label-free studies: known-item and coverage."""

from __future__ import annotations

from pathlib import Path

import typer

from harness.cli._checks import at_least, given, int_list, number, refuse_unused
from harness.cli._common import (
    FORMAT,
    RESULT_OUT,
    WORKDIR,
    _csv_ints,
    app,
    check_paths,
    emit,
    notice,
    output_format,
    plugin_files,
    renamed,
    warn,
)
from harness.cli.run import ANALYZER_HELP
from harness.defaults import DEFAULT_CHUNK_DEPTH
from harness.errors import HarnessInputError


@app.command("known-item")
def known_item(
    ctx: typer.Context,
    corpus: Path = typer.Option(..., "--corpus", help="Corpus folder."),
    out: Path = typer.Option(..., "--out", help="Output folder (written atomically)."),
    chunk_words: str = typer.Option(
        "100",
        help="Chunk size in words; a comma list (50,100,400) runs the sensitivity study.",
        callback=int_list(1),
    ),
    query_words: int = typer.Option(20, help="Query = the first N words of each chunk.", callback=at_least(1)),
    chunker: str = typer.Option(
        None,
        "--chunker",
        help="A registered chunker (md-legal-v1) instead of the md-words-v1 windows of --chunk-words.",
    ),
    systems: str = typer.Option(
        "bm25",
        help="Comma-separated system names, as in `harness run`: bm25, tfidf, vector, vector:rescore=0, rrf, "
        "w0.75, rrf:bm25+tfidf, mine=py:MODULE:ATTR (then rrf:bm25+mine); the first is system A.",
    ),
    chunk_depth: int = typer.Option(
        DEFAULT_CHUNK_DEPTH,
        help="Chunks ranked per query by fusions and py: retrievers (the per-query path).",
        callback=at_least(1),
    ),
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
    sample: int = typer.Option(
        None,
        "--sample",
        help="Search the queries of K sampled documents only and estimate the corpus's chunk-weighted mean.",
        callback=at_least(2),
    ),
    design: str = typer.Option(
        "pps",
        "--design",
        help="--sample design: pps (probability proportional to queries, with replacement; Hansen-Hurwitz logit "
        "interval) or srs (documents at random; coverage not guaranteed).",
    ),
    seed: int = typer.Option(0, "--seed", help="--sample: seed of the draws.", callback=at_least(0)),
    model: str = typer.Option(None, "--model", help="Default embedding model of vector systems (as in `harness run`)."),
    binarize: str = typer.Option(None, help="Default bits of vector systems: sign or centered (default: the model's)."),
    rescore: int = typer.Option(
        None, help="Default float rescoring of vector systems: M (default 1), 0 = Hamming.", callback=at_least(0)
    ),
    workdir: Path = WORKDIR,
    overwrite: bool = typer.Option(False, help="Replace an existing output folder."),
    no_cache: bool = typer.Option(
        False,
        "--no-cache",
        help="Search every system again (default: reuse each unchanged system's outcomes cached in the work "
        "directory by corpus hash, chunking, query words and system configuration).",
    ),
    plugin_timeout: float = typer.Option(
        None,
        "--plugin-timeout",
        help="Seconds a py: retriever may take per block of queries (> 0; default: no limit).",
        callback=number(0, open_lower=True),
    ),
    analyzer: str = typer.Option(None, "--analyzer", help=ANALYZER_HELP),
    fmt: str = FORMAT,
    result_out: str = RESULT_OUT,
) -> None:
    """Label-free known-item evaluation (chunk-as-query, hit@1 micro/macro, ICC, DEFF) on a corpus."""
    _known_item_unused(ctx, chunk_words, systems, sample, coverage)
    fmt = output_format(fmt, out=result_out, field="--result-out")
    check_paths([("--out", out), ("--result-out", result_out)], [("--corpus", corpus), *plugin_files(systems)])

    from harness.cli.run import vector_options
    from harness.studies.known_item import run_chunk_size_sensitivity, run_known_item, run_study
    from harness.studies.options import CoverageOptions, KnownItemOptions

    if analyzer is not None:
        from harness.retrieve.analyzer import analyzer_id_of

        analyzer = analyzer_id_of(analyzer, where="--analyzer")
    sizes = _csv_ints(chunk_words, "--chunk-words")
    if chunker is not None and len(sizes) > 1:
        raise HarnessInputError("--chunker: runs one chunking; give it without a list of --chunk-words")
    options = KnownItemOptions(
        chunk_words=sizes[0],
        query_words=query_words,
        chunker=chunker,
        systems=systems,
        workers=workers,
        vector_model=vector_options(model, None, None, None, binarize, rescore),
        workdir=workdir,
        overwrite=overwrite,
        progress=True,
        chunk_depth=chunk_depth,
        cache=not no_cache,
        plugin_timeout=plugin_timeout,
        analyzer=analyzer,
    )
    if sample is not None and (len(sizes) > 1 or coverage):
        raise HarnessInputError("--sample: runs one chunking without --coverage")
    if len(sizes) > 1:
        kind = "known-item-sensitivity"
        res = run_chunk_size_sensitivity(corpus, out, options, sizes=sizes)
    elif coverage:
        kind = "known-item-study"
        k = renamed(k, k_old, new="--docs-per-sample", old="--K") or "5,10,20,40,80"
        ks = _csv_ints(k, "--docs-per-sample")
        cov = CoverageOptions(reps=reps, ks=ks, threads=workers, progress=True, plots=_figures())
        res = run_study(corpus, out, options, cov)
    else:
        kind = "known-item"
        sampled = {} if sample is None else {"sample": sample, "design": design, "seed": seed}
        res = run_known_item(corpus, out, options, **sampled)
    _analyzer_lines(res)
    emit(kind, res, fmt, result_out, path=out, field="--result-out")


def _analyzer_lines(res) -> None:
    """The analyzer's one-line note (the default was taken) and the language check's warning, once each."""
    summaries = [getattr(res, "summary", None), *(getattr(r, "summary", None) for r in getattr(res, "results", []))]
    seen: set[str] = set()
    for summ in summaries:
        if not isinstance(summ, dict):
            continue
        for line in summ.get("analyzer_notes", []):
            if line not in seen:
                seen.add(line)
                notice(line)
        for line in summ.get("warnings", []):
            if line not in seen:
                seen.add(line)
                warn(line)


def _known_item_unused(ctx: typer.Context, chunk_words: str, systems: str, sample, coverage: bool) -> None:
    """Refuse ``known-item`` options that would do nothing in this call (issue 44 item 16), one line, exit 2:
    ``--design`` / ``--seed`` without ``--sample``; the coverage options without ``--coverage``, or ``--coverage``
    with a list of ``--chunk-words`` (the sensitivity study runs no coverage); ``--chunk-words`` with
    ``--chunker``; ``--plugin-timeout`` without a ``py:`` retriever among ``--systems``."""
    if sample is None:
        why = "without --sample (they choose its draws); give --sample K or leave them out"
        refuse_unused(ctx, ("design", "seed"), why)
    if not coverage:
        why = "without --coverage (they set its designs); add --coverage or leave them out"
        refuse_unused(ctx, ("reps", "k", "k_old"), why)
    elif len(_csv_ints(chunk_words, "--chunk-words")) > 1:
        raise HarnessInputError(
            "--coverage: no effect with a list of --chunk-words (the sensitivity study runs no coverage); give one size"
        )
    if given(ctx, "chunker") and len(_csv_ints(chunk_words, "--chunk-words")) == 1:
        refuse_unused(ctx, ("chunk_words",), "with --chunker (the chunker sets the chunks); leave one of them out")
    if "py:" not in systems:
        refuse_unused(ctx, ("plugin_timeout",), "without a py: retriever among --systems (it limits only plugin code)")


@app.command("coverage")
def coverage_cmd(
    population: list[str] = typer.Option(
        [],
        "--population",
        help="A known-item output folder, a CSV of doc_id,hit[,doc_type] or doc_id,y[,doc_type], or 'synthetic'; "
        "repeat for several (with --run, default: synthetic).",
    ),
    system: str = typer.Option(
        None, help="Known-item folders: systems (comma-separated) or 'all' (default: the first)."
    ),
    outcome: str = typer.Option("hit", help="Known-item folders: hit (hit@1), rr (reciprocal rank) or hit,rr."),
    paired: str = typer.Option(None, help="Known-item folders: paired differences, comma-separated A-B (bm25-tfidf)."),
    run: Path = typer.Option(
        None,
        "--run",
        help="A run folder: simulate its own design (cluster sizes; SRS, or PPS draws when its gold set records them) "
        "on the known-item folders' populations and choose the default per outcome type at its K.",
    ),
    sampling: str = typer.Option(
        None,
        "--sampling",
        help="With --run: simulate its cluster sizes drawn by srs, independent or pps instead of its own design.",
    ),
    reps: int = typer.Option(5000, help="Samples per design (>= 10).", callback=at_least(10)),
    k: str = typer.Option(
        None,
        "--docs-per-sample",
        help="Documents per sample K, comma list (SRS and PPS designs; each >= 2; default 5,10,20,40,80).",
        callback=int_list(2),
    ),
    k_old: str = typer.Option(None, "--K", hidden=True, help="Deprecated: --docs-per-sample.", callback=int_list(2)),
    types: int = typer.Option(6, help="Two-stage design: types sampled (0 skips the design).", callback=at_least(0)),
    per_type: int = typer.Option(4, help="Two-stage design: documents per type.", callback=at_least(1)),
    pps: bool = typer.Option(True, "--pps/--no-pps", help="Also the PPS design (Hansen-Hurwitz)."),
    b: int = typer.Option(
        None,
        "--bootstrap-reps",
        help="Inner bootstrap replicates B (default 999; at least 39).",
        callback=at_least(39),
    ),
    b_old: int = typer.Option(None, "--B", hidden=True, help="Deprecated: --bootstrap-reps.", callback=at_least(39)),
    seed: int = typer.Option(0, help="Seed of the simulation (samples and bootstrap).", callback=at_least(0)),
    threads: int = typer.Option(2, help="Worker threads (>= 1).", callback=at_least(1)),
    out: Path = typer.Option(
        None, "--out", help="Output folder (one population: default the population folder; several: suite files)."
    ),
    write_evidence: bool = typer.Option(
        False, "--write-evidence", help="Write the measured coverage and the rule's defaults to the evidence file."
    ),
    evidence_file: Path = typer.Option(
        None, "--evidence-file", help="Evidence file to write (default: the package's coverage_evidence.json)."
    ),
    description: str = typer.Option(
        "these populations", help="Evidence: what the populations are (printed after 'on' beside intervals)."
    ),
    corpus: str = typer.Option("unknown", help="Evidence: the corpus name."),
    fmt: str = FORMAT,
    result_out: str = RESULT_OUT,
) -> None:
    """Coverage of interval methods when an evaluator samples documents from this corpus (seeded simulation); with
    several populations (or --write-evidence), the default-method rule over all of them."""

    from harness.studies.coverage import run_coverage
    from harness.studies.coverage.suite import population_specs, run_suite
    from harness.studies.options import CoverageOptions

    fmt = output_format(fmt, out=result_out, field="--result-out")
    if run is not None:
        population = _design_populations(population)
        check_paths(_design_outputs(out, result_out, evidence_file), [("--run", run), *_coverage_inputs(population)])
        args = (run, population, reps, b, seed, sampling, write_evidence, evidence_file, description)
        _design_coverage(*args, fmt, result_out, out)
        return
    if not population:
        raise HarnessInputError("--population: give a known-item output folder, a CSV file or 'synthetic' (or --run)")
    check_paths(_coverage_outputs(population, out, result_out, evidence_file), _coverage_inputs(population))
    k = renamed(k, k_old, new="--docs-per-sample", old="--K") or "5,10,20,40,80"
    b = renamed(b, b_old, new="--bootstrap-reps", old="--B")
    b = 999 if b is None else b
    specs = population_specs(population, system=system, outcome=outcome, paired=paired)
    ks = _csv_ints(k, "--docs-per-sample")
    options = CoverageOptions(
        reps=reps, ks=ks, types=types, per_type=per_type, pps=pps, b=b, seed=seed, threads=threads
    )
    if len(specs) == 1 and not write_evidence:
        sp = specs[0]
        pop = sp.load() if sp.source == "synthetic" else sp.source
        res = run_coverage(
            pop,
            options,
            system=sp.system,
            outcome=sp.outcome,
            minus=sp.minus,
            out_dir=out,
            progress=True,
            plots=_figures(),
        )
        emit("coverage", res, fmt, result_out, path=out or specs[0].source, field="--result-out")
        return
    cache = None if out is None else out / "populations"
    res = run_suite(specs, options, out_dir=out, cache_dir=cache)
    if write_evidence:
        from harness.studies.coverage.evidence import build_evidence
        from harness.studies.coverage.evidence import write_evidence as write_ev

        command = "harness coverage " + " ".join(f"--population {p}" for p in population)
        ev = build_evidence(res, description=description, corpus=corpus, generated_by=command)
        res.files.append(str(write_ev(ev, *([] if evidence_file is None else [evidence_file]))))
    emit("coverage-suite", res, fmt, result_out, path=out, field="--result-out")


def _figures():
    """The coverage study's figure writer (the study layer draws nothing itself; matplotlib loads on first use)."""
    from harness.report.study_plots import coverage_figures

    return coverage_figures


def _design_populations(population: list[str]) -> list[str]:
    """``--population`` of ``harness coverage --run``: as given, or the synthetic population (with a note) when none
    is: the hint every run, compare and gate prints (``harness coverage --run RUN``) then works as written."""
    from harness.studies.coverage.suite import SYNTHETIC

    if population:
        return population
    notice(
        "note: no --population: the run's design is simulated on the synthetic population (1,300 documents built "
        "like a regulatory corpus, hit@1 only: no paired or graded outcomes); for your corpus, run `harness "
        "known-item --corpus CORPUS --out KI` and add `--population KI`"
    )
    return [SYNTHETIC]


def _design_outputs(out: Path | None, result_out: str, evidence: Path | None) -> list:
    """The paths ``harness coverage --run`` writes: ``coverage.json``/``coverage.csv`` in ``--out``, ``--result-out``
    and ``--evidence-file``."""
    written = [] if out is None else [("--out", out / n) for n in DESIGN_FILES]
    return [*written, ("--result-out", result_out), ("--evidence-file", evidence)]


#: The files ``harness coverage --run RUN --out DIR`` writes into DIR.
DESIGN_FILES = ("coverage.json", "coverage.csv")


def _write_design(res, out: Path) -> list[str]:
    """Write ``coverage.json`` (the JSON form) and ``coverage.csv`` (one row per outcome class and method, through
    the shared CSV writer :func:`harness.report.tables.delimited`) into ``out`` (created), atomically."""
    from harness.io import atomic_write_json, atomic_write_text
    from harness.report.tables import delimited

    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / DESIGN_FILES[0], res.to_dict())
    atomic_write_text(out / DESIGN_FILES[1], delimited(res.table_rows(), ",", columns=res.COLUMNS))
    return [str(out / n) for n in DESIGN_FILES]


def _design_coverage(
    run, population, reps, b, seed, sampling, write_evidence, evidence_file, description, fmt, result_out, out
):
    """``harness coverage --run RUN``: :func:`harness.studies.coverage.goldset_run.run_design_coverage`; the files go
    to ``out`` when given."""
    from harness.studies.coverage.goldset_run import design_entry, run_design_coverage, write_design_evidence

    b = 199 if b is None else b
    from harness.evaluation.runs import load_run

    res = run_design_coverage(load_run(run), population, reps=reps, b=b, seed=seed, progress=True, sampling=sampling)
    if out is not None:
        res.files += _write_design(res, out)
    if write_evidence:
        command = f"harness coverage --run {run} " + " ".join(f"--population {p}" for p in population)
        command += "" if sampling is None else f" --sampling {sampling}"
        entry = design_entry(res, description=description, generated_by=f"{command} --reps {reps}")
        res.files.append(str(write_design_evidence(entry, *([] if evidence_file is None else [evidence_file]))))
    emit("coverage-design", res, fmt, result_out, path=out, field="--result-out")


def _coverage_inputs(population: list[str]) -> list[tuple[str, Path]]:
    """The files a coverage study reads: each CSV, and each known-item folder's ``per_document.jsonl`` and
    ``summary.json`` (its own coverage files are written into that folder by default, so the folder itself is not
    an input)."""
    from harness.studies.coverage.suite import SYNTHETIC

    files: list[tuple[str, Path]] = []
    for src in population:
        if src == SYNTHETIC:
            continue
        p = Path(src)
        files += [("--population", p)] if src.lower().endswith(".csv") else [
            ("--population", p / "per_document.jsonl"), ("--population", p / "summary.json")
        ]  # fmt: skip
    return files


def _coverage_outputs(population: list[str], out: Path | None, result_out: str, evidence: Path | None) -> list:
    """The paths a coverage study writes: its files in ``--out`` (one population: ``coverage.json``/``.csv`` and the
    plots, by default in the population's folder; several: ``suite.json``/``.csv`` and ``populations/``),
    ``--result-out`` and ``--evidence-file``."""
    from harness.studies.coverage.suite import SYNTHETIC

    own = len(population) == 1 and population[0] != SYNTHETIC and not population[0].lower().endswith(".csv")
    folder = out if out is not None else (Path(population[0]) if own else None)
    plots = [f"{kind}_vs_k.{ext}" for kind in ("coverage", "width") for ext in ("svg", "png")]
    names = ("coverage.json", "coverage.csv", *plots, "suite.json", "suite.csv", "populations")
    written = [] if folder is None else [("--out", folder / n) for n in names]
    return [*written, ("--result-out", result_out), ("--evidence-file", evidence)]
