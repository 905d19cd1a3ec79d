"""Metrics: golden values against pytrec_eval (written as formulas), our own rules, hypothesis properties."""

from __future__ import annotations

import copy
import json
from math import log2
from pathlib import Path

import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.errors import HarnessInputError
from harness.goldset.schema import GoldRecord
from harness.metrics import (
    DEFAULT_KS,
    METRIC_SETS,
    METRICS,
    Aggregate,
    MetricError,
    MetricSpec,
    QuestionResult,
    aggregate,
    canonical_ranking,
    parse_metrics,
    question_metrics,
    summary_metric_ids,
)
from harness.metrics.means import LevelCounts

# ---------------------------------------------------------------------------------------------------------------
# Fixtures


def gold_doc(doc_id, grade=None, chunks=(), alternatives=()):
    return {
        "document_id": doc_id,
        "relpath": f"{doc_id}.md",
        "publication_date": "2020-01-01",
        "role": "answer",
        "grade": grade,
        "evidence": [{"chunk_id": c, "chunk_index": i, "quote": "q"} for i, c in enumerate(chunks)],
        "alternatives": [{"document_id": a} for a in alternatives],
    }


def record(gold_docs, qid="Q1", category="multi_document") -> GoldRecord:
    return GoldRecord.model_validate(
        {
            "id": qid,
            "category": category,
            "question": "¿?",
            "persona": "p",
            "difficulty": "easy",
            "as_of": "2024-01-01",
            "answerability": "answerable",
            "reference_answer": "r",
            "required_hops": max(1, len(gold_docs)),
            "gold_documents": gold_docs,
        }
    )


def trec(qrels: dict[str, int], ranking, measures, level: int) -> dict[str, float]:
    """pytrec_eval on one query; ``level`` is trec_eval's relevance threshold (2: required only)."""
    ev = pytrec_eval.RelevanceEvaluator({"q": qrels}, set(measures), relevance_level=level)
    return ev.evaluate({"q": {d: float(s) for d, s in ranking}})["q"]


# Three gold documents: d1 and d2 required (grade 2), d3 useful (grade 1). No score ties, all scores exact in
# float32, every gold document within the depth: pytrec_eval's tie rule, float32 and missing cut-off do not matter.
REC = record(
    [
        gold_doc("d1", chunks=("c1", "c2")),
        gold_doc("d2", grade=2, chunks=("c3",)),
        gold_doc("d3", grade=1),
    ]
)
DOCS = [
    ("x1", 10.0),
    ("d3", 9.0),
    ("x2", 8.0),
    ("d1", 7.0),
    ("x3", 6.0),
    ("x4", 5.0),
    ("x5", 4.0),
    ("x6", 3.0),
    ("x7", 2.0),
    ("d2", 1.0),
    ("x8", 0.5),
]
CHUNKS = [("c3", 5.0), ("y1", 4.0), ("c1", 3.0), ("y2", 2.0), ("y3", 1.0)]


# ---------------------------------------------------------------------------------------------------------------
# Golden values (pytrec_eval)


def test_golden_document_metrics_formulas():
    r = question_metrics(REC, DOCS, CHUNKS)
    m = r.metrics
    assert r.gold_doc_ranks == {"d1": 4, "d2": 10, "d3": 2}
    assert m["mrr"] == 1 / 2  # d3 (grade 1) at rank 2
    assert m["recall@1"] == 0 and m["recall@5"] == 1 / 2 and m["recall@10"] == 2 / 2 and m["recall@20"] == 1
    assert [m[f"all_hop@{k}"] for k in (1, 5, 10, 20)] == [0, 0, 1, 1]
    assert [m[f"hit@{k}"] for k in (1, 5, 10, 20)] == [0, 1, 1, 1]
    dcg = 1 / log2(2 + 1) + 2 / log2(4 + 1) + 2 / log2(10 + 1)
    idcg = 2 / log2(1 + 1) + 2 / log2(2 + 1) + 1 / log2(3 + 1)
    assert m["ndcg@10"] == pytest.approx(dcg / idcg, rel=1e-12)


def test_golden_document_metrics_equal_pytrec_eval():
    m = question_metrics(REC, DOCS, CHUNKS).metrics
    qrels = REC.relevant_docs()
    any_gold = trec(qrels, DOCS, {"recip_rank", "ndcg_cut_10"}, level=1)
    required = trec(qrels, DOCS, {"recall_5", "recall_10", "P_1"}, level=2)
    assert m["mrr"] == pytest.approx(any_gold["recip_rank"], rel=1e-12)
    assert m["ndcg@10"] == pytest.approx(any_gold["ndcg_cut_10"], rel=1e-12)
    assert m["recall@5"] == pytest.approx(required["recall_5"], rel=1e-12)
    assert m["recall@10"] == pytest.approx(required["recall_10"], rel=1e-12)
    assert m["hit@1"] == pytest.approx(required["P_1"], rel=1e-12)


