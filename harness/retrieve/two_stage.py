"""Two-stage evidence search (the ``two-stage:<system>`` systems): find documents first, then the passage.

Stage 1 is any other system (``bm25``, ``vector``, ``rrf``, ``w0.75``, a ``py:`` plugin ...): its document ranking is
taken as is. Stage 2 re-scores **every chunk of the first stage's top ``top_docs`` documents** (the candidates) with
one of three scorers (option ``scorer``):

* ``bm25``: :meth:`harness.retrieve.bm25.BM25Index.scores` of the chunk index gives every chunk's Lucene BM25 score
  for the analysed query; it is masked to the candidate chunks, and only positive scores are kept (as in the
  ``bm25`` system: a chunk sharing no term with the query is not retrieved). The collection statistics (idf,
  average length) stay those of the whole chunk index.
* ``dense``: the vector system's score of every candidate chunk it holds: with ``dense=cosine`` (default) the
  cosine of the query's and the chunk's float vectors (the embedding cache's floats,
  :class:`harness.retrieve.vector.rescore.FloatVectors`: float64 ``dot / (|q| |c|)``), with ``dense=hamming``
  ``-hamming(query bits, chunk bits)`` (the query binarised as the index binarised its chunks). Candidate chunks
  outside a partial vector index are absent from this list.
* ``fusion`` (default): the two lists fused by ``fusion`` (default RRF, ``k`` = 60; Cormack, Clarke & Büttcher
  2009; any fusion name without inputs of :class:`harness.retrieve.fusion.FusionSpec`: ``rrf:k=30``, ``w0.75`` =
  weighted min-max with 0.75 on BM25), over the whole candidate lists (no cut before fusion).

Each list is in canonical order (score descending, then chunk id ascending). Then:

4. **Optional reranking**: the top ``rerank_top`` chunks are re-ordered by a reranker's score of
   ``(query, chunk text)`` (:mod:`harness.retrieve.rerank`: a cross-encoder or a ``py:`` object; Nogueira & Cho
   2019, "Passage Re-ranking with BERT"), ties by chunk id ascending; the chunks below keep their order.
5. **Optional backfill** (off by default): chunks of the first stage's own chunk ranking that lie outside the
   candidate documents are appended, in that ranking's canonical order.

The result is cut at ``chunk_depth``.

Outputs, per query (:class:`harness.retrieve.base.QueryResult`):

* ``docs``: the first stage's document ranking, canonical and cut at ``doc_depth``, **unchanged**. Every
  document metric (``mrr``, ``recall@k``, ``all_hop@k``, ``ndcg@10``) therefore equals the first stage's by
  construction: two-stage search cannot lose ``all_hop@10``. It can only move evidence metrics.
* ``chunks``: ``[(chunk_id, score)]`` with **positional scores** ``n, n - 1, ..., 1`` (``n`` = length of the
  list): the scored, reranked and backfilled parts are not on one scale, and distinct scores keep the order intact
  under every tie rule (trec_eval's included). Candidate documents are the first ``min(top_docs, doc_depth)`` of the
  document ranking.
* ``flags``: ``n_candidate_docs``, ``n_candidate_chunks``, ``n_candidate_chunks_without_vector``,
  ``n_reranked``, ``n_backfilled``; ``empty_query`` when neither BM25 terms nor a non-blank query exist;
  ``no_first_stage_docs`` when the first stage returned no document ranking.

What the system needs (duck-typed, so tests can pass small fakes):

* ``bm25``: an object with ``chunk_index`` (:class:`~harness.retrieve.bm25.BM25Index`: ``ids``,
  ``query_terms(text)``, ``scores(terms)``), e.g. :class:`~harness.retrieve.bm25.BM25System`;
* ``vector`` (``None`` only with ``scorer=bm25``): for ``dense=cosine`` an object with ``chunk_ids``,
  ``float_vectors()`` (an object with ``cosine(query, positions)``) and ``embedder.embed_queries(texts)``; for
  ``dense=hamming`` ``packed_bits() -> (chunk_ids, uint8 (n, D/8))``, ``embedder.embed_queries`` and optionally
  ``pack_queries``; e.g. :class:`~harness.retrieve.vector.VectorIndex`;
* ``corpus``: a :class:`~harness.corpus.store.Corpus` (chunk -> document map; chunk texts for the reranker).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from harness.errors import HarnessInputError
from harness.ranking import Ranking, canonical_ranking
from harness.retrieve.base import QueryResult, Reranker
from harness.retrieve.binary import hamming_distances, pack_signs
from harness.retrieve.fusion import DEFAULT_INPUTS, FusionSpec
from harness.retrieve.plugin import check_json_value, check_scores, plugin_call
from harness.retrieve.rerank import RERANKER_PREFIXES

__all__ = [
    "DEFAULT_RERANK_TOP",
    "DEFAULT_SCORER",
    "DEFAULT_TOP_DOCS",
    "SCORERS",
    "TwoStage",
    "TwoStageOptions",
]

DEFAULT_TOP_DOCS = 3
"""Candidate documents taken from the first stage (chosen on the dev split: docs/measurements.md)."""

SCORERS = ("fusion", "bm25", "dense")
"""How the candidate chunks are scored."""

DEFAULT_SCORER = "fusion"
"""The default scorer (chosen on the dev split: docs/measurements.md)."""

DEFAULT_RERANK_TOP = 50
"""Fused chunks re-scored by the cross-encoder, when one is given."""

_IN_CHUNK = 500


class TwoStageOptions(BaseModel):
    """Options of a ``two-stage:<first stage>`` system (the first stage is the name after the options).

    Attributes:
        top_docs: candidate documents taken from the first stage (>= 1; default :data:`DEFAULT_TOP_DOCS`).
        scorer: ``fusion`` (default), ``bm25`` or ``dense`` (see the module docstring).
        dense: the vector list's score: ``cosine`` of the float vectors (default) or ``hamming`` (``-hamming`` of the
            bits).
        fusion: the chunk fusion of the candidate lists ``[bm25, vector]`` (``scorer=fusion``): a fusion name without
            inputs (``rrf``, ``rrf:k=30``, ``w0.75``; default ``rrf``), stored canonical.
        reranker: ``None`` (default) or a reranker spec (:func:`harness.retrieve.rerank.load_reranker`:
            ``py:MODULE:ATTR`` or ``cross-encoder:<model>``).
        rerank_top: fused chunks re-scored by the reranker (>= 1; default 50).
        backfill: append the first stage's chunks from outside the candidates (default ``False``).
        vector: the run's vector system the second stage reads (default ``"vector"``; ``"none"``: a BM25-only
            second stage, ``scorer=bm25`` unless another scorer is given, which is refused); with ``scorer=bm25`` no
            vector system is read.

    Written in a name as ``two-stage[reranker=py:rerank.py:make;rerank_top=20]:bm25`` or
    ``two-stage:top_docs=10:rrf`` (a value holding ``:`` needs the brackets).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    top_docs: int = Field(DEFAULT_TOP_DOCS, ge=1)
    scorer: Literal["fusion", "bm25", "dense"] = DEFAULT_SCORER
    dense: Literal["cosine", "hamming"] = "cosine"
    fusion: str = "rrf"
    reranker: str | None = None
    rerank_top: int = Field(DEFAULT_RERANK_TOP, ge=1)
    backfill: bool = False
    vector: str | None = "vector"

    @field_validator("fusion")
    @classmethod
    def _fusion(cls, value: str) -> str:
        spec = FusionSpec.parse(value, where="two-stage fusion")
        if spec.inputs != DEFAULT_INPUTS:
            raise ValueError("the chunk fusion fuses the candidate lists [bm25, vector]: give no inputs")
        return spec.name

    @field_validator("reranker")
    @classmethod
    def _reranker(cls, value: str | None) -> str | None:
        if value is None or value.strip().lower() in ("", "none"):
            return None
        if not value.strip().startswith(RERANKER_PREFIXES):
            raise ValueError("expected py:MODULE:ATTR or cross-encoder:<model name or folder>")
        return value.strip()

    @field_validator("vector")
    @classmethod
    def _vector(cls, value: str | None) -> str | None:
        return None if value is None or value.strip().lower() in ("", "none") else value.strip()

    @model_validator(mode="after")
    def _needs_vector(self) -> TwoStageOptions:
        if self.vector is None and self.scorer != "bm25":
            if "scorer" in self.model_fields_set:
                raise ValueError(f"scorer={self.scorer} needs a vector system (vector=none means scorer=bm25)")
            object.__setattr__(self, "scorer", "bm25")  # vector=none: a BM25-only second stage
        return self

    @property
    def reads_vector(self) -> str | None:
        """The vector system the second stage reads (``None`` with ``scorer=bm25``)."""
        return None if self.scorer == "bm25" else self.vector


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise HarnessInputError(f"two-stage: {name} must be an int >= 1, got {value!r}")
    return int(value)


