"""The vector store: one sqlite-vec ``vec0`` table of binary chunk vectors per (model, weights, binarisation), its
record, its centring vector, and the resumable build that fills it from the embedding cache.

Tables (in the corpus database, next to ``chunks``)
---------------------------------------------------
* ``vec_<model>_<hash16>`` (sign bits) or ``vec_<model>_<hash16>_ctr`` (centred bits):
  ``CREATE VIRTUAL TABLE ... USING vec0(embedding bit[D], doc_pos integer)``, rowid = the chunk's rowid, bits packed
  LSB first (:mod:`harness.retrieve.binary`), ``doc_pos`` = the document's position in chronological order
  (:mod:`harness.retrieve.vector.slices`).
* ``vector_indexes``: per table the model id, weights hash, dimension, chunker id, corpus hash, bit order,
  binarisation and a hash of the chronological document order. A table whose record does not match the embedder and
  corpus is never used: tables of the same model id with other weights are dropped ("stale"), a table whose record
  disagrees otherwise is rebuilt.
* ``vector_centers``: one row per centred table: ``mean`` (float32 little-endian bytes), its sha256, and the slice
  it was computed over.

Builds go in batches of chunks; each batch is committed to the cache, then to the index, each in one transaction
(:func:`embed_batches`, the one batch loop of both binarisations). A build that stops at any point loses at most the
batch in flight and resumes where it stopped: chunks already in the index are skipped, vectors already in the cache
are not recomputed, nothing is inserted twice.

Centring rule (``binarize="centered"``)
---------------------------------------
The mean is always that of **the build's slice** (the chunks the index serves, duplicates counted per chunk),
never of a history: a build first makes sure every slice chunk's float vector is in the embedding cache (embedding
only the missing texts, in committed batches), then computes the mean from the cache (float64 sums over fixed
blocks of 4,096 chunks in rowid order, then cast to float32: independent of ``batch_chunks``). If it differs
(bytewise) from the recorded mean, the table is emptied and the new mean recorded in one transaction, and every
slice chunk is re-binarised from the cached floats (no re-embedding); otherwise only the missing rows are inserted.
So extending a partial index (or restricting it with ``until``) re-centres the whole table, resuming a killed build
continues with the same mean, and the table always equals a clean build of the same slice bit for bit. An empty
slice has mean 0 (= sign bits).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import apsw
import numpy as np

from harness.corpus.store import Corpus
from harness.derived import check_manifest, damaged_notice, write_manifest
from harness.errors import HarnessInputError
from harness.io import canonical_json
from harness.progress import progress_bar
from harness.retrieve.binary import BIT_ORDER, MEAN_BLOCK, binarisation_rule, pack_centered, pack_signs
from harness.retrieve.embed.workers import passage_embedder
from harness.retrieve.vector._sqlite import IN_CHUNK, immediate, now
from harness.retrieve.vector.cache import Counted, EmbeddingCache, embed_into_cache
from harness.retrieve.vector.slices import CorpusSlice

__all__ = ["META_SQL", "build_table", "embedder_config", "insert_rows", "table_name"]

META_SQL = """
CREATE TABLE IF NOT EXISTS vector_indexes(
  table_name TEXT PRIMARY KEY, model_id TEXT NOT NULL, weights_sha256 TEXT NOT NULL, dim INTEGER NOT NULL,
  chunker_id TEXT NOT NULL, corpus_hash TEXT NOT NULL, bit_order TEXT NOT NULL, binarisation TEXT NOT NULL,
  doc_order_sha256 TEXT NOT NULL, created_at TEXT NOT NULL, meta_json TEXT NOT NULL DEFAULT '{}');
CREATE TABLE IF NOT EXISTS vector_centers(
  table_name TEXT PRIMARY KEY, dim INTEGER NOT NULL, mean BLOB NOT NULL, mean_sha256 TEXT NOT NULL,
  n_chunks INTEGER NOT NULL, n_docs INTEGER NOT NULL, updated_at TEXT NOT NULL);
