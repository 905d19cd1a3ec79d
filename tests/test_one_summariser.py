"""Issue 40 item 2: one summariser. ``run``/``evaluate`` and every subset view of ``report`` (``--qids``,
``--category``, ``--split``) build a run's summary through the same function with the same design, notes and shares:
on a PPS gold set, a run on the gold set cut to some questions and ``report RUN --qids <those questions>`` on the full
run give equal values for every field of every metric entry (before the fix the subset view showed CR2 intervals only,
without the Hansen-Hurwitz ones of the design)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import tiny_records, write_tiny_corpus, write_tiny_goldset
from typer.testing import CliRunner

from harness.cli import app
from harness.evaluation.pipeline import RunOptions, evaluate_rankings
from harness.evaluation.runs import load_run
from harness.evaluation.subset import Subset, load_report_runs, restrict_split

DRAWS = [{"draw": 0, "doc_id": "ley-a", "p": 0.4}, {"draw": 1, "doc_id": "dof-c", "p": 0.2},
         {"draw": 2, "doc_id": "ley-b", "p": 0.3}, {"draw": 3, "doc_id": "ley-a", "p": 0.4},
         {"draw": 4, "doc_id": "dof-c", "p": 0.2}]  # fmt: skip
DOCS = ["ley-a", "dof-c", "ley-b", "dof-d"]


def _pps_run(tmp_path: Path) -> tuple[Path, Path, list[dict]]:
    """A PPS gold set of 9 questions over 5 draws (two documents drawn twice), with categories and splits, and a
    JSONL rankings file of two systems whose ranks vary by question."""
    corpus = write_tiny_corpus(tmp_path / "corpus")
    sp1, sp2, md = tiny_records()
    base = [sp1, sp2, md, sp1, sp2, sp1, md, sp2, sp1]
    recs = [
        dict(r, id=f"Q-{i:02d}", category=("alpha", "beta", "gamma")[i % 3], split=("dev", "test")[i % 2])
        for i, r in enumerate(base)
    ]
    gs = write_tiny_goldset(tmp_path / "gs", corpus, recs, design={"sampling": "pps", "seed": 0, "draws": DRAWS})
    lines = []
    for i, r in enumerate(recs):
        gold = r["gold_documents"][0]["document_id"]
        for system, shift in (("a", i % 3), ("b", (i * 2) % 4)):
            order = [d for d in DOCS if d != gold]
            order.insert(min(shift, len(order)), gold)
            chunks = [[f"{d}#0", 1.0 - j / 10] for j, d in enumerate(order)]
            line = {"qid": r["id"], "system": system, "docs": [[d, 1.0 - j / 10] for j, d in enumerate(order)]}
            if system == "a" or i % 4:  # system b returns no chunks for some questions
                line["chunks"] = chunks
            lines.append(line)
    rankings = tmp_path / "rankings.jsonl"
    rankings.write_text("\n".join(json.dumps(x) for x in lines) + "\n", "utf-8")
    return gs, rankings, recs


def _entries(run, slice_name: str = "all") -> dict:
    """Every field of every slice summary (metric entries: mean, intervals, note; levels, counts, shares), as JSON
    (an undefined ICC in an interval's extras is NaN, unequal to itself as a float)."""
    return {
        s: json.dumps(run.summary.systems[s][slice_name].model_dump(mode="json"), sort_keys=True)
        for s in run.summary.systems
    }


@pytest.fixture
def pps(tmp_path: Path):
    gs, rankings, recs = _pps_run(tmp_path)
    opts = {"bootstrap_reps": 200}
    full = evaluate_rankings(gs, rankings, runs_dir=tmp_path / "runs", run_id="full", options=RunOptions(**opts))

    def cut(run_id: str, subset: Subset):
        return load_run(
            evaluate_rankings(
                gs, rankings, runs_dir=tmp_path / "runs", run_id=run_id, options=RunOptions(**opts, subset=subset)
            ),
            log=None,
        )

    return full, cut, recs


def test_report_qids_and_category_equal_a_run_on_the_cut_gold_set(pps):
    full, cut, recs = pps
    whole = load_run(full, log=None)
    assert "hansen_hurwitz_logit" in whole.summary.systems["a"]["all"].overall["mrr"].intervals
    # the questions of ley-a split its two draws unevenly: the cut keeps the whole set's clusters
    for subset in (Subset.of(qids="Q-00,Q-01,Q-02,Q-05,Q-06"), Subset.of(categories="alpha,beta")):
        run = cut("cut-" + str(len(subset.qids)), subset)
        (view,) = load_report_runs([full], subset)
        assert "hansen_hurwitz_logit" in view.summary.systems["a"]["all"].overall["mrr"].intervals
        assert _entries(view) == _entries(run)
    # every question: the subset view equals the full run's own summary
    (every,) = load_report_runs([full], Subset.of(qids=",".join(r["id"] for r in recs)))
    assert _entries(every) == _entries(whole)


def test_report_split_equals_a_run_on_that_split(pps):
    full, cut, recs = pps
    test_qids = [r["id"] for r in recs if r["split"] == "test"]
    run = cut("test-split", Subset.of(qids=test_qids))
    view = restrict_split(load_run(full, log=None), "test")
    assert _entries(view) == _entries(run)


def test_the_report_command_shows_the_designs_interval_on_a_subset(pps):
    full, _cut, recs = pps
    qids = ",".join(r["id"] for r in recs)
    out = CliRunner().invoke(app, ["report", str(full), "--qids", qids, "--format", "markdown", "--out", "-"])
    assert out.exit_code == 0, out.output
    assert "HH-logit" in out.stdout and "CR2 intervals" not in out.stdout
