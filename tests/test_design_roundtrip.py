"""A gold set of each sampling design (``from-documents``, ``independent``, ``pps``) round-trips through import (or
plan), run, compare, gate and report: the design and estimand ids are stored, the clusters follow the design, and the
wording is the design's (harness.evaluation.design, harness.stats.design_evidence)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import tiny_records, write_tiny_corpus, write_tiny_goldset
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import HarnessInputError
from harness.evaluation.design import declared_sampling, design_info, run_clustering
from harness.evaluation.runs import load_run
from harness.goldset.io import load_goldset
from harness.report.wording import estimand_line
from harness.stats.design_evidence import design_advice, recorded_sampling, run_design

runner = CliRunner()
WORDS = ["solar", "viento", "marea", "carbon", "agua", "tierra", "fuego", "hielo"]


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def write_beir(root: Path) -> Path:
    """8 documents, 12 queries; query i judges document i mod 6: under from-documents the 12 form 6 clusters of 2
    (too few for the coverage rule), under independent 12 clusters of 1."""
    (root / "qrels").mkdir(parents=True)
    docs = [{"_id": f"d{i}", "title": w, "text": f"{w} {w} energia {w} texto {i}"} for i, w in enumerate(WORDS)]
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), "utf-8")
    qs = [{"_id": f"q{i}", "text": f"{WORDS[i % 8]} {WORDS[(i + 3 + i // 8) % 8]} pregunta {i}"} for i in range(12)]
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs), "utf-8")
    lines = [f"q{i}\td{i % 6}\t1\n" for i in range(12)]
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(lines), "utf-8")
    return root


def _pps(tmp_path: Path) -> tuple[Path, Path]:
    corpus = write_tiny_corpus(tmp_path / "corpus")
    recs = tiny_records()
    draws = [{"draw": 0, "doc_id": "ley-a", "p": 0.4}, {"draw": 1, "doc_id": "dof-c", "p": 0.2},
             {"draw": 2, "doc_id": "ley-b", "p": 0.3}]  # fmt: skip
    return corpus, write_tiny_goldset(tmp_path / "gs", corpus, recs, design={"sampling": "pps", "draws": draws})


@pytest.mark.slow  # a minute on the shared machine: three runs, compares, gates and reports
@pytest.mark.parametrize("design", ["independent", "from-documents", "pps"])
def test_a_gold_set_of_each_design_round_trips(tmp_path: Path, design: str):
    if design == "pps":
        corpus, gs = _pps(tmp_path)
        n, clusters = 3, 3
    else:
        r = invoke("goldset", "import", "--beir", write_beir(tmp_path / "beir"), "--out", tmp_path / "gs",
                   "--required-rel", "1", *(["--design", design] if design != "independent" else []))  # fmt: skip
        assert r.exit_code == 0, r.output
        assert f"design: {design} (design.sampling in the manifest)" in " ".join(r.output.split())
        corpus, gs = tmp_path / "gs-corpus", tmp_path / "gs"
        n, clusters = 12, (12 if design == "independent" else 6)
        assert load_goldset(gs).manifest.model_extra["design"] == {"sampling": design}
    runs = tmp_path / "runs"
    r = invoke("run", "--corpus", corpus, "--goldset", gs, "--systems", "bm25,tfidf", "--workdir", tmp_path / "wd",
               "--runs-dir", runs, "--run-id", "r", "--bootstrap-reps", "200", "--metrics", "nDCG@10")  # fmt: skip
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())
    run = load_run(runs / "r")
    assert run.summary.design_id == design
    sampling = {"independent": "independent", "from-documents": "srs", "pps": "pps"}[design]
    assert run.summary.estimand_id == sampling and run_design(run).sampling == sampling
    assert run.manifest.clusters.n_clusters == clusters and len(run.rows("bm25")) == n
    assert estimand_line(sampling) in out and len(estimand_line(sampling)) <= 100  # issue 42 item 5
    if design == "from-documents":  # one component: one line naming the design that fits imported judgements
        assert "12 questions form 6 clusters" in out and "design.sampling: independent" in out
    if design == "independent":
        assert "clustering none (12 clusters" in out
        assert "bca" in run.summary.systems["bm25"]["all"].overall["mrr"].intervals
    cmp = invoke("compare", runs / "r", runs / "r", "--baseline-system", "bm25", "--candidate-system", "tfidf",
                 "--metric", "mrr", "--reps", "200")  # fmt: skip
    assert cmp.exit_code == 0, cmp.output
    assert "Estimand: difference of" in " ".join(cmp.output.split())
    gate = invoke("gate", "--baseline", runs / "r", "--candidate", runs / "r", "--baseline-system", "bm25",
                  "--candidate-system", "tfidf", "--metric", "mrr", "--margin", "0.5", "--format", "json")  # fmt: skip
    assert gate.exit_code in (0, 1, 2), gate.output
    data = json.loads(gate.stdout)["data"]
    assert data["decision"] in ("PASS", "FAIL", "INCONCLUSIVE")
    if design == "independent":  # 12 one-question clusters: a finite interval and an estimable MDD
        assert "not estimable" not in json.dumps(data)
    rep = invoke("report", runs / "r", "--format", "markdown", "--out", tmp_path / "report.md")
    assert rep.exit_code == 0, rep.output
    text = " ".join((tmp_path / "report.md").read_text(encoding="utf-8").split())
    assert text.replace("\\", "").count(estimand_line(sampling)) == 1  # once per output (issue 42 item 5)


def test_the_declared_design_sets_the_clustering_and_a_bad_one_is_one_located_line(tmp_path: Path):
    corpus = write_tiny_corpus(tmp_path / "corpus")
    none = load_goldset(write_tiny_goldset(tmp_path / "a", corpus))
    assert declared_sampling(none) == "from-documents" and run_clustering(none, None) == "components"
    ind = load_goldset(write_tiny_goldset(tmp_path / "b", corpus, design={"sampling": "independent"}))
    assert run_clustering(ind, None) == "none" and run_clustering(ind, "components") == "components"
    # an explicit --clustering is recorded, and the run is then read as from-documents
    assert design_info(ind) == {"design": {"sampling": "independent"}}
    over = design_info(ind, "components")
    assert over == {"design": {"sampling": "independent", "clustering": "components"}}
    assert (
        recorded_sampling(over["design"]) == "srs" and recorded_sampling({"sampling": "independent"}) == "independent"
    )
    assert design_info(none) == {} and recorded_sampling(None) == "srs"  # the committed baseline's record: unchanged
    bad = load_goldset(write_tiny_goldset(tmp_path / "c", corpus, design={"sampling": "random"}))
    with pytest.raises(HarnessInputError, match=r"field design.sampling: 'random' is none of"):
        declared_sampling(bad)


def test_design_advice_names_the_independent_design_when_clusters_are_too_few():
    line = design_advice(76, [76])
    assert line is not None and "76 questions form 1 cluster" in line and "independent" in line
    assert "the largest holding 70" in design_advice(76, [70, *([1] * 6)])
    assert "plan more draws" in design_advice(3, [1, 1, 1], "pps")
    assert design_advice(76, [1] * 76, "independent") is None and design_advice(42, [6, 3, 3, 3, *([1] * 27)]) is None


def test_import_refuses_an_unknown_design_in_one_line_and_writes_nothing(tmp_path: Path):
    r = invoke("goldset", "import", "--beir", write_beir(tmp_path / "beir"), "--out", tmp_path / "gs",
               "--required-rel", "1", "--design", "pps")  # fmt: skip
    assert r.exit_code == 2 and "--design 'pps': expected independent or from-documents" in r.output
    assert not (tmp_path / "gs").exists() and not (tmp_path / "gs-corpus").exists()