def test_golden_evidence_metrics_formulas_and_pytrec_eval():
    r = question_metrics(REC, DOCS, CHUNKS)
    m = r.metrics
    assert r.gold_chunk_ranks == {"c1": 3, "c2": None, "c3": 1}
    assert m["evidence_recall@1"] == 1 / 3 and m["evidence_recall@5"] == 2 / 3 and m["evidence_mrr"] == 1 / 1
    ref = trec(dict.fromkeys(REC.evidence_chunks(), 1), CHUNKS, {"recall_5", "recip_rank"}, level=1)
    assert m["evidence_recall@5"] == pytest.approx(ref["recall_5"], rel=1e-12)
    assert m["evidence_mrr"] == pytest.approx(ref["recip_rank"], rel=1e-12)


def test_golden_precision_pytrec_eval_values():
    """precision@k = trec_eval P_k at relevance level 1 (every gold document relevant), denominator k.

    The values were computed with pytrec_eval 0.5 (``RelevanceEvaluator(qrels = REC.relevant_docs(), {"P_1", "P_5",
    "P_10", "P_20", "P_30"}, relevance_level=1)`` on DOCS): P_1 0.0, P_5 0.4, P_10 0.3, P_20 0.15, P_30 0.1.
    """
    m = question_metrics(REC, DOCS, CHUNKS, metrics=[f"precision@{k}" for k in (1, 5, 10, 20, 30)]).metrics
    assert m == {"precision@1": 0.0, "precision@5": 0.4, "precision@10": 0.3, "precision@20": 0.15, "precision@30": 0.1}
    live = trec(REC.relevant_docs(), DOCS, {"P_1", "P_5", "P_10", "P_20", "P_30"}, level=1)
    assert [m[f"precision@{k}"] for k in (1, 5, 10, 20, 30)] == pytest.approx(
        [live[f"P_{k}"] for k in (1, 5, 10, 20, 30)], rel=1e-12
    )
    # a ranking shorter than k still divides by k (pytrec_eval P_5 = 0.2 for ranking [g, a], qrels {g: 2})
    assert question_metrics(record([gold_doc("g")]), [("g", 1.0), ("a", 0.5)], None, metrics=["precision@5"]).metrics[
        "precision@5"
    ] == pytest.approx(0.2, rel=1e-12)


def test_precision_counts_a_gold_document_and_its_alternative_once():
    # pytrec_eval with the alternative judged relevant too ({d1: 2, a1: 2}) gives P_2 = 1.0; here d1 is satisfied
    # once (by a1 at rank 1), and d1 itself at rank 2 adds nothing: 1/2
    rec = record([gold_doc("d1", alternatives=("a1",)), gold_doc("d2")])
    m = question_metrics(rec, [("a1", 2.0), ("d1", 1.0), ("d2", 0.5)], None, metrics=["precision@2", "precision@3"])
    assert m.metrics == {"precision@2": 1 / 2, "precision@3": 2 / 3}
    # an alternative shared by two gold documents credits one of them
    shared = record([gold_doc("d1", alternatives=("s",)), gold_doc("d2", alternatives=("s",))])
    assert question_metrics(shared, [("s", 1.0)], None, metrics=["precision@1"]).metrics["precision@1"] == 1.0


def test_precision_undefined_clamped_missing_and_not_summarised():
    rec = record([gold_doc("g")])
    r = question_metrics(rec, [("g", 1.0)], None, metrics=["precision@10"], n_docs_in_corpus=4)
    assert r.metrics["precision@10"] == 1 / 4 and r.clamped == {
        "doc_depth": 4,
        "precision@10": 4,
    }  # the clamped k divides
    none = record([])
    r2 = question_metrics(none, [("g", 1.0)], None, metrics=["precision@1"])
    assert r2.metrics["precision@1"] == 0.0 and r2.undefined == ("precision@1",)
    assert question_metrics(rec, None, None, metrics=["precision@1"]).metrics["precision@1"] == 0.0
    assert not any(i.startswith("precision") for i in summary_metric_ids())
    assert MetricSpec.parse("precision@5").level == "docs"


