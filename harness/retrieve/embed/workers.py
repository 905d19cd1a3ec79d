"""Embedding over worker processes, one thread each: how a build uses every core without touching the process's own
thread settings.

:func:`passage_embedder` returns what a build embeds passages with: the embedder itself, or a :class:`ShardedEmbedder`
that cuts each call into shards of :data:`SHARD_TEXTS` texts and hands them to ``workers`` processes (``spawn``
start method: a fresh interpreter, so no thread pool, OpenMP runtime or BLAS setting of the parent is inherited).
Each worker loads the same model from its :class:`~harness.retrieve.embed.base.LoadArgs` with ``threads=1`` and
refuses to run if its fingerprint differs from the parent's. Rows come back in input order.

Sharding is used only for models whose vectors do not depend on their batch (``per_text``: ``use``, ``e5-small``,
``wordllama``), so a sharded build gives the same bits as a single-process one, and only when there is enough work
(at least ``2 * SHARD_TEXTS`` texts to embed): starting a worker costs about a second.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace

import numpy as np

from harness.errors import HarnessInputError
from harness.retrieve.embed.base import LoadArgs, check_texts

__all__ = ["SHARD_TEXTS", "ShardedEmbedder", "available_cores", "passage_embedder"]

SHARD_TEXTS = 32
"""Texts per task sent to a worker."""

_WORKER = None  # the worker process's embedder


def available_cores() -> int:
    """CPUs this process may run on (``os.sched_getaffinity``; ``os.cpu_count()`` where that does not exist)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


PARENT_POLL_S = 0.5
"""How often a worker checks that the process that started it is alive (seconds)."""


def _exit_with_parent(parent_pid: int) -> None:
    """Exit this worker as soon as its parent is gone: a killed build (SIGKILL, OOM) leaves no orphan workers
    blocked on their task queue (the pool's own shutdown never runs then). Runs in a daemon thread."""
    while True:
        time.sleep(PARENT_POLL_S)
        if os.getppid() != parent_pid:
            os._exit(1)


def _init_worker(args: LoadArgs, weights_sha256: str, parent_pid: int | None = None) -> None:
    global _WORKER
    from harness.retrieve.embed.registry import load_from_args

    if parent_pid is not None:
        threading.Thread(target=_exit_with_parent, args=(parent_pid,), daemon=True).start()

    emb = load_from_args(args)
    if emb.weights_sha256 != weights_sha256:
        raise RuntimeError(
            f"worker pid {os.getpid()}: model {args.model} has weights {emb.weights_sha256[:12]}, "
            f"the parent {weights_sha256[:12]}"
        )
    _WORKER = emb


def _embed_shard(texts: list[str]) -> tuple[np.ndarray, int]:
    return np.asarray(_WORKER.embed_passages(texts), dtype=np.float32), os.getpid()


class ShardedEmbedder:
    """An embedder's passage side spread over worker processes (see the module docstring).

    Args:
        embedder: the parent's embedder (``load_args``, ``model_id``, ``weights_sha256``, ``dim``).
        workers: worker processes (>= 2).

    Attributes:
        model_id, weights_sha256, dim, binarize, per_text: the embedder's.
        worker_pids: pids of the workers that embedded something.
        workers: the number of worker processes.
    """

    def __init__(self, embedder, workers: int):
        args = getattr(embedder, "load_args", None)
        if args is None:
            raise HarnessInputError(f"model {embedder.model_id}: cannot be loaded in a worker (no load arguments)")
        self.embedder = embedder
        self.model_id, self.weights_sha256, self.dim = embedder.model_id, embedder.weights_sha256, int(embedder.dim)
        self.binarize, self.per_text = embedder.binarize, embedder.per_text
        self.workers = int(workers)
        self.worker_pids: set[int] = set()
        self._pool = ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=mp.get_context("spawn"),
            initializer=_init_worker,
            initargs=(replace(args, threads=1), embedder.weights_sha256, os.getpid()),
        )

    def embed_passages(self, texts: Sequence[str], progress: Callable[[int], None] | None = None) -> np.ndarray:
        """Passage embeddings ``float32 (len(texts), dim)`` in input order; ``progress(n)`` after each shard.

        Raises:
            HarnessInputError: a worker failed (its error in one line).
        """
        texts = check_texts(texts)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        starts = range(0, len(texts), SHARD_TEXTS)
        futures = [(s, self._pool.submit(_embed_shard, texts[s : s + SHARD_TEXTS])) for s in starts]
        try:
            for s, fut in futures:
                vecs, pid = fut.result()
                out[s : s + vecs.shape[0]] = vecs
                self.worker_pids.add(pid)
                if progress is not None:
                    progress(vecs.shape[0])
        except Exception as exc:  # noqa: BLE001 - a worker's failure, reported as one line
            for _, fut in futures:
                fut.cancel()
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise HarnessInputError(
                f"model {self.model_id}: embedding worker failed ({type(exc).__name__}: {first})"
            ) from None
        return out

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Queries are embedded in the parent (few, and short)."""
        return self.embedder.embed_queries(texts)

    def config(self) -> dict:
        """The embedder's config."""
        return self.embedder.config()

    def close(self) -> None:
        """Stop the workers."""
        self._pool.shutdown(wait=True, cancel_futures=True)


@contextlib.contextmanager
def passage_embedder(embedder, n_texts: int, workers: int | None = None) -> Iterator[object]:
    """What a build embeds ``n_texts`` passages with (see the module docstring).

    Args:
        embedder: the loaded embedder.
        n_texts: texts the build will embed (known up front from the cache).
        workers: worker processes; ``None``: one per available core when the model is ``per_text`` and
            ``n_texts >= 2 * SHARD_TEXTS``; ``1``: in this process; ``>= 2``: that many (``per_text`` models only,
            otherwise in this process).

    Yields:
        ``embedder`` itself, or a :class:`ShardedEmbedder` (closed on exit).

    Raises:
        HarnessInputError: ``workers < 1``.
    """
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise HarnessInputError(f"--workers must be an int >= 1, got {workers!r}")
    n = available_cores() if workers is None else workers
    if workers is None and n_texts < 2 * SHARD_TEXTS:
        n = 1
    n = min(n, max(1, -(-n_texts // SHARD_TEXTS)))
    if n < 2 or not getattr(embedder, "per_text", False) or getattr(embedder, "load_args", None) is None:
        yield embedder
        return
    pool = ShardedEmbedder(embedder, n)
    try:
        yield pool
    finally:
        pool.close()
