"""Interval coverage on the user's own corpus: one outcome's per-document sums as a finite population, sampled R times.

The population (:mod:`harness.studies.coverage.population`) holds per-document sufficient statistics ``(n_i, s_i)``
(queries and hits of document i for the known-item outcome; plus sums of squares for a non-binary outcome). Its values
are the micro mean ``theta = sum(s) / sum(n)`` and the macro mean ``mu = mean(s_i / n_i)``. An evaluator's sampling
design is repeated ``reps`` times; in each replicate every interval method computes its interval from the sampled
documents, and we count how often it covers the population value (Monte Carlo margin ``1.96 sqrt(p (1 - p) / R)``)
and its mean width. This module holds no statistics: the intervals come from the batched kernels of
:mod:`harness.stats.batched`, one per method of the registry :mod:`harness.stats.methods` (every registered method that
applies to the outcome type is studied), plus three study comparators (below).

Designs
-------
* ``srs``: simple random sampling of K documents without replacement; finite-population correction (FPC)
  ``1 - K / D`` (D documents in the population).
* ``two-stage``: simple random sampling of ``types`` document types (``doc_type``; types with fewer than
  ``max(5, per_type)`` documents pooled as ``"other"``), then ``per_type`` documents within each selected type.
  The document-level methods are applied as an evaluator who ignores the design would apply them (the unweighted
  sample, FPC ``1 - K / D`` with ``K = types * per_type``). The design-based comparator ``twostage_micro`` /
  ``twostage_macro`` uses the design-weighted (Horvitz-Thompson ratio) estimator and Cochran's two-stage variance
  (:func:`harness.stats.batched.twostage_ratio_intervals`).

Methods (level 0.95 by default; each "+FPC" variant multiplies the variance by ``1 - f``)
---------------------------------------------------------------------------------------
Every registered interval method (:data:`harness.stats.methods.INTERVALS`) whose outcome types include the
population's, by its registry name; ``f = K / D`` for the clustered methods, the iid methods' FPC uses the row
fraction ``N / sum(n)`` (the analyst who treats chunks as the units). Comparators with no scalar function (they are
not offered by ``run``): ``chunk_bootstrap`` (rows resampled as if independent; binary outcomes), ``macro_boot_t``
(document bootstrap-t of the macro mean) and the two-stage design-based intervals.

Widths are measured after clipping intervals to [0, 1] when the outcome lies in [0, 1]; coverage counts
``lower <= value <= upper``; ``infinite_share`` is the share of samples with an infinite bound.

Randomness: replicate block j of design d at size K uses ``SeedSequence([seed, d, K, j])`` for the sample and the
shared resamples (:class:`harness.stats.batched.Resamples`), so results depend neither on ``threads`` nor on which
methods run. Speed: one block of replicates is ``(reps_in_block, B, K)`` arrays (bounded by ``block_elements``),
blocks run on ``threads`` threads.
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import harness.stats.batched as batched
from harness.errors import HarnessInputError
from harness.io import atomic_write_json, atomic_write_text, read_json
from harness.progress import progress_bar
from harness.stats.design import design_diagnostics
from harness.stats.methods import DEFAULTS, INTERVALS, display_order
from harness.studies.coverage.population import Population, load_population

#: Published 95 % coverage at K = 20 documents, 5,000 draws (1,300 regulatory documents; no FPC), by method name.
PUBLISHED_COVERAGE = {
    "iid_wald": 0.295,
    "chunk_bootstrap": 0.250,
    "iid_wald_effective": 0.890,
    "cr2": 0.857,
    "bootstrap_t": 0.884,
    "cluster_t": 0.930,
    "macro_boot_t": 0.972,
}


@dataclass(frozen=True)
class _Studied:
    """A method the study runs: the registry's, or a comparator (no scalar function)."""

    target: str
    label: str
    kernel: Callable | None
    fpc: str | None
    outcomes: tuple[str, ...]
    order: float