@pytest.mark.parametrize(
    ("gold", "ranking", "expected"),
    [
        # one required document at rank 3
        ([gold_doc("g")], [("a", 3.0), ("b", 2.0), ("g", 1.0)], {"mrr": 1 / 3, "ndcg@10": (2 / log2(4)) / 2}),
        # two required documents at ranks 1 and 2: ideal order
        (
            [gold_doc("g1"), gold_doc("g2")],
            [("g1", 2.0), ("g2", 1.0)],
            {"mrr": 1 / 1, "ndcg@10": (1 + 1 / log2(3)) / (1 + 1 / log2(3))},
        ),
        # graded: useful (1) first, required (2) third; ideal puts the 2 first
        (
            [gold_doc("g2"), gold_doc("g1", grade=1)],
            [("g1", 0.75), ("z", 0.5), ("g2", 0.25)],
            {"mrr": 1 / 1, "ndcg@10": (1 / log2(2) + 2 / log2(4)) / (2 / log2(2) + 1 / log2(3))},
        ),
        # nothing relevant retrieved
        ([gold_doc("g")], [("a", 1.0)], {"mrr": 0.0, "ndcg@10": 0.0}),
    ],
)
def test_golden_small_cases_formulas_and_pytrec_eval(gold, ranking, expected):
    rec = record(gold)
    m = question_metrics(rec, ranking, None).metrics
    ref = trec(rec.relevant_docs(), ranking, {"recip_rank", "ndcg_cut_10"}, level=1)
    assert m["mrr"] == pytest.approx(expected["mrr"], rel=1e-12)
    assert m["ndcg@10"] == pytest.approx(expected["ndcg@10"], rel=1e-12)
    assert m["mrr"] == pytest.approx(ref["recip_rank"], rel=1e-12, abs=1e-15)
    assert m["ndcg@10"] == pytest.approx(ref["ndcg_cut_10"], rel=1e-12, abs=1e-15)


@st.composite
def untied_case(draw):
    """A record without alternatives (>= 1 required document) and untied rankings with float32-exact scores."""
    n_gold = draw(st.integers(1, 4))
    gold_ids = draw(
        st.lists(st.sampled_from([f"d{i}" for i in range(8)]), min_size=n_gold, max_size=n_gold, unique=True)
    )
    grades = [2] + draw(st.lists(st.sampled_from([1, 2]), min_size=n_gold - 1, max_size=n_gold - 1))
    chunks = draw(
        st.lists(
            st.lists(st.sampled_from([f"c{i}" for i in range(8)]), min_size=1, max_size=2, unique=True),
            min_size=n_gold,
            max_size=n_gold,
        )
    )
    rec = record(
        [
            gold_doc(g, grade=gr, chunks=cs if gr == 2 else ())
            for g, gr, cs in zip(gold_ids, grades, chunks, strict=True)
        ]
    )
    pool = [f"d{i}" for i in range(8)] + [f"x{i}" for i in range(12)]
    docs = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=20, unique=True))
    cpool = [f"c{i}" for i in range(8)] + [f"y{i}" for i in range(12)]
    chs = draw(st.lists(st.sampled_from(cpool), min_size=1, max_size=20, unique=True))
    # distinct integer scores: exact in float32, no ties
    return (
        rec,
        [(d, float(len(docs) - i)) for i, d in enumerate(docs)],
        [(c, float(100 - i)) for i, c in enumerate(chs)],
    )


@settings(max_examples=150, deadline=None)
@given(untied_case())
def test_property_equal_to_pytrec_eval_without_ties(case):
    rec, docs, chunks = case
    m = question_metrics(rec, docs, chunks, metrics=[*summary_metric_ids(), "precision@5", "precision@10"]).metrics
    qrels = rec.relevant_docs()
    any_gold = trec(qrels, docs, {"recip_rank", "ndcg_cut_10", "P_5", "P_10"}, level=1)
    assert m["precision@5"] == pytest.approx(any_gold["P_5"], rel=1e-12, abs=1e-15)
    assert m["precision@10"] == pytest.approx(any_gold["P_10"], rel=1e-12, abs=1e-15)
    required = trec(qrels, docs, {"recall_5", "recall_10", "P_1"}, level=2)
    assert m["mrr"] == pytest.approx(any_gold.get("recip_rank", 0.0), rel=1e-12, abs=1e-15)
    assert m["ndcg@10"] == pytest.approx(any_gold.get("ndcg_cut_10", 0.0), rel=1e-12, abs=1e-15)
    assert m["recall@5"] == pytest.approx(required["recall_5"], rel=1e-12, abs=1e-15)
    assert m["recall@10"] == pytest.approx(required["recall_10"], rel=1e-12, abs=1e-15)
    assert m["hit@1"] == pytest.approx(required["P_1"], rel=1e-12, abs=1e-15)
    ev = trec(dict.fromkeys(rec.evidence_chunks(), 1), chunks, {"recall_5", "recip_rank"}, level=1)
    assert m["evidence_recall@5"] == pytest.approx(ev["recall_5"], rel=1e-12, abs=1e-15)
    assert m["evidence_mrr"] == pytest.approx(ev["recip_rank"], rel=1e-12, abs=1e-15)


# ---------------------------------------------------------------------------------------------------------------
# The tie rule


