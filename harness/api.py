"""A small, typed Python API for notebooks: load a gold set, run, evaluate, compare, gate, load a run record; every
result converts to plain dicts (``to_dict()``) and to pandas DataFrames (``to_pandas()``).

Example (the README's, executed by ``tests/test_api.py``)::

    from harness import api

    res = api.run("datasets/mx-leyes-dof-eval-v1", "../shared/corpus/mx-leyes-dof", ["bm25", "tfidf"],
                  metrics=["AP@100", "nDCG@20", "RR@10"])
    df = res.to_pandas()  # one row per system x question, one column per metric
    print(df.groupby("system")[["mrr", "AP@100", "nDCG@20"]].mean())

The functions are the library verbs the command line calls (:func:`harness.evaluation.pipeline.run`,
:func:`~harness.evaluation.pipeline.evaluate_rankings`, :func:`harness.evaluation.compare.compare_runs`,
:func:`harness.evaluation.gate.gate`, :func:`harness.evaluation.runs.load_run`), with the command line's defaults
and its subset options (``qids``, ``categories``: :mod:`harness.evaluation.subset`) and chosen metrics (``metrics``:
:mod:`harness.evaluation.metric_choice`, ``docs/metrics.md``). Errors are the CLI's: a
:class:`~harness.errors.HarnessInputError` (exit 2 there) with a one-line message.

pandas is an optional extra (``pip install 'harness-rag-eval[pandas]'``), imported only by ``to_pandas()``; without
it ``to_pandas()`` raises :class:`ImportError` saying how to install it.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import HarnessInputError
from harness.evaluation.compare import ComparisonReport, compare_runs
from harness.evaluation.gate import GateVerdict
from harness.evaluation.gate import gate as _gate
from harness.evaluation.metric_choice import chosen_metrics
from harness.evaluation.pipeline import RunOptions, evaluate_rankings
from harness.evaluation.pipeline import run as _run
from harness.evaluation.runs import RunRecord
from harness.evaluation.runs import load_run as _load_run
from harness.evaluation.subset import Subset, restrict_run
from harness.goldset.io import GoldSet
from harness.goldset.io import load_goldset as _load_goldset
from harness.io import stderr_notice

if TYPE_CHECKING:
    import pandas

__all__ = ["Comparison", "Gate", "RunResult", "compare", "evaluate", "gate", "load_goldset", "load_run", "run"]

PathLike = str | os.PathLike
_IDENTITY = ("system", "qid", "category", "split", "cluster")


def _pandas():
    try:
        import pandas
    except ImportError:  # pragma: no cover - exercised by monkeypatching the import in tests
        raise ImportError(
            "to_pandas() needs pandas, an optional extra: pip install 'harness-rag-eval[pandas]' (or pip install "
            "pandas); to_dict() gives the same rows as plain dicts"
        ) from None
    return pandas


def _workdir(workdir: PathLike | None) -> Path:
    return Path(workdir if workdir is not None else os.environ.get("HARNESS_WORKDIR", ".harness"))


def _path(goldset: PathLike | GoldSet) -> PathLike:
    return goldset.records_path if isinstance(goldset, GoldSet) else goldset


@dataclass(frozen=True)
class RunResult:
    """A run record (from :func:`run`, :func:`evaluate` or :func:`load_run`).

    Attributes:
        record: the typed record (:class:`~harness.evaluation.runs.RunRecord`: manifest, summary, rows).
    """

    record: RunRecord

    @property
    def path(self) -> Path:
        """The record's folder."""
        return self.record.path

    @property
    def systems(self) -> list[str]:
        """Systems in run order."""
        return self.record.systems

    @property
    def metrics(self) -> list[str]:
        """Metric ids summarised, in display order."""
        return list(self.record.summary.metric_ids)

    def per_question(self) -> list[dict[str, Any]]:
        """One dict per system x question: ``system, qid, category, split, cluster`` then one key per metric
        (``None`` where the metric is omitted for the question, e.g. no located quote)."""
        ids = list(dict.fromkeys([*self.metrics, *(m for r in self.record.per_question for m in r.metrics)]))
        return [
            {
                "system": r.system,
                "qid": r.qid,
                "category": r.category,
                "split": r.split,
                "cluster": r.cluster,
                **{m: r.metrics.get(m) for m in ids},
            }  # fmt: skip
            for r in self.record.per_question
        ]

    def summary(self, slice_name: str = "all", method: str | None = None) -> list[dict[str, Any]]:
        """One dict per system x metric of a slice: ``system, metric, mean, lower, upper, method, n_questions,
        n_clusters`` (bounds ``None`` without an interval). ``method``: a recorded interval method (``"cr2"``), or
        ``None`` for the one every rendering shows: per outcome class the coverage rule's default for the run's
        design, recorded in each entry (``MetricSummary.shown``; CR2 on the logit scale for the baseline's design).
        ``slice_name``: ``all`` or a slice the record holds (``category:<name>``, ``split:<name>``, ...).

        Raises:
            HarnessInputError: a ``slice_name`` no system of the record has, or a ``method`` that no metric of that
                slice recorded; the message names the value, the run record and the valid choices.
        """
        self._check_choice(slice_name, method)
        out = []
        for system, slices in self.record.summary.systems.items():
            s = slices.get(slice_name)
            if s is None:
                continue
            for metric, ms in s.overall.items():
                iv = ms.shown if method is None else ms.intervals.get(method)
                out.append({"system": system, "metric": metric, "mean": ms.mean,
                            "lower": iv.lower if iv else None, "upper": iv.upper if iv else None,
                            "method": iv.method if iv else None, "n_questions": s.n_questions,
                            "n_clusters": s.n_clusters})  # fmt: skip
        return out

    def _check_choice(self, slice_name: str, method: str | None) -> None:
        """Refuse a slice or interval method the record does not hold (:meth:`summary`, Raises)."""
        systems = self.record.summary.systems
        slices = list(dict.fromkeys(name for per in systems.values() for name in per))
        where = f"run record {self.path}"
        if slice_name not in slices:
            raise HarnessInputError(
                f"{where}: summary(slice_name={slice_name!r}): no such slice; the record holds "
                f"{', '.join(slices) or 'none'}"
            )
        if method is None:
            return
        methods = list(
            dict.fromkeys(
                m for per in systems.values() if slice_name in per for ms in per[slice_name].overall.values()
                for m in ms.intervals
            )
        )  # fmt: skip
        if method not in methods:
            raise HarnessInputError(
                f"{where}: summary(method={method!r}): no interval of slice {slice_name!r} was recorded with this "
                f"method; recorded: {', '.join(methods) or 'none'} (or None for the shown interval)"
            )

    def to_dict(self) -> dict[str, Any]:
        """``{"path", "run_id", "systems", "metrics", "per_question": [...], "summary": [...]}``, plain values."""
        return {"path": str(self.path), "run_id": self.record.run_id, "systems": self.systems,
                "metrics": self.metrics, "per_question": self.per_question(), "summary": self.summary()}  # fmt: skip

    def to_pandas(self, table: str = "per_question") -> pandas.DataFrame:
        """``per_question`` (default): one row per system x question, one column per metric; ``summary``: one row
        per system x metric of the ``all`` slice with its shown interval (:meth:`summary`); ``long``: the
        ``--format csv`` table (:mod:`harness.report.tables`).

        Raises:
            ImportError: pandas is not installed. ValueError: another ``table``.
        """
        pd = _pandas()
        if table == "per_question":
            return pd.DataFrame(self.per_question())
        if table == "summary":
            return pd.DataFrame(self.summary())
        if table == "long":
            from harness.report.tables import COLUMNS, run_rows

            return pd.DataFrame(run_rows(self.record), columns=list(COLUMNS))
        raise ValueError(f"table {table!r}: expected per_question, summary or long")


