"""Figures of the label-free studies in the HTML report: the known-item hit-rate distribution and the
interval-coverage study (coverage and width against K), in the style of :mod:`harness.report.plots` (same palette,
markers, rc settings; rendered with :func:`harness.report.plots.figure_svg`).

Conventions: rates, coverages and widths are given on the 0-1 scale and drawn in percent / percentage points;
Monte Carlo margins are ``1.96 sqrt(p (1 - p) / R)``.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from harness.report.plots import (
    _RC,
    COLORS,
    LINESTYLES,
    MARKERS,
    _legend_above,
    _new,
    _plain_log,
    _styled,
    _ticks_125,
    style,
)


@_styled
def hit_rate_hist(rates: Mapping[str, Sequence[float]], *, bins: int = 20) -> Figure:
    """Distribution of per-document known-item hit@1 rates, one step histogram per system.

    Args:
        rates: ``{system: [rate per document in [0, 1]]}``.
        bins: equal-width bins over [0, 1] (the last bin includes 1).

    Returns:
        The figure; y is the share of documents in each bin (%).
    """
    fig, axes = _new((7.5, 4.0))
    ax = axes[0][0]
    edges = np.linspace(0.0, 1.0, bins + 1)
    for i, (system, r) in enumerate(rates.items()):
        st = style(i)
        arr = np.clip(np.asarray(r, dtype=float), 0, 1)
        if arr.size == 0:
            continue
        counts, _ = np.histogram(arr, bins=edges)
        share = 100.0 * counts / arr.size
        ax.stairs(share, edges, color=st["color"], ls=st["linestyle"], lw=1.5, label=f"{system} ({arr.size} documents)")
        centers = (edges[:-1] + edges[1:]) / 2
        ax.plot(centers, share, marker=st["marker"], color=st["color"], ms=3.5, ls="none")
    ax.set_xlim(0, 1)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("per-document hit@1 rate (share of the document's queries whose top result is the document, 0-1)")
    ax.set_ylabel(f"documents (% per bin of width {1 / bins:g})")
    ax.grid(True, color="0.9", lw=0.5)
    _legend_above(fig, ax, len(rates))
    return fig


def _method_style(k: int) -> tuple[str, object, str]:
    return MARKERS[k % len(MARKERS)], LINESTYLES[k % len(LINESTYLES)], COLORS[k % len(COLORS)]


@_styled
def coverage_vs_k(
    series: Mapping[str, Mapping[str, Sequence[tuple[int, float, float]]]],
    *,
    level: float,
    reps: int,
    labels: Mapping[str, str] | None = None,
    open_markers: Sequence[str] = (),
) -> Figure:
    """Coverage (%) against K per interval method, with the nominal line and the Monte Carlo band.

    Args:
        series: ``{panel title: {method: [(K, coverage 0-1, Monte Carlo margin 0-1), ...]}}`` (e.g. panels
            "without FPC" and "with FPC").
        level: nominal level (drawn as a line; the band is ``level +- 1.96 sqrt(level (1 - level) / reps)``).
        reps: Monte Carlo samples per point.
        labels: display name per method.
        open_markers: methods drawn with open (white-filled) markers, e.g. those targeting the macro rate.

    Returns:
        The figure; x is K on a log scale; each point carries its own Monte Carlo margin as an error bar.
    """
    panels = list(series)
    fig, axes = _new((max(7.5, 4.6 * len(panels)), 4.6), ncols=max(len(panels), 1), sharey=True)
    methods = list(dict.fromkeys(m for p in panels for m in series[p]))
    band = 1.96 * math.sqrt(level * (1 - level) / max(reps, 1))
    for p, title in enumerate(panels):
        ax = axes[0][p]
        ax.axhspan(
            100 * (level - band), 100 * (level + band), color="0.85", zorder=0, lw=0, label="nominal \u00b1 MC margin"
        )
        ax.axhline(100 * level, color="black", lw=0.9, zorder=1, label=f"nominal {100 * level:g} %")
        ks_all: set[int] = set()
        for m in methods:
            pts = series[title].get(m)
            if not pts:
                continue
            mk, ls, col = _method_style(methods.index(m))
            ks_all.update(k for k, _, _ in pts)
            ax.errorbar(
                [k for k, _, _ in pts],
                [100 * c for _, c, _ in pts],
                yerr=[100 * e for _, _, e in pts],
                marker=mk,
                ls=ls,
                color=col,
                mfc="white" if m in open_markers else col,
                capsize=2,
                lw=1.2,
                ms=5,
                label=(labels or {}).get(m, m),
            )
        ax.set_xscale("log")
        _plain_log(ax.xaxis, sorted(ks_all) or [1])
        ax.set_ylim(0, 100)
        ax.set_title(title)
        ax.set_xlabel("K, documents sampled (log scale)")
        ax.set_ylabel("coverage of the population value (%)")
        ax.yaxis.set_tick_params(labelleft=True)
        ax.grid(True, color="0.9", lw=0.5)
    handles, labs = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labs, loc="outside lower center", ncol=3, frameon=False)
    return fig


@_styled
def width_vs_k(
    series: Mapping[str, Mapping[str, Sequence[tuple[int, float]]]],
    *,
    labels: Mapping[str, str] | None = None,
    open_markers: Sequence[str] = (),
) -> Figure:
    """Mean interval width (percentage points) against K per method (log-log).

    Args:
        series: ``{panel title: {method: [(K, mean width 0-1), ...]}}``.
        labels: display name per method.
        open_markers: methods drawn with open markers.

    Returns:
        The figure.
    """
    panels = list(series)
    fig, axes = _new((max(7.5, 4.6 * len(panels)), 4.4), ncols=max(len(panels), 1), sharey=True)
    methods = list(dict.fromkeys(m for p in panels for m in series[p]))
    for p, title in enumerate(panels):
        ax = axes[0][p]
        ks_all: set[int] = set()
        for m in methods:
            pts = [(k, w) for k, w in series[title].get(m, []) if w > 0]
            if not pts:
                continue
            mk, ls, col = _method_style(methods.index(m))
            ks_all.update(k for k, _ in pts)
            ax.plot(
                [k for k, _ in pts],
                [100 * w for _, w in pts],
                marker=mk,
                ls=ls,
                color=col,
                mfc="white" if m in open_markers else col,
                lw=1.2,
                ms=5,
                label=(labels or {}).get(m, m),
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        _plain_log(ax.xaxis, sorted(ks_all) or [1])
        ws = [100 * w for pts in series[title].values() for _, w in pts if w > 0]
        if ws:
            _plain_log(ax.yaxis, _ticks_125(min(ws) / 1.3, max(ws) * 1.3, (1, 2, 3, 5)) or [min(ws)])
        ax.set_title(title)
        ax.set_xlabel("K, documents sampled (log scale)")
        ax.set_ylabel("mean interval width (percentage points, log scale)")
        ax.yaxis.set_tick_params(labelleft=True)
        ax.grid(True, which="both", color="0.9", lw=0.5)
    handles, labs = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labs, loc="outside lower center", ncol=3, frameon=False)
    return fig


# --------------------------------------------------------------------------------------------------------------
# Coverage-study figures written as files (``harness coverage``; moved here from the study)
# --------------------------------------------------------------------------------------------------------------


def _coverage_srs_series(cov: Mapping) -> tuple[dict, dict]:
    """``({panel: {method: [(K, coverage, margin)]}}, {panel: {method: [(K, width)]}})`` of the SRS designs of a
    ``coverage.json`` dict, panels "without FPC" and "with FPC (1 - K/D)"."""
    cser: dict[str, dict[str, list]] = {}
    wser: dict[str, dict[str, list]] = {}
    srs = sorted(
        (d for d in cov.get("designs", []) if d.get("design") == "srs" and d.get("rows")), key=lambda d: d["K"]
    )
    for d in srs:
        for key, r in d["rows"].items():
            panel = "with FPC (1 - K/D)" if r.get("fpc") else "without FPC"
            m = r.get("method", key.removesuffix("_fpc"))
            cser.setdefault(panel, {}).setdefault(m, []).append(
                (int(d["K"]), float(r["coverage"]), float(r["mc_margin"]))
            )
            wser.setdefault(panel, {}).setdefault(m, []).append((int(d["K"]), float(r["mean_width"])))
    order = [p for p in ("without FPC", "with FPC (1 - K/D)") if p in cser]
    return {p: cser[p] for p in order}, {p: wser[p] for p in order}


def _save_figure(fig: Figure, path):
    """Save ``fig`` atomically as SVG or PNG (by the suffix of ``path``; deterministic, no date); return the path."""
    import os
    import tempfile

    from harness.io import atomic_write_text

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    svg = path.suffix == ".svg"
    buf = io.StringIO() if svg else io.BytesIO()
    with plt.rc_context(_RC):
        fig.savefig(buf, format=path.suffix.lstrip("."), bbox_inches="tight", dpi=150,
                    metadata={"Date": None} if svg else None)  # fmt: skip
    plt.close(fig)
    if svg:
        atomic_write_text(path, buf.getvalue())
        return path
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(buf.getvalue())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def plot_coverage_vs_k(cov, path, *, labels: Mapping[str, str] | None = None, open_markers: Sequence[str] = ()):
    """Write the coverage-against-K figure (:func:`coverage_vs_k`, SRS designs, without and with FPC) of a coverage
    study to ``path`` (``.svg`` or ``.png``, atomically).

    Args: ``cov`` a ``coverage.json`` dict (or an object with ``to_dict()``, e.g.
        :class:`harness.studies.coverage.CoverageResult`); ``labels`` display name per method; ``open_markers``
        methods drawn with open markers (macro targets). Returns: ``path`` as a :class:`pathlib.Path`.
    """
    data = cov.to_dict() if hasattr(cov, "to_dict") else cov
    cser, _ = _coverage_srs_series(data)
    cfg = data.get("config", {})
    fig = coverage_vs_k(cser, level=float(cfg.get("level", 0.95)), reps=int(cfg.get("reps", 1) or 1), labels=labels,
                        open_markers=open_markers)  # fmt: skip
    return _save_figure(fig, path)


def plot_width_vs_k(cov, path, *, labels: Mapping[str, str] | None = None, open_markers: Sequence[str] = ()):
    """Write the mean-width-against-K figure (:func:`width_vs_k`) of a coverage study to ``path`` (``.svg``/``.png``);
    arguments as :func:`plot_coverage_vs_k`. Returns: ``path`` as a :class:`pathlib.Path`."""
    data = cov.to_dict() if hasattr(cov, "to_dict") else cov
    _, wser = _coverage_srs_series(data)
    return _save_figure(width_vs_k(wser, labels=labels, open_markers=open_markers), path)


def coverage_figures(cov, out_dir) -> list[Path]:
    """Write a coverage study's four figures into ``out_dir``: ``coverage_vs_k`` and ``width_vs_k``, each as
    ``.svg`` and ``.png`` (atomically), methods labelled from :data:`harness.studies.coverage.catalog.METHODS`
    (macro targets with open markers). The ``plots=`` argument of :func:`harness.studies.coverage.run_coverage`.

    Args: ``cov`` a ``coverage.json`` dict (or a :class:`~harness.studies.coverage.CoverageResult`); ``out_dir`` an
        existing folder. Returns: the four paths, in that order.
    """
    from harness.studies.coverage.catalog import METHODS

    labels = {k: v[1] + (" (macro)" if v[0] == "macro" else "") for k, v in METHODS.items()}
    macro = [k for k, v in METHODS.items() if v[0] == "macro"]
    out = Path(out_dir)
    files = []
    for ext in ("svg", "png"):
        files.append(plot_coverage_vs_k(cov, out / f"coverage_vs_k.{ext}", labels=labels, open_markers=macro))
        files.append(plot_width_vs_k(cov, out / f"width_vs_k.{ext}", labels=labels, open_markers=macro))
    return files
