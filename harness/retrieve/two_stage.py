"""Two-stage evidence search (the ``two-stage:<system>`` systems): find documents first, then the passage.

Stage 1 is any other system (``bm25``, ``vector``, ``rrf``, ``w0.5`` ...): its document ranking is taken as is.
Stage 2 ranks the chunks *inside* the first stage's top ``top_docs`` documents (the candidates):

1. **BM25 within candidates**: :meth:`harness.retrieve.bm25.BM25Index.scores` of the chunk index gives every
   chunk's Lucene BM25 score for the analysed query; it is masked to the candidate chunks, and only positive scores
   are kept (as in the ``bm25`` system: a chunk sharing no term with the query is not retrieved). The collection
   statistics (idf, average length) stay those of the whole chunk index.
2. **Vector within candidates**: ``-hamming(query bits, chunk bits)`` for every candidate chunk the vector index
   holds (packed LSB first, :mod:`harness.retrieve.binary`), by an exact numpy popcount scan over the candidates'
   rows. The query is binarised the way the index binarised its chunks (sign bits, or centred on the index's mean:
   the index's ``pack_queries``). Candidate chunks outside a partial vector index are absent from this list.
3. **Fusion**: by default RRF of the two lists (:func:`harness.retrieve.fusion.rrf`, ``k`` = 60; Cormack, Clarke
   & Büttcher 2009); any fusion name of :class:`harness.retrieve.fusion.FusionSpec` may be given instead
   (``rrf:k=30``, ``w0.75`` = weighted min-max over the candidate lists, ``w1`` = BM25 alone). Over the whole
   candidate lists (no cut before fusion), in canonical order (score descending, then chunk id ascending).
4. **Optional cross-encoder reranking**: the top ``rerank_top`` fused chunks are re-ordered by a cross-encoder's
   score of ``(query, chunk text)`` (sentence-transformers ``CrossEncoder``; Nogueira & Cho 2019, "Passage
   Re-ranking with BERT"), ties by chunk id ascending; the chunks below keep their fused order.
5. **Optional backfill** (off by default): chunks of the first stage's own chunk ranking that lie outside the
   candidate documents are appended, in that ranking's canonical order.

The result is cut at ``chunk_depth``.

Outputs, per query (:class:`harness.retrieve.base.QueryResult`):

* ``docs``: the first stage's document ranking, canonical and cut at ``doc_depth``, **unchanged**. Every
  document metric (``mrr``, ``recall@k``, ``all_hop@k``, ``ndcg@10``) therefore equals the first stage's by
  construction: two-stage search cannot lose ``all_hop@10``. It can only move evidence metrics.
* ``chunks``: ``[(chunk_id, score)]`` with **positional scores** ``n, n - 1, ..., 1`` (``n`` = length of the
  list): the fused, reranked and backfilled parts are not on one scale, and distinct scores keep the order intact
  under every tie rule (trec_eval's included). The order is the canonical order of step 3, as modified by steps 4-5.
  Candidate documents are the first ``min(top_docs, doc_depth)`` of that ranking.
* ``flags``: ``n_candidate_docs``, ``n_candidate_chunks``, ``n_candidate_chunks_without_vector``,
  ``n_reranked``, ``n_backfilled``; ``empty_query`` when neither BM25 terms nor a non-blank query exist;
  ``no_first_stage_docs`` when the first stage returned no document ranking.

What the system needs (duck-typed, so tests can pass small fakes):

* ``bm25``: an object with ``chunk_index`` (:class:`~harness.retrieve.bm25.BM25Index`: ``ids``,
  ``query_terms(text)``, ``scores(terms)``), e.g. :class:`~harness.retrieve.bm25.BM25System`;
* ``vector``: ``None`` (BM25 only) or an object with ``packed_bits() -> (chunk_ids, uint8 (n, D/8))`` and
  ``embedder.embed_queries(texts) -> float (m, D)``, e.g. :class:`~harness.retrieve.vector.VectorIndex`; its
  ``pack_queries(float (m, D)) -> uint8 (m, D/8)`` binarises the queries when it has one (else sign bits,
  :func:`~harness.retrieve.binary.pack_signs`);
* ``corpus``: a :class:`~harness.corpus.store.Corpus` (chunk -> document map; chunk texts for the reranker).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from harness.errors import HarnessInputError
from harness.ranking import Ranking, canonical_ranking
from harness.retrieve.base import QueryResult, Reranker
from harness.retrieve.binary import hamming_distances, pack_signs
from harness.retrieve.fusion import DEFAULT_INPUTS, FusionSpec
from harness.retrieve.plugin import load_plugin

__all__ = [
    "DEFAULT_RERANK_TOP",
    "DEFAULT_TOP_DOCS",
    "CrossEncoderReranker",
    "Reranker",
    "TwoStage",
    "TwoStageOptions",
    "load_cross_encoder",
    "load_reranker",
]

DEFAULT_TOP_DOCS = 20
"""Candidate documents taken from the first stage."""

DEFAULT_RERANK_TOP = 50
"""Fused chunks re-scored by the cross-encoder, when one is given."""

_IN_CHUNK = 500


class CrossEncoderReranker:
    """A sentence-transformers ``CrossEncoder`` behind the :class:`Reranker` seam, with its provenance.

    Args:
        model: a loaded ``sentence_transformers.CrossEncoder``.
        model_id: the name or path it was loaded from (recorded in the run manifest).
        batch_size: pairs per forward pass.

    Attributes:
        fingerprint: hex sha256 of the loaded weights, configs and tokenizer
            (:func:`harness.retrieve.embed.model_fingerprint`), or ``None`` when it cannot be computed.
    """

    def __init__(self, model, model_id: str, *, batch_size: int = 32):
        self.model = model
        self.model_id = str(model_id)
        self.batch_size = int(batch_size)
        self.fingerprint: str | None
        try:
            from harness.retrieve.embed import model_fingerprint

            self.fingerprint = model_fingerprint(model)
        except Exception:  # noqa: BLE001 - provenance is best effort; the model id is still recorded
            self.fingerprint = None

    def predict(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Cross-encoder scores ``float (len(pairs),)`` (the model's own activation, e.g. sigmoid for 1 label).

        Raises:
            HarnessInputError: a NaN or infinite score.
        """
        if not pairs:
            return np.zeros(0, dtype=np.float64)
        out = self.model.predict(
            [(q, p) for q, p in pairs], batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True
        )
        scores = np.asarray(out, dtype=np.float64).reshape(len(pairs), -1)
        if scores.shape[1] != 1:
            raise HarnessInputError(f"reranker {self.model_id}: {scores.shape[1]} labels per pair; expected 1")
        scores = scores[:, 0]
        if not np.isfinite(scores).all():
            raise HarnessInputError(f"reranker {self.model_id}: NaN or infinite score")
        return scores

    def config(self) -> dict:
        """Model id, weights fingerprint, max length, batch size (for the run manifest)."""
        return {
            "library": "sentence-transformers CrossEncoder",
            "model_id": self.model_id,
            "fingerprint": self.fingerprint,
            "max_length": getattr(self.model, "max_seq_length", None),
            "batch_size": self.batch_size,
        }


