"""The known-item study's systems: the system registry's names (:mod:`harness.retrieve.registry`), each scored
through one of two faces.

Names are parsed by :meth:`harness.retrieve.registry.SystemPlan.parse`, the parser of ``harness run``: the same
grammar, aliases (``mine=py:plugins/mine.py:Mine``), options (``vector:rescore=0``), fusions of any inputs
(``rrf:bm25+mine``, ``w0.6:bm25+tfidf``) and ``py:`` plugins; names are kept as typed, and two names with one
identity (``rrf``, ``rrf:bm25+vector``) are searched once.

Faces
-----
* **Batched** (:data:`FACES`, an optional speed-up for base kinds of :data:`~harness.retrieve.registry.KINDS`): a
  scorer factory of :mod:`.scorers` fills dense blocks of scores against every chunk of the study
  (:func:`.search.known_item_search`), so the outcome reads the whole ranking. ``bm25``, ``tfidf`` and ``vector``
  (with the options its name and the run's defaults give). A base kind without a face (a new kind registered in
  ``KINDS`` only) takes the per-query face below with its own system, opened by the registry on an ingest of the
  corpus under the study's chunker (same chunk ids; needs a registered chunker: ``--chunk-words 100`` or
  ``--chunker``).
* **Per-query** (:class:`RankingScorer`): fusions, ``py:`` retrievers and base kinds without a batched face. Each
  block of queries is ranked to ``depth`` chunks with the query's own chunk removed (rule 4), the way
  ``harness run`` ranks at ``--chunk-depth``,
  and written into the score block as positive values in that ranking's order, ties kept, so rules 4-5 read it like
  any other block. A fusion fuses its inputs' rankings (each from its own face, the query chunk removed before
  fusing) with :meth:`harness.retrieve.fusion.FusionSpec.fuse` at ``depth``. A ``py:`` retriever is called once per
  block, ``search(queries, doc_depth=1, chunk_depth=depth + 1)`` (one more for its own chunk), in the calling
  process only (a user's object is not forked); its chunk ids must be the study's (``<doc_id>#<index>`` under the
  study's chunker) and it must rank chunks. On this face a same-document chunk below ``depth`` counts as not
  retrieved (``rank`` ``None``); ``hit`` needs rank 1 only, so depth never changes it. ``empty_query`` is the
  inputs' (all of them without an index term) for a fusion, and false for a ``py:`` retriever (its index is not
  visible to the harness).
* ``two-stage`` is refused: it reranks chunks of an ingested corpus's top documents, and the study's chunks live in
  memory.
"""

from __future__ import annotations

import contextlib
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from harness.errors import HarnessInputError
from harness.metrics import DEFAULT_CHUNK_DEPTH
from harness.ranking import top_k_by_score
from harness.retrieve.plugin import check_results, plugin_call
from harness.retrieve.registry import KINDS, TWO_STAGE, SystemPlan
from harness.studies.known_item.scorers import ScorerInputs, bm25_scorer, tfidf_scorer, vector_scorer
from harness.studies.known_item.search import Scorer

__all__ = ["DEFAULT_DEPTH", "FACES", "RankingScorer", "StudySystems", "plan_study_systems"]

DEFAULT_DEPTH = DEFAULT_CHUNK_DEPTH
"""Chunks each per-query face ranks (``harness run``'s default ``--chunk-depth``)."""

Face = Callable[[ScorerInputs, BaseModel], tuple[Scorer, dict]]


def _bm25(inputs: ScorerInputs, options: BaseModel) -> tuple[Scorer, dict]:
    return bm25_scorer(inputs, options)


def _tfidf(inputs: ScorerInputs, _options: BaseModel) -> tuple[Scorer, dict]:
    return tfidf_scorer(inputs)


def _vector(inputs: ScorerInputs, options: BaseModel) -> tuple[Scorer, dict]:
    return vector_scorer(inputs, options)


FACES: dict[str, Face] = {"bm25": _bm25, "tfidf": _tfidf, "vector": _vector}
"""The batched face of each base kind of the registry: ``face(inputs, options) -> (scorer, config)``."""


