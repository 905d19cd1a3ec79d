"""The report's ``changes`` section: per candidate, the questions it does worse on than the baseline beside those it
does better on, on the gate metric (MRR by default), each with both values and the first gold rank in each system,
linked to the question's drill-down.

A question regresses (improves) when the candidate's value is below (above) the baseline's by more than
:data:`harness.evaluation.regressions.TIE_EPS`; the first gold rank is
:func:`harness.evaluation.regressions.first_gold_rank` at the metric's level. Regressions are listed worst first,
improvements best first (then by question id); at most :data:`SHOWN` of each, the counts always in full.
"""

from __future__ import annotations

import re

from harness.evaluation.regressions import TIE_EPS, first_gold_rank
from harness.metrics import MetricSpec
from harness.report.format import MISSING, esc
from harness.report.model import ReportData

__all__ = ["SHOWN", "question_changes", "section_changes"]

SHOWN = 15
"""At most this many regressed (and improved) questions per candidate are listed."""


def question_changes(data: ReportData, label: str, metric: str) -> tuple[list[dict], list[dict]]:
    """``(regressed, improved)`` of candidate ``label`` against the baseline on ``metric``: dicts ``{"qid",
    "category", "baseline", "candidate", "diff", "rank_baseline", "rank_candidate"}`` (module docstring order)."""
    assert data.baseline is not None
    level = MetricSpec.parse(metric).level
    down, up = [], []
    for qid in data.qids():
        a, b = data.row(data.baseline.label, qid), data.row(label, qid)
        if a is None or b is None or metric not in a.metrics or metric not in b.metrics:
            continue
        d = float(b.metrics[metric]) - float(a.metrics[metric])
        if abs(d) <= TIE_EPS:
            continue
        item = {
            "qid": qid,
            "category": b.category,
            "baseline": float(a.metrics[metric]),
            "candidate": float(b.metrics[metric]),
            "diff": d,
            "rank_baseline": first_gold_rank(a, level),
            "rank_candidate": first_gold_rank(b, level),
        }
        (down if d < 0 else up).append(item)
    down.sort(key=lambda x: (x["diff"], x["qid"]))
    up.sort(key=lambda x: (-x["diff"], x["qid"]))
    return down, up


def _rank(r) -> str:
    return MISSING if r is None else str(r)


def _list(items: list[dict], base: str, cand: str) -> str:
    if not items:
        return "<p class='note'>none</p>"
    rows = "".join(
        f"<tr><td class='l'><a href='#q-{re.sub(r'[^A-Za-z0-9_-]', '_', x['qid'])}'><code>{esc(x['qid'])}</code></a>"
        f"</td><td class='l'>{esc(x['category'])}</td><td>{x['baseline']:.3f} &rarr; {x['candidate']:.3f}</td>"
        f"<td>{x['diff']:+.3f}</td><td>{_rank(x['rank_baseline'])} &rarr; {_rank(x['rank_candidate'])}</td></tr>"
        for x in items[:SHOWN]
    )
    more = f"<p class='note'>and {len(items) - SHOWN} more</p>" if len(items) > SHOWN else ""
    return (
        f"<table><thead><tr><th class='l'>question</th><th class='l'>category</th><th>{esc(base)} &rarr; "
        f"{esc(cand)}</th><th>diff</th><th>first gold rank</th></tr></thead><tbody>{rows}</tbody></table>{more}"
    )


def section_changes(data: ReportData) -> str:
    """Regressed and improved questions side by side, per candidate (module docstring); ``""`` without a baseline."""
    if data.baseline is None:
        return ""
    metric = data.gate_metric
    base = data.baseline.label
    blocks = []
    for e in data.entries:
        if e is data.baseline:
            continue
        down, up = question_changes(data, e.label, metric)
        blocks.append(
            f"<details{' open' if len(blocks) < 2 else ''}><summary>{esc(e.label)}: {len(down)} regressed, "
            f"{len(up)} improved</summary><div class='body changes' style='display:flex;gap:2em;flex-wrap:wrap'>"
            f"<div><h3>regressed ({len(down)})</h3>{_list(down, base, e.label)}</div>"
            f"<div><h3>improved ({len(up)})</h3>{_list(up, base, e.label)}</div></div></details>"
        )
    text = (
        f"<p class='note'>Per candidate, the questions whose {esc(metric)} is lower than {esc(base)}'s (regressed, "
        "worst first) beside those where it is higher (improved, best first), with the first gold item's rank in "
        "each system at the metric's level; each question links to its drill-down.</p>"
    )
    head = f"<h2>Regressed and improved questions ({esc(metric)})</h2>"
    return f"<section id='changes'>{head}{text}{''.join(blocks)}</section>"