def test_canonical_ranking_tie_rule_dedup_depth():
    items = [("b", 1.0), (3, 2.0), ("a", 1.0), ("b", 5.0), ("c", 1.0), ("10", 1.0)]
    assert canonical_ranking(items) == [("b", 5.0), ("3", 2.0), ("10", 1.0), ("a", 1.0), ("c", 1.0)]
    assert canonical_ranking(items, depth=2) == [("b", 5.0), ("3", 2.0)]
    assert canonical_ranking(items, depth=0) == []
    assert canonical_ranking([]) == []


def test_canonical_ranking_errors():
    with pytest.raises(MetricError, match="NaN"):
        canonical_ranking([("a", float("nan"))])
    with pytest.raises(ValueError):
        canonical_ranking([("a", 1.0)], depth=-1)
    assert canonical_ranking([("a", float("-inf")), ("b", 0.0)]) == [("b", 0.0), ("a", float("-inf"))]


def test_ties_broken_by_id_ascending_unlike_trec_eval():
    rec = record([gold_doc("a")])
    tied = [("c", 1.0), ("b", 1.0), ("a", 1.0)]
    r = question_metrics(rec, tied, None)
    assert r.gold_doc_ranks == {"a": 1} and r.metrics["mrr"] == 1 / 1
    # trec_eval breaks score ties by doc id descending: "a" comes third there
    assert trec(rec.relevant_docs(), tied, {"recip_rank"}, level=1)["recip_rank"] == pytest.approx(1 / 3)


def test_tie_at_depth_boundary_keeps_smaller_id():
    rec = record([gold_doc("b")])
    r = question_metrics(rec, [("z", 2.0), ("c", 1.0), ("b", 1.0)], None, doc_depth=2, metrics=["recall@2"])
    assert r.gold_doc_ranks == {"b": 2} and r.metrics["recall@2"] == 1


# ---------------------------------------------------------------------------------------------------------------
# Alternatives, grades, duplicates


def test_alternative_satisfies_the_gold_document_it_replaces():
    rec = record([gold_doc("d1", chunks=("c1",), alternatives=("a1",)), gold_doc("d2", chunks=("c2",))])
    r = question_metrics(rec, [("x", 4.0), ("a1", 3.0), ("d2", 2.0), ("d1", 1.0)], None)
    assert r.gold_doc_ranks == {"d1": 2, "d2": 3}  # best of d1 (4) and its alternative a1 (2)
    m = r.metrics
    assert m["mrr"] == 1 / 2 and m["recall@1"] == 0 and m["recall@5"] == 1 and m["all_hop@5"] == 1
    # a1 earns d1's gain once, at rank 2; d1 itself at rank 4 earns nothing more
    assert m["ndcg@10"] == pytest.approx((2 / log2(3) + 2 / log2(4)) / (2 + 2 / log2(3)), rel=1e-12)


def test_alternative_shared_by_two_gold_documents_keeps_ndcg_at_most_one():
    rec = record([gold_doc("d1", alternatives=("s",)), gold_doc("d2", alternatives=("s",))])
    m = question_metrics(rec, [("s", 1.0)], None).metrics
    assert m["recall@1"] == 1  # s satisfies both (the rank of each is the best of it and its alternatives)
    assert m["ndcg@10"] == pytest.approx(2 / (2 + 2 / log2(3)), rel=1e-12)  # one ranked document, one gain


def test_grades_useful_document_counts_for_mrr_and_ndcg_only():
    rec = record([gold_doc("req", chunks=("c",)), gold_doc("use", grade=1)])
    m = question_metrics(rec, [("use", 3.0), ("x", 2.0), ("req", 1.0)], None).metrics
    assert m["mrr"] == 1 and m["recall@1"] == 0 and m["hit@1"] == 0 and m["recall@5"] == 1
    assert m["ndcg@10"] == pytest.approx((1 + 2 / log2(4)) / (2 + 1 / log2(3)), rel=1e-12)


def test_record_without_required_document_is_flagged_undefined():
    rec = record([gold_doc("use", grade=1)])
    r = question_metrics(rec, [("use", 1.0)], [("c", 1.0)], ks=(5,))
    assert r.metrics["mrr"] == 1 and r.metrics["recall@5"] == 0 and r.metrics["hit@5"] == 0
    assert set(r.undefined) == {"recall@5", "all_hop@5", "hit@5", "evidence_recall@5", "evidence_mrr"}
    assert r.flags["undefined"] == list(r.undefined) and "clamped" not in r.flags


def test_duplicate_ids_in_ranking_keep_best_score():
    rec = record([gold_doc("g")])
    r = question_metrics(rec, [("g", 0.5), ("x", 2.0), ("g", 9.0)], None)
    assert r.gold_doc_ranks == {"g": 1}


