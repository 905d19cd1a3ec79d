"""Subsets (``--qids``, ``--category``) on run, evaluate, compare, gate and report; ``--format csv|tsv`` long tables;
timings with their units and peak memory (issue 31 items 4-6)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from conftest import write_tiny_corpus, write_tiny_goldset
from typer.testing import CliRunner

from harness.cli import app
from harness.evaluation.pipeline import RunOptions, run
from harness.evaluation.runs import load_run
from harness.evaluation.subset import Subset, restrict_run, resummarise
from harness.report.tables import COLUMNS


def _run(args: list[str]):
    return CliRunner().invoke(app, args)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Two runs of bm25 and tfidf on the tiny corpus, written once for the module (tests only read them)."""
    tmp = tmp_path_factory.mktemp("subsets")
    corpus = write_tiny_corpus(tmp / "corpus")
    goldset = write_tiny_goldset(tmp / "gs", corpus)
    out = {}
    for rid in ("a", "b"):
        out[rid] = run(goldset, corpus, ["bm25", "tfidf"], workdir=tmp / "wd", runs_dir=tmp / "runs", run_id=rid,
                       options=RunOptions(bootstrap_reps=200))  # fmt: skip
    return out


def test_run_qids_scores_and_records_only_the_subset(tiny_corpus, tiny_goldset, tmp_path):
    args = ["-q", "run", "--corpus", str(tiny_corpus), "--goldset", str(tiny_goldset), "--workdir", str(tmp_path / "w"),
            "--runs-dir", str(tmp_path / "r"), "--run-id", "s", "--bootstrap-reps", "200", "--qids", "SP-001,MD-001",
            "--format", "csv"]  # fmt: skip
    res = _run(args)
    assert res.exit_code == 0, res.output
    rec = load_run(tmp_path / "r" / "s")
    assert {r.qid for r in rec.per_question} == {"SP-001", "MD-001"}
    sub = rec.manifest.model_extra["subset"]
    assert sub["qids"] == ["SP-001", "MD-001"] and sub["n_questions"] == 2 and sub["of"] == 3
    assert rec.manifest.clusters.n_clusters == 2 and set(rec.manifest.clusters.labels) == {"SP-001", "MD-001"}
    assert rec.summary.systems["bm25"]["all"].n_questions == 2
    trec = (tmp_path / "r" / "s" / "trec" / "bm25.document.run").read_text("utf-8")
    assert "SP-002" not in trec
    # the csv names the subset on every row, and holds one row per system x question x metric, then the summary
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    assert tuple(rows[0]) == COLUMNS
    q = [r for r in rows if r["table"] == "question"]
    assert len(q) == 2 * len(rec.per_question[0].metrics) and {r["qid"] for r in q} == {"SP-001", "MD-001"}
    assert {r["subset"] for r in rows} == {"qids SP-001, MD-001"}
    s = [r for r in rows if r["table"] == "summary" and r["metric"] == "mrr"]
    assert len(s) == 1 and s[0]["n_questions"] == "2" and s[0]["n_clusters"] == "2"
    assert float(s[0]["value"]) == rec.summary.systems["bm25"]["all"].overall["mrr"].mean
    by_q = {r["qid"]: float(r["value"]) for r in q if r["metric"] == "recall@1"}
    assert by_q == rec.metric_vector("bm25", "recall@1")


@pytest.mark.parametrize(
    ("flag", "value", "named"),
    [("--qids", "SP-001,XX-1,YY-2", "2 question ids not in it: XX-1, YY-2"), ("--category", "nope", "nope not among")],
)
def test_bad_ids_and_categories_are_refused_before_any_work(tiny_corpus, tiny_goldset, tmp_path, flag, value, named):
    args = ["run", "--corpus", str(tiny_corpus), "--goldset", str(tiny_goldset), "--workdir", str(tmp_path / "w"),
            "--runs-dir", str(tmp_path / "r"), flag, value]  # fmt: skip
    res = _run(args)
    assert res.exit_code == 2 and named in res.output
    assert not (tmp_path / "w").exists() and not (tmp_path / "r").exists()  # nothing ingested, nothing written


