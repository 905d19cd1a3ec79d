"""The ir_measures-named families (``RR``, ``AP``, ``nDCG``, ``P``, ``R``, ``Success``, ``Judged``; issue 31 item 1)
equal pytrec_eval (trec_eval's own code) and ir_measures on the TREC files a run record exports, question by
question, exactly, ties and alternatives included; ``--metrics`` on ``run``/``evaluate``; scoring a stored run on
ids it lacks; depths that grow.
"""

from __future__ import annotations

import json
from pathlib import Path

import ir_measures
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from harness.cli import app
from harness.evaluation.metric_choice import chosen_metrics, needed_depths
from harness.evaluation.pipeline import RunOptions, evaluate_rankings, run
from harness.evaluation.runs import load_run
from harness.evaluation.trec import trec_run_lines
from harness.metrics import METRICS, MetricSpec
from harness.metrics.relevance import ChunkJudgement, DocumentJudgement
from harness.ranking import canonical_ranking

DONE_WHEN = ("AP@100", "nDCG@20", "P@5", "R@100", "RR@10")

# ----------------------------------------------------------------------------------------------------------------
# pytrec_eval as the reference


def trec_measure(metric: str) -> tuple[str, str, int | None]:
    """``(pytrec_eval measure, its result key, cut applied to the run first or None)`` of an ir_measures name."""
    s = MetricSpec.parse(metric)
    name, k = s.name.removeprefix("chunk."), s.k
    if name == "RR":  # trec_eval's recip_rank has no cut-off: RR@k is recip_rank of the run cut at k
        return "recip_rank", "recip_rank", k
    if name == "AP":
        return ("map", "map", None) if k is None else (f"map_cut.{k}", f"map_cut_{k}", None)
    if name == "nDCG":
        return ("ndcg", "ndcg", None) if k is None else (f"ndcg_cut.{k}", f"ndcg_cut_{k}", None)
    return {"P": (f"P.{k}", f"P_{k}", None), "R": (f"recall.{k}", f"recall_{k}", None),
            "Success": (f"success.{k}", f"success_{k}", None)}[name]  # fmt: skip


def parse_run(lines: list[str], cut: int | None = None) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for line in lines:
        q, _, d, rank, score, _tag = line.split()
        if cut is None or int(rank) <= cut:
            out.setdefault(q, {})[d] = float(score)
    return out


