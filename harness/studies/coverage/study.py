"""Interval coverage on the user's own corpus: one outcome's per-document sums as a finite population, sampled R times.

The population (:mod:`harness.studies.coverage.population`) holds per-document sufficient statistics ``(n_i, s_i)``
(queries and hits of document i for the known-item outcome; plus sums of squares for a non-binary outcome). Its values
are the micro mean ``theta = sum(s) / sum(n)`` and the macro mean ``mu = mean(s_i / n_i)``. An evaluator's sampling
design is repeated ``reps`` times; in each replicate every interval method computes its interval from the sampled
documents, and we count how often it covers the population value (Monte Carlo margin ``1.96 sqrt(p (1 - p) / R)``)
and its mean width. This module holds no statistics: the intervals come from the batched kernels of the registry
:mod:`harness.stats.methods` and the study's comparators (:mod:`harness.studies.coverage.catalog`).

Designs
-------
* ``srs``: simple random sampling of K documents without replacement; finite-population correction (FPC)
  ``1 - K / D`` (D documents in the population). Every SRS-design method runs, the frame methods (Wu's v_g) with
  the population's mean document size ``Xbar``.
* ``two-stage``: simple random sampling of ``types`` document types (``doc_type``; types with fewer than
  ``max(5, per_type)`` documents pooled as ``"other"``), then ``per_type`` documents within each selected type.
  The document-level methods are applied as an evaluator who ignores the design would apply them (the unweighted
  sample, FPC ``1 - K / D`` with ``K = types * per_type``). The design-based comparator ``twostage_micro`` /
  ``twostage_macro`` uses the design-weighted (Horvitz-Thompson ratio) estimator and Cochran's two-stage variance
  (:func:`harness.stats.batched.twostage_ratio_intervals`).
* ``pps``: K independent draws, each picking document i with probability ``n_i / sum(n)`` (with replacement; a
  document may come twice); the PPS-design methods (Hansen-Hurwitz, :mod:`harness.stats.pps`) run, without FPC.

Each "+FPC" variant multiplies the variance by ``1 - f``: ``f = K / D`` for the clustered methods, the row fraction
``N / sum(n)`` for the iid ones (the analyst who treats chunks as the units).

Widths are measured on the samples whose interval has two finite bounds, after clipping to [0, 1] when the outcome
lies in [0, 1]; coverage counts ``lower <= value <= upper``; ``infinite_share`` is the share of samples with an
infinite bound.

Randomness: replicate block j of design d (0 srs, 1 two-stage, 2 pps) at size K uses ``SeedSequence([seed, d, K,
j])`` for the sample and the shared resamples (:class:`harness.stats.batched.Resamples`), so results depend neither on
``threads`` nor on which methods run. Speed: one block of replicates is ``(reps_in_block, B, K)`` arrays (bounded by
``block_elements``), blocks run on ``threads`` threads.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

import harness.stats.batched as batched
from harness.errors import HarnessInputError
from harness.io import read_json
from harness.progress import progress_bar
from harness.stats.design import design_diagnostics
from harness.stats.methods import DEFAULTS
from harness.studies.coverage.catalog import METHODS, studied
from harness.studies.coverage.population import Population, load_population
from harness.studies.coverage.results import CoverageResult, DesignResult, write_coverage
from harness.studies.options import CoverageOptions

DESIGNS = ("srs", "two-stage", "pps")


def _sample_intervals(
    ns: np.ndarray,
    ss: np.ndarray,
    sq: np.ndarray | None,
    draws: batched.Resamples,
    level: float,
    f_docs: float,
    n_pop_rows: float,
    outcome: str = "binary",
    *,
    design: str = "srs",
    frame_mean_size: float | None = None,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every method's intervals for r samples of K documents under ``design``, without and with FPC.

    Args:
        ns, ss: shape (r, K), the sampled documents' rows and outcome sums; ``sq`` their sums of squares (None:
            binary outcome).
        draws: the shared resamples of this block.
        level: confidence level.
        f_docs: document sampling fraction K / D (clustered methods' FPC ``1 - f``; ignored under ``pps``).
        n_pop_rows: rows in the population (the iid methods' FPC is ``1 - N / n_pop_rows``).
        outcome: the population's outcome type (methods that do not apply are skipped).
        design: ``"srs"``/``"two-stage"`` (SRS-design methods and comparators) or ``"pps"`` (PPS-design methods).
        frame_mean_size: the population's mean document size (frame methods; None skips them).

    Returns:
        ``{method or method+"_fpc": (lower (r,), upper (r,))}`` plus ``"_estimates"``: (micro (r,), macro (r,)).
    """
    batch = batched.ClusterBatch(ns, ss, sq, frame_mean_size=frame_mean_size)
    want = "pps" if design == "pps" else "srs"
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, m in studied().items():
        if m.kernel is None or outcome not in m.outcomes or m.design != want or (m.frame and frame_mean_size is None):
            continue
        factors: tuple = (1.0,)
        if design != "pps" and m.fpc == "clusters":
            factors = (1.0, 1.0 - f_docs)
        elif design != "pps" and m.fpc == "rows":
            factors = (1.0, 1.0 - batch.N / n_pop_rows)
        bounds = m.kernel(batch, level, factors, draws)
        out[name] = bounds[0]
        if len(bounds) > 1:
            out[name + "_fpc"] = bounds[1]
    out["_estimates"] = (batch.p, batch.macro)
    return out


