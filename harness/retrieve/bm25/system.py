"""The ``bm25`` system: a chunk index and a whole-document index of one corpus, persisted and reused.

Both indexes are persisted under ``<workdir>/indexes/bm25/<level>-<key>/`` where ``key`` hashes the corpus hash,
chunker id, analyzer config and BM25 parameters; they are rebuilt only when one of those changes and loaded
memory-mapped otherwise. Scoring and ranking: :mod:`harness.retrieve.bm25.index`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar, Literal

import bm25s
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from harness.corpus.store import Corpus
from harness.derived import damaged_notice, remove_derived
from harness.errors import HarnessInputError
from harness.io import canonical_json
from harness.progress import progress_bar, stage
from harness.ranking import Ranking
from harness.retrieve.analyzer import Analyzer, SpanishAnalyzer, option_analyzer, system_analyzer
from harness.retrieve.base import QueryResult, SystemContext
from harness.retrieve.bm25.index import BM25_PARAMS, NONOCCURRENCE_METHODS, BM25Index, bm25_params
from harness.retrieve.counts import chunk_term_counts, counted_batches, document_term_counts

ANALYSIS_BATCH = 4096  # chunks analysed at a time by the integer build (bounds the live Python token lists)

MAX_K1 = 1000.0
"""Largest ``k1`` a ``bm25`` system accepts (:class:`BM25Options`, Ranges: the no-saturation limit, far from float32
overflow)."""

MAX_DELTA = 1000.0
"""Largest ``delta`` a ``bm25l`` / ``bm25+`` system accepts (:class:`BM25Options`, Ranges)."""


class BM25Options(BaseModel):
    """Options of a ``bm25`` system: bm25s's parameters (``bm25:k1=0.9:b=0.4``, ``bm25:method=bm25+:delta=1``).

    Attributes:
        k1: term-frequency saturation, finite in [0, :data:`MAX_K1`] (default 1.5).
        b: length normalisation in [0, 1] (default 0.75).
        method: bm25s's variant (Kamphuis et al., ECIR 2020): ``lucene`` (default), ``robertson``, ``atire``,
            ``bm25l``, ``bm25+``.
        delta: the bm25l / bm25+ lower bound, finite in [0, :data:`MAX_DELTA`] (bm25s's default 0.5); refused for
            the other methods.
        analyzer: an analyzer id, ``neutral`` or an ISO 639-1 code (``bm25:analyzer=pt``), stored as the id; default
            ``None``: the run's ``--analyzer``, else the corpus's declared language, else ``es-snowball-fold-v1``
            (:func:`harness.retrieve.analyzer.choose_analyzer`).

    Ranges (issue 44 item 18): BM25 is defined for ``k1 >= 0`` and ``0 <= b <= 1`` (Robertson & Zaragoza, "The
    Probabilistic Relevance Framework: BM25 and Beyond", 2009, section 3.4) and BM25L / BM25+ for ``delta >= 0``
    (Lv & Zhai, CIKM 2011). The upper bounds are ours, set where the float32 scores bm25s computes stop meaning
    anything: ``k1 = 1e308`` overflows ``k1 * norm`` to infinity, every term component becomes 0 and every ranking
    is empty (MRR 0, exit 0, before this bound); ``atire`` / ``bm25+`` overflow ``k1 + 1`` to an infinite score.
    Well before overflow, a ``k1`` far above every term frequency gives ``tf / (k1 * norm + tf) ~ tf / (k1 * norm)``,
    the linear no-saturation limit, so ranks stop changing: chunk term counts are in the tens to hundreds, tuned
    ``k1`` lies in [0.5, 3] (Lucene 1.2, bm25s 1.5), and ``k1 = 1000`` already sits at the limit. For ``delta``,
    float32's 24-bit mantissa keeps the term component (below ``k1 + 1``) resolvable beside ``delta`` only while
    ``delta`` is moderate: at ``delta = 1e30`` every occurring term scores the same; published values are 0.5 and 1,
    and 1000 leaves room for any sweep. Out-of-range values are refused with one line (exit 2).

    Options equal to their defaults are not recorded
    (:attr:`record_defaults` False), so ``bm25:b=0.75`` is the system ``bm25``, and a record written before the
    options existed replays unchanged. Unknown keys are refused.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    record_defaults: ClassVar[bool] = False

    k1: float = Field(BM25_PARAMS["k1"], ge=0, le=MAX_K1, allow_inf_nan=False)
    b: float = Field(BM25_PARAMS["b"], ge=0, le=1, allow_inf_nan=False)
    method: Literal["lucene", "robertson", "atire", "bm25l", "bm25+"] = "lucene"
    delta: float | None = Field(None, ge=0, le=MAX_DELTA, allow_inf_nan=False)
    analyzer: str | None = None

    @field_validator("analyzer", mode="before")
    @classmethod
    def _analyzer_id(cls, value):
        return option_analyzer(value)

    @model_validator(mode="before")
    @classmethod
    def _default_delta(cls, data):
        """bm25l / bm25+ without a delta get bm25s's 0.5, so ``method=bm25l`` and ``method=bm25l:delta=0.5`` are one
        system (one record, one index)."""
        if isinstance(data, dict) and data.get("method") in NONOCCURRENCE_METHODS and data.get("delta") is None:
            return {**data, "delta": 0.5}
        return data

    @model_validator(mode="after")
    def _delta_applies(self) -> BM25Options:
        if self.delta is not None and self.method not in NONOCCURRENCE_METHODS:
            raise ValueError(f"delta applies to method bm25l or bm25+ only, not to {self.method}")
        return self

    def params(self) -> dict:
        """The index parameters (:func:`harness.retrieve.bm25.index.bm25_params`)."""
        return bm25_params(self.method, self.k1, self.b, self.delta)


def open_bm25_system(context: SystemContext, options: BM25Options) -> BM25System:
    """The ``bm25`` system of a run (registry factory): indexes built once per corpus, work directory and parameter
    set, then loaded; says whether they were built or loaded through ``context.log``."""
    t0 = time.perf_counter()
    options = options or BM25Options()
    analyzer, choice = system_analyzer(context, options.analyzer)
    system = BM25System(
        context.corpus, context.workdir, analyzer=analyzer, progress=context.progress, params=options.params()
    )
    system.analyzer_choice = choice
    built = any(system.build_seconds.values())
    what = "tokenisation + chunk and document index builds + loading" if built else "loading"
    context.log(
        f"bm25: indexes {'built' if built else 'loaded'} in {time.perf_counter() - t0:.1f} s ({what}; the record's "
        "timings_s.bm25_index_build)"
    )
    return system


def combine_levels(docs: Sequence[tuple[Ranking, dict]], chunks: Sequence[tuple[Ranking, dict]]) -> list[QueryResult]:
    """Pair per-query document and chunk results into :class:`QueryResult` with the system's flags:
    ``empty_query`` (either level had no known term), ``doc_tie_at_boundary``, ``chunk_tie_at_boundary``."""
    out = []
    for (d, f1), (c, f2) in zip(docs, chunks, strict=True):
        flags = {}
        if f1.get("empty_query") or f2.get("empty_query"):
            flags["empty_query"] = True
        if f1.get("tie_at_boundary"):
            flags["doc_tie_at_boundary"] = True
        if f2.get("tie_at_boundary"):
            flags["chunk_tie_at_boundary"] = True
        out.append(QueryResult(docs=d, chunks=c, flags=flags))
    return out


def _index_key(corpus: Corpus, analyzer: Analyzer, level: str, params: dict = BM25_PARAMS) -> str:
    payload = {
        "corpus_hash": corpus.manifest.corpus_hash,
        "chunker_id": corpus.manifest.chunker_id,
        "chunker_params": corpus.manifest.chunker_params,
        "analyzer": analyzer.config(),
        "bm25": params,
        "level": level,
        "bm25s": bm25s.__version__,
    }
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()[:16]


class BM25System:
    """The ``bm25`` system: documents ranked with the document index, chunks with the chunk index.

    Args:
        corpus: an open :class:`~harness.corpus.store.Corpus`.
        workdir: where indexes are persisted.
        analyzer: default ``es-snowball-fold-v1`` (:mod:`harness.retrieve.analyzer`; a run picks it by the corpus's
            language); its config is part of the index key.
        progress: progress displays while building (:mod:`harness.progress`: a bar over the chunks tokenised, a
            spinner per index build); they change nothing built.
        params: BM25 parameters (:func:`harness.retrieve.bm25.index.bm25_params`; default Lucene k1 1.5, b 0.75);
            each parameter set has its own persisted indexes.

    Attributes:
        build_seconds: ``{"chunk": s, "document": s}`` for indexes built in this process (0 when loaded).
        index_bytes: ``{"chunk": bytes, "document": bytes}`` on disk.
    """

    name = "bm25"

    def __init__(
        self,
        corpus: Corpus,
        workdir: str | Path,
        *,
        analyzer: Analyzer | None = None,
        progress: bool = False,
        params: dict | None = None,
    ):
        self.analyzer = analyzer or SpanishAnalyzer()
        self.corpus = corpus
        self.params = dict(BM25_PARAMS if params is None else params)
        root = Path(workdir) / "indexes" / "bm25"
        self.build_seconds: dict[str, float] = {}
        self.index_bytes: dict[str, int] = {}
        key = {lv: _index_key(corpus, self.analyzer, lv, self.params) for lv in ("chunk", "document")}
        self.folders = {lv: root / f"{lv}-{key[lv]}" for lv in ("chunk", "document")}
        missing = [lv for lv, f in self.folders.items() if not (f / "ids.json").exists()]
        for lv, f in self.folders.items():  # a damaged or unverifiable index is rebuilt, never used (issue 26 item 2)
            if not f.is_dir() and (f.exists() or f.is_symlink()):  # a file (or a dangling link) in the folder's place
                problem = "not a folder (a file in the index folder's place)"
            else:
                problem = None if lv in missing else BM25Index.check(f)
            if problem is not None:
                damaged_notice(f"bm25: {lv} index", f, problem)
                try:
                    remove_derived(f)
                except OSError as exc:
                    raise HarnessInputError(
                        f"{f}: BM25 {lv} index fails its check ({problem}) and cannot be removed to rebuild it "
                        f"({exc.strerror or exc})"
                    ) from None
                if lv not in missing:
                    missing.append(lv)
        built: dict[str, BM25Index] = {}
        if missing:
            t0 = time.perf_counter()
            chunk_ids, chunk_docs = corpus.chunk_keys()
            with progress_bar("BM25: tokenise chunks", len(chunk_ids), enabled=progress) as advance:
                batches = counted_batches(corpus.iter_chunk_texts(ANALYSIS_BATCH), advance)
                chunk = chunk_term_counts(self.analyzer, batches)
            t_tok = time.perf_counter() - t0
            if "chunk" in missing:
                t1 = time.perf_counter()
                with stage("BM25: build the chunk index", enabled=progress):
                    built["chunk"] = BM25Index.build_from_counts(chunk_ids, *chunk, self.analyzer, self.params)
                    built["chunk"].save(self.folders["chunk"])
                del built["chunk"]
                self.build_seconds["chunk"] = round(t_tok + time.perf_counter() - t1, 3)
            if "document" in missing:
                t1 = time.perf_counter()
                with stage("BM25: build the document index", enabled=progress):
                    doc_ids, *doc = document_term_counts(corpus, self.analyzer, chunk_docs, *chunk)
                    built["document"] = BM25Index.build_from_counts(doc_ids, *doc, self.analyzer, self.params)
                    built["document"].save(self.folders["document"])
                self.build_seconds["document"] = round(t_tok + time.perf_counter() - t1, 3)
            del chunk, built
        for lv in missing:
            if (problem := BM25Index.check(self.folders[lv])) is not None:
                raise HarnessInputError(
                    f"{self.folders[lv]}: BM25 {lv} index fails its check after a rebuild ({problem})"
                )
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
            "params": self.params,
            "analyzer": self.analyzer.config(),
            "documents": "document index (title + headings + text)",
            "chunks": "chunk index (chunk text)",
            "index_keys": {lv: f.name for lv, f in self.folders.items()},
            "positive_scores_only": True,
        }

    def search(self, queries: Sequence[str], *, doc_depth: int, chunk_depth: int) -> list[QueryResult]:
        """Rank documents (document index) and chunks (chunk index) for each query.

        Each query is analysed once; both indexes answer the whole batch through :meth:`BM25Index.search_many`
        (same results as ``BM25Index.search`` per query). Flags: ``empty_query`` (no known term in either index),
        ``doc_tie_at_boundary``, ``chunk_tie_at_boundary``.
        """
        terms = [self.analyzer.tokenize(q) for q in queries]  # one analysis for both indexes (same analyzer)
        docs = self.doc_index.search_many(terms, doc_depth, analysed=True)
        chunks = self.chunk_index.search_many(terms, chunk_depth, analysed=True)
        return combine_levels(docs, chunks)