def parse_qrels(lines: list[str]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for line in lines:
        q, _, d, rel = line.split()
        out.setdefault(q, {})[d] = int(rel)
    return out


def pytrec(qrels: dict, run_lines: list[str], metric: str) -> dict[str, float]:
    """``{qid: value}`` of pytrec_eval at relevance level 1 (a question it leaves out: 0)."""
    measure, key, cut = trec_measure(metric)
    res = pytrec_eval.RelevanceEvaluator(qrels, {measure}, relevance_level=1).evaluate(parse_run(run_lines, cut))
    return {q: res.get(q, {}).get(key, 0.0) for q in qrels}


# ----------------------------------------------------------------------------------------------------------------
# Golden values written out, and the property against pytrec_eval


def _doc_judgement(items, targets, depth=50) -> DocumentJudgement:
    required = tuple(g for g, (grade, _) in targets.items() if grade == 2)
    return DocumentJudgement(canonical_ranking(items, depth), targets, required, {}, depth)


def test_golden_values_by_hand():
    # gold: d1 (grade 2, alternative a1), d2 (grade 1), d3 (grade 1); ranking d2, a1 (tie with x: id order), x, d1
    targets = {"d1": (2, ("d1", "a1")), "d2": (1, ("d2",)), "d3": (1, ("d3",))}
    j = _doc_judgement([("d2", 0.9), ("x", 0.5), ("a1", 0.5), ("d1", 0.1)], targets)
    assert [i for i, _ in j.ranking] == ["d2", "a1", "x", "d1"]
    f = {k: fam.compute for k, fam in METRICS.items()}
    # qrels: d1 2, a1 2, d2 1, d3 1 (R = 4); relevant at ranks 1, 2, 4
    assert f["RR"](j, None) == 1.0
    assert f["AP"](j, None) == pytest.approx((1 / 1 + 2 / 2 + 3 / 4) / 4, abs=1e-15)  # 0.6875
    assert f["AP"](j, 2) == pytest.approx((1 + 1) / 4, abs=1e-15)
    assert f["P"](j, 5) == 3 / 5
    assert f["R"](j, 2) == 2 / 4
    assert f["Success"](j, 1) == 1.0
    assert f["Judged"](j, 3) == 2 / 3 and f["Judged"](j, 10) == 3 / 4  # over min(k, ranked)
    # nDCG@3: DCG = 1/log2(2) + 2/log2(3) + 0; ideal 2, 2, 1
    import math

    dcg = 1 + 2 / math.log2(3)
    idcg = 2 + 2 / math.log2(3) + 1 / 2
    assert f["nDCG"](j, 3) == pytest.approx(dcg / idcg, abs=1e-15)
    # the harness's own recall@2 credits d1 through a1 once and counts required documents only: 1/1; R@2 is 2/4
    chunk = ChunkJudgement(canonical_ranking([("c#2", 1.0), ("c#1", 1.0)], 10), ("c#2",), {}, 10)
    assert f["chunk.RR"](chunk, None) == 0.5  # tie resolved by id: c#1 first
    assert f["chunk.P"](chunk, 2) == 0.5


_IDS = [f"d{i:02d}" for i in range(12)]


@st.composite
def question(draw):
    gold = draw(st.lists(st.sampled_from(_IDS), min_size=1, max_size=4, unique=True))
    targets = {}
    pool = [i for i in _IDS if i not in gold]
    for g in gold:
        alts = draw(st.lists(st.sampled_from(pool), max_size=2, unique=True))
        targets[g] = (draw(st.sampled_from([1, 2])), (g, *alts))
    ranked = draw(st.lists(st.sampled_from(_IDS), max_size=12, unique=True))
    scores = draw(st.lists(st.integers(0, 3), min_size=len(ranked), max_size=len(ranked)))  # many ties
    return targets, list(zip(ranked, map(float, scores), strict=True))


@settings(max_examples=120, deadline=None)
@given(st.lists(question(), min_size=1, max_size=4), st.sampled_from([1, 2, 3, 5, 10]))
def test_every_standard_family_equals_pytrec_eval_on_the_exports(questions, k):
    """Random gold sets (grades 1 and 2, alternatives) and rankings with many tied scores, exported as a run record
    exports them: each family equals pytrec_eval exactly on every question."""
    qrels, runs, judged = {}, {}, {}
    for n, (targets, items) in enumerate(questions):
        qid = f"Q{n}"
        j = _doc_judgement(items, targets, depth=12)
        judged[qid] = j
        runs[qid] = list(j.ranking)
        rel: dict[str, int] = {}
        for grade, ids in targets.values():
            for i in ids:
                rel[i] = max(rel.get(i, 0), grade)
        qrels[qid] = rel
    lines = trec_run_lines("sys", "document", runs, 12)
    for metric in (f"RR@{k}", "RR", f"AP@{k}", "AP", f"nDCG@{k}", "nDCG", f"P@{k}", f"R@{k}", f"Success@{k}"):
        s = MetricSpec.parse(metric)
        ref = pytrec(qrels, lines, metric)
        got = {q: s.family.compute(j, s.k) for q, j in judged.items()}
        assert got == ref, metric


# ----------------------------------------------------------------------------------------------------------------
# Runs on the tiny corpus: --metrics, exports, stored rankings, depths


def _rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in (path / "per_question.jsonl").read_text("utf-8").splitlines()]


def test_chosen_metrics_parse_and_depths():
    assert chosen_metrics(["AP@100,nDCG@20", "P@5", "P@5"]) == ("AP@100", "nDCG@20", "P@5")
    assert needed_depths(["AP@100", "chunk.R@300", "RR", "evidence_recall@1000w"]) == {"docs": 100, "chunks": 300}
    with pytest.raises(Exception, match="--metrics: unknown metric 'MAP' \\(trec_eval's MAP is AP here\\)"):
        chosen_metrics("MAP@10")
    with pytest.raises(Exception, match="needs a cut-off"):
        chosen_metrics("P")


