"""A cheap stand-in embedder for DOF-scale measurements of the harness itself: ``hashproj-standin`` (NOT a model).

A chunk's vector is a hashed random projection of its tokens: scikit-learn's ``HashingVectorizer`` (lower-cased
``\\w\\w+`` tokens, MurmurHash3 into 2^18 buckets, raw counts) times a fixed Gaussian matrix ``(2^18, dim)`` drawn
with ``numpy.random.default_rng(0)``; sign bits then give a ``dim``-bit index, as for a real model. Texts that share
words get close vectors, so Hamming search returns lexically related chunks, but the retrieval quality means
nothing: the point is that every harness step (embedding cache, packing, sqlite-vec inserts, slices, Hamming engines,
rescoring, fusion) runs on 6.73 M real-sized vectors at a cost of about 40 us per chunk instead of the hours a real
model takes on 2 cores (the real model's throughput is measured apart, ``benchmarks/bench_dof_ray.py``).

:func:`register` adds it to the embedder registry of the running process only (``--model hashproj-standin``); the
benchmark's child processes call it before running the harness's command line.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

NAME = "hashproj-standin"
N_FEATURES = 1 << 18


class HashProjEmbedder:
    """The stand-in (see the module docstring): ``embed_passages(texts) -> float32 (n, dim)``.

    Args:
        dim: vector width (a multiple of 8; default 256 bits, like the binary indexes of the DOF evaluation).
    """

    binarize = "sign"
    per_text = False  # its vectors are per text, but worker processes would not have the registration: one process

    def __init__(self, dim: int = 256, seed: int = 0):
        from sklearn.feature_extraction.text import HashingVectorizer

        self.dim = int(dim)
        self.seed = int(seed)
        self.model_id = f"{NAME}-{self.dim}"
        self.weights_sha256 = hashlib.sha256(f"{NAME}-v1-{N_FEATURES}-{self.dim}-{self.seed}".encode()).hexdigest()
        self._vec = HashingVectorizer(n_features=N_FEATURES, alternate_sign=False, norm=None, dtype=np.float32)
        self._proj = np.random.default_rng(self.seed).standard_normal((N_FEATURES, self.dim), dtype=np.float32)

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        x = self._vec.transform(list(texts))
        out = np.asarray(x @ self._proj, dtype=np.float32)
        out[np.all(out == 0, axis=1)] = 1e-3  # an empty text: a fixed non-zero vector
        return out

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """``float32 (len(texts), dim)``."""
        return self._embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Same as passages."""
        return self._embed(texts)

    def config(self) -> dict:
        """Identity for run manifests (says plainly that it is a stand-in)."""
        return {
            "model_id": self.model_id,
            "weights_sha256": self.weights_sha256,
            "dim": self.dim,
            "stand_in": "hashed random projection of tokens (benchmarks/dof_standin.py), not a model",
        }


def register(dim: int = 256) -> None:
    """Add ``hashproj-standin`` to :data:`harness.retrieve.embed.registry.EMBEDDERS` in this process."""
    from harness.retrieve.embed import registry

    spec = registry.EmbedderSpec(
        NAME,
        f"{NAME}-{dim}",
        lambda _args: HashProjEmbedder(dim),
        "sign",
        False,  # one process: worker processes would not have this registration
        (),
        "stand-in: hashed random projection of tokens (benchmarks only)",
    )
    registry.EMBEDDERS[NAME] = spec
    registry._ALIASES[NAME] = NAME
