"""The known-item systems: scorer factories and the two scorer kinds they build.

A *scorer factory* takes a :class:`ScorerInputs` (the chunk and query texts, their analysed tokens, the chunker id,
the embedding model, the work directory) and returns ``(scorer, config)``: a :class:`~.search.Scorer` for
:func:`~.search.known_item_search` and a JSON-serialisable dict identifying the system (it goes to
``summary.json``). Every factory is a plain module-level function; :data:`harness.studies.known_item.systems.FACES`
maps each base kind of the system registry (:data:`harness.retrieve.registry.KINDS`) to its factory, so a new kind
of system is one registry entry plus one factory here.

All scores are non-negative and only positive ones count as retrieved. :class:`SparseScorer` accumulates term
weights in a fixed order, so ties between chunks with identical term weights are bit-exact; :class:`HammingScorer`
scores are integers (agreeing bits) stored exactly in float32.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import scipy.sparse as sp

from harness.corpus.store import DAMAGE_ERRORS
from harness.errors import HarnessInputError
from harness.progress import progress_bar
from harness.studies.known_item.search import Scorer

__all__ = [
    "EMBED_BLOCK",
    "HammingScorer",
    "KNOWN_ITEM_RESCORE_DEPTH",
    "RescoredScorer",
    "ScorerFactory",
    "ScorerInputs",
    "SparseScorer",
    "bm25_scorer",
    "tfidf_scorer",
    "vector_scorer",
]


class SparseScorer:
    """Scores of a block of queries as ``Q[start:stop] @ W.T`` accumulated densely (float32).

    Each query's term weights times the index's posting lists are added term by term in the query row's order, so
    two chunks with identical term weights get bit-identical scores (ties are exact).

    Args:
        index_t: shape (V, N) CSR, term x chunk weights (non-negative).
        queries: shape (Q, V) CSR, query term weights.
        offsets: shape (Q,), a score added to every chunk of a query after the accumulation (bm25s's non-occurrence
            score of bm25l / bm25+, float32), or ``None``.

    Raises:
        ValueError: the vocabularies (``V``) differ.
    """

    def __init__(self, index_t: sp.csr_matrix, queries: sp.csr_matrix, offsets: np.ndarray | None = None):
        self.index_t = index_t.tocsr()
        self.queries = queries.tocsr()
        self.offsets = None if offsets is None else np.asarray(offsets, dtype=np.float32)
        if self.index_t.shape[0] != self.queries.shape[1]:
            raise ValueError(f"shapes: queries {self.queries.shape}, index_t {self.index_t.shape}")
        self.n_queries, self.n_chunks = self.queries.shape[0], self.index_t.shape[1]
        self.dtype = np.result_type(self.index_t.dtype, self.queries.dtype, np.float32)

    def empty_queries(self) -> np.ndarray:
        """shape (Q,), bool: queries without any index term."""
        return np.diff(self.queries.indptr) == 0

    def __call__(self, out: np.ndarray, start: int, stop: int) -> np.ndarray:
        """Scores of queries ``start:stop`` written into ``out[: stop - start]`` (see :class:`~.search.Scorer`)."""
        s = out[: stop - start]
        s.fill(0.0)
        qp, qi, qv = self.queries.indptr, self.queries.indices, self.queries.data
        ip, ix, dat = self.index_t.indptr, self.index_t.indices, self.index_t.data
        for r in range(stop - start):
            row = s[r]
            for k in range(qp[start + r], qp[start + r + 1]):
                t = qi[k]
                a, b = ip[t], ip[t + 1]
                if b > a:
                    row[ix[a:b]] += qv[k] * dat[a:b]
            if self.offsets is not None:
                row += self.offsets[start + r]
        return s


class HammingScorer:
    """Scores of a block of queries as the number of agreeing bits, ``D - hamming(q, c)`` (float32, exact).

    Args:
        query_bits: shape (Q, D/8) packed query bits (:func:`harness.retrieve.binary.pack_signs` or
            :func:`~harness.retrieve.binary.pack_centered`).
        chunk_bits: shape (N, D/8) packed chunk bits, same convention.
        dim: D.
    """

    def __init__(self, query_bits: np.ndarray, chunk_bits: np.ndarray, dim: int):
        self.query_bits, self.chunk_bits, self.dim = query_bits, chunk_bits, int(dim)
        self.n_queries, self.n_chunks = query_bits.shape[0], chunk_bits.shape[0]
        self.dtype = np.dtype(np.float32)

    def empty_queries(self) -> np.ndarray:
        """shape (Q,), bool: never empty (every text has an embedding)."""
        return np.zeros(self.n_queries, dtype=bool)

    def __call__(self, out: np.ndarray, start: int, stop: int) -> np.ndarray:
        """Scores of queries ``start:stop`` written into ``out[: stop - start]`` (see :class:`~.search.Scorer`)."""
        from harness.retrieve.binary import hamming_distances

        s = out[: stop - start]
        np.subtract(self.dim, hamming_distances(self.query_bits[start:stop], self.chunk_bits), out=s, casting="unsafe")
        return s


@dataclass(frozen=True)
class ScorerInputs:
    """What a scorer factory builds a system from (chunks and queries of one :class:`~.corpus.ChunkedCorpus`).

    Attributes:
        chunk_texts: the N chunk texts (index order).
        query_texts: the Q query texts.
        chunk_tokens: the N chunk texts analysed (``es-snowball-fold-v1``).
        query_tokens: the Q query texts analysed the same way.
        chunker_id: the chunker that made the chunks (the embedding cache's key).
        workdir: work directory whose embedding cache the ``vector`` system shares (``None``: embed in memory).
        progress: show progress bars.
        corpus_dir: the corpus folder the chunks come from (the per-query fallback of a kind without a batched
            face ingests it: :class:`harness.studies.known_item.systems.StudySystems`).
    """

    chunk_texts: Sequence[str]
    query_texts: Sequence[str]
    chunk_tokens: Sequence[Sequence[str]]
    query_tokens: Sequence[Sequence[str]]
    chunker_id: str = "md-words-v1"
    workdir: Path | None = None
    progress: bool = False
    corpus_dir: Path | None = None


class ScorerFactory(Protocol):
    """A known-item system: builds ``(scorer, config)`` from :class:`ScorerInputs`."""

    def __call__(self, inputs: ScorerInputs) -> tuple[Scorer, dict]: ...


def bm25_scorer(inputs: ScorerInputs, options=None) -> tuple[SparseScorer, dict]:
    """The ``bm25`` system: bm25s weights of the chunk tokens as a (V, N) term x chunk matrix, and each query as a
    (1, V) row of its term counts (with multiplicity, as bm25s's ``get_scores`` sums a repeated term once per
    occurrence), so ``Q @ W.T`` is bm25s's score; for bm25l / bm25+ each query's non-occurrence score (bm25s's
    ``nonoccurrence_array`` summed over its terms) is added to every chunk, as bm25s adds it.

    ``options``: a :class:`harness.retrieve.bm25.BM25Options` (``k1``, ``b``, ``method``, ``delta``; ``None``: Lucene
    k1 1.5, b 0.75).

    Returns:
        ``(SparseScorer, config)``; config: ``{"system": "bm25", "library": "bm25s <version>", "params": ...}``.
    """
    import bm25s

    from harness.retrieve.analyzer import SpanishAnalyzer
    from harness.retrieve.bm25 import BM25Index, BM25Options
    from harness.retrieve.counts import query_term_matrix

    params = (options or BM25Options()).params()
    n = len(inputs.chunk_tokens)
    idx = BM25Index.build([str(i) for i in range(n)], inputs.chunk_tokens, SpanishAnalyzer(), params)
    sc = idx.retriever.scores
    v = len(sc["indptr"]) - 1
    index_t = sp.csr_matrix(
        (np.asarray(sc["data"], dtype=np.float32), np.asarray(sc["indices"]), np.asarray(sc["indptr"])),
        shape=(v, int(sc["num_docs"])),
    )
    q = query_term_matrix(inputs.query_tokens, idx.vocab, v)
    offsets = None
    if idx.nonoccurrence is not None:
        q_ptr, q_tok = idx._token_ids(inputs.query_tokens, analysed=True)
        offsets = idx.query_offsets(q_ptr, q_tok)
    config = {"system": "bm25", "library": f"bm25s {bm25s.__version__}", "params": params}
    return SparseScorer(index_t, q, offsets), config


def _identity(tokens):
    return tokens


def tfidf_scorer(inputs: ScorerInputs) -> tuple[SparseScorer, dict]:
    """The ``tfidf`` system: scikit-learn ``TfidfVectorizer`` (raw tf, smooth idf ``ln((1 + n) / (1 + df)) + 1``,
    l2-normalised rows) over the analysed tokens, cosine similarity (the dot product of l2-normalised rows).

    Returns:
        ``(SparseScorer, config)``; config names the library version and the vectoriser's parameters.
    """
    import sklearn
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(analyzer=_identity, lowercase=False, dtype=np.float32)
    x = vec.fit_transform(inputs.chunk_tokens)
    q = vec.transform(inputs.query_tokens).tocsr()
    index_t = x.T.tocsr()
    params = {k: vec.get_params()[k] for k in ("norm", "use_idf", "smooth_idf", "sublinear_tf")}
    config = {
        "system": "tfidf",
        "library": f"scikit-learn {sklearn.__version__}",
        "params": params,
        "similarity": "cosine",
    }
    return SparseScorer(index_t, q.astype(np.float32)), config


EMBED_BLOCK = 4096  # texts (queries, in-memory passages) embedded per call; fixed, so the display changes nothing


def _embed_in_blocks(fn, texts: Sequence[str], dim: int, progress: bool, label: str) -> np.ndarray:
    """``fn(texts)`` (an embedder's ``embed_queries`` / ``embed_passages``) called on consecutive blocks of
    :data:`EMBED_BLOCK` texts, rows stacked in input order (float32, shape (len(texts), dim)), a progress
    bar advanced per block."""
    parts = []
    with progress_bar(label, len(texts), enabled=progress) as cb:
        for s in range(0, len(texts), EMBED_BLOCK):
            parts.append(np.asarray(fn(list(texts[s : s + EMBED_BLOCK])), dtype=np.float32))
            if cb is not None:
                cb(len(parts[-1]))
    return np.concatenate(parts) if parts else np.zeros((0, dim), dtype=np.float32)


class QuerySide:
    """The query side of an embedder seen as passages (``embed_passages`` = its ``embed_queries``), under the model
    id ``<model_id>#query``, so the embedding cache stores query vectors apart from passage vectors of the same text.
    Always embedded in this process (no ``per_text``/``load_args``)."""

    def __init__(self, emb):
        self.emb, self.model_id = emb, f"{emb.model_id}#query"
        self.weights_sha256, self.dim = emb.weights_sha256, emb.dim

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """The wrapped embedder's query vectors."""
        return self.emb.embed_queries(texts)


QUERY_KEY = "known-item-queries"
"""The embedding cache's "chunker" key of known-item query vectors (texts are keyed by their sha256)."""


def _cached_chunk_embeddings(
    emb, inputs: ScorerInputs, label: str, *, queries: bool = False
) -> tuple[np.ndarray, dict]:
    """Chunk embeddings (or, ``queries=True``, query embeddings through :class:`QuerySide`) through the work
    directory's shared embedding cache (sharded over worker processes for a ``per_text`` model,
    :func:`harness.retrieve.vector.cached_passage_embeddings`; committed in batches, so an interrupted run keeps what
    it embedded), and the cache statistics.

    Raises:
        HarnessInputError: the cache file is damaged (it is shared with other runs and costly to rebuild, so it is
            not removed: the message says how to).
    """
    from harness.retrieve.vector import EmbeddingCache, cached_passage_embeddings

    path = Path(inputs.workdir) / "embeddings" / "cache.sqlite"
    try:
        cache = EmbeddingCache.for_workdir(inputs.workdir)
        try:
            texts = list(inputs.query_texts if queries else inputs.chunk_texts)
            side, key = (QuerySide(emb), QUERY_KEY) if queries else (emb, inputs.chunker_id)
            what = "queries" if queries else "chunks"
            with progress_bar(f"{label} {what} (cache)", len(set(texts)), enabled=inputs.progress) as cb:
                passages, stats = cached_passage_embeddings(cache, side, key, texts, progress=cb)
        finally:
            cache.close()
    except DAMAGE_ERRORS as exc:
        raise HarnessInputError(
            f"{path}: damaged embedding cache ({type(exc).__name__}: {exc}); it holds derived vectors only, but "
            "other runs may be reading it and re-embedding is slow, so harness leaves it: when no harness process "
            f"uses this work directory, delete {path.name} and its -wal/-shm files in {path.parent} and run again"
        ) from None
    return passages, {"path": str(path), **stats}


KNOWN_ITEM_RESCORE_DEPTH = 10
"""Known-item rescoring re-scores the ``M * 10 + 1`` nearest chunks by Hamming (the query's own chunk among them)."""


class RescoredScorer:
    """Hamming candidates re-scored by cosine: for each query, every chunk at most as far (Hamming) as its
    ``k``-th nearest chunk (ties included, so no id decides the cut) scores ``2 + cosine`` (in [1, 3]) on the float
    vectors; every other chunk scores ``(D - hamming) / (D + 1)`` (in [0, 1)), so the candidates come first, ordered
    by cosine, and the rest keep their Hamming order (float64 scores).

    Args:
        query_bits, chunk_bits: packed bits (the same rule for both); dim: D.
        query_vectors: ``float (Q, D)`` query embeddings; chunk_vectors: a
            :class:`harness.retrieve.vector.rescore.FloatVectors` of the N chunks.
        k: candidates per query (>= 1; ``M * KNOWN_ITEM_RESCORE_DEPTH + 1``).
    """

    def __init__(self, query_bits, chunk_bits, dim: int, query_vectors: np.ndarray, chunk_vectors, k: int):
        self.query_bits, self.chunk_bits, self.dim = query_bits, chunk_bits, int(dim)
        self.query_vectors, self.chunk_vectors, self.k = np.asarray(query_vectors), chunk_vectors, int(k)
        self.n_queries, self.n_chunks = query_bits.shape[0], chunk_bits.shape[0]
        self.dtype = np.dtype(np.float64)

    def empty_queries(self) -> np.ndarray:
        """shape (Q,), bool: never empty (every text has an embedding)."""
        return np.zeros(self.n_queries, dtype=bool)

    def __call__(self, out: np.ndarray, start: int, stop: int) -> np.ndarray:
        """Scores of queries ``start:stop`` written into ``out[: stop - start]`` (see :class:`~.search.Scorer`)."""
        from harness.retrieve.binary import hamming_distances

        s = out[: stop - start]
        ham = hamming_distances(self.query_bits[start:stop], self.chunk_bits)
        np.divide(self.dim - ham, self.dim + 1, out=s)
        k = min(self.k, self.n_chunks)
        if k == 0:
            return s
        kth = np.partition(ham, k - 1, axis=1)[:, k - 1]
        for r in range(s.shape[0]):
            cand = np.flatnonzero(ham[r] <= kth[r])
            s[r, cand] = 2.0 + self.chunk_vectors.cosine(self.query_vectors[start + r], cand)
        return s


def vector_scorer(inputs: ScorerInputs, options=None) -> tuple[HammingScorer | RescoredScorer, dict]:
    """The ``vector`` system: binary embeddings scored by agreeing bits, optionally re-scored by cosine.

    ``options`` (a :class:`harness.retrieve.vector.VectorOptions`, as the system's name and the run's defaults give
    it; ``None``: the defaults): ``model`` (default ``use``), ``binarize`` (default the
    model's: sign bits ``value > 0``, or centred bits ``value > m`` with ``m`` the float32 mean of the N chunk
    embeddings, float64 sums over blocks of 4,096 chunks, applied to queries too) and ``rescore`` ``M`` (default 1;
    0: :class:`HammingScorer`, score ``D - hamming``; ``M >= 1``: :class:`RescoredScorer` over the
    ``M * 10 + 1`` nearest chunks). Chunks are embedded with the embedder's passage side, queries with its query
    side (:func:`harness.retrieve.embed.load_embedder`). With ``workdir``, chunk embeddings go through the shared
    embedding cache ``<workdir>/embeddings/cache.sqlite`` under ``chunker_id``
    (:func:`harness.retrieve.vector.cached_passage_embeddings`): at 100-word chunks these are the vectors
    ``harness embed`` stores, so nothing is embedded twice; other chunk sizes get their own key. Query
    vectors go through the same cache under ``<model id>#query`` and :data:`QUERY_KEY` (:class:`QuerySide`), so a
    re-run embeds no query twice. Without ``workdir`` everything is embedded in memory, :data:`EMBED_BLOCK` at a time.
    ``progress`` shows a bar for the chunk embeddings (cache hits count as done) and one for the queries.

    Returns:
        ``(scorer, config)``; config names the embedder, the bit rule, the rescoring and (with ``workdir``) the
        cache's path and hit counts.

    Raises:
        HarnessInputError: "vector system unavailable: ..." when the embedding stack cannot be imported or the
            model cannot be loaded; ``index_fraction`` or ``until`` set (the study searches every chunk); a damaged
            embedding cache (see :func:`_cached_chunk_embeddings`).
    """
    try:
        from harness.retrieve.binary import binarisation_rule, centring_mean, pack_centered, pack_signs
        from harness.retrieve.embed import load_embedder
        from harness.retrieve.vector import VectorOptions
        from harness.retrieve.vector.rescore import FloatVectors
    except ImportError as exc:  # pragma: no cover - depends on the optional [vectors] extra
        raise HarnessInputError(f"vector system unavailable: {exc} (install the [vectors] extra)") from None
    opts = VectorOptions() if options is None else options
    if opts.index_fraction is not None or opts.until is not None:
        raise HarnessInputError("--systems vector: index_fraction/until do not apply (the study searches every chunk)")
    models_dir = None if inputs.workdir is None else Path(inputs.workdir) / "models"
    try:
        emb = load_embedder(opts.model, models_dir=models_dir)
    except ImportError as exc:  # pragma: no cover - depends on the optional [vectors] extra
        raise HarnessInputError(f"vector system unavailable: {exc} (install the [vectors] extra)") from None
    except HarnessInputError as exc:
        raise HarnessInputError(f"vector system unavailable: {exc}") from None
    label = f"embed {emb.model_id}"
    cache_stats: dict | None = None
    if inputs.workdir is None:
        passages = _embed_in_blocks(emb.embed_passages, inputs.chunk_texts, emb.dim, inputs.progress, f"{label} chunks")
    else:
        passages, cache_stats = _cached_chunk_embeddings(emb, inputs, label)
    if inputs.workdir is None:
        queries = _embed_in_blocks(emb.embed_queries, inputs.query_texts, emb.dim, inputs.progress, f"{label} queries")
    else:  # query vectors cached by content too (model id + "#query", the query text's sha256)
        queries, query_stats = _cached_chunk_embeddings(emb, inputs, label, queries=True)
    if opts.binarize == "centered":
        center = centring_mean(passages)
        chunk_bits, query_bits = pack_centered(passages, center), pack_centered(queries, center)
    else:
        chunk_bits, query_bits = pack_signs(passages), pack_signs(queries)
    config = {
        "system": "vector",
        "options": opts.model_dump(mode="json", exclude={"index_fraction", "until", "backend"}),
        "embedder": emb.config(),
        "bits": binarisation_rule(opts.binarize) + " (m over the study's chunks); LSB first",
    }
    if opts.rescore:
        k = opts.rescore * KNOWN_ITEM_RESCORE_DEPTH + 1
        scorer: HammingScorer | RescoredScorer = RescoredScorer(
            query_bits, chunk_bits, emb.dim, queries, FloatVectors(passages), k
        )
        config["score"] = (
            f"2 + cosine(float vectors) for every chunk at most as far as the {k}-th nearest by Hamming (ties "
            "included); (dim - hamming) / (dim + 1) for the others"
        )
    else:
        scorer = HammingScorer(query_bits, chunk_bits, emb.dim)
        config["score"] = "dim - hamming"
    if cache_stats is not None:
        config["embedding_cache"] = cache_stats
        config["query_embedding_cache"] = query_stats
    return scorer, config