@dataclass(frozen=True)
class Comparison:
    """Paired differences B - A (:class:`~harness.evaluation.compare.ComparisonReport`)."""

    report: ComparisonReport

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of ``harness compare --format json``'s ``data``."""
        return self.report.to_dict()

    def rows(self) -> list[dict[str, Any]]:
        """One dict per (pair, metric): ``system_a, system_b, metric, mean_a, mean_b, diff, lower, upper, method,
        p_randomization, p_holm, n_clusters``."""
        return [
            {
                "system_a": c.system_a,
                "system_b": c.system_b,
                "metric": c.metric,
                "mean_a": c.mean_a,
                "mean_b": c.mean_b,
                "diff": c.diff,
                "lower": c.interval.get("lower"),
                "upper": c.interval.get("upper"),
                "method": c.interval.get("method"),
                "p_randomization": c.p_randomization,
                "p_holm": c.p_holm,
                "n_clusters": c.clusters.get("n"),
            }  # fmt: skip
            for c in self.report.comparisons
        ]

    def to_pandas(self) -> pandas.DataFrame:
        """:meth:`rows` as a DataFrame. Raises ImportError without pandas."""
        return _pandas().DataFrame(self.rows())


@dataclass(frozen=True)
class Gate:
    """A gate verdict (:class:`~harness.evaluation.gate.GateVerdict`): ``decision``, ``exit_code``, one check per
    metric and guard."""

    verdict: GateVerdict

    @property
    def decision(self) -> str:
        """``PASS``, ``FAIL`` or ``INCONCLUSIVE``."""
        return self.verdict.decision

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of ``harness gate --format json``'s ``data``."""
        return self.verdict.to_dict()

    def to_pandas(self) -> pandas.DataFrame:
        """One row per check: ``name, metric, category, decision, diff, lower, upper, margin, n_questions,
        n_clusters, reason``. Raises ImportError without pandas."""
        keys = ("name", "metric", "category", "decision", "diff", "lower", "upper", "margin", "n_questions",
                "n_clusters", "reason")  # fmt: skip
        return _pandas().DataFrame([{k: getattr(c, k) for k in keys} for c in self.verdict.checks])