def test_int_ids_match_string_ids():
    rec = GoldRecord.model_validate({**record([gold_doc(651143, chunks=(6632609,))]).model_dump(), "id": 7})
    r = question_metrics(rec, [(651143, 1.0)], [(6632609, 2.0)])
    assert r.qid == "7" and r.gold_doc_ranks == {"651143": 1} and r.metrics["evidence_mrr"] == 1


# ---------------------------------------------------------------------------------------------------------------
# Missing and empty rankings, depths, clamping


def test_none_ranking_scores_zero_and_is_flagged():
    r = question_metrics(REC, None, None)
    assert not r.evaluated_docs and not r.evaluated_chunks
    assert all(v == 0 for v in r.metrics.values())
    assert r.gold_doc_ranks == {"d1": None, "d2": None, "d3": None}
    r2 = question_metrics(REC, DOCS, None)
    assert r2.evaluated_docs and not r2.evaluated_chunks and r2.metrics["evidence_recall@20"] == 0


def test_empty_ranking_is_evaluated_with_zero():
    r = question_metrics(REC, [], [])
    assert r.evaluated_docs and r.evaluated_chunks and all(v == 0 for v in r.metrics.values())


def test_doc_depth_is_the_mrr_cutoff():
    rec = record([gold_doc("g")])
    ranking = [(f"x{i}", 10.0 - i) for i in range(5)] + [("g", 1.0)]
    assert question_metrics(rec, ranking, None, doc_depth=6, metrics=["mrr"]).metrics["mrr"] == 1 / 6
    r = question_metrics(rec, ranking, None, doc_depth=5, metrics=["mrr", "recall@5"])
    assert r.metrics["mrr"] == 0 and r.gold_doc_ranks == {"g": None}


def test_k_larger_than_depth_is_an_error():
    with pytest.raises(ValueError, match="exceeds"):
        question_metrics(REC, DOCS, CHUNKS, doc_depth=10, ks=(20,))
    with pytest.raises(ValueError, match="ndcg"):
        question_metrics(REC, DOCS, CHUNKS, doc_depth=5, ks=(5,))
    with pytest.raises(ValueError):
        question_metrics(REC, DOCS, CHUNKS, doc_depth=0)


def test_k_larger_than_corpus_is_clamped_and_recorded():
    rec = record([gold_doc("g", chunks=("c",))])
    r = question_metrics(
        rec, [("a", 2.0), ("g", 1.0)], [("c", 1.0)], ks=(1, 5), n_docs_in_corpus=3, n_chunks_in_corpus=4
    )
    assert r.doc_depth == 3 and r.chunk_depth == 4
    assert r.clamped == {
        "doc_depth": 3,
        "recall@5": 3,
        "all_hop@5": 3,
        "hit@5": 3,
        "ndcg@10": 3,
        "chunk_depth": 4,
        "evidence_recall@5": 4,
    }
    assert r.metrics["recall@5"] == 1 and "recall@1" not in r.clamped
    # without chunk extents the budget family is omitted as not applicable (harness.metrics.budget)
    assert r.omitted == {f"evidence_recall@{b}w": "not_applicable" for b in (250, 500, 1000, 2000)}
    assert r.flags == {"evaluated_docs": True, "evaluated_chunks": True, "clamped": r.clamped, "omitted": r.omitted}
    assert question_metrics(rec, [], [], n_docs_in_corpus=1000).clamped == {}


def test_to_dict_is_a_json_ready_copy():
    r = question_metrics(REC, DOCS, CHUNKS)
    d = r.to_dict()
    d["metrics"]["mrr"] = 5
    assert r.metrics["mrr"] == 1 / 2 and d["gold_doc_ranks"] == {"d1": 4, "d2": 10, "d3": 2}


# ---------------------------------------------------------------------------------------------------------------
# Metric ids


def test_metric_spec_parse_and_ids():
    assert MetricSpec.parse("recall@10") == MetricSpec("recall", 10)
    assert [s.id for s in parse_metrics(["mrr", "recall@10", "all_hop@10", "hit@1", "ndcg@10", "mrr"])] == [
        "mrr",
        "recall@10",
        "all_hop@10",
        "hit@1",
        "ndcg@10",
    ]
    assert (
        MetricSpec.parse("evidence_recall@5").level == "chunks" and MetricSpec.parse("evidence_mrr").level == "chunks"
    )
    assert str(MetricSpec.parse(" hit@5 ")) == "hit@5"
    assert set(METRICS) == {
        "mrr",
        "recall",
        "all_hop",
        "hit",
        "ndcg",
        "precision",
        "evidence_recall",
        "evidence_mrr",
        "evidence_recall@w",  # evidence recall at a budget in words (harness.metrics.budget)
        # ir_measures names, document level and chunk level (harness.metrics.standard)
        *(p + n for n in ("RR", "AP", "nDCG", "P", "R", "Success", "Judged") for p in ("", "chunk.")),
    }


