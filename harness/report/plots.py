"""Figures of the HTML report: matplotlib (Agg) figures rendered to inline SVG with stable element ids.

Every function here takes plain data (lists and dicts read from run records) and returns a
:class:`matplotlib.figure.Figure`; :func:`figure_svg` turns a figure into an ``<svg>`` element for inlining.
Figures are readable in grayscale: systems differ by marker, line style and bar hatch as well as by colour (the
Okabe-Ito palette, safe for the common colour-vision deficiencies), and every axis names its unit.

Conventions:
    * metric values are proportions on the 0-1 scale (MRR, recall, all-hop, evidence recall);
    * intervals are given as ``(lower, upper)`` in the same units, or ``None`` where there is none;
    * glyphs are embedded as paths (``svg.fonttype = "path"``) so a figure renders identically without the fonts;
    * ids inside an SVG are prefixed with the figure id, so several inlined figures never share an id.

The figures of the known-item and coverage studies are in :mod:`harness.report.study_plots`, in the same style.
"""

from __future__ import annotations

import functools
import html
import io
import math
import re
from collections.abc import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

#: Okabe-Ito colours (Okabe & Ito 2008, "Color Universal Design"); its yellow (weak on white) replaced by grey.
COLORS = ("#000000", "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#8C8C8C")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 2)), (0, (8, 2, 2, 2)))
HATCHES = ("", "///", "...", "xx", "\\\\\\", "++", "oo", "--")

_RC = {
    "svg.fonttype": "path",
    "svg.hashsalt": "harness-report",
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.facecolor": "white",
    "hatch.linewidth": 0.6,
}


def style(i: int) -> dict:
    """Drawing style of the ``i``-th system (0-based): ``{"color", "marker", "linestyle", "hatch", "fill"}``.

    ``fill`` is the colour lightened towards white (bar faces), so black hatching stays visible.
    """
    color = COLORS[i % len(COLORS)]
    rgb = np.array(matplotlib.colors.to_rgb(color))
    fill = tuple(float(v) for v in (rgb + (1.0 - rgb) * 0.45))
    return {
        "color": color,
        "marker": MARKERS[i % len(MARKERS)],
        "linestyle": LINESTYLES[i % len(LINESTYLES)],
        "hatch": HATCHES[i % len(HATCHES)],
        "fill": fill,
    }


def _styled(func):
    """Run a figure function under the report's rc settings (fonts, spines, hatch width)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with plt.rc_context(_RC):
            return func(*args, **kwargs)

    return wrapper


def _new(figsize: tuple[float, float], ncols: int = 1, nrows: int = 1, **kw):
    fig, axes = plt.subplots(nrows, ncols, figsize=figsize, squeeze=False, layout="constrained", **kw)
    return fig, axes


def _ticks_125(lo: float, hi: float, subs: Sequence[int] = (1, 2, 5)) -> list[float]:
    """Ticks ``m * 10^e`` (``m`` in ``subs``) inside [lo, hi] (positive)."""
    out = []
    e = math.floor(math.log10(lo))
    while True:
        for m in subs:
            v = m * 10.0**e
            if v > hi * 1.0001:
                return out
            if v >= lo * 0.9999:
                out.append(v)
        e += 1


def _plain_log(axis, ticks: Sequence[float]) -> None:
    """Plain-number labels at ``ticks`` on a log axis (no 10^x notation, no minor labels)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

    axis.set_major_locator(FixedLocator(list(ticks)))
    axis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
    axis.set_minor_locator(NullLocator())
    axis.set_minor_formatter(NullFormatter())


_ID_RE = re.compile(r'\bid="([^"]+)"')


