"""Report figures that stay readable with many systems (14 across three runs in the trial): each system's own
mean and interval per metric (:func:`system_intervals`), and a per-category heat table (:func:`category_heatmap`)
that replaces the grouped bars when there are more systems than :data:`BARS_UP_TO`.

Same conventions as :mod:`harness.report.plots` (values on the 0-1 scale, intervals ``(lower, upper)`` or ``None``,
glyphs as paths, ids prefixed by the figure id through :func:`harness.report.plots.figure_svg`); readable in
grayscale (the heat table prints every value in its cell; the interval plot uses position only).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from harness.report.plots import _new, _styled, _wrap

__all__ = ["BARS_UP_TO", "category_heatmap", "system_intervals"]

BARS_UP_TO = 8
"""With more systems than this, the per-category chart is a heat table instead of grouped bars."""


@_styled
def system_intervals(
    systems: Sequence[str],
    metrics: Sequence[str],
    values: Mapping[tuple[str, str], tuple[float, tuple[float, float] | None]],
    *,
    level: float = 0.95,
    interval_label: str = "CR2",
    baseline: str | None = None,
) -> Figure:
    """One panel per metric: each system's mean (dot) and its interval (line), systems top to bottom.

    Args:
        systems: labels in display order; metrics: metric ids (one panel each, shared y axis).
        values: ``{(system, metric): (mean, (lower, upper) or None)}``; a missing key draws nothing.
        level: interval level (axis text); baseline: a label drawn with an open marker and a dotted guide line at
            its mean in every panel.
        interval_label: the interval method's short name in the axis text (``CR2-logit``).

    Returns:
        The figure; x axes span [0, 1] (the metrics' range).
    """
    n = max(len(systems), 1)
    fig, axes = _new((2.6 * max(len(metrics), 1) + 2.2, 0.32 * n + 1.3), ncols=max(len(metrics), 1), sharey=True)
    ys = np.arange(n)[::-1]
    for j, metric in enumerate(metrics):
        ax = axes[0][j]
        for i, system in enumerate(systems):
            v = values.get((system, metric))
            if v is None:
                continue
            mean, iv = v
            if iv is not None:
                ax.plot([iv[0], iv[1]], [ys[i], ys[i]], color="black", lw=1.1, solid_capstyle="butt", zorder=2)
            base = system == baseline
            ax.plot([mean], [ys[i]], marker="o", ms=5, color="black", mfc="white" if base else "black", zorder=3, ls="")
            if base:
                ax.axvline(mean, color="0.55", lw=0.8, ls=":", zorder=1)
        ax.set_xlim(0, 1)
        ax.set_title(metric)
        ax.set_xlabel(f"mean, {100 * level:.0f} % {interval_label} interval (0-1)")
        ax.grid(axis="x", color="0.9", lw=0.6, zorder=0)
        ax.set_axisbelow(True)
    axes[0][0].set_yticks(ys)
    axes[0][0].set_yticklabels(list(systems))
    axes[0][0].set_ylim(-0.7, n - 0.3)
    return fig


@_styled
def category_heatmap(
    categories: Sequence[str],
    category_notes: Mapping[str, str],
    systems: Sequence[str],
    values: Mapping[tuple[str, str], tuple[float, tuple[float, float] | None]],
    *,
    metric_label: str = "MRR",
    level: float = 0.95,
    interval_label: str = "CR2",
) -> Figure:
    """A heat table of one metric: systems as rows, categories as columns, each cell its mean (printed) shaded
    from white (0) to dark (1), with the interval printed under the mean where there is one.

    Args: as :func:`harness.report.plots.category_bars`.

    Returns:
        The figure; a missing value is an empty, hatched cell.
    """
    n_sys, n_cat = max(len(systems), 1), max(len(categories), 1)
    fig, axes = _new((1.35 * n_cat + 2.6, 0.42 * n_sys + 1.6))
    ax = axes[0][0]
    grid = np.full((n_sys, n_cat), np.nan)
    for i, s in enumerate(systems):
        for j, c in enumerate(categories):
            if (s, c) in values:
                grid[i, j] = values[(s, c)][0]
    # a light ramp (1.0 is a mid grey), so the black text stays readable in every cell
    ax.imshow(np.nan_to_num(grid, nan=0.0), cmap="Greys", vmin=0.0, vmax=2.2, aspect="auto")
    for i, s in enumerate(systems):
        for j, c in enumerate(categories):
            v = values.get((s, c))
            if v is None:
                ax.add_patch(_hatched(j, i))
                continue
            mean, iv = v
            text = f"{mean:.2f}" + (f"\n[{iv[0]:.2f}, {iv[1]:.2f}]" if iv is not None else "")
            ax.text(j, i, text, ha="center", va="center", fontsize=7, color="black", linespacing=1.1)
    ax.set_xticks(range(n_cat))
    ax.set_xticklabels(
        [_wrap(c) + ("\n" + category_notes[c] if category_notes.get(c) else "") for c in categories], fontsize=7
    )
    ax.xaxis.tick_top()
    ax.set_yticks(range(n_sys))
    ax.set_yticklabels(list(systems))
    ax.set_xlabel(
        f"{metric_label} per category: mean (0-1) and {100 * level:.0f} % {interval_label} interval; darker = higher"
    )
    for side in ("left", "bottom", "top", "right"):
        ax.spines[side].set_visible(False)
    return fig


def _hatched(x: int, y: int):
    from matplotlib.patches import Rectangle

    return Rectangle((x - 0.5, y - 0.5), 1, 1, fill=False, hatch="///", edgecolor="0.7", lw=0)