def plan_study_systems(systems: Sequence[str] | str, vector_defaults: object = None) -> SystemPlan:
    """The study's systems parsed by the registry (plugins loaded), checked before any work.

    Args:
        systems: system names, a sequence or a comma-separated string (commas inside brackets stay).
        vector_defaults: the ``vector`` systems' defaults: a model name, a
            :class:`harness.retrieve.vector.VectorOptions` (only its set fields count) or ``None``.

    Raises:
        HarnessInputError: what :meth:`SystemPlan.parse` raises; a ``two-stage`` system; bad defaults.
    """
    from harness.retrieve.vector import VectorOptions

    names = [systems] if isinstance(systems, str) else list(systems)
    defaults: dict[str, BaseModel] = {}
    if isinstance(vector_defaults, VectorOptions):
        defaults["vector"] = vector_defaults
    elif isinstance(vector_defaults, str) and vector_defaults.strip():
        try:
            defaults["vector"] = VectorOptions(model=vector_defaults)
        except ValueError as exc:
            raise HarnessInputError(f"--model: {str(exc).splitlines()[-1].strip()}") from None
    plan = SystemPlan.parse(names, defaults=defaults, field="--systems")
    for name, node in plan.nodes.items():
        if node.record.kind == TWO_STAGE:
            raise HarnessInputError(
                f"--systems: {name!r}: two-stage is not available in the known-item study (it reranks chunks of an "
                "ingested corpus's top documents; the study ranks its own chunks in memory)"
            )
    return plan


class RankingScorer:
    """A :class:`~.search.Scorer` over per-query chunk rankings (the per-query face).

    Args:
        rank_block: ``rank_block(start, stop)`` -> one ``(positions, scores)`` pair per query of ``start:stop``:
            int64 chunk positions in ranking order (the query's chunk not among them) and their float scores.
        n_queries, n_chunks: Q, N.
        empty: shape (Q,), bool: queries without any index term.
        fork_safe: whether :func:`~.search.known_item_search` may run it in forked workers.

    The block row of a query is 0 for chunks not ranked and ``n_distinct - j`` (>= 1) for a chunk with the
    ``j``-th distinct score (``j`` from 0, highest first): the ranking's order and its ties, as positive scores.
    """

    dtype = np.dtype(np.float64)

    def __init__(self, rank_block, n_queries: int, n_chunks: int, empty: np.ndarray, *, fork_safe: bool = True):
        self.rank_block, self.n_queries, self.n_chunks = rank_block, int(n_queries), int(n_chunks)
        self._empty, self.fork_safe = np.asarray(empty, dtype=bool), fork_safe

    def empty_queries(self) -> np.ndarray:
        """shape (Q,), bool."""
        return self._empty

    def __call__(self, out: np.ndarray, start: int, stop: int) -> np.ndarray:
        """Scores of queries ``start:stop`` written into ``out[: stop - start]`` (see :class:`~.search.Scorer`)."""
        s = out[: stop - start]
        s.fill(0.0)
        for r, (pos, sc) in enumerate(self.rank_block(start, stop)):
            if pos.size:
                _, level = np.unique(-np.asarray(sc, dtype=np.float64), return_inverse=True)
                s[r, pos] = level.max() + 1 - level
        return s


@dataclass
class _Built:
    scorer: Scorer
    config: dict
    seconds: float


