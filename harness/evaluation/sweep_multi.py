"""A fusion sweep decided on every metric: several methods in one call, constraints on other metrics, and every
metric of ``METRIC_SETS["compare"]`` reported on test (``harness sweep --fusion wsum,rrf,mnz --constraint M:X``).

:func:`harness.evaluation.sweep.sweep` chooses a setting on one metric. A RAG team choosing a fusion on MRR can then
ship one that gives its LLM worse chunks (the trial: every fusion that beat bm25 on MRR lost evidence_recall@10 on
test). This module keeps the single sweep's rules (grid, dev/test, tie rule, intervals) and adds:

* **several methods** (``wsum``, ``rrf``, ``mnz``): each method's grid is swept and a setting is chosen per method
  (highest dev mean of the selection metric, the tie rule of :func:`harness.evaluation.sweep.choose`); the overall
  choice is the method choice with the highest dev mean (ties: the method named first). The dev value of the overall
  choice is the best of every setting of every method, so it is more optimistic still;
* **constraints** ``METRIC:MARGIN``: a setting whose dev mean of METRIC is below the best input's dev mean of METRIC by
  more than MARGIN (``best_input - setting > MARGIN``) is excluded before choosing; every exclusion is listed (setting,
  metric, its dev mean, the best input and its dev mean). A method with every setting excluded has no choice;
* **every metric on test**: for the overall choice, each metric of :data:`REPORTED` (``METRIC_SETS["compare"]``,
  document and evidence) plus the selection and constraint metrics: the test mean with its interval, and beside
  each input alone its mean and the paired difference chosen - input with its interval (registry defaults; the run's
  clusters of the test questions; differences of unit metrics clipped to [-1, 1] and marked,
  :func:`harness.stats.paired`);
* **trade-offs in words** (:func:`tradeoffs`): against each input, the metrics whose paired interval lies above 0 and
  those whose interval lies below 0; both present is a trade ("gains mrr ... but loses evidence_recall@10 ...");
  point estimates of opposite sign whose intervals include 0 are said to lean, not to trade.

Each question's fused lists are built at both levels (documents and chunks, each input list cut at the run's depth
of that level) and scored with :func:`harness.metrics.question_metrics` against the run's gold set, as the single
sweep scores them (so a setting's selection-metric dev curve equals the single sweep's).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import HarnessInputError
from harness.evaluation.bounds import interval_flags
from harness.evaluation.runs import load_run
from harness.evaluation.sweep import (
    OPTIMISM_NOTE,
    PARAMETERS,
    _find_goldset,
    _interval,
    _settings,
    choose,
    dev_test_records,
    interval_method,
    split_intervals,
)
from harness.metrics import METRIC_SETS, MetricSpec, question_metrics
from harness.stats import paired

__all__ = ["REPORTED", "Constraint", "MethodChoice", "MultiSweepResult", "multi_sweep", "parse_constraint", "tradeoffs"]

REPORTED: tuple[str, ...] = METRIC_SETS["compare"]
"""The metrics reported on test for the chosen setting (document and evidence)."""


@dataclass(frozen=True)
class Constraint:
    """``metric`` may lose at most ``margin`` (metric units, >= 0) against the best input on dev."""

    metric: str
    margin: float

    def __str__(self) -> str:
        return f"{self.metric}:{self.margin:g}"


def parse_constraint(text: str) -> Constraint:
    """``"evidence_recall@10:0.02"`` -> :class:`Constraint`.

    Raises:
        HarnessInputError: no ``:``, an unknown metric, a margin that is not a finite number >= 0 (naming
            ``--constraint``).
    """
    metric, sep, margin = str(text).strip().rpartition(":")
    where = f"--constraint {text!r}"
    if not sep or not metric:
        raise HarnessInputError(f"{where}: expected METRIC:MARGIN, e.g. evidence_recall@10:0.02")
    try:
        spec = MetricSpec.parse(metric)
    except HarnessInputError as exc:
        raise HarnessInputError(f"{where}: {exc}") from None
    try:
        value = float(margin)
    except ValueError:
        raise HarnessInputError(f"{where}: margin {margin!r} is not a number") from None
    if not (math.isfinite(value) and value >= 0):
        raise HarnessInputError(f"{where}: margin {margin!r} must be a finite number >= 0")
    return Constraint(spec.id, value)


@dataclass
class MethodChoice:
    """One fusion method's sweep under the constraints.

    Attributes:
        fusion: the method id; param: the parameter swept (``None`` for ``mnz``); settings: the system name of each
            setting; grid: the values (empty without a parameter); dev: ``{metric: [dev mean per setting]}``.
        excluded: one dict per (setting, violated constraint): ``{"system", "metric", "dev", "best_input",
            "best_input_dev", "loss", "margin"}``.
        dev_intervals: per setting, the interval of its dev mean of the selection metric (registry default for the
            outcome type, the run's clusters of the dev questions; ``None`` with < 2 clusters): the noise band of the
            dev curve, which says how far apart two settings must be before the curve's shape means anything.
        chosen_system, chosen_value, dev_best, formula: the choice (``None`` when every setting is excluded).
        test: the choice on test, on the selection metric: ``{"mean", "interval", "inputs": {input: {"diff",
            "paired_interval"}}}`` (``None`` without a choice).
    """

    fusion: str
    param: str | None
    settings: list[str]
    grid: list[float]
    dev: dict[str, list[float]]
    excluded: list[dict] = field(default_factory=list)
    dev_intervals: list[dict | None] = field(default_factory=list)
    test: dict | None = None
    chosen_system: str | None = None
    chosen_value: float | None = None
    dev_best: float | None = None
    formula: str = ""

    def to_dict(self) -> dict:
        """A JSON-ready dict."""
        return {
            "fusion": self.fusion,
            "param": self.param,
            "settings": list(self.settings),
            "grid": list(self.grid),
            "dev": {m: list(v) for m, v in self.dev.items()},
            "excluded": [dict(x) for x in self.excluded],
            "dev_intervals": [None if iv is None else dict(iv) for iv in self.dev_intervals],
            "test": self.test,
            "chosen_system": self.chosen_system,
            "chosen_value": self.chosen_value,
            "dev_best": self.dev_best,
            "formula": self.formula,
        }


@dataclass
class MultiSweepResult:
    """The outcome of :func:`multi_sweep`.

    Attributes:
        run_id, run_path, goldset: the run swept and its gold set; metric: the selection metric; inputs: the systems
            fused; constraints: the constraints applied.
        methods: one :class:`MethodChoice` per method, in the order given; chosen: the overall choice's system name
            (``None`` when every setting of every method is excluded); chosen_method: its method.
        dev_inputs: ``{metric: {input: dev mean}}`` (selection and constraint metrics).
        test: one dict per reported metric: ``{"metric", "chosen": {"mean", "interval"}, "inputs": {input:
            {"mean", "interval", "diff", "paired_interval"}}}`` (empty without a choice).
        tradeoffs: plain-words statements (:func:`tradeoffs`).
        n_dev, n_test, n_unsplit: questions per split; n_test_clusters: clusters of the test questions.
        method, paired_method, interval_level: interval methods and level; note: the optimism note; warnings: the
            intervals' warnings.
    """

    run_id: str
    run_path: str
    goldset: dict
    metric: str
    inputs: list[str]
    constraints: list[Constraint]
    methods: list[MethodChoice]
    chosen: str | None
    chosen_method: str | None
    dev_inputs: dict[str, dict[str, float]]
    test: list[dict]
    tradeoffs: list[str]
    n_dev: int
    n_test: int
    n_unsplit: int
    n_test_clusters: int
    method: str
    paired_method: str
    interval_level: float
    note: str = ""
    warnings: list[str] = field(default_factory=list)

    @property
    def n_settings(self) -> int:
        """Settings tried over every method."""
        return sum(len(m.settings) for m in self.methods)

    def excluded(self) -> list[dict]:
        """Every exclusion of every method, with its method."""
        return [{"fusion": m.fusion, **x} for m in self.methods for x in m.excluded]

    def to_dict(self) -> dict:
        """A JSON-ready dict; every interval carries its ``flags`` (:func:`interval_flags`)."""
        return interval_flags(
            {
                "kind": "sweep-multi",
                "run_id": self.run_id,
                "run_path": self.run_path,
                "goldset": dict(self.goldset),
                "metric": self.metric,
                "inputs": list(self.inputs),
                "constraints": [{"metric": c.metric, "margin": c.margin} for c in self.constraints],
                "methods": [m.to_dict() for m in self.methods],
                "n_settings": self.n_settings,
                "chosen": self.chosen,
                "chosen_method": self.chosen_method,
                "excluded": self.excluded(),
                "dev_inputs": {m: dict(v) for m, v in self.dev_inputs.items()},
                "test": [dict(r) for r in self.test],
                "tradeoffs": list(self.tradeoffs),
                "n_dev": self.n_dev,
                "n_test": self.n_test,
                "n_unsplit": self.n_unsplit,
                "n_test_clusters": self.n_test_clusters,
                "method": self.method,
                "paired_method": self.paired_method,
                "interval_level": self.interval_level,
                "note": self.note,
                "warnings": list(self.warnings),
            }
        )


def tradeoffs(chosen: str, test: Sequence[dict]) -> list[str]:
    """Plain-words statements of what ``chosen`` gains and loses against each input on test (module docstring).

    Args:
        chosen: the chosen setting's name; test: :attr:`MultiSweepResult.test` rows.

    Returns:
        One statement per input where something is gained and lost (clearly, or leaning), in input order.
    """
    inputs = list(dict.fromkeys(name for row in test for name in row["inputs"]))
    out = []
    for name in inputs:
        up, down, lean_up, lean_down = [], [], [], []
        for row in test:
            cell = row["inputs"].get(name)
            if cell is None:
                continue
            iv, d = cell.get("paired_interval"), cell["diff"]
            text = f"{row['metric']} {d:+.3f}" + (f" [{iv['lower']:+.3f}, {iv['upper']:+.3f}]" if iv else "")
            if iv and iv["lower"] > 0:
                up.append(text)
            elif iv and iv["upper"] < 0:
                down.append(text)
            elif d > 1e-12:
                lean_up.append(text)
            elif d < -1e-12:
                lean_down.append(text)
        if up and down:
            out.append(
                f"against {name}, {chosen} trades one metric for another on test: it gains {', '.join(up)} but "
                f"loses {', '.join(down)} (paired intervals exclude 0)"
            )
        elif down:
            gain = f"; it leans up on {', '.join(lean_up)} (intervals include 0)" if lean_up else ""
            out.append(f"against {name}, {chosen} loses {', '.join(down)} on test (paired intervals below 0){gain}")
        elif up and lean_down:
            out.append(
                f"against {name}, {chosen} gains {', '.join(up)} on test, while {', '.join(lean_down)} lean down "
                "(intervals include 0: not a demonstrated loss)"
            )
        elif lean_up and lean_down:
            out.append(
                f"against {name}, the point estimates go both ways on test (up: {', '.join(lean_up)}; down: "
                f"{', '.join(lean_down)}), and no paired interval excludes 0"
            )
    return out


def multi_sweep(
    run_path: str | Path,
    *,
    fusions: Sequence[str] = ("wsum",),
    metric: str = "mrr",
    constraints: Sequence[Constraint | str] = (),
    grids: dict[str, str | Sequence[float] | None] | None = None,
    goldset_path: str | Path | None = None,
    inputs: Sequence[str] = ("bm25", "vector"),
    reported: Sequence[str] = REPORTED,
) -> MultiSweepResult:
    """Sweep several fusion methods under constraints; report every metric for the overall choice on test.

    Args:
        run_path: a run record holding the ``inputs`` systems.
        fusions: fusion method ids (``wsum``, ``rrf``, ``mnz``), distinct.
        metric: the selection metric (any metric id).
        constraints: :class:`Constraint` objects or ``METRIC:MARGIN`` strings.
        grids: ``{method: grid}`` (:func:`harness.evaluation.sweep.parse_grid`); a method not named gets its
            default grid.
        goldset_path: the gold set (default: the path recorded in the run; its sha256 must equal the run's).
        inputs: the systems of the run to fuse, in order (``wsum``: the weight goes to the first).
        reported: metrics reported on test (default :data:`REPORTED`; the selection and constraint metrics are
            added).

    Returns:
        A :class:`MultiSweepResult`.

    Raises:
        HarnessInputError: no dev or no test questions; an input not in the run; an unknown metric or method; a
            repeated method; a bad grid or constraint; gold set missing or changed.
    """
    fusions = [f.strip() for f in fusions if f.strip()]
    if not fusions:
        raise HarnessInputError("--fusion: no method given")
    if len(set(fusions)) != len(fusions):
        raise HarnessInputError(f"--fusion {','.join(fusions)}: a method is named twice")
    cons = [c if isinstance(c, Constraint) else parse_constraint(c) for c in constraints]
    inputs = tuple(s.strip() for s in inputs)
    grids = grids or {}
    plans = [(f, *_settings(f, inputs, grids.get(f))) for f in fusions]
    sel = MetricSpec.parse(metric).id
    wanted = list(dict.fromkeys([sel, *(c.metric for c in cons), *reported]))
    specs = [MetricSpec.parse(m) for m in wanted]
    dev_metrics = list(dict.fromkeys([sel, *(c.metric for c in cons)]))

    run = load_run(run_path)
    gs = _find_goldset(run, goldset_path)
    dev, test = dev_test_records(gs)
    for name in inputs:
        if name not in run.systems:
            raise HarnessInputError(
                f"{run.path / 'per_question.jsonl'}: system {name!r} not in run (has {', '.join(run.systems)}); "
                "name the systems to fuse with --inputs A,B"
            )
    lists: dict[str, dict[str, tuple[list, list]]] = {n: {} for n in inputs}
    for row in run.per_question:
        if row.system in lists:
            lists[row.system][row.qid] = (list(row.rankings.document), list(row.rankings.chunk))
    m = run.manifest
    doc_depth, chunk_depth = m.depths.document, m.depths.chunk

    def score(rec, docs, chunks, metrics) -> dict[str, float]:
        qr = question_metrics(
            rec,
            docs,
            chunks,
            doc_depth=doc_depth,
            chunk_depth=chunk_depth,
            metrics=metrics,
            n_docs_in_corpus=m.corpus.n_documents,
            n_chunks_in_corpus=m.corpus.n_chunks,
        )
        return {s.id: float(qr.metrics[s.id]) for s in metrics}

    def fused(rec, fs, metrics) -> dict[str, float]:
        per = [lists[n].get(rec.qid, ([], [])) for n in inputs]
        docs = fs.fuse([p[0] for p in per], level="document")  # the fusion's own input depths (item 16)
        chunks = fs.fuse([p[1] for p in per], level="chunk")
        return score(rec, docs, chunks, metrics)

    def alone(rec, name, metrics) -> dict[str, float]:
        docs, chunks = lists[name].get(rec.qid, ([], []))
        return score(rec, docs, chunks, metrics)

    def mean(xs) -> float:
        return math.fsum(xs) / len(xs)

    dev_specs = [MetricSpec.parse(x) for x in dev_metrics]
    dev_inputs = {x: {} for x in dev_metrics}
    for name in inputs:
        vals = [alone(r, name, dev_specs) for r in dev]
        for x in dev_metrics:
            dev_inputs[x][name] = mean([v[x] for v in vals])
    best_input = {x: max(inputs, key=lambda n, x=x: dev_inputs[x][n]) for x in dev_metrics}

    labels = run.clusters()
    choices: list[MethodChoice] = []
    spec_of: dict[str, object] = {}
    for fusion, param, values, fspecs in plans:
        per_setting = [[fused(r, fs, dev_specs) for r in dev] for fs in fspecs]
        devm = {x: [mean([v[x] for v in vals]) for vals in per_setting] for x in dev_metrics}
        mc = MethodChoice(fusion, param, [fs.name for fs in fspecs], list(values), devm)
        dev_cl = [labels.get(r.qid, f"q:{r.qid}") for r in dev]
        mc.dev_intervals = [_interval([v[sel] for v in vals], dev_cl, m.level) for vals in per_setting]
        ok = []
        for i, fs in enumerate(fspecs):
            spec_of[fs.name] = fs
            bad = False
            for c in cons:
                b = best_input[c.metric]
                loss = dev_inputs[c.metric][b] - devm[c.metric][i]
                if loss > c.margin + 1e-12:
                    bad = True
                    mc.excluded.append(
                        {
                            "system": fs.name,
                            "metric": c.metric,
                            "dev": devm[c.metric][i],
                            "best_input": b,
                            "best_input_dev": dev_inputs[c.metric][b],
                            "loss": loss,
                            "margin": c.margin,
                        }
                    )
            if not bad:
                ok.append(i)
        if ok:
            if param is None:
                i = ok[0]
            else:
                v = choose([values[i] for i in ok], [devm[sel][i] for i in ok], PARAMETERS[param]["centre"])
                i = values.index(v)
            mc.chosen_system, mc.chosen_value, mc.dev_best = (
                fspecs[i].name,
                (values[i] if param else None),
                devm[sel][i],
            )
            mc.formula = fspecs[i].formula
        choices.append(mc)

    made = [c for c in choices if c.chosen_system is not None]
    overall = max(made, key=lambda c: c.dev_best) if made else None  # max keeps the first of equals
    level_iv = m.level
    qids = [r.qid for r in test]
    clusters = [labels.get(q, f"q:{q}") for q in qids]
    shown = split_intervals(run, clusters)
    paired_method = shown.paired
    rows: list[dict] = []
    method_name = shown.paired
    if overall is not None:
        fs = spec_of[overall.chosen_system]
        chosen_vals = [fused(r, fs, specs) for r in test]
        input_vals = {n: [alone(r, n, specs) for r in test] for n in inputs}
        for x in wanted:
            y = [v[x] for v in chosen_vals]
            method_name = interval_method(y, shown)
            row = {
                "metric": x,
                "method": method_name,
                "chosen": {"mean": mean(y), "interval": _interval(y, clusters, level_iv, shown)},
                "inputs": {},
            }
            for n in inputs:
                z = [v[x] for v in input_vals[n]]
                piv = None
                if len(set(clusters)) >= 2:
                    piv = paired(z, y, clusters, method=paired_method, level=level_iv).to_dict()
                row["inputs"][n] = {
                    "mean": mean(z),
                    "interval": _interval(z, clusters, level_iv, shown),
                    "diff": mean(y) - mean(z),
                    "paired_interval": piv,
                }
            rows.append(row)
    sel_spec = [MetricSpec.parse(sel)]
    sel_inputs = {n: [alone(r, n, sel_spec)[sel] for r in test] for n in inputs}
    for mc in choices:  # each method's own choice on test, on the selection metric (cheap: one metric)
        if mc.chosen_system is None:
            continue
        y = [fused(r, spec_of[mc.chosen_system], sel_spec)[sel] for r in test]
        mc.test = {"mean": mean(y), "interval": _interval(y, clusters, level_iv, shown), "inputs": {}}
        for n in inputs:
            z = sel_inputs[n]
            piv = (
                paired(z, y, clusters, method=paired_method, level=level_iv).to_dict()
                if len(set(clusters)) >= 2
                else None
            )
            mc.test["inputs"][n] = {"diff": mean(y) - mean(z), "paired_interval": piv}
    warnings = list(
        dict.fromkeys(
            w
            for row in rows
            for iv in [row["chosen"]["interval"], *(c["paired_interval"] for c in row["inputs"].values())]
            if iv
            for w in iv.get("extras", {}).get("warnings", [])
        )
    )
    n_settings = sum(len(c.settings) for c in choices)
    return MultiSweepResult(
        run_id=run.run_id,
        run_path=str(run.path),
        goldset={"name": gs.name, "version": gs.version, "sha256": gs.sha256, "path": str(gs.records_path)},
        metric=sel,
        inputs=list(inputs),
        constraints=cons,
        methods=choices,
        chosen=overall.chosen_system if overall else None,
        chosen_method=overall.fusion if overall else None,
        dev_inputs=dev_inputs,
        test=rows,
        tradeoffs=tradeoffs(overall.chosen_system, rows) if overall else [],
        n_dev=len(dev),
        n_test=len(test),
        n_unsplit=len(gs.records) - len(dev) - len(test),
        n_test_clusters=len(set(clusters)),
        method=method_name,
        paired_method=paired_method,
        interval_level=level_iv,
        note=(
            OPTIMISM_NOTE.format(n=n_settings).replace(
                "settings tried on dev", f"settings tried on dev ({len(choices)} method(s))"
            )
            if n_settings > 1
            else "one setting, so nothing was chosen on dev: its dev value is not optimistic; the test values are the "
            "estimates to report"
        ),
        warnings=warnings,
    )
