"""Verbs that prepare a corpus: ingest and embed."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from harness.cli._checks import at_least
from harness.cli._common import WORKDIR, app, console
from harness.cli.run import MODEL_HELP
from harness.errors import HarnessInputError


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
    db, man, created = do_ingest(corpus_dir, workdir, chunker_id=chunker, name=name, progress=True)
    state = "ingested" if created else "unchanged, nothing to do"
    secs = man.ingest_seconds if created else time.perf_counter() - t0
    what = "read, chunk and store: the manifest's ingest_seconds" if created else "checking the corpus"
    console.print(
        f"{man.corpus_id}: {man.n_documents} documents, {man.n_chunks} chunks, {man.n_words} words, "
        f"{man.date_min} .. {man.date_max}, chunker {man.chunker_id} ({state}; {secs:.1f} s {what})\n{db}"
    )


@app.command()
def embed(
    corpus: Path = typer.Option(..., "--corpus", help="Corpus folder (ingested first if needed)."),
    workdir: Path = WORKDIR,
    model: str = typer.Option(None, help=MODEL_HELP),
    index_fraction: float = typer.Option(None, help="Index whole documents in date order until this share of chunks."),
    until: str = typer.Option(None, help="Index documents dated up to this ISO date."),
    batch_chunks: int = typer.Option(
        512, help="Chunks per committed batch (an interrupted build resumes).", callback=at_least(1)
    ),
    engine: str = typer.Option("local", help="local (worker processes), or ray (extra 'ray': Ray Data on 127.0.0.1)."),
    workers: int = typer.Option(
        None,
        help="Embedding workers, one thread each (default: one per core; engine ray: 2 actors).",
        callback=at_least(1),
    ),
    binarize: str = typer.Option(
        None, help="sign (value > 0) or centered (value > the slice's mean; own table); default: the model's."
    ),
    rescore: int = typer.Option(
        None,
        help="Float rescoring the index will serve (M >= 1: check that the embedding cache holds every slice vector "
        "and report their size; 0: bits only). Default 1.",
        callback=at_least(0),
    ),
    device: str = typer.Option("cpu", help="Ray workers' device: cpu or cuda (GPU actors)."),
    shard_size: int = typer.Option(
        2048, help="Ray: chunks per shard (the unit of retry and resume).", callback=at_least(1)
    ),
) -> None:
    """Build or extend the binary vector index (cached, resumable, sharded over the cores)."""
    from harness.cli.run import vector_options
    from harness.corpus.ingest import ingest as do_ingest
    from harness.corpus.store import Corpus
    from harness.retrieve.embed import load_embedder
    from harness.retrieve.vector import VectorIndex

    opts = vector_options(model, index_fraction, until, "sqlite-vec", binarize, rescore)
    if engine not in ("local", "ray"):
        raise HarnessInputError(f"--engine: {engine!r} is not 'local' or 'ray'")
    if workers is not None and workers < 1:
        raise HarnessInputError(f"--workers: must be >= 1 (got {workers})")
    db, _man, _created = do_ingest(corpus, workdir, progress=True)
    with Corpus(db) as cp:
        if engine == "ray":
            from harness.retrieve.ray_embed import ray_build

            stats = ray_build(
                cp,
                workdir,
                model=opts.model,
                index_fraction=opts.index_fraction,
                until=opts.until,
                workers=workers or 2,
                device=device,
                shard_size=shard_size,
                binarize=opts.binarize,
                progress=True,
            )
            console.print(stats)
            return
        emb = load_embedder(opts.model, models_dir=workdir / "models")
        idx = VectorIndex.build(
            cp,
            workdir,
            emb,
            index_fraction=opts.index_fraction,
            until=opts.until,
            progress=True,
            batch_chunks=batch_chunks,
            binarize=opts.binarize,
            rescore=opts.rescore,
            workers=workers,
        )
        cov = idx.coverage()
        st = idx.build_stats
        floats = idx.float_vectors().nbytes if opts.rescore else None
    rate = f", {st['texts_per_second']:.1f} texts/s" if st.get("texts_per_second") else ""
    console.print(
        f"{emb.model_id} ({emb.dim} {idx.binarize} bits): {cov['n_indexed_chunks']}/{cov['n_total_chunks']} chunks "
        "indexed "
        f"({cov['n_indexed_docs']}/{cov['n_total_docs']} documents); embedded {st['n_embedded']} on "
        f"{st.get('workers', 1)} worker(s){rate}, cache hits {st['n_cache_hits']}, inserted {st['n_inserted']} in "
        f"{st['seconds']:.1f} s (embedding, binarising and index inserts, model loading excluded)"
        + (
            ""
            if floats is None
            else f"; rescore M={opts.rescore}: every float vector cached ({floats / 2**20:.1f} MiB)"
        )
    )


@app.command()
def show(
    chunk_id: str = typer.Argument(..., help="Chunk id: <document id>#<index> (as gold sets and runs cite it)."),
    corpus: Path = typer.Option(..., "--corpus", help="Corpus folder (read only)."),
    around: int = typer.Option(
        0, "--around", help="Also show this many chunks before and after it.", callback=at_least(0)
    ),
    chunker: str = typer.Option("md-words-v1", "--chunker", help="Chunker whose chunk ids CHUNK_ID uses."),
    as_json: bool = typer.Option(False, "--json", help="Print the chunk(s) as JSON."),
) -> None:
    """Print a chunk's text and heading path (and its neighbours with --around); control characters escaped."""
    import json

    from rich.text import Text

    from harness.corpus.lookup import lookup_chunk, visible

    res = lookup_chunk(corpus, chunk_id, chunker=chunker, around=around)
    if as_json:
        console.out(visible(json.dumps(res.to_dict(), ensure_ascii=False, indent=2)), highlight=False)
        return
    head = f"{res.doc_id}: {res.title or '(no title)'}; {res.path}; {res.date or 'no date'}; "
    head += f"{res.n_chunks} chunks under {res.chunker}"
    console.print(Text(visible(head)), soft_wrap=True)
    for c in res.chunks:
        mark = "▶ " if c.index == res.index else "  "
        path = " > ".join(c.heading_path) or "(no heading)"
        console.print(
            Text(
                visible(f"\n{mark}{c.chunk_id}  [{path}]  {c.n_words} words, characters {c.char_start}-{c.char_end}"),
                style="bold" if c.index == res.index else "dim",
            ),
            soft_wrap=True,
        )
        console.print(Text(visible(c.text)), soft_wrap=True)