def figure_svg(fig: Figure, fig_id: str, *, title: str = "", close: bool = True) -> str:
    """Render ``fig`` as an inline ``<svg>`` element (a string without XML prolog).

    Args:
        fig: the figure.
        fig_id: prefix for every id inside the SVG (ids must be unique in an HTML document); the root element gets
            ``id="{fig_id}-svg"``, ``role="img"`` and a ``<title>``.
        title: accessible name (the ``<title>`` child).
        close: close the figure afterwards (frees matplotlib's memory).

    Returns:
        The ``<svg ...>...</svg>`` markup. Output is deterministic for the same figure (fixed hash salt, no date).
    """
    buf = io.StringIO()
    with plt.rc_context(_RC):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    if close:
        plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(r"<metadata>.*?</metadata>\s*", "", text, flags=re.S)
    # matplotlib writes each text (system names, categories...) into a comment beside its glyph paths; drop them:
    # they show nothing and carry input strings
    text = re.sub(r"<!--.*?-->\s*", "", text, flags=re.S)
    ids = set(_ID_RE.findall(text))
    if ids:
        text = _ID_RE.sub(lambda m: f'id="{fig_id}-{m.group(1)}"', text)
        ref = re.compile(
            r"(url\(#|href=\"#)(" + "|".join(re.escape(i) for i in sorted(ids, key=len, reverse=True)) + r")([)\"])"
        )
        text = ref.sub(lambda m: f"{m.group(1)}{fig_id}-{m.group(2)}{m.group(3)}", text)
    head_end = text.index(">")
    head = text[:head_end]
    head = re.sub(r'\s(width|height)="([\d.]+)pt"', lambda m: f' {m.group(1)}="{float(m.group(2)) * 4 / 3:.1f}"', head)
    esc = html.escape(title, quote=True)
    return (
        head
        + f' id="{fig_id}-svg" class="figure-svg" role="img" aria-labelledby="{fig_id}-title">'
        + f'<title id="{fig_id}-title">{esc}</title>'
        + text[head_end + 1 :].strip()
    )


def _wrap(label: str, width: int = 14) -> str:
    words = label.replace("_", " ").split()
    lines, cur = [], ""
    for w in words:
        if cur and len(cur) + 1 + len(w) > width:
            lines.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}".strip()
    if cur:
        lines.append(cur)
    return "\n".join(lines)