def load_goldset(path: PathLike) -> GoldSet:
    """A gold set (dataset folder or JSONL): :func:`harness.goldset.io.load_goldset`."""
    return _load_goldset(path)


def load_run(path: PathLike) -> RunResult:
    """A run record folder, checked (:func:`harness.evaluation.runs.load_run`)."""
    return RunResult(_load_run(path))


def _options(metrics, qids, categories, options: dict) -> RunOptions:
    return RunOptions(metrics=chosen_metrics(metrics), subset=Subset.of(qids, categories), **options)


def run(
    goldset: PathLike | GoldSet,
    corpus: PathLike,
    systems: Sequence[str] = ("bm25",),
    *,
    metrics: Iterable[str] | str | None = None,
    qids: Iterable[str] | str | None = None,
    categories: Iterable[str] | str | None = None,
    workdir: PathLike | None = None,
    runs_dir: PathLike = "runs",
    run_id: str | None = None,
    overwrite: bool = False,
    progress: bool = True,
    **options: Any,
) -> RunResult:
    """``harness run``: retrieve with ``systems`` for every question (or the subset) and write a run record.

    Args:
        goldset: a gold set or its path; corpus: the corpus folder; systems: names (``docs/systems.md``).
        metrics: ids scored beside the summary's (``"AP@100,nDCG@20"`` or a list; depths grow to the largest k).
        qids, categories: the subset scored and recorded.
        workdir: derived files (default ``$HARNESS_WORKDIR``, else ``.harness``); runs_dir, run_id, overwrite: where
            the record goes.
        options: further :class:`~harness.evaluation.pipeline.RunOptions` fields (``doc_depth``,
            ``bootstrap_reps``, ``seed``, ``clustering``, ``split``, ``chunker``...).
        progress: show progress on stderr as the command line does (:mod:`harness.progress`: rich displays on a
            terminal, plain ``started`` / ``done/total`` / ``done`` lines elsewhere, e.g. a notebook's log), and its
            one-line notes; ``False`` for silence (the command line's ``--quiet``).

    Raises:
        HarnessInputError: as ``harness run`` (exit 2 there).
    """
    path = _run(_path(goldset), corpus, list(systems), workdir=_workdir(workdir), runs_dir=runs_dir, run_id=run_id,
                options=_options(metrics, qids, categories, options), overwrite=overwrite, progress=progress,
                log=stderr_notice if progress else None)  # fmt: skip
    return load_run(path)


def evaluate(
    goldset: PathLike | GoldSet,
    rankings: PathLike,
    *,
    metrics: Iterable[str] | str | None = None,
    qids: Iterable[str] | str | None = None,
    categories: Iterable[str] | str | None = None,
    corpus: PathLike | None = None,
    workdir: PathLike | None = None,
    runs_dir: PathLike = "runs",
    run_id: str | None = None,
    level: str | None = None,
    overwrite: bool = False,
    progress: bool = True,
    **options: Any,
) -> RunResult:
    """``harness evaluate``: score another system's rankings (TREC or JSONL, ``docs/rankings.md``) into a run record.
    Arguments as :func:`run` (``progress`` too); ``corpus``: check ids against it and enable the word-budget metrics;
    ``level``: force ``document`` or ``chunk`` for a TREC file."""
    path = evaluate_rankings(_path(goldset), rankings, runs_dir=runs_dir, run_id=run_id,
                             options=_options(metrics, qids, categories, options), level=level, corpus_dir=corpus,
                             workdir=_workdir(workdir), overwrite=overwrite, progress=progress,
                             log=stderr_notice if progress else None)  # fmt: skip
    return load_run(path)