@pytest.mark.parametrize(
    "bad", ["prec@5", "precision", "recall", "mrr@10", "recall@0", "recall@-1", "NDCG@5", "", "recall@"]
)
def test_metric_spec_errors(bad):
    with pytest.raises(MetricError) as exc:
        MetricSpec.parse(bad)
    assert isinstance(exc.value, HarnessInputError) and isinstance(exc.value, ValueError)
    assert "\n" not in str(exc.value)


def test_unknown_metric_message_lists_known_ids():
    expected = r"unknown metric 'map' \(trec_eval's map is AP here\); known: mrr, recall@k, .*precision@k, .*AP\[@k\]"
    with pytest.raises(MetricError, match=expected):
        MetricSpec.parse("map@5")


# ---------------------------------------------------------------------------------------------------------------
# The registry: every list of metrics reads it

BASELINE = Path(__file__).resolve().parents[1] / "runs" / "baselines" / "mx-leyes-dof-eval-v1-six-systems"


def test_summary_ids_come_from_the_registry_and_equal_the_baseline_record():
    assert summary_metric_ids() == [
        "mrr",
        *[f"recall@{k}" for k in DEFAULT_KS],
        *[f"all_hop@{k}" for k in DEFAULT_KS],
        *[f"hit@{k}" for k in DEFAULT_KS],
        "ndcg@10",
        *[f"evidence_recall@{k}" for k in DEFAULT_KS],
        "evidence_mrr",
        *[f"evidence_recall@{b}w" for b in (250, 500, 1000, 2000)],
    ]
    manifest = json.loads((BASELINE / "manifest.json").read_text())
    summary = json.loads((BASELINE / "summary.json").read_text())
    assert summary_metric_ids(manifest["ks"]) == summary["metric_ids"]  # the same ids, in order
    assert summary_metric_ids((5, 3)) == [
        "mrr",
        "recall@5",
        "recall@3",
        "all_hop@5",
        "all_hop@3",
        "hit@5",
        "hit@3",
        "ndcg@10",
        "evidence_recall@5",
        "evidence_recall@3",
        "evidence_mrr",
        *METRIC_SETS["budget"],
    ]
    # the default per-question set is the summary set (ks sorted, repeats dropped), less the budget family when no
    # chunk extents are given (not applicable)
    qr = question_metrics(REC, DOCS, CHUNKS, ks=(10, 1, 10))
    assert [*qr.metrics, *qr.omitted] == summary_metric_ids((1, 10))


def test_registry_entries_declare_level_k_and_a_documented_compute_function():
    for name, fam in METRICS.items():
        assert fam.key == name and fam.level in ("docs", "chunks")
        assert fam.description and fam.compute.__doc__
        assert fam.summary_ks is None or fam.takes_k
        spec = MetricSpec(fam.name, 3 if fam.takes_k else None, fam.unit)
        assert spec.level == fam.level


def test_every_named_list_is_declared_once_in_the_registry():
    from harness.evaluation import compare, metric_choice
    from harness.report import model, terminal

    assert compare.DEFAULT_COMPARE_METRICS is METRIC_SETS["compare"]
    assert terminal.MAIN_METRICS is METRIC_SETS["terminal"]
    assert terminal.EVIDENCE_METRICS is METRIC_SETS["terminal_evidence"]
    assert model.TABLE_METRICS is METRIC_SETS["report_table"]
    assert model.FOREST_METRICS is METRIC_SETS["forest"]
    assert metric_choice.summary_metric_ids is summary_metric_ids  # the ids a run scores (pipeline.score_results)
    summarised = set(summary_metric_ids(DEFAULT_KS))
    for name, ids in METRIC_SETS.items():
        assert set(ids) <= summarised, name
        assert [s.id for s in parse_metrics(ids)] == list(ids), name


def test_cli_compare_defaults_to_the_registry_compare_set(monkeypatch, tmp_path):
    """`harness compare A B` without --metrics compares METRIC_SETS["compare"] (it used to restate the list and lack
    evidence_recall@20); --metrics still chooses. The CLI passes ``None`` ("the default list"), which compare_runs
    reads as METRIC_SETS["compare"] (across chunkers it adapts that list: tests/test_cross_chunker.py)."""
    from typer.testing import CliRunner

    from harness.cli import app, judge
    from harness.evaluation import compare

    asked: list[tuple[str, ...]] = []

    def fake(a, b, *, metrics, **kw):
        asked.append(None if metrics is None else tuple(metrics))

    monkeypatch.setattr(compare, "compare_runs", fake)
    monkeypatch.setattr(judge, "emit", lambda *args, **kw: None)
    runner = CliRunner()
    assert runner.invoke(app, ["compare", str(tmp_path), str(tmp_path)]).exit_code == 0
    assert runner.invoke(app, ["compare", str(tmp_path), str(tmp_path), "--metrics", "mrr, precision@5"]).exit_code == 0
    assert asked == [None, ("mrr", "precision@5")]
    assert compare.DEFAULT_COMPARE_METRICS is METRIC_SETS["compare"] and "evidence_recall@20" in METRIC_SETS["compare"]