def load_cross_encoder(
    name_or_path: str | Path, *, device: str = "cpu", max_length: int | None = None, batch_size: int = 32
) -> CrossEncoderReranker:
    """Load a sentence-transformers ``CrossEncoder`` (a local folder or a hub name) as a :class:`Reranker`.

    Args:
        name_or_path: model folder (``save_pretrained`` layout) or hub id; set ``HF_HUB_OFFLINE=1`` to forbid
            downloads.
        device: torch device (``"cpu"``).
        max_length: truncation length of the pair (``None``: the model's).
        batch_size: pairs per forward pass.

    Raises:
        HarnessInputError: the model cannot be loaded (one line naming the path and the cause).
    """
    try:
        from sentence_transformers import CrossEncoder

        model = CrossEncoder(str(name_or_path), device=device, max_length=max_length)
    except Exception as exc:  # noqa: BLE001 - any loader failure is unusable input
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise HarnessInputError(f"reranker {name_or_path}: cannot load a CrossEncoder ({msg})") from None
    return CrossEncoderReranker(model, str(name_or_path), batch_size=batch_size)


RERANKER_PREFIXES = ("py:", "cross-encoder:")


def load_reranker(spec: str, *, field: str = "two-stage reranker") -> tuple[Reranker, dict]:
    """A reranker from its spec, with its provenance for the run manifest.

    Specs:

    * ``py:MODULE:ATTR``: an object with ``predict(pairs) -> scores`` (or a class / zero-argument factory making
      one), loaded by :func:`harness.retrieve.plugin.load_plugin`;
    * ``cross-encoder:NAME_OR_PATH``: a sentence-transformers ``CrossEncoder`` (:func:`load_cross_encoder`).

    Returns:
        ``(reranker, provenance)``: provenance is the plugin's :meth:`~harness.retrieve.plugin.Plugin.record` or
        ``{"spec", "cross_encoder"}``.

    Raises:
        HarnessInputError: an unknown prefix, or what the loaders raise.
    """
    text = spec.strip()
    if text.startswith("py:"):
        plugin = load_plugin(text, field=field, protocol=("predict",))
        return plugin.obj, plugin.record()  # type: ignore[return-value]
    if text.startswith("cross-encoder:") and text[len("cross-encoder:") :].strip():
        name = text[len("cross-encoder:") :].strip()
        return load_cross_encoder(name), {"spec": text, "cross_encoder": name}
    raise HarnessInputError(f"{field}: {spec!r} is not py:MODULE:ATTR or cross-encoder:<model name or folder>")


