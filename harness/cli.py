"""Command line: a thin typer layer over the library verbs (no logic of its own).

Exit codes for verbs that judge: 0 pass, 1 fail, 2 unusable input. Every :class:`~harness.errors.HarnessError`
becomes one line on stderr and its exit code.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import typer
from rich.console import Console

from harness.errors import HarnessError

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Retrieval benchmark harness for RAG systems.")
goldset_app = typer.Typer(no_args_is_help=True, help="Gold-set maintenance.")
app.add_typer(goldset_app, name="goldset")

_WIDTH = None if sys.stdout.isatty() else int(os.environ.get("COLUMNS", "150"))
console = Console(width=_WIDTH)
err_console = Console(stderr=True, width=_WIDTH)

WORKDIR = typer.Option(Path(".harness"), "--workdir", help="Derived files (database, indexes, caches).")
RUNS_DIR = typer.Option(Path("runs"), "--runs-dir", help="Where run records go.")


def _fail(exc: HarnessError) -> None:
    err_console.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(exc.exit_code)


@app.command()
def ingest(
    corpus_dir: Path = typer.Argument(..., help="Corpus folder: Markdown files plus optional metadata.jsonl."),
    workdir: Path = WORKDIR,
    chunker: str = typer.Option("md-words-v1", help="Chunker id."),
    name: str = typer.Option(None, help="Corpus name (default: folder name)."),
) -> None:
    """Ingest a Markdown corpus into the corpus database (a no-op when unchanged)."""
    from harness.corpus.ingest import ingest as do_ingest

    t0 = time.perf_counter()
    try:
        db, man, created = do_ingest(corpus_dir, workdir, chunker_id=chunker, name=name, progress=True)
    except HarnessError as exc:
        _fail(exc)
    state = "ingested" if created else "unchanged, nothing to do"
    secs = man.ingest_seconds if created else time.perf_counter() - t0
    console.print(
        f"{man.corpus_id}: {man.n_documents} documents, {man.n_chunks} chunks, {man.n_words} words, "
        f"{man.date_min} .. {man.date_max}, chunker {man.chunker_id} ({state}; {secs:.1f} s)\n{db}"
    )


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
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Run systems on a gold set over a corpus, print the tables and write a run record."""
    from harness.pipeline import RunOptions
    from harness.pipeline import run as do_run
    from harness.report.terminal import render_run
    from harness.runs import load_run

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
    log = (lambda m: err_console.print(m, highlight=False)) if not as_json else None
    try:
        path = do_run(
            goldset,
            corpus,
            systems.split(","),
            workdir=workdir,
            runs_dir=runs_dir,
            run_id=run_id,
            options=opts,
            progress=not as_json,
            log=log,
        )
        rec = load_run(path)
    except HarnessError as exc:
        _fail(exc)
    if as_json:
        sys.stdout.write(json.dumps(rec.summary, indent=2, ensure_ascii=False) + "\n")
    else:
        render_run(rec, console)
        console.print(f"run record: {path}")


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
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Validate a gold set: exit 0 valid, 1 invalid records, 2 unusable input. Never modifies input."""
    from harness.validate import render
    from harness.validate import validate as do_validate

    try:
        report = do_validate(dataset, corpus_dir=corpus, correction=correction, contract=contract)
    except HarnessError as exc:
        _fail(exc)
    if as_json:
        sys.stdout.write(report.to_json() + "\n")
    else:
        render(report, console)
    raise typer.Exit(report.exit_code)


@goldset_app.command("apply")
def goldset_apply(
    dataset: Path = typer.Argument(..., help="Dataset folder (never modified)."),
    correction: Path = typer.Option(..., "--correction", help="JSONL correction file."),
    out: Path = typer.Option(..., "--out", help="New dataset folder (must not exist)."),
    corpus: Path = typer.Option(None, "--corpus", help="Corpus folder to check the corrected set against."),
    contract: Path = typer.Option(None, "--contract"),
) -> None:
    """Write the corrected set as a new minor version, only when it validates (exit 0), else exit 1."""
    from harness.goldset.corrections import apply_correction
    from harness.validate import render

    try:
        res = apply_correction(dataset, correction, out, corpus_dir=corpus, contract=contract)
    except HarnessError as exc:
        _fail(exc)
    render(res.report, console)
    if res.written:
        console.print(f"wrote {res.out_dir} (version {res.version}; records changed: {', '.join(res.records_changed)})")
    else:
        console.print("[red]not written: the corrected set does not validate[/red]")
    raise typer.Exit(res.exit_code)


@app.command()
def embed(
    corpus: Path = typer.Option(..., "--corpus", help="Corpus folder (ingested first if needed)."),
    workdir: Path = WORKDIR,
    model: str = typer.Option(None, help="Model: wordllama (default, packaged), minilm, a local folder or a hub id."),
    index_fraction: float = typer.Option(None, help="Index whole documents in date order until this share of chunks."),
    until: str = typer.Option(None, help="Index documents dated up to this ISO date."),
    batch_chunks: int = typer.Option(2048, help="Chunks per committed batch (an interrupted build resumes)."),
    engine: str = typer.Option("local", help="local, or ray (extra 'ray': Ray Data workers on 127.0.0.1)."),
    workers: int = typer.Option(2, help="Ray workers (engine ray)."),
    binarize: str = typer.Option("sign", help="sign (value > 0) or centered (value > the slice's mean; own table)."),
    device: str = typer.Option("cpu", help="Ray workers' device: cpu or cuda (GPU actors)."),
    shard_size: int = typer.Option(2048, help="Ray: chunks per shard (the unit of retry and resume)."),
) -> None:
    """Build or extend the binary vector index (cached, resumable)."""
    from harness.corpus.ingest import ingest as do_ingest
    from harness.corpus.store import Corpus
    from harness.retrieve.embed import DEFAULT_MODEL, load_embedder
    from harness.retrieve.vector import VectorIndex

    try:
        db, _man, _created = do_ingest(corpus, workdir, progress=True)
        with Corpus(db) as cp:
            if engine == "ray":
                from harness.retrieve.ray_embed import ray_build

                stats = ray_build(
                    cp,
                    workdir,
                    model=model or DEFAULT_MODEL,
                    index_fraction=index_fraction,
                    until=until,
                    workers=workers,
                    device=device,
                    shard_size=shard_size,
                    binarize=binarize,
                    progress=True,
                )
                console.print(stats)
                return
            if engine != "local":
                raise HarnessError(f"--engine: {engine!r} is not 'local' or 'ray'")
            emb = load_embedder(model or DEFAULT_MODEL, models_dir=workdir / "models")
            idx = VectorIndex.build(
                cp,
                workdir,
                emb,
                index_fraction=index_fraction,
                until=until,
                progress=True,
                batch_chunks=batch_chunks,
                binarize=binarize,
            )
            cov = idx.coverage()
            st = idx.build_stats
    except HarnessError as exc:
        _fail(exc)
    console.print(
        f"{emb.model_id} ({emb.dim} {idx.binarize} bits): {cov['n_indexed_chunks']}/{cov['n_total_chunks']} chunks "
        "indexed "
        f"({cov['n_indexed_docs']}/{cov['n_total_docs']} documents); embedded {st['n_embedded']}, cache hits "
        f"{st['n_cache_hits']}, inserted {st['n_inserted']} in {st['seconds']:.1f} s"
    )


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
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Score rankings produced by any other system with the same metrics and write a run record."""
    from harness.pipeline import RunOptions, evaluate_rankings
    from harness.report.terminal import render_run
    from harness.runs import load_run

    opts = RunOptions(doc_depth=doc_depth, chunk_depth=chunk_depth, clustering=clustering, seed=seed)
    try:
        path = evaluate_rankings(goldset, rankings, runs_dir=runs_dir, run_id=run_id, options=opts, level=level)
        rec = load_run(path)
    except HarnessError as exc:
        _fail(exc)
    if as_json:
        sys.stdout.write(json.dumps(rec.summary, indent=2, ensure_ascii=False) + "\n")
    else:
        render_run(rec, console)
        console.print(f"run record: {path}")