def _legend_above(fig: Figure, ax, n: int) -> None:
    """One legend for the figure, above the panels (constrained layout makes room)."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(
            handles,
            labels,
            loc="outside upper center",
            ncol=min(max(n, 1), 6),
            frameon=False,
            handlelength=2.8,
        )


# --------------------------------------------------------------------------------------------------------------
# Run-record figures
# --------------------------------------------------------------------------------------------------------------


@_styled
def category_bars(
    categories: Sequence[str],
    category_notes: Mapping[str, str],
    systems: Sequence[str],
    values: Mapping[tuple[str, str], tuple[float, tuple[float, float] | None]],
    *,
    metric_label: str = "MRR",
    level: float = 0.95,
    interval_label: str = "CR2",
) -> Figure:
    """Grouped bars of one metric per category and system, with interval whiskers where there is an interval.

    Args:
        categories: category names in display order (x axis).
        category_notes: ``{category: "n=6, 3 clusters"}`` shown under the category name.
        systems: system labels in legend order.
        values: ``{(system, category): (mean, (lower, upper) or None)}``; a missing key draws no bar.
        metric_label: y-axis metric name.
        level: interval level (for the legend text).
        interval_label: the interval method's short name in the axis text (``CR2-logit``).

    Returns:
        The figure (bars hatched and shaded per system; black whiskers are the intervals).
    """
    n_sys = max(len(systems), 1)
    width = min(0.8 / n_sys, 0.3)
    fig, axes = _new((max(7.5, 1.15 * len(categories) * max(1.0, n_sys / 4) + 1.5), 4.4))
    ax = axes[0][0]
    x0 = np.arange(len(categories), dtype=float)
    for i, system in enumerate(systems):
        st = style(i)
        xs, ys, los, his, xe = [], [], [], [], []
        for j, cat in enumerate(categories):
            if (system, cat) not in values:
                continue
            mean, iv = values[(system, cat)]
            x = x0[j] + (i - (n_sys - 1) / 2) * width
            xs.append(x)
            ys.append(mean)
            if iv is not None:
                xe.append(x)
                los.append(mean - iv[0])
                his.append(iv[1] - mean)
        ax.bar(
            xs,
            ys,
            width=width * 0.92,
            color=st["fill"],
            edgecolor="black",
            linewidth=0.6,
            hatch=st["hatch"],
            label=system,
            zorder=2,
        )
        if xe:
            ys_e = [ys[xs.index(x)] for x in xe]
            ax.errorbar(xe, ys_e, yerr=[los, his], fmt="none", ecolor="black", elinewidth=0.9, capsize=2, zorder=3)
    ax.set_xticks(x0)
    ax.set_xticklabels([_wrap(c) + ("\n" + category_notes[c] if category_notes.get(c) else "") for c in categories])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel(f"{metric_label} (0-1; bars = mean, whiskers = {100 * level:.0f} % {interval_label} interval)")
    ax.set_xlabel("question category (n = questions, clusters = groups sharing gold documents)")
    ax.grid(axis="y", color="0.88", lw=0.6, zorder=0)
    ax.set_axisbelow(True)
    _legend_above(fig, ax, n_sys)
    return fig


@_styled
def forest(
    rows: Sequence[Mapping],
    metrics: Sequence[str],
    *,
    margin: float,
    level: float = 0.95,
    interval_label: str = "CR2",
    alpha: float = 0.05,
) -> Figure:
    """Forest plot of paired differences (candidate - baseline) per metric, with the gate margin drawn.

    Args:
        rows: one mapping per (candidate, metric): ``{"label", "metric", "diff", "lower", "upper",
            "lower_one_sided"}`` (differences on the metric's 0-1 scale).
        metrics: metric ids, one panel each (in order).
        margin: the non-inferiority margin (drawn at ``-margin``).
        level: two-sided level of the whiskers; ``alpha`` the one-sided level of the gate's lower bound.
        interval_label: the interval method's short name in the axis text (``CR2-logit``).

    Returns:
        The figure: squares are mean paired differences, lines the two-sided intervals, ``|`` ticks the one-sided
        lower bounds, the dashed line ``-margin``, the solid line zero.
    """
    labels = list(dict.fromkeys(r["label"] for r in rows))
    n = max(len(labels), 1)
    fig, axes = _new((max(7.5, 2.6 * len(metrics)), 0.9 + 0.42 * n), ncols=max(len(metrics), 1), sharey=True)
    y_of = {lab: n - 1 - k for k, lab in enumerate(labels)}
    for p, metric in enumerate(metrics):
        ax = axes[0][p]
        sel = [r for r in rows if r["metric"] == metric]
        lo_all = [r["lower"] for r in sel] + [-margin]
        hi_all = [r["upper"] for r in sel] + [0.0]
        span = max(hi_all) - min(lo_all)
        pad = 0.08 * span if span > 0 else 0.05
        ax.set_xlim(min(lo_all) - pad, max(hi_all) + pad)
        ax.axvspan(ax.get_xlim()[0], -margin, color="0.92", zorder=0, lw=0)
        ax.axvline(0.0, color="0.35", lw=0.9, zorder=1)
        ax.axvline(-margin, color="black", lw=1.1, ls="--", zorder=1)
        for r in sel:
            y = y_of[r["label"]]
            ax.plot([r["lower"], r["upper"]], [y, y], color="black", lw=1.4, solid_capstyle="butt", zorder=2)
            ax.plot([r["diff"]], [y], marker="s", color="black", ms=6, zorder=3, ls="none")
            if r.get("lower_one_sided") is not None:
                ax.plot([r["lower_one_sided"]], [y], marker="|", color="black", ms=11, mew=1.6, zorder=3)
        ax.set_title(metric)
        ax.set_xlabel(f"\u0394 {metric}")
        ax.grid(axis="x", color="0.9", lw=0.5)
        ax.annotate(
            f"\u2212margin ({margin:g})",
            xy=(-margin, n - 0.45),
            xytext=(-3, 0),
            textcoords="offset points",
            fontsize=7,
            va="bottom",
            ha="right",
        )
    axes[0][0].set_yticks(range(n))
    axes[0][0].set_yticklabels([labels[n - 1 - k] for k in range(n)] if labels else [])
    axes[0][0].set_ylim(-0.7, n - 0.1 + 0.35)
    fig.supxlabel(
        f"paired difference, candidate - baseline (metric units, 0-1 scale); squares: mean; lines: "
        f"{100 * level:.0f} % {interval_label} interval; |: one-sided {100 * (1 - alpha):.0f} % lower bound; "
        "dashed: -margin",
        fontsize=8,
    )
    return fig


@_styled
def depth_curves(
    panels: Mapping[str, Mapping[str, Sequence[tuple[int, float, tuple[float, float] | None]]]],
    systems: Sequence[str],
    *,
    ylabels: Mapping[str, str] | None = None,
    level: float = 0.95,
) -> Figure:
    """Metric at cut-offs k (one panel per metric family), one line per system with interval whiskers.

    Args:
        panels: ``{family: {system: [(k, mean, (lower, upper) or None), ...]}}``, e.g. family ``"all_hop"``.
        systems: system labels (styles follow this order).
        ylabels: y-axis label per family.
        level: interval level (axis text).

    Returns:
        The figure; x is k on a log scale; points are dodged horizontally so whiskers do not overlap.
    """
    fams = list(panels)
    fig, axes = _new((max(7.5, 4.2 * len(fams)), 4.0), ncols=max(len(fams), 1), sharey=True)
    n_sys = max(len(systems), 1)
    ks_all: set[int] = set()
    for p, fam in enumerate(fams):
        ax = axes[0][p]
        for i, system in enumerate(systems):
            pts = panels[fam].get(system)
            if not pts:
                continue
            st = style(i)
            dodge = math.exp((i - (n_sys - 1) / 2) * 0.035)
            ks = [k * dodge for k, _, _ in pts]
            ks_all.update(k for k, _, _ in pts)
            ys = [m for _, m, _ in pts]
            ax.plot(ks, ys, color=st["color"], marker=st["marker"], ls=st["linestyle"], lw=1.3, ms=5, label=system)
            for x, (_, _m, iv) in zip(ks, pts, strict=True):
                if iv is not None:
                    ax.plot([x, x], [iv[0], iv[1]], color=st["color"], lw=0.9, alpha=0.8)
        ax.set_xscale("log")
        _plain_log(ax.xaxis, sorted(ks_all))
        ax.set_xlim(min(ks_all) / 1.3, max(ks_all) * 1.3)
        ax.set_ylim(0, 1.03)
        ax.set_xlabel("k, rank cut-off (log scale)")
        ax.set_ylabel((ylabels or {}).get(fam, f"{fam}@k (0-1)"))
        ax.set_title(f"{fam}@k")
        ax.grid(True, color="0.9", lw=0.5)
        ax.yaxis.set_tick_params(labelleft=True)
    _legend_above(fig, axes[0][0], n_sys)
    return fig


@_styled
def rank_ecdf(
    panels: Mapping[str, tuple[Mapping[str, Sequence[int | None]], int]],
    systems: Sequence[str],
) -> Figure:
    """Cumulative share of gold items found at rank <= r, per system (step lines), one panel per ranking level.

    Args:
        panels: ``{title: ({system: [rank or None per gold item]}, depth)}``; ``None`` = not in the top ``depth``.
        systems: system labels (styles follow this order).

    Returns:
        The figure; x is the rank on a log scale up to the recorded depth; where a line ends below 100 % the rest
        was not retrieved within the depth.
    """
    titles = list(panels)
    fig, axes = _new((max(7.5, 4.2 * len(titles)), 4.0), ncols=max(len(titles), 1), sharey=True)
    for p, title in enumerate(titles):
        ranks_by_sys, depth = panels[title]
        ax = axes[0][p]
        for i, system in enumerate(systems):
            ranks = ranks_by_sys.get(system)
            if ranks is None or len(ranks) == 0:
                continue
            st = style(i)
            found = np.sort(np.array([r for r in ranks if r is not None], dtype=float))
            total = len(ranks)
            xs = np.concatenate([[1.0], found, [float(depth)]])
            ys = np.concatenate([[0.0], np.arange(1, found.size + 1) / total, [found.size / total]]) * 100
            ax.step(xs, ys, where="post", color=st["color"], ls=st["linestyle"], lw=1.4, label=system)
            ax.plot([float(depth)], [ys[-1]], marker=st["marker"], color=st["color"], ms=5, ls="none")
        ax.set_xscale("log")
        _plain_log(ax.xaxis, sorted({*_ticks_125(1, depth), depth}))
        ax.set_xlim(0.9, depth * 1.15)
        ax.set_ylim(0, 102)
        ax.set_title(title)
        ax.set_xlabel(f"rank r (log scale; depth {depth})")
        ax.set_ylabel("gold items found at rank <= r (%)")
        ax.grid(True, which="major", color="0.9", lw=0.5)
        ax.yaxis.set_tick_params(labelleft=True)
    _legend_above(fig, axes[0][0], len(systems))
    return fig


@_styled
def slice_compare(
    metrics: Sequence[str],
    systems: Sequence[str],
    values: Mapping[tuple[str, str, str], tuple[float, tuple[float, float] | None]],
    *,
    slices: Sequence[tuple[str, str]] = (("all", "all questions"), ("covered", "fully covered questions")),
    level: float = 0.95,
    interval_label: str = "CR2",
) -> Figure:
    """Dot-and-whisker comparison of slices (all questions vs the fully covered slice) per system and metric.

    Args:
        metrics: metric ids, one panel each.
        systems: system labels (rows).
        values: ``{(slice, system, metric): (mean, (lower, upper) or None)}``.
        slices: ``(slice key, legend label)`` pairs; the first drawn filled, the second open.
        level: interval level (axis text).
        interval_label: the interval method's short name in the axis text (``CR2-logit``).

    Returns:
        The figure.
    """
    n = max(len(systems), 1)
    fig, axes = _new((max(7.5, 3.4 * len(metrics)), 1.0 + 0.45 * n), ncols=max(len(metrics), 1), sharey=True)
    marks = (("o", "black", "black"), ("s", "black", "white"), ("^", "0.4", "0.4"))
    for p, metric in enumerate(metrics):
        ax = axes[0][p]
        for s_i, (key, lab) in enumerate(slices):
            mk, ec, fc = marks[s_i % len(marks)]
            off = (s_i - (len(slices) - 1) / 2) * 0.22
            first = True
            for k, system in enumerate(systems):
                if (key, system, metric) not in values:
                    continue
                mean, iv = values[(key, system, metric)]
                y = n - 1 - k + off
                if iv is not None:
                    ax.plot([iv[0], iv[1]], [y, y], color=ec, lw=1.1, ls="-" if s_i == 0 else "--")
                ax.plot([mean], [y], marker=mk, mec=ec, mfc=fc, ms=6, ls="none", label=lab if first else None)
                first = False
        ax.set_xlim(0, 1.02)
        ax.set_title(metric)
        ax.set_xlabel(f"{metric} (0-1)")
        ax.grid(axis="x", color="0.9", lw=0.5)
    axes[0][0].set_yticks(range(n))
    axes[0][0].set_yticklabels([systems[n - 1 - k] for k in range(n)] if systems else [])
    axes[0][0].set_ylim(-0.7, n - 0.3)
    fig.supxlabel(f"lines: {100 * level:.0f} % {interval_label} intervals", fontsize=8)
    _legend_above(fig, axes[0][0], len(slices))
    return fig