class StudySystems:
    """The systems of one known-item run, each built once (by identity), with their faces.

    Args:
        plan: from :func:`plan_study_systems`.
        inputs: the chunks and queries (:class:`~.scorers.ScorerInputs`); each system's options are the plan's.
        chunk_ids: the N chunk ids of the study.
        query_chunks: shape (Q,), the chunk of each query.
        id_rank: shape (N,), each chunk id's rank in ascending string order (the tie rule).
        depth: chunks each per-query face ranks (>= 1).
        timeout: seconds a ``py:`` retriever may take on one block of queries (``None``: no limit; enforced in the
            main thread only, with ``SIGALRM``).
    """

    def __init__(
        self,
        plan: SystemPlan,
        inputs: ScorerInputs,
        chunk_ids: Sequence[str],
        query_chunks: np.ndarray,
        id_rank: np.ndarray,
        *,
        depth: int = DEFAULT_DEPTH,
        timeout: float | None = None,
    ):
        self.timeout = timeout
        if depth < 1:
            raise HarnessInputError(f"--chunk-depth: {depth} is below 1")
        self.plan, self.inputs, self.depth = plan, inputs, int(depth)
        self.chunk_ids = list(chunk_ids)
        self.query_chunks, self.id_rank = np.asarray(query_chunks), id_rank
        self._pos: dict[str, int] | None = None
        self._built: dict[str, _Built] = {}
        self._corpus = None  # the ingest a kind without a batched face ranks (opened on first use)
        self._workdir: Path | None = None
        self._tmp: tempfile.TemporaryDirectory | None = None

    def key(self, name: str) -> str:
        """The identity of system ``name`` (:meth:`SystemPlan.key`)."""
        return self.plan.key(name)

    def build(self, name: str) -> tuple[Scorer, dict, float]:
        """``(scorer, config, build seconds)`` of system ``name`` (built on first use; inputs built with it).

        Raises:
            HarnessInputError: what the faces' factories raise.
        """
        key = self.key(name)
        if key not in self._built:
            t0 = time.perf_counter()
            node = self.plan.nodes[name]
            rec = node.record
            if rec.kind in FACES:
                scorer, config = FACES[rec.kind](self.inputs, node.options)
            elif node.fusion is not None:
                scorer, config = self._fusion(name)
            elif node.plugin is not None:
                scorer, config = self._plugin(name)
            elif rec.kind in KINDS:  # a base kind without a batched face: the per-query face of its own system
                scorer, config = self._registry_system(name)
            else:  # pragma: no cover - plan_study_systems refuses two-stage, SystemPlan.parse every other kind
                raise HarnessInputError(f"--systems: {name!r}: kind {rec.kind} has no known-item face")
            self._built[key] = _Built(scorer, config, time.perf_counter() - t0)
        b = self._built[key]
        return b.scorer, b.config, b.seconds

    # ---- rankings of the per-query faces ---------------------------------------------------------------------------

    def _path(self) -> str:
        return f"per-query: ranked to {self.depth} chunks (query chunk removed), written as scores in ranking order"

    def _positions(self) -> dict[str, int]:
        if self._pos is None:
            self._pos = {c: i for i, c in enumerate(self.chunk_ids)}
        return self._pos

    def _source(self, name: str) -> Callable[[int, int], list[tuple[np.ndarray, np.ndarray]]]:
        """``rank_block`` of system ``name``: for a batched face, its block's top ``depth`` positive scores (the
        query chunk removed) under the tie rule; for a per-query face, its own rankings."""
        scorer, _config, _s = self.build(name)
        if isinstance(scorer, RankingScorer):
            return scorer.rank_block
        depth, qc, rank = self.depth, self.query_chunks, self.id_rank

        def rank_block(start: int, stop: int) -> list[tuple[np.ndarray, np.ndarray]]:
            s = scorer(np.empty((stop - start, scorer.n_chunks), dtype=scorer.dtype), start, stop)
            s[np.arange(stop - start), qc[start:stop]] = -np.inf
            out = []
            for r in range(stop - start):
                top = top_k_by_score(s[r], rank, depth)
                out.append((top, s[r, top].astype(np.float64)))
            return out

        return rank_block

    def _fusion(self, name: str) -> tuple[RankingScorer, dict]:
        node = self.plan.nodes[name]
        spec, inputs = node.fusion, node.record.inputs
        built = [self.build(i) for i in inputs]
        sources = [self._source(i) for i in inputs]
        scorers = [b[0] for b in built]
        ids, pos, depth = self.chunk_ids, self._positions(), self.depth

        def rank_block(start: int, stop: int) -> list[tuple[np.ndarray, np.ndarray]]:
            per_input = [src(start, stop) for src in sources]
            out = []
            for lists in zip(*per_input, strict=True):
                pairs = [list(zip([ids[p] for p in ps.tolist()], vs.tolist(), strict=True)) for ps, vs in lists]
                fused = spec.fuse(pairs, depth=depth)
                out.append(
                    (
                        np.fromiter((pos[c] for c, _ in fused), dtype=np.int64, count=len(fused)),
                        np.fromiter((v for _, v in fused), dtype=np.float64, count=len(fused)),
                    )
                )
            return out

        empty = np.logical_and.reduce([s.empty_queries() for s in scorers])
        fork_safe = all(getattr(s, "fork_safe", True) for s in scorers)
        config = {
            "system": name,
            **spec.config(),
            "inputs": {i: b[1] for i, b in zip(inputs, built, strict=True)},
            "path": self._path(),
        }
        scorer = RankingScorer(rank_block, len(self.query_chunks), len(ids), empty, fork_safe=fork_safe)
        return scorer, config

    def _plugin(self, name: str) -> tuple[RankingScorer, dict]:
        node = self.plan.nodes[name]
        plugin, where = node.plugin, f"system {name} ({node.record.text})"
        return self._per_query(plugin.obj, where), self._plugin_config(name)

    def _per_query(self, obj, where: str) -> RankingScorer:
        """The per-query face of a retriever object (``obj.search(queries, doc_depth=1, chunk_depth=depth + 1)``,
        its chunk ids the study's), run in the calling process only."""
        queries, qc, pos, depth = list(self.inputs.query_texts), self.query_chunks, self._positions(), self.depth
        ids = self.chunk_ids

        def call(a: int, b: int):
            with time_limit(self.timeout):
                return obj.search(queries[a:b], doc_depth=1, chunk_depth=depth + 1)

        def rank_block(start: int, stop: int) -> list[tuple[np.ndarray, np.ndarray]]:
            def located(a: int, b: int):
                try:
                    return call(a, b)
                except (KeyboardInterrupt, HarnessInputError):
                    raise
                except BaseException as exc:  # noqa: BLE001 - a user's code: one line naming it and the chunk-query
                    raise HarnessInputError(_failure(where, exc, a, b, call, ids, qc)) from exc

            # the plugin contract (stdout to stderr, the folder restored) around the call and its one-query retries
            raw = plugin_call(where, "search", located, start, stop)
            results = check_results(raw, stop - start, 1, depth + 1, where=f"{where}: {_queries(ids, qc, start, stop)}")
            out = []
            for r, res in enumerate(results):
                own = ids[qc[start + r]]
                if res.chunks is None:
                    raise HarnessInputError(
                        f"{where}: chunk-query {own}: returned no chunk ranking; the known-item study ranks chunks "
                        "(return QueryResult.chunks with the study's chunk ids)"
                    )
                kept = []
                for cid, v in res.chunks:
                    if cid == own:
                        continue
                    p = pos.get(cid)
                    if p is None:
                        raise HarnessInputError(
                            f"{where}: chunk-query {own}: returned chunk id {cid!r}, not a chunk of the study (its "
                            f"ids are <doc_id>#<index> under its chunker, e.g. {ids[0]!r})"
                        )
                    kept.append((p, v))
                kept = kept[:depth]
                ps = np.asarray([p for p, _ in kept], dtype=np.int64)
                out.append((ps, np.asarray([v for _, v in kept], dtype=np.float64)))
            return out

        empty = np.zeros(len(qc), dtype=bool)
        return RankingScorer(rank_block, len(qc), len(ids), empty, fork_safe=False)

    def _registry_system(self, name: str) -> tuple[RankingScorer, dict]:
        """A base kind of the registry without a batched face (:data:`FACES`): the kind's own system, opened by
        :data:`harness.retrieve.registry.KINDS` on an ingest of the study's corpus under the study's chunker (the
        same chunk ids), ranked per query like a ``py:`` retriever.

        Raises:
            HarnessInputError: the study's chunks are ``md-words-v1`` windows of another size (no registered
                chunker gives them: use ``--chunk-words 100`` or ``--chunker``), no corpus folder, what the kind's
                factory raises.
        """
        from harness.corpus.chunker import get_chunker
        from harness.corpus.ingest import ingest
        from harness.corpus.store import Corpus
        from harness.retrieve.base import SystemContext

        node = self.plan.nodes[name]
        kind, cid, where = KINDS[node.record.kind], self.inputs.chunker_id, f"system {name} ({node.record.text})"
        try:
            get_chunker(cid)
        except HarnessInputError:
            raise HarnessInputError(
                f"--systems: {name!r}: kind {kind.name} has no batched known-item face, and its per-query face ranks "
                f"an ingest of the corpus, which no registered chunker gives for {cid}; use --chunk-words 100 or "
                "--chunker"
            ) from None
        if self.inputs.corpus_dir is None:
            raise HarnessInputError(f"--systems: {name!r}: kind {kind.name} needs the corpus folder (per-query face)")
        if self._corpus is None:
            workdir = self.inputs.workdir
            if workdir is None:
                self._tmp = tempfile.TemporaryDirectory(prefix="harness-known-item-")
                workdir = Path(self._tmp.name)
            db, _manifest, _created = ingest(
                self.inputs.corpus_dir, workdir, chunker_id=cid, progress=self.inputs.progress, log=lambda _m: None
            )
            self._corpus, self._workdir = Corpus(db, readonly=False), workdir
        obj = kind.open(SystemContext(self._corpus, self._workdir, progress=self.inputs.progress), node.options)
        config = {
            "system": name,
            "kind": kind.name,
            "options": node.options.model_dump(mode="json"),
            "path": self._path() + f"; the registry's {kind.name} system over an ingest of the corpus ({cid})",
        }
        return self._per_query(obj, where), config

    def _plugin_config(self, name: str) -> dict:
        node = self.plan.nodes[name]
        plugin = node.plugin
        config = {
            "system": name,
            "kind": "py",
            "plugin": plugin.record(),
            "config": plugin.config(),
            "path": self._path() + "; one process",
        }
        return config


