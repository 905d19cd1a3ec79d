"""Fusion-weight sweep on the dev split, reported on the test split (``harness sweep --run RUN --w 0:1:0.05``).

For every weight ``w`` of a grid, the ``bm25`` and ``vector`` rankings stored in a run record are fused with
:func:`harness.retrieve.fusion.weighted_fusion` (``w * minmax(bm25) + (1 - w) * minmax(vector)``; CombSUM, Fox &
Shaw 1994; min-max, Lee 1997), each list cut at the run's recorded depth, at the level the metric reads (documents
for ``mrr``, ``recall@k``...; chunks for ``evidence_*``). The metric is recomputed per question with
:func:`harness.metrics.question_metrics` against the run's gold set, with the run's depths and corpus sizes (so it
agrees with the run's own ``w<float>`` systems), and averaged over the questions of a split: over **every** question
of that split, a question without rankings scoring 0 (and counted).

Selection (dev only): the weight with the highest dev mean; ties (equal within 1e-12) go to the weight closest to
0.5, then to the smallest weight. Only the chosen weight is scored on the test split, with a CR2 cluster-robust
interval (clusters recorded in the run; :func:`harness.stats.cr2`). The dev optimum is optimistic: it is the
maximum over every weight tried, so its dev mean is biased upwards; the test mean is the honest estimate.

Refusals (:class:`harness.errors.HarnessInputError`, exit 2): a gold set without a dev or a test split, a run without
``bm25`` and ``vector`` rankings, a gold set that changed since the run (sha256), an empty or malformed grid.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import HarnessInputError
from harness.evaluation.runs import RunRecord, load_run
from harness.goldset.io import GoldSet, load_goldset
from harness.levels import LEVELS, parse_level
from harness.metrics import MetricSpec, question_metrics
from harness.retrieve.fusion import weighted_fusion
from harness.stats import cr2

__all__ = ["SweepResult", "choose_weight", "parse_weight_grid", "sweep"]

TIE_TOLERANCE = 1e-12
"""Dev means closer than this are a tie."""

OPTIMISM_NOTE = (
    "the dev value is the best of {n} weights tried on dev, so it is optimistic (selection bias); "
    "the test value, computed once for the chosen weight, is the estimate to report"
)


def parse_weight_grid(text: str | Sequence[float]) -> list[float]:
    """Parse a weight grid.

    Args:
        text: ``"start:stop:step"`` (inclusive of ``stop`` when it falls on the grid, e.g. ``0:1:0.05`` gives 21
            weights), a comma list ``"0.25,0.5,0.75"``, a single weight, or a sequence of numbers.

    Returns:
        Distinct weights in [0, 1], ascending, each rounded to 10 decimals (so ``0.1 + 0.2`` is ``0.3``).

    Raises:
        HarnessInputError: malformed text, a step <= 0, start > stop, a weight outside [0, 1], an empty grid,
            more than 100,001 weights.
    """
    where = f"--w {text!r}"
    if isinstance(text, str):
        parts = text.strip().split(":")
        try:
            if len(parts) == 3:
                start, stop, step = (float(p) for p in parts)
                if not all(math.isfinite(v) for v in (start, stop, step)) or step <= 0 or start > stop:
                    raise HarnessInputError(f"{where}: need start <= stop and step > 0 (e.g. 0:1:0.05)")
                n = math.floor((stop - start) / step + 1e-9) + 1
                if n > 100_001:
                    raise HarnessInputError(f"{where}: {n} weights; at most 100001")
                values = [start + i * step for i in range(n)]
            elif len(parts) == 1:
                values = [float(p) for p in parts[0].split(",") if p.strip()]
            else:
                raise ValueError
        except ValueError:
            raise HarnessInputError(f"{where}: expected start:stop:step or a comma list of weights") from None
    else:
        values = [float(v) for v in text]
    out = sorted({round(v, 10) + 0.0 for v in values})
    if not out:
        raise HarnessInputError(f"{where}: no weight")
    bad = [v for v in out if not (0.0 <= v <= 1.0)]
    if bad:
        raise HarnessInputError(f"{where}: weight {bad[0]!r} outside [0, 1]")
    return out


def choose_weight(weights: Sequence[float], values: Sequence[float]) -> float:
    """The weight with the highest value; ties (within 1e-12) go to the one closest to 0.5, then the smallest.

    Args:
        weights: candidate weights.
        values: the dev mean of each weight (same length).

    Raises:
        ValueError: empty input or lengths differ.
    """
    if not weights or len(weights) != len(values):
        raise ValueError(f"choose_weight: {len(weights)} weights, {len(values)} values")
    best = max(values)
    tied = [w for w, v in zip(weights, values, strict=True) if v >= best - TIE_TOLERANCE]
    return min(tied, key=lambda w: (abs(w - 0.5), w))


@dataclass
class SweepResult:
    """The outcome of a sweep.

    Attributes:
        run_id, run_path: the run record swept.
        goldset: ``{"name", "version", "sha256", "path"}``.
        metric: metric id (``mrr``...); level: ``"document"`` or ``"chunk"``; depth: the recorded cut of each input
            list at that level.
        weights: the weights tried (BM25 weight ``w``); dev_means: the dev mean of each.
        chosen_weight, dev_best: the selected weight and its (optimistic) dev mean.
        test_mean: the chosen weight's mean over the test split; test_interval: its CR2 interval
            (``Interval.to_dict()``), ``None`` with fewer than 2 clusters.
        n_dev, n_test: questions per split; n_unsplit: questions without a split (used for neither).
        missing: ``{"dev": n, "test": n}`` questions without any bm25/vector ranking at that level (scored 0).
        test_per_question: ``{qid: value}`` of the chosen weight on test.
        tie_rule, note: the selection rule and the optimism note, in words.
    """

    run_id: str
    run_path: str
    goldset: dict
    metric: str
    level: str
    depth: int
    weights: list[float]
    dev_means: list[float]
    chosen_weight: float
    dev_best: float
    test_mean: float
    test_interval: dict | None
    n_dev: int
    n_test: int
    n_unsplit: int
    missing: dict[str, int]
    test_per_question: dict[str, float] = field(default_factory=dict)
    tie_rule: str = "highest dev mean; ties (1e-12) -> closest to 0.5, then smallest"
    note: str = ""

    @property
    def n_weights(self) -> int:
        """Number of weights tried."""
        return len(self.weights)

    def to_dict(self) -> dict:
        """A JSON-ready dict (copies)."""
        return {
            "kind": "sweep",
            "run_id": self.run_id,
            "run_path": self.run_path,
            "goldset": dict(self.goldset),
            "metric": self.metric,
            "level": self.level,
            "depth": self.depth,
            "fusion": "w*minmax(bm25) + (1-w)*minmax(vector), each list cut at depth [CombSUM; min-max]",
            "n_weights": self.n_weights,
            "dev_curve": [{"w": w, "dev_mean": v} for w, v in zip(self.weights, self.dev_means, strict=True)],
            "chosen_weight": self.chosen_weight,
            "dev_best": self.dev_best,
            "test_mean": self.test_mean,
            "test_interval": None if self.test_interval is None else dict(self.test_interval),
            "n_dev": self.n_dev,
            "n_test": self.n_test,
            "n_unsplit": self.n_unsplit,
            "missing": dict(self.missing),
            "test_per_question": dict(self.test_per_question),
            "tie_rule": self.tie_rule,
            "note": self.note,
        }


def _find_goldset(run: RunRecord, goldset_path: str | Path | None) -> GoldSet:
    info = run.manifest.goldset
    if goldset_path is None:
        recorded = info.path
        if not recorded:
            raise HarnessInputError(f"{run.path / 'manifest.json'}: field goldset.path: missing")
        cands = [Path(recorded)]
        if not cands[0].is_absolute():
            cands += [run.path.parent.parent / recorded, run.path / recorded]
        found = next((c for c in cands if c.exists()), None)
        if found is None:
            raise HarnessInputError(
                f"{run.path / 'manifest.json'}: field goldset.path: {recorded} not found (give the gold set path)"
            )
        goldset_path = found
    gs = load_goldset(goldset_path)
    want = info.sha256
    if want and gs.sha256 != want:
        raise HarnessInputError(
            f"{gs.records_path}: sha256 {gs.sha256[:12]} differs from the run's gold set {str(want)[:12]} "
            f"({run.path / 'manifest.json'}: field goldset.sha256)"
        )
    return gs


def sweep(
    run_path: str | Path,
    weights: str | Sequence[float],
    metric: str = "mrr",
    level: str | None = None,
    *,
    goldset_path: str | Path | None = None,
) -> SweepResult:
    """Sweep the BM25 weight of weighted min-max fusion on dev; score the chosen weight on test.

    Args:
        run_path: a run record folder holding the ``bm25`` and ``vector`` systems.
        weights: a grid (see :func:`parse_weight_grid`): ``"0:1:0.05"`` or a sequence of weights in [0, 1].
        metric: any metric id of :mod:`harness.metrics` (``mrr``, ``recall@10``, ``evidence_recall@20``...).
        level: ``"document"`` or ``"chunk"``; ``None`` (default) takes the metric's level. A level that disagrees
            with the metric is refused.
        goldset_path: the gold set (default: ``manifest["goldset"]["path"]``, tried as given, then relative to the
            folder above ``runs/``); its sha256 must equal the run's.

    Returns:
        A :class:`SweepResult` (dev curve, chosen weight, test mean and CR2 interval, counts, notes).

    Raises:
        HarnessInputError: no dev or no test questions (a gold set without a split); the run lacks ``bm25`` or
            ``vector``; unknown metric; bad grid or level; gold set missing or changed.
    """
    grid = parse_weight_grid(weights)
    spec = MetricSpec.parse(metric)
    metric_level = parse_level(spec.level)
    if level is not None and level not in LEVELS:
        raise HarnessInputError(f"level {level!r}: expected 'document' or 'chunk'")
    if level is not None and level != metric_level:
        raise HarnessInputError(f"metric {spec.id} reads the {metric_level} ranking; level {level!r} given")
    level = metric_level
    run = load_run(run_path)
    gs = _find_goldset(run, goldset_path)

    dev = [r for r in gs.records if r.split == "dev"]
    test = [r for r in gs.records if r.split == "test"]
    n_unsplit = len(gs.records) - len(dev) - len(test)
    if not dev or not test:
        raise HarnessInputError(
            f"{gs.records_path}: field split: the gold set has {len(dev)} dev and {len(test)} test questions "
            f"({n_unsplit} without a split); a sweep needs both (choose on dev, report on test)"
        )
    lists: dict[str, dict[str, list]] = {"bm25": {}, "vector": {}}
    for row in run.per_question:
        if row.system in lists:
            lists[row.system][row.qid] = list(row.rankings.at(level))
    for name, got in lists.items():
        if not got:
            raise HarnessInputError(
                f"{run.path / 'per_question.jsonl'}: system {name!r} not in run (has {', '.join(run.systems)}); "
                "a sweep fuses the bm25 and vector rankings"
            )
    doc_depth, chunk_depth = run.manifest.depths.document, run.manifest.depths.chunk
    depth = doc_depth if level == "document" else chunk_depth
    corpus = run.manifest.corpus

    def value(rec, w: float) -> float:
        b, v = lists["bm25"].get(rec.qid, []), lists["vector"].get(rec.qid, [])
        fused = weighted_fusion(b, v, w, depth=depth)
        qr = question_metrics(
            rec,
            fused if level == "document" else None,
            fused if level == "chunk" else None,
            doc_depth=doc_depth,
            chunk_depth=chunk_depth,
            metrics=[spec],
            n_docs_in_corpus=corpus.n_documents,
            n_chunks_in_corpus=corpus.n_chunks,
        )
        return qr.metrics[spec.id]

    def mean(values: list[float]) -> float:
        return math.fsum(values) / len(values)

    dev_means = [mean([value(r, w) for r in dev]) for w in grid]
    chosen = choose_weight(grid, dev_means)
    dev_best = dev_means[grid.index(chosen)]
    test_vals = {r.qid: value(r, chosen) for r in test}
    test_mean = mean(list(test_vals.values()))

    labels = run.clusters()
    clusters = [labels.get(q, f"q:{q}") for q in test_vals]
    interval = None
    if len(set(clusters)) >= 2:
        interval = cr2(list(test_vals.values()), clusters, level=run.manifest.level).to_dict()

    def n_missing(recs) -> int:
        return sum(1 for r in recs if r.qid not in lists["bm25"] and r.qid not in lists["vector"])

    return SweepResult(
        run_id=run.run_id,
        run_path=str(run.path),
        goldset={"name": gs.name, "version": gs.version, "sha256": gs.sha256, "path": str(gs.records_path)},
        metric=spec.id,
        level=level,
        depth=depth,
        weights=grid,
        dev_means=dev_means,
        chosen_weight=chosen,
        dev_best=dev_best,
        test_mean=test_mean,
        test_interval=interval,
        n_dev=len(dev),
        n_test=len(test),
        n_unsplit=n_unsplit,
        missing={"dev": n_missing(dev), "test": n_missing(test)},
        test_per_question=test_vals,
        note=OPTIMISM_NOTE.format(n=len(grid)),
    )
