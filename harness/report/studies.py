"""Terminal (rich) rendering of the label-free studies' results: the known-item summary, the chunk-size sensitivity
table, and a whole study (known-item, then coverage).

Every string that comes from the inputs (corpus id, chunker id, system names, doc_type and collection labels) is
shown literally: rich markup in it (``[red]``, ``[/]``, ``[link=...]``) is escaped, never interpreted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

__all__ = ["render_known_item", "render_sensitivity", "render_study"]


def _pct(x: float | None, digits: int = 2) -> str:
    """A proportion in percent (``39.20 %``); ``-`` for None or NaN."""
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.{digits}f} %"


def _points(x: float | None, digits: int = 2) -> str:
    """A difference of two proportions in percentage points, signed (``+1.23 pts``); ``-`` for None or NaN."""
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:+.{digits}f} pts"


def _systems_table(summary: dict) -> Table:
    cfg, counts = summary["config"], summary["counts"]
    t = Table(
        title=escape(
            f"Known-item hit@1 - {summary['corpus_id']}, {cfg['chunker_id']}, {cfg['query_words']}-word queries"
        ),
        caption=(
            f"{counts['queries']} queries from {counts['documents']} documents; "
            f"{counts['skipped_short']} short chunks skipped; "
            f"{counts['excluded_single_chunk_docs']} single-chunk documents excluded"
        ),
    )
    for col in ("system", "micro", "macro", "ICC", "DEFF", "N_eff", "lag-1 r", "ties@1", "q/s"):
        t.add_column(col, justify="right" if col != "system" else "left")
    for name, s in summary["systems"].items():
        d = s["diagnostics"]
        t.add_row(
            Text(name),
            _pct(s["micro_hit1"]),
            _pct(s["macro_hit1"]),
            f"{d['icc']:.3f}",
            f"{d['deff']:.1f}",
            f"{d['n_eff']:.0f}",
            f"{d['lag1_autocorrelation']:.3f}",
            _pct(s["share_tie_top"], 1),
            f"{s['queries_per_second']:.0f}" if s["queries_per_second"] else "-",
        )
    pub = summary.get("published", {})
    if pub:
        t.add_row(
            "published (bm25)",
            _pct(pub["micro_hit1"]),
            _pct(pub["macro_hit1"]),
            f"{pub['icc']:.3f}",
            f"{pub['deff']:.1f}",
            "-",
            f"{pub['lag1_autocorrelation']:.2f}",
            "-",
            "-",
            style="dim",
        )
    return t


def _groups_table(title: str, label: str, groups: dict) -> Table:
    t = Table(title=escape(title))
    for col in (label, "docs", "queries", "micro", "macro"):
        t.add_column(col, justify="left" if col == label else "right")
    for lab, r in groups.items():
        t.add_row(Text(lab), str(r["documents"]), str(r["queries"]), _pct(r["micro_hit1"]), _pct(r["macro_hit1"]))
    return t


def _paired_table(key: str, p: dict) -> Table:
    t = Table(title=escape(f"paired {key} (B - A), {p['queries']} queries, {p['documents']} documents"))
    for col in ("measure", "difference", "95 % interval", "note"):
        t.add_column(col)
    t.add_row(
        "micro",
        _points(p["micro_diff"]),
        f"[{_points(p['micro_ci'][0])}, {_points(p['micro_ci'][1])}]",
        f"CR2, df {p['micro_df']:.1f}",
    )
    t.add_row(
        "macro",
        _points(p["macro_diff"]),
        f"[{_points(p['macro_ci'][0])}, {_points(p['macro_ci'][1])}]",
        "t over documents",
    )
    t.add_row(
        "agreement",
        "",
        "",
        f"only A {p['only_a']}, only B {p['only_b']}; documents tied {_pct(p['share_documents_tied'], 1)}",
    )
    return t


def render_known_item(summary: dict) -> Group:
    """The known-item tables from a ``summary.json`` dict (:func:`harness.studies.known_item.run_known_item`).

    Tables: hit@1 micro/macro per system with ICC, DEFF, effective size, lag-1 autocorrelation, share of top ties
    and queries per second, plus the published study's row; hit@1 by doc_type and by collection for the first
    system; one paired table per comparison (differences in signed percentage points with their 95 % intervals).
    """
    first = next(iter(summary["systems"].values()))
    out: list[RenderableType] = [
        _systems_table(summary),
        _groups_table(
            f"hit@1 by doc_type ({first['system']}; types with < 5 documents pooled as 'other')",
            "doc_type",
            first["by_doc_type"],
        ),
        _groups_table(f"hit@1 by collection ({first['system']})", "collection", first["by_collection"]),
    ]
    out += [_paired_table(key, p) for key, p in summary.get("paired", {}).items()]
    if summary.get("sample"):
        out.append(sample_table(summary["sample"]))
    return Group(*out)


def sample_rows(sample: dict) -> list[list[str]]:
    """``[[system, metric, method, estimate [lower, upper], df]]`` of a sampled study (``summary["sample"]``)."""
    rows = []
    for who, metrics in [*sample["systems"].items(), *sample["paired"].items()]:
        for metric, iv in metrics.items():
            rows.append([who, metric, iv["method"], f"{iv['estimate']:.3f} [{iv['lower']:.3f}, {iv['upper']:.3f}]",
                         "-" if iv["df"] is None else f"{iv['df']:.0f}"])  # fmt: skip
    return rows


def sample_table(sample: dict) -> Table:
    """The estimates of a sampled known-item study, with the estimand and the measured coverage as its caption."""
    t = Table(
        title=Text(f"Sample of {sample['k']} documents ({sample['design']}, seed {sample['seed']}): "
                   f"{sample['documents']} distinct, {sample['queries']} queries"),
        title_justify="left",
    )  # fmt: skip
    for col in ("system", "metric", "method", "estimate [95 % interval]", "df"):
        t.add_column(col, justify="left" if col in ("system", "metric", "method") else "right")
    for row in sample_rows(sample):
        t.add_row(*[Text(x) for x in row])
    t.caption = Text(f"Estimand: {sample['estimand']}.\n{sample['coverage']}")
    t.caption_justify = "left"
    return t


def render_sensitivity(rows: Sequence[dict]) -> Table:
    """The chunk-size sensitivity table from :attr:`harness.studies.known_item.SensitivityResult.rows`."""
    t = Table(title="Chunk-size sensitivity of known-item hit@1")
    for col in ("chunk words", "system", "queries", "docs", "micro", "macro", "ICC", "DEFF", "lag-1 r", "q/s"):
        t.add_column(col, justify="right")
    for r in rows:
        t.add_row(
            str(r["chunk_words"]),
            Text(r["system"]),
            str(r["queries"]),
            str(r["documents"]),
            _pct(r["micro_hit1"]),
            _pct(r["macro_hit1"]),
            f"{r['icc']:.3f}",
            f"{r['deff']:.1f}",
            f"{r['lag1_autocorrelation']:.3f}",
            f"{r['queries_per_second']:.0f}" if r["queries_per_second"] else "-",
        )
    return t


def render_study(known_item_summary: dict, coverage: RenderableType) -> Group:
    """A whole study: the known-item tables, then the coverage result (a rich renderable, e.g.
    :class:`harness.studies.coverage.CoverageResult`)."""
    return Group(render_known_item(known_item_summary), coverage)
