"""The ``vector`` system: binary (1 bit per dimension) chunk vectors in sqlite-vec, ranked by Hamming distance.

Storage
-------
* **Index** (in the corpus database, next to ``chunks``): one sqlite-vec ``vec0`` table per (model id, weights
  hash), ``CREATE VIRTUAL TABLE vec_<model>_<hash16> USING vec0(embedding bit[D], doc_pos integer)``, whose rowid
  is the chunk's rowid and whose bits are :func:`harness.retrieve.binary.pack_signs` (bit = value > 0, LSB first,
  = sqlite-vec ``vec_quantize_binary``). ``doc_pos`` is the document's position in chronological order (below).
  The table ``vector_indexes`` records, per vector table, the model id, weights hash, dimension, chunker id, corpus
  hash, bit order and a hash of the chronological document order. An index whose record does not match the
  embedder and corpus is never used: tables of the same model id with other weights are dropped ("stale"), a table
  whose record disagrees otherwise is rebuilt.
* **Binarisation** (``binarize``): ``"sign"`` (default, the table above) or ``"centered"``
  (:func:`harness.retrieve.binary.pack_centered`: bit = value > m, ``m`` the float32 mean of the indexed chunks'
  float embeddings). Each has its own table (the centred one is ``vec_<model>_<hash16>_ctr``), so both coexist
  and neither rebuild touches the other. The centring vector lives in ``vector_centers`` (one row per centred
  table: ``mean`` float32 little-endian bytes, its sha256, and the slice it was computed over) and is applied
  identically to the stored chunk bits and to every query (:meth:`VectorIndex.pack_queries`).
* **Embedding cache** (``<workdir>/embeddings/cache.sqlite``, its own SQLite file in WAL mode, about 1.4 KB per
  256-d vector): float32 passage embeddings keyed by (model id, weights sha256, chunker id) and the chunk text's
  sha256, so re-runs, extensions and other corpora embed only texts never seen with that model and chunker.
* **Builds** go in batches of chunks; each batch is committed to the cache, then to the index, each in one
  transaction. A build that stops at any point loses at most the batch in flight and resumes where it stopped:
  chunks already in the index are skipped, vectors already in the cache are not recomputed, nothing is inserted
  twice.

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
slice has mean 0 (= sign bits). A :class:`VectorIndex` remembers its mean and refuses to search once another build
has re-centred its table (build it again).

Partial indexes
---------------
Documents are ordered chronologically: by ``date`` (ISO, ascending), ties by ``doc_id`` (string order), documents
without a date last. ``index_fraction=F`` (0 < F <= 1) indexes the shortest prefix of that order whose chunks
cover at least ``ceil(F * n_chunks)`` chunks; ``until=DATE`` indexes the documents dated on or before ``DATE``
(undated documents excluded). Either way, only whole documents. A search over a slice only sees chunks of the
slice's documents (``doc_pos < P`` in the KNN query), even when the table holds more.

Search
------
Chunk score = ``-hamming(query bits, chunk bits)``; a document's score is its best chunk's. Both rankings are the
exact top ``depth`` under the project's tie rule (score descending, then id ascending as strings). sqlite-vec's
order among equal distances is a storage artefact, so the KNN query fetches past the boundary (k grows x4 from
``2 * max(chunk_depth, doc_depth) + 16``) until the candidate set holds every chunk closer than the farthest one
returned, enough of them, and enough distinct documents; the exact ranking is then computed on that set. sqlite-vec
caps k at 4,096: beyond it the query falls back to an exact numpy popcount scan of the same bits (flag
``knn_fallback="numpy"``). ``backend="numpy"`` runs that scan for every query (batched); it returns identical
rankings. ``backend="faiss"`` (optional ``faiss-cpu``, extra ``faiss``) searches all queries at once in a
``faiss.IndexBinaryFlat`` built lazily from the same slice bits (:meth:`VectorIndex.packed_bits`; faiss's binary
codes are the same bytes, and Hamming distance does not depend on the bit order within a byte); faiss breaks
distance ties arbitrarily, so it fetches ``k'`` past the depth exactly like the sqlite-vec path (k grows x4 for the
queries whose candidate set is not yet tie-complete, up to every slice chunk) and ranks that set with the same exact
rule: rankings, scores and flags equal the numpy backend's. sqlite-vec stays the store; faiss is a search engine
over a copy of its bits in memory (``n * dim / 8`` bytes).

Flags per query: ``empty_query`` (blank text: empty rankings), ``chunk_tie_at_boundary`` / ``doc_tie_at_boundary``
(some chunk/document left out has the same distance as the last one kept, so the id rule decided the cut),
``tie_at_boundary`` (either), ``knn_fallback``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import math
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import apsw
import numpy as np

from harness.corpus.store import Corpus
from harness.errors import HarnessInputError
from harness.io import canonical_json
from harness.progress import progress_bar
from harness.ranking import id_rank, top_k_by_distance
from harness.retrieve.base import QueryResult
from harness.retrieve.binary import (
    BIT_ORDER,
    binarisation_rule,
    check_dim,
    hamming_distances,
    pack_centered,
    pack_signs,
)

__all__ = [
    "BACKENDS",
    "SQLITE_VEC_K_MAX",
    "CorpusSlice",
    "EmbeddingCache",
    "VectorIndex",
    "boundary_tie_summary",
    "cached_passage_embeddings",
    "chronological_order",
    "select_slice",
]

SQLITE_VEC_K_MAX = 4096
"""sqlite-vec refuses ``k`` above this in a KNN query."""

BACKENDS = ("sqlite-vec", "numpy", "faiss")
"""Search engines of :meth:`VectorIndex.search`; all return identical rankings, scores and flags."""

FAISS_MISSING = "faiss backend unavailable: pip install faiss-cpu"

META_SQL = """
CREATE TABLE IF NOT EXISTS vector_indexes(
  table_name TEXT PRIMARY KEY, model_id TEXT NOT NULL, weights_sha256 TEXT NOT NULL, dim INTEGER NOT NULL,
  chunker_id TEXT NOT NULL, corpus_hash TEXT NOT NULL, bit_order TEXT NOT NULL, binarisation TEXT NOT NULL,
  doc_order_sha256 TEXT NOT NULL, created_at TEXT NOT NULL, meta_json TEXT NOT NULL DEFAULT '{}');
CREATE TABLE IF NOT EXISTS vector_centers(
  table_name TEXT PRIMARY KEY, dim INTEGER NOT NULL, mean BLOB NOT NULL, mean_sha256 TEXT NOT NULL,
  n_chunks INTEGER NOT NULL, n_docs INTEGER NOT NULL, updated_at TEXT NOT NULL);