_COMPARATORS = {
    "macro_boot_t": _Studied("macro", "cluster bootstrap-t of the macro mean", batched.macro_bootstrap_t_kernel,
                             "clusters", ("binary", "unit", "continuous"), 4.5),
    "chunk_bootstrap": _Studied("micro", "chunk bootstrap (contrast only)", batched.row_bootstrap_kernel, "rows",
                                ("binary",), 9.5),
    "twostage_micro": _Studied("micro", "two-stage design-based (weighted)", None, "clusters",
                               ("binary", "unit", "continuous"), 10.0),
    "twostage_macro": _Studied("macro", "two-stage design-based (weighted)", None, "clusters",
                               ("binary", "unit", "continuous"), 11.0),
}  # fmt: skip


def _studied() -> dict[str, _Studied]:
    reg = {
        m.name: _Studied(m.estimand, m.label, m.kernel, m.fpc, m.outcomes, float(m.order))
        for m in (INTERVALS[k] for k in display_order())
    }
    return dict(sorted({**reg, **_COMPARATORS}.items(), key=lambda kv: kv[1].order))


#: ``method name -> (target, label)`` for every method the study can report, in table order (registry + comparators).
METHODS: dict[str, tuple[str, str]] = {k: (v.target, v.label) for k, v in _studied().items()}


