"""``harness coverage --run RUN --population KI_DIR...``: a run's design simulated on known-item populations, and the
design's entry in the committed evidence file (:class:`harness.stats.evidence.DesignEvidence`).

Populations of each known-item folder: every system's hit@1 (binary) and reciprocal rank (unit), and the paired
differences ``first system - each other system`` of both (labels ``<folder>:<system>/<outcome>``,
``<folder>:<a>-<b>/<outcome>``). The simulation is :mod:`harness.studies.coverage.goldset`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from harness.errors import HarnessInputError
from harness.io import atomic_write_json, read_jsonl
from harness.progress import progress_bar
from harness.stats.design_evidence import RunDesign, run_design
from harness.stats.evidence import EVIDENCE_PATH, DesignEvidence, MethodEvidence, read_evidence
from harness.studies.coverage.goldset import RULE, DesignCoverage, choose, simulate_design
from harness.studies.coverage.population import Population, load_population
from harness.studies.coverage.suite import SYNTHETIC


def folder_populations(folder: str | Path) -> list[tuple[str, Population]]:
    """``[(label, population)]`` of one ``--population`` source: a known-item folder (module docstring), the
    synthetic population (:data:`~harness.studies.coverage.suite.SYNTHETIC`: one binary hit@1 population, label
    ``synthetic:hit``; :func:`harness.studies.coverage.synthetic.synthetic_population`) or a ``.csv`` file (one
    population, label the file's stem).

    Raises:
        HarnessInputError: an unreadable folder, file or record.
    """
    if str(folder) == SYNTHETIC:
        from harness.studies.coverage.synthetic import synthetic_population

        return [("synthetic:hit", synthetic_population())]
    if str(folder).lower().endswith(".csv"):
        return [(Path(folder).stem, load_population(folder))]
    folder = Path(folder)
    systems = list(dict.fromkeys(str(o.get("system")) for _, o in read_jsonl(folder / "per_document.jsonl")))
    name = folder.name
    out = []
    for sy in systems:
        for oc in ("hit", "rr"):
            out.append((f"{name}:{sy}/{oc}", load_population(folder, system=sy, outcome=oc)))
    for other in systems[1:]:
        for oc in ("hit", "rr"):
            pop = load_population(folder, system=systems[0], outcome=oc, minus=other)
            out.append((f"{name}:{systems[0]}-{other}/{oc}", pop))
    return out


def design_of(run) -> RunDesign:
    """The design of a loaded run record (:func:`harness.stats.design_evidence.run_design`), or ``run`` itself when
    it is a :class:`RunDesign` (the study layer loads no run folder: the caller, ``harness coverage --run``, does)."""
    return run if isinstance(run, RunDesign) else run_design(run)


def run_design_coverage(
    run,
    populations: Sequence[str | Path | tuple[str, Population]],
    *,
    reps: int = 2000,
    b: int = 199,
    seed: int = 0,
    level: float = 0.95,
    progress: bool = False,
    sampling: str | None = None,
) -> DesignCoverage:
    """Simulate the design of ``run`` on every population of the known-item folders ``populations`` and apply the
    rule (:func:`harness.studies.coverage.goldset.choose`). ``populations``: known-item folders, or ``(label,
    population)`` pairs already loaded (:func:`folder_populations`). ``sampling`` (``"srs"``, ``"independent"`` or
    ``"pps"``): simulate the run's cluster sizes under this sampling instead of the run's own (what a PPS plan of
    the same sizes gives).

    Raises:
        HarnessInputError: no population, an unreadable run or folder, a design that cannot be drawn.
    """
    if not populations:
        raise HarnessInputError("--population: give at least one known-item output folder")
    design = design_of(run)
    if sampling is not None:
        if sampling not in ("srs", "independent", "pps"):
            raise HarnessInputError(f"--sampling {sampling!r}: expected srs, independent or pps")
        design = RunDesign(sampling, design.cluster_sizes, design.run)
    if len(design.cluster_sizes) < 2:
        raise HarnessInputError(f"--run {design.run}: the run has fewer than 2 clusters")
    t0 = time.perf_counter()
    pops = [lp for src in populations for lp in ([src] if isinstance(src, tuple) else folder_populations(src))]
    results = []
    with progress_bar("coverage for this design (populations)", len(pops), enabled=progress) as advance:
        for i, (label, pop) in enumerate(pops):
            results.append(simulate_design(pop, design, label=label, reps=reps, b=b, seed=seed, level=level, index=i))
            if advance is not None:
                advance(1)
    config = {"reps": reps, "B": b, "seed": seed, "level": level, "populations": [lab for lab, _ in pops]}
    return DesignCoverage(design, results, choose(results, design.sampling), config, time.perf_counter() - t0)


def design_entry(res: DesignCoverage, *, description: str, generated_by: str) -> DesignEvidence:
    """The evidence entry of ``res`` (coverage ranges per method and class at the run's K, and the defaults)."""
    methods: dict[str, dict[str, MethodEvidence]] = {}
    for cls, c in res.choice.items():
        for name, v in c["methods"].items():
            methods.setdefault(name, {})[cls] = MethodEvidence(
                min=v["min"],
                max=v["max"],
                where_min=v["where_min"],
                populations=v["populations"],
                max_width_ratio=v["max_width_ratio"],
                design=res.design.sampling,
                mc_margin=v["mc_margin"],
            )
    return DesignEvidence(
        sampling=res.design.sampling,
        cluster_sizes=list(res.design.cluster_sizes),
        estimand="macro" if res.design.sampling == "srs" else "micro",
        run=res.design.run,
        description=description,
        populations=[p.label for p in res.populations],
        reps=int(res.config["reps"]),
        seed=int(res.config["seed"]),
        level=float(res.config["level"]),
        generated_by=generated_by,
        rule=RULE,
        defaults={cls: c["default"] for cls, c in res.choice.items()},
        methods=methods,
    )


def write_design_evidence(entry: DesignEvidence, path: str | Path = EVIDENCE_PATH) -> Path:
    """Add ``entry`` to the evidence file at ``path`` (replacing an entry of the same design), atomically.

    Raises:
        HarnessInputError: the file is missing or malformed.
    """
    ev = read_evidence(path)
    designs = [d for d in ev.designs if d.key() != entry.key()] + [entry]
    atomic_write_json(path, ev.model_copy(update={"designs": designs}).model_dump(mode="json"))
    from harness.stats.evidence import _committed

    _committed.cache_clear()
    return Path(path)