def _renamed(value, old_value, new: str, old: str):
    """``value``, or ``old_value`` given under the deprecated keyword ``old`` (a :class:`FutureWarning` naming
    ``new``, the command line's name: shown by default, unlike a DeprecationWarning outside ``__main__``).

    Raises:
        HarnessInputError: both keywords given.
    """
    if old_value is None:
        return value
    if value is not None:
        raise HarnessInputError(f"{old}: deprecated alias of {new}; give only {new}")
    warnings.warn(f"{old} is deprecated; use {new} (as --{new.replace('_', '-')})", FutureWarning, stacklevel=3)
    return old_value


def _record(run_: PathLike | RunResult | RunRecord, subset: Subset) -> RunRecord:
    rec = run_.record if isinstance(run_, RunResult) else run_ if isinstance(run_, RunRecord) else _load_run(run_)
    return restrict_run(rec, subset)


def compare(
    run_a: PathLike | RunResult,
    run_b: PathLike | RunResult,
    *,
    metrics: Iterable[str] | str | None = None,
    baseline_system: str | None = None,
    candidate_system: str | None = None,
    qids: Iterable[str] | str | None = None,
    categories: Iterable[str] | str | None = None,
    split: str = "all",
    reps: int = 10000,
    seed: int = 0,
    system_a: str | None = None,
    system_b: str | None = None,
) -> Comparison:
    """``harness compare``: paired differences B - A, clustered intervals, randomisation tests, on the subset of
    both runs. ``metrics``: any ids (``None``: the compare set), scored from the stored rankings when a run lacks
    them. The keywords are the command line's options (``baseline_system`` is ``--baseline-system``);
    ``system_a``/``system_b`` are deprecated aliases (a :class:`FutureWarning`).

    Raises:
        HarnessInputError: both a keyword and its deprecated alias, or what :func:`compare_runs` raises.
    """
    baseline_system = _renamed(baseline_system, system_a, "baseline_system", "system_a")
    candidate_system = _renamed(candidate_system, system_b, "candidate_system", "system_b")
    subset = Subset.of(qids, categories)
    ids = chosen_metrics(metrics, option="--metric") or None
    rep = compare_runs(_record(run_a, subset), _record(run_b, subset), metrics=ids, system_a=baseline_system,
                       system_b=candidate_system, reps=reps, seed=seed, split=split)  # fmt: skip
    return Comparison(rep)


def gate(
    baseline: PathLike | RunResult,
    candidate: PathLike | RunResult,
    *,
    metrics: Iterable[str] | str = "mrr",
    margin: float = 0.02,
    alpha: float = 0.05,
    baseline_system: str | None = None,
    candidate_system: str | None = None,
    guards: Sequence[str] = (),
    qids: Iterable[str] | str | None = None,
    categories: Iterable[str] | str | None = None,
    split: str = "all",
    system_baseline: str | None = None,
    system_candidate: str | None = None,
) -> Gate:
    """``harness gate``: the three-way non-inferiority verdict (``Gate.decision``; ``Gate.verdict.exit_code``). The
    keywords are the command line's options; ``system_baseline``/``system_candidate`` are deprecated aliases of
    ``baseline_system``/``candidate_system`` (a :class:`FutureWarning`).

    Raises:
        HarnessInputError: both a keyword and its deprecated alias, or what :func:`harness.evaluation.gate.gate`
            raises.
    """
    baseline_system = _renamed(baseline_system, system_baseline, "baseline_system", "system_baseline")
    candidate_system = _renamed(candidate_system, system_candidate, "candidate_system", "system_candidate")
    subset = Subset.of(qids, categories)
    ids = list(chosen_metrics(metrics, option="--metric"))
    v = _gate(
        _record(baseline, subset),
        _record(candidate, subset),
        metric=ids,
        margin=margin,
        alpha=alpha,
        system_baseline=baseline_system,
        system_candidate=candidate_system,
        guards=list(guards),
        split=split,
    )
    if not subset.is_all:  # as the command line: the split line names the subset
        v.split = f"{v.split}, subset {subset.label}"
    return Gate(v)