def _parse_guards(guards: list[str]) -> dict[str, float]:
    out = {}
    for g in guards or []:
        cat, _, m = g.partition(":")
        try:
            out[cat] = float(m)
        except ValueError:
            raise HarnessError(f"--guard {g!r}: expected CATEGORY:MARGIN") from None
    return out


@app.command()
def compare(
    run_a: Path = typer.Argument(..., help="Baseline run record (RUN)."),
    run_b: Path = typer.Argument(..., help="Candidate run record (RUN); may be the same folder as RUN_A."),
    metrics: str = typer.Option(",".join(("mrr", "recall@5", "recall@10", "all_hop@10", "evidence_recall@10"))),
    system_a: str = typer.Option(None, "--system-a"),
    system_b: str = typer.Option(None, "--system-b"),
    reps: int = typer.Option(10000, help="Randomisation-test sign flips."),
    seed: int = typer.Option(0),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Paired differences B - A with clustered intervals, randomisation tests and win/tie/loss counts."""
    from harness.compare import compare_runs
    from harness.report.terminal import render_comparison

    try:
        rep = compare_runs(
            run_a,
            run_b,
            metrics=tuple(m.strip() for m in metrics.split(",") if m.strip()),
            system_a=system_a,
            system_b=system_b,
            reps=reps,
            seed=seed,
        )
    except HarnessError as exc:
        _fail(exc)
    if as_json:
        sys.stdout.write(json.dumps(rep.to_dict(), indent=2, ensure_ascii=False) + "\n")
    else:
        render_comparison(rep, console)


@app.command()
def gate(
    baseline: Path = typer.Option(..., "--baseline", help="Baseline run record."),
    candidate: Path = typer.Option(..., "--candidate", help="Candidate run record."),
    metric: str = typer.Option("mrr"),
    margin: float = typer.Option(0.02, help="Non-inferiority margin (absolute, metric units)."),
    alpha: float = typer.Option(0.05, help="One-sided level."),
    system_baseline: str = typer.Option(None, "--system-baseline"),
    system_candidate: str = typer.Option(None, "--system-candidate"),
    guard: list[str] = typer.Option(None, "--guard", help="Per-category guard CATEGORY:MARGIN (repeatable)."),
    verdict: Path = typer.Option(Path("gate-verdict.json"), "--verdict", help="Where the JSON verdict goes."),
) -> None:
    """Non-inferiority gate: exit 0 pass, 1 fail, 2 unusable or incomparable input."""
    from harness.compare import gate as do_gate

    try:
        v = do_gate(
            baseline,
            candidate,
            metric=metric,
            margin=margin,
            alpha=alpha,
            system_baseline=system_baseline,
            system_candidate=system_candidate,
            category_guards=_parse_guards(guard),
            verdict_path=verdict,
        )
    except HarnessError as exc:
        _fail(exc)
    console.print(v.line(), highlight=False, soft_wrap=True)
    for cat, g in v.category_guards.items():
        console.print(f"  guard {cat}: diff {g['diff']:+.4f} vs -{g['margin']:.4f}: {'ok' if g['passed'] else 'FAIL'}")
    for w in v.warnings:
        console.print(f"[yellow]warning: {w}[/yellow]")
    raise typer.Exit(v.exit_code)


@app.command()
def power(
    run: Path = typer.Option(..., "--run", help="Run record."),
    metric: str = typer.Option("mrr"),
    delta: float = typer.Option(0.02, help="Difference to detect."),
    system: str = typer.Option(None),
    alpha: float = typer.Option(0.05),
    target_power: float = typer.Option(0.8, "--power"),
    baseline: Path = typer.Option(None, "--baseline", help="Plan for the paired difference RUN - BASELINE."),
    system_baseline: str = typer.Option(
        None, "--system-baseline", help="Baseline system (when BASELINE holds several)."
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Clusters and questions needed to detect DELTA with the given power, from the run's ICC and cluster sizes."""
    from harness.compare import power_plan

    try:
        plan = power_plan(
            run,
            metric=metric,
            delta=delta,
            system=system,
            alpha=alpha,
            power=target_power,
            baseline=baseline,
            system_baseline=system_baseline,
        )
    except HarnessError as exc:
        _fail(exc)
    if as_json:
        sys.stdout.write(json.dumps(plan, indent=2) + "\n")
        return
    console.print(
        f"{plan['system']} {metric}{' (paired differences)' if plan['paired'] else ''}: "
        f"ICC {plan['icc']:.3f}, DEFF {plan['deff']:.2f}, mean cluster size "
        f"{plan['mean_cluster_size']:.2f} (CV {plan['cv_cluster_size']:.2f}), SD {plan['sd']:.3f}\n"
        f"to detect {delta} with {target_power:.0%} power at alpha {alpha}: {plan['clusters_needed']} clusters, "
        f"about {plan['questions_needed']} questions (now {plan['current_clusters']} clusters, "
        f"{plan['current_questions']} questions)"
    )
    if plan.get("note"):
        console.print(f"[yellow]{plan['note']}[/yellow]")


@app.command()
def sweep(
    run: Path = typer.Option(..., "--run", help="Run record holding the bm25 and vector systems."),
    w: str = typer.Option(
        "0:1:0.05", "--w", help="Weight grid start:stop:step or a comma list (W x BM25 + (1-W) x vector)."
    ),
    metric: str = typer.Option("mrr"),
    level: str = typer.Option(None, help="document or chunk (default: the metric's level)."),
    goldset: Path = typer.Option(None, "--goldset", help="Gold set (default: the path recorded in the run)."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Choose the fusion weight on the dev split; report it on the test split only."""
    from harness.sweep import parse_weight_grid, render_sweep
    from harness.sweep import sweep as do_sweep

    try:
        res = do_sweep(run, parse_weight_grid(w), metric, level, goldset_path=goldset)
    except HarnessError as exc:
        _fail(exc)
    if as_json:
        sys.stdout.write(json.dumps(res.to_dict(), indent=2) + "\n")
    else:
        render_sweep(res, console)


@app.command()
def report(
    runs: list[Path] = typer.Argument(..., help="Run records (comparable: same gold set, corpus, chunker, depths)."),
    out: Path = typer.Option(None, "--out", help="Output file (default report.html, or report.md for markdown)."),
    fmt: str = typer.Option("html", "--format", help="html (self-contained) or markdown (pull-request comment)."),
    baseline: str = typer.Option(None, "--baseline", help="Baseline system (or run folder) for paired differences."),
    margin: float = typer.Option(0.02, help="Gate margin drawn on the forest plot."),
    known_item: Path = typer.Option(None, "--known-item", help="Known-item output folder to include."),
    coverage: Path = typer.Option(None, "--coverage", help="Coverage study JSON to include."),
) -> None:
    """Write one report (HTML with inline SVG figures, or Markdown) from run records only."""
    from harness.report.html import write_report

    if out is None:
        out = Path("report.md" if fmt.lower() in ("markdown", "md") else "report.html")
    try:
        path = write_report(
            runs, out, fmt=fmt, baseline=baseline, margin=margin, known_item=known_item, coverage=coverage
        )
    except HarnessError as exc:
        _fail(exc)
    console.print(f"wrote {path}")


def _csv_ints(text: str, name: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise HarnessError(f"{name}: {text!r} is not a comma-separated list of integers") from None


@app.command("known-item")
def known_item(
    corpus: Path = typer.Option(..., "--corpus", help="Corpus folder."),
    out: Path = typer.Option(..., "--out", help="Output folder (written atomically)."),
    chunk_words: str = typer.Option(
        "100", help="Chunk size in words; a comma list (50,100,400) runs the sensitivity study."
    ),
    query_words: int = typer.Option(20, help="Query = the first N words of each chunk."),
    systems: str = typer.Option("bm25", help="Comma-separated: bm25, tfidf, vector (the first is system A)."),
    coverage: bool = typer.Option(False, "--coverage", help="Also run the coverage study on the outcomes."),
    reps: int = typer.Option(5000, help="Coverage: samples per design."),
    k: str = typer.Option("5,10,20,40,80", "--K", help="Coverage: documents per sample (SRS design)."),
    workers: int = typer.Option(2, help="Search worker processes."),
    model: str = typer.Option(None, "--model", help="Embedding model of the vector system (as in `harness embed`)."),
    workdir: Path = WORKDIR,
    overwrite: bool = typer.Option(False, help="Replace an existing output folder."),
) -> None:
    """Label-free known-item evaluation (chunk-as-query, hit@1 micro/macro, ICC, DEFF) on a corpus."""

    from harness.known_item import run_chunk_size_sensitivity, run_known_item, run_study

    try:
        sizes = _csv_ints(chunk_words, "--chunk-words")
        if len(sizes) > 1:
            res = run_chunk_size_sensitivity(
                corpus,
                out,
                sizes=sizes,
                query_words=query_words,
                systems=systems,
                workers=workers,
                vector_model=model,
                workdir=workdir,
                overwrite=overwrite,
                progress=True,
            )
        elif coverage:
            res = run_study(
                corpus,
                out,
                chunk_words=sizes[0],
                query_words=query_words,
                systems=systems,
                reps=reps,
                ks=_csv_ints(k, "--K"),
                workers=workers,
                vector_model=model,
                workdir=workdir,
                overwrite=overwrite,
                progress=True,
            )
        else:
            res = run_known_item(
                corpus,
                out,
                chunk_words=sizes[0],
                query_words=query_words,
                systems=systems,
                workers=workers,
                vector_model=model,
                workdir=workdir,
                overwrite=overwrite,
                progress=True,
            )
    except HarnessError as exc:
        _fail(exc)
    console.print(res)
    console.print(f"outputs: {out}")


@app.command("coverage")
def coverage_cmd(
    population: Path = typer.Option(..., "--population", help="A known-item output folder (per_document.jsonl)."),
    reps: int = typer.Option(5000, help="Samples per design."),
    k: str = typer.Option("5,10,20,40,80", "--K", help="Documents per sample (SRS design)."),
    types: int = typer.Option(6, help="Two-stage design: types sampled (0 skips the design)."),
    per_type: int = typer.Option(4, help="Two-stage design: documents per type."),
    b: int = typer.Option(999, "--B", help="Inner bootstrap replicates."),
    seed: int = typer.Option(0),
    system: str = typer.Option(None, help="Which system's outcomes (default: the first)."),
    out: Path = typer.Option(None, "--out", help="Output folder (default: the population folder)."),
) -> None:
    """Coverage of interval methods when an evaluator samples documents from this corpus (seeded simulation)."""

    from harness.coverage import run_coverage

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
    console.print(res)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