"""

CACHE_SQL = """
CREATE TABLE IF NOT EXISTS cache_keys(
  key_id INTEGER PRIMARY KEY, model_id TEXT NOT NULL, weights_sha256 TEXT NOT NULL, chunker_id TEXT NOT NULL,
  dim INTEGER NOT NULL, dtype TEXT NOT NULL, created_at TEXT NOT NULL,
  UNIQUE(model_id, weights_sha256, chunker_id));
CREATE TABLE IF NOT EXISTS embeddings(
  id INTEGER PRIMARY KEY, key_id INTEGER NOT NULL, text_sha256 BLOB NOT NULL, vector BLOB NOT NULL,
  UNIQUE(key_id, text_sha256));
"""
CACHE_SCHEMA_VERSION = 1  # PRAGMA user_version of the cache file

_IN_CHUNK = 500
_MEAN_BLOCK = 4096  # chunks per float64 partial sum of the centring mean (fixed: the mean must not depend on batches)


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@contextlib.contextmanager
def _immediate(conn: apsw.Connection) -> Iterator[None]:
    """One write transaction taken with ``BEGIN IMMEDIATE`` (the write lock up front), committed or rolled back."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


# --------------------------------------------------------------------------------------------------------------
# Embedding cache
# --------------------------------------------------------------------------------------------------------------


class EmbeddingCache:
    """Float32 passage embeddings keyed by (model id, weights sha256, chunker id, text sha256).

    Args:
        path: the SQLite file (created with its folder if missing).
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = apsw.Connection(str(self.path))
        self.conn.setbusytimeout(60_000)
        self.conn.execute("PRAGMA journal_mode=WAL")
        with _immediate(self.conn):
            version = self.conn.execute("PRAGMA user_version").fetchone()[0]
            has_tables = self.conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0
            if has_tables and version != CACHE_SCHEMA_VERSION:
                raise HarnessInputError(
                    f"{self.path}: embedding cache schema {version}, expected {CACHE_SCHEMA_VERSION}; delete the file"
                )
            self.conn.execute(CACHE_SQL)
            self.conn.execute(f"PRAGMA user_version={CACHE_SCHEMA_VERSION}")

    @classmethod
    def for_workdir(cls, workdir: str | Path) -> EmbeddingCache:
        """The cache of a work directory: ``<workdir>/embeddings/cache.sqlite``."""
        return cls(Path(workdir) / "embeddings" / "cache.sqlite")

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def key_id(self, model_id: str, weights_sha256: str, chunker_id: str, dim: int) -> int:
        """The integer key of (model, weights, chunker), created on first use.

        Raises:
            HarnessInputError: the key exists with another dimension (a corrupt cache).
        """
        with _immediate(self.conn):
            row = self.conn.execute(
                "SELECT key_id, dim FROM cache_keys WHERE model_id=? AND weights_sha256=? AND chunker_id=?",
                (model_id, weights_sha256, chunker_id),
            ).fetchone()
            if row is None:
                self.conn.execute(
                    "INSERT INTO cache_keys(model_id, weights_sha256, chunker_id, dim, dtype, created_at) "
                    "VALUES (?,?,?,?,?,?)",
                    (model_id, weights_sha256, chunker_id, int(dim), "float32-le", _now()),
                )
                return int(self.conn.last_insert_rowid())
        if int(row[1]) != int(dim):
            raise HarnessInputError(f"{self.path}: cache key {model_id}: stored dim {row[1]} != model dim {dim}")
        return int(row[0])

    def stale_keys(self, model_id: str, weights_sha256: str) -> list[dict]:
        """Cache keys of ``model_id`` made with other weights (their vectors are never used for this model)."""
        rows = self.conn.execute(
            "SELECT k.key_id, k.weights_sha256, k.chunker_id, "
            "(SELECT count(*) FROM embeddings e WHERE e.key_id=k.key_id) "
            "FROM cache_keys k WHERE k.model_id=? AND k.weights_sha256<>?",
            (model_id, weights_sha256),
        ).fetchall()
        return [{"key_id": r[0], "weights_sha256": r[1], "chunker_id": r[2], "n_vectors": r[3]} for r in rows]

    def get_many(self, key_id: int, text_sha256: Sequence[str], dim: int) -> dict[str, np.ndarray]:
        """``{text_sha256: float32 (dim,)}`` for the hashes present."""
        out: dict[str, np.ndarray] = {}
        shas = list(dict.fromkeys(text_sha256))
        for i in range(0, len(shas), _IN_CHUNK):
            part = shas[i : i + _IN_CHUNK]
            marks = ",".join("?" * len(part))
            for h, blob in self.conn.execute(
                f"SELECT text_sha256, vector FROM embeddings WHERE key_id=? AND text_sha256 IN ({marks})",
                (key_id, *(bytes.fromhex(s) for s in part)),
            ):
                v = np.frombuffer(blob, dtype="<f4")
                if v.shape[0] != dim:
                    raise HarnessInputError(f"{self.path}: cached vector of width {v.shape[0]} != {dim}")
                out[bytes(h).hex()] = v.astype(np.float32)
        return out

    def put_many(self, key_id: int, text_sha256: Sequence[str], vectors: np.ndarray) -> None:
        """Store vectors (one transaction; existing entries are kept)."""
        vecs = np.asarray(vectors, dtype="<f4")
        with _immediate(self.conn):
            self.conn.executemany(
                "INSERT OR IGNORE INTO embeddings(key_id, text_sha256, vector) VALUES (?,?,?)",
                [(key_id, bytes.fromhex(s), vecs[i].tobytes()) for i, s in enumerate(text_sha256)],
            )

    def count(self, key_id: int) -> int:
        """Number of vectors stored under ``key_id``."""
        return int(self.conn.execute("SELECT count(*) FROM embeddings WHERE key_id=?", (key_id,)).fetchone()[0])


def cached_passage_embeddings(
    cache: EmbeddingCache,
    embedder,
    chunker_id: str,
    texts: Sequence[str],
    *,
    batch_size: int = 2048,
    progress=None,
) -> tuple[np.ndarray, dict]:
    """Passage embeddings of ``texts`` through the embedding cache: cached vectors are read, the others embedded
    (passage prompt) and stored in committed batches, so an interrupted call loses at most one batch.

    The key is the same as :meth:`VectorIndex.build`'s (model id, weights sha256, ``chunker_id``, dimension; texts by
    the sha256 of their UTF-8 bytes), so chunks that ``harness embed`` already embedded are never embedded again.

    Args:
        cache: an open :class:`EmbeddingCache`.
        embedder: a :class:`harness.retrieve.embed.Embedder` (or anything with ``model_id``, ``weights_sha256``,
            ``dim`` and ``embed_passages``).
        chunker_id: id of the chunker that made ``texts`` (part of the key).
        texts: N passage texts (duplicates are embedded once).
        batch_size: texts per embedded and committed batch (>= 1).
        progress: optional callable ``progress(n)``: once after the cache read with the distinct texts found there,
            then after each embedded batch with its size; the calls sum to the number of distinct texts.

    Returns:
        ``(vectors, stats)``: float32 array of shape (N, dim), row i for ``texts[i]``; ``stats`` has ``n_texts``,
        ``n_cache_hits`` (distinct texts read from the cache), ``n_embedded`` (distinct texts sent to the model)
        and ``embed_seconds``.

    Raises:
        HarnessInputError: the model returns the wrong shape or non-finite values (nothing of that batch is
            stored), or the cache holds this key with another dimension.
    """
    if batch_size < 1:
        raise HarnessInputError(f"batch_size={batch_size}: must be >= 1")
    dim = int(embedder.dim)
    key = cache.key_id(embedder.model_id, embedder.weights_sha256, chunker_id, dim)
    shas = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
    first: dict[str, int] = {}
    for i, h in enumerate(shas):
        first.setdefault(h, i)
    vecs = cache.get_many(key, list(first), dim)
    missing = [h for h in first if h not in vecs]
    stats = {"n_texts": len(texts), "n_cache_hits": len(vecs), "n_embedded": len(missing), "embed_seconds": 0.0}
    if progress is not None:
        progress(len(vecs))
    for start in range(0, len(missing), batch_size):
        part = missing[start : start + batch_size]
        emb, secs = _embed_into_cache(cache, key, embedder, part, [texts[first[h]] for h in part], dim)
        stats["embed_seconds"] += secs
        vecs.update({h: emb[i] for i, h in enumerate(part)})
        if progress is not None:
            progress(len(part))
    out = np.empty((len(texts), dim), dtype=np.float32)
    for i, h in enumerate(shas):
        out[i] = vecs[h]
    return out, stats


# --------------------------------------------------------------------------------------------------------------
# Chronological slices
# --------------------------------------------------------------------------------------------------------------


def _parse_date(value: str | None, where: str) -> dt.date | None:
    if value is None or value == "":
        return None
    try:
        return dt.date.fromisoformat(str(value))
    except ValueError:
        raise HarnessInputError(f"{where}: {value!r} is not an ISO date (YYYY-MM-DD)") from None


def chronological_order(corpus: Corpus) -> list[str]:
    """Document ids by (date ascending, doc_id ascending), undated documents last (by doc_id)."""
    docs = corpus.documents()
    keyed = []
    for d in docs.values():
        date = _parse_date(d.date, f"{corpus.path}: document {d.doc_id}: field date")
        keyed.append((date is None, date or dt.date.min, d.doc_id))
    keyed.sort()
    return [k[2] for k in keyed]


@dataclass(frozen=True)
class CorpusSlice:
    """A chronological prefix of the corpus' documents.

    Attributes:
        doc_order: every doc id in chronological order.
        n_docs: the prefix length ``P`` (documents ``doc_order[:P]`` are in the slice).
        n_chunks: chunks of the slice's documents.
        n_total_chunks, n_total_docs: of the corpus.
        index_fraction, until: what was asked (``None`` for the whole corpus).
    """

    doc_order: tuple[str, ...]
    n_docs: int
    n_chunks: int
    n_total_chunks: int
    n_total_docs: int
    index_fraction: float | None
    until: str | None

    @property
    def doc_ids(self) -> tuple[str, ...]:
        """The slice's documents, chronologically."""
        return self.doc_order[: self.n_docs]

    @property
    def is_full(self) -> bool:
        """True when every document is in the slice."""
        return self.n_docs == self.n_total_docs