def _sample_intervals(
    ns: np.ndarray,
    ss: np.ndarray,
    sq: np.ndarray | None,
    draws: batched.Resamples,
    level: float,
    f_docs: float,
    n_pop_rows: float,
    outcome: str = "binary",
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every document-level method's intervals, without and with FPC, for r samples of K documents.

    Args:
        ns, ss: shape (r, K), the sampled documents' rows and outcome sums; ``sq`` their sums of squares (None:
            binary outcome).
        draws: the shared resamples of this block.
        level: confidence level.
        f_docs: document sampling fraction K / D (clustered methods' FPC ``1 - f``).
        n_pop_rows: rows in the population (the iid methods' FPC is ``1 - N / n_pop_rows``).
        outcome: the population's outcome type (methods that do not apply are skipped).

    Returns:
        ``{method or method+"_fpc": (lower (r,), upper (r,))}`` plus ``"_estimates"``: (micro (r,), macro (r,)).
    """
    batch = batched.ClusterBatch(ns, ss, sq)
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, m in _studied().items():
        if m.kernel is None or outcome not in m.outcomes:
            continue
        factors: tuple = (1.0,)
        if m.fpc == "clusters":
            factors = (1.0, 1.0 - f_docs)
        elif m.fpc == "rows":
            factors = (1.0, 1.0 - batch.N / n_pop_rows)
        bounds = m.kernel(batch, level, factors, draws)
        out[name] = bounds[0]
        if len(bounds) > 1:
            out[name + "_fpc"] = bounds[1]
    out["_estimates"] = (batch.p, batch.macro)
    return out


# --------------------------------------------------------------------------------------------------------------
# The study
# --------------------------------------------------------------------------------------------------------------


def _pool_types(types: Sequence[str], min_docs: int) -> tuple[list[str], np.ndarray]:
    cnt = Counter(types)
    pooled = [t if cnt[t] >= min_docs else "other" for t in types]
    labels = sorted(set(pooled))
    code = {t: i for i, t in enumerate(labels)}
    return labels, np.asarray([code[t] for t in pooled], dtype=np.int64)


@dataclass
class DesignResult:
    """Coverage of every method under one design.

    Attributes:
        design: ``"srs"`` or ``"two-stage"``.
        k: documents per sample.
        reps: R.
        rows: ``{method_key: {"method", "target", "fpc", "coverage", "mc_margin", "mean_width", "median_width",
            "infinite_share", "default"}}``; ``method_key`` is a :data:`METHODS` name, ``+ "_fpc"`` for the FPC
            variant; ``default`` marks the method (without FPC) that ``run`` and ``gate`` use for this outcome type
            (:data:`harness.stats.methods.DEFAULTS`).
        seconds: wall time.
        note: design details (types, fraction, skipped reason).
    """

    design: str
    k: int
    reps: int
    rows: dict[str, dict]
    seconds: float
    note: dict = field(default_factory=dict)


def _summarise(
    intervals: dict[str, tuple[np.ndarray, np.ndarray]], theta: float, mu: float, reps: int, outcome: str
) -> dict:
    rows = {}
    unit = outcome in ("binary", "unit")
    for key, (lo, hi) in intervals.items():
        if key.startswith("_"):
            continue
        base = key.removesuffix("_fpc")
        target = METHODS[base][0]
        val = theta if target == "micro" else mu
        cov = (lo <= val) & (val <= hi)
        p = float(cov.mean())
        width = np.clip(hi, 0, 1) - np.clip(lo, 0, 1) if unit else hi - lo
        rows[key] = {
            "method": base,
            "target": target,
            "fpc": key.endswith("_fpc"),
            "coverage": p,
            "mc_margin": 1.96 * math.sqrt(p * (1 - p) / reps),
            "mean_width": float(width.mean()),
            "median_width": float(np.median(width)),
            "infinite_share": float(np.mean(~(np.isfinite(lo) & np.isfinite(hi)))),
            "default": base == DEFAULTS[outcome] and not key.endswith("_fpc"),
        }
    return rows


def _blocks(reps: int, per_block: int) -> list[tuple[int, int]]:
    return [(a, min(a + per_block, reps)) for a in range(0, reps, per_block)]


def _run_blocks(fn, blocks: list[tuple[int, int]], threads: int, advance=None) -> list:
    """``fn(j, a, z)`` for every block ``j`` of replicates ``a:z`` (in threads), ``advance(z - a)`` after each."""

    def one(j: int, a: int, z: int):
        out = fn(j, a, z)
        if advance is not None:
            advance(z - a)
        return out

    if threads <= 1 or len(blocks) == 1:
        return [one(i, a, b) for i, (a, b) in enumerate(blocks)]
    with ThreadPoolExecutor(threads) as ex:
        return list(ex.map(lambda x: one(x[0], *x[1]), enumerate(blocks)))


def _concat(parts: list[dict]) -> dict:
    return {k: tuple(np.concatenate([p[k][j] for p in parts]) for j in range(2)) for k in parts[0]}


def study_design(
    pop: Population,
    design: str,
    *,
    k: int = 20,
    types: int = 6,
    per_type: int = 4,
    reps: int = 5000,
    b: int = 999,
    seed: int = 0,
    level: float = 0.95,
    threads: int = 2,
    block_elements: int = 1 << 21,
    advance=None,
) -> DesignResult:
    """Coverage of every interval method under one design (see the module docstring).

    Args:
        pop: the finite population.
        design: ``"srs"`` (K documents) or ``"two-stage"`` (``types`` types x ``per_type`` documents).
        k: documents per sample for ``srs`` (2 <= k <= D).
        types, per_type: two-stage sizes.
        reps: R, the number of samples.
        b: bootstrap replicates per sample.
        seed: seed; replicate block j of design d at size K uses ``SeedSequence([seed, d, K, j])``, so results do
            not depend on ``threads``.
        level: confidence level.
        threads: worker threads over replicate blocks.
        block_elements: bound on ``reps_in_block * b * K`` (memory: about 20 float64 arrays of this size per thread).
        advance: called with the number of samples done after each block (a progress display; changes nothing).

    Returns:
        A :class:`DesignResult`; a design that cannot be drawn (K > D, too few types) comes back with empty rows and
        ``note["skipped"]``.
    """
    t0 = time.perf_counter()
    d = pop.n.size
    theta, mu = pop.micro, pop.macro
    n_rows = float(pop.n.sum())
    outcome = pop.outcome

    def _sq(idx: np.ndarray) -> np.ndarray | None:
        return None if pop.ss is None else pop.ss[idx]

    if design == "srs":
        if not 2 <= k <= d:
            return DesignResult(design, k, reps, {}, 0.0, {"skipped": f"K={k} outside [2, {d}]"})
        per_block = max(1, block_elements // (b * k))
        f = k / d

        def fn(j: int, a: int, z: int) -> dict:
            rng = np.random.default_rng(np.random.SeedSequence([seed, 0, k, j]))
            keys = rng.random((z - a, d))
            idx = np.argpartition(keys, k - 1, axis=1)[:, :k]
            draws = batched.Resamples(rng, b, (seed, 0, k, j))
            return _sample_intervals(pop.n[idx], pop.s[idx], _sq(idx), draws, level, f, n_rows, outcome)

        parts = _run_blocks(fn, _blocks(reps, per_block), threads, advance)
        res = _concat(parts)
        rows = _summarise(res, theta, mu, reps, outcome)
        note = {"fraction": f, "documents": d}
        return DesignResult(design, k, reps, rows, time.perf_counter() - t0, note)
    if design != "two-stage":
        raise HarnessInputError(f"design {design!r}: expected 'srs' or 'two-stage'")
    labels, codes = _pool_types(pop.doc_types, max(5, per_type))
    sizes = np.bincount(codes, minlength=len(labels))
    big_h = len(labels)
    kk = types * per_type
    note = {"types": dict(zip(labels, sizes.tolist(), strict=True)), "h": types, "m": per_type, "H": big_h}
    if types < 2 or types > big_h or per_type < 1:
        return DesignResult(design, kk, reps, {}, 0.0, {**note, "skipped": f"need 2 <= types <= {big_h}"})
    if sizes.min() < per_type:
        small = [lab for lab, z in zip(labels, sizes, strict=True) if z < per_type]
        return DesignResult(
            design, kk, reps, {}, 0.0, {**note, "skipped": f"types {small} have fewer than {per_type} documents"}
        )
    members = [np.flatnonzero(codes == g) for g in range(big_h)]
    per_block = max(1, block_elements // (b * kk))
    f = kk / d

    def fn2(j: int, a: int, z: int) -> dict:
        rng = np.random.default_rng(np.random.SeedSequence([seed, 1, kk, j]))
        r = z - a
        tsel = np.argpartition(rng.random((r, big_h)), types - 1, axis=1)[:, :types]  # (r, h)
        within = np.empty((r, big_h, per_type), dtype=np.int64)
        for g, mem in enumerate(members):
            pick = np.argpartition(rng.random((r, mem.size)), per_type - 1, axis=1)[:, :per_type]
            within[:, g, :] = mem[pick]
        docs = np.take_along_axis(within, tsel[:, :, None], axis=1)  # (r, h, m)
        nt, st = pop.n[docs], pop.s[docs]
        sq = None if pop.ss is None else pop.ss[docs].reshape(r, kk)
        draws = batched.Resamples(rng, b, (seed, 1, kk, j))
        out = _sample_intervals(nt.reshape(r, kk), st.reshape(r, kk), sq, draws, level, f, n_rows, outcome)
        out.update(batched.twostage_ratio_intervals(nt, st, sizes[tsel], big_h, level))
        return out

    parts = _run_blocks(fn2, _blocks(reps, per_block), threads, advance)
    res = _concat(parts)
    rows = _summarise(res, theta, mu, reps, outcome)
    note.update(
        {
            "fraction": f,
            "documents": d,
            "mean_naive_micro": float(res["_estimates"][0].mean()),
            "mean_weighted_micro": float(res["_estimates_w"][0].mean()),
        }
    )
    return DesignResult(design, kk, reps, rows, time.perf_counter() - t0, note)


@dataclass
class CoverageResult:
    """What :func:`run_coverage` produced.

    Attributes:
        population: summary of the population (system, documents, queries, micro, macro, diagnostics).
        config: reps, K list, B, seed, level, designs.
        designs: list of :class:`DesignResult` (SRS for each K, then two-stage).
        seconds: wall time of the whole study.
        files: paths written.
    """

    population: dict
    config: dict
    designs: list[DesignResult]
    seconds: float
    files: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-serialisable form (``coverage.json``)."""
        return {
            "population": self.population,
            "config": self.config,
            "seconds": round(self.seconds, 3),
            "designs": [
                {
                    "design": d.design,
                    "K": d.k,
                    "reps": d.reps,
                    "seconds": round(d.seconds, 3),
                    "note": d.note,
                    "rows": d.rows,
                }
                for d in self.designs
            ],
            "published_k20": PUBLISHED_COVERAGE,
        }

    def table_rows(self) -> list[dict]:
        """Flat rows (design, K, method, fpc, coverage, margin, width) for CSV and plots."""
        out = []
        for d in self.designs:
            for key, r in d.rows.items():
                out.append({"design": d.design, "K": d.k, "key": key, **r})
        return out

    def __rich__(self):
        from rich.console import Group
        from rich.markup import escape
        from rich.table import Table

        p = self.population
        items = []
        head = Table(
            title=f"Population: {escape(str(p['system']))} outcomes, {p['documents']} documents, {p['queries']} rows",
            show_header=True,
        )
        for col in ("micro", "macro", "ICC", "DEFF", "N_eff", "lag-1 r", "top-10 % docs' share"):
            head.add_column(col, justify="right")
        dg = p["diagnostics"]
        head.add_row(
            f"{100 * p['micro']:.2f} %",
            f"{100 * p['macro']:.2f} %",
            f"{dg['icc']:.3f}",
            f"{dg['deff']:.1f}",
            f"{dg['n_eff']:.0f}",
            "-" if math.isnan(dg["lag1_autocorrelation"]) else f"{dg['lag1_autocorrelation']:.3f}",
            f"{100 * dg['share_chunks_top10pct_docs']:.1f} %",
        )
        items.append(head)
        for d in self.designs:
            if not d.rows:
                items.append(f"[yellow]{d.design} K={d.k}: skipped ({escape(str(d.note.get('skipped')))})")
                continue
            title = (
                f"{100 * float(self.config.get('level', 0.95)):g} % coverage, {d.design} K={d.k}"
                + (f" ({d.note['h']} types x {d.note['m']})" if d.design == "two-stage" else "")
                + f", R={d.reps}, {d.seconds:.1f} s"
            )
            t = Table(title=title, caption="coverage +- Monte Carlo margin 1.96 sqrt(p(1-p)/R); width clipped to [0,1]")
            for col in ("method", "target", "coverage", "+FPC", "mean width", "+FPC width", "published (K=20)"):
                t.add_column(col, justify="left" if col in ("method", "target") else "right")
            for m, (target, label) in METHODS.items():
                if m not in d.rows:
                    continue
                a, f = d.rows[m], d.rows.get(m + "_fpc")
                pub = PUBLISHED_COVERAGE.get(m) if d.design == "srs" and d.k == 20 else None
                t.add_row(
                    escape(label) + (" (default)" if a.get("default") else ""),
                    target,
                    f"{100 * a['coverage']:.1f} +- {100 * a['mc_margin']:.1f}",
                    "-" if f is None else f"{100 * f['coverage']:.1f}",
                    f"{a['mean_width']:.4f}",
                    "-" if f is None else f"{f['mean_width']:.4f}",
                    "-" if pub is None else f"{100 * pub:.1f}",
                )
            items.append(t)
        items.append(f"coverage study wall time: {self.seconds:.1f} s")
        return Group(*items)


def run_coverage(
    population: str | Path | Population,
    *,
    reps: int = 5000,
    ks: Sequence[int] = (5, 10, 20, 40, 80),
    types: int = 6,
    per_type: int = 4,
    b: int = 999,
    seed: int = 0,
    level: float = 0.95,
    system: str | None = None,
    threads: int = 2,
    out_dir: str | Path | None = None,
    plots: bool = True,
    block_elements: int = 1 << 21,
    progress: bool = False,
) -> CoverageResult:
    """Run the coverage study (``harness coverage --population OUT_DIR``).

    Args:
        population: a known-item output folder (its ``per_document.jsonl``), a CSV file of ``doc_id,hit[,doc_type]``
            or ``doc_id,y[,doc_type]`` rows (:func:`load_population`), or a :class:`Population`.
        reps: R samples per design (>= 10).
        ks: K values of the SRS design.
        types, per_type: the two-stage design (``types = 0`` skips it).
        b: bootstrap replicates (>= 39 at level 0.95).
        seed: seed (see :func:`study_design`).
        level: confidence level.
        system: which system's outcomes (default: the first in the file).
        threads: worker threads.
        out_dir: where to write ``coverage.json``, ``coverage.csv`` and (``plots``) ``coverage_vs_k.svg/png``,
            ``width_vs_k.svg/png``; default the population folder when it is a known-item folder, nothing for a
            CSV file or a :class:`Population`.
        plots: write the plots.
        block_elements: memory bound (see :func:`study_design`).
        progress: a progress bar over every design's samples (elapsed time, ETA; :mod:`harness.progress`).

    Returns:
        A :class:`CoverageResult` (render it with ``rich.print``).

    Raises:
        HarnessInputError: unreadable population, bad sizes.
    """
    if reps < 10:
        raise HarnessInputError(f"--reps {reps}: need at least 10")
    if b < 39:
        raise HarnessInputError(f"--bootstrap-reps {b}: need at least 39 bootstrap replicates")
    folder = None if isinstance(population, Population) or Path(population).suffix.lower() == ".csv" else population
    pop = population if isinstance(population, Population) else load_population(population, system=system)
    default_out = None if folder is None else Path(folder)
    out = Path(out_dir) if out_dir is not None else default_out
    t0 = time.perf_counter()
    common = dict(reps=reps, b=b, seed=seed, level=level, threads=threads, block_elements=block_elements)
    n_designs = len(ks) + (1 if types else 0)
    with progress_bar("coverage study (samples, every design)", reps * n_designs, enabled=progress) as advance:
        designs = [study_design(pop, "srs", k=k, advance=advance, **common) for k in ks]
        if types:
            designs.append(study_design(pop, "two-stage", types=types, per_type=per_type, advance=advance, **common))
    secs = time.perf_counter() - t0
    diag = design_diagnostics(pop.n, pop.s, ss=pop.ss)
    popd = {
        "system": pop.system,
        "outcome": pop.outcome,
        "source": pop.source,
        "documents": int(pop.n.size),
        "queries": int(pop.n.sum()),
        "micro": pop.micro,
        "macro": pop.macro,
        "diagnostics": diag,
    }
    if folder is not None:
        summ = Path(folder) / "summary.json"
        if summ.exists():
            try:
                s = json.loads(summ.read_text(encoding="utf-8"))
                lag = s["systems"][pop.system]["diagnostics"]["lag1_autocorrelation"]
                popd["diagnostics"]["lag1_autocorrelation"] = lag
            except (KeyError, ValueError):
                pass
    config = {
        "reps": reps,
        "K": list(ks),
        "types": types,
        "per_type": per_type,
        "B": b,
        "seed": seed,
        "level": level,
        "threads": threads,
        "block_elements": block_elements,
    }
    result = CoverageResult(popd, config, designs, secs)
    if out is not None:
        result.files = write_coverage(result, out, plots=plots)
    return result


def load_coverage(path: str | Path) -> CoverageResult:
    """Read a ``coverage.json`` back into a :class:`CoverageResult` (to re-render or re-plot it).

    Raises:
        HarnessInputError: missing or malformed file.
    """
    path = Path(path)
    data = read_json(path)
    try:
        designs = [
            DesignResult(d["design"], int(d["K"]), int(d["reps"]), d["rows"], float(d["seconds"]), d.get("note", {}))
            for d in data["designs"]
        ]
        return CoverageResult(data["population"], data["config"], designs, float(data["seconds"]), [str(path)])
    except (KeyError, TypeError, ValueError) as exc:
        raise HarnessInputError(f"{path}: not a coverage.json ({type(exc).__name__}: {exc})") from None


def write_coverage(result: CoverageResult, out_dir: str | Path, *, plots: bool = True) -> list[str]:
    """Write ``coverage.json``, ``coverage.csv`` and the plots atomically into ``out_dir``; return the paths."""
    out = Path(out_dir)
    files = []
    atomic_write_json(out / "coverage.json", result.to_dict())
    files.append(str(out / "coverage.json"))
    cols = ["design", "K", "key", "method", "target", "fpc", "coverage", "mc_margin", "mean_width", "median_width"]
    cols += ["infinite_share", "default"]
    lines = [",".join(cols)]
    for r in result.table_rows():
        lines.append(",".join(str(r.get(c, "")) for c in cols))
    atomic_write_text(out / "coverage.csv", "\n".join(lines) + "\n")
    files.append(str(out / "coverage.csv"))
    if plots:
        from harness.report.study_plots import plot_coverage_vs_k, plot_width_vs_k

        labels = {k: v[1] + (" (macro)" if v[0] == "macro" else "") for k, v in METHODS.items()}
        macro = [k for k, v in METHODS.items() if v[0] == "macro"]
        data = result.to_dict()
        for ext in ("svg", "png"):
            files.append(str(plot_coverage_vs_k(data, out / f"coverage_vs_k.{ext}", labels=labels, open_markers=macro)))
            files.append(str(plot_width_vs_k(data, out / f"width_vs_k.{ext}", labels=labels, open_markers=macro)))
    return files
