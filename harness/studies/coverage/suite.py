"""The coverage study over many populations at once, and the default-method rule applied to all of them.

A suite is a list of :class:`PopulationSpec` (a known-item folder with a system, an outcome and optionally a second
system for paired differences; a CSV file; or the synthetic population), each run through
:func:`harness.studies.coverage.run_coverage` with the same settings, then :func:`~harness.studies.coverage.choice.
choose_defaults` over the results. :func:`known_item_specs` builds the standard suite of a set of known-item folders
(every system's hit@1 and reciprocal rank, and paired differences).

Files (``out_dir``): ``suite.json`` (every population's :class:`~harness.studies.coverage.results.CoverageResult`,
the choice, the settings) and ``suite.csv`` (one row per population, design, K and method). With ``cache_dir`` each
population's result is also kept as ``<cache_dir>/<slug>.json`` and reused when the population and settings are the
same (an interrupted suite resumes where it stopped).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import HarnessInputError
from harness.io import atomic_write_json, atomic_write_text, read_json, read_jsonl
from harness.studies.coverage.choice import RULE, ClassChoice, choice_table, choose_defaults
from harness.studies.coverage.population import Population, load_population
from harness.studies.coverage.results import CoverageResult
from harness.studies.coverage.study import run_coverage
from harness.studies.coverage.synthetic import synthetic_population
from harness.studies.options import CoverageOptions
from harness.tabular import delimited_text

SYNTHETIC = "synthetic"


@dataclass(frozen=True)
class PopulationSpec:
    """One population of a suite.

    Attributes:
        source: a known-item output folder, a ``.csv`` file, or ``"synthetic"``.
        system: the system of a known-item folder (default: its first).
        outcome: ``"hit"`` or ``"rr"`` (known-item folders).
        minus: a second system: the population is the per-query difference ``system - minus``.
        label: its name in tables (default :meth:`name`).
    """

    source: str
    system: str | None = None
    outcome: str = "hit"
    minus: str | None = None
    label: str | None = None

    def name(self) -> str:
        """``<folder>:<system>[-<minus>]/<outcome>`` (e.g. ``w100:bm25/hit``), ``synthetic:hit``, or the label."""
        if self.label:
            return self.label
        if self.source == SYNTHETIC:
            return "synthetic:hit"
        stem = Path(self.source).stem if self.source.lower().endswith(".csv") else Path(self.source).name
        who = (self.system or "first") + (f"-{self.minus}" if self.minus else "")
        return f"{stem}:{who}/{self.outcome}"

    def load(self) -> Population:
        """The population (:func:`harness.studies.coverage.load_population`, or the synthetic one)."""
        if self.source == SYNTHETIC:
            return synthetic_population()
        return load_population(self.source, system=self.system, outcome=self.outcome, minus=self.minus)


def _folder_systems(folder: str) -> list[str]:
    recs = read_jsonl(Path(folder) / "per_document.jsonl")
    return list(dict.fromkeys(str(o.get("system")) for _, o in recs))


def population_specs(
    sources: Sequence[str], *, system: str | None = None, outcome: str = "hit", paired: str | None = None
) -> list[PopulationSpec]:
    """The specs of ``harness coverage --population ... [--system S,...|all] [--outcome hit,rr] [--paired A-B,...]``.

    Each source is ``"synthetic"``, a ``.csv`` file (one spec), or a known-item folder: one spec per system (default
    its first; ``all``: every system of its ``per_document.jsonl``) and outcome, plus one per paired difference and
    outcome; with ``paired`` and no ``system``, only the paired differences.

    Raises:
        HarnessInputError: an empty outcome list, a paired difference not written ``A-B``, an unreadable folder.
    """
    outcomes = [o.strip() for o in outcome.split(",") if o.strip()]
    if not outcomes:
        raise HarnessInputError(f"--outcome {outcome!r}: give hit, rr or hit,rr")
    pairs = []
    for item in (paired or "").split(","):
        if item.strip():
            a, sep, b = item.strip().partition("-")
            if not (sep and a and b):
                raise HarnessInputError(f"--paired {item!r}: write a difference as A-B (e.g. bm25-tfidf)")
            pairs.append((a, b))
    specs = []
    for src in sources:
        src = str(src)
        if src == SYNTHETIC or src.lower().endswith(".csv"):
            specs.append(PopulationSpec(src))
            continue
        if system == "all":
            systems: list[str | None] = list(_folder_systems(src))
        elif system:
            systems = [x.strip() for x in system.split(",") if x.strip()]
        else:
            systems = [] if pairs else [None]
        specs += [PopulationSpec(src, sy, o) for sy in systems for o in outcomes]
        specs += [PopulationSpec(src, a, o, b) for a, b in pairs for o in outcomes]
    return specs


def known_item_specs(
    folders: Mapping[str, str | Path],
    *,
    systems: Sequence[str] = ("bm25", "tfidf", "vector"),
    outcomes: Sequence[str] = ("hit", "rr"),
    paired: Sequence[tuple[str, str]] = (("bm25", "tfidf"),),
    synthetic: bool = True,
) -> list[PopulationSpec]:
    """The standard suite: for each ``{name: known-item folder}``, every system x outcome and every paired difference
    x outcome (labels ``<name>:<system>/<outcome>``, ``<name>:<a>-<b>/<outcome>``), then the synthetic population."""
    specs = []
    for name, folder in folders.items():
        for system in systems:
            for outcome in outcomes:
                specs.append(PopulationSpec(str(folder), system, outcome, None, f"{name}:{system}/{outcome}"))
        for a, b in paired:
            for outcome in outcomes:
                specs.append(PopulationSpec(str(folder), a, outcome, b, f"{name}:{a}-{b}/{outcome}"))
    if synthetic:
        specs.append(PopulationSpec(SYNTHETIC))
    return specs


@dataclass
class SuiteResult:
    """What :func:`run_suite` produced.

    Attributes:
        results: one :class:`CoverageResult` per population, in the order of the specs.
        choice: ``{outcome class: ClassChoice}`` (:func:`~harness.studies.coverage.choice.choose_defaults`).
        config: the settings shared by every population (reps, K, B, seed, level, designs).
        seconds: wall time (populations reused from the cache count their original time in ``computed_seconds``).
        files: paths written.
    """

    results: list[CoverageResult]
    choice: dict[str, ClassChoice]
    config: dict
    seconds: float
    files: list[str] = field(default_factory=list)

    @property
    def computed_seconds(self) -> float:
        """The sum of every population's own study time (as measured when it was computed)."""
        return float(sum(r.seconds for r in self.results))

    def to_dict(self) -> dict:
        """JSON form (``suite.json``)."""
        return {
            "config": self.config,
            "seconds": round(self.seconds, 3),
            "computed_seconds": round(self.computed_seconds, 3),
            "rule": RULE,
            "defaults": {k: c.chosen for k, c in self.choice.items()},
            "choice": {k: c.to_dict() for k, c in self.choice.items()},
            "populations": [r.to_dict() for r in self.results],
        }

    def __rich__(self):
        from rich.console import Group
        from rich.text import Text

        items = list(self.results) + [choice_table(self.choice)]
        items.append(Text(f"suite: {len(self.results)} populations, {self.computed_seconds:.0f} s of study time"))
        return Group(*items)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "population"