def select_slice(corpus: Corpus, *, index_fraction: float | None = None, until: str | None = None) -> CorpusSlice:
    """The documents a partial index covers (see the module docstring).

    Args:
        corpus: the corpus.
        index_fraction: ``0 < F <= 1``: the shortest chronological prefix covering ``ceil(F * n_chunks)`` chunks.
        until: ISO date: documents dated on or before it.

    Raises:
        HarnessInputError: both given, ``F`` outside (0, 1], ``until`` not an ISO date.
    """
    if index_fraction is not None and until is not None:
        raise HarnessInputError("index_fraction and until are mutually exclusive; give one")
    docs = corpus.documents()
    order = chronological_order(corpus)
    counts = [int(docs[d].n_chunks or 0) for d in order]
    total = sum(counts)
    if index_fraction is not None:
        f = float(index_fraction)
        if not (0.0 < f <= 1.0) or math.isnan(f):
            raise HarnessInputError(f"index_fraction: {index_fraction!r} is not in (0, 1]")
        target = math.ceil(round(f * total, 9))
        p, covered = 0, 0
        while p < len(order) and covered < target:
            covered += counts[p]
            p += 1
        if f == 1.0:
            p = len(order)
    elif until is not None:
        limit = _parse_date(until, "until")
        p = 0
        for d in order:
            date = _parse_date(docs[d].date, d)
            if date is None or date > limit:
                break
            p += 1
    else:
        p = len(order)
    return CorpusSlice(
        doc_order=tuple(order),
        n_docs=p,
        n_chunks=sum(counts[:p]),
        n_total_chunks=total,
        n_total_docs=len(order),
        index_fraction=None if index_fraction is None else float(index_fraction),
        until=None if until is None else str(until),
    )


# --------------------------------------------------------------------------------------------------------------
# The index
# --------------------------------------------------------------------------------------------------------------


def _table_name(model_id: str, weights_sha256: str, binarize: str = "sign") -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", model_id.lower()).strip("_")[:40] or "model"
    return f"vec_{slug}_{weights_sha256[:16]}" + ("" if binarize == "sign" else "_ctr")


def _doc_order_sha(order: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(order).encode("utf-8")).hexdigest()


def boundary_tie_summary(results: Sequence[QueryResult]) -> dict:
    """Share of queries whose top-k boundary falls in a tie, and of numpy fallbacks.

    Returns:
        ``{"n_queries", "chunk_tie_share", "doc_tie_share", "any_tie_share", "knn_fallback_share"}`` (shares in
        [0, 1]; 0.0 when there are no queries).
    """
    n = len(results)

    def share(pred) -> float:
        return sum(1 for r in results if pred(r.flags)) / n if n else 0.0

    return {
        "n_queries": n,
        "chunk_tie_share": share(lambda f: f.get("chunk_tie_at_boundary", False)),
        "doc_tie_share": share(lambda f: f.get("doc_tie_at_boundary", False)),
        "any_tie_share": share(lambda f: f.get("tie_at_boundary", False)),
        "knn_fallback_share": share(lambda f: bool(f.get("knn_fallback"))),
    }


