"""Issue 29 item 3a: ``harness known-item --sample K --design pps|srs --seed S`` searches only the drawn documents'
queries and reports the Hansen-Hurwitz estimate with the logit t interval (pps), or CR2 with "coverage not
guaranteed" (srs). Reference: the closed-form PPS-with-replacement estimator written out here (Cochran 1977 eq. 9A.6;
R survey's svymean/svyciprop(xlogit) on svydesign(ids = ~draw, probs = ~p) gives the same formulas)."""

from __future__ import annotations

import gzip
import json
import math

import numpy as np
import pytest
from scipy import stats
from test_known_item import EXPECTED, KW, write_corpus
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import HarnessInputError
from harness.report.markdown_verbs import render
from harness.studies.coverage import load_population
from harness.studies.known_item import chunk_corpus, run_known_item
from harness.studies.known_item.sample import draw_documents

QUERIES = {"gatos": 2, "perros": 2, "mixto": 2, "dupa": 2, "dupb": 2}  # chunk-queries per document (solo: none)


def _rates(metric: str) -> dict[str, float]:
    out: dict[str, list[float]] = {}
    for (doc, _), (hit, rank, _, _) in EXPECTED.items():
        out.setdefault(doc, []).append(float(hit) if metric == "hit@1" else (0.0 if rank is None else 1.0 / rank))
    return {d: sum(v) / len(v) for d, v in out.items()}


def _hh_logit(r: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    k = r.size
    m = r.mean()
    se = r.std(ddof=1) / math.sqrt(k)
    t = stats.t.ppf(0.5 + level / 2, k - 1)
    if m in (0.0, 1.0) or se == 0:
        return m, m, m
    half = t * se / (m * (1 - m))
    lg = math.log(m / (1 - m))
    return m, 1 / (1 + math.exp(-(lg - half))), 1 / (1 + math.exp(-(lg + half)))


def test_pps_draws_are_proportional_to_queries(tmp_path):
    cc = chunk_corpus(write_corpus(tmp_path / "c"), **KW)
    draws = draw_documents(cc, 20000, "pps", seed=1)
    ids = [cc.doc_ids[d] for d in draws.docs]
    assert "solo" not in ids  # no queries: probability 0
    share = {d: ids.count(d) / len(ids) for d in QUERIES}
    assert all(abs(s - 0.2) < 0.015 for s in share.values())
    assert np.allclose(draws.p, 0.2)
    again = draw_documents(cc, 20000, "pps", seed=1)
    assert np.array_equal(again.docs, draws.docs)


def test_pps_sample_reports_hansen_hurwitz_logit(tmp_path):
    corpus = write_corpus(tmp_path / "c")
    res = run_known_item(
        corpus, tmp_path / "out", systems="bm25,tfidf", workers=1, sample=5, design="pps", seed=4, **KW
    )  # fmt: skip  (5 draws: at most the 5 documents with queries)
    smp = res.summary["sample"]
    drawn = [d["doc_id"] for d in smp["draws"]]
    assert len(drawn) == 5 and smp["documents"] == len(set(drawn)) and smp["design"] == "pps"
    assert all(d["p"] == pytest.approx(0.2) for d in smp["draws"])
    assert smp["queries"] == sum(QUERIES[d] for d in set(drawn))
    assert "chunk-weighted mean" in smp["estimand"]
    recs = [json.loads(x) for x in gzip.decompress((tmp_path / "out" / "outcomes.jsonl.gz").read_bytes()).splitlines()]
    assert {r["doc_id"] for r in recs} == set(drawn)  # only the drawn documents' queries were searched
    for r in recs:  # against the whole corpus: the same outcomes as the full study
        assert (r["hit"], r["rank"]) == EXPECTED[(r["doc_id"], r["chunk_index"])][:2]
    for metric in ("hit@1", "rr"):
        rates = _rates(metric)
        r = np.asarray([rates[d] for d in drawn])
        m, lo, hi = _hh_logit(r)
        iv = smp["systems"]["bm25"][metric]
        assert iv["method"] == "hansen_hurwitz_logit" and iv["df"] == 4
        assert iv["estimate"] == pytest.approx(m, abs=1e-12)
        assert (iv["lower"], iv["upper"]) == pytest.approx((lo, hi), abs=1e-12)
    diff = smp["paired"]["bm25 - tfidf"]["hit@1"]
    assert diff["method"] == "hansen_hurwitz" and diff["estimate"] == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(HarnessInputError, match="field sample: a sampled known-item study is not a population"):
        load_population(tmp_path / "out", outcome="rr")
    md = render("known-item", res, None)
    assert "Sample of 5 documents (pps, seed 4)" in md and "hansen\\_hurwitz\\_logit" in md


def test_srs_sample_says_coverage_is_not_guaranteed(tmp_path):
    corpus = write_corpus(tmp_path / "c")
    res = run_known_item(corpus, None, systems="bm25", workers=1, sample=3, design="srs", seed=2, **KW)
    smp = res.summary["sample"]
    assert smp["documents"] == 3 and smp["systems"]["bm25"]["hit@1"]["method"] == "cr2"
    assert smp["coverage"].startswith("CR2: coverage not guaranteed") and "sample documents by PPS" in smp["coverage"]
    with pytest.raises(HarnessInputError, match="only 5 documents have queries"):
        run_known_item(corpus, None, systems="bm25", workers=1, sample=6, design="srs", **KW)
    with pytest.raises(HarnessInputError, match="--design"):
        run_known_item(corpus, None, systems="bm25", workers=1, sample=3, design="stratified", **KW)


def test_cli_sample(tmp_path):
    corpus = write_corpus(tmp_path / "c")
    args = ["known-item", "--corpus", str(corpus), "--out", str(tmp_path / "o"), "--chunk-words", "50",
            "--query-words", "3", "--workers", "1", "--sample", "4", "--design", "pps", "--seed", "7"]  # fmt: skip
    r = CliRunner().invoke(app, [*args, "--format", "json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)["data"]
    assert data["sample"]["k"] == 4 and data["sample"]["seed"] == 7
    bad = CliRunner().invoke(app, [*args[:-6], "--sample", "1", "--out", str(tmp_path / "o2")])
    assert bad.exit_code == 2
    both = CliRunner().invoke(app, [*args[:3], "--out", str(tmp_path / "o3"), "--chunk-words", "50,60",
                                    "--sample", "3"])  # fmt: skip
    assert both.exit_code == 2 and "--sample" in both.output