def _cached(path: Path, spec: PopulationSpec, config: dict) -> CoverageResult | None:
    if not path.exists():
        return None
    try:
        data = read_json(path)
        res = CoverageResult.from_dict(data["result"], str(path))
    except (HarnessInputError, KeyError, TypeError):
        return None
    same = data.get("spec") == spec.__dict__ and data.get("config") == config
    return res if same else None


def run_suite(
    specs: Sequence[PopulationSpec],
    options: CoverageOptions | None = None,
    *,
    out_dir: str | Path | None = None,
    cache_dir: str | Path | None = None,
    on_population: Callable[[int, int, str], None] | None = None,
    **fields: Any,
) -> SuiteResult:
    """Run the coverage study on every population of ``specs`` and apply the default rule (module docstring).

    Args:
        specs: the populations (at least one).
        options, fields: the coverage options, as in :func:`~harness.studies.coverage.run_coverage` (the same for
            every population; no figures are drawn per population).
        out_dir: where to write ``suite.json`` and ``suite.csv`` (None: nothing).
        cache_dir: per-population results kept and reused here (None: no cache).
        on_population: called as ``f(i, total, label)`` before population i (progress).

    Returns:
        A :class:`SuiteResult`.

    Raises:
        HarnessInputError: no specs, two specs with the same label, an unreadable population, bad settings.
    """
    o = CoverageOptions.of(options, **fields)
    reps, ks, types, per_type, pps, b, seed, level = o.reps, o.ks, o.types, o.per_type, o.pps, o.b, o.seed, o.level
    if not specs:
        raise HarnessInputError("coverage suite: no populations")
    labels = [s.name() for s in specs]
    dup = sorted({x for x in labels if labels.count(x) > 1})
    if dup:
        raise HarnessInputError(f"coverage suite: population label {dup[0]!r} given twice")
    config = {"reps": reps, "K": list(ks), "types": types, "per_type": per_type, "pps": pps, "B": b, "seed": seed,
              "level": level}  # fmt: skip
    t0 = time.perf_counter()
    results = []
    for i, (spec, label) in enumerate(zip(specs, labels, strict=True)):
        if on_population is not None:
            on_population(i, len(specs), label)
        cache = None if cache_dir is None else Path(cache_dir) / f"{_slug(label)}.json"
        res = None if cache is None else _cached(cache, spec, config)
        if res is None:
            res = run_coverage(spec.load(), o, label=label, plots=None, progress=False, **_run_kw(config))
            if cache is not None:
                atomic_write_json(cache, {"spec": spec.__dict__, "config": config, "result": res.to_dict()})
        results.append(res)
    suite = SuiteResult(results, choose_defaults(results), config, time.perf_counter() - t0)
    if out_dir is not None:
        suite.files = write_suite(suite, out_dir)
    return suite


