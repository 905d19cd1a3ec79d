"""Paired comparison across chunkers (issue 20, item 4): which metrics two runs under different chunkers share.

Two runs on the same gold set and corpus but under different chunkers (``harness run --chunker``) score the same
questions, so they pair question by question; what differs is the unit of the chunk ranking. Metrics that count
chunks (``evidence_recall@k``, ``evidence_mrr``: :attr:`harness.metrics.MetricFamily.cross_chunker` false) then
measure different things on the two sides; document metrics and evidence recall at a word budget
(``evidence_recall@<B>w``: quoted characters covered in a fixed context) do not. The rules:

* same chunker: the metric list is used as given (or the default list);
* different chunkers, default list: the chunk-count metrics are dropped with one stderr line, and the budget
  metrics (:data:`harness.metrics.METRIC_SETS` ``["budget"]``) are added, the comparison a chunking change needs;
* different chunkers, a chunk-count metric named explicitly: unusable input (:class:`IncomparableError`, exit 2).

Everything else :func:`harness.evaluation.runs.check_comparable` checks (gold-set sha256, corpus hash, depths)
must still agree.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from harness.errors import IncomparableError
from harness.evaluation.runs import RunRecord
from harness.io import stderr_notice
from harness.metrics import METRIC_SETS, MetricSpec

__all__ = ["chunkers_differ", "metrics_across_chunkers"]


def chunkers_differ(a: RunRecord, b: RunRecord) -> bool:
    """Whether the two runs' corpora were chunked by different chunkers (``manifest.corpus.chunker_id``)."""
    return a.manifest.corpus.chunker_id != b.manifest.corpus.chunker_id


def metrics_across_chunkers(
    a: RunRecord,
    b: RunRecord,
    metrics: Sequence[str] | None,
    default: Sequence[str],
    *,
    option: str = "--metrics",
    warn: Callable[[str], None] = stderr_notice,
) -> tuple[str, ...]:
    """The metric ids two runs are compared on (rules in the module docstring).

    Args:
        a, b: the baseline and candidate records.
        metrics: the ids the user named, or ``None`` for the default list.
        default: the default list of the verb (``METRIC_SETS["compare"]``).
        option: the flag named in messages.
        warn: receives the one line saying which metrics were dropped (default: stderr).

    Returns:
        The ids to compare, in order, repeats dropped.

    Raises:
        IncomparableError: the chunkers differ and an explicitly named metric counts chunks (exit 2).
        MetricError: an unknown metric id.
    """
    chosen = list(dict.fromkeys(metrics if metrics is not None else default))
    specs = [MetricSpec.parse(m) for m in chosen]
    if not chunkers_differ(a, b):
        return tuple(chosen)
    ca, cb = a.manifest.corpus.chunker_id, b.manifest.corpus.chunker_id
    counted = [s.id for s in specs if not s.family.cross_chunker]
    if metrics is not None:
        if counted:
            raise IncomparableError(
                f"{option} {counted[0]}: counts chunks, so its values under {ca!r} ({a.path.name}) and {cb!r} "
                f"({b.path.name}) are not comparable; compare evidence_recall@<B>w (e.g. evidence_recall@1000w)"
            )
        return tuple(chosen)
    kept = [s.id for s in specs if s.family.cross_chunker]
    added = [m for m in METRIC_SETS["budget"] if m not in kept]
    warn(
        f"runs use different chunkers ({ca} vs {cb}): not compared: {', '.join(counted) or '-'} (they count chunks); "
        f"compared: {', '.join([*kept, *added])}"
    )
    return tuple([*kept, *added])