class VectorIndex:
    """Binary vectors of a corpus (slice) in sqlite-vec; implements the ``Retriever`` protocol as ``"vector"``.

    Build with :meth:`build`. Attributes: ``corpus``, ``embedder``, ``table`` (vec0 table name), ``slice``
    (:class:`CorpusSlice`), ``backend`` (``"sqlite-vec"``, ``"numpy"`` or ``"faiss"``), ``build_stats`` (dict),
    ``binarize`` (``"sign"`` or ``"centered"``), ``center`` (the float32 ``(dim,)`` centring vector, ``None`` for
    sign bits).
    """

    name = "vector"

    def __init__(
        self,
        corpus: Corpus,
        embedder,
        table: str,
        corpus_slice: CorpusSlice,
        *,
        backend: str,
        stats: dict,
        binarize: str = "sign",
        center: np.ndarray | None = None,
    ):
        if backend not in BACKENDS:
            raise HarnessInputError(f"backend: {backend!r} is not one of {', '.join(map(repr, BACKENDS))}")
        binarisation_rule(binarize)
        if (binarize == "centered") != (center is not None):
            raise HarnessInputError(f"{table}: binarize={binarize!r} needs a centring vector exactly when centred")
        self.binarize = binarize
        self.center = None if center is None else np.array(center, dtype=np.float32).reshape(-1)
        if self.center is not None:
            self.center.setflags(write=False)
        self.corpus = corpus
        self.embedder = embedder
        self.table = table
        self.slice = corpus_slice
        self.backend = backend
        self.build_stats = stats
        self.dim = int(embedder.dim)
        self.nbytes = check_dim(self.dim)
        self._doc_set = frozenset(corpus_slice.doc_ids)
        rows = corpus.conn.execute("SELECT rowid, chunk_id, doc_id FROM chunks ORDER BY rowid").fetchall()
        rows = [r for r in rows if r[2] in self._doc_set]
        self._rowids = np.array([r[0] for r in rows], dtype=np.int64)
        self._chunk_ids = [r[1] for r in rows]
        self._chunk_rank = id_rank(self._chunk_ids)
        self._doc_ids = sorted(self._doc_set)
        doc_index = {d: i for i, d in enumerate(self._doc_ids)}
        self._doc_rank = np.arange(len(self._doc_ids), dtype=np.int64)  # _doc_ids is sorted
        self._doc_idx = np.array([doc_index[r[2]] for r in rows], dtype=np.int64)
        max_rowid = int(corpus.conn.execute("SELECT coalesce(max(rowid), 0) FROM chunks").fetchone()[0])
        self._slot = np.full(max_rowid + 1, -1, dtype=np.int64)
        self._slot[self._rowids] = np.arange(len(rows), dtype=np.int64)
        self._max_pos = corpus_slice.n_docs
        self._filter = not corpus_slice.is_full
        self._bits: np.ndarray | None = None
        self._faiss = None  # faiss.IndexBinaryFlat over _load_bits(), built on first faiss search
        self.search_stats = {"queries": 0, "knn_calls": 0, "knn_fallbacks": 0, "faiss_searches": 0}

    # ---- build ---------------------------------------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        corpus: Corpus,
        workdir: str | Path,
        embedder,
        *,
        index_fraction: float | None = None,
        until: str | None = None,
        progress: bool = False,
        batch_chunks: int = 2048,
        backend: str = "sqlite-vec",
        binarize: str = "sign",
    ) -> VectorIndex:
        """Build, extend or reuse the vector index of ``corpus`` (or a chronological slice of it).

        Args:
            corpus: an open :class:`Corpus` (read-write: the index is a table in its database).
            workdir: work directory; the embedding cache is ``<workdir>/embeddings/cache.sqlite``.
            embedder: an :class:`harness.retrieve.embed.Embedder` (anything with ``model_id``, ``weights_sha256``,
                ``dim``, ``embed_passages``, ``embed_queries``, ``config``).
            index_fraction, until: the slice (see :func:`select_slice`); default the whole corpus.
            progress: show a rich progress bar.
            batch_chunks: chunks per committed batch.
            backend: default search backend, ``"sqlite-vec"``, ``"numpy"`` or ``"faiss"`` (optional package).
            binarize: ``"sign"`` (default: bit = value > 0) or ``"centered"`` (bit = value > the slice's mean;
                its own table; see "Centring rule" in the module docstring).

        Returns:
            The index; ``build_stats`` has ``n_slice_chunks``, ``n_already_indexed``, ``n_inserted``,
            ``n_cache_hits``, ``n_embedded`` (texts sent to the model), ``seconds``, ``embed_seconds``,
            ``texts_per_second``, ``dropped_stale_tables``, ``rebuilt``, ``stale_cache_keys``; centred builds also
            ``center`` (``{"n_chunks", "mean_sha256", "recentred", "n_cleared"}``: whether the recorded mean
            changed and how many rows were re-binarised for it). In a centred build ``n_cache_hits`` counts every
            slice chunk read from the cache (the mean needs them all), not only the inserted ones.

        Raises:
            HarnessInputError: a read-only corpus, a bad slice, a dimension that is not a multiple of 8, an unknown
                ``binarize``.
        """
        t0 = time.perf_counter()
        if batch_chunks <= 0:
            raise HarnessInputError(f"batch_chunks must be positive, got {batch_chunks}")
        dim = int(embedder.dim)
        check_dim(dim)
        rule = binarisation_rule(binarize)
        conn = corpus.conn
        if conn.readonly("main"):
            raise HarnessInputError(f"{corpus.path}: opened read-only; cannot build the vector index")
        sl = select_slice(corpus, index_fraction=index_fraction, until=until)
        m = corpus.manifest
        table = _table_name(embedder.model_id, embedder.weights_sha256, binarize)
        order_sha = _doc_order_sha(sl.doc_order)
        want = {
            "model_id": embedder.model_id,
            "weights_sha256": embedder.weights_sha256,
            "dim": dim,
            "chunker_id": m.chunker_id,
            "corpus_hash": m.corpus_hash,
            "bit_order": BIT_ORDER,
            "binarisation": rule,
            "doc_order_sha256": order_sha,
        }
        stats: dict = {"dropped_stale_tables": [], "rebuilt": None}
        with _immediate(conn):
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
                    (
                        table,
                        *(want[k] for k in want),
                        _now(),
                        canonical_json({"embedder": _safe_config(embedder)}),
                    ),
                )

        center = None
        if binarize == "centered":
            center = _build_centered(
                conn, workdir, embedder, table, m.chunker_id, sl, dim, batch_chunks, progress, stats
            )
        else:
            have_rows = {r[0] for r in conn.execute(f'SELECT rowid FROM "{table}"').fetchall()}
            pos = {d: i for i, d in enumerate(sl.doc_order)}
            in_slice = set(sl.doc_ids)
            chunks = conn.execute("SELECT rowid, doc_id, text_sha256 FROM chunks ORDER BY rowid").fetchall()
            pending = [(pos[d], rid, h) for rid, d, h in chunks if d in in_slice and rid not in have_rows]
            pending.sort()
            stats.update(
                n_slice_chunks=sl.n_chunks,
                n_already_indexed=sl.n_chunks - len(pending),
                n_inserted=0,
                n_cache_hits=0,
                n_embedded=0,
                embed_seconds=0.0,
            )

            cache = EmbeddingCache.for_workdir(workdir)
            try:
                key = cache.key_id(embedder.model_id, embedder.weights_sha256, m.chunker_id, dim)
                stats["stale_cache_keys"] = cache.stale_keys(embedder.model_id, embedder.weights_sha256)
                with progress_bar(f"embed {embedder.model_id}", len(pending), enabled=progress) as bar:
                    for start in range(0, len(pending), batch_chunks):
                        batch = pending[start : start + batch_chunks]
                        n_hits, n_new, secs = _index_batch(conn, cache, key, embedder, table, batch, dim)
                        stats["n_cache_hits"] += n_hits
                        stats["n_embedded"] += n_new
                        stats["embed_seconds"] += secs
                        stats["n_inserted"] += len(batch)
                        if bar is not None:
                            bar(len(batch))
            finally:
                cache.close()
        stats["seconds"] = round(time.perf_counter() - t0, 3)
        stats["embed_seconds"] = round(stats["embed_seconds"], 3)
        stats["texts_per_second"] = (
            round(stats["n_embedded"] / stats["embed_seconds"], 1) if stats["embed_seconds"] > 0 else None
        )
        n_have = int(
            conn.execute(
                f'SELECT count(*) FROM "{table}" WHERE rowid IN (SELECT rowid FROM chunks WHERE doc_id IN '
                f"(SELECT value FROM json_each(?)))",
                (json.dumps(list(sl.doc_ids)),),
            ).fetchone()[0]
        )
        if n_have != sl.n_chunks:
            raise HarnessInputError(f"{corpus.path}: {table}: {n_have} vectors for {sl.n_chunks} chunks after build")
        return cls(corpus, embedder, table, sl, backend=backend, stats=stats, binarize=binarize, center=center)

    # ---- coverage and config ---------------------------------------------------------------------------------------

    def is_fully_indexed(self, doc_id: str) -> bool:
        """True when every chunk of ``doc_id`` is in the searched slice."""
        return doc_id in self._doc_set

    @property
    def indexed_doc_ids(self) -> frozenset[str]:
        """Documents of the searched slice (all fully indexed)."""
        return self._doc_set

    def coverage(self) -> dict:
        """What the index covers.

        Returns:
            ``{"n_indexed_chunks", "n_total_chunks", "chunk_fraction", "n_indexed_docs", "n_total_docs",
            "index_fraction", "until", "first_date", "last_date", "indexed_doc_ids" (chronological)}``.
        """
        docs = self.corpus.documents()
        ids = list(self.slice.doc_ids)
        dates = [docs[d].date for d in ids if docs[d].date]
        return {
            "n_indexed_chunks": self.slice.n_chunks,
            "n_total_chunks": self.slice.n_total_chunks,
            "chunk_fraction": self.slice.n_chunks / self.slice.n_total_chunks if self.slice.n_total_chunks else 0.0,
            "n_indexed_docs": self.slice.n_docs,
            "n_total_docs": self.slice.n_total_docs,
            "index_fraction": self.slice.index_fraction,
            "until": self.slice.until,
            "first_date": min(dates) if dates else None,
            "last_date": max(dates) if dates else None,
            "indexed_doc_ids": ids,
        }

    def config(self) -> dict:
        """Everything that identifies the system's behaviour (for the run manifest)."""
        cov = self.coverage()
        cov.pop("indexed_doc_ids")
        return {
            "system": self.name,
            "embedder": _safe_config(self.embedder),
            "model_id": self.embedder.model_id,
            "weights_sha256": self.embedder.weights_sha256,
            "dim": self.dim,
            "binarize": self.binarize,
            "binarisation": binarisation_rule(self.binarize),
            "bit_order": BIT_ORDER,
            "distance": "hamming",
            "chunk_score": "-hamming",
            "doc_score": "best chunk (max of chunk scores)",
            "tie_rule": "score desc, then id asc (string); exact at the boundary",
            "backend": self.backend,
            "table": self.table,
            "corpus_hash": self.corpus.manifest.corpus_hash,
            "chunker_id": self.corpus.manifest.chunker_id,
            "sqlite_vec_version": self.corpus.conn.execute("SELECT vec_version()").fetchone()[0],
            "knn_k_max": SQLITE_VEC_K_MAX,
            "coverage": cov,
            **({} if self.center is None else {"center": self._center_info()}),
        }

    def _center_info(self) -> dict:
        blob = self.center.astype("<f4").tobytes()
        return {
            "n_chunks": self.slice.n_chunks,
            "mean_sha256": hashlib.sha256(blob).hexdigest(),
            "rule": "float32 mean of the slice's chunk embeddings (float64 sums), applied to chunks and queries",
        }

    # ---- binarisation of queries -----------------------------------------------------------------------------------

    def pack_queries(self, embeddings: np.ndarray) -> np.ndarray:
        """Query embeddings ``float (m, dim)`` (or ``(dim,)``) as packed bits, binarised exactly like the index's
        chunks (sign bits, or centred on the index's mean): ``uint8 (m, dim/8)``, LSB first.

        Raises:
            HarnessInputError: NaN/inf values; a width other than ``dim``.
        """
        x = np.asarray(embeddings)
        if x.ndim not in (1, 2) or x.shape[-1] != self.dim:
            raise HarnessInputError(f"query embeddings of shape {x.shape}; the index has dim {self.dim}")
        if self.center is None:
            return pack_signs(x)
        return pack_centered(x, self.center)

    def query_bits(self, texts: Sequence[str]) -> np.ndarray:
        """``pack_queries(embedder.embed_queries(texts))``: ``uint8 (len(texts), dim/8)``, for :meth:`search_packed`."""
        return self.pack_queries(np.asarray(self.embedder.embed_queries(list(texts))))

    def _check_center(self) -> None:
        """Refuse to search a centred table another build has re-centred since this object was built."""
        if self.center is None:
            return
        row = self.corpus.conn.execute("SELECT mean FROM vector_centers WHERE table_name=?", (self.table,)).fetchone()
        if row is None or bytes(row[0]) != self.center.astype("<f4").tobytes():
            raise HarnessInputError(
                f"{self.corpus.path}: {self.table} was re-centred by another build (another slice) since this index "
                "was opened; build it again"
            )

    # ---- search ----------------------------------------------------------------------------------------------------

    def search(
        self, queries: Sequence[str], *, doc_depth: int, chunk_depth: int, backend: str | None = None
    ) -> list[QueryResult]:
        """Rank documents and chunks for each query (same order as ``queries``).

        Args:
            queries: query texts.
            doc_depth, chunk_depth: ranking depths (>= 0).
            backend: override the index's default backend (``"sqlite-vec"``, ``"numpy"`` or ``"faiss"``).

        Returns:
            One :class:`QueryResult` per query (blank queries: empty rankings, flag ``empty_query``).
        """
        texts = list(queries)
        live = [i for i, q in enumerate(texts) if isinstance(q, str) and q.strip()]
        packed = self.query_bits([texts[i] for i in live]) if live else None
        out: list[QueryResult] = [QueryResult(docs=[], chunks=[], flags={"empty_query": True}) for _ in texts]
        if live:
            res = self.search_packed(packed, doc_depth=doc_depth, chunk_depth=chunk_depth, backend=backend)
            for i, r in zip(live, res, strict=True):
                out[i] = r
        return out

    def search_packed(
        self, packed: np.ndarray, *, doc_depth: int, chunk_depth: int, backend: str | None = None
    ) -> list[QueryResult]:
        """:meth:`search` on query bits already packed (``uint8 (m, dim/8)``, LSB first), binarised like the index's
        chunks (:meth:`pack_queries` / :meth:`query_bits`).

        Raises:
            HarnessInputError: a bad backend or depth, a width other than ``dim / 8`` bytes, a centred table that
                another build has re-centred since this index was built.
        """
        be = backend or self.backend
        if be not in BACKENDS:
            raise HarnessInputError(f"backend: {be!r} is not one of {', '.join(map(repr, BACKENDS))}")
        if doc_depth < 0 or chunk_depth < 0:
            raise HarnessInputError(f"depths must be >= 0 (doc_depth={doc_depth}, chunk_depth={chunk_depth})")
        q = np.ascontiguousarray(np.asarray(packed, dtype=np.uint8))
        if q.ndim == 1:
            q = q[None, :]
        if q.shape[1] != self.nbytes:
            raise HarnessInputError(f"query bits: {q.shape[1]} bytes per vector, index has {self.nbytes}")
        self._check_center()
        self.search_stats["queries"] += q.shape[0]
        results: list[QueryResult] = []
        if be == "numpy":
            bits = self._load_bits()
            for start in range(0, q.shape[0], 32):
                dist = hamming_distances(q[start : start + 32], bits)
                for row in dist:
                    results.append(self._rank(None, row, chunk_depth, doc_depth, {}))
            return results
        if be == "faiss":
            return self._faiss_search(q, chunk_depth, doc_depth)
        for qi in q:
            cand = self._sqlite_candidates(qi.tobytes(), chunk_depth, doc_depth)
            if cand is None:
                self.search_stats["knn_fallbacks"] += 1
                dist = hamming_distances(qi, self._load_bits())
                results.append(self._rank(None, dist, chunk_depth, doc_depth, {"knn_fallback": "numpy"}))
            else:
                idx, dist = cand
                results.append(self._rank(idx, dist, chunk_depth, doc_depth, {}))
        return results

    def _faiss_index(self):
        """The ``faiss.IndexBinaryFlat`` of the slice's bits (built once; raises if faiss is not installed)."""
        if self._faiss is None:
            try:
                import faiss
            except ImportError:
                raise HarnessInputError(FAISS_MISSING) from None
            index = faiss.IndexBinaryFlat(self.dim)
            bits = self._load_bits()
            if bits.shape[0]:
                index.add(np.ascontiguousarray(bits))
            self._faiss = index
        return self._faiss

    def _faiss_search(self, q: np.ndarray, chunk_depth: int, doc_depth: int) -> list[QueryResult]:
        """All queries in one ``IndexBinaryFlat.search`` per round; each query's result is exact (see the module
        docstring): with ``k'`` fetched, the chunks strictly closer than the ``k'``-th distance are every slice chunk
        at those distances (faiss returns an exact ``k'``-nearest set), which is tie-complete; a query whose set
        holds fewer than ``chunk_depth`` chunks or ``doc_depth`` documents is searched again with ``4 k'``, until
        ``k'`` reaches the slice size (then every chunk is a candidate)."""
        index = self._faiss_index()
        n = self._rowids.shape[0]
        m = q.shape[0]
        results: list[QueryResult | None] = [None] * m
        if n == 0 or (chunk_depth == 0 and doc_depth == 0):
            empty = np.empty(0, dtype=np.int64)
            return [self._rank(empty, empty, chunk_depth, doc_depth, {}) for _ in range(m)]
        todo = np.arange(m)
        k = 2 * max(chunk_depth, doc_depth) + 16
        while todo.size:
            k = min(k, n)
            self.search_stats["faiss_searches"] += 1
            dist, lab = index.search(q[todo], k)
            exhausted = k == n
            retry = []
            for row, qi in enumerate(todo):
                d = dist[row].astype(np.int64)
                idx = lab[row].astype(np.int64)
                if not exhausted:
                    keep = d < d[-1]
                    idx, d = idx[keep], d[keep]
                if exhausted or (idx.shape[0] >= chunk_depth and np.unique(self._doc_idx[idx]).shape[0] >= doc_depth):
                    results[qi] = self._rank(idx, d, chunk_depth, doc_depth, {})
                else:
                    retry.append(qi)
            todo = np.asarray(retry, dtype=np.int64)
            k *= 4
        return results  # type: ignore[return-value]

    def _knn(self, qblob: bytes, k: int) -> tuple[np.ndarray, np.ndarray]:
        self.search_stats["knn_calls"] += 1
        sql = f'SELECT rowid, distance FROM "{self.table}" WHERE embedding MATCH vec_bit(?) AND k = ?'
        args: tuple = (qblob, k)
        if self._filter:
            sql += " AND doc_pos < ?"
            args += (self._max_pos,)
        rows = self.corpus.conn.execute(sql, args).fetchall()
        rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        dist = np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows)).astype(np.int64)
        return rowids, dist

    def _sqlite_candidates(self, qblob: bytes, chunk_depth: int, doc_depth: int):
        """Tie-complete candidates: every slice chunk closer than the farthest fetched, or ``None`` past the k cap."""
        n = self._rowids.shape[0]
        if n == 0 or (chunk_depth == 0 and doc_depth == 0):
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        k = 2 * max(chunk_depth, doc_depth) + 16  # overshoot: the scan dominates, a second KNN costs a scan
        while True:
            k = min(k, n)
            if k > SQLITE_VEC_K_MAX:
                return None
            rowids, dist = self._knn(qblob, k)
            exhausted = rowids.shape[0] < k or k == n
            if not exhausted:
                keep = dist < dist[-1]
                rowids, dist = rowids[keep], dist[keep]
            idx = self._slot[rowids]
            if (idx < 0).any():
                raise HarnessInputError(f"{self.table}: KNN returned a chunk outside the indexed slice")
            if exhausted or (idx.shape[0] >= chunk_depth and np.unique(self._doc_idx[idx]).shape[0] >= doc_depth):
                return idx, dist
            k *= 4

    def _rank(self, idx, dist: np.ndarray, chunk_depth: int, doc_depth: int, flags: dict) -> QueryResult:
        """Exact rankings from a tie-complete candidate set (``idx=None``: every slice chunk, ``dist`` per chunk)."""
        if idx is None:
            idx = np.arange(dist.shape[0], dtype=np.int64)
        top, ctie = top_k_by_distance(dist, self._chunk_rank[idx], chunk_depth)
        chunks = [(self._chunk_ids[idx[j]], float(-int(dist[j]))) for j in top]
        big = np.iinfo(np.int64).max
        best = np.full(len(self._doc_ids), big, dtype=np.int64)
        np.minimum.at(best, self._doc_idx[idx], dist.astype(np.int64))
        present = np.flatnonzero(best < big)
        dtop, dtie = top_k_by_distance(best[present], self._doc_rank[present], doc_depth)
        docs = [(self._doc_ids[present[j]], float(-int(best[present[j]]))) for j in dtop]
        flags = dict(flags)
        if ctie:
            flags["chunk_tie_at_boundary"] = True
        if dtie:
            flags["doc_tie_at_boundary"] = True
        if ctie or dtie:
            flags["tie_at_boundary"] = True
        return QueryResult(docs=docs, chunks=chunks, flags=flags)

    def _load_bits(self) -> np.ndarray:
        """Packed bits of the slice's chunks in slice order (read once from the vec0 table)."""
        if self._bits is None:
            bits = np.zeros((self._rowids.shape[0], self.nbytes), dtype=np.uint8)
            seen = np.zeros(self._rowids.shape[0], dtype=bool)
            for rid, blob in self.corpus.conn.execute(f'SELECT rowid, embedding FROM "{self.table}"'):
                if rid < self._slot.shape[0] and (s := self._slot[rid]) >= 0:
                    bits[s] = np.frombuffer(blob, dtype=np.uint8)
                    seen[s] = True
            if not seen.all():
                raise HarnessInputError(f"{self.table}: {int((~seen).sum())} slice chunks have no vector")
            self._bits = bits
        return self._bits

    def packed_bits(self) -> tuple[list[str], np.ndarray]:
        """``(chunk_ids, bits)``: the slice's chunk ids (rowid order) and their packed bits ``uint8 (n, dim/8)``, as
        stored (sign or centred bits; compare with :meth:`pack_queries` of the query embeddings)."""
        self._check_center()
        return list(self._chunk_ids), self._load_bits().copy()


