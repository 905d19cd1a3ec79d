"""Embedders: the :class:`Embedder` protocol (:mod:`~harness.retrieve.embed.base`), one adapter per model
(:mod:`~harness.retrieve.embed.use`, :mod:`~harness.retrieve.embed.e5`, :mod:`~harness.retrieve.embed.st`), the
registry of names (:mod:`~harness.retrieve.embed.registry`) and sharded builds over worker processes
(:mod:`~harness.retrieve.embed.workers`).
"""

from harness.retrieve.embed.base import Embedder, LoadArgs
from harness.retrieve.embed.registry import (
    DEFAULT_MODEL,
    EMBEDDERS,
    EmbedderSpec,
    canonical_model,
    default_binarize,
    embedder_spec,
    load_embedder,
    load_from_args,
)
from harness.retrieve.embed.st import model_fingerprint

__all__ = [
    "DEFAULT_MODEL",
    "EMBEDDERS",
    "Embedder",
    "EmbedderSpec",
    "LoadArgs",
    "canonical_model",
    "default_binarize",
    "embedder_spec",
    "load_embedder",
    "load_from_args",
    "model_fingerprint",
]
