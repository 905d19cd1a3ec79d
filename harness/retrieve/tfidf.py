"""The ``tfidf`` system: TF-IDF cosine similarity over a chunk index and a whole-document index of one corpus.

Weights are scikit-learn's ``TfidfTransformer`` (the second half of ``TfidfVectorizer``): raw term frequency times
the smooth idf ``ln((1 + n) / (1 + df)) + 1``, rows l2-normalised, float32; a query is weighted the same way with
the index's idf, so its score against an item is the cosine of the two vectors (Salton & Buckley 1988; the
reference implementation is scikit-learn, which the tests compare against). Terms come from the same analyzer as
``bm25`` (``es-snowball-fold-v1``), counted once by :mod:`harness.retrieve.counts`; documents are their title, each
new heading and their chunks' text, as in the ``bm25`` document index. Query terms absent from the index are
dropped; a query with none is flagged ``empty_query`` and ranks nothing.

Only positive scores are retrieved; rankings follow the project's tie rule (score descending, then id ascending;
:func:`harness.ranking.top_k_by_score`), with ``doc_tie_at_boundary`` / ``chunk_tie_at_boundary`` when an item left
out scores the same as the last one kept.

The indexes are built in memory when the system is opened (the corpus is analysed once for both levels), not
persisted: the system is a baseline (the known-item study's comparison system, :mod:`harness.studies.known_item`),
and its build is the analysis pass ``bm25`` makes before persisting its own indexes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from pydantic import BaseModel, ConfigDict, field_validator

from harness.corpus.store import Corpus
from harness.progress import progress_bar, stage
from harness.ranking import Ranking, cut_in_tie, id_rank, top_k_by_score
from harness.retrieve.analyzer import Analyzer, SpanishAnalyzer, option_analyzer, system_analyzer
from harness.retrieve.base import QueryResult, SystemContext
from harness.retrieve.bm25.system import ANALYSIS_BATCH, combine_levels
from harness.retrieve.counts import chunk_term_counts, counted_batches, document_term_counts, query_term_matrix

__all__ = ["SEARCH_BLOCK", "TFIDF_PARAMS", "TfidfIndex", "TfidfOptions", "TfidfSystem", "open_tfidf_system"]

TFIDF_PARAMS = {"norm": "l2", "use_idf": True, "smooth_idf": True, "sublinear_tf": False}
"""The ``TfidfTransformer`` parameters (scikit-learn's defaults; the known-item study's ``tfidf`` uses the same)."""

SEARCH_BLOCK = 64
"""Queries scored per sparse product (a dense block of ``SEARCH_BLOCK x N`` float32 scores)."""


class TfidfOptions(BaseModel):
    """Options of a ``tfidf`` system: the weights are :data:`TFIDF_PARAMS`; ``analyzer`` (``tfidf:analyzer=en``: an
    analyzer id, ``neutral`` or an ISO 639-1 code, stored as the id; default ``None``: the run's ``--analyzer``, else
    the corpus's declared language, else ``es-snowball-fold-v1``, :func:`harness.retrieve.analyzer.choose_analyzer`).
    Options equal to their defaults are not recorded; unknown keys are refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    record_defaults: ClassVar[bool] = False

    analyzer: str | None = None

    @field_validator("analyzer", mode="before")
    @classmethod
    def _analyzer_id(cls, value):
        return option_analyzer(value)


class TfidfIndex:
    """One level's TF-IDF index: ``(N, V)`` l2-normalised float32 weights and the transformer that made them.

    Args:
        ids: the N item ids (chunk or document ids).
        item, term, count: int arrays of the (item, term, count) rows (:mod:`harness.retrieve.counts`).
        vocab: ``{term: id}`` (ids ``< V``).

    Raises:
        ValueError: rows out of range.
    """

    def __init__(self, ids: Sequence[str], item: np.ndarray, term: np.ndarray, count: np.ndarray, vocab: dict):
        from sklearn.feature_extraction.text import TfidfTransformer

        self.ids = list(ids)
        self.vocab = vocab
        n, v = len(self.ids), max(len(vocab), 1)
        counts = sp.csr_matrix(
            (np.asarray(count, dtype=np.float32), (np.asarray(item, dtype=np.int64), np.asarray(term, dtype=np.int64))),
            shape=(n, v),
        )
        counts.sum_duplicates()
        self.transformer = TfidfTransformer(**TFIDF_PARAMS)
        self.weights_t = self.transformer.fit_transform(counts).astype(np.float32).T.tocsr()  # (V, N)
        self._ids_arr = np.asarray(self.ids, dtype=object)
        self._id_rank = id_rank(self.ids)

    def query_matrix(self, analysed: Sequence[Sequence[str]]) -> tuple[sp.csr_matrix, np.ndarray]:
        """``(Q, V)`` query weights (counts with multiplicity, weighted and l2-normalised as the items) and a
        ``(Q,)`` bool mask of queries without any index term."""
        q = query_term_matrix(analysed, self.vocab, self.weights_t.shape[0])
        empty = np.diff(q.indptr) == 0
        return self.transformer.transform(q).astype(np.float32).tocsr(), empty

    def search_many(self, analysed: Sequence[Sequence[str]], depth: int) -> list[tuple[Ranking, dict]]:
        """One ``(ranking, flags)`` per analysed query: ``[(id, float32 cosine as float)]`` under the tie rule,
        positive scores only, at most ``depth`` items; flags ``empty_query`` or ``tie_at_boundary``.

        Raises:
            ValueError: ``depth < 1``.
        """
        if depth < 1:
            raise ValueError(f"depth must be >= 1, got {depth}")
        q, empty = self.query_matrix(analysed)
        out: list[tuple[Ranking, dict]] = []
        for a in range(0, q.shape[0], SEARCH_BLOCK):
            block = (q[a : a + SEARCH_BLOCK] @ self.weights_t).toarray()
            for r, row in enumerate(block):
                flags: dict = {}
                top = top_k_by_score(row, self._id_rank, depth)
                if empty[a + r]:
                    flags["empty_query"] = True
                elif cut_in_tie(row, top, depth):
                    flags["tie_at_boundary"] = True
                out.append((list(zip(self._ids_arr[top].tolist(), row[top].tolist(), strict=True)), flags))
        return out


class TfidfSystem:
    """The ``tfidf`` system: documents ranked with the document index, chunks with the chunk index.

    Args:
        corpus: an open :class:`~harness.corpus.store.Corpus`.
        analyzer: default ``es-snowball-fold-v1``.
        progress: a bar over the chunks analysed and a spinner per index build (they change nothing built).

    Attributes:
        build_seconds: ``{"chunk": s, "document": s}`` (the analysis pass counts towards both).
    """

    name = "tfidf"

    def __init__(self, corpus: Corpus, *, analyzer: Analyzer | None = None, progress: bool = False):
        self.analyzer = analyzer or SpanishAnalyzer()
        t0 = time.perf_counter()
        chunk_ids, chunk_docs = corpus.chunk_keys()
        with progress_bar("TF-IDF: tokenise chunks", len(chunk_ids), enabled=progress) as advance:
            batches = counted_batches(corpus.iter_chunk_texts(ANALYSIS_BATCH), advance)
            item, term, count, length, vocab = chunk_term_counts(self.analyzer, batches)
        t_tok = time.perf_counter() - t0
        t1 = time.perf_counter()
        with stage("TF-IDF: build the chunk index", enabled=progress):
            self.chunk_index = TfidfIndex(chunk_ids, item, term, count, vocab)
        t_chunk = time.perf_counter() - t1
        t2 = time.perf_counter()
        with stage("TF-IDF: build the document index", enabled=progress):
            doc_ids, d_item, d_term, d_count, _d_len, d_vocab = document_term_counts(
                corpus, self.analyzer, chunk_docs, item, term, count, length, vocab
            )
            self.doc_index = TfidfIndex(doc_ids, d_item, d_term, d_count, d_vocab)
        self.build_seconds = {
            "chunk": round(t_tok + t_chunk, 3),
            "document": round(t_tok + time.perf_counter() - t2, 3),
        }

    def config(self) -> dict:
        """Library, weighting, analyzer and what each level indexes (for the run manifest)."""
        import sklearn

        return {
            "system": "tfidf",
            "library": f"scikit-learn {sklearn.__version__} (TfidfTransformer)",
            "params": TFIDF_PARAMS,
            "similarity": "cosine",
            "analyzer": self.analyzer.config(),
            "documents": "document index (title + headings + text)",
            "chunks": "chunk index (chunk text)",
            "positive_scores_only": True,
        }

    def search(self, queries: Sequence[str], *, doc_depth: int, chunk_depth: int) -> list[QueryResult]:
        """Rank documents and chunks for each query (one analysis per query for both levels). Flags:
        ``empty_query`` (no index term at a level), ``doc_tie_at_boundary``, ``chunk_tie_at_boundary``."""
        terms = [self.analyzer.tokenize(q) for q in queries]
        docs = self.doc_index.search_many(terms, doc_depth)
        return combine_levels(docs, self.chunk_index.search_many(terms, chunk_depth))


def open_tfidf_system(context: SystemContext, options: TfidfOptions) -> TfidfSystem:
    """The ``tfidf`` system of a run (registry factory): both indexes built in memory; says how long through
    ``context.log``."""
    t0 = time.perf_counter()
    analyzer, choice = system_analyzer(context, (options or TfidfOptions()).analyzer)
    system = TfidfSystem(context.corpus, analyzer=analyzer, progress=context.progress)
    system.analyzer_choice = choice
    context.log(f"tfidf: indexes built in memory in {time.perf_counter() - t0:.1f} s (analysis + chunk and document)")
    return system
