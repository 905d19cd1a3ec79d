"""Options of a ``vector`` system (:class:`VectorOptions`) and the default rescoring depth: what a run's names and
flags set, apart from the index they open (:mod:`harness.retrieve.vector.system`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from harness.errors import HarnessInputError
from harness.retrieve.embed import DEFAULT_MODEL, canonical_model, default_binarize
from harness.retrieve.vector.slices import parse_date

__all__ = ["DEFAULT_RESCORE", "VectorOptions"]

DEFAULT_RESCORE = 1
"""Hamming candidates per ranked item re-scored by cosine (``M``): the smallest ``M`` within 0.005 of the best dev-split
MRR on the gold set (``benchmarks/measure_vectors.py``, docs/measurements.md block ``vectors``)."""


class VectorOptions(BaseModel):
    """Options of a ``vector`` system (the CLI's ``--model``, ``--index-fraction``, ``--until``,
    ``--vector-backend`` and ``--binarize`` are the defaults of every ``vector`` system of a run).

    Attributes:
        model: embedding model (:mod:`harness.retrieve.embed.registry`: ``use`` (default), ``e5-small``,
            ``wordllama``, ``minilm``, a local folder or a hub id), stored under its registry name.
        index_fraction: index the shortest chronological prefix of whole documents holding this share of the
            chunks, in (0, 1]; ``None``: the whole corpus.
        until: index the documents dated up to this ISO date (exclusive with ``index_fraction``).
        backend: Hamming search engine, ``sqlite-vec`` (default), ``numpy`` or ``faiss``: identical results.
        binarize: ``sign`` (bit = value > 0) or ``centered`` (bit = value > the slice's mean); when not given, the
            model's default (``centered`` for ``e5-small``, ``sign`` otherwise). A default resolved from the model
            is not "set" (``model_dump(exclude_unset=True)`` leaves it out), so a run's defaults do not carry one
            model's binarisation to another model.
        rescore: ``M``: re-score ``M`` times the ranking depths of Hamming candidates by cosine on the cached float
            vectors (0 <= M <= 64; default :data:`DEFAULT_RESCORE`; 0: Hamming distance alone).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = DEFAULT_MODEL
    index_fraction: float | None = Field(None, gt=0, le=1, allow_inf_nan=False)
    until: str | None = None
    backend: Literal["sqlite-vec", "numpy", "faiss"] = "sqlite-vec"
    binarize: Literal["sign", "centered"] | None = None
    rescore: int = Field(DEFAULT_RESCORE, ge=0, le=64, strict=False)

    @field_validator("model", mode="before")
    @classmethod
    def _model(cls, value: object) -> object:
        return canonical_model(value) if value is None or isinstance(value, str) else value

    @field_validator("binarize", mode="before")
    @classmethod
    def _binarize(cls, value: object) -> object:
        return None if isinstance(value, str) and value.strip().lower() in ("", "none", "default") else value

    @field_validator("index_fraction", "until", mode="before")
    @classmethod
    def _none(cls, value: object) -> object:
        """``""`` or ``"none"`` (as in ``vector:until=none``) clears a slice option the run's defaults set."""
        return None if isinstance(value, str) and value.strip().lower() in ("", "none") else value

    @field_validator("until")
    @classmethod
    def _until(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                parse_date(value, "until")
            except HarnessInputError:
                raise ValueError(f"{value!r} is not an ISO date (YYYY-MM-DD)") from None
        return value

    @model_validator(mode="after")
    def _one_slice(self) -> VectorOptions:
        if self.index_fraction is not None and self.until is not None:
            raise ValueError("index_fraction and until are mutually exclusive; give one")
        if self.binarize is None:  # the model's default; not marked as set
            object.__setattr__(self, "binarize", default_binarize(self.model))
        return self