def _pool_types(types: Sequence[str], min_docs: int) -> tuple[list[str], np.ndarray]:
    cnt = Counter(types)
    pooled = [t if cnt[t] >= min_docs else "other" for t in types]
    labels = sorted(set(pooled))
    code = {t: i for i, t in enumerate(labels)}
    return labels, np.asarray([code[t] for t in pooled], dtype=np.int64)


def _summarise(
    intervals: dict[str, tuple[np.ndarray, np.ndarray]], theta: float, mu: float, reps: int, outcome: str, default: str
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
        finite = np.isfinite(lo) & np.isfinite(hi)
        width = (np.clip(hi, 0, 1) - np.clip(lo, 0, 1) if unit else hi - lo)[finite]
        rows[key] = {
            "method": base,
            "target": target,
            "fpc": key.endswith("_fpc"),
            "coverage": p,
            "mc_margin": 1.96 * math.sqrt(p * (1 - p) / reps),
            "mean_width": float(width.mean()) if width.size else math.nan,
            "median_width": float(np.median(width)) if width.size else math.nan,
            "infinite_share": float(np.mean(~finite)),
            "default": base == default and not key.endswith("_fpc"),
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
        design: ``"srs"`` or ``"pps"`` (K documents) or ``"two-stage"`` (``types`` types x ``per_type`` documents).
        k: documents (draws) per sample for ``srs`` (2 <= k <= D) and ``pps`` (k >= 2).
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

    Raises:
        HarnessInputError: an unknown design.
    """
    if design not in DESIGNS:
        raise HarnessInputError(f"design {design!r}: expected one of {', '.join(DESIGNS)}")
    t0 = time.perf_counter()
    d = pop.n.size
    theta, mu = pop.micro, pop.macro
    n_rows = float(pop.n.sum())
    outcome = pop.outcome
    default = DEFAULTS[pop.default_key]
    frame = pop.frame_mean_size

    def _sq(idx: np.ndarray) -> np.ndarray | None:
        return None if pop.ss is None else pop.ss[idx]

    def finish(parts: list[dict], note: dict) -> tuple[dict, DesignResult]:
        res = _concat(parts)
        rows = _summarise(res, theta, mu, reps, outcome, default)
        return res, DesignResult(design, k if design != "two-stage" else kk, reps, rows, time.perf_counter() - t0, note)

    kk = types * per_type
    if design in ("srs", "pps"):
        if design == "srs" and not 2 <= k <= d:
            return DesignResult(design, k, reps, {}, 0.0, {"skipped": f"K={k} outside [2, {d}]"})
        if design == "pps" and k < 2:
            return DesignResult(design, k, reps, {}, 0.0, {"skipped": f"K={k}: need at least 2 draws"})
        per_block = max(1, block_elements // (b * k))
        f = k / d
        code = DESIGNS.index(design)
        cum = np.cumsum(pop.n.astype(np.float64))

        def fn(j: int, a: int, z: int) -> dict:
            rng = np.random.default_rng(np.random.SeedSequence([seed, code, k, j]))
            if design == "srs":
                idx = np.argpartition(rng.random((z - a, d)), k - 1, axis=1)[:, :k]
            else:
                idx = np.minimum(np.searchsorted(cum, rng.random((z - a, k)) * cum[-1], side="right"), d - 1)
            draws = batched.Resamples(rng, b, (seed, code, k, j))
            return _sample_intervals(
                pop.n[idx], pop.s[idx], _sq(idx), draws, level, f, n_rows, outcome, design=design,
                frame_mean_size=frame,
            )  # fmt: skip

        note = {"fraction": f, "documents": d} if design == "srs" else {"documents": d, "with_replacement": True}
        return finish(_run_blocks(fn, _blocks(reps, per_block), threads, advance), note)[1]
    labels, codes = _pool_types(pop.doc_types, max(5, per_type))
    sizes = np.bincount(codes, minlength=len(labels))
    big_h = len(labels)
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
        out = _sample_intervals(
            nt.reshape(r, kk), st.reshape(r, kk), sq, draws, level, f, n_rows, outcome, frame_mean_size=frame
        )
        out.update(batched.twostage_ratio_intervals(nt, st, sizes[tsel], big_h, level))
        return out

    res, result = finish(_run_blocks(fn2, _blocks(reps, per_block), threads, advance), note)
    lo, hi = res["twostage_micro"]
    result.note.update(
        {
            "fraction": f,
            "documents": d,
            "mean_naive_micro": float(res["_estimates"][0].mean()),
            "mean_weighted_micro": float(res["_estimates_w"][0].mean()),
            "sd_weighted_micro": float(res["_estimates_w"][0].std(ddof=1)),
            "mean_se_weighted_micro": float(np.mean((hi - lo) / (2.0 * batched.t_crit(level, types - 1)))),
        }
    )
    return result


def _diagnostics(pop: Population, folder: Path | None) -> dict:
    rows = pop.rows
    if rows is not None:
        return design_diagnostics(pop.n, pop.s, ss=pop.ss, y=rows.y, cluster=rows.doc, position=rows.position)
    diag = design_diagnostics(pop.n, pop.s, ss=pop.ss)
    if folder is not None and pop.measure == "hit" and not pop.paired:
        summ = folder / "summary.json"
        if summ.exists():
            try:
                diag["lag1_autocorrelation"] = read_json(summ)["systems"][pop.system]["diagnostics"][
                    "lag1_autocorrelation"
                ]
            except (HarnessInputError, KeyError, TypeError):
                pass
    return diag


def run_coverage(
    population: str | Path | Population,
    options: CoverageOptions | None = None,
    *,
    system: str | None = None,
    outcome: str = "hit",
    minus: str | None = None,
    label: str | None = None,
    out_dir: str | Path | None = None,
    **fields: Any,
) -> CoverageResult:
    """Run the coverage study on one population (``harness coverage --population OUT_DIR``).

    Args:
        population: a known-item output folder, a CSV file of ``doc_id,hit[,doc_type]`` or ``doc_id,y[,doc_type]``
            rows (:func:`load_population`), or a :class:`Population`.
        options: the study's options (:class:`~harness.studies.options.CoverageOptions`: ``reps`` R samples per
            design (>= 10), ``ks`` of the SRS and PPS designs, ``types``/``per_type`` of the two-stage design
            (``types = 0`` skips it), ``pps``, ``b`` bootstrap replicates (>= 39 at level 0.95), ``seed`` (see
            :func:`study_design`), ``level``, ``threads``, ``block_elements`` (memory bound), ``progress``,
            ``plots`` (the figure writer, :func:`harness.report.study_plots.coverage_figures`; ``None`` draws
            none)); ``fields`` replace some of them (``reps=200``).
        system, outcome, minus: which outcome of a known-item folder (:func:`load_population`).
        label: the population's name in tables (default: the system name).
        out_dir: where to write ``coverage.json``, ``coverage.csv`` and (``plots``) ``coverage_vs_k.svg/png``,
            ``width_vs_k.svg/png``; default the population folder when it is a known-item folder and the outcome is
            its own hit@1, nothing otherwise.

    Returns:
        A :class:`CoverageResult` (render it with ``rich.print``).

    Raises:
        HarnessInputError: unreadable population, bad sizes.
        TypeError: a keyword that is no option.
    """
    o = CoverageOptions.of(options, **fields)
    reps, ks, types, per_type, pps, b, seed = o.reps, tuple(o.ks), o.types, o.per_type, o.pps, o.b, o.seed
    level, threads, block_elements, progress, plots = o.level, o.threads, o.block_elements, o.progress, o.plots
    if reps < 10:
        raise HarnessInputError(f"--reps {reps}: need at least 10")
    if b < 39:
        raise HarnessInputError(f"--bootstrap-reps {b}: need at least 39 bootstrap replicates")
    is_pop = isinstance(population, Population)
    folder = None if is_pop or Path(population).suffix.lower() == ".csv" else Path(population)
    if is_pop:
        pop = population
    else:
        pop = load_population(population, system=system, outcome=outcome, minus=minus)
    own = folder is not None and outcome == "hit" and minus is None
    out = Path(out_dir) if out_dir is not None else (folder if own else None)
    t0 = time.perf_counter()
    common = dict(reps=reps, b=b, seed=seed, level=level, threads=threads, block_elements=block_elements)
    n_designs = len(ks) * (2 if pps else 1) + (1 if types else 0)
    with progress_bar("coverage study (samples, every design)", reps * n_designs, enabled=progress) as advance:
        designs = [study_design(pop, "srs", k=k, advance=advance, **common) for k in ks]
        if types:
            designs.append(study_design(pop, "two-stage", types=types, per_type=per_type, advance=advance, **common))
        if pps:
            designs += [study_design(pop, "pps", k=k, advance=advance, **common) for k in ks]
    secs = time.perf_counter() - t0
    popd = {
        "label": label or pop.system,
        "system": pop.system,
        "outcome": pop.outcome,
        "measure": pop.measure,
        "paired": pop.paired,
        "default_key": pop.default_key,
        "source": pop.source,
        "documents": int(pop.n.size),
        "queries": int(pop.n.sum()),
        "micro": pop.micro,
        "macro": pop.macro,
        "frame_mean_size": pop.frame_mean_size,
        "diagnostics": _diagnostics(pop, folder),
    }
    config = {
        "reps": reps,
        "K": list(ks),
        "types": types,
        "per_type": per_type,
        "pps": pps,
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