def test_question_metrics_computes_exactly_the_ids_asked_for():
    r = question_metrics(REC, DOCS, CHUNKS, metrics=["evidence_mrr", "recall@3", "mrr", "recall@3"])
    assert list(r.metrics) == ["evidence_mrr", "recall@3", "mrr"]
    assert r.metrics == {"evidence_mrr": 1.0, "recall@3": 0.0, "mrr": 1 / 2}
    # only the asked ids are checked against the depths
    assert question_metrics(REC, DOCS, CHUNKS, doc_depth=3, metrics=["mrr"]).metrics == {"mrr": 1 / 2}
    with pytest.raises(ValueError, match="evidence_recall@30: k=30 exceeds chunk_depth=20"):
        question_metrics(REC, DOCS, CHUNKS, chunk_depth=20, metrics=["evidence_recall@30"])
    with pytest.raises(MetricError, match="unknown metric"):
        question_metrics(REC, DOCS, CHUNKS, metrics=["mapp"])


# ---------------------------------------------------------------------------------------------------------------
# Aggregation


def _three():
    r1 = record([gold_doc("g", chunks=("c",))], qid="SP-1", category="single_passage")
    r2 = record([gold_doc("g", chunks=("c",))], qid="SP-2", category="single_passage")
    r3 = record([gold_doc("h", chunks=("c",))], qid="MD-1", category="multi_document")
    return r1, r2, r3


def test_aggregate_means_over_whole_gold_set_missing_counts_zero():
    r1, r2, r3 = _three()
    res = [
        question_metrics(r1, [("x", 2.0), ("g", 1.0)], [("c", 1.0)]),  # mrr 1/2
        question_metrics(r2, None, None),  # missing
        question_metrics(r3, [("h", 1.0)], None),  # mrr 1, chunks missing
    ]
    out = aggregate(res, ["mrr", "recall@1"])
    assert isinstance(out, Aggregate)  # the run summary's own sections (harness.metrics.means)
    counts = out.counts
    assert counts.metrics == ["mrr", "recall@1"]
    assert out.overall["mrr"] == pytest.approx((1 / 2 + 0 + 1) / 3) and out.overall["recall@1"] == 1 / 3
    assert (counts.n_questions, counts.n_evaluated, counts.n_missing) == (3, 2, 1)
    assert counts.missing_qids == ["SP-2"] and counts.by_level == {"document": LevelCounts(n_evaluated=2, n_missing=1)}
    assert list(out.per_category) == ["single_passage", "multi_document"]
    sp = out.per_category["single_passage"]
    assert (sp.n_questions, sp.n_evaluated, sp.n_missing) == (2, 1, 1)
    assert sp.metrics["mrr"] == pytest.approx((1 / 2 + 0) / 2)
    # with an evidence metric, MD-1 (no chunk ranking) is missing too
    out2 = aggregate(res, ["mrr", "evidence_mrr"])
    assert out2.counts.n_missing == 2 and out2.counts.by_level["chunk"] == LevelCounts(n_evaluated=1, n_missing=2)
    assert out2.overall["evidence_mrr"] == pytest.approx(1 / 3)


def test_aggregate_with_gold_counts_absent_questions_as_zero():
    r1, r2, r3 = _three()
    res = [question_metrics(r1, [("g", 1.0)], None)]
    out = aggregate(res, ["mrr"], gold=[r1, r2, r3])
    assert out.counts.n_questions == 3 and out.overall["mrr"] == 1 / 3 and out.counts.missing_qids == ["SP-2", "MD-1"]
    assert out.per_category["multi_document"].metrics["mrr"] == 0
    with pytest.raises(MetricError, match="not in the gold set"):
        aggregate(res, ["mrr"], gold=[r2])


def test_aggregate_errors_and_undefined():
    r1, *_ = _three()
    res = question_metrics(r1, [("g", 1.0)], None, ks=(5,))
    with pytest.raises(MetricError, match="more than one"):
        aggregate([res, res], ["mrr"])
    with pytest.raises(MetricError, match="recall@10 was not computed"):
        aggregate([res], ["recall@10"])
    with pytest.raises(MetricError, match="unknown metric"):
        aggregate([res], ["prec@5"])
    with pytest.raises(MetricError, match="no questions"):
        aggregate([], ["mrr"])
    use = record([gold_doc("u", grade=1)], qid="U")
    out = aggregate([res, question_metrics(use, [], [], ks=(5,))], ["recall@5", "mrr"])
    assert out.counts.undefined == {"recall@5": ["U"]}


