"""The ``trec/`` exports of a real run reproduce the harness's numbers in trec_eval-family tools (issue 17 item 4).

A real run (bm25, vector, w0.75 on ``../shared/corpus/mx-leyes-dof`` and the committed gold set) is scored from its
exported runs and qrels by three independent tools: pytrec_eval (trec_eval's own code), ir_measures and ranx. For
MRR and hit@10 (Success@10) at both levels and evidence recall@k at the chunk level, every question's value equals
the harness's exactly. For recall@k, all_hop@k and nDCG@10 at the document level, the tools equal the harness on every
question without alternatives and, on questions with alternatives, equal the value a flattened qrels file defines
(each alternative one more relevant document; ``docs/rankings.md``), computed here from the gold set itself.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import ir_measures
import pytest
import pytrec_eval
import ranx
from conftest import REAL_CORPUS, REAL_GOLDSET, REPO

from harness.evaluation.pipeline import RunOptions, run
from harness.evaluation.runs import load_run
from harness.goldset.io import load_goldset
from harness.retrieve.vector import VectorOptions

pytestmark = [pytest.mark.realcorpus, pytest.mark.slow]
WORKDIR = Path(os.environ.get("HARNESS_WORKDIR", REPO / ".harness"))
SYSTEMS = ("bm25", "vector", "w0.75")
KS = (1, 5, 10, 20)


@pytest.fixture(scope="module")
def real_run(tmp_path_factory) -> Path:
    if not REAL_CORPUS.exists():
        pytest.skip(f"real corpus not found at {REAL_CORPUS}")
    runs = tmp_path_factory.mktemp("runs")
    return run(
        REAL_GOLDSET,
        REAL_CORPUS,
        list(SYSTEMS),
        workdir=WORKDIR,
        runs_dir=runs,
        run_id="interop",
        # wordllama: the fast packaged model, whose whole-corpus embedding CI can afford (the default, USE, embeds
        # the corpus in about 15 minutes on 2 cores); the exports' properties do not depend on the model
        options=RunOptions(bootstrap_reps=200, system_defaults={"vector": VectorOptions(model="wordllama")}),
    )


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for line in path.read_text("utf-8").splitlines():
        q, _, d, rel = line.split()
        out.setdefault(q, {})[d] = int(rel)
    return out


def _read_run(path: Path) -> dict[str, list[str]]:
    """``{qid: ids in file order}`` (the harness's order)."""
    out: dict[str, list[str]] = {}
    for line in path.read_text("utf-8").splitlines():
        q, _, d, _rank, _score, _tag = line.split()
        out.setdefault(q, []).append(d)
    return out


def _pytrec(qrels_path: Path, run_path: Path, measures: set[str], relevance_level: int) -> dict[str, dict]:
    qrels = _read_qrels(qrels_path)
    run_ = {}
    for line in run_path.read_text("utf-8").splitlines():
        q, _, d, _rank, score, _tag = line.split()
        run_.setdefault(q, {})[d] = float(score)
    ev = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=relevance_level)
    return ev.evaluate(run_)


def _irm(qrels_path: Path, run_path: Path, measures: list[str]) -> dict[str, dict[str, float]]:
    parsed = [ir_measures.parse_measure(m) for m in measures]
    qrels = list(ir_measures.read_trec_qrels(str(qrels_path)))
    run_ = list(ir_measures.read_trec_run(str(run_path)))
    out: dict[str, dict[str, float]] = {}
    for m in ir_measures.iter_calc(parsed, qrels, run_):
        out.setdefault(str(m.measure), {})[m.query_id] = m.value
    return out


def _ranx(qrels_path: Path, run_path: Path, metrics: list[str]) -> dict[str, dict[str, float]]:
    qrels = ranx.Qrels.from_file(str(qrels_path), kind="trec")
    run_ = ranx.Run.from_file(str(run_path), kind="trec")
    ranx.evaluate(qrels, run_, metrics, make_comparable=True, threads=1)
    return {m: dict(run_.scores[m]) for m in metrics}