"""


Row = tuple[int, int, str]  # (doc_pos, chunk rowid, text_sha256)


def table_name(model_id: str, weights_sha256: str, binarize: str = "sign") -> str:
    """The vec0 table of a model: ``vec_<model slug>_<weights_sha256[:16]>`` (+ ``_ctr`` for centred bits)."""
    slug = re.sub(r"[^a-z0-9]+", "_", model_id.lower()).strip("_")[:40] or "model"
    return f"vec_{slug}_{weights_sha256[:16]}" + ("" if binarize == "sign" else "_ctr")


def _doc_order_sha(order: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(order).encode("utf-8")).hexdigest()


def embedder_config(embedder) -> dict:
    """``embedder.config()``, or its identity for a minimal embedder without ``config()``."""
    try:
        return dict(embedder.config())
    except Exception:  # noqa: BLE001 - a minimal embedder without config()
        return {"model_id": embedder.model_id, "weights_sha256": embedder.weights_sha256, "dim": int(embedder.dim)}


def _drop_index(conn, table: str) -> None:
    """Drop a vector table with its record and centring vector (inside the caller's transaction)."""
    conn.execute(f'DROP TABLE IF EXISTS "{table}"')
    conn.execute("DELETE FROM vector_indexes WHERE table_name=?", (table,))
    conn.execute("DELETE FROM vector_centers WHERE table_name=?", (table,))


def table_digest(conn, table: str) -> tuple[int, str]:
    """``(rows, sha256)`` of a vector table's content: every ``(rowid, bits, doc_pos)`` in rowid order."""
    h = hashlib.sha256()
    n = 0
    for rid, blob, pos in conn.execute(f'SELECT rowid, embedding, doc_pos FROM "{table}" ORDER BY rowid'):
        h.update(f"{rid}:{pos}:".encode())
        h.update(bytes(blob))
        n += 1
    return n, h.hexdigest()


def _manifest_path(db: Path, table: str) -> Path:
    """The derived-file manifest of one vector table: ``<corpus db>.<table>.manifest.json`` beside the database."""
    return db.with_name(f"{db.name}.{table}.manifest.json")


def _check_table(conn, db: Path, table: str) -> str | None:
    """``None`` when the table matches its manifest (issue 26, item 2: the database file's size and mtime are the
    gate, the table's content digest is taken again only when they changed), else the problem. A table without a
    manifest (built before manifests) is checked by its record only, as before, and gets one at the end of the build.
    """
    man = _manifest_path(db, table)
    if not man.is_file():
        return None
    recorded: dict = {}
    with contextlib.suppress(OSError, ValueError):
        recorded = json.loads(man.read_text("utf-8")).get("facts", {})

    def verify(_name: str, _path: Path) -> str | None:
        n, digest = table_digest(conn, table)
        if (n, digest) != (recorded.get("rows"), recorded.get("sha256")):
            return (
                f"table {table}: {n} rows sha256 {digest[:12]}, the manifest says {recorded.get('rows')} rows "
                f"sha256 {str(recorded.get('sha256'))[:12]}"
            )
        return None

    return check_manifest(man, "vector-index", {"corpus.db": db}, verify=verify)


def _stamp_table(conn, db: Path, table: str) -> None:
    """Write the table's manifest: its row count and content digest, and the database file's size and mtime."""
    n, digest = table_digest(conn, table)
    with contextlib.suppress(OSError):
        write_manifest(
            _manifest_path(db, table),
            "vector-index",
            {"corpus.db": db},
            facts={"rows": n, "sha256": digest},
            content_hash=False,
        )


def _prepare_table(conn, embedder, table: str, want: dict, dim: int, stats: dict) -> None:
    """Drop stale tables of the model, rebuild a table whose record disagrees, create a missing one (one
    transaction). Records ``dropped_stale_tables`` and ``rebuilt`` in ``stats``."""
    with immediate(conn):
        conn.execute(META_SQL)
        for (other,) in conn.execute(
            "SELECT table_name FROM vector_indexes WHERE model_id=? AND weights_sha256<>? AND table_name<>? "
            "ORDER BY table_name",
            (embedder.model_id, embedder.weights_sha256, table),
        ).fetchall():
            _drop_index(conn, other)
            stats["dropped_stale_tables"].append(other)
        row = conn.execute(
            "SELECT model_id, weights_sha256, dim, chunker_id, corpus_hash, bit_order, binarisation, "
            "doc_order_sha256 FROM vector_indexes WHERE table_name=?",
            (table,),
        ).fetchone()
        exists = bool(conn.execute("SELECT 1 FROM sqlite_master WHERE name=?", (table,)).fetchall())
        if row is not None:
            have = dict(zip(want, row, strict=True))
            diff = sorted(k for k in want if str(have[k]) != str(want[k]))
            if diff or not exists:
                stats["rebuilt"] = diff or ["table missing"]
                _drop_index(conn, table)
                row, exists = None, False
        elif exists:  # a table without a record: unknown provenance
            stats["rebuilt"] = ["no record"]
            _drop_index(conn, table)
            exists = False
        if row is None:
            conn.execute(f'CREATE VIRTUAL TABLE "{table}" USING vec0(embedding bit[{dim}], doc_pos integer)')
            conn.execute(
                "INSERT INTO vector_indexes VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (table, *(want[k] for k in want), now(), canonical_json({"embedder": embedder_config(embedder)})),
            )


def _cached_vectors(
    conn, cache: EmbeddingCache, key: int, embedder, batch: Sequence[Row], dim: int, embed: bool, progress=None
):
    """Float vectors of one batch: from the cache, the missing ones embedded and committed to the cache first
    (``embed=False``: a missing vector is an error; ``progress`` goes to :func:`embed_into_cache`).

    Returns ``(vectors {text_sha256: float32 (dim,)}, missing text hashes (embedded now), embed_seconds)``.
    """
    shas = [b[2] for b in batch]
    vecs = cache.get_many(key, shas, dim)
    missing = [s for s in dict.fromkeys(shas) if s not in vecs]
    secs = 0.0
    if missing and not embed:
        raise HarnessInputError(f"{cache.path}: slice vectors vanished from the cache during the build")
    if missing:
        first_rowid: dict[str, int] = {}
        for _, rid, h in batch:
            first_rowid.setdefault(h, rid)
        want = [first_rowid[h] for h in missing]
        texts: dict[int, str] = {}
        for i in range(0, len(want), IN_CHUNK):
            part = want[i : i + IN_CHUNK]
            marks = ",".join("?" * len(part))
            texts.update(conn.execute(f"SELECT rowid, text FROM chunks WHERE rowid IN ({marks})", part).fetchall())
        emb, secs = embed_into_cache(cache, key, embedder, missing, [texts[r] for r in want], dim, progress=progress)
        vecs.update({h: emb[i] for i, h in enumerate(missing)})
    return vecs, missing, secs


def embed_batches(
    conn,
    cache: EmbeddingCache,
    key: int,
    embedder,
    rows: Sequence[Row],
    dim: int,
    batch_chunks: int,
    *,
    table: str | None,
    pack: Callable[[np.ndarray], np.ndarray] | None,
    stats: dict | None,
    embed: bool = True,
    bar=None,
) -> None:
    """The one batch loop of a build: per batch of ``rows``, the float vectors from the cache (the missing ones
    embedded and committed first), then, with ``pack``, their bits inserted into ``table`` (one transaction).

    Args:
        rows: ``(doc_pos, rowid, text_sha256)`` in insertion order.
        pack: ``float32 (n, dim) -> uint8 (n, dim/8)`` (sign or centred bits), or ``None`` to fill the cache only.
        stats: counters ``n_cache_hits`` / ``n_embedded`` / ``embed_seconds`` / ``n_inserted`` to add to (``None``:
            count nothing).
        embed: embed missing vectors (``False``: a missing vector is an error).
        bar: progress callback ``bar(n)`` or ``None``.
    """
    for start in range(0, len(rows), batch_chunks):
        batch = rows[start : start + batch_chunks]
        counted = Counted(bar)
        vecs, missing, secs = _cached_vectors(conn, cache, key, embedder, batch, dim, embed, counted)
        if stats is not None:
            miss = set(missing)
            stats["n_cache_hits"] += sum(1 for b in batch if b[2] not in miss)
            stats["n_embedded"] += len(missing)
            stats["embed_seconds"] += secs
        if pack is not None:
            packed = pack(np.stack([vecs[b[2]] for b in batch]))
            insert_rows(conn, table, [(rid, packed[i].tobytes(), p) for i, (p, rid, _) in enumerate(batch)])
            if stats is not None:
                stats["n_inserted"] += len(batch)
        counted.finish(len(batch))


def _slice_mean(cache: EmbeddingCache, key: int, shas: Sequence[str], dim: int, where: str) -> np.ndarray:
    """Float32 mean of the cached vectors of ``shas`` (one per chunk, duplicates counted), zeros when empty.

    Float64 partial sums over fixed blocks of :data:`MEAN_BLOCK` chunks in the given order, added in block order,
    divided by ``len(shas)`` and rounded once to float32: the same slice always gives the same bytes.
    """
    total = np.zeros(dim, dtype=np.float64)
    for start in range(0, len(shas), MEAN_BLOCK):
        part = shas[start : start + MEAN_BLOCK]
        got = cache.get_many(key, part, dim)
        if len(got) != len(set(part)):
            raise HarnessInputError(f"{where}: {len(set(part)) - len(got)} slice vectors vanished from the cache")
        total += np.stack([got[h] for h in part]).astype(np.float64).sum(axis=0)
    if not shas:
        return np.zeros(dim, dtype=np.float32)
    return (total / len(shas)).astype(np.float32)


def _recentre(conn, table: str, dim: int, center: np.ndarray, n_chunks: int, n_docs: int) -> dict:
    """Record the slice mean; empty the table first when the recorded mean differs (one transaction)."""
    blob = center.astype("<f4").tobytes()
    info = {"n_chunks": n_chunks, "mean_sha256": hashlib.sha256(blob).hexdigest(), "recentred": False, "n_cleared": 0}
    with immediate(conn):
        row = conn.execute("SELECT mean FROM vector_centers WHERE table_name=?", (table,)).fetchone()
        n_rows = int(conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0])
        if (row is None or bytes(row[0]) != blob) and n_rows:
            conn.execute(f'DROP TABLE "{table}"')
            conn.execute(f'CREATE VIRTUAL TABLE "{table}" USING vec0(embedding bit[{dim}], doc_pos integer)')
            info["recentred"], info["n_cleared"] = True, n_rows
        conn.execute(
            "INSERT OR REPLACE INTO vector_centers VALUES (?,?,?,?,?,?,?)",
            (table, dim, blob, info["mean_sha256"], n_chunks, n_docs, now()),
        )
    return info


