"""Results of the coverage study: per design (:class:`DesignResult`), per population (:class:`CoverageResult`), their
files (``coverage.json``, ``coverage.csv``, figures) and their terminal tables.

A row of a design (``DesignResult.rows[method_key]``) holds, for one interval method: ``method`` (the registry name,
:data:`METHODS`), ``target`` (``micro`` or ``macro``), ``fpc`` (the finite-population-corrected variant),
``coverage`` (a fraction), ``mc_margin`` (``1.96 sqrt(p (1 - p) / R)``), ``mean_width`` and ``median_width`` (over the
samples whose interval has two finite bounds, clipped to [0, 1] for outcomes in [0, 1]; ``nan`` when there are
none), ``infinite_share`` (share of samples with an infinite bound) and ``default`` (the method ``run`` and ``gate``
use for this population's outcome type, :data:`harness.stats.methods.DEFAULTS`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import HarnessInputError
from harness.io import atomic_write_json, atomic_write_text, read_json
from harness.studies.coverage.catalog import METHODS, PUBLISHED_COVERAGE
from harness.tabular import delimited_text


@dataclass
class DesignResult:
    """Coverage of every method under one design.

    Attributes:
        design: ``"srs"``, ``"two-stage"`` or ``"pps"``.
        k: documents (draws) per sample.
        reps: R.
        rows: ``{method_key: row}`` (module docstring); ``method_key`` is a :data:`METHODS` name, ``+ "_fpc"`` for the
            FPC variant.
        seconds: wall time.
        note: design details (types, fraction, skipped reason).
    """

    design: str
    k: int
    reps: int
    rows: dict[str, dict]
    seconds: float
    note: dict = field(default_factory=dict)


@dataclass
class CoverageResult:
    """What :func:`harness.studies.coverage.run_coverage` produced for one population.

    Attributes:
        population: summary of the population (label, system, outcome, documents, queries, micro, macro, diagnostics).
        config: reps, K list, B, seed, level, designs.
        designs: list of :class:`DesignResult` (SRS for each K, then two-stage, then PPS for each K).
        seconds: wall time of the whole study.
        files: paths written.
    """

    population: dict
    config: dict
    designs: list[DesignResult]
    seconds: float
    files: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        """The population's label (e.g. ``w100:bm25/hit``), or its system name."""
        return str(self.population.get("label") or self.population["system"])

    def design(self, design: str, k: int | None = None) -> DesignResult | None:
        """The result of ``design`` (at ``k`` documents for ``srs``/``pps``), or None."""
        for d in self.designs:
            if d.design == design and (k is None or d.k == k):
                return d
        return None

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

    @classmethod
    def from_dict(cls, data: dict, source: str = "") -> CoverageResult:
        """The inverse of :meth:`to_dict`. Raises HarnessInputError (naming ``source``) on a malformed dict."""
        try:
            designs = [
                DesignResult(
                    d["design"], int(d["K"]), int(d["reps"]), d["rows"], float(d["seconds"]), d.get("note", {})
                )
                for d in data["designs"]
            ]
            return cls(data["population"], data["config"], designs, float(data["seconds"]), [source] if source else [])
        except (KeyError, TypeError, ValueError) as exc:
            raise HarnessInputError(f"{source}: not a coverage.json ({type(exc).__name__}: {exc})") from None

    def table_rows(self) -> list[dict]:
        """Flat rows (design, K, method, fpc, coverage, margin, width) for CSV and plots."""
        out = []
        for d in self.designs:
            for key, r in d.rows.items():
                out.append({"design": d.design, "K": d.k, "key": key, **r})
        return out

    def __rich__(self):
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        p = self.population
        items = []
        head = Table(
            title=Text(f"Population: {self.label} ({p['outcome']}), {p['documents']} documents, {p['queries']} rows"),
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
                items.append(Text(f"{d.design} K={d.k}: skipped ({d.note.get('skipped')})", style="yellow"))
                continue
            title = (
                f"{100 * float(self.config.get('level', 0.95)):g} % coverage, {d.design} K={d.k}"
                + (f" ({d.note['h']} types x {d.note['m']})" if d.design == "two-stage" else "")
                + f", R={d.reps}, {d.seconds:.1f} s"
            )
            t = Table(
                title=title,
                caption="coverage +- Monte Carlo margin 1.96 sqrt(p(1-p)/R); width: finite intervals, clipped to [0,1]",
            )
            for col in ("method", "target", "coverage", "+FPC", "mean width", "+FPC width", "inf.", "published (K=20)"):
                t.add_column(col, justify="left" if col in ("method", "target") else "right")
            for m, (target, label) in METHODS.items():
                if m not in d.rows:
                    continue
                a, f = d.rows[m], d.rows.get(m + "_fpc")
                pub = PUBLISHED_COVERAGE.get(m) if d.design == "srs" and d.k == 20 else None
                t.add_row(
                    Text(label + (" (default)" if a.get("default") else "")),
                    target,
                    f"{100 * a['coverage']:.1f} +- {100 * a['mc_margin']:.1f}",
                    "-" if f is None else f"{100 * f['coverage']:.1f}",
                    f"{a['mean_width']:.4f}",
                    "-" if f is None else f"{f['mean_width']:.4f}",
                    f"{100 * a['infinite_share']:.1f} %",
                    "-" if pub is None else f"{100 * pub:.1f}",
                )
            items.append(t)
        items.append(Text(f"coverage study wall time: {self.seconds:.1f} s"))
        return Group(*items)


def load_coverage(path: str | Path) -> CoverageResult:
    """Read a ``coverage.json`` back into a :class:`CoverageResult` (to re-render or re-plot it).

    Raises:
        HarnessInputError: missing or malformed file.
    """
    path = Path(path)
    return CoverageResult.from_dict(read_json(path), str(path))


#: Draws a coverage study's figures: ``(coverage.json dict, out_dir) -> paths written``. The study layer draws
#: nothing itself (it sits below :mod:`harness.report`); the caller passes
#: :func:`harness.report.study_plots.coverage_figures`.
PlotWriter = Callable[[dict, Path], list[Path]]


def write_coverage(result: CoverageResult, out_dir: str | Path, *, plots: PlotWriter | None = None) -> list[str]:
    """Write ``coverage.json``, ``coverage.csv`` and (with ``plots``) the figures atomically into ``out_dir``; return
    the paths."""
    out = Path(out_dir)
    files = []
    atomic_write_json(out / "coverage.json", result.to_dict())
    files.append(str(out / "coverage.json"))
    cols = ["design", "K", "key", "method", "target", "fpc", "coverage", "mc_margin", "mean_width", "median_width"]
    cols += ["infinite_share", "default"]
    rows = ([r.get(c) for c in cols] for r in result.table_rows())
    atomic_write_text(out / "coverage.csv", delimited_text(cols, rows))  # formula injection neutralised
    files.append(str(out / "coverage.csv"))
    if plots:
        files.extend(str(p) for p in plots(result.to_dict(), out))
    return files