class TwoStageOptions(BaseModel):
    """Options of a ``two-stage:<first stage>`` system (the first stage is the name after the options).

    Attributes:
        top_docs: candidate documents taken from the first stage (>= 1; default 20).
        fusion: the chunk fusion of the candidate lists ``[bm25, vector]``: a fusion name without inputs (``rrf``,
            ``rrf:k=30``, ``w0.75``; default ``rrf``), stored canonical.
        reranker: ``None`` (default) or a reranker spec (:func:`load_reranker`: ``py:MODULE:ATTR`` or
            ``cross-encoder:<model>``).
        rerank_top: fused chunks re-scored by the reranker (>= 1; default 50).
        backfill: append the first stage's chunks from outside the candidates (default ``False``).
        vector: the run's system whose chunk bits the second stage reads (default ``"vector"``; ``"none"``: a
            BM25-only second stage).

    Written in a name as ``two-stage[reranker=py:rerank.py:make;rerank_top=20]:bm25`` or
    ``two-stage:top_docs=10:rrf`` (a value holding ``:`` needs the brackets).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    top_docs: int = Field(DEFAULT_TOP_DOCS, ge=1)
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


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise HarnessInputError(f"two-stage: {name} must be an int >= 1, got {value!r}")
    return int(value)


class TwoStage:
    """Two-stage evidence search over the top documents of a first-stage system (see the module docstring).

    Args:
        bm25: the BM25 system (needs ``chunk_index``).
        vector: the vector system (needs ``packed_bits()`` and ``embedder.embed_queries``; ``pack_queries`` is used
            when present), or ``None`` for a BM25-only second stage.
        corpus: the open corpus the indexes were built from.
        top_docs: candidate documents taken from the first stage's document ranking (>= 1; default 20).
        fusion: the chunk fusion, a fusion system name of :class:`~harness.retrieve.fusion.FusionSpec`: ``"rrf"``
            (default, k = 60), ``"rrf:k=<k>"``, or ``"w<weight>"`` (weighted min-max over the candidate lists,
            ``w`` on BM25; ``"w1"`` ranks the BM25-matching candidates by BM25 alone, then the rest by chunk id).
        reranker: ``None`` or a :class:`Reranker` (e.g. :func:`load_cross_encoder`).
        rerank_top: fused chunks re-scored by the reranker (>= 1; default 50).
        backfill: append the first stage's chunks from outside the candidates (default ``False``).

    Raises:
        HarnessInputError: a parameter out of range; a vector system whose chunk ids the corpus does not hold.
    """

    name = "two-stage"

    def __init__(
        self,
        bm25,
        vector,
        corpus,
        *,
        top_docs: int = DEFAULT_TOP_DOCS,
        fusion: str = "rrf",
        reranker: Reranker | None = None,
        rerank_top: int = DEFAULT_RERANK_TOP,
        backfill: bool = False,
    ):
        self.bm25 = bm25
        self.vector = vector
        self.corpus = corpus
        self.top_docs = _positive_int("top_docs", top_docs)
        try:
            self.fusion = fusion if isinstance(fusion, FusionSpec) else FusionSpec.parse(fusion)
        except HarnessInputError as exc:
            raise HarnessInputError(f"two-stage: chunk fusion: {exc}") from None
        if self.fusion.inputs != DEFAULT_INPUTS:
            raise HarnessInputError(f"two-stage: chunk fusion {self.fusion.name!r}: takes no inputs")
        self.reranker = reranker
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
        if self.vector is None or self._vec_bits is not None:
            return
        ids, bits = self.vector.packed_bits()
        self._vec_ids = list(ids)
        self._vec_bits = np.ascontiguousarray(np.asarray(bits, dtype=np.uint8))
        if self._vec_bits.ndim != 2 or self._vec_bits.shape[0] != len(self._vec_ids):
            raise HarnessInputError(f"vector system: packed_bits gave {len(ids)} ids and bits {self._vec_bits.shape}")
        self._vec_pos = self._doc_positions(self._vec_ids)

    def _query_bits(self, queries: Sequence[str]) -> list[np.ndarray | None]:
        """Packed query bits (``None`` for blank queries or without a vector system)."""
        out: list[np.ndarray | None] = [None] * len(queries)
        if self.vector is None:
            return out
        live = [i for i, q in enumerate(queries) if isinstance(q, str) and q.strip()]
        if live:
            pack = getattr(self.vector, "pack_queries", pack_signs)  # the index's own binarisation (sign or centred)
            packed = pack(np.asarray(self.vector.embedder.embed_queries([queries[i] for i in live])))
            if packed.ndim != 2 or packed.shape[0] != len(live):
                raise HarnessInputError(f"vector system: query embeddings of shape {packed.shape} for {len(live)}")
            if self._vec_bits is not None and packed.shape[1] != self._vec_bits.shape[1]:
                raise HarnessInputError(
                    f"vector system: query bits {packed.shape[1]} bytes, index bits {self._vec_bits.shape[1]} bytes"
                )
            for j, i in enumerate(live):
                out[i] = packed[j]
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
        qbits = self._query_bits(queries)
        return [self._one(q, fs, qb, doc_depth, chunk_depth) for q, fs, qb in zip(queries, first, qbits, strict=True)]

    def candidate_lists(
        self, query: str, candidate_docs: Sequence[str], qbits: np.ndarray | None = None
    ) -> tuple[Ranking, Ranking, int, int]:
        """The BM25 and vector chunk lists inside ``candidate_docs`` (before fusion).

        Args:
            query: the query text.
            candidate_docs: document ids (unknown ids have no chunks).
            qbits: packed query bits ``uint8 (D/8,)`` (computed when ``None`` and a vector system exists).

        Returns:
            ``(bm25_list, vector_list, n_candidate_chunks, n_without_vector)``: lists of ``(chunk_id, score)``
            (BM25 positive scores; vector ``-hamming``), in corpus order, not sorted.
        """
        terms = self.bm25.chunk_index.query_terms(query) if isinstance(query, str) else []
        if qbits is None and self.vector is not None and isinstance(query, str) and query.strip():
            self._load_vectors()
            qbits = self._query_bits([query])[0]
        return self._lists(terms, qbits, candidate_docs)

    def _lists(self, terms: list[str], qbits: np.ndarray | None, candidate_docs: Sequence[str]):
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
        if self.vector is None:
            return bm_list, vec_list, n_cand, n_cand
        self._load_vectors()
        vpos = [self._vec_pos.get(d, self._empty) for d in docs]
        v_pos = np.concatenate(vpos) if vpos else self._empty
        if qbits is not None and v_pos.size:
            dist = hamming_distances(qbits, self._vec_bits[v_pos])
            vec_list = [(self._vec_ids[p], -float(d)) for p, d in zip(v_pos, dist, strict=True)]
        return bm_list, vec_list, n_cand, n_cand - int(v_pos.size)

    def _one(self, query: str, fs: QueryResult, qbits, doc_depth: int, chunk_depth: int) -> QueryResult:
        flags: dict = {}
        if fs.docs is None:
            docs = None
            flags["no_first_stage_docs"] = True
            cand: list[str] = []
        else:
            docs = canonical_ranking(fs.docs, doc_depth)
            cand = [d for d, _ in docs[: self.top_docs]]
        terms = self.bm25.chunk_index.query_terms(query) if isinstance(query, str) else []
        if not terms and qbits is None:
            flags["empty_query"] = True
        bm_list, vec_list, n_cand, n_novec = self._lists(terms, qbits, cand)
        fused = self.fusion.fuse([bm_list, vec_list])
        order = [c for c, _ in fused]
        n_rr = 0
        if self.reranker is not None and order:
            head, tail = order[: self.rerank_top], order[self.rerank_top :]
            texts = self._chunk_texts(head)
            raw = np.asarray(self.reranker.predict([(query, texts[c]) for c in head]), dtype=np.float64).reshape(-1)
            if raw.shape[0] != len(head) or not np.isfinite(raw).all():
                raise HarnessInputError(f"reranker: {raw.shape[0]} finite scores expected {len(head)}")
            order = [c for c, _ in canonical_ranking(zip(head, raw.tolist(), strict=True))] + tail
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
            rr = dict(get()) if callable(get) else {"class": type(self.reranker).__qualname__}
            rr["rerank_top"] = self.rerank_top
        return {
            "system": self.name,
            "top_docs": self.top_docs,
            "documents": "first-stage document ranking, canonical, cut at doc_depth (unchanged: document metrics "
            "equal the first stage's)",
            "candidates": f"every chunk of the first stage's top {self.top_docs} documents",
            "chunk_lists": {
                "bm25": "BM25 chunk index scores (whole-index statistics), masked to candidates, positive only",
                "vector": None
                if self.vector is None
                else "-hamming(query bits, chunk bits), candidates held by the vector index, exact numpy scan",
            },
            "vector_binarize": None if self.vector is None else getattr(self.vector, "binarize", "sign"),
            "fusion": {**self.fusion.config(), "lists": ["bm25", "vector"], "input_depth": None},
            "formula": self.fusion.formula.replace("cut at depth", "not cut (whole candidate lists)")
            + "; d = a candidate chunk",
            "reranker": rr,
            "backfill": self.backfill,
            "chunk_scores": "positional: n, n-1, ..., 1 in the final order",
        }