def _safe_config(embedder) -> dict:
    try:
        return dict(embedder.config())
    except Exception:  # noqa: BLE001 - a minimal embedder without config()
        return {"model_id": embedder.model_id, "weights_sha256": embedder.weights_sha256, "dim": int(embedder.dim)}


def _drop_index(conn, table: str) -> None:
    """Drop a vector table with its record and centring vector (inside the caller's transaction)."""
    conn.execute(f'DROP TABLE IF EXISTS "{table}"')
    conn.execute("DELETE FROM vector_indexes WHERE table_name=?", (table,))
    conn.execute("DELETE FROM vector_centers WHERE table_name=?", (table,))


def _embed_into_cache(cache: EmbeddingCache, key: int, embedder, shas: list[str], texts: list[str], dim: int):
    """Embed ``texts`` (passage prompt), check the (len(texts), dim) shape and finiteness, then commit them to the
    cache under ``shas``; nothing is stored when a check fails. Returns ``(float32 (n, dim), embed_seconds)``."""
    t0 = time.perf_counter()
    emb = np.asarray(embedder.embed_passages(texts), dtype=np.float32)
    secs = time.perf_counter() - t0
    if emb.shape != (len(texts), dim):
        raise HarnessInputError(f"embedder {embedder.model_id}: got shape {emb.shape}, expected ({len(texts)}, {dim})")
    pack_signs(emb)  # refuse NaN/inf before anything is stored
    cache.put_many(key, shas, emb)
    return emb, secs


