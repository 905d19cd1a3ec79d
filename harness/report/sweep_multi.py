"""Terminal and Markdown renderings of a multi-metric sweep (:class:`harness.evaluation.sweep_multi.
MultiSweepResult`, the ``sweep-multi`` kind of :mod:`harness.report.formats`).

Both show, in order: the choice per method and overall (settings tried, excluded, chosen, dev mean); the settings the
constraints excluded, each with the metric, its dev mean, the best input's and the loss; every reported metric of
the overall choice on test, with its interval and beside each input alone the paired difference chosen - input and
its interval (marks and legend of :mod:`harness.report.format`); the trade-off statements in words; the dev curve of
the chosen method as a small table (every ``step``-th setting, the chosen one always; the constraint metrics beside
the selection metric, ``x`` marking an excluded setting); the optimism note. Every input string is escaped.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness.evaluation.sweep_multi import MethodChoice, MultiSweepResult
from harness.report.format import diff_iv, legend, md, mean_iv, rich_text
from harness.report.markdown import table

__all__ = ["CURVE_ROWS", "curve_caption", "curve_rows", "markdown_lines", "render_terminal"]

CURVE_ROWS = 11
"""At most about this many rows of a dev curve are shown (the chosen setting always)."""


def curve_rows(mc: MethodChoice, metric: str, extra: list[str]) -> list[list[str]]:
    """Rows ``[setting, dev metric, dev extra..., mark]`` of a method's dev curve, thinned to :data:`CURVE_ROWS`
    (every ``ceil(n / CURVE_ROWS)``-th setting, plus the chosen and the last); mark ``*`` chosen, ``x`` excluded."""
    n = len(mc.settings)
    step = max(1, -(-n // CURVE_ROWS))
    keep = sorted({*range(0, n, step), n - 1} | ({mc.settings.index(mc.chosen_system)} if mc.chosen_system else set()))
    bad = {x["system"] for x in mc.excluded}
    rows = []
    for i in keep:
        name = mc.settings[i]
        mark = "*" if name == mc.chosen_system else ("x" if name in bad else "")
        label = f"{mc.grid[i]:g}" if mc.param else name
        rows.append([label, *(f"{mc.dev[m][i]:.4f}" for m in [metric, *extra]), mark])
    return rows


def curve_caption(mc: MethodChoice, shown: int) -> str:
    """How many settings a dev curve has and, when :func:`curve_rows` thinned it to ``shown`` rows, that it did and
    where the rest are: ``21 settings, 11 shown (every 2nd, the chosen and the last; all 21 in --format json)``."""
    n = len(mc.settings)
    if shown >= n:
        return f"{n} setting{'s' if n != 1 else ''}"
    step = max(1, -(-n // CURVE_ROWS))
    nth = {2: "2nd", 3: "3rd"}.get(step, f"{step}th")
    return f"{n} settings, {shown} shown (every {nth}, the chosen and the last; all {n} in --format json)"


def _method_test(r: MultiSweepResult, mc: MethodChoice) -> str:
    """``; test 0.748 [0.548, 0.947], - bm25 +0.032 [+0.012, +0.053], ...`` of a method's own choice."""
    if mc.test is None:
        return ""
    t = mc.test
    vs = ", ".join(f"- {n} {diff_iv(c['diff'], c['paired_interval'])}" for n, c in t["inputs"].items())
    return f"; test {mean_iv(t['mean'], t['interval'])}, {vs}"


def _summary_lines(r: MultiSweepResult) -> list[str]:
    lines = []
    for mc in r.methods:
        n_bad = len({x["system"] for x in mc.excluded})
        choice = (
            f"chosen {mc.chosen_system} (dev {r.metric} {mc.dev_best:.4f}{_method_test(r, mc)})"
            if mc.chosen_system
            else "no setting meets the constraints"
        )
        lines.append(f"{mc.fusion}: {len(mc.settings)} setting(s), {n_bad} excluded; {choice}")
    if r.chosen:
        lines.append(f"overall: {r.chosen} ({r.chosen_method}), the highest dev {r.metric} among the method choices")
    else:
        lines.append("overall: no setting of any method meets the constraints; nothing is reported on test")
    return lines


