"""The embedding cache: float32 passage embeddings keyed by model, weights, chunker and text, in their own SQLite file.

``<workdir>/embeddings/cache.sqlite`` (WAL mode, about 1.4 KB per 256-d vector) holds float32 passage embeddings
keyed by (model id, weights sha256, chunker id) and the chunk text's sha256, so re-runs, extensions and other
corpora embed only texts never seen with that model and chunker. Every write is one committed transaction, so an
interrupted build loses at most the batch in flight. Shared by the vector index build, the known-item study and the
Ray build (:mod:`harness.retrieve.ray_embed`).

Damage (issue 26, item 7): the file carries a derived-file manifest (:mod:`harness.derived`,
``cache.sqlite.manifest.json``, kind ``embedding-cache``) stamped when a connection that wrote closes. On open, a
file whose size or mtime differs from the stamp (or that has none) is checked before use: SQLite's
``PRAGMA quick_check`` and every stored vector's width against its key's dimension. A file SQLite cannot open, or
that fails the check, is refused with one line naming it and saying how to fix it (exit 2): never a traceback, never
a vector read from a damaged file. It is not removed: its vectors are derived, but other runs may be reading it and
re-embedding a corpus is slow (the known-item study's rule since issue 18). An unchanged file costs one ``stat``.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Sequence
from pathlib import Path

import apsw
import numpy as np

from harness.derived import check_manifest, write_manifest
from harness.errors import HarnessInputError
from harness.retrieve.binary import pack_signs
from harness.retrieve.embed.workers import ShardedEmbedder, passage_embedder
from harness.retrieve.vector._sqlite import IN_CHUNK, immediate, now

__all__ = [
    "CACHE_SCHEMA_VERSION",
    "Counted",
    "EmbeddingCache",
    "cached_passage_embeddings",
    "embed_into_cache",
]

CACHE_SQL = """
CREATE TABLE IF NOT EXISTS cache_keys(
  key_id INTEGER PRIMARY KEY, model_id TEXT NOT NULL, weights_sha256 TEXT NOT NULL, chunker_id TEXT NOT NULL,
  dim INTEGER NOT NULL, dtype TEXT NOT NULL, created_at TEXT NOT NULL,
  UNIQUE(model_id, weights_sha256, chunker_id));
CREATE TABLE IF NOT EXISTS embeddings(
  id INTEGER PRIMARY KEY, key_id INTEGER NOT NULL, text_sha256 BLOB NOT NULL, vector BLOB NOT NULL,
  UNIQUE(key_id, text_sha256));