def test_evaluate_category_restricts_to_the_subset(runs, tiny_goldset, tmp_path):
    rankings = str(runs["a"] / "trec" / "bm25.document.run")
    res = _run(["-q", "evaluate", "--goldset", str(tiny_goldset), "--rankings", rankings,
                "--runs-dir", str(tmp_path / "r"), "--run-id", "e", "--bootstrap-reps", "200",
                "--category", "single_passage", "--format", "tsv"])  # fmt: skip
    assert res.exit_code == 0, res.output
    rec = load_run(tmp_path / "r" / "e")
    assert {r.category for r in rec.per_question} == {"single_passage"} and len(rec.per_question) == 2
    rows = list(csv.DictReader(io.StringIO(res.stdout), delimiter="\t"))
    assert {r["category"] for r in rows if r["table"] == "question"} == {"single_passage"}
    assert rec.metric_vector("bm25", "mrr") == {
        q: v for q, v in load_run(runs["a"]).metric_vector("bm25", "mrr").items() if q.startswith("SP-")
    }


def test_compare_and_gate_filter_both_sides_and_name_the_subset(runs):
    res = _run(["compare", str(runs["a"]), str(runs["b"]), "--qids", "SP-001,SP-002", "--metric", "mrr",
                "--format", "json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)["data"]
    assert data["clustering"]["n_clusters"] == 2 and "subset qids SP-001, SP-002" in data["clustering"]["mode"]
    assert all(c["clusters"]["n"] == 2 for c in data["comparisons"])
    assert sum(data["comparisons"][0]["questions"].values()) == 2
    res = _run(["gate", "--baseline", str(runs["a"]), "--candidate", str(runs["b"]), "--baseline-system", "bm25",
                "--candidate-system", "tfidf", "--category", "single_passage", "--format", "json"])  # fmt: skip
    assert res.exit_code in (0, 3), res.output
    v = json.loads(res.stdout)["data"]
    assert v["n_questions"] == 2 and "subset category single_passage" in v["split"]
    res = _run(["compare", str(runs["a"]), str(runs["b"]), "--qids", "SP-001,ZZ"])
    assert res.exit_code == 2 and "ZZ" in res.output


def test_report_recomputes_summaries_on_the_subset(runs, tmp_path):
    rec = resummarise(restrict_run(load_run(runs["a"]), Subset.of("SP-001,MD-001")))
    whole = load_run(runs["a"])
    s = rec.summary.systems["bm25"]["all"]
    assert s.n_questions == 2 and s.n_clusters == 2
    vals = whole.metric_vector("bm25", "recall@1")
    assert s.overall["recall@1"].mean == pytest.approx((vals["SP-001"] + vals["MD-001"]) / 2, abs=1e-15)
    assert s.overall["recall@1"].intervals["cr2"].n_clusters == 2
    res = _run(["report", str(runs["a"]), str(runs["b"]), "--format", "tsv", "--out", str(tmp_path / "r.tsv"),
                "--category", "single_passage"])  # fmt: skip
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader((tmp_path / "r.tsv").open(encoding="utf-8"), delimiter="\t"))
    assert {r["run_id"] for r in rows} == {"a", "b"} and {r["qid"] for r in rows if r["qid"]} == {"SP-001", "SP-002"}
    res = _run(["report", str(runs["a"]), "--format", "markdown", "--out", "-", "--qids", "SP-001,MD-001"])
    assert res.exit_code == 0 and "subset qids SP-001, MD-001, 2 clusters" in res.stdout


def test_csv_is_refused_for_verbs_without_a_table(runs):
    """The verbs named are read from the registry (issue 42 item 10: the message left out evaluate)."""
    res = _run(["power", "--candidate", str(runs["a"]), "--format", "csv"])
    assert res.exit_code == 2
    assert res.stderr.strip() == "error: --format csv: applies to run, evaluate, compare, gate, report only"


def test_timings_carry_their_units_and_peak_memory_is_recorded(tiny_corpus, tiny_goldset, tmp_path):
    args = ["-v", "run", "--corpus", str(tiny_corpus), "--goldset", str(tiny_goldset), "--workdir", str(tmp_path / "w"),
            "--runs-dir", str(tmp_path / "r"), "--run-id", "t", "--bootstrap-reps", "200",
            "--format", "json"]  # fmt: skip
    res = _run(args)
    assert res.exit_code == 0, res.output
    man = load_run(tmp_path / "r" / "t").manifest
    assert "bm25_ms_per_query" not in man.timings_s  # seconds only there
    assert man.model_extra["per_query_ms"]["bm25"] > 0
    peak = man.model_extra["peak_rss_mib"]
    assert list(peak) == ["ingest", "evidence", "bm25_index_build", "bm25_search", "search", "metrics_and_intervals"]
    assert all(v > 10 for v in peak.values()) and list(peak.values()) == sorted(peak.values())  # a high-water mark
    assert "per_query_ms.bm25: " in res.output and res.output.split("per_query_ms.bm25: ")[1].split("\n")[0].endswith(
        " ms"
    )
    assert "peak_rss_mib.search: " in res.output
    for line in res.output.splitlines():
        if line.startswith("timings_s."):
            assert line.endswith(" s"), line


def test_report_metric_scores_ids_the_runs_lack(runs, tmp_path):
    res = _run(["report", str(runs["a"]), "--metric", "AP@20,P@3", "--format", "markdown", "--out", "-"])
    assert res.exit_code == 0, res.output
    assert "gate: AP@20" in res.stdout and "| tfidf | AP@20 |" in res.stdout
    res = _run(["report", str(runs["a"]), "--metric", "P@3", "--format", "csv", "--out", str(tmp_path / "r.csv")])
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader((tmp_path / "r.csv").open(encoding="utf-8")))
    assert {r["system"] for r in rows if r["metric"] == "P@3" and r["table"] == "summary"} == {"bm25", "tfidf"}
    res = _run(["report", str(runs["a"]), "--metric", "P@80", "--out", "-", "--format", "markdown"])
    assert res.exit_code == 2 and "--doc-depth 80" in res.output