class TwoStage:
    """Two-stage evidence search over the top documents of a first-stage system (see the module docstring).

    Args:
        bm25: the BM25 system (needs ``chunk_index``).
        vector: the vector system (module docstring), or ``None`` for a BM25-only second stage (``scorer="bm25"``).
        corpus: the open corpus the indexes were built from.
        top_docs: candidate documents taken from the first stage's document ranking (>= 1).
        scorer: ``"fusion"`` (default), ``"bm25"`` or ``"dense"``.
        dense: ``"cosine"`` (default; float vectors) or ``"hamming"`` (bits).
        fusion: the chunk fusion (``scorer="fusion"``), a fusion system name of
            :class:`~harness.retrieve.fusion.FusionSpec`: ``"rrf"`` (default, k = 60), ``"rrf:k=<k>"``, or
            ``"w<weight>"`` (weighted min-max over the candidate lists, ``w`` on BM25; ``"w1"`` ranks the
            BM25-matching candidates by BM25 alone, then the rest by chunk id).
        reranker: ``None`` or a :class:`Reranker` (e.g. :func:`harness.retrieve.rerank.load_cross_encoder`).
        rerank_top: fused chunks re-scored by the reranker (>= 1; default 50).
        backfill: append the first stage's chunks from outside the candidates (default ``False``).
        reranker_spec: the spec the reranker was loaded from (``py:rerank.py:make``, ``cross-encoder:<model>``),
            named by error messages; ``None``: they name the reranker's class.

    Raises:
        HarnessInputError: a parameter out of range; ``scorer`` other than ``bm25`` without a vector system; a vector
            system whose chunk ids the corpus does not hold.
    """

    name = "two-stage"

    def __init__(
        self,
        bm25,
        vector,
        corpus,
        *,
        top_docs: int = DEFAULT_TOP_DOCS,
        scorer: str = DEFAULT_SCORER,
        dense: str = "cosine",
        fusion: str = "rrf",
        reranker: Reranker | None = None,
        rerank_top: int = DEFAULT_RERANK_TOP,
        backfill: bool = False,
        reranker_spec: str | None = None,
    ):
        self.bm25 = bm25
        self.vector = vector
        self.corpus = corpus
        self.top_docs = _positive_int("top_docs", top_docs)
        if scorer not in SCORERS or dense not in ("cosine", "hamming"):
            raise HarnessInputError(
                f"two-stage: scorer {scorer!r} / dense {dense!r}: expected {SCORERS} / cosine, hamming"
            )
        if vector is None and scorer != "bm25":
            raise HarnessInputError(f"two-stage: scorer={scorer} needs a vector system")
        self.scorer, self.dense = scorer, dense
        try:
            self.fusion = fusion if isinstance(fusion, FusionSpec) else FusionSpec.parse(fusion)
        except HarnessInputError as exc:
            raise HarnessInputError(f"two-stage: chunk fusion: {exc}") from None
        if self.fusion.inputs != DEFAULT_INPUTS:
            raise HarnessInputError(f"two-stage: chunk fusion {self.fusion.name!r}: takes no inputs")
        self.reranker = reranker
        # what errors name: the user's spec, not a class inside their plugin or the library (issue 44 item 17)
        self._reranker_where = f"reranker {reranker_spec or type(reranker).__qualname__}"
        self.rerank_top = _positive_int("rerank_top", rerank_top)
        self.backfill = bool(backfill)

        rows = corpus.conn.execute("SELECT chunk_id, doc_id FROM chunks ORDER BY rowid").fetchall()
        self._chunk_doc: dict[str, str] = {c: d for c, d in rows}
        self._n_chunks: dict[str, int] = {}
        for d in self._chunk_doc.values():
            self._n_chunks[d] = self._n_chunks.get(d, 0) + 1
        bm_ids: list[str] = list(bm25.chunk_index.ids)
        self._bm25_ids = bm_ids
        self._bm25_pos = self._doc_positions(bm_ids)
        self._vec_ids: list[str] | None = None
        self._vec_bits: np.ndarray | None = None
        self._vec_floats = None
        self._vec_pos: dict[str, np.ndarray] = {}
        self._empty = np.empty(0, dtype=np.int64)

    # ---- set-up -----------------------------------------------------------------------------------------------------

    def _doc_positions(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """``{doc_id: positions in ids of that document's chunks}`` (ids the corpus does not know are refused)."""
        lists: dict[str, list[int]] = {}
        for i, cid in enumerate(ids):
            d = self._chunk_doc.get(cid)
            if d is None:
                raise HarnessInputError(f"{self.corpus.path}: chunk {cid!r} of an index is not in the corpus")
            lists.setdefault(d, []).append(i)
        return {d: np.asarray(v, dtype=np.int64) for d, v in lists.items()}

    def _load_vectors(self) -> None:
        if self.vector is None or self._vec_ids is not None:
            return
        if self.dense == "cosine":
            ids = list(self.vector.chunk_ids)
            self._vec_floats = self.vector.float_vectors()
        else:
            ids, bits = self.vector.packed_bits()
            self._vec_bits = np.ascontiguousarray(np.asarray(bits, dtype=np.uint8))
            if self._vec_bits.ndim != 2 or self._vec_bits.shape[0] != len(ids):
                raise HarnessInputError(
                    f"vector system: packed_bits gave {len(ids)} ids and bits {self._vec_bits.shape}"
                )
        self._vec_ids = list(ids)
        self._vec_pos = self._doc_positions(self._vec_ids)

    def _query_side(self, queries: Sequence[str]) -> list[np.ndarray | None]:
        """Per query its float vector (``dense=cosine``) or packed bits (``dense=hamming``); ``None`` for blank
        queries, without a vector system or with ``scorer=bm25``."""
        out: list[np.ndarray | None] = [None] * len(queries)
        if self.vector is None or self.scorer == "bm25":
            return out
        live = [i for i, q in enumerate(queries) if isinstance(q, str) and q.strip()]
        if live:
            floats = np.asarray(self.vector.embedder.embed_queries([queries[i] for i in live]))
            if floats.ndim != 2 or floats.shape[0] != len(live):
                raise HarnessInputError(f"vector system: query embeddings of shape {floats.shape} for {len(live)}")
            if self.dense == "hamming":
                pack = getattr(self.vector, "pack_queries", pack_signs)  # the index's own binarisation
                floats = pack(floats)
                if self._vec_bits is not None and floats.shape[1] != self._vec_bits.shape[1]:
                    raise HarnessInputError(
                        f"vector system: query bits {floats.shape[1]} bytes, index bits {self._vec_bits.shape[1]} bytes"
                    )
            for j, i in enumerate(live):
                out[i] = floats[j]
        return out

    # ---- search -----------------------------------------------------------------------------------------------------

    def search(
        self,
        queries: Sequence[str],
        first_stage_results: Sequence[QueryResult],
        *,
        doc_depth: int,
        chunk_depth: int,
    ) -> list[QueryResult]:
        """Two-stage results for each query.

        Args:
            queries: query texts.
            first_stage_results: the first-stage system's results, one per query, same order.
            doc_depth: document depth (>= 1): the first stage's documents, canonical, cut here.
            chunk_depth: chunk depth (>= 1): the two-stage chunk ranking is cut here.

        Returns:
            One :class:`QueryResult` per query (shapes and flags in the module docstring).

        Raises:
            HarnessInputError: ``len(first_stage_results) != len(queries)``; a depth < 1; a reranker score that is
                not finite.
        """
        queries = list(queries)
        first = list(first_stage_results)
        if len(first) != len(queries):
            raise HarnessInputError(f"two-stage: {len(first)} first-stage results for {len(queries)} queries")
        doc_depth = _positive_int("doc_depth", doc_depth)
        chunk_depth = _positive_int("chunk_depth", chunk_depth)
        self._load_vectors()
        qside = self._query_side(queries)
        return [self._one(q, fs, qv, doc_depth, chunk_depth) for q, fs, qv in zip(queries, first, qside, strict=True)]

    def candidate_lists(self, query: str, candidate_docs: Sequence[str]) -> tuple[Ranking, Ranking, int, int]:
        """The BM25 and vector chunk lists inside ``candidate_docs`` (before scoring).

        Args:
            query: the query text.
            candidate_docs: document ids (unknown ids have no chunks).

        Returns:
            ``(bm25_list, vector_list, n_candidate_chunks, n_without_vector)``: lists of ``(chunk_id, score)``
            (BM25 positive scores; vector cosine or ``-hamming``; empty with ``scorer=bm25``), in corpus order, not
            sorted.
        """
        terms = self.bm25.chunk_index.query_terms(query) if isinstance(query, str) else []
        self._load_vectors()
        return self._lists(terms, self._query_side([query])[0], candidate_docs)

    def _lists(self, terms: list[str], qside: np.ndarray | None, candidate_docs: Sequence[str]):
        docs = list(dict.fromkeys(str(d) for d in candidate_docs))
        n_cand = sum(self._n_chunks.get(d, 0) for d in docs)
        bm_list: Ranking = []
        pos = [self._bm25_pos.get(d, self._empty) for d in docs]
        bm_pos = np.concatenate(pos) if pos else self._empty
        if terms and bm_pos.size:
            sc = np.asarray(self.bm25.chunk_index.scores(terms))[bm_pos]
            keep = sc > 0
            bm_list = [(self._bm25_ids[p], float(s)) for p, s in zip(bm_pos[keep], sc[keep], strict=True)]
        vec_list: Ranking = []
        if self.vector is None or self.scorer == "bm25":
            return bm_list, vec_list, n_cand, n_cand
        self._load_vectors()
        vpos = [self._vec_pos.get(d, self._empty) for d in docs]
        v_pos = np.concatenate(vpos) if vpos else self._empty
        if qside is not None and v_pos.size:
            if self.dense == "cosine":
                sc = self._vec_floats.cosine(qside, v_pos)
            else:
                sc = -hamming_distances(qside, self._vec_bits[v_pos]).astype(np.float64)
            vec_list = [(self._vec_ids[p], float(x)) for p, x in zip(v_pos, sc, strict=True)]
        return bm_list, vec_list, n_cand, n_cand - int(v_pos.size)

    def _scored(self, bm_list: Ranking, vec_list: Ranking) -> list[str]:
        """The candidate chunks in the scorer's order (module docstring)."""
        if self.scorer == "bm25":
            return [c for c, _ in canonical_ranking(bm_list)]
        if self.scorer == "dense":
            return [c for c, _ in canonical_ranking(vec_list)]
        return [c for c, _ in self.fusion.fuse([bm_list, vec_list])]

    def _one(self, query: str, fs: QueryResult, qside, doc_depth: int, chunk_depth: int) -> QueryResult:
        flags: dict = {}
        if fs.docs is None:
            docs = None
            flags["no_first_stage_docs"] = True
            cand: list[str] = []
        else:
            docs = canonical_ranking(fs.docs, doc_depth)
            cand = [d for d, _ in docs[: self.top_docs]]
        terms = self.bm25.chunk_index.query_terms(query) if isinstance(query, str) else []
        if not terms and qside is None:
            flags["empty_query"] = True
        bm_list, vec_list, n_cand, n_novec = self._lists(terms, qside, cand)
        order = self._scored(bm_list, vec_list)
        n_rr = 0
        if self.reranker is not None and order:
            head, tail = order[: self.rerank_top], order[self.rerank_top :]
            texts = self._chunk_texts(head)
            where = f"{self.name}: {self._reranker_where}"
            got = plugin_call(where, "predict", self.reranker.predict, [(query, texts[c]) for c in head])
            raw = check_scores(got, len(head), where)
            order = [c for c, _ in canonical_ranking(zip(head, raw, strict=True))] + tail
            n_rr = len(head)
        n_bf = 0
        if self.backfill and len(order) < chunk_depth and fs.chunks:
            cand_set = set(cand)
            have = set(order)
            for c, _ in canonical_ranking(fs.chunks):
                if len(order) >= chunk_depth:
                    break
                if c not in have and self._chunk_doc.get(c) not in cand_set:
                    order.append(c)
                    have.add(c)
                    n_bf += 1
        order = order[:chunk_depth]
        n = len(order)
        chunks = [(c, float(n - i)) for i, c in enumerate(order)]
        flags.update(
            n_candidate_docs=len(cand),
            n_candidate_chunks=n_cand,
            n_candidate_chunks_without_vector=n_novec,
            n_reranked=n_rr,
            n_backfilled=n_bf,
        )
        return QueryResult(docs=docs, chunks=chunks, flags=flags)

    def _chunk_texts(self, chunk_ids: Sequence[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        ids = list(chunk_ids)
        for i in range(0, len(ids), _IN_CHUNK):
            part = ids[i : i + _IN_CHUNK]
            marks = ",".join("?" * len(part))
            out.update(self.corpus.conn.execute(f"SELECT chunk_id, text FROM chunks WHERE chunk_id IN ({marks})", part))
        missing = [c for c in ids if c not in out]
        if missing:
            raise HarnessInputError(f"{self.corpus.path}: chunk {missing[0]!r} has no text")
        return out

    # ---- provenance -------------------------------------------------------------------------------------------------

    def config(self) -> dict:
        """Everything that identifies the second stage (for the run manifest)."""
        rr = None
        if self.reranker is not None:
            get = getattr(self.reranker, "config", None)
            where = f"{self.name}: {self._reranker_where}"
            rr = plugin_call(where, "config()", get) if callable(get) else {"class": type(self.reranker).__qualname__}
            if not isinstance(rr, dict):
                raise HarnessInputError(f"{where}: config() returned {type(rr).__name__}, expected a dict")
            check_json_value(rr, f"{where}: config()")
            rr = dict(rr)
            rr["rerank_top"] = self.rerank_top
        return {
            "system": self.name,
            "top_docs": self.top_docs,
            "documents": "first-stage document ranking, canonical, cut at doc_depth (unchanged: document metrics "
            "equal the first stage's)",
            "candidates": f"every chunk of the first stage's top {self.top_docs} documents",
            "scorer": self.scorer,
            "chunk_lists": {
                "bm25": "BM25 chunk index scores (whole-index statistics), masked to candidates, positive only",
                "vector": None
                if self.vector is None or self.scorer == "bm25"
                else (
                    "cosine(query float vector, chunk float vector), float64, candidates held by the vector index"
                    if self.dense == "cosine"
                    else "-hamming(query bits, chunk bits), candidates held by the vector index, exact numpy scan"
                ),
            },
            "dense": None if self.scorer == "bm25" else self.dense,
            "vector_binarize": None
            if self.vector is None or self.dense == "cosine" or self.scorer == "bm25"
            else getattr(self.vector, "binarize", "sign"),
            "fusion": None
            if self.scorer != "fusion"
            else {**self.fusion.config(), "lists": ["bm25", "vector"], "input_depth": None},
            "formula": (
                self.fusion.formula.replace("cut at depth", "not cut (whole candidate lists)")
                + "; d = a candidate chunk"
                if self.scorer == "fusion"
                else f"the {self.scorer} list of the candidates in canonical order"
            ),
            "reranker": rr,
            "backfill": self.backfill,
            "chunk_scores": "positional: n, n-1, ..., 1 in the final order",
        }