def _excluded_lines(r: MultiSweepResult) -> list[str]:
    """One line per (method, constraint metric): the settings excluded, their dev range, the best input's dev mean
    and the loss range (the JSON and the Markdown table list each exclusion)."""
    if not r.constraints:
        return []
    cons = ", ".join(str(c) for c in r.constraints)
    ex = r.excluded()
    if not ex:
        return [f"constraints {cons}: no setting excluded"]
    out = [f"constraints {cons}: excluded on dev (loss against the best input > margin):"]
    groups: dict[tuple[str, str], list[dict]] = {}
    for x in ex:
        groups.setdefault((x["fusion"], x["metric"]), []).append(x)
    for (fusion, metric), xs in groups.items():
        names = [x["system"] for x in xs]
        shown = ", ".join(names) if len(names) <= 6 else f"{', '.join(names[:3])}, ..., {', '.join(names[-2:])}"
        devs = [x["dev"] for x in xs]
        losses = [x["loss"] for x in xs]

        def span(v: list[float]) -> str:
            return f"{min(v):.4f}" if min(v) == max(v) else f"{min(v):.4f}-{max(v):.4f}"

        out.append(
            f"  {fusion}: {len(xs)} setting(s) ({shown}): dev {metric} {span(devs)} vs {xs[0]['best_input']} "
            f"{xs[0]['best_input_dev']:.4f}, loss {span(losses)} > {xs[0]['margin']:g}"
        )
    return out


def render_terminal(r: MultiSweepResult, console: Console | None = None) -> None:
    """Print ``r`` (module docstring)."""
    console = console or Console()
    pct = f"{100 * r.interval_level:g} %"
    title = (
        f"Fusion sweep: {', '.join(m.fusion for m in r.methods)} of {'+'.join(r.inputs)}, chosen on dev "
        f"{r.metric} ({r.n_dev} questions), run {r.run_id}"
    )
    console.print(Text(title, style="bold"), soft_wrap=True)
    console.print(Text("\n".join(_summary_lines(r) + _excluded_lines(r))), soft_wrap=True)
    if r.chosen:
        t = Table(
            title=Text(
                f"{r.chosen} on test: {r.n_test} questions, {r.n_test_clusters} clusters (every metric; "
                f"diff = chosen - input, paired {r.paired_method})"
            ),
            title_justify="left",
        )
        t.add_column("metric", no_wrap=True)
        t.add_column(rich_text(f"{r.chosen} [{pct}]"), justify="right", no_wrap=True)
        for n in r.inputs:
            t.add_column(rich_text(n), justify="right", no_wrap=True)
            t.add_column(rich_text(f"- {n} [{pct} paired]"), justify="right", no_wrap=True)
        ivs = []
        for row in r.test:
            cells = [rich_text(row["metric"]), rich_text(mean_iv(row["chosen"]["mean"], row["chosen"]["interval"]))]
            ivs.append(row["chosen"]["interval"])
            for n in r.inputs:
                c = row["inputs"][n]
                ivs.append(c["paired_interval"])
                cells += [f"{c['mean']:.3f}", rich_text(diff_iv(c["diff"], c["paired_interval"]))]
            t.add_row(*cells)
        console.print(t)
        marks = legend(ivs)
        if marks:
            console.print(Text(marks), soft_wrap=True)
        for line in r.tradeoffs or [f"no trade-off: against no input does {r.chosen} gain one metric and lose another"]:
            console.print(Text(line, style="bold"), soft_wrap=True)
        mc = next(m for m in r.methods if m.chosen_system == r.chosen)
        extra = [c.metric for c in r.constraints if c.metric != r.metric]
        rows = curve_rows(mc, r.metric, extra)
        caption = curve_caption(mc, len(rows))
        curve = Table(title=Text(f"dev curve of {mc.fusion} ({caption}; * chosen, x excluded)"))
        for col in [mc.param or "setting", f"dev {r.metric}", *(f"dev {m}" for m in extra), ""]:
            curve.add_column(rich_text(col), justify="right")
        for row in rows:
            curve.add_row(*(rich_text(c) for c in row))
        console.print(curve)
        dev_in = "; ".join(
            f"{m}: " + ", ".join(f"{n} {v:.4f}" for n, v in vals.items()) for m, vals in r.dev_inputs.items()
        )
        console.print(Text(f"inputs alone on dev: {dev_in}"), soft_wrap=True)
        console.print(Text(f"fusion: {mc.formula}"), soft_wrap=True)
    console.print(Text(r.note), soft_wrap=True)
    if r.n_unsplit:
        console.print(Text(f"{r.n_unsplit} question(s) without a split were used for neither dev nor test"))