def test_a_subset_run_scores_its_questions_as_the_whole_run_does(runs, tiny_corpus, tiny_goldset, tmp_path):
    sub = run(tiny_goldset, tiny_corpus, ["bm25", "tfidf"], workdir=tmp_path / "wd", runs_dir=tmp_path / "runs",
              run_id="sub", options=RunOptions(bootstrap_reps=200, subset=Subset.of("SP-002,MD-001")))  # fmt: skip
    whole, part = load_run(runs["a"]), load_run(sub)
    for system in ("bm25", "tfidf"):
        for m in part.summary.metric_ids:
            w = whole.metric_vector(system, m)
            assert part.metric_vector(system, m) == {q: w[q] for q in ("SP-002", "MD-001")}, (system, m)
    # and compare --qids on the whole runs pairs exactly the questions the subset run holds
    res = _run(["compare", str(runs["a"]), str(sub), "--qids", "SP-002,MD-001", "--metric", "mrr", "--format", "json"])
    assert res.exit_code == 0, res.output
    assert all(c["diff"] == 0 for c in json.loads(res.stdout)["data"]["comparisons"])


def test_every_run_output_names_the_subset(tiny_corpus, tiny_goldset, tmp_path):
    base = ["-q", "run", "--corpus", str(tiny_corpus), "--goldset", str(tiny_goldset), "--workdir", str(tmp_path / "w"),
            "--runs-dir", str(tmp_path / "r"), "--run-id", "n", "--bootstrap-reps", "200",
            "--category", "multi_document", "--overwrite"]  # fmt: skip
    data = json.loads(_run([*base, "--format", "json"]).stdout)["data"]
    assert data["subset"]["label"] == "category multi_document" and data["subset"]["n_questions"] == 1
    markdown = _run([*base, "--metrics", "AP@10", "--format", "markdown"]).stdout
    assert "Subset category multi\\_document: 1 of 3 questions." in markdown and "| AP@10 |" in markdown
    table = _run([*base, "--format", "table"])
    assert "of the subset category multi_document (n=1)" in " ".join(table.stdout.split())
    html = tmp_path / "r.html"
    assert _run(["report", str(tmp_path / "r" / "n"), "--out", str(html)]).exit_code == 0
    assert "subset category multi_document" in html.read_text("utf-8")