def _run_kw(config: dict) -> dict:
    return {
        "reps": config["reps"],
        "ks": tuple(config["K"]),
        "types": config["types"],
        "per_type": config["per_type"],
        "pps": config["pps"],
        "b": config["B"],
        "seed": config["seed"],
        "level": config["level"],
    }


def write_suite(suite: SuiteResult, out_dir: str | Path) -> list[str]:
    """Write ``suite.json`` and ``suite.csv`` atomically into ``out_dir`` (created if missing); return the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / "suite.json", suite.to_dict())
    cols = ["population", "design", "K", "key", "method", "target", "fpc", "coverage", "mc_margin", "mean_width",
            "median_width", "infinite_share", "default"]  # fmt: skip
    rows = (
        [res.label if c == "population" else r.get(c) for c in cols] for res in suite.results for r in res.table_rows()
    )
    atomic_write_text(out / "suite.csv", delimited_text(cols, rows))  # formula injection neutralised
    return [str(out / "suite.json"), str(out / "suite.csv")]


def load_suite(path: str | Path) -> SuiteResult:
    """Read a ``suite.json`` back (the choice is recomputed from the results with the current registry).

    Raises:
        HarnessInputError: missing or malformed file.
    """
    path = Path(path)
    data = read_json(path)
    try:
        results = [CoverageResult.from_dict(p, str(path)) for p in data["populations"]]
        config, seconds = data["config"], float(data["seconds"])
    except (KeyError, TypeError, ValueError) as exc:
        raise HarnessInputError(f"{path}: not a suite.json ({type(exc).__name__}: {exc})") from None
    return SuiteResult(results, choose_defaults(results), config, seconds, [str(path)])