def markdown_lines(r: MultiSweepResult, _path=None) -> list[str]:
    """``r`` as Markdown lines (module docstring)."""
    pct = f"{100 * r.interval_level:g} %"
    out = [
        f"### Fusion sweep: {md(', '.join(m.fusion for m in r.methods))} of {md('+'.join(r.inputs))}, chosen on dev "
        f"{md(r.metric)}, run {md(r.run_id)}",
        "",
    ]
    out += [f"- {md(line)}" for line in _summary_lines(r)]
    ex = _excluded_lines(r)
    if ex:
        out += ["", md(ex[0])]
        rows = [
            [x["system"], x["fusion"], x["metric"], f"{x['dev']:.4f}", x["best_input"], f"{x['best_input_dev']:.4f}",
             f"{x['loss']:.4f}"]
            for x in r.excluded()
        ]  # fmt: skip
        out += ["", md("; ".join(line.strip() for line in ex[1:]))]
        out += [
            "",
            "<details><summary>every excluded setting</summary>",
            "",
            table(["setting", "method", "metric", "dev", "best input", "its dev", "loss"], rows),
            "",
            "</details>",
        ]
    if r.chosen:
        head = ["metric", f"{r.chosen} [{pct}]"]
        for n in r.inputs:
            head += [n, f"chosen - {n} [{pct} paired]"]
        rows = []
        ivs = []
        for row in r.test:
            cells = [row["metric"], mean_iv(row["chosen"]["mean"], row["chosen"]["interval"])]
            ivs.append(row["chosen"]["interval"])
            for n in r.inputs:
                c = row["inputs"][n]
                ivs.append(c["paired_interval"])
                cells += [f"{c['mean']:.3f}", diff_iv(c["diff"], c["paired_interval"])]
            rows.append(cells)
        out += [
            "",
            f"**{md(r.chosen)} on test** ({r.n_test} questions, {r.n_test_clusters} clusters; paired "
            f"{md(r.paired_method)}):",
            "",
            table(head, rows),
        ]
        marks = legend(ivs)
        if marks:
            out += ["", f"_{md(marks)}_"]
        said = r.tradeoffs or [f"no trade-off: against no input does {r.chosen} gain one metric and lose another"]
        out += [""] + [f"> **{md(line)}**" for line in said]
        mc = next(m for m in r.methods if m.chosen_system == r.chosen)
        extra = [c.metric for c in r.constraints if c.metric != r.metric]
        curve = curve_rows(mc, r.metric, extra)
        out += [
            "",
            f"<details><summary>dev curve of {md(mc.fusion)} ({md(curve_caption(mc, len(curve)))})</summary>",
            "",
            table([mc.param or "setting", f"dev {r.metric}", *(f"dev {m}" for m in extra), "mark"], curve),
            "",
            "</details>",
        ]
    out += ["", md(r.note)]
    out += [f"> **Warning:** {md(w)}" for w in r.warnings]
    return out