def insert_rows(conn, table: str, rows: list[tuple[int, bytes, int]]) -> None:
    """Insert ``(rowid, packed bits, doc_pos)`` rows in one transaction, skipping rowids already present."""
    with immediate(conn):
        present: set[int] = set()
        ids = [r[0] for r in rows]
        for i in range(0, len(ids), IN_CHUNK):
            part = ids[i : i + IN_CHUNK]
            marks = ",".join("?" * len(part))
            # the vec0 shadow table "<table>_rowids" is keyed by rowid: a point look-up, where the same IN (...) on
            # the virtual table scans it (quadratic inserts: 35 ms per batch at 200k rows, benchmarks/bench_scaling)
            present.update(
                r[0] for r in conn.execute(f'SELECT rowid FROM "{table}_rowids" WHERE rowid IN ({marks})', part)
            )
        conn.executemany(
            f'INSERT INTO "{table}"(rowid, embedding, doc_pos) VALUES (?, vec_bit(?), ?)',
            [r for r in rows if r[0] not in present],
        )


def _n_present(conn, table: str, sl: CorpusSlice) -> int | None:
    """Rows of ``table`` that are chunks of the slice, counted on sqlite-vec's rowid shadow table (a b-tree count,
    no vector read): every row for a whole-corpus slice (the table only ever holds rows of its corpus's chunks, its
    record names the corpus), a join with ``chunks`` otherwise. ``None``: no such shadow table (another layout)."""
    try:
        if sl.is_full:
            return int(conn.execute(f'SELECT count(*) FROM "{table}_rowids"').fetchone()[0])
        return int(
            conn.execute(
                f'SELECT count(*) FROM "{table}_rowids" r JOIN chunks c ON c.rowid = r.rowid '
                "WHERE c.doc_id IN (SELECT value FROM json_each(?))",
                (json.dumps(list(sl.doc_ids)),),
            ).fetchone()[0]
        )
    except apsw.SQLError:  # no such table
        return None