class PluginTimeout(BaseException):  # noqa: N818 - named for what happened, like KeyboardInterrupt
    """A ``py:`` retriever took longer than the study's timeout on a block of queries.

    A ``BaseException``, like ``KeyboardInterrupt`` (issue 44 item 15): raised inside the plugin's own code (the
    calling thread), where a plugin that retries inside ``except Exception`` would swallow an ordinary exception and
    never stop. :func:`time_limit` also raises it again every :data:`RETRY_S` while the block runs, and once more on
    the way out when the plugin swallowed it and returned, so the block counts as timed out either way. Only code
    that catches ``BaseException`` in a loop forever (which Ctrl-C cannot stop either) escapes an in-process limit.
    """


RETRY_S = 0.1
"""Seconds between further :class:`PluginTimeout` raises after the first, while the plugin has not returned."""


@contextlib.contextmanager
def time_limit(seconds: float | None):
    """Raise :class:`PluginTimeout` in the block after ``seconds`` (``SIGALRM`` in the main thread; no limit when
    ``seconds`` is ``None`` or outside the main thread), again every :data:`RETRY_S` until the block ends, and at its
    end if the block swallowed it.

    Raises:
        PluginTimeout: the block ran past ``seconds``.
    """
    if not seconds or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return
    state = {"armed": True, "fired": False}
    message = f"no answer within {seconds:g} s"

    def _alarm(_sig, _frame):
        if state["armed"]:
            state["fired"] = True
            raise PluginTimeout(message)

    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds, RETRY_S)
    try:
        yield
    finally:
        try:
            state["armed"] = False
        finally:  # an alarm landing on the line above raises once; the next is RETRY_S away, so this part runs
            state["armed"] = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    if state["fired"]:  # the plugin caught the timeout and returned: its answer came too late all the same
        raise PluginTimeout(message)


def _queries(ids: Sequence[str], qc: np.ndarray, start: int, stop: int) -> str:
    first, last = ids[qc[start]], ids[qc[stop - 1]]
    return f"chunk-query {first}" if stop - start == 1 else f"chunk-queries {first} .. {last}"


def _failure(where: str, exc: BaseException, start: int, stop: int, call, ids: Sequence[str], qc: np.ndarray) -> str:
    """One line naming the system and the chunk-query a ``py:`` retriever failed on: a failed block is retried one
    query at a time to find the first that fails (a timeout names the block)."""
    at = _queries(ids, qc, start, stop)
    if not isinstance(exc, PluginTimeout) and stop - start > 1:
        for i in range(start, stop):
            try:
                call(i, i + 1)
            except KeyboardInterrupt:
                raise
            except BaseException as one:  # noqa: BLE001 - the user's code again (a timeout of the retry included)
                exc, at = one, _queries(ids, qc, i, i + 1)
                break
    msg = str(exc).splitlines()[0] if str(exc) else ""
    kind = "timed out" if isinstance(exc, PluginTimeout) else "search failed"
    return f"{where}: {kind} on {at} ({type(exc).__name__}: {msg}); the known-item check cannot score it"