def _cached_vectors(conn, cache: EmbeddingCache, key: int, embedder, batch, dim: int):
    """Float vectors of one batch ``[(doc_pos, rowid, text_sha256)]``: from the cache, the missing ones embedded and
    committed to the cache first.

    Returns ``(vectors {text_sha256: float32 (dim,)}, missing text hashes (embedded now), embed_seconds)``.
    """
    shas = [b[2] for b in batch]
    vecs = cache.get_many(key, shas, dim)
    missing = [s for s in dict.fromkeys(shas) if s not in vecs]
    secs = 0.0
    if missing:
        first_rowid: dict[str, int] = {}
        for _, rid, h in batch:
            first_rowid.setdefault(h, rid)
        want = [first_rowid[h] for h in missing]
        texts: dict[int, str] = {}
        for i in range(0, len(want), _IN_CHUNK):
            part = want[i : i + _IN_CHUNK]
            marks = ",".join("?" * len(part))
            texts.update(conn.execute(f"SELECT rowid, text FROM chunks WHERE rowid IN ({marks})", part).fetchall())
        emb, secs = _embed_into_cache(cache, key, embedder, missing, [texts[r] for r in want], dim)
        vecs.update({h: emb[i] for i, h in enumerate(missing)})
    return vecs, missing, secs