# ---------------------------------------------------------------------------------------------------------------
# Hypothesis properties

IDS = [f"d{i}" for i in range(6)] + [f"a{i}" for i in range(3)] + [f"x{i}" for i in range(6)]
CIDS = [f"c{i}" for i in range(6)] + [f"y{i}" for i in range(6)]
SCORES = st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, -1.0, 3.25])


@st.composite
def any_record(draw):
    n = draw(st.integers(0, 4))
    ids = draw(st.lists(st.sampled_from(IDS[:6]), min_size=n, max_size=n, unique=True))
    docs = [
        gold_doc(
            g,
            grade=draw(st.sampled_from([None, 1, 2])),
            chunks=draw(st.lists(st.sampled_from(CIDS[:6]), max_size=2, unique=True)),
            alternatives=draw(st.lists(st.sampled_from(IDS[:9]), max_size=2, unique=True)),
        )
        for g in ids
    ]
    return record(docs)


def rankings(pool):
    return st.one_of(st.none(), st.lists(st.tuples(st.sampled_from(pool), SCORES), max_size=25))


KS = tuple(range(1, 21))


@settings(max_examples=200, deadline=None)
@given(any_record(), rankings(IDS), rankings(CIDS))
def test_property_ranges_monotone_and_ordered(rec, docs, chunks):
    ids = [*summary_metric_ids(KS), *(f"precision@{k}" for k in KS)]
    m = question_metrics(rec, docs, chunks, doc_depth=20, chunk_depth=20, metrics=ids).metrics
    assert all(0.0 <= v <= 1.0 + 1e-12 for v in m.values())
    hits = [k * m[f"precision@{k}"] for k in KS]  # the number of credited documents grows with k, by at most 1
    assert all(0 <= b - a <= 1 + 1e-9 for a, b in zip(hits, hits[1:], strict=False))
    if docs is not None:  # never more than trec_eval's count with every alternative judged relevant
        qrels = {
            i: 1
            for g in rec.gold_documents
            for i in (str(g.document_id), *(str(a.document_id) for a in g.alternatives))
        }
        ordered = canonical_ranking(docs)  # untied scores in our order, so trec_eval's tie rule cannot reorder
        untied = [(d, float(len(ordered) - i)) for i, (d, _) in enumerate(ordered)]
        ref = trec(qrels, untied, {"P_5", "P_10"}, level=1) if qrels and untied else {"P_5": 0.0, "P_10": 0.0}
        assert m["precision@5"] <= ref["P_5"] + 1e-12 and m["precision@10"] <= ref["P_10"] + 1e-12
    for name in ("recall", "hit", "all_hop", "evidence_recall"):
        vals = [m[f"{name}@{k}"] for k in KS]
        assert vals == sorted(vals), name
    for k in KS:
        assert m[f"all_hop@{k}"] <= m[f"recall@{k}"] <= m[f"hit@{k}"]
    assert (m["ndcg@10"] > 0) == (m["mrr"] >= 1 / 10)  # some gold document satisfied within the top 10


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(any_record(), st.lists(st.tuples(st.sampled_from(IDS), SCORES), max_size=25), st.data())
def test_property_invariant_to_input_order_and_inputs_not_mutated(rec, docs, data):
    chunks = data.draw(st.lists(st.tuples(st.sampled_from(CIDS), SCORES), max_size=25))
    before = (copy.deepcopy(docs), copy.deepcopy(chunks), rec.model_dump())
    base = question_metrics(rec, docs, chunks, doc_depth=10, chunk_depth=10, ks=(1, 5, 10))
    assert (docs, chunks, rec.model_dump()) == before
    shuffled = question_metrics(
        rec,
        data.draw(st.permutations(docs)),
        data.draw(st.permutations(chunks)),
        doc_depth=10,
        chunk_depth=10,
        ks=(1, 5, 10),
    )
    assert shuffled == base


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.sampled_from(IDS), st.integers(0, 5)), SCORES), max_size=30), st.data())
def test_property_canonical_ranking(items, data):
    before = copy.deepcopy(items)
    out = canonical_ranking(items)
    assert items == before
    assert out == sorted(out, key=lambda p: (-p[1], p[0]))
    assert len({i for i, _ in out}) == len(out) == len({str(i) for i, _ in items})
    assert dict(out) == {str(i): max(s for j, s in items if str(j) == str(i)) for i, _ in items}
    assert canonical_ranking(data.draw(st.permutations(items))) == out == canonical_ranking(out)
    depth = data.draw(st.integers(0, 30))
    assert canonical_ranking(items, depth) == out[:depth]


def test_question_result_is_frozen():
    r = question_metrics(REC, DOCS, CHUNKS)
    assert isinstance(r, QuestionResult)
    with pytest.raises(AttributeError):
        r.qid = "other"  # type: ignore[misc]
