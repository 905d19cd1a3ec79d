"""One BM25 index (bm25s) over ids and analysed tokens, its integer build, and its searches.

Scoring is by default bm25s's ``lucene`` variant (Lucene's BM25: idf = ln(1 + (N - df + 0.5)/(df + 0.5)), k1 = 1.5,
b = 0.75; Kamphuis et al., ECIR 2020, "Which BM25 do you mean?"); any other ``k1``, ``b`` and bm25s variant
(``robertson``, ``atire``, ``bm25l``, ``bm25+`` with its ``delta``) is one :func:`bm25_params` away, scored exactly as
bm25s scores it. Rankings keep only items with a positive score
(an item sharing no term with the query is not retrieved) and follow the project's tie rule exactly
(:func:`harness.ranking.top_k_by_score`): the top ``depth`` items by score descending, then id ascending, with ties
at the cut-off resolved by id, not by the order in which a top-k routine happened to return them.

Batched search (:meth:`BM25Index.search_many`, used by :meth:`harness.retrieve.bm25.BM25System.search`) scores a
whole batch of queries in one term-at-a-time pass over bm25s's precomputed score matrix, with bit-identical
``float32`` scores, the same rankings and the same flags as :meth:`BM25Index.search`. It is compiled with numba when
numba is installed (the optional extra ``harness[fast]``; kernels in :mod:`harness.retrieve.bm25._numba`, imported
lazily) and otherwise runs a numpy loop giving the same results.

The integer build (:func:`lucene_csc` over the rows of :func:`harness.retrieve.counts.count_terms` and the
per-document sums of the document index) reproduces ``bm25s.BM25.index`` bit for bit without holding token lists.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

import bm25s
import numpy as np
from bm25s.tokenization import Tokenized

from harness.derived import check_manifest, remove_derived, write_manifest
from harness.errors import HarnessInputError
from harness.ranking import Ranking, cut_in_tie, id_rank, top_k_by_score
from harness.retrieve.analyzer import Analyzer

BM25_PARAMS = {"method": "lucene", "k1": 1.5, "b": 0.75}
"""The default parameters (Lucene's BM25, k1 1.5, b 0.75); :func:`bm25_params` gives any other set."""
MANIFEST = "manifest.json"
"""The index folder's derived-file manifest (:mod:`harness.derived`, kind ``bm25-index``)."""
BM25_METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")
"""bm25s's scoring variants (Kamphuis et al., ECIR 2020)."""
NONOCCURRENCE_METHODS = ("bm25l", "bm25+")
"""Variants that give a term absent from an item a positive score (bm25s's ``nonoccurrence_array``): every item
scores above 0 for a query with a known term, so every item is retrieved."""

_NUMBA_KERNELS: object = None  # None: not tried yet; False: numba unavailable; else the kernel module


def _numba_kernels():
    """The numba kernel module, or None when numba cannot be imported (tried once per process)."""
    global _NUMBA_KERNELS
    if _NUMBA_KERNELS is None:
        try:
            from harness.retrieve.bm25 import _numba
        except ImportError:
            _NUMBA_KERNELS = False
        else:
            _NUMBA_KERNELS = _numba
    return _NUMBA_KERNELS or None


def have_numba() -> bool:
    """Whether the compiled batched path is available (numba importable)."""
    return _numba_kernels() is not None


CSC_BLOCK = 1 << 20  # (item, term) rows placed at a time by lucene_csc's counting sort (bounds its temporaries)


def bm25_params(method: str = "lucene", k1: float = 1.5, b: float = 0.75, delta: float | None = None) -> dict:
    """The BM25 parameters of an index: ``{"method", "k1", "b"}`` plus ``"delta"`` for ``bm25l`` / ``bm25+`` (bm25s's
    default 0.5 when not given; the other methods have no delta, so none is recorded). The default equals
    :data:`BM25_PARAMS`, so default indexes keep their cache keys.

    Raises:
        ValueError: an unknown method, or a delta given to a method without one.
    """
    if method not in BM25_METHODS:
        raise ValueError(f"method must be one of {', '.join(BM25_METHODS)}, got {method!r}")
    out = {"method": method, "k1": float(k1), "b": float(b)}
    if method in NONOCCURRENCE_METHODS:
        out["delta"] = 0.5 if delta is None else float(delta)
    elif delta is not None:
        raise ValueError(f"delta applies to bm25l and bm25+ only, not to {method}")
    return out


def _idf(method: str, df: int, n: int) -> float:
    """bm25s 0.3's idf of each method (``bm25s.scoring._score_idf_*``), as a Python float."""
    if method == "lucene":
        return math.log(1 + (n - df + 0.5) / (df + 0.5))
    if method == "robertson":  # bm25s floors the ratio at 1 (allow_negative=False)
        return math.log(max((n - df + 0.5) / (df + 0.5), 1))
    if method == "atire":
        return math.log(n / df)
    if method == "bm25l":
        return math.log((n + 1) / (df + 0.5))
    return math.log((n + 1) / df)  # bm25+


def _tfc(method: str, tf: np.ndarray, l_d: np.ndarray, avg, k1: float, b: float, delta) -> np.ndarray:
    """bm25s 0.3's term-frequency component (``bm25s.scoring._score_tfc_*``) with its dtypes: ``tf`` float32,
    ``l_d`` the item lengths (int64), ``avg`` numpy float64; a Python float times float32 stays float32 (NEP 50)."""
    norm = (1 - b) + b * l_d / avg if method in ("lucene", "robertson") else 1 - b + b * l_d / avg
    if method in ("lucene", "robertson"):
        return tf / (k1 * norm + tf)
    if method == "atire":
        return (tf * np.float32(k1 + 1)) / (tf + k1 * norm)
    if method == "bm25l":
        c = tf / norm
        return ((k1 + 1) * (c + delta)) / (k1 + c + delta)
    return (tf * np.float32(k1 + 1)) / (k1 * norm + tf) + delta  # bm25+


def nonoccurrence(df: np.ndarray, n_items: int, avg, params: dict) -> np.ndarray | None:
    """bm25s's ``nonoccurrence_array`` (bm25l and bm25+; ``None`` otherwise): per term, ``idf * tfc(tf = 0)`` at the
    average length, float32 (``bm25s.scoring._build_nonoccurrence_array``; the idf unrounded, as bm25s has it)."""
    method = params["method"]
    if method not in NONOCCURRENCE_METHODS:
        return None
    k1, b, delta = params["k1"], params["b"], params["delta"]
    out = np.zeros(df.size, dtype=np.float32)
    if method == "bm25l":
        c = 0 / (1 - b + b * avg / avg)
        tfc = ((k1 + 1) * (c + delta)) / (k1 + c + delta)
    else:
        tfc = ((k1 + 1) * 0) / (k1 * (1 - b + b * avg / avg) + 0) + delta
    for t, d in enumerate(df.tolist()):
        if d:
            out[t] = _idf(method, d, n_items) * tfc
    return out


def lucene_csc(
    item: np.ndarray, term: np.ndarray, count: np.ndarray, length: np.ndarray, n_terms: int, params: dict | None = None
) -> dict:
    """bm25s's score matrix from integer (item, term, count) rows, bit-identical to ``bm25s.BM25.index``.

    Reproduces bm25s 0.3 ``build_index_from_ids`` operation by operation: ``avg = mean(lengths)`` (float64), idf
    by method (lucene ``log(1 + (N - df + 0.5) / (df + 0.5))``; robertson, atire, bm25l, bm25+ as in Kamphuis et
    al. 2020 and ``bm25s.scoring``) with ``math.log`` stored as float32, per posting ``float32(idf * tfc(tf, l_d))``
    (minus the term's non-occurrence score for bm25l / bm25+), CSC by term then item.

    Args:
        item, term, count: one row per distinct (item, term) pair; ``count`` >= 1.
        length: tokens per item, shape (n_items,).
        n_terms: vocabulary size (every term must occur in some item).
        params: :func:`bm25_params` (default :data:`BM25_PARAMS`, Lucene k1 1.5 b 0.75).

    Returns:
        bm25s's ``scores`` dict (``data`` float32, ``indices`` int32, ``indptr`` int64, ``num_docs``), plus
        ``nonoccurrence`` (float32 per term, or ``None``) for bm25l / bm25+.
    """
    params = dict(BM25_PARAMS if params is None else params)
    method, k1, b, delta = params["method"], params["k1"], params["b"], params.get("delta")
    n_items = int(length.size)
    avg = np.asarray(length, dtype=np.int64).mean()
    df = np.bincount(term, minlength=n_terms)
    idf = np.zeros(n_terms, dtype=np.float32)
    idf[:] = [_idf(method, d, n_items) if d else 0.0 for d in df.tolist()]
    nonocc = nonoccurrence(df, n_items, avg, params)
    if item.size > 1 and not np.all(item[1:] >= item[:-1]):
        o = np.argsort(item, kind="stable")
        item, term, count = item[o], term[o], count[o]
        del o
    length = np.asarray(length, dtype=np.int64)
    indptr = np.zeros(n_terms + 1, dtype=np.int64)  # the dtypes bm25s (scipy CSC from int32 rows) produces
    np.cumsum(df, out=indptr[1:])
    # Counting sort into (term, item) order, block by block of item-major rows: a row goes to
    # cursor[term] + its rank among the block's rows of that term, so the outputs are written in place and no
    # full-length permutation is ever held (peak: the inputs, the two outputs and one block of temporaries).
    data = np.empty(item.size, dtype=np.float32)
    indices = np.empty(item.size, dtype=np.int32)
    cursor = indptr[:-1].copy()
    step = CSC_BLOCK
    for s in range(0, item.size, step):
        it, tm, ct = item[s : s + step], term[s : s + step], count[s : s + step]
        o = np.argsort(tm, kind="stable")  # within the block: by term, item order kept
        ts = tm[o]
        starts = np.flatnonzero(np.concatenate([[True], ts[1:] != ts[:-1]]))
        sizes = np.diff(np.append(starts, ts.size))
        rank = np.arange(ts.size, dtype=np.int64) - np.repeat(starts, sizes)
        dest = cursor[ts] + rank
        cursor[ts[starts]] += sizes
        tf = ct[o].astype(np.float32)
        l_d = length[it[o]]
        val = idf[ts] * _tfc(method, tf, l_d, avg, k1, b, delta)
        if nonocc is not None:
            val = val - nonocc[ts]
        data[dest] = val
        indices[dest] = it[o]
    return {"data": data, "indices": indices, "indptr": indptr, "num_docs": n_items, "nonoccurrence": nonocc}


def _index_files(folder: Path) -> dict[str, Path]:
    """The files of an index folder the manifest covers (every regular file but the manifest)."""
    return {p.name: p for p in sorted(folder.iterdir()) if p.is_file() and p.name != MANIFEST and p.name[0] != "."}


class BM25Index:
    """One persisted bm25s index over a list of ids and token lists.

    Attributes:
        ids: item ids (chunk ids or document ids), index-aligned with the bm25s corpus.
        retriever: the ``bm25s.BM25`` object.
    """

    def __init__(self, ids: list[str], retriever: bm25s.BM25, analyzer: Analyzer):
        self.ids = ids
        self.retriever = retriever
        self.analyzer = analyzer
        self.vocab: dict[str, int] = retriever.vocab_dict
        self._id_rank = id_rank(ids)
        self._ids_arr = np.empty(len(ids), dtype=object)
        self._ids_arr[:] = ids

    @classmethod
    def build(
        cls, ids: list[str], token_lists: list[list[str]], analyzer: Analyzer, params: dict | None = None
    ) -> BM25Index:
        """Index ``token_lists`` (already analysed) under ``ids`` with bm25s itself (``params``: :func:`bm25_params`,
        default :data:`BM25_PARAMS`)."""
        vocab: dict[str, int] = {}
        tok_ids = [[vocab.setdefault(t, len(vocab)) for t in toks] for toks in token_lists]
        retriever = bm25s.BM25(**(BM25_PARAMS if params is None else params))
        retriever.index(Tokenized(ids=tok_ids, vocab=vocab), show_progress=False)
        return cls(ids, retriever, analyzer)

    @classmethod
    def build_from_counts(
        cls,
        ids: list[str],
        item: np.ndarray,
        term: np.ndarray,
        count: np.ndarray,
        length: np.ndarray,
        vocab: dict[str, int],
        analyzer: Analyzer,
        params: dict | None = None,
    ) -> BM25Index:
        """Like :meth:`build` from integer (item, term, count) rows, without token lists (the rows of
        :func:`harness.retrieve.counts.count_terms`).

        Same scores (bit for bit, :func:`lucene_csc`) and vocabulary (plus bm25s's empty token) as ``build`` over the
        same terms, under the same ``params``. ``vocab`` maps every term that occurs to its column.
        """
        params = dict(BM25_PARAMS if params is None else params)
        retriever = bm25s.BM25(**params)
        scores = lucene_csc(item, term, count, length, len(vocab), params)
        nonocc = scores.pop("nonoccurrence")
        retriever.scores = scores
        if nonocc is not None:  # bm25s sizes it to the vocabulary with its empty token (score 0)
            nonocc = np.append(nonocc, np.float32(0)) if "" not in vocab else nonocc
        retriever.nonoccurrence_array = nonocc
        vocab = dict(vocab)
        if "" not in vocab:  # what bm25s.BM25.index(create_empty_token=True) adds
            vocab[""] = max(vocab.values()) + 1
        retriever.vocab_dict = vocab
        retriever.unique_token_ids_set = set(vocab.values())
        return cls(ids, retriever, analyzer)

    def save(self, folder: Path) -> None:
        """Persist atomically (temporary folder, then rename)."""
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
        try:
            self.retriever.save(str(tmp), show_progress=False)
            (tmp / "ids.json").write_text(json.dumps(self.ids, ensure_ascii=False), encoding="utf-8")
            write_manifest(tmp / MANIFEST, "bm25-index", _index_files(tmp))
            if folder.exists() or folder.is_symlink():
                remove_derived(folder)  # a folder, or a file in its place (issue 44 item 19)
            os.replace(tmp, folder)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    @staticmethod
    def check(folder: Path) -> str | None:
        """``None`` when the persisted index matches its manifest (:func:`harness.derived.check_manifest`: sizes,
        array shapes and dtypes on every call, the sha256 only of a file whose size or mtime changed), else the
        problem (a missing folder or manifest is one)."""
        if not folder.is_dir():
            return "not a folder" if folder.exists() or folder.is_symlink() else "missing"
        return check_manifest(folder / MANIFEST, "bm25-index", _index_files(folder))

    @classmethod
    def load(cls, folder: Path, analyzer: Analyzer) -> BM25Index:
        """Load memory-mapped (call :meth:`check` first: this only checks that the parts agree).

        Raises:
            HarnessInputError: the folder cannot be loaded, or its ids and score matrix disagree in size.
        """
        try:
            retriever = bm25s.BM25.load(str(folder), mmap=True, show_progress=False)
            ids = json.loads((folder / "ids.json").read_text(encoding="utf-8"))
            n_docs = int(retriever.scores["num_docs"])
        except (OSError, ValueError, KeyError, TypeError, EOFError) as exc:
            msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise HarnessInputError(f"{folder}: BM25 index cannot be loaded ({msg}); delete the folder") from None
        if not isinstance(ids, list) or len(ids) != n_docs:
            raise HarnessInputError(f"{folder}: ids.json does not hold {n_docs} ids; delete the folder")
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
        idx = top_k_by_score(sc, self._id_rank, depth)
        if cut_in_tie(sc, idx, depth):
            flags["tie_at_boundary"] = True
        return [(self.ids[i], float(sc[i])) for i in idx], flags

    def _csc(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s = self.retriever.scores
        return np.asarray(s["data"]), np.asarray(s["indices"]), np.asarray(s["indptr"])

    @property
    def nonoccurrence(self) -> np.ndarray | None:
        """bm25s's per-term non-occurrence scores (bm25l, bm25+), or ``None``."""
        arr = getattr(self.retriever, "nonoccurrence_array", None)
        return None if arr is None else np.asarray(arr)

    def query_offsets(self, q_ptr: np.ndarray, q_tok: np.ndarray) -> np.ndarray | None:
        """Per query, the score every item gets from the query's terms it lacks (bm25l, bm25+; ``None`` otherwise):
        ``nonoccurrence[ids].sum()`` in float32, as ``bm25s.BM25.get_scores_from_ids`` adds it."""
        nonocc = self.nonoccurrence
        if nonocc is None:
            return None
        return np.asarray(
            [nonocc[q_tok[q_ptr[i] : q_ptr[i + 1]]].sum() for i in range(q_ptr.size - 1)], dtype=np.float32
        )

    def _token_ids(self, queries: Sequence, analysed: bool) -> tuple[np.ndarray, np.ndarray]:
        """CSR layout of the queries' known token ids (repeats kept, analyser order): ``q_tok[q_ptr[i]:q_ptr[i+1]]``."""
        vocab = self.vocab
        tok = self.analyzer.tokenize
        lens = np.zeros(len(queries) + 1, dtype=np.int64)
        flat: list[int] = []
        for i, q in enumerate(queries):
            ids = [vocab[w] for w in (q if analysed else tok(q)) if w in vocab]
            flat.extend(ids)
            lens[i + 1] = len(ids)
        return np.cumsum(lens), np.asarray(flat, dtype=np.int64)

    def _search_numpy(self, q_ptr: np.ndarray, q_tok: np.ndarray, k: int):
        """numpy path of :meth:`search_many`: one query at a time, same floats as bm25s's ``np.add.at``.

        The postings of one term hold each item at most once, so ``sc[indices[a:b]] += data[a:b]`` performs the same
        ``float32`` additions in the same order as bm25s's ``np.add.at`` over the concatenated postings.
        """
        data, indices, indptr = self._csc()
        offsets = self.query_offsets(q_ptr, q_tok)
        n = len(self.ids)
        nq = q_ptr.size - 1
        o_idx = np.full((nq, k), -1, dtype=np.int64)
        o_sc = np.zeros((nq, k), dtype=np.float32)
        o_n = np.zeros(nq, dtype=np.int64)
        o_tie = np.zeros(nq, dtype=np.bool_)
        for q in range(nq):
            toks = q_tok[q_ptr[q] : q_ptr[q + 1]]
            if toks.size == 0:
                continue
            sc = np.zeros(n, dtype=data.dtype)
            for t in toks.tolist():
                a, b = indptr[t], indptr[t + 1]
                sc[indices[a:b]] += data[a:b]
            if offsets is not None:
                sc += offsets[q]
            top = top_k_by_score(sc, self._id_rank, k)
            m = top.size
            o_idx[q, :m] = top
            o_sc[q, :m] = sc[top]
            o_n[q] = m
            o_tie[q] = cut_in_tie(sc, top, k)
        return o_idx, o_sc, o_n, o_tie

    def search_many(
        self,
        queries: Sequence,
        depth: int,
        *,
        analysed: bool = False,
        n_threads: int | None = None,
        backend: str = "auto",
    ) -> list[tuple[Ranking, dict]]:
        """``[self.search(q, depth) for q in queries]`` computed as one batch: same rankings, scores and flags.

        Args:
            queries: query texts, or (``analysed=True``) lists of analysed terms (unknown terms are dropped).
            depth: ranking depth (>= 1).
            n_threads: numba threads (default: one per 500 queries, at most ``numba.get_num_threads()``; 1 runs in
                the calling thread). Ignored by the numpy path.
            backend: ``"auto"`` (numba when importable), ``"numba"`` or ``"numpy"``. bm25l / bm25+ indexes always
                take the numpy path (their non-occurrence score is added to every item, as bm25s adds it).

        Returns:
            One ``(ranking, flags)`` per query: ranking = ``[(id, float32 score as float)]`` under (score desc, id
            asc), positive scores only; flags ``empty_query`` (no known term) or ``tie_at_boundary`` (an item left
            out scores the same as the last one kept).

        Raises:
            ValueError: ``depth < 1`` or an unknown backend. ImportError: ``backend="numba"`` without numba.
        """
        if depth < 1:
            raise ValueError(f"depth must be >= 1, got {depth}")
        if backend not in ("auto", "numba", "numpy"):
            raise ValueError(f"backend must be auto, numba or numpy, got {backend!r}")
        kern = _numba_kernels() if backend != "numpy" and self.nonoccurrence is None else None
        if backend == "numba" and _numba_kernels() is None:
            raise ImportError("numba is not installed (pip install 'harness[fast]')")
        q_ptr, q_tok = self._token_ids(queries, analysed)
        n = len(self.ids)
        k = min(depth, max(n, 1))  # no item is left out when depth >= n: never a boundary tie
        if kern is None:
            idx, sc, cnt, tie = self._search_numpy(q_ptr, q_tok, k)
        else:
            data, indices, indptr = self._csc()
            idx, sc, cnt, tie = kern.search_batch(q_ptr, q_tok, data, indices, indptr, n, self._id_rank, k, n_threads)
        out: list[tuple[Ranking, dict]] = []
        ids = self._ids_arr
        for i, (row_i, row_s, m) in enumerate(zip(idx, sc, cnt.tolist(), strict=True)):
            flags: dict = {}
            if q_ptr[i + 1] == q_ptr[i]:
                flags["empty_query"] = True
            elif tie[i] and k == depth:
                flags["tie_at_boundary"] = True
            out.append((list(zip(ids[row_i[:m]].tolist(), row_s[:m].tolist(), strict=True)), flags))
        return out
