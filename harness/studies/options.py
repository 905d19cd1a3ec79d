"""The studies' options as objects: one declaration per option, shared by every entry point that takes it.

:class:`KnownItemOptions` is what :func:`harness.studies.known_item.run_known_item`,
:func:`~harness.studies.known_item.run_chunk_size_sensitivity` and :func:`~harness.studies.known_item.run_study`
take; :class:`CoverageOptions` what :func:`harness.studies.coverage.run_coverage`,
:func:`~harness.studies.coverage.suite.run_suite` and ``run_study`` take. Each entry point accepts an options object,
keyword fields, or both (the keywords replace the object's fields): ``run_known_item(corpus, out,
KnownItemOptions(systems="bm25,tfidf"), workers=4)``. A new study option is one field here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.defaults import DEFAULT_CHUNK_DEPTH

__all__ = ["CoverageOptions", "KnownItemOptions", "split_fields"]


@dataclass(frozen=True)
class KnownItemOptions:
    """How the known-item study chunks, queries and ranks (rules 1-5 of :mod:`harness.studies.known_item`).

    Attributes:
        chunk_words: ``max_words`` of the ``md-words-v1`` windows (>= 1; 100 is ``harness ingest``'s chunking).
        query_words: words per query (the first N words of each chunk, >= 1).
        min_tail_words: ``min_tail_words`` of the windows (20 in ``md-words-v1``).
        chunker: a registered chunker id used instead of the windows (``md-legal-v1``), or ``None``.
        systems: system names as in ``harness run`` (a sequence or a comma-separated string); the first is system A.
        workers: search worker processes (>= 1).
        batch_size: queries scored per block.
        vector_model: the ``vector`` systems' defaults: a model name, a
            :class:`~harness.retrieve.vector.VectorOptions`, or ``None``.
        workdir: work directory (embedding cache; the ingest a kind without a batched face ranks), or ``None``.
        overwrite: replace an existing output folder.
        progress: show progress bars.
        chunk_depth: chunks each per-query face (fusions, ``py:`` retrievers, kinds without a batched face) ranks.
        sample, design, seed: search only the queries of ``sample`` documents drawn by ``design`` (``pps``: with
            probability proportional to their queries, with replacement; ``srs``) with ``seed`` (``sample=None``: every
            document); the summary's ``sample`` section holds the draws and the estimates
            (:mod:`harness.studies.known_item.sample`: Hansen-Hurwitz for ``pps``).
        cache: with ``workdir``, read and write each system's outcomes in the content-addressed cache
            (:mod:`harness.studies.known_item.cache`); ``False`` searches every system.
        plugin_timeout: seconds a ``py:`` retriever may take on one block of queries (``None``: no limit).
        analyzer: the analyzer of the study's ``bm25`` and ``tfidf`` systems (``--analyzer``: an id, ``neutral`` or an
            ISO 639-1 code); ``None``: the corpus's declared language, else ``es-snowball-fold-v1``
            (:func:`harness.retrieve.analyzer.choose_analyzer`).
    """

    chunk_words: int = 100
    query_words: int = 20
    min_tail_words: int = 20
    chunker: str | None = None
    systems: Sequence[str] | str = ("bm25",)
    workers: int = 2
    batch_size: int = 32
    vector_model: Any = None
    workdir: str | Path | None = None
    overwrite: bool = False
    progress: bool = False
    chunk_depth: int = DEFAULT_CHUNK_DEPTH
    sample: int | None = None
    design: str = "pps"
    seed: int = 0
    cache: bool = True
    plugin_timeout: float | None = None
    analyzer: str | None = None

    @classmethod
    def of(cls, options: KnownItemOptions | None = None, **fields: Any) -> KnownItemOptions:
        """``options`` (default: the defaults) with ``fields`` replaced.

        Raises:
            TypeError: a field this class does not have (a misspelt keyword of an entry point).
        """
        return _of(cls, options, fields)


@dataclass(frozen=True)
class CoverageOptions:
    """How the coverage study samples (:func:`harness.studies.coverage.study.study_design`).

    Attributes:
        reps: R samples per design (>= 10).
        ks: K values of the SRS and PPS designs (documents per sample).
        types, per_type: the two-stage design (``types = 0`` skips it).
        pps: also run the PPS design at every K.
        b: inner bootstrap replicates (>= 39 at level 0.95).
        seed: seed of samples and bootstrap.
        level: confidence level.
        threads: worker threads.
        block_elements: memory bound of one block of samples.
        progress: a progress bar over every design's samples.
        plots: draws the figures into the output folder (``(coverage dict, folder) -> paths``;
            :func:`harness.report.study_plots.coverage_figures`), or ``None``: the study layer draws nothing itself.
    """

    reps: int = 5000
    ks: Sequence[int] = (5, 10, 20, 40, 80)
    types: int = 6
    per_type: int = 4
    pps: bool = True
    b: int = 999
    seed: int = 0
    level: float = 0.95
    threads: int = 2
    block_elements: int = 1 << 21
    progress: bool = False
    plots: Callable[[dict, Path], list[Path]] | None = None

    @classmethod
    def of(cls, options: CoverageOptions | None = None, **fields: Any) -> CoverageOptions:
        """``options`` (default: the defaults) with ``fields`` replaced.

        Raises:
            TypeError: a field this class does not have.
        """
        return _of(cls, options, fields)


def _of(cls, options, fields: Mapping[str, Any]):
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(fields) - names)
    if unknown:
        raise TypeError(f"{cls.__name__} has no field {', '.join(unknown)}")
    return dataclasses.replace(options if options is not None else cls(), **fields)


def split_fields(fields: Mapping[str, Any], *classes: type) -> list[dict[str, Any]]:
    """``fields`` split by the options class whose field each one is (in ``classes`` order).

    Raises:
        TypeError: a key that is no field of any of ``classes``.
    """
    out: list[dict[str, Any]] = [{} for _ in classes]
    for key, value in fields.items():
        for i, cls in enumerate(classes):
            if key in {f.name for f in dataclasses.fields(cls)}:
                out[i][key] = value
                break
        else:
            raise TypeError(f"no option {key!r} (fields of {', '.join(c.__name__ for c in classes)})")
    return out
