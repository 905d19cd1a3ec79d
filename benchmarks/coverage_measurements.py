"""The generated coverage block of ``docs/measurements.md`` (:func:`render_block`, :func:`rewrite_block`).

The block lies between ``<!-- BEGIN coverage -->`` and ``<!-- END coverage -->``; :func:`rewrite_block` replaces only
that block (other blocks of the file belong to other studies), appends it when the file has none, and creates the
file when it does not exist. Every number comes from a :class:`~harness.studies.coverage.suite.SuiteResult`; every
population label is Markdown-escaped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from harness.errors import HarnessInputError
from harness.io import atomic_write_text
from harness.report.format import md
from harness.stats.methods import INTERVALS
from harness.studies.coverage.choice import (
    K_RANGE,
    TARGET_ALL,
    TARGET_K20,
    WIDTH_LIMIT,
    ClassChoice,
    fmt_pct,
    fmt_ratio,
    verdict,
)
from harness.studies.coverage.suite import SuiteResult

BEGIN, END = "<!-- BEGIN coverage -->", "<!-- END coverage -->"
_CLASS_NAMES = {
    "binary": "binary (hit@k, all_hop@k)",
    "unit": "unit (MRR, recall, evidence recall)",
    "continuous": "continuous",
    "paired": "paired differences (compare, gate)",
}


def _label(name: str) -> str:
    return INTERVALS[name].label if name in INTERVALS else name


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _head(cols: list[str]) -> list[str]:
    return [_row(cols), _row(["---"] * len(cols))]


def _defaults_table(suite: SuiteResult) -> list[str]:
    lines = _head(["outcome", "default", "verdict against the target", f"min coverage K = {K_RANGE[0]}–{K_RANGE[1]} "
                   "(where)", "min at K = 20", "max width / CR2", "CR2: min / at K = 20", "populations"])  # fmt: skip
    for cls, c in suite.choice.items():
        s = c.summary(c.chosen)
        cr2 = c.summary("cr2")
        lines.append(
            _row(
                [
                    _CLASS_NAMES[cls],
                    f"`{c.chosen}` ({md(_label(c.chosen))})",
                    verdict(c),
                    "-" if s is None else f"{fmt_pct(s.min_coverage)} ({md(s.where)})",
                    "-" if s is None else fmt_pct(s.min_coverage_k20),
                    "-" if s is None else fmt_ratio(s.max_width_ratio),
                    "-" if cr2 is None else f"{fmt_pct(cr2.min_coverage)} / {fmt_pct(cr2.min_coverage_k20)}",
                    str(len(c.populations)),
                ]
            )
        )
    return lines


def _candidates_table(c: ClassChoice) -> list[str]:
    cols = ["method", "design", "a run can compute it", f"within {WIDTH_LIMIT:.2f}x CR2 width", "min coverage (where)"]
    lines = _head(cols + ["min at K = 20", "max coverage", "max width / CR2", "max share infinite"])
    for m in c.methods:
        name = f"**`{m.method}`**" if m.method == c.chosen else f"`{m.method}`"
        lines.append(
            _row(
                [
                    f"{name} {md(_label(m.method))}",
                    m.design,
                    "yes" if m.candidate else "no",
                    "yes" if m.within_width else "no",
                    f"{fmt_pct(m.min_coverage)} ± {100 * m.mc_margin:.1f} ({md(m.where)})",
                    fmt_pct(m.min_coverage_k20),
                    fmt_pct(m.max_coverage),
                    fmt_ratio(m.max_width_ratio),
                    fmt_pct(m.max_infinite_share),
                ]
            )
        )
    return lines


def _per_population(suite: SuiteResult) -> list[str]:
    ks = list(suite.config["K"])
    cols = ["population", "documents", "queries", "micro", "default"] + [f"K = {k}" for k in ks]
    lines = _head(cols + ["two-stage (default, naive)", "two-stage design-based", "design-based SE / SD"])
    for res in suite.results:
        p = res.population
        cls = "paired" if p.get("paired") else p["outcome"]
        name = suite.choice[cls].chosen
        cells = [md(res.label), str(p["documents"]), str(p["queries"]), f"{p['micro']:.4f}", f"`{name}`"]
        for k in ks:
            d = res.design("srs", k)
            row = None if d is None else d.rows.get(name)
            cells.append("-" if row is None else f"{fmt_pct(row['coverage'])} ± {100 * row['mc_margin']:.1f}")
        two = res.design("two-stage")
        if two is None or not two.rows:
            cells += ["-", "-", "-"]
        else:
            naive, dsg = two.rows.get(name), two.rows.get("twostage_micro")
            sd, se = two.note.get("sd_weighted_micro"), two.note.get("mean_se_weighted_micro")
            cells.append(fmt_pct(None if naive is None else naive["coverage"]))
            cells.append(fmt_pct(None if dsg is None else dsg["coverage"]))
            cells.append("-" if not sd else f"{se:.3f} / {sd:.3f}")
        lines.append(_row(cells))
    return lines


def _pps_table(suite: SuiteResult) -> list[str]:
    ks = list(suite.config["K"])
    lines = _head(["population", "method"] + [f"K = {k}" for k in ks] + ["width / SRS CR2 at K = 20"])
    for res in suite.results:
        unit = res.population["outcome"] in ("binary", "unit")
        name = "hansen_hurwitz_logit" if unit else "hansen_hurwitz"
        cells = [md(res.label), f"`{name}`"]
        for k in ks:
            d = res.design("pps", k)
            row = None if d is None else d.rows.get(name)
            cells.append("-" if row is None else fmt_pct(row["coverage"]))
        d20, s20 = res.design("pps", 20), res.design("srs", 20)
        ratio = None
        if d20 is not None and s20 is not None and name in d20.rows and "cr2" in s20.rows:
            ratio = d20.rows[name]["mean_width"] / s20.rows["cr2"]["mean_width"]
        lines.append(_row(cells + [fmt_ratio(ratio)]))
    return lines


def _pps_summary(suite: SuiteResult) -> str:
    covs, k20 = [], []
    for res in suite.results:
        unit = res.population["outcome"] in ("binary", "unit")
        name = "hansen_hurwitz_logit" if unit else "hansen_hurwitz"
        for d in res.designs:
            if d.design == "pps" and K_RANGE[0] <= d.k <= K_RANGE[1] and name in d.rows:
                covs.append((d.rows[name]["coverage"], f"{res.label} K={d.k}"))
                if d.k == 20:
                    k20.append(d.rows[name]["coverage"])
    if not covs:
        return "The PPS design was not run."
    low = min(covs)
    return (
        f"Drawing documents with probability proportional to their number of queries (with replacement) and reporting "
        f"the Hansen-Hurwitz estimate with its t interval (logit scale for metrics in [0, 1], identity for paired "
        f"differences) covers at least {fmt_pct(low[0])} at every K = {K_RANGE[0]}–{K_RANGE[1]} ({md(low[1])}) and at "
        f"least {fmt_pct(min(k20)) if k20 else '-'} at K = 20, on every population."
    )


def render_block(
    suite: SuiteResult,
    *,
    command: str,
    extra_seconds: Mapping[str, float] | None = None,
    provenance: str | None = None,
    note: str = "",
) -> str:
    """The Markdown block (with its markers) of ``suite``; ``note``: a sentence added to the provenance paragraph
    (e.g. which populations were left out and why).

    Args:
        suite: the measured suite.
        command: the command that produced it (shown).
        extra_seconds: other measured run times to state (e.g. ``{"known-item populations": 4321.0}``).
        provenance: when and at which commit it was measured (``"on 2026-12-01 14:00 UTC at commit abc"``), shown.
    """
    cfg = suite.config
    times = [f"coverage study {suite.computed_seconds:.0f} s"] + [
        f"{k} {v:.0f} s" for k, v in (extra_seconds or {}).items()
    ]
    code = command.replace("`", "'")  # shown verbatim in a code span (Markdown escapes do not apply there)
    out = [BEGIN, "## Interval coverage on this corpus (generated; do not edit)", ""]
    out.append(
        f"Generated by `{code}`{' ' + md(provenance) if provenance else ''}: {len(suite.results)} populations, "
        f"R = {cfg['reps']} samples per design and K, "
        f"B = {cfg['B']} bootstrap replicates, seed {cfg['seed']}, level {cfg['level']}; run time "
        f"{', '.join(times)} (2 shared CPU cores). Target: coverage >= {100 * TARGET_K20:.0f} % at K = 20 and >= "
        f"{100 * TARGET_ALL:.0f} % at every K = {K_RANGE[0]}–{K_RANGE[1]} on every population, mean width <= "
        f"{WIDTH_LIMIT:.2f}x CR2's at every K studied. The default is chosen by the rule of "
        "`harness.studies.coverage.choice` (the candidate a run can compute, within the width limit, with the highest "
        "minimum coverage) and recorded in "
        "`harness/stats/coverage_evidence.json`. **This design (K whole documents drawn at random, target the "
        "chunk-weighted mean) has no interval that holds on these populations**: known-item samples drawn this way "
        'print "coverage not guaranteed" with this range; sample documents by PPS (the Hansen–Hurwitz rows). '
        "Gold-set runs print the coverage measured for their own design (the block above)."
        + (f" {note}" if note else "")
    )
    out += ["", "### The default interval per outcome type", ""] + _defaults_table(suite)
    for cls, c in suite.choice.items():
        if c.populations and cls != "continuous":
            out += ["", f"### Every method: {_CLASS_NAMES[cls]} ({len(c.populations)} populations)", ""]
            out += _candidates_table(c)
    out += ["", "### The default's coverage per population (SRS; two-stage: 6 types x 4 documents)", ""]
    out += _per_population(suite)
    out += [
        "",
        "### Intervals that hold: PPS document sampling with the Hansen-Hurwitz estimator",
        "",
        _pps_summary(suite),
        "",
    ]
    out += _pps_table(suite)
    out += ["", _two_stage_note(suite), "", END]
    return "\n".join(out) + "\n"


def _two_stage_note(suite: SuiteResult) -> str:
    covs, ratios = [], []
    for res in suite.results:
        two = res.design("two-stage")
        if two is not None and "twostage_micro" in two.rows:
            covs.append(two.rows["twostage_micro"]["coverage"])
            sd, se = two.note.get("sd_weighted_micro"), two.note.get("mean_se_weighted_micro")
            if sd:
                ratios.append(se / sd)
    if not covs:
        return "The two-stage design was not run."
    return (
        f"**Known limitation: the two-stage design.** Its design-based interval (Horvitz-Thompson ratio, Cochran's "
        f"ultimate-cluster variance, t with h - 1 = {int(suite.config['types']) - 1} df) covers only "
        f"{fmt_pct(min(covs))}–{fmt_pct(max(covs))}: its mean standard error is {min(ratios):.2f}–{max(ratios):.2f} "
        "times the estimator's standard deviation over the samples. The formula is Cochran's (1977, eq. 10.24; it "
        "covers at the nominal level on a population without dominant documents: tests/test_coverage.py::"
        "test_two_stage_design_and_skips), not a bug: the expansion weights M_g / m make the few very large "
        "documents decide the estimate when drawn and leave no trace of them when not, the mechanism that also "
        "breaks the SRS intervals, and h - 1 df are few. No interval studied holds under this design; sample "
        "documents by PPS instead."
    )


def rewrite_block(path: str | Path, block: str) -> Path:
    """Replace the coverage block of ``path`` with ``block`` (module docstring); written atomically.

    Raises:
        HarnessInputError: the file has a BEGIN marker without its END marker (or several blocks).
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8") if path.exists() else "# Measurements\n"
    found = re.findall(re.escape(BEGIN) + r".*?" + re.escape(END) + r"\n?", text, flags=re.S)
    if len(found) > 1 or (not found and (BEGIN in text or END in text)):
        raise HarnessInputError(f"{path}: the coverage block's markers are unbalanced or repeated; fix them by hand")
    if found:
        new = text.replace(found[0], block)
    else:
        new = text.rstrip("\n") + "\n\n" + block
    atomic_write_text(path, new)
    return path
