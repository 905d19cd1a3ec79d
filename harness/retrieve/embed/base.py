"""The embedder seam: the :class:`Embedder` protocol every model adapter implements, and the checks they share.

An embedder turns texts into float32 vectors of one width ``dim``. Passages (chunks) and queries may be embedded
differently (prompts or prefixes); the caches and indexes key its vectors by ``(model_id, weights_sha256)``, so
``weights_sha256`` must change whenever anything that changes a vector changes (weights, tokenizer, prompts, the code
of a numpy or C forward pass).

Adapters (:mod:`harness.retrieve.embed.registry` lists them): ``use`` (:mod:`~harness.retrieve.embed.use`),
``e5-small`` (:mod:`~harness.retrieve.embed.e5`), and sentence-transformers models
(:mod:`~harness.retrieve.embed.st`: ``wordllama``, ``minilm``, local folders and hub ids).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from harness.errors import HarnessInputError

__all__ = ["Embedder", "LoadArgs", "check_texts", "files_sha256", "finish_embeddings"]


@dataclass(frozen=True)
class LoadArgs:
    """How to load a model (picklable: worker processes load the same model from it).

    Attributes:
        model: the name given (registry name, alias, local folder or hub id).
        device: torch device of sentence-transformers models (``"cpu"``, ``"cuda"``); the numpy and C models run on
            the CPU.
        batch_size: texts per forward pass of sentence-transformers models (``None``: 256 static, 32 transformers).
        models_dir: where packaged models are extracted (``None``: ``.harness/models``).
        hub_cache: sentence-transformers ``cache_folder`` for hub ids (``None``: the Hugging Face cache).
        threads: threads per forward pass (``None``: the model's default; 1 for ``use`` and ``e5-small``).
    """

    model: str
    device: str = "cpu"
    batch_size: int | None = None
    models_dir: str | None = None
    hub_cache: str | None = None
    threads: int | None = None


@runtime_checkable
class Embedder(Protocol):
    """What the vector index, the embedding cache, two-stage search and the known-item study need of a model.

    Attributes:
        model_id: stable name of the model (part of every cache key).
        weights_sha256: hex sha256 of everything that determines the vectors (weights, tokenizer, prompts and, for
            models run by their own code, that code); caches and indexes are keyed by it.
        dim: embedding width ``D`` (a multiple of 8 for binary indexes).
        binarize: the model's default binarisation (``"sign"`` or ``"centered"``, :mod:`harness.retrieve.binary`).
        per_text: ``True`` when a text's vector does not depend on the other texts of its call (batch neighbours,
            order, thread count), so an embedding build may be split over processes and resumed with the same bits.
    """

    model_id: str
    weights_sha256: str
    dim: int
    binarize: str
    per_text: bool

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Passage embeddings, ``float32 (len(texts), dim)``, row ``i`` for ``texts[i]``."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query embeddings, ``float32 (len(texts), dim)``."""
        ...

    def config(self) -> dict:
        """Everything that identifies the embedder (for run manifests): id, fingerprint, dim, prefixes or prompts,
        threads (requested and effective), library versions."""
        ...


def check_texts(texts: Sequence[str]) -> list[str]:
    """``texts`` as a list of strings.

    Raises:
        TypeError: ``texts`` is one string (a common slip: it would embed its characters).
        HarnessInputError: an item that is not a string, naming its position.
    """
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of strings, not one string")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise HarnessInputError(f"text {i}: expected a string, got {type(t).__name__}")
    return out


def finish_embeddings(emb, n: int, dim: int, model_id: str) -> np.ndarray:
    """``emb`` as a C-contiguous ``float32 (n, dim)`` array of finite values.

    Raises:
        HarnessInputError: another shape, or NaN / infinite values (naming the model).
    """
    arr = np.ascontiguousarray(np.asarray(emb, dtype=np.float32))
    if arr.shape != (n, dim):
        raise HarnessInputError(f"model {model_id}: expected ({n}, {dim}) embeddings, got {arr.shape}")
    if not np.isfinite(arr).all():
        raise HarnessInputError(f"model {model_id}: NaN or infinite values in the embeddings")
    return arr


def files_sha256(tag: str, files: Sequence[tuple[str, Path]]) -> str:
    """Hex sha256 over ``tag`` and the named files' bytes: ``tag NUL (name NUL sha256(file) NUL)*`` in the order
    given (names are relative, so the hash does not depend on where the package is installed).

    Raises:
        HarnessInputError: a file is missing.
    """
    h = hashlib.sha256(f"{tag}\0".encode())
    for name, path in files:
        p = Path(path)
        if not p.is_file():
            raise HarnessInputError(f"{p}: missing (the model's package is incomplete; reinstall it)")
        fh = hashlib.sha256()
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                fh.update(block)
        h.update(f"{name}\0{fh.hexdigest()}\0".encode())
    return h.hexdigest()