"""
CACHE_SCHEMA_VERSION = 1
"""``PRAGMA user_version`` of the cache file."""


class EmbeddingCache:
    """Float32 passage embeddings keyed by (model id, weights sha256, chunker id, text sha256).

    Args:
        path: the SQLite file (created with its folder if missing).
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.manifest_path = self.path.with_name(self.path.name + ".manifest.json")
        self._wrote = False
        problem = self._open()
        if problem is not None:  # refused, not removed (module docstring)
            raise HarnessInputError(
                f"{self.path}: damaged embedding cache ({problem}); it holds derived vectors only, but other runs may "
                "be reading it and re-embedding is slow, so harness leaves it: when no harness process uses this "
                f"work directory, delete {self.path.name} and its -wal/-shm files in {self.path.parent} and run again"
            )

    def _open(self) -> str | None:
        """Open, check (when changed since the stamp) and prepare the file; the problem, or ``None``."""
        existed = self.path.is_file() and self.path.stat().st_size > 0
        try:
            self.conn = apsw.Connection(str(self.path))
            self.conn.setbusytimeout(60_000)
            if existed:
                problem = check_manifest(
                    self.manifest_path, "embedding-cache", {"cache.sqlite": self.path}, verify=self._verify
                )
                if problem is not None and problem.startswith("no manifest"):
                    problem = self._verify("cache.sqlite", self.path)  # a cache older than the stamps: check once
                    if problem is None:
                        self._wrote = True  # stamp it at close
                    else:
                        problem = f"cache.sqlite: {problem}"
                if problem is not None:
                    self.conn.close()
                    return problem
            self.conn.execute("PRAGMA journal_mode=WAL")
            with immediate(self.conn):
                version = self.conn.execute("PRAGMA user_version").fetchone()[0]
                tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
                if tables and version != CACHE_SCHEMA_VERSION:
                    raise HarnessInputError(
                        f"{self.path}: embedding cache schema {version}, expected {CACHE_SCHEMA_VERSION}; "
                        "delete the file"
                    )
                if not {"cache_keys", "embeddings"} <= tables:  # only then: a write here would change the file,
                    self.conn.execute(CACHE_SQL)  # so every later open would re-check all of it (minutes at DOF size)
                    self.conn.execute(f"PRAGMA user_version={CACHE_SCHEMA_VERSION}")
                    self._wrote = True
        except apsw.Error as exc:
            with contextlib.suppress(apsw.Error):
                self.conn.close()
            if isinstance(exc, apsw.BusyError | apsw.LockedError):  # another process's lock: not damage
                raise HarnessInputError(f"{self.path}: embedding cache is locked by another process ({exc})") from None
            return f"SQLite cannot read it ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
        if not existed:
            self._wrote = True
        return None

    def _verify(self, _name: str, _path: Path) -> str | None:
        """The check of a changed file: ``PRAGMA quick_check`` and every vector 4 x its key's dim bytes wide."""
        try:
            rows = self.conn.execute("PRAGMA quick_check").fetchall()
            if [tuple(r) for r in rows] != [("ok",)]:
                return f"SQLite quick_check: {str(rows[0][0]).splitlines()[0]}"
            tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if {"cache_keys", "embeddings"} <= tables:
                bad = self.conn.execute(
                    "SELECT count(*) FROM embeddings e JOIN cache_keys k ON e.key_id=k.key_id "
                    "WHERE length(e.vector) <> 4 * k.dim"
                ).fetchone()[0]
                if bad:
                    return f"{bad} stored vectors have the wrong width"
        except (apsw.BusyError, apsw.LockedError):
            raise  # not damage: _open reports it
        except apsw.Error as exc:
            return f"SQLite cannot read it ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
        return None

    @classmethod
    def for_workdir(cls, workdir: str | Path) -> EmbeddingCache:
        """The cache of a work directory: ``<workdir>/embeddings/cache.sqlite``."""
        return cls(Path(workdir) / "embeddings" / "cache.sqlite")

    def close(self) -> None:
        """Close the connection; after writes, stamp the file's manifest (size and mtime: the next open is cheap)."""
        self.conn.close()
        if self._wrote and self.path.is_file():
            with contextlib.suppress(OSError):
                write_manifest(self.manifest_path, "embedding-cache", {"cache.sqlite": self.path}, content_hash=False)
            self._wrote = False

    def key_id(self, model_id: str, weights_sha256: str, chunker_id: str, dim: int) -> int:
        """The integer key of (model, weights, chunker), created on first use.

        Raises:
            HarnessInputError: the key exists with another dimension (a corrupt cache).
        """
        with immediate(self.conn):
            row = self.conn.execute(
                "SELECT key_id, dim FROM cache_keys WHERE model_id=? AND weights_sha256=? AND chunker_id=?",
                (model_id, weights_sha256, chunker_id),
            ).fetchone()
            if row is None:
                self.conn.execute(
                    "INSERT INTO cache_keys(model_id, weights_sha256, chunker_id, dim, dtype, created_at) "
                    "VALUES (?,?,?,?,?,?)",
                    (model_id, weights_sha256, chunker_id, int(dim), "float32-le", now()),
                )
                self._wrote = True
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
        for i in range(0, len(shas), IN_CHUNK):
            part = shas[i : i + IN_CHUNK]
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
        with immediate(self.conn):
            self.conn.executemany(
                "INSERT OR IGNORE INTO embeddings(key_id, text_sha256, vector) VALUES (?,?,?)",
                [(key_id, bytes.fromhex(s), vecs[i].tobytes()) for i, s in enumerate(text_sha256)],
            )
        self._wrote = True

    def missing(self, key_id: int, text_sha256: Sequence[str]) -> list[str]:
        """The distinct hashes of ``text_sha256`` (first-occurrence order) with no vector under ``key_id`` (reads no
        vectors)."""
        shas = list(dict.fromkeys(text_sha256))
        have: set[str] = set()
        for i in range(0, len(shas), IN_CHUNK):
            part = shas[i : i + IN_CHUNK]
            marks = ",".join("?" * len(part))
            have.update(
                bytes(h).hex()
                for (h,) in self.conn.execute(
                    f"SELECT text_sha256 FROM embeddings WHERE key_id=? AND text_sha256 IN ({marks})",
                    (key_id, *(bytes.fromhex(s) for s in part)),
                )
            )
        return [s for s in shas if s not in have]

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
    workers: int | None = None,
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
            then as texts are embedded; the calls sum to the number of distinct texts.
        workers: embedding worker processes (:func:`harness.retrieve.embed.workers.passage_embedder`; ``None``:
            one per core for a ``per_text`` model with enough texts to embed).

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
    with passage_embedder(embedder, len(missing), workers) as pe:
        stats["workers"] = getattr(pe, "workers", 1)
        for start in range(0, len(missing), batch_size):
            part = missing[start : start + batch_size]
            bar = Counted(progress)
            emb, secs = embed_into_cache(cache, key, pe, part, [texts[first[h]] for h in part], dim, progress=bar)
            stats["embed_seconds"] += secs
            vecs.update({h: emb[i] for i, h in enumerate(part)})
            bar.finish(len(part))
    out = np.empty((len(texts), dim), dtype=np.float32)
    for i, h in enumerate(shas):
        out[i] = vecs[h]
    return out, stats


class Counted:
    """A progress callback that remembers how much it was advanced, so a batch can add only the rest at its end."""

    def __init__(self, progress):
        self.progress, self.done = progress, 0

    def __call__(self, n: int) -> None:
        self.done += n
        if self.progress is not None:
            self.progress(n)

    def finish(self, total: int) -> None:
        """Advance the wrapped callback to ``total`` for this batch."""
        if self.progress is not None and total > self.done:
            self.progress(total - self.done)
        self.done = 0


def embed_into_cache(
    cache: EmbeddingCache, key: int, embedder, shas: list[str], texts: list[str], dim: int, progress=None
):
    """Embed ``texts`` (passage prompt), check the (len(texts), dim) shape and finiteness, then commit them to the
    cache under ``shas``; nothing is stored when a check fails. ``progress(n)`` is passed to an embedder that reports
    its own progress (:class:`harness.retrieve.embed.workers.ShardedEmbedder`). Returns
    ``(float32 (n, dim), embed_seconds)``."""
    t0 = time.perf_counter()
    if progress is not None and isinstance(embedder, ShardedEmbedder):
        emb = np.asarray(embedder.embed_passages(texts, progress=progress), dtype=np.float32)
    else:
        emb = np.asarray(embedder.embed_passages(texts), dtype=np.float32)
    secs = time.perf_counter() - t0
    if emb.shape != (len(texts), dim):
        raise HarnessInputError(f"embedder {embedder.model_id}: got shape {emb.shape}, expected ({len(texts)}, {dim})")
    pack_signs(emb)  # refuse NaN/inf before anything is stored
    cache.put_many(key, shas, emb)
    return emb, secs
