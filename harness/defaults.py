"""The defaults of a run's cut-offs and ranking depths, declared once: the metrics (which re-export them as
``harness.metrics.DEFAULT_KS``...), the pipeline, the report, the studies, the known-item gate and the command line
read them. A leaf module (it imports nothing), so the CLI reads it without loading the metrics registry."""

__all__ = ["DEFAULT_CHUNK_DEPTH", "DEFAULT_DOC_DEPTH", "DEFAULT_KS"]

DEFAULT_KS: tuple[int, ...] = (1, 5, 10, 20)
"""Cut-offs of the families summarised at the run's ks (recall, all_hop, hit, evidence_recall) by default."""

DEFAULT_DOC_DEPTH = 50
"""Documents ranked per question by default (``harness run --doc-depth``)."""

DEFAULT_CHUNK_DEPTH = 200
"""Chunks ranked per question by default (``harness run --chunk-depth``; the known-item study's per-query depth)."""