def _rows(path: Path, system: str) -> dict[str, dict]:
    rows = [json.loads(x) for x in (path / "per_question.jsonl").read_text("utf-8").splitlines()]
    return {r["qid"]: r for r in rows if r["system"] == system}


def _flattened(qrels: dict[str, int], ranked: list[str], k: int) -> dict[str, float]:
    """What a flattened qrels file defines on one question (each alternative one more relevant document):
    recall@k and all_hop@k at relevance level 2, nDCG@k with gain = rel (trec_eval ``ndcg_cut``)."""
    required = {d for d, rel in qrels.items() if rel >= 2}
    top = ranked[:k]
    found = len(required & set(top))
    dcg = math.fsum(qrels.get(d, 0) / math.log2(r + 1) for r, d in enumerate(top, start=1))
    ideal = sorted(qrels.values(), reverse=True)[:k]
    idcg = math.fsum(g / math.log2(r + 1) for r, g in enumerate(ideal, start=1))
    return {
        "recall": found / len(required) if required else 0.0,
        "all_hop": float(bool(required) and found == len(required)),
        "ndcg": dcg / idcg if idcg > 0 else 0.0,
    }


@pytest.mark.parametrize("system", SYSTEMS)
def test_exports_reproduce_the_harness_in_three_tools(real_run: Path, system: str):
    rec = load_run(real_run)
    gs = load_goldset(REAL_GOLDSET)
    trec = real_run / "trec"
    rows = _rows(real_run, system)
    qids = [r.qid for r in gs.records]
    with_evidence = [r.qid for r in gs.records if r.evidence_chunks()]
    with_alternatives = {r.qid for r in gs.records if any(g.alternatives for g in r.gold_documents)}
    depths = rec.manifest.depths

    # the exports are cut at the recorded depths and their scores strictly decrease at float32
    for level, depth in (("document", depths.document), ("chunk", depths.chunk)):
        ranked = _read_run(trec / f"{system}.{level}.run")
        assert max(len(v) for v in ranked.values()) <= depth
        for q, ids in ranked.items():
            assert ids == [i for i, _ in rows[q]["rankings"][level]], (system, level, q)

    def harness(metric: str, subset: list[str]) -> dict[str, float]:
        return {q: rows[q]["metrics"][metric] for q in subset}

    # --- document level: MRR (rel >= 1) and hit@10 = Success@10 at relevance level 2
    dq, dr = trec / "qrels.document.txt", trec / f"{system}.document.run"
    pt1 = _pytrec(dq, dr, {"recip_rank"}, 1)
    pt2 = _pytrec(dq, dr, {"success.10", "recall.1,5,10,20", "ndcg_cut.10"}, 2)
    irm = _irm(dq, dr, ["RR", "Success(rel=2)@10", *(f"R(rel=2)@{k}" for k in KS), "nDCG@10"])
    rx = _ranx(dq, dr, ["mrr", "hit_rate@10-l2", *(f"recall@{k}-l2" for k in KS), "ndcg@10"])
    tools_mrr = {
        "pytrec_eval": {q: pt1.get(q, {}).get("recip_rank", 0.0) for q in qids},
        "ir_measures": {q: irm["RR"].get(q, 0.0) for q in qids},
        "ranx": {q: rx["mrr"].get(q, 0.0) for q in qids},
    }
    tools_hit = {
        "pytrec_eval": {q: pt2.get(q, {}).get("success_10", 0.0) for q in qids},
        "ir_measures": {q: irm["Success(rel=2)@10"].get(q, 0.0) for q in qids},
        "ranx": {q: rx["hit_rate@10-l2"].get(q, 0.0) for q in qids},
    }
    for tool in tools_mrr:
        assert tools_mrr[tool] == harness("mrr", qids), (system, tool, "mrr")
        assert tools_hit[tool] == harness("hit@10", qids), (system, tool, "hit@10")
    mean = rec.summary.systems[system]["all"].overall["mrr"].mean
    assert math.fsum(tools_mrr["pytrec_eval"].values()) / len(qids) == pytest.approx(mean, rel=1e-12, abs=0)

    # --- document level with alternatives: recall@k, all_hop@k, nDCG@10 differ exactly as flattened qrels define
    qrels = _read_qrels(dq)
    ranked = _read_run(dr)
    n_differ = 0
    for q in qids:
        for k in KS:
            flat = _flattened(qrels.get(q, {}), ranked.get(q, []), k)
            got = {
                "pytrec_eval": pt2.get(q, {}).get(f"recall_{k}", 0.0),
                "ir_measures": irm[f"R(rel=2)@{k}"].get(q, 0.0),
                "ranx": rx[f"recall@{k}-l2"].get(q, 0.0),
            }
            for tool, value in got.items():
                assert value == pytest.approx(flat["recall"], abs=1e-12), (system, tool, q, k)
                assert float(value == pytest.approx(1.0, abs=1e-12) and flat["recall"] > 0) == flat["all_hop"]
            if q not in with_alternatives:
                assert rows[q]["metrics"][f"recall@{k}"] == pytest.approx(flat["recall"], abs=1e-12), (q, k)
                assert rows[q]["metrics"][f"all_hop@{k}"] == flat["all_hop"], (q, k)
            else:
                n_differ += rows[q]["metrics"][f"recall@{k}"] != pytest.approx(flat["recall"], abs=1e-12)
        flat10 = _flattened(qrels.get(q, {}), ranked.get(q, []), 10)
        for tool, value in (
            ("pytrec_eval", pt2.get(q, {}).get("ndcg_cut_10", 0.0)),
            ("ir_measures", irm["nDCG@10"].get(q, 0.0)),
            ("ranx", rx["ndcg@10"].get(q, 0.0)),
        ):
            assert value == pytest.approx(flat10["ndcg"], abs=1e-12), (system, tool, q, "ndcg@10")
        if q not in with_alternatives:
            assert rows[q]["metrics"]["ndcg@10"] == pytest.approx(flat10["ndcg"], abs=1e-12), q
    assert with_alternatives, "the gold set has questions with alternatives; the difference is exercised"

    # --- chunk level: evidence MRR, hit@10 and evidence recall@k on the questions that cite evidence
    cq, cr = trec / "qrels.chunk.txt", trec / f"{system}.chunk.run"
    pt = _pytrec(cq, cr, {"recip_rank", "success.10", "recall.1,5,10,20"}, 1)
    irm = _irm(cq, cr, ["RR", "Success@10", *(f"R@{k}" for k in KS)])
    rx = _ranx(cq, cr, ["mrr", "hit_rate@10", *(f"recall@{k}" for k in KS)])
    chunk_hit = {
        q: float(any(r is not None and r <= 10 for r in rows[q]["gold_chunk_ranks"].values())) for q in with_evidence
    }
    pairs = [("evidence_mrr", "recip_rank", "RR", "mrr", harness("evidence_mrr", with_evidence))]
    pairs.append(("hit@10", "success_10", "Success@10", "hit_rate@10", chunk_hit))
    pairs += [
        (f"evidence_recall@{k}", f"recall_{k}", f"R@{k}", f"recall@{k}", harness(f"evidence_recall@{k}", with_evidence))
        for k in KS
    ]
    for name, pt_m, irm_m, rx_m, expected in pairs:
        assert {q: pt.get(q, {}).get(pt_m, 0.0) for q in with_evidence} == expected, (system, "pytrec_eval", name)
        assert {q: irm[irm_m].get(q, 0.0) for q in with_evidence} == expected, (system, "ir_measures", name)
        assert {q: rx[rx_m].get(q, 0.0) for q in with_evidence} == expected, (system, "ranx", name)