def _index_batch(conn, cache: EmbeddingCache, key: int, embedder, table: str, batch, dim: int):
    """Embed (or read from the cache) and insert one batch ``[(doc_pos, rowid, text_sha256)]`` as sign bits.

    Returns ``(n_cache_hits, n_embedded, embed_seconds)``; the cache is committed before the index.
    """
    shas = [b[2] for b in batch]
    vecs, missing, secs = _cached_vectors(conn, cache, key, embedder, batch, dim)
    packed = pack_signs(np.stack([vecs[h] for h in shas]))
    _insert_rows(conn, table, [(rid, packed[i].tobytes(), p) for i, (p, rid, _) in enumerate(batch)])
    missing_set = set(missing)
    hits = sum(1 for s in shas if s not in missing_set)
    return hits, len(missing), secs


def _slice_mean(cache: EmbeddingCache, key: int, shas: Sequence[str], dim: int, where: str) -> np.ndarray:
    """Float32 mean of the cached vectors of ``shas`` (one per chunk, duplicates counted), zeros when empty.

    Float64 partial sums over fixed blocks of :data:`_MEAN_BLOCK` chunks in the given order, added in block order,
    divided by ``len(shas)`` and rounded once to float32: the same slice always gives the same bytes.
    """
    total = np.zeros(dim, dtype=np.float64)
    for start in range(0, len(shas), _MEAN_BLOCK):
        part = shas[start : start + _MEAN_BLOCK]
        got = cache.get_many(key, part, dim)
        if len(got) != len(set(part)):
            raise HarnessInputError(f"{where}: {len(set(part)) - len(got)} slice vectors vanished from the cache")
        total += np.stack([got[h] for h in part]).astype(np.float64).sum(axis=0)
    if not shas:
        return np.zeros(dim, dtype=np.float32)
    return (total / len(shas)).astype(np.float32)


