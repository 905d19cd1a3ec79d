"""Rerankers for the second stage of two-stage search: a sentence-transformers ``CrossEncoder`` or a user's own
object, given as a spec (``py:MODULE:ATTR`` or ``cross-encoder:<model name or folder>``), with their provenance.

A reranker scores ``(query, passage)`` pairs (:class:`harness.retrieve.base.Reranker`); two-stage search re-orders its
top fused chunks by those scores (Nogueira & Cho 2019, "Passage Re-ranking with BERT").
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from harness.errors import HarnessInputError
from harness.retrieve.base import Reranker
from harness.retrieve.embed.st import model_fingerprint
from harness.retrieve.plugin import load_plugin

__all__ = ["RERANKER_PREFIXES", "CrossEncoderReranker", "load_cross_encoder", "load_reranker"]


class CrossEncoderReranker:
    """A sentence-transformers ``CrossEncoder`` behind the :class:`Reranker` seam, with its provenance.

    Args:
        model: a loaded ``sentence_transformers.CrossEncoder``.
        model_id: the name or path it was loaded from (recorded in the run manifest).
        batch_size: pairs per forward pass.

    Attributes:
        fingerprint: hex sha256 of the loaded weights, configs and tokenizer
            (:func:`harness.retrieve.embed.st.model_fingerprint`), or ``None`` when it cannot be computed.
    """

    def __init__(self, model, model_id: str, *, batch_size: int = 32):
        self.model = model
        self.model_id = str(model_id)
        self.batch_size = int(batch_size)
        self.fingerprint: str | None
        try:
            self.fingerprint = model_fingerprint(model)
        except Exception:  # noqa: BLE001 - provenance is best effort; the model id is still recorded
            self.fingerprint = None

    def predict(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Cross-encoder scores ``float (len(pairs),)`` (the model's own activation, e.g. sigmoid for 1 label).

        Raises:
            HarnessInputError: a NaN or infinite score.
        """
        if not pairs:
            return np.zeros(0, dtype=np.float64)
        out = self.model.predict(
            [(q, p) for q, p in pairs], batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True
        )
        scores = np.asarray(out, dtype=np.float64).reshape(len(pairs), -1)
        if scores.shape[1] != 1:
            raise HarnessInputError(f"reranker {self.model_id}: {scores.shape[1]} labels per pair; expected 1")
        scores = scores[:, 0]
        if not np.isfinite(scores).all():
            raise HarnessInputError(f"reranker {self.model_id}: NaN or infinite score")
        return scores

    def config(self) -> dict:
        """Model id, weights fingerprint, max length, batch size (for the run manifest)."""
        return {
            "library": "sentence-transformers CrossEncoder",
            "model_id": self.model_id,
            "fingerprint": self.fingerprint,
            "max_length": getattr(self.model, "max_seq_length", None),
            "batch_size": self.batch_size,
        }


def load_cross_encoder(
    name_or_path: str | Path, *, device: str = "cpu", max_length: int | None = None, batch_size: int = 32
) -> CrossEncoderReranker:
    """Load a sentence-transformers ``CrossEncoder`` (a local folder or a hub name) as a :class:`Reranker`.

    Args:
        name_or_path: model folder (``save_pretrained`` layout) or hub id; set ``HF_HUB_OFFLINE=1`` to forbid
            downloads.
        device: torch device (``"cpu"``).
        max_length: truncation length of the pair (``None``: the model's).
        batch_size: pairs per forward pass.

    Raises:
        HarnessInputError: the model cannot be loaded (one line naming the path and the cause).
    """
    try:
        from sentence_transformers import CrossEncoder

        model = CrossEncoder(str(name_or_path), device=device, max_length=max_length)
    except Exception as exc:  # noqa: BLE001 - any loader failure is unusable input
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise HarnessInputError(f"reranker {name_or_path}: cannot load a CrossEncoder ({msg})") from None
    return CrossEncoderReranker(model, str(name_or_path), batch_size=batch_size)


RERANKER_PREFIXES = ("py:", "cross-encoder:")


def load_reranker(spec: str, *, field: str = "two-stage reranker") -> tuple[Reranker, dict]:
    """A reranker from its spec, with its provenance for the run manifest.

    Specs:

    * ``py:MODULE:ATTR``: an object with ``predict(pairs) -> scores`` (or a class / zero-argument factory making
      one), loaded by :func:`harness.retrieve.plugin.load_plugin`;
    * ``cross-encoder:NAME_OR_PATH``: a sentence-transformers ``CrossEncoder`` (:func:`load_cross_encoder`).

    Returns:
        ``(reranker, provenance)``: provenance is the plugin's :meth:`~harness.retrieve.plugin.Plugin.record` or
        ``{"spec", "cross_encoder"}``.

    Raises:
        HarnessInputError: an unknown prefix, or what the loaders raise.
    """
    text = spec.strip()
    if text.startswith("py:"):
        plugin = load_plugin(text, field=field, protocol=("predict",))
        return plugin.obj, plugin.record()  # type: ignore[return-value]
    if text.startswith("cross-encoder:") and text[len("cross-encoder:") :].strip():
        name = text[len("cross-encoder:") :].strip()
        return load_cross_encoder(name), {"spec": text, "cross_encoder": name}
    raise HarnessInputError(f"{field}: {spec!r} is not py:MODULE:ATTR or cross-encoder:<model name or folder>")