def build_table(
    corpus: Corpus,
    workdir: str | Path,
    embedder,
    sl: CorpusSlice,
    *,
    binarize: str,
    batch_chunks: int,
    progress: bool,
    workers: int | None = None,
) -> tuple[str, np.ndarray | None, dict]:
    """Build, extend or reuse the vec0 table of ``embedder`` over the slice ``sl`` (see the module docstring).

    Texts the cache lacks are embedded over ``workers`` processes
    (:func:`harness.retrieve.embed.workers.passage_embedder`: ``None`` = one per core for a ``per_text`` model with
    enough to embed); the result does not depend on it.

    Returns:
        ``(table, center, stats)``: the table name, the float32 centring vector (``None`` for sign bits) and the
        build statistics (see :meth:`harness.retrieve.vector.VectorIndex.build`).

    Raises:
        HarnessInputError: a table that does not hold every slice chunk after the build; an unknown ``binarize``.
    """
    t0 = time.perf_counter()
    dim = int(embedder.dim)
    conn = corpus.conn
    m = corpus.manifest
    table = table_name(embedder.model_id, embedder.weights_sha256, binarize)
    want = {
        "model_id": embedder.model_id,
        "weights_sha256": embedder.weights_sha256,
        "dim": dim,
        "chunker_id": m.chunker_id,
        "corpus_hash": m.corpus_hash,
        "bit_order": BIT_ORDER,
        "binarisation": binarisation_rule(binarize),
        "doc_order_sha256": _doc_order_sha(sl.doc_order),
    }
    stats: dict = {"dropped_stale_tables": [], "rebuilt": None}
    exists = bool(conn.execute("SELECT 1 FROM sqlite_master WHERE name=?", (table,)).fetchall())
    if exists and (problem := _check_table(conn, corpus.path, table)) is not None:
        damaged_notice("vector index", corpus.path, problem, "rebuilding the table from the embedding cache")
        with immediate(conn):
            _drop_index(conn, table)
        stats["rebuilt"] = ["damaged"]
    _prepare_table(conn, embedder, table, want, dim, stats)
    # a sign-bit table that already holds every slice chunk needs no per-chunk work (issue 43, item 3: at 6.73 M
    # chunks these reads took most of the open); centred builds read every slice vector for the mean anyway
    complete = binarize != "centered" and _n_present(conn, table, sl) == sl.n_chunks
    members: list[Row] = []
    if not complete:
        pos = {d: i for i, d in enumerate(sl.doc_order)}
        in_slice = set(sl.doc_ids)
        chunks = conn.execute("SELECT rowid, doc_id, text_sha256 FROM chunks ORDER BY rowid").fetchall()
        members = [(pos[d], rid, h) for rid, d, h in chunks if d in in_slice]  # rowid order
    stats.update(n_slice_chunks=sl.n_chunks, n_inserted=0, n_cache_hits=0, n_embedded=0, embed_seconds=0.0)
    center = None
    cache = EmbeddingCache.for_workdir(workdir)
    stack = contextlib.ExitStack()
    try:
        key = cache.key_id(embedder.model_id, embedder.weights_sha256, m.chunker_id, dim)
        stats["stale_cache_keys"] = cache.stale_keys(embedder.model_id, embedder.weights_sha256)

        def pending() -> list[Row]:
            have = {r[0] for r in conn.execute(f'SELECT rowid FROM "{table}"').fetchall()}
            return sorted(b for b in members if b[1] not in have)

        first = members if binarize == "centered" else [] if complete else pending()
        n_missing = len(cache.missing(key, [b[2] for b in first]))
        pool = stack.enter_context(passage_embedder(embedder, n_missing, workers))
        stats["workers"] = getattr(pool, "workers", 1)
        loop = dict(conn=conn, cache=cache, key=key, embedder=pool, dim=dim, batch_chunks=batch_chunks)
        if binarize == "centered":
            # 1. every slice vector in the cache; 2. the slice mean; 3. re-centre; 4. insert the missing rows
            with progress_bar(f"embed {embedder.model_id}", len(members), enabled=progress) as bar:
                embed_batches(rows=members, table=None, pack=None, stats=stats, bar=bar, **loop)
            center = _slice_mean(cache, key, [b[2] for b in members], dim, f"{cache.path}")
            stats["center"] = _recentre(conn, table, dim, center, len(members), sl.n_docs)
            todo = pending()
            stats["n_already_indexed"] = len(members) - len(todo)
            counts = {"n_cache_hits": 0, "n_embedded": 0, "embed_seconds": 0.0, "n_inserted": 0}
            pack = lambda x: pack_centered(x, center)  # noqa: E731
            embed_batches(rows=todo, table=table, pack=pack, stats=counts, embed=False, **loop)
            stats["n_inserted"] += counts["n_inserted"]
        else:
            todo = first
            stats["n_already_indexed"] = sl.n_chunks - len(todo)
            with progress_bar(f"embed {embedder.model_id}", len(todo), enabled=progress) as bar:
                embed_batches(rows=todo, table=table, pack=pack_signs, stats=stats, bar=bar, **loop)
    finally:
        stack.close()
        cache.close()
    stats["seconds"] = round(time.perf_counter() - t0, 3)
    stats["embed_seconds"] = round(stats["embed_seconds"], 3)
    stats["texts_per_second"] = (
        round(stats["n_embedded"] / stats["embed_seconds"], 1) if stats["embed_seconds"] > 0 else None
    )
    n_have = _n_present(conn, table, sl)
    if n_have is None:
        n_have = int(
            conn.execute(
                f'SELECT count(*) FROM "{table}" WHERE rowid IN (SELECT rowid FROM chunks WHERE doc_id IN '
                f"(SELECT value FROM json_each(?)))",
                (json.dumps(list(sl.doc_ids)),),
            ).fetchone()[0]
        )
    if n_have != sl.n_chunks:
        raise HarnessInputError(f"{corpus.path}: {table}: {n_have} vectors for {sl.n_chunks} chunks after build")
    if stats["n_inserted"] or stats["rebuilt"] or not _manifest_path(corpus.path, table).is_file():
        _stamp_table(conn, corpus.path, table)
    return table, center, stats
