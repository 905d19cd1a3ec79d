"""The ``vector`` system: binary (1 bit per dimension) chunk vectors in sqlite-vec, ranked by Hamming distance.

Chunk score = ``-hamming(query bits, chunk bits)``; a document's score is its best chunk's. Both rankings are the
exact top ``depth`` under the project's tie rule (score descending, then id ascending as strings;
:func:`harness.ranking.top_k_by_distance`), computed on a tie-complete candidate set from one of three engines
(:mod:`harness.retrieve.vector.engines`: ``sqlite-vec``, ``numpy``, ``faiss``) that return identical rankings.
A search over a partial index only sees chunks of the slice's documents, even when the table holds more. Queries
are binarised exactly like the index's chunks (sign bits, or centred on the index's mean: :meth:`pack_queries`); a
:class:`VectorIndex` remembers its mean and refuses to search once another build has re-centred its table.

With ``rescore=M`` (``M >= 1``; :data:`DEFAULT_RESCORE` by default) the Hamming search only proposes candidates:
``M`` times the depths, re-ordered by the exact cosine of the float vectors from the embedding cache
(:mod:`harness.retrieve.vector.rescore`); ``rescore=0`` ranks by Hamming distance alone.

Flags per query: ``empty_query`` (blank text: empty rankings), ``chunk_tie_at_boundary`` / ``doc_tie_at_boundary``
(some chunk/document left out has the same score as the last one kept, so the id rule decided the cut),
``tie_at_boundary`` (either), ``knn_fallback``, ``rescored`` (the number of candidates re-scored by cosine; absent
without rescoring).

Options of a ``vector`` system in a run (:class:`VectorOptions`): ``model``, ``index_fraction`` / ``until`` (the
slice, :mod:`harness.retrieve.vector.slices`), ``backend``, ``binarize`` (default: the model's,
:func:`harness.retrieve.embed.default_binarize`), ``rescore``; ``vector:binarize=centered``,
``vector:model=e5-small`` and ``vector`` are three systems of one run.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from harness.corpus.store import Corpus
from harness.errors import HarnessInputError
from harness.ranking import top_k_by_distance
from harness.retrieve.base import QueryResult, SystemContext
from harness.retrieve.binary import BIT_ORDER, binarisation_rule, check_dim, pack_centered, pack_signs
from harness.retrieve.embed import load_embedder
from harness.retrieve.vector import cached_floats, sidecar
from harness.retrieve.vector.cache import EmbeddingCache
from harness.retrieve.vector.cached_floats import CachedFloatVectors
from harness.retrieve.vector.engines import (
    BACKENDS,
    SQLITE_VEC_K_MAX,
    FaissEngine,
    HammingEngine,
    NumpyEngine,
    SqliteVecEngine,
)
from harness.retrieve.vector.options import DEFAULT_RESCORE, VectorOptions  # re-exported: the system's options
from harness.retrieve.vector.rescore import RESCORE_RULE, FloatVectors, rescore_candidates, rescore_positions
from harness.retrieve.vector.slices import CorpusSlice, select_slice
from harness.retrieve.vector.store import _manifest_path as _table_manifest
from harness.retrieve.vector.store import build_table, embedder_config, table_name

__all__ = ["DEFAULT_RESCORE", "VectorIndex", "VectorOptions", "open_vector_system"]


class VectorIndex:
    """Binary vectors of a corpus (slice) in sqlite-vec; implements the ``Retriever`` protocol as ``"vector"``.

    Build with :meth:`build`. Attributes: ``corpus``, ``embedder``, ``table`` (vec0 table name), ``slice``
    (:class:`CorpusSlice`), ``backend`` (``"sqlite-vec"``, ``"numpy"`` or ``"faiss"``), ``build_stats`` (dict),
    ``binarize`` (``"sign"`` or ``"centered"``), ``center`` (the float32 ``(dim,)`` centring vector, ``None`` for
    sign bits), ``sidecar`` (where the ids' ranks, document indices and packed bits came from: ``"sidecar"``,
    ``"written"``, ``"rebuilt"`` or ``"memory"``; :func:`harness.retrieve.vector.sidecar.load_or_build`). Opening
    reads arrays (the bits memory-mapped) and no chunk row; chunk ids are read per result by rowid.
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
        rescore: int = 0,
        workdir: str | Path | None = None,
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
        if isinstance(rescore, bool) or not isinstance(rescore, int) or not 0 <= rescore <= 64:
            raise HarnessInputError(f"rescore: {rescore!r} is not an int in [0, 64]")
        if rescore and workdir is None:
            raise HarnessInputError("rescore: needs the work directory whose embedding cache holds the float vectors")
        self.rescore = rescore
        self.workdir = None if workdir is None else Path(workdir)
        self._floats: FloatVectors | CachedFloatVectors | None = None
        self.dim = int(embedder.dim)
        self.nbytes = check_dim(self.dim)
        self._doc_set = frozenset(corpus_slice.doc_ids)
        # ids, ranks and bits as arrays, from the table's sidecar in the work directory (issue 43, item 3)
        arrays, self.sidecar = sidecar.load_or_build(corpus, self.workdir, table, self.nbytes)
        self._doc_ids = sorted(self._doc_set)
        doc_index = {d: i for i, d in enumerate(self._doc_ids)}
        remap = np.array([doc_index.get(d, -1) for d in arrays.docs] + [-1], dtype=np.int64)
        doc_idx = remap[arrays.doc_code]
        in_slice = doc_idx >= 0
        self._sel = None if in_slice.all() else np.flatnonzero(in_slice)
        pick = (lambda a: a) if self._sel is None else (lambda a: np.asarray(a)[self._sel])
        self._rowids = pick(arrays.rowids)
        self._chunk_rank = pick(arrays.chunk_rank)  # ranks among the table's ids: same order on the slice
        self._doc_idx = pick(doc_idx)
        self._doc_rank = np.arange(len(self._doc_ids), dtype=np.int64)  # _doc_ids is sorted
        self._missing = corpus_slice.n_chunks - int(self._rowids.shape[0])  # slice chunks without a vector
        self._table_bits = arrays.bits  # memory-mapped from the sidecar (or in memory)
        max_rowid = int(corpus.conn.execute("SELECT coalesce(max(rowid), 0) FROM chunks").fetchone()[0])
        self._slot = np.full(max_rowid + 1, -1, dtype=np.int64)
        self._slot[self._rowids] = np.arange(self._rowids.shape[0], dtype=np.int64)
        self._max_pos = corpus_slice.n_docs
        self._filter = not corpus_slice.is_full
        self._id_of: dict[int, str] = {}  # chunk ids read so far, by rowid (read per result, not at open)
        self._all_ids: list[str] | None = None
        self._shas: list[str] | None = None
        self._bits: np.ndarray | None = None
        self._engines: dict[str, HammingEngine] = {}  # made on first search with each backend
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
        binarize: str | None = None,
        rescore: int = 0,
        workers: int | None = None,
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
            binarize: ``"sign"`` (bit = value > 0) or ``"centered"`` (bit = value > the slice's mean; its own
                table; see "Centring rule" in :mod:`harness.retrieve.vector.store`); ``None``: the embedder's
                default (its ``binarize``).
            rescore: ``M`` of float rescoring (0: off; see the module docstring).
            workers: embedding worker processes (``None``: one per core for a ``per_text`` model with enough texts
                to embed; :func:`harness.retrieve.embed.workers.passage_embedder`).

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
        if batch_chunks <= 0:
            raise HarnessInputError(f"batch_chunks must be positive, got {batch_chunks}")
        check_dim(int(embedder.dim))
        binarize = binarize or getattr(embedder, "binarize", "sign")
        binarisation_rule(binarize)
        if corpus.conn.readonly("main"):
            raise HarnessInputError(f"{corpus.path}: opened read-only; cannot build the vector index")
        sl = select_slice(corpus, index_fraction=index_fraction, until=until)
        stamped = _table_manifest(corpus.path, table_name(embedder.model_id, embedder.weights_sha256, binarize))
        had_stamp = stamped.is_file()
        table, center, stats = build_table(
            corpus,
            workdir,
            embedder,
            sl,
            binarize=binarize,
            batch_chunks=batch_chunks,
            progress=progress,
            workers=workers,
        )
        if stats.get("n_inserted") or stats.get("rebuilt") or not had_stamp:
            sidecar.discard(workdir, corpus, table)  # the table (or its stamp) changed: the sidecar is written anew
        return cls(
            corpus,
            embedder,
            table,
            sl,
            backend=backend,
            stats=stats,
            binarize=binarize,
            center=center,
            rescore=rescore,
            workdir=workdir,
        )

    # ---- coverage and config ---------------------------------------------------------------------------------------

    def is_fully_indexed(self, doc_id: str) -> bool:
        """True when every chunk of ``doc_id`` is in the searched slice."""
        return doc_id in self._doc_set

    @property
    def chunk_ids(self) -> list[str]:
        """The slice's chunk ids in slice (rowid) order: row ``i`` of :meth:`float_vectors` and
        :meth:`packed_bits`."""
        return list(self._slice_column("chunk_id"))

    def _slice_column(self, column: str) -> list[str]:
        """A text column of ``chunks`` (``chunk_id`` or ``text_sha256``) for the slice's chunks, in slice order
        (read once, on first use)."""
        have = self._all_ids if column == "chunk_id" else self._shas
        if have is None:
            got = {}
            for rid, value in self.corpus.conn.execute(f"SELECT rowid, {column} FROM chunks ORDER BY rowid"):
                if rid < self._slot.shape[0] and self._slot[rid] >= 0:
                    got[rid] = value
            have = [got[int(r)] for r in self._rowids.tolist()]
            if column == "chunk_id":
                self._all_ids = have
            else:
                self._shas = have
        return have

    def _ids_at(self, positions) -> list[str]:
        """Chunk ids of slice positions (read from ``chunks`` by rowid, remembered)."""
        rids = [int(r) for r in self._rowids[np.asarray(positions, dtype=np.int64)]]
        if self._all_ids is not None:
            return [self._all_ids[int(self._slot[r])] for r in rids]
        need = [r for r in rids if r not in self._id_of]
        if need:
            sql = "SELECT rowid, chunk_id FROM chunks WHERE rowid IN (SELECT value FROM json_each(?))"
            for start in range(0, len(need), 50_000):
                for rid, cid in self.corpus.conn.execute(sql, (json.dumps(need[start : start + 50_000]),)):
                    self._id_of[rid] = cid
        return [self._id_of[r] for r in rids]

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
            "embedder": embedder_config(self.embedder),
            "model_id": self.embedder.model_id,
            "weights_sha256": self.embedder.weights_sha256,
            "dim": self.dim,
            "binarize": self.binarize,
            "binarisation": binarisation_rule(self.binarize),
            "bit_order": BIT_ORDER,
            "distance": "hamming",
            "rescore": self.rescore,
            "rescore_rule": RESCORE_RULE if self.rescore else None,
            "chunk_score": "cosine of the float vectors (rescored candidates)" if self.rescore else "-hamming",
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
        out: list[QueryResult] = [QueryResult(docs=[], chunks=[], flags={"empty_query": True}) for _ in texts]
        if live:
            floats = np.asarray(self.embedder.embed_queries([texts[i] for i in live]))
            packed = self.pack_queries(floats)
            res = self.search_packed(
                packed, doc_depth=doc_depth, chunk_depth=chunk_depth, backend=backend, query_vectors=floats
            )
            for i, r in zip(live, res, strict=True):
                out[i] = r
        return out

    def search_packed(
        self,
        packed: np.ndarray,
        *,
        doc_depth: int,
        chunk_depth: int,
        backend: str | None = None,
        query_vectors: np.ndarray | None = None,
    ) -> list[QueryResult]:
        """:meth:`search` on query bits already packed (``uint8 (m, dim/8)``, LSB first), binarised like the index's
        chunks (:meth:`pack_queries` / :meth:`query_bits`).

        Args:
            query_vectors: the queries' float embeddings ``(m, dim)``, needed when the index rescores
                (``rescore >= 1``); ignored otherwise.

        Raises:
            HarnessInputError: a bad backend or depth, a width other than ``dim / 8`` bytes, a centred table that
                another build has re-centred since this index was built, a rescoring index without
                ``query_vectors``.
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
        m = self.rescore
        if not m:
            cands = self._engine(be).candidates(q, chunk_depth, doc_depth)
            return [self._rank(idx, d, chunk_depth, doc_depth, flags) for idx, d, flags in cands]
        if query_vectors is None or np.asarray(query_vectors).shape != (q.shape[0], self.dim):
            raise HarnessInputError(f"rescore={m}: search_packed needs the ({q.shape[0]}, {self.dim}) query vectors")
        qv = np.asarray(query_vectors)
        cands = self._engine(be).candidates(q, m * chunk_depth, m * doc_depth)
        return [self._rescored(qv[i], idx, d, chunk_depth, doc_depth, flags) for i, (idx, d, flags) in enumerate(cands)]

    def _engine(self, backend: str) -> HammingEngine:
        """The engine of ``backend`` (made once per index)."""
        if backend not in self._engines:
            if backend == "numpy":
                engine: HammingEngine = NumpyEngine(self._load_bits, self._doc_idx)
            elif backend == "faiss":
                engine = FaissEngine(self.dim, self._load_bits, self._doc_idx, self.search_stats)
            else:
                max_pos = self._max_pos if self._filter else None
                engine = SqliteVecEngine(
                    self.corpus.conn, self.table, self._slot, self._doc_idx, max_pos, self._load_bits, self.search_stats
                )
            self._engines[backend] = engine
        return self._engines[backend]

    def _rank(self, idx, dist: np.ndarray, chunk_depth: int, doc_depth: int, flags: dict) -> QueryResult:
        """Exact rankings from a tie-complete candidate set (``idx=None``: every slice chunk, ``dist`` per chunk)."""
        if idx is None:
            idx = np.arange(dist.shape[0], dtype=np.int64)
        top, ctie = top_k_by_distance(dist, self._chunk_rank[idx], chunk_depth)
        chunks = list(zip(self._ids_at(idx[top]), [float(-int(dist[j])) for j in top], strict=True))
        big = np.iinfo(np.int64).max
        best = np.full(len(self._doc_ids), big, dtype=np.int64)
        np.minimum.at(best, self._doc_idx[idx], dist.astype(np.int64))
        present = np.flatnonzero(best < big)
        dtop, dtie = top_k_by_distance(best[present], self._doc_rank[present], doc_depth)
        docs = [(self._doc_ids[present[j]], float(-int(best[present[j]]))) for j in dtop]
        return _result(docs, chunks, dict(flags), ctie, dtie)

    def _rescored(self, qvec, idx, dist: np.ndarray, chunk_depth: int, doc_depth: int, flags: dict) -> QueryResult:
        """Rankings of the rescored candidates (:mod:`harness.retrieve.vector.rescore`)."""
        if idx is None:
            idx = np.arange(dist.shape[0], dtype=np.int64)
        m = self.rescore
        keep = rescore_positions(idx, dist, self._chunk_rank[idx], self._doc_idx[idx], m * chunk_depth, m * doc_depth)
        cand = idx[keep]
        cos = self.float_vectors().cosine(qvec, cand)
        corder, ctie, dsel, dscore, dtie = rescore_candidates(
            cand, cos, self._chunk_rank[cand], self._doc_idx[cand], chunk_depth, doc_depth
        )
        chunks = list(zip(self._ids_at(cand[corder]), [float(cos[j]) for j in corder], strict=True))
        docs = [(self._doc_ids[d], float(s)) for d, s in zip(dsel, dscore, strict=True)]
        return _result(docs, chunks, {**flags, "rescored": int(cand.size)}, ctie, dtie)

    def float_vectors(self) -> FloatVectors | CachedFloatVectors:
        """The slice's float32 passage vectors from the embedding cache, in slice order: held in memory (read once;
        about ``n * dim * 4`` bytes) up to :data:`~harness.retrieve.vector.cached_floats.IN_MEMORY_BYTES`, read per
        query from the cache above it (:class:`~harness.retrieve.vector.cached_floats.CachedFloatVectors`, same
        cosines).

        Raises:
            HarnessInputError: no work directory; a slice vector missing from the cache.
        """
        if self._floats is None:
            if self.workdir is None:
                raise HarnessInputError("the float vectors live in the embedding cache: the index has no workdir")
            cache = EmbeddingCache.for_workdir(self.workdir)
            key = cache.key_id(
                self.embedder.model_id, self.embedder.weights_sha256, self.corpus.manifest.chunker_id, self.dim
            )
            shas = self._slice_column("text_sha256")
            if len(shas) * self.dim * 4 > cached_floats.IN_MEMORY_BYTES:
                try:
                    self._floats = CachedFloatVectors(cache, key, shas, self.dim)
                except BaseException:
                    cache.close()
                    raise
                return self._floats
            try:
                got = cache.get_many(key, shas, self.dim)
            finally:
                cache.close()
            lost = [h for h in shas if h not in got]
            if lost:
                raise HarnessInputError(f"{cache.path}: {len(lost)} slice vectors are not in the embedding cache")
            self._floats = FloatVectors(
                np.stack([got[h] for h in shas]) if shas else np.zeros((0, self.dim), dtype=np.float32)
            )
        return self._floats

    def _load_bits(self) -> np.ndarray:
        """Packed bits of the slice's chunks in slice order: the sidecar's memory map for a slice that is the whole
        table, else the slice's rows of it (copied once).

        Raises:
            HarnessInputError: a slice chunk without a vector in the table.
        """
        if self._bits is None:
            if self._missing:
                raise HarnessInputError(f"{self.table}: {self._missing} slice chunks have no vector")
            bits = self._table_bits
            self._bits = bits if self._sel is None else np.ascontiguousarray(bits[self._sel])
        return self._bits

    def packed_bits(self) -> tuple[list[str], np.ndarray]:
        """``(chunk_ids, bits)``: the slice's chunk ids (rowid order) and their packed bits ``uint8 (n, dim/8)``, as
        stored (sign or centred bits; compare with :meth:`pack_queries` of the query embeddings)."""
        self._check_center()
        return list(self._slice_column("chunk_id")), np.array(self._load_bits())


def _result(docs, chunks, flags: dict, chunk_tie: bool, doc_tie: bool) -> QueryResult:
    """A :class:`QueryResult` with the boundary-tie flags of each level (and ``tie_at_boundary`` if either)."""
    if chunk_tie:
        flags["chunk_tie_at_boundary"] = True
    if doc_tie:
        flags["doc_tie_at_boundary"] = True
    if chunk_tie or doc_tie:
        flags["tie_at_boundary"] = True
    return QueryResult(docs=docs, chunks=chunks, flags=flags)


def open_vector_system(context: SystemContext, options: VectorOptions) -> VectorIndex:
    """The ``vector`` system of a run (registry factory): load the embedder ``options.model`` and build, extend or
    reuse the index of the slice the options name.

    Args:
        context: corpus (read-write), work directory (embedding cache, extracted models), progress, log.
        options: the system's :class:`VectorOptions`.

    Raises:
        HarnessInputError: what :func:`harness.retrieve.embed.load_embedder` and :meth:`VectorIndex.build` raise.
    """
    t0 = time.perf_counter()
    embedder = load_embedder(options.model, models_dir=Path(context.workdir) / "models")
    index = VectorIndex.build(
        context.corpus,
        context.workdir,
        embedder,
        index_fraction=options.index_fraction,
        until=options.until,
        progress=context.progress,
        backend=options.backend,
        binarize=options.binarize,
        rescore=options.rescore,
    )
    context.log(f"vector: index ready in {time.perf_counter() - t0:.1f} s")
    return index
