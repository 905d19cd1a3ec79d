"""Fusion sweep on the dev split, reported on the test split beside the fusion's inputs alone (``harness sweep``).

For every setting of a grid, the rankings of two (or more) systems stored in a run record (``--inputs``, default
``bm25,vector``) are fused with a method of the fusion registry (:data:`harness.retrieve.fusion.FUSIONS`):

* ``wsum`` - ``w * minmax(A) + (1 - w) * minmax(B)`` over a grid of ``w`` in [0, 1] (CombSUM, Fox & Shaw 1994;
  min-max, Lee 1997); exactly two inputs;
* ``rrf`` - ``sum_i 1 / (k + rank_i)`` over a grid of ``k >= 0`` (Cormack, Clarke & Buettcher 2009);
* ``mnz`` - CombMNZ, no parameter (a single setting, still reported beside its inputs).

Each input list is cut at the run's recorded depth, at the level the metric reads (documents for ``mrr``,
``recall@k``...; chunks for ``evidence_*``). The metric is recomputed per question with
:func:`harness.metrics.question_metrics` against the run's gold set, with the run's depths and corpus sizes (so it
agrees with the run's own fusion systems and, for an input alone, with its recorded values), and averaged over
**every** question of a split, a question without rankings scoring 0 (and counted).

Selection (dev only): the setting with the highest dev mean; ties (equal within 1e-12) go to the value closest to the
parameter's centre (``w``: 0.5; ``k``: 60, the usual RRF constant), then to the smallest. On the test split the
chosen setting is scored once and shown **beside each of its inputs alone**, with the paired difference chosen -
input per question and its interval (the coverage rule's default for the test split's design, :func:`split_intervals`;
clusters recorded in the run), so a fusion that is worse than not fusing is visible. The dev optimum is optimistic
(the best of every setting tried); the test values are the honest estimates.

Refusals (:class:`harness.errors.HarnessInputError`, exit 2): a gold set without a dev or a test split, an input
that is not in the run, a wrong number of inputs, an unknown fusion method, a gold set that changed since the run
(sha256), an empty or malformed grid or one outside the parameter's range.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from pydantic import ValidationError

from harness.errors import HarnessInputError
from harness.evaluation.bounds import interval_flags
from harness.evaluation.runs import RunRecord, load_run
from harness.goldset.io import GoldSet, load_goldset
from harness.levels import LEVELS, parse_level
from harness.metrics import MetricSpec, question_metrics
from harness.retrieve.fusion import FUSIONS, FusionSpec
from harness.retrieve.fusion.rrf import MAX_K
from harness.stats import default_method, paired
from harness.stats.design_evidence import RunDesign, run_design
from harness.stats.methods import get as get_method
from harness.stats.methods import outcome_type
from harness.stats.shown import ShownIntervals

__all__ = ["PARAMETERS", "SweepResult", "SplitRow", "choose", "parse_grid", "sweep"]

TIE_TOLERANCE = 1e-12
"""Dev means closer than this are a tie."""

PARAMETERS: dict[str, dict] = {
    "w": {"default": "0:1:0.05", "centre": 0.5, "low": 0.0, "high": 1.0, "option": "--w"},
    "k": {"default": "5:100:5", "centre": 60.0, "low": 0.0, "high": MAX_K, "option": "--k"},
}
"""The sweepable fusion parameters: default grid, tie centre, range, command-line option."""

OPTIMISM_NOTE = (
    "the dev value is the best of {n} settings tried on dev, so it is optimistic (selection bias); the test values, "
    "computed once for the chosen setting and for each input alone, are the estimates to report"
)


def parse_grid(text: str | Sequence[float], param: str = "w") -> list[float]:
    """Parse a grid of one fusion parameter (:data:`PARAMETERS`).

    Args:
        text: ``"start:stop:step"`` (inclusive of ``stop`` when it falls on the grid, e.g. ``0:1:0.05`` gives 21
            values), a comma list ``"0.25,0.5,0.75"``, a single value, or a sequence of numbers.
        param: ``"w"`` (values in [0, 1]) or ``"k"`` (values >= 0, finite).

    Returns:
        Distinct values, ascending, each rounded to 10 decimals (so ``0.1 + 0.2`` is ``0.3``).

    Raises:
        HarnessInputError: malformed text, a step <= 0, start > stop, a value outside the range, an empty grid,
            more than 100,001 values (naming the option, e.g. ``--w '0:2:0.5'``).
    """
    spec = PARAMETERS[param]
    where = f"{spec['option']} {text!r}"
    if isinstance(text, str):
        parts = text.strip().split(":")
        try:
            if len(parts) == 3:
                start, stop, step = (float(p) for p in parts)
                if not all(math.isfinite(v) for v in (start, stop, step)) or step <= 0 or start > stop:
                    raise HarnessInputError(f"{where}: need start <= stop and step > 0 (e.g. {spec['default']})")
                n = math.floor((stop - start) / step + 1e-9) + 1
                if n > 100_001:
                    raise HarnessInputError(f"{where}: {n} values; at most 100001")
                values = [start + i * step for i in range(n)]
            elif len(parts) == 1:
                values = [float(p) for p in parts[0].split(",") if p.strip()]
            else:
                raise ValueError
        except ValueError:
            raise HarnessInputError(f"{where}: expected start:stop:step or a comma list of values") from None
    else:
        values = [float(v) for v in text]
    out = sorted({round(v, 10) + 0.0 for v in values})
    if not out:
        raise HarnessInputError(f"{where}: no value")
    bad = [v for v in out if not (spec["low"] <= v <= spec["high"] and math.isfinite(v))]
    if bad:
        raise HarnessInputError(f"{where}: value {bad[0]!r} outside [{spec['low']:g}, {spec['high']:g}]")
    return out


def choose(values: Sequence[float], means: Sequence[float], centre: float = 0.5) -> float:
    """The value with the highest mean; ties (within 1e-12) go to the one closest to ``centre``, then the smallest.

    Raises:
        ValueError: empty input or lengths differ.
    """
    if not values or len(values) != len(means):
        raise ValueError(f"choose: {len(values)} values, {len(means)} means")
    best = max(means)
    tied = [v for v, m in zip(values, means, strict=True) if m >= best - TIE_TOLERANCE]
    return min(tied, key=lambda v: (abs(v - centre), v))


@dataclass
class SplitRow:
    """One system on the test split: the chosen setting or one of its inputs alone.

    Attributes:
        system: its name (``w0.75``, ``bm25``); role: ``"chosen"`` or ``"input"``.
        mean: the test mean (0-1); interval: its interval (:meth:`harness.stats.Interval.to_dict`, the registry's
            default for the outcome type), ``None`` with fewer than 2 clusters.
        diff: chosen - this system (mean paired difference; ``None`` for the chosen row); paired_interval: its
            interval (the test split design's paired default, :func:`split_intervals`),
            ``None`` for the chosen row or with < 2 clusters.
        per_question: ``{qid: value}``.
    """

    system: str
    role: str
    mean: float
    interval: dict | None
    diff: float | None = None
    paired_interval: dict | None = None
    per_question: dict[str, float] = field(default_factory=dict)


@dataclass
class SweepResult:
    """The outcome of a sweep.

    Attributes:
        run_id, run_path: the run record swept.
        goldset: ``{"name", "version", "sha256", "path"}``.
        metric: metric id (``mrr``...); level: ``"document"`` or ``"chunk"``; depth: the recorded cut of each input
            list at that level.
        fusion: the fusion method id (``wsum``, ``rrf``, ``mnz``); inputs: the systems fused; param: the parameter
            swept (``w``, ``k``; ``None`` for a method without one); formula: the chosen setting's formula.
        grid: the values tried (empty without a parameter); dev_means: the dev mean of each setting.
        chosen_value, chosen_system, dev_best: the selected value, its system name and its (optimistic) dev mean.
        dev_inputs: ``{input: dev mean}`` of each input alone (not selected, so not optimistic).
        test: :class:`SplitRow` of the chosen setting, then of each input alone.
        n_dev, n_test, n_unsplit: questions per split (unsplit questions are used for neither).
        missing: ``{"dev": n, "test": n}`` questions without any input ranking at that level (scored 0).
        method, paired_method, interval_level: the interval methods used and their level.
        tie_rule, note: the selection rule and the optimism note, in words; warnings: few-cluster warnings.
    """

    run_id: str
    run_path: str
    goldset: dict
    metric: str
    level: str
    depth: int
    fusion: str
    inputs: list[str]
    param: str | None
    formula: str
    grid: list[float]
    dev_means: list[float]
    chosen_value: float | None
    chosen_system: str
    dev_best: float
    dev_inputs: dict[str, float]
    test: list[SplitRow]
    n_dev: int
    n_test: int
    n_unsplit: int
    missing: dict[str, int]
    method: str
    paired_method: str
    interval_level: float
    tie_rule: str = ""
    note: str = ""
    warnings: list[str] = field(default_factory=list)

    @property
    def n_settings(self) -> int:
        """Number of settings tried (1 for a method without a parameter)."""
        return max(1, len(self.grid))

    @property
    def chosen(self) -> SplitRow:
        """The chosen setting's test row."""
        return self.test[0]

    @property
    def test_mean(self) -> float:
        """The chosen setting's test mean."""
        return self.chosen.mean

    @property
    def test_interval(self) -> dict | None:
        """The chosen setting's test interval."""
        return self.chosen.interval

    @property
    def test_per_question(self) -> dict[str, float]:
        """``{qid: value}`` of the chosen setting on test."""
        return dict(self.chosen.per_question)

    def to_dict(self) -> dict:
        """A JSON-ready dict (copies); every interval carries its ``flags``
        (:func:`harness.evaluation.bounds.interval_flags`)."""
        return interval_flags(
            {
                "kind": "sweep",
                "run_id": self.run_id,
                "run_path": self.run_path,
                "goldset": dict(self.goldset),
                "metric": self.metric,
                "level": self.level,
                "depth": self.depth,
                "fusion": self.fusion,
                "inputs": list(self.inputs),
                "param": self.param,
                "formula": self.formula,
                "n_settings": self.n_settings,
                "dev_curve": (
                    [{self.param: v, "dev_mean": m} for v, m in zip(self.grid, self.dev_means, strict=True)]
                    if self.param
                    else [{"system": self.chosen_system, "dev_mean": self.dev_means[0]}]
                ),
                "chosen_value": self.chosen_value,
                "chosen_system": self.chosen_system,
                "dev_best": self.dev_best,
                "dev_inputs": dict(self.dev_inputs),
                "test": [asdict(r) for r in self.test],
                "n_dev": self.n_dev,
                "n_test": self.n_test,
                "n_unsplit": self.n_unsplit,
                "missing": dict(self.missing),
                "method": self.method,
                "paired_method": self.paired_method,
                "interval_level": self.interval_level,
                "tie_rule": self.tie_rule,
                "note": self.note,
                "warnings": list(self.warnings),
            }
        )


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


def _settings(fusion: str, inputs: tuple[str, ...], grid) -> tuple[str | None, list[float], list[FusionSpec]]:
    """``(param, values, specs)``: one fusion spec per grid value (one spec without a parameter)."""
    if fusion not in FUSIONS:
        raise HarnessInputError(f"--fusion: {fusion!r} is not a fusion method ({', '.join(FUSIONS)})")
    method = FUSIONS[fusion]
    if method.n_inputs is not None and len(inputs) != method.n_inputs:
        raise HarnessInputError(f"--inputs: {fusion} fuses exactly {method.n_inputs} systems, got {len(inputs)}")
    if len(inputs) < 2 or len(set(inputs)) != len(inputs):
        raise HarnessInputError(f"--inputs: need at least two distinct systems, got {','.join(inputs)!r}")
    params = [p for p in method.options.model_fields if p in PARAMETERS]
    if not params:
        if grid is not None:
            raise HarnessInputError(f"--fusion {fusion}: takes no parameter to sweep; drop the grid")
        return None, [], [FusionSpec(fusion, method.options(), inputs)]
    param = params[0]
    values = parse_grid(PARAMETERS[param]["default"] if grid is None else grid, param)
    specs = []
    for v in values:
        try:
            specs.append(FusionSpec(fusion, method.options(**{param: v}), inputs))
        except ValidationError:
            raise HarnessInputError(f"{PARAMETERS[param]['option']}: {v!r} is not a valid {fusion} {param}") from None
    return param, values, specs


def split_intervals(run, clusters: Sequence[str]) -> ShownIntervals:
    """The intervals of a split's questions: the coverage rule's default for the split's own design (its cluster
    sizes, the run's sampling; :class:`harness.stats.shown.ShownIntervals`)."""
    sampling = run_design(run).sampling
    return ShownIntervals.for_design(RunDesign.from_clusters(clusters, sampling=sampling, run=str(run.path)))


def interval_method(y: Sequence[float], shown: ShownIntervals | None = None) -> str:
    """The method of ``y``'s interval: ``shown``'s default for its outcome type (the registry's default without
    ``shown``), CR2 when that method does not apply to ``y``."""
    kind = outcome_type(y)
    name = default_method(kind) if shown is None else shown.defaults[kind]
    return name if get_method(name).applies_to(kind) else "cr2"


def _interval(y: list[float], clusters: list[str], level: float, shown: ShownIntervals | None = None) -> dict | None:
    if len(set(clusters)) < 2:
        return None
    return get_method(interval_method(y, shown)).compute(y, clusters, level=level).to_dict()


def dev_test_records(gs) -> tuple[list, list]:
    """The gold set's ``(dev, test)`` records, in file order.

    Raises:
        HarnessInputError: either side empty, naming the records file and how to assign splits.
    """
    dev = [r for r in gs.records if r.split == "dev"]
    test = [r for r in gs.records if r.split == "test"]
    n_unsplit = len(gs.records) - len(dev) - len(test)
    if not dev or not test:
        raise HarnessInputError(
            f"{gs.records_path}: field split: the gold set has {len(dev)} dev and {len(test)} test questions "
            f"({n_unsplit} without a split); a sweep needs both (choose on dev, report on test); "
            "harness goldset split DATASET --out NEW --seed S assigns them"
        )
    return dev, test


def sweep(
    run_path: str | Path,
    grid: str | Sequence[float] | None = None,
    metric: str = "mrr",
    level: str | None = None,
    *,
    goldset_path: str | Path | None = None,
    fusion: str = "wsum",
    inputs: Sequence[str] = ("bm25", "vector"),
) -> SweepResult:
    """Sweep a fusion's parameter on dev; score the chosen setting and each input alone on test (module docstring).

    Args:
        run_path: a run record folder holding the ``inputs`` systems.
        grid: the parameter's grid (:func:`parse_grid`), ``None`` for its default (:data:`PARAMETERS`); must be
            ``None`` for a method without a parameter (``mnz``).
        metric: any metric id of :mod:`harness.metrics` (``mrr``, ``recall@10``, ``evidence_recall@20``...).
        level: ``"document"`` or ``"chunk"``; ``None`` (default) takes the metric's level. A level that disagrees
            with the metric is refused.
        goldset_path: the gold set (default: ``manifest["goldset"]["path"]``, tried as given, then relative to the
            folder above ``runs/``); its sha256 must equal the run's.
        fusion: a method of :data:`harness.retrieve.fusion.FUSIONS` (``wsum``, ``rrf``, ``mnz``).
        inputs: the systems of the run to fuse, in order (``wsum``: the weight goes to the first).

    Returns:
        A :class:`SweepResult` (dev curve, chosen setting, test rows with intervals and paired differences, counts).

    Raises:
        HarnessInputError: no dev or no test questions; an input not in the run; unknown metric or fusion; bad grid,
            inputs or level; gold set missing or changed.
    """
    inputs = tuple(s.strip() for s in inputs)
    param, values, specs = _settings(fusion, inputs, grid)
    spec = MetricSpec.parse(metric)
    metric_level = parse_level(spec.level)
    if level is not None and level not in LEVELS:
        raise HarnessInputError(f"level {level!r}: expected 'document' or 'chunk'")
    if level is not None and level != metric_level:
        raise HarnessInputError(f"metric {spec.id} reads the {metric_level} ranking; level {level!r} given")
    level = metric_level
    run = load_run(run_path)
    gs = _find_goldset(run, goldset_path)

    dev, test = dev_test_records(gs)
    lists: dict[str, dict[str, list]] = {name: {} for name in inputs}
    for row in run.per_question:
        if row.system in lists:
            lists[row.system][row.qid] = list(row.rankings.at(level))
    for name in inputs:
        if name not in run.systems:
            raise HarnessInputError(
                f"{run.path / 'per_question.jsonl'}: system {name!r} not in run (has {', '.join(run.systems)}); "
                "name the systems to fuse with --inputs A,B"
            )
    doc_depth, chunk_depth = run.manifest.depths.document, run.manifest.depths.chunk
    depth = doc_depth if level == "document" else chunk_depth
    corpus = run.manifest.corpus

    def score(rec, ranking) -> float:
        qr = question_metrics(
            rec,
            ranking if level == "document" else None,
            ranking if level == "chunk" else None,
            doc_depth=doc_depth,
            chunk_depth=chunk_depth,
            metrics=[spec],
            n_docs_in_corpus=corpus.n_documents,
            n_chunks_in_corpus=corpus.n_chunks,
        )
        return qr.metrics[spec.id]

    def fused(rec, fs: FusionSpec) -> float:
        return score(rec, fs.fuse([lists[n].get(rec.qid, []) for n in inputs], level=level))

    def alone(rec, name: str) -> float:
        return score(rec, lists[name].get(rec.qid, []))

    def mean(xs: list[float]) -> float:
        return math.fsum(xs) / len(xs)

    dev_means = [mean([fused(r, fs) for r in dev]) for fs in specs]
    if param is None:
        chosen_value, best = None, specs[0]
    else:
        chosen_value = choose(values, dev_means, PARAMETERS[param]["centre"])
        best = specs[values.index(chosen_value)]
    dev_best = dev_means[specs.index(best)]
    level_iv = run.manifest.level
    labels = run.clusters()
    qids = [r.qid for r in test]
    clusters = [labels.get(q, f"q:{q}") for q in qids]
    chosen_vals = [fused(r, best) for r in test]
    shown = split_intervals(run, clusters)
    rows = [SplitRow(best.name, "chosen", mean(chosen_vals), _interval(chosen_vals, clusters, level_iv, shown),
                    per_question=dict(zip(qids, chosen_vals, strict=True)))]  # fmt: skip
    paired_method = shown.paired
    for name in inputs:
        vals = [alone(r, name) for r in test]
        piv = None
        if len(set(clusters)) >= 2:
            piv = paired(vals, chosen_vals, clusters, method=paired_method, level=level_iv).to_dict()
        rows.append(
            SplitRow(
                name,
                "input",
                mean(vals),
                _interval(vals, clusters, level_iv, shown),
                diff=mean(chosen_vals) - mean(vals),
                paired_interval=piv,
                per_question=dict(zip(qids, vals, strict=True)),
            )
        )
    warnings = list(
        dict.fromkeys(
            w
            for r in rows
            for iv in (r.interval, r.paired_interval)
            if iv
            for w in iv.get("extras", {}).get("warnings", [])
        )
    )

    def n_missing(recs) -> int:
        return sum(1 for r in recs if all(r.qid not in lists[n] for n in inputs))

    centre = PARAMETERS[param]["centre"] if param else None
    return SweepResult(
        run_id=run.run_id,
        run_path=str(run.path),
        goldset={"name": gs.name, "version": gs.version, "sha256": gs.sha256, "path": str(gs.records_path)},
        metric=spec.id,
        level=level,
        depth=depth,
        fusion=fusion,
        inputs=list(inputs),
        param=param,
        formula=best.formula,
        grid=values,
        dev_means=dev_means,
        chosen_value=chosen_value,
        chosen_system=best.name,
        dev_best=dev_best,
        dev_inputs={name: mean([alone(r, name) for r in dev]) for name in inputs},
        test=rows,
        n_dev=len(dev),
        n_test=len(test),
        n_unsplit=len(gs.records) - len(dev) - len(test),
        missing={"dev": n_missing(dev), "test": n_missing(test)},
        method=interval_method(chosen_vals, shown),
        paired_method=paired_method,
        interval_level=level_iv,
        tie_rule=(
            f"highest dev mean; ties (1e-12) -> {param} closest to {centre:g}, then smallest"
            if param
            else "one setting (no parameter)"
        ),
        note=OPTIMISM_NOTE.format(n=max(1, len(values))),
        warnings=warnings,
    )
