"""BM25 retrieval with bm25s over the Spanish analyzer: a chunk index and a whole-document index.

Both indexes are persisted under ``<workdir>/indexes/bm25/<level>-<key>/`` where ``key`` hashes the corpus hash,
chunker id, analyzer config and BM25 parameters; they are rebuilt only when one of those changes and loaded
memory-mapped otherwise.

Scoring is bm25s's ``lucene`` variant (Lucene's BM25: idf = ln(1 + (N - df + 0.5)/(df + 0.5)), k1 = 1.5,
b = 0.75; Kamphuis et al., ECIR 2020, "Which BM25 do you mean?"). Rankings keep only items with a positive score
(an item sharing no term with the query is not retrieved) and follow the project's tie rule exactly: the top
``depth`` items by score descending, then id ascending, with ties at the cut-off resolved by id, not by the
order in which a top-k routine happened to return them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import bm25s
import numpy as np
from bm25s.tokenization import Tokenized

from harness.corpus.store import Corpus
from harness.io import canonical_json
from harness.retrieve.analyzer import SpanishAnalyzer
from harness.retrieve.base import QueryResult, Ranking

BM25_PARAMS = {"method": "lucene", "k1": 1.5, "b": 0.75}


def top_k_exact(scores: np.ndarray, id_rank: np.ndarray, k: int) -> np.ndarray:
    """Indices of the top ``k`` positive scores under (score descending, id ascending).

    Args:
        scores: shape (n,), float.
        id_rank: shape (n,), int; position of each item's id in ascending string order.
        k: depth (>= 1).

    Returns:
        Indices (at most k) in canonical order. Ties at the boundary are resolved by ``id_rank``.
    """
    pos = np.flatnonzero(scores > 0)
    if pos.size == 0:
        return pos
    s = scores[pos]
    if pos.size > k:
        thr = np.partition(s, pos.size - k)[pos.size - k]
        keep = s >= thr
        pos, s = pos[keep], s[keep]
    order = np.lexsort((id_rank[pos], -s.astype(np.float64)))
    return pos[order[:k]]


def _id_rank(ids: Sequence[str]) -> np.ndarray:
    order = sorted(range(len(ids)), key=ids.__getitem__)
    rank = np.empty(len(ids), dtype=np.int64)
    rank[order] = np.arange(len(ids))
    return rank


class BM25Index:
    """One persisted bm25s index over a list of ids and token lists.

    Attributes:
        ids: item ids (chunk ids or document ids), index-aligned with the bm25s corpus.
        retriever: the ``bm25s.BM25`` object.
    """

    def __init__(self, ids: list[str], retriever: bm25s.BM25, analyzer: SpanishAnalyzer):
        self.ids = ids
        self.retriever = retriever
        self.analyzer = analyzer
        self.vocab: dict[str, int] = retriever.vocab_dict
        self._id_rank = _id_rank(ids)

    @classmethod
    def build(cls, ids: list[str], token_lists: list[list[str]], analyzer: SpanishAnalyzer) -> BM25Index:
        """Index ``token_lists`` (already analysed) under ``ids``."""
        vocab: dict[str, int] = {}
        tok_ids = [[vocab.setdefault(t, len(vocab)) for t in toks] for toks in token_lists]
        retriever = bm25s.BM25(**BM25_PARAMS)
        retriever.index(Tokenized(ids=tok_ids, vocab=vocab), show_progress=False)
        return cls(ids, retriever, analyzer)

    def save(self, folder: Path) -> None:
        """Persist atomically (temporary folder, then rename)."""
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
        try:
            self.retriever.save(str(tmp), show_progress=False)
            (tmp / "ids.json").write_text(json.dumps(self.ids, ensure_ascii=False), encoding="utf-8")
            if folder.exists():
                shutil.rmtree(folder)
            os.replace(tmp, folder)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    @classmethod
    def load(cls, folder: Path, analyzer: SpanishAnalyzer) -> BM25Index:
        """Load memory-mapped."""
        retriever = bm25s.BM25.load(str(folder), mmap=True, show_progress=False)
        ids = json.loads((folder / "ids.json").read_text(encoding="utf-8"))
        return cls(ids, retriever, analyzer)

    def size_bytes(self, folder: Path) -> int:
        """Bytes on disk of the persisted index."""
        return sum(p.stat().st_size for p in folder.iterdir() if p.is_file())

    def query_terms(self, text: str) -> list[str]:
        """Analysed query terms that exist in the vocabulary."""
        return [t for t in self.analyzer.tokenize(text) if t in self.vocab]

    def scores(self, terms: list[str]) -> np.ndarray:
        """BM25 score of every item for the analysed query ``terms`` (shape (n_items,), float32)."""
        if not terms:
            return np.zeros(len(self.ids), dtype=np.float32)
        return self.retriever.get_scores(terms)

    def search(self, text: str, depth: int) -> tuple[Ranking, dict]:
        """Canonical top ``depth`` ranking for one query, plus flags (``empty_query``, ``tie_at_boundary``)."""
        terms = self.query_terms(text)
        flags: dict = {}
        if not terms:
            flags["empty_query"] = True
            return [], flags
        sc = self.scores(terms)
        idx = top_k_exact(sc, self._id_rank, depth)
        if idx.size == depth and np.count_nonzero(sc == sc[idx[-1]]) > np.count_nonzero(sc[idx] == sc[idx[-1]]):
            flags["tie_at_boundary"] = True
        return [(self.ids[i], float(sc[i])) for i in idx], flags


def _index_key(corpus: Corpus, analyzer: SpanishAnalyzer, level: str) -> str:
    payload = {
        "corpus_hash": corpus.manifest.corpus_hash,
        "chunker_id": corpus.manifest.chunker_id,
        "chunker_params": corpus.manifest.chunker_params,
        "analyzer": analyzer.config(),
        "bm25": BM25_PARAMS,
        "level": level,
        "bm25s": bm25s.__version__,
    }
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()[:16]


class BM25System:
    """The ``bm25`` system: documents ranked with the document index, chunks with the chunk index.

    Args:
        corpus: an open :class:`~harness.corpus.store.Corpus`.
        workdir: where indexes are persisted.
        progress: print what is being built.

    Attributes:
        build_seconds: ``{"chunk": s, "document": s}`` for indexes built in this process (0 when loaded).
        index_bytes: ``{"chunk": bytes, "document": bytes}`` on disk.
    """

    name = "bm25"

    def __init__(self, corpus: Corpus, workdir: str | Path, *, analyzer: SpanishAnalyzer | None = None):
        self.analyzer = analyzer or SpanishAnalyzer()
        self.corpus = corpus
        root = Path(workdir) / "indexes" / "bm25"
        self.build_seconds: dict[str, float] = {}
        self.index_bytes: dict[str, int] = {}
        self.folders = {lv: root / f"{lv}-{_index_key(corpus, self.analyzer, lv)}" for lv in ("chunk", "document")}
        missing = [lv for lv, f in self.folders.items() if not (f / "ids.json").exists()]
        built: dict[str, BM25Index] = {}
        if missing:
            t0 = time.perf_counter()
            _rowids, chunk_ids, chunk_docs, texts = corpus.chunk_table()
            chunk_tokens = self.analyzer.tokenize_many(texts)
            t_tok = time.perf_counter() - t0
            if "chunk" in missing:
                t1 = time.perf_counter()
                built["chunk"] = BM25Index.build(chunk_ids, chunk_tokens, self.analyzer)
                built["chunk"].save(self.folders["chunk"])
                self.build_seconds["chunk"] = round(t_tok + time.perf_counter() - t1, 3)
            if "document" in missing:
                t1 = time.perf_counter()
                doc_ids, doc_tokens = self._document_tokens(chunk_docs, chunk_tokens)
                built["document"] = BM25Index.build(doc_ids, doc_tokens, self.analyzer)
                built["document"].save(self.folders["document"])
                self.build_seconds["document"] = round(t_tok + time.perf_counter() - t1, 3)
        self.chunk_index = BM25Index.load(self.folders["chunk"], self.analyzer)
        self.doc_index = BM25Index.load(self.folders["document"], self.analyzer)
        for lv, f in self.folders.items():
            self.build_seconds.setdefault(lv, 0.0)
            with contextlib.suppress(OSError):
                self.index_bytes[lv] = sum(p.stat().st_size for p in f.iterdir() if p.is_file())

    def _document_tokens(self, chunk_docs: list[str], chunk_tokens: list[list[str]]) -> tuple[list[str], list]:
        """Whole-document token lists: title, then each new heading, then the chunk tokens, in order."""
        docs = self.corpus.documents()
        heading_rows = self.corpus.conn.execute("SELECT heading_path FROM chunks ORDER BY rowid").fetchall()
        toks: dict[str, list[str]] = {d: self.analyzer.tokenize(docs[d].title or "") for d in docs}
        last: dict[str, str] = {}
        for doc, (hp,), ct in zip(chunk_docs, heading_rows, chunk_tokens, strict=True):
            if last.get(doc) != hp:
                path = json.loads(hp)
                if path:
                    toks[doc].extend(self.analyzer.tokenize(path[-1]))
                last[doc] = hp
            toks[doc].extend(ct)
        ids = list(docs)
        return ids, [toks[d] for d in ids]

    def config(self) -> dict:
        """Analyzer, BM25 parameters and index keys (for the run manifest)."""
        return {
            "system": "bm25",
            "library": f"bm25s {bm25s.__version__}",
            "params": BM25_PARAMS,
            "analyzer": self.analyzer.config(),
            "documents": "document index (title + headings + text)",
            "chunks": "chunk index (chunk text)",
            "index_keys": {lv: f.name for lv, f in self.folders.items()},
            "positive_scores_only": True,
        }

    def search(self, queries: Sequence[str], *, doc_depth: int, chunk_depth: int) -> list[QueryResult]:
        """Rank documents (document index) and chunks (chunk index) for each query."""
        out = []
        for q in queries:
            docs, f1 = self.doc_index.search(q, doc_depth)
            chunks, f2 = self.chunk_index.search(q, chunk_depth)
            flags = {}
            if f1.get("empty_query") or f2.get("empty_query"):
                flags["empty_query"] = True
            if f1.get("tie_at_boundary"):
                flags["doc_tie_at_boundary"] = True
            if f2.get("tie_at_boundary"):
                flags["chunk_tie_at_boundary"] = True
            out.append(QueryResult(docs=docs, chunks=chunks, flags=flags))
        return out