def _build_centered(
    conn, workdir, embedder, table: str, chunker_id: str, sl: CorpusSlice, dim: int, batch_chunks: int, progress, stats
) -> np.ndarray:
    """The centred build (module docstring, "Centring rule"): cache every slice vector, take the slice mean,
    re-centre the table if the recorded mean differs, insert the missing rows. Returns the float32 mean."""
    pos = {d: i for i, d in enumerate(sl.doc_order)}
    in_slice = set(sl.doc_ids)
    chunks = conn.execute("SELECT rowid, doc_id, text_sha256 FROM chunks ORDER BY rowid").fetchall()
    members = [(pos[d], rid, h) for rid, d, h in chunks if d in in_slice]  # rowid order
    stats.update(n_slice_chunks=sl.n_chunks, n_inserted=0, n_cache_hits=0, n_embedded=0, embed_seconds=0.0)
    cache = EmbeddingCache.for_workdir(workdir)
    try:
        key = cache.key_id(embedder.model_id, embedder.weights_sha256, chunker_id, dim)
        stats["stale_cache_keys"] = cache.stale_keys(embedder.model_id, embedder.weights_sha256)
        # 1. every slice vector in the cache (resumable: each batch is committed to the cache)
        with progress_bar(f"embed {embedder.model_id}", len(members), enabled=progress) as bar:
            for start in range(0, len(members), batch_chunks):
                batch = members[start : start + batch_chunks]
                _, missing, secs = _cached_vectors(conn, cache, key, embedder, batch, dim)
                miss = set(missing)
                stats["n_cache_hits"] += sum(1 for b in batch if b[2] not in miss)
                stats["n_embedded"] += len(missing)
                stats["embed_seconds"] += secs
                if bar is not None:
                    bar(len(batch))
        # 2. the slice mean, from the cache
        center = _slice_mean(cache, key, [b[2] for b in members], dim, f"{cache.path}")
        blob = center.astype("<f4").tobytes()
        # 3. re-centre the table if the recorded mean differs (one transaction with the new record)
        info = {"n_chunks": len(members), "mean_sha256": hashlib.sha256(blob).hexdigest(), "recentred": False}
        with _immediate(conn):
            row = conn.execute("SELECT mean FROM vector_centers WHERE table_name=?", (table,)).fetchone()
            n_rows = int(conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0])
            info["n_cleared"] = 0
            if row is None or bytes(row[0]) != blob:
                if n_rows:
                    conn.execute(f'DROP TABLE "{table}"')
                    conn.execute(f'CREATE VIRTUAL TABLE "{table}" USING vec0(embedding bit[{dim}], doc_pos integer)')
                    info["recentred"], info["n_cleared"] = True, n_rows
            conn.execute(
                "INSERT OR REPLACE INTO vector_centers VALUES (?,?,?,?,?,?,?)",
                (table, dim, blob, info["mean_sha256"], len(members), sl.n_docs, _now()),
            )
        stats["center"] = info
        # 4. the missing rows, re-binarised from the cached floats
        have_rows = {r[0] for r in conn.execute(f'SELECT rowid FROM "{table}"').fetchall()}
        pending = sorted(b for b in members if b[1] not in have_rows)
        stats["n_already_indexed"] = len(members) - len(pending)
        for start in range(0, len(pending), batch_chunks):
            batch = pending[start : start + batch_chunks]
            shas = [b[2] for b in batch]
            got = cache.get_many(key, shas, dim)
            if len(got) != len(set(shas)):
                raise HarnessInputError(f"{cache.path}: slice vectors vanished from the cache during the build")
            packed = pack_centered(np.stack([got[h] for h in shas]), center)
            _insert_rows(conn, table, [(rid, packed[i].tobytes(), p) for i, (p, rid, _) in enumerate(batch)])
            stats["n_inserted"] += len(batch)
    finally:
        cache.close()
    return center


def _insert_rows(conn, table: str, rows: list[tuple[int, bytes, int]]) -> None:
    """Insert ``(rowid, packed bits, doc_pos)`` rows in one transaction, skipping rowids already present."""
    with _immediate(conn):
        present: set[int] = set()
        ids = [r[0] for r in rows]
        for i in range(0, len(ids), _IN_CHUNK):
            part = ids[i : i + _IN_CHUNK]
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


def open_vector_system(corpus: Corpus, workdir: str | Path, *, options=None, progress: bool = False) -> VectorIndex:
    """The ``vector`` system of a run: load the embedder named in ``options.extra["model"]`` (default the packaged
    static model) and build, extend or reuse the index for ``options.extra["index_fraction"]`` / ``["until"]``.

    Args:
        corpus: open corpus (read-write).
        workdir: work directory (embedding cache, extracted models).
        options: a :class:`harness.evaluation.pipeline.RunOptions` (only ``extra`` is read: ``model``,
            ``index_fraction``, ``until``, ``vector_backend``, ``binarize`` (``"sign"`` when absent or ``None``)).
        progress: progress bar while embedding.
    """
    from harness.retrieve.embed import DEFAULT_MODEL, load_embedder

    extra = dict(getattr(options, "extra", None) or {})
    embedder = load_embedder(extra.get("model") or DEFAULT_MODEL, models_dir=Path(workdir) / "models")
    return VectorIndex.build(
        corpus,
        workdir,
        embedder,
        index_fraction=extra.get("index_fraction"),
        until=extra.get("until"),
        progress=progress,
        backend=extra.get("vector_backend") or "sqlite-vec",
        binarize=extra.get("binarize") or "sign",
    )
