"""The dev curve of a multi-metric sweep as a figure (``harness sweep ... --plot curve.svg``): one panel per method
with a parameter (``wsum``: w; ``rrf``: k), the selection metric's dev mean per setting with its interval band
(:attr:`harness.evaluation.sweep_multi.MethodChoice.dev_intervals`), each constraint metric's dev mean (dashed), each
input alone on dev (dotted horizontal lines, labelled), settings the constraints excluded marked ``x`` and the chosen
one a star. A method without a parameter (``mnz``) is one point with its interval, in its own panel. Grayscale-safe
(line styles and markers), values on the 0-1 scale; written as a standalone SVG file, atomically.
"""

from __future__ import annotations

import io
from pathlib import Path

from matplotlib.figure import Figure

from harness.evaluation.sweep_multi import MultiSweepResult
from harness.io import atomic_write_text
from harness.report.plots import LINESTYLES, _new, _styled

__all__ = ["dev_curve_figure", "write_dev_curve"]


@_styled
def dev_curve_figure(r: MultiSweepResult) -> Figure:
    """The figure (module docstring)."""
    n = max(len(r.methods), 1)
    fig, axes = _new((4.2 * n + 0.6, 3.6), ncols=n, sharey=True)
    extra = [c.metric for c in r.constraints if c.metric != r.metric]
    for j, mc in enumerate(r.methods):
        ax = axes[0][j]
        xs = list(mc.grid) if mc.param else [0.0]
        ys = mc.dev[r.metric]
        lo = [iv["lower"] if iv else y for iv, y in zip(mc.dev_intervals, ys, strict=True)]
        hi = [iv["upper"] if iv else y for iv, y in zip(mc.dev_intervals, ys, strict=True)]
        if mc.param:
            ax.fill_between(xs, lo, hi, color="0.85", lw=0, label=f"{100 * r.interval_level:g} % interval")
            ax.plot(xs, ys, color="black", lw=1.4, label=f"dev {r.metric}")
        else:
            ax.errorbar(xs, ys, yerr=[[y - a for y, a in zip(ys, lo, strict=True)],
                                      [b - y for y, b in zip(ys, hi, strict=True)]],
                        fmt="o", color="black", capsize=3, label=f"dev {r.metric}")  # fmt: skip
        for k, metric in enumerate(extra):
            ax.plot(xs, mc.dev[metric], color="0.35", lw=1.1, ls=LINESTYLES[(k + 1) % len(LINESTYLES)],
                    marker="" if mc.param else "s", label=f"dev {metric}")  # fmt: skip
        bad = {x["system"] for x in mc.excluded}
        bx = [x for x, s in zip(xs, mc.settings, strict=True) if s in bad]
        by = [y for y, s in zip(ys, mc.settings, strict=True) if s in bad]
        if bx:
            ax.plot(bx, by, "x", color="black", ms=5, ls="", label="excluded by a constraint")
        if mc.chosen_system is not None:
            i = mc.settings.index(mc.chosen_system)
            ax.plot([xs[i]], [ys[i]], "*", color="black", ms=11, ls="", label=f"chosen {mc.chosen_system}")
        for k, (name, v) in enumerate(r.dev_inputs[r.metric].items()):
            ax.axhline(v, color="0.5", lw=0.8, ls=":")
            ax.annotate(f"{name} alone", (1.0, v), xycoords=("axes fraction", "data"), ha="right", va="bottom",
                        fontsize=7, color="0.3", xytext=(0, 1 + 6 * k), textcoords="offset points")  # fmt: skip
        ax.set_title(f"{mc.fusion} ({len(mc.settings)} setting{'s' if len(mc.settings) != 1 else ''})")
        ax.set_xlabel(mc.param or "(no parameter)")
        if not mc.param:
            ax.set_xticks([])
        ax.set_ylim(0, 1.02)
        ax.grid(axis="y", color="0.9", lw=0.6)
        ax.legend(loc="lower right", fontsize=7, frameon=False)
    axes[0][0].set_ylabel(f"dev mean (0-1), {r.n_dev} questions")
    return fig


def write_dev_curve(r: MultiSweepResult, path: str | Path) -> Path:
    """Write :func:`dev_curve_figure` to ``path`` as SVG (atomically); return the path."""
    import matplotlib.pyplot as plt

    fig = dev_curve_figure(r)
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    plt.close(fig)
    atomic_write_text(path, buf.getvalue())
    return Path(path)
