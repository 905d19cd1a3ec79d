"""Honest displays (issue 21 item 5): zero-width intervals flagged as degenerate, bounds clipped to [0, 1] marked,
infinite bootstrap-t bounds shown as infinite (not as [0, 1]), in every rendering (terminal, Markdown, HTML, JSON);
few-cluster warnings in every verb and format (on stderr; also inside a Markdown or JSON output)."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pytest
from rich.console import Console
from test_compare import _values, make_run
from test_sweep import questions, write_run
from typer.testing import CliRunner

from harness.cli import app
from harness.evaluation.bounds import Bounds, bounds, interval_flags
from harness.evaluation.runs import load_run
from harness.report.format import CLIP_MARK, diff_iv, fmt_iv, legend, mean_iv
from harness.report.formats import Result, emit
from harness.report.html import render_html
from harness.report.markdown import render_markdown
from harness.report.model import build_report
from harness.stats import cluster_bootstrap, cr2, evidence, methods, paired

runner = CliRunner()
FEW = "Satterthwaite df = 3"


# ------------------------------------------------------------------------------------------------------------------
# Reading the marks off an interval
# ------------------------------------------------------------------------------------------------------------------


def test_bounds_reads_clipping_infinity_and_zero_width():
    clipped = cr2([1.0, 1.0, 0.5, 1.0], ["a", "b", "c", "d"])
    assert clipped.upper == 1.0 and clipped.extras["clipped"]
    b = bounds(clipped)
    assert (b.upper_clipped, b.lower_clipped, b.degenerate) == (True, False, False)
    assert fmt_iv(clipped) == f"[{clipped.lower:.3f}, 1.000{CLIP_MARK}]"
    # a bootstrap-t side that cannot be bounded is stored clipped as 1; it reads back as +inf
    boot = cluster_bootstrap([0.5, 0.2, 0.9, 1.0], ["c1", "c1", "c2", "c3"], kind="bootstrap_t", B=500)
    assert boot.upper == 1.0 and boot.extras["t_quantiles"][0] == -math.inf
    assert bounds(boot).upper == math.inf and fmt_iv(boot).endswith(", +inf]")
    assert bounds(boot).lower_clipped  # the other side is finite, clipped at 0
    # zero width
    flat = cr2([1.0, 1.0, 1.0], ["a", "b", "c"])
    assert bounds(flat).degenerate and mean_iv(1.0, flat) == "1.000 [degenerate]"
    assert diff_iv(0.0, (0.0, 0.0)) == "+0.000 [degenerate]"
    # unclipped paired intervals keep their infinite bounds as they are
    inf = paired([0.5, 0.2, 0.9, 0.1], [1.0, 0.2, 0.3, 0.6], ["c1", "c1", "c2", "c3"], method="bootstrap_t", B=500)
    assert fmt_iv(inf) == "[-inf, +inf]" and bounds(inf).infinite == (True, True)
    # a wild bootstrap says "infinite" only in its warnings: the clipped side at 0 or 1 reads as infinite
    said = {"lower": 0.0, "upper": 0.4, "extras": {"clipped": True, "warnings": ["wild bootstrap bound is infinite"]}}
    assert bounds(said) == Bounds(-math.inf, 0.4)
    text = legend([clipped, flat, inf])
    assert "bound clipped" in text and "cannot bound that side" in text and "zero-width" in text
    assert legend([(0.1, 0.2)]) == "" and legend([flat]).startswith("[degenerate]: zero-width interval")


def test_interval_flags_in_json():
    data = {
        "a": [{"lower": 0.0, "upper": 0.0, "extras": {}}],
        "b": {"lower": 0.2, "upper": 1.0, "extras": {"clipped": 1}},
    }
    out = interval_flags(data)
    assert out["a"][0]["flags"]["degenerate"] is True
    assert out["b"]["flags"] == {"degenerate": False, "clipped": {"lower": False, "upper": True},
                                 "infinite": {"lower": False, "upper": False}}  # fmt: skip
    assert "flags" not in data["b"]  # a copy


# ------------------------------------------------------------------------------------------------------------------
# A run record whose intervals are clipped, degenerate and infinite, in every rendering
# ------------------------------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def cr2_shown(tmp_path, monkeypatch):
    """These tests are about how CR2's marks (clipped, degenerate, infinite bounds) render. Without an evidence file
    a run shows the registry's defaults (harness.stats.shown.fallback); with CR2 for unit metrics too, every table
    shows CR2 (a design's own default, e.g. CR2 on the logit scale, never reaches past [0, 1]). The run record of
    :func:`marked_run` is written under the same setting, since a record stores the interval it shows (issue 40)."""
    _show_cr2(monkeypatch, tmp_path)


def _show_cr2(mp: pytest.MonkeyPatch, tmp: Path) -> None:
    mp.setattr(evidence, "EVIDENCE_PATH", tmp / "no-evidence.json")
    mp.setitem(methods.DEFAULTS, "unit", "cr2")


@pytest.fixture(scope="module")
def marked_run(tmp_path_factory) -> Path:
    """Four questions in four clusters: bm25's recall@5 is 1 everywhere (degenerate), its MRR interval reaches past
    1 (clipped), its bootstrap-t MRR interval is unbounded, CR2 df = 3 < 4 (few clusters)."""
    tmp = tmp_path_factory.mktemp("marks")
    with pytest.MonkeyPatch.context() as mp:  # the record stores the interval it shows, chosen when it is written
        _show_cr2(mp, tmp)
        run = write_run(tmp, questions(dev=[("D4", "lt3"), ("D3", "gt2")], test=[("T1", "lt4"), ("T3", "gt1")]))
    ov = load_run(run).summary.systems["bm25"]["all"].overall
    assert bounds(ov["recall@5"].intervals["cr2"]).degenerate
    assert bounds(ov["mrr"].intervals["cr2"]).upper_clipped
    assert bounds(ov["mrr"].intervals["bootstrap_t"]).infinite == (True, True)
    assert ov["mrr"].intervals["bootstrap_t"].bounds == (0.0, 1.0)  # what the record holds (and HTML showed)
    return run


def _emit(run: Path, fmt: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    emit(Result("run", load_run(run)), fmt, console=Console(file=out, width=150), err=Console(file=err, width=150))
    return out.getvalue(), err.getvalue()


def test_run_table_and_markdown_mark_degenerate_and_clipped_bounds(marked_run):
    for fmt in ("table", "markdown"):
        text, err = _emit(marked_run, fmt)
        assert "1.000 [degenerate]" in text and "[1.000, 1.000]" not in text, fmt
        said = "bound clipped to [0, 1]" if fmt == "table" else "bound clipped to \\[0, 1\\]"  # Markdown-escaped
        assert f"1.000{CLIP_MARK}]" in text and said in text, fmt
        assert FEW in err, fmt  # the few-cluster warning on stderr
        assert (FEW in text) == (fmt != "table"), fmt  # and inside a Markdown output (stdout holds only the table)
    data, err = _emit(marked_run, "json")
    assert FEW in err and json.loads(data)["data"]["systems"]["bm25"]["all"]["overall"]["mrr"]["intervals"]["cr2"][
        "extras"]["clipped"] is True  # fmt: skip


def test_html_report_marks_every_kind_and_shows_infinite_bootstrap_t_bounds(marked_run):
    html = render_html(build_report([marked_run], reps=200))
    assert "<span class='iv degenerate'" in html and ">[degenerate]</span>" in html
    assert "<span class='iv clipped'" in html and f"1.000{CLIP_MARK}]" in html
    # the methods table: bootstrap-t was shown as [0.000, 1.000]; it is unbounded on both sides
    methods_table = html[html.index("under every interval method recorded") :]
    methods_table = methods_table[: methods_table.index("</details>")]
    assert "<span class='iv infinite' " in methods_table and "[-inf, +inf]" in methods_table
    assert "bound clipped to [0, 1]" in html and "zero-width interval" in html
    assert "Some intervals are clipped at 0 or 1" in html  # the figures cannot show the marks; their captions say so


def test_markdown_report_marks_bounds(marked_run):
    md = render_markdown(build_report([marked_run], reps=200))
    assert "1.000 \\[degenerate\\]" in md or "1.000 [degenerate]" in md
    assert CLIP_MARK in md and "bound clipped to \\[0, 1\\]" in md


# ------------------------------------------------------------------------------------------------------------------
# compare, gate, power: marks and few-cluster warnings in every format
# ------------------------------------------------------------------------------------------------------------------


def _few_cluster_runs(tmp_path: Path):
    a, b = _values(n=8, shift=0.05, noise=0.05)
    return make_run(tmp_path, "fa", {"bm25": a}, n_clusters=4), make_run(tmp_path, "fb", {"new": b}, n_clusters=4)


def test_compare_shows_warnings_and_category_intervals_in_the_terminal(tmp_path: Path):
    base, cand = _few_cluster_runs(tmp_path)
    r = runner.invoke(app, ["compare", str(base), str(cand), "--metrics", "mrr"])
    assert r.exit_code == 0, r.output
    assert f"warning: {FEW}" in r.stderr and FEW not in r.stdout  # was shown only in the JSON; now on stderr
    assert "B - A [CI]" in r.stdout and "(< 2 clusters: no interval)" in r.stdout
    r = runner.invoke(app, ["compare", str(base), str(cand), "--metrics", "mrr", "--format", "json"])
    data = json.loads(r.stdout)["data"]
    assert any(FEW in w for w in data["warnings"]) and FEW in r.stderr
    assert "flags" in data["comparisons"][0]["interval"]
    r = runner.invoke(app, ["compare", str(base), str(cand), "--metrics", "mrr", "--format", "markdown"])
    assert f"> **Warning:** {FEW}" in r.stdout and FEW in r.stderr
    assert "per category" in r.stdout


def test_gate_and_power_carry_few_cluster_warnings_in_every_format(tmp_path: Path):
    base, cand = _few_cluster_runs(tmp_path)
    for fmt in ("table", "markdown", "json"):
        g = runner.invoke(app, ["gate", "--baseline", str(base), "--candidate", str(cand), "--verdict",
                                str(tmp_path / "v.json"), "--format", fmt])  # fmt: skip
        assert g.exit_code in (0, 1, 3) and FEW in g.stderr, (fmt, g.output)
        assert (FEW in g.stdout) == (fmt != "table")
        p = runner.invoke(app, ["power", "--run", str(base), "--format", fmt])
        assert p.exit_code == 0 and "ICC estimated from 4 clusters" in p.stderr, fmt
        assert ("ICC estimated from 4 clusters" in p.stdout) == (fmt != "table")


def test_infinite_paired_bounds_in_compare_and_gate_outputs(tmp_path: Path, monkeypatch):
    """With a resampling default (bootstrap-t) and three clusters the paired interval is unbounded: every format
    says so, and the gate cannot estimate an MDD from it."""
    monkeypatch.setitem(methods.DEFAULTS, "paired", "bootstrap_t")
    a = {"Q-0": 0.5, "Q-1": 0.2, "Q-2": 0.9, "Q-3": 0.1}
    b = {"Q-0": 1.0, "Q-1": 0.2, "Q-2": 0.3, "Q-3": 0.6}
    base = make_run(tmp_path, "ia", {"bm25": a}, n_clusters=3)
    cand = make_run(tmp_path, "ib", {"new": b}, n_clusters=3)
    r = runner.invoke(app, ["compare", str(base), str(cand), "--metrics", "mrr"])
    assert "[-inf, +inf]" in r.stdout and "cannot bound that side" in r.stdout
    r = runner.invoke(app, ["compare", str(base), str(cand), "--metrics", "mrr", "--format", "markdown"])
    assert "\\[-inf, +inf\\]" in r.stdout or "[-inf, +inf]" in r.stdout
    r = runner.invoke(app, ["compare", str(base), str(cand), "--metrics", "mrr", "--format", "json"])
    flags = json.loads(r.stdout)["data"]["comparisons"][0]["interval"]["flags"]
    assert flags["infinite"] == {"lower": True, "upper": True}
    g = runner.invoke(app, ["gate", "--baseline", str(base), "--candidate", str(cand), "--verdict",
                            str(tmp_path / "v.json")])  # fmt: skip
    assert g.exit_code == 3 and ", +inf] vs -margin" in g.stdout
    assert "not estimable: the interval has an infinite bound" in g.stdout