@pytest.fixture
def metric_run(tiny_corpus: Path, tiny_goldset: Path, tmp_path: Path) -> Path:
    res = CliRunner().invoke(
        app,
        ["-q", "run", "--corpus", str(tiny_corpus), "--goldset", str(tiny_goldset), "--systems", "bm25,tfidf",
         "--workdir", str(tmp_path / "wd"), "--runs-dir", str(tmp_path / "runs"), "--run-id", "m",
         "--bootstrap-reps", "200", "--metrics", ",".join(DONE_WHEN) + ",Success@1,Judged@3,chunk.AP,chunk.R@5",
         "--format", "json"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    return tmp_path / "runs" / "m"


def test_run_metrics_written_for_every_system_and_reproduced_by_pytrec_eval(metric_run: Path):
    rec = load_run(metric_run)
    assert rec.manifest.depths.document == 100  # grown from 50 for AP@100 and R@100
    assert rec.manifest.model_extra["metrics"][:5] == list(DONE_WHEN)
    rows = _rows(metric_run)
    trec = metric_run / "trec"
    for level, prefix in (("document", ""), ("chunk", "chunk.")):
        qrels = parse_qrels((trec / f"qrels.{level}.txt").read_text("utf-8").splitlines())
        for system in rec.systems:
            lines = (trec / f"{system}.{level}.run").read_text("utf-8").splitlines()
            for metric in [*DONE_WHEN, "Success@1"] if not prefix else ["chunk.AP", "chunk.R@5"]:
                mine = {r["qid"]: r["metrics"][metric] for r in rows if r["system"] == system}
                assert mine == pytrec(qrels, lines, metric), (system, metric)
                assert rec.summary.systems[system]["all"].overall[metric].mean is not None
    # Judged@3 against ir_measures' own provider (trec_eval has none)
    qrels_path, run_path = trec / "qrels.document.txt", trec / "bm25.document.run"
    ref = {
        m.query_id: m.value
        for m in ir_measures.iter_calc(
            [ir_measures.parse_measure("Judged@3")],
            list(ir_measures.read_trec_qrels(str(qrels_path))),
            list(ir_measures.read_trec_run(str(run_path))),
        )
    }
    assert {r["qid"]: r["metrics"]["Judged@3"] for r in rows if r["system"] == "bm25"} == ref


def test_compare_scores_a_metric_the_run_lacks_from_its_stored_rankings(
    metric_run: Path, tiny_corpus: Path, tiny_goldset: Path, tmp_path: Path
):
    plain = run(tiny_goldset, tiny_corpus, ["bm25", "tfidf"], workdir=tmp_path / "wd", runs_dir=tmp_path / "runs",
                run_id="p", options=RunOptions(bootstrap_reps=200, doc_depth=100))  # fmt: skip
    args = ["compare", str(plain), str(metric_run), "--metric", "P@5,AP@100", "--format", "json"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)["data"]
    scored = load_run(metric_run)
    for c in data["comparisons"]:
        means = [r["metrics"][c["metric"]] for r in _rows(metric_run) if r["system"] == c["system_a"]]
        assert c["mean_a"] == pytest.approx(sum(means) / len(means), abs=1e-15)  # scored afterwards == at run time
        assert c["diff"] == pytest.approx(0.0, abs=1e-15)
    assert scored.per_question  # the record on disk is unchanged (its hashes still verify on load)


def test_a_grown_depth_is_incomparable_with_the_baseline(metric_run: Path, tiny_corpus, tiny_goldset, tmp_path):
    base = run(tiny_goldset, tiny_corpus, ["bm25"], workdir=tmp_path / "wd", runs_dir=tmp_path / "runs",
               run_id="base", options=RunOptions(bootstrap_reps=200))  # fmt: skip
    res = CliRunner().invoke(app, ["gate", "--baseline", str(base), "--candidate", str(metric_run),
                                   "--candidate-system", "bm25", "--metric", "mrr"])  # fmt: skip
    assert res.exit_code == 2
    assert "depths.document differs" in res.output and "re-run base with --doc-depth 100" in res.output
    res = CliRunner().invoke(app, ["compare", str(base), str(base), "--metric", "P@60"])
    assert res.exit_code == 2 and "needs the document ranking to depth 60" in res.output
    assert "--doc-depth 60" in res.output


def test_evaluate_takes_metrics(metric_run: Path, tiny_goldset: Path, tmp_path: Path):
    ev = evaluate_rankings(
        tiny_goldset,
        metric_run / "trec" / "bm25.document.run",
        runs_dir=tmp_path / "runs",
        run_id="ev",
        options=RunOptions(bootstrap_reps=200, metrics=("AP@100", "P@5")),
    )
    got = load_run(ev)
    assert got.manifest.depths.document == 100
    orig = load_run(metric_run)
    for m in ("AP@100", "P@5"):
        assert got.metric_vector("bm25", m) == orig.metric_vector("bm25", m)
