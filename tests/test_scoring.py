"""The run summary, built once and typed (issue 27 item 4): ``score_results`` builds the models of
``evaluation/record.py`` (whose ``counts`` and ``per_category`` are what ``metrics.aggregate`` returns), the record
holds exactly their dump, that dump reads back to the same models, and records written before still load."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import REPO

import harness.evaluation.record as record
import harness.metrics.means as means
from harness.evaluation.pipeline import NO_EVIDENCE_NOTE, RunOptions, score_results
from harness.evaluation.record import ClusterInfo, QuestionRow, Summary
from harness.evaluation.runs import load_run, write_run_record
from harness.goldset.io import load_goldset
from harness.metrics import Aggregate, aggregate, question_metrics
from harness.retrieve.base import QueryResult

SCHEMA_1 = REPO / "tests" / "fixtures" / "run-schema-1"


def _results(gs, *, chunks: bool = True) -> dict[str, dict[str, QueryResult]]:
    """System ``s`` ranks each question's first gold document first (and its first evidence chunk, with ``chunks``);
    system ``docs-only`` returns documents only; system ``partial`` returns nothing for the last question."""
    out: dict[str, dict[str, QueryResult]] = {"s": {}, "docs-only": {}, "partial": {}}
    for r in gs.records:
        doc = str(r.gold_documents[0].document_id)
        full = QueryResult(docs=[(doc, 1.0), ("zz", 0.5)], chunks=[(f"{doc}#0", 1.0)] if chunks else None)
        out["s"][r.qid] = full
        out["docs-only"][r.qid] = QueryResult(docs=[("zz", 2.0), (doc, 1.0)], chunks=None)
        if r is not gs.records[-1]:
            out["partial"][r.qid] = full
    return out


def test_score_results_returns_the_record_models_and_the_record_holds_their_dump(tiny_goldset: Path, tmp_path: Path):
    gs = load_goldset(tiny_goldset)
    rows, summary, clusters = score_results(gs, _results(gs), RunOptions(bootstrap_reps=100))
    assert isinstance(summary, Summary) and isinstance(clusters, ClusterInfo)
    assert all(isinstance(r, QuestionRow) for r in rows) and len(rows) == 3 * len(gs.records)
    # one schema: the summary's counts and per-category sections are the models aggregate returns
    assert (record.Counts, record.CategorySummary, record.LevelCounts) == (
        means.Counts,
        means.CategorySummary,
        means.LevelCounts,
    )
    sl = summary.systems["s"]["all"]
    agg = aggregate([question_metrics(r, *_ranked(_results(gs)["s"][r.qid])) for r in gs.records], summary.metric_ids)
    assert isinstance(agg, Aggregate)
    assert sl.counts == agg.counts and sl.per_category == agg.per_category
    assert {m: s.mean for m, s in sl.overall.items()} == agg.overall
    assert sl.levels == {"document": True, "chunk": True} and set(sl.counts.by_level) == {"document", "chunk"}

    path = write_run_record(
        tmp_path,
        "r",
        manifest={"run_id": "r", "systems": list(summary.systems), "depths": {"document": 50, "chunk": 200}},
        per_question=rows,
        summary=summary,
        trec_runs={},
        qrels={},
    )
    text = (path / "summary.json").read_text("utf-8")
    assert text == json.dumps(summary.model_dump(mode="python"), indent=2, ensure_ascii=False) + "\n"
    back = load_run(path, log=None)
    assert back.per_question == rows
    # the summary re-dumps byte for byte (compared as text: an undefined ICC in an interval's extras is NaN, which
    # compares unequal to itself): the models are the whole contract of the file
    assert json.dumps(back.summary.model_dump(mode="python"), indent=2, ensure_ascii=False) + "\n" == text


def _ranked(res: QueryResult):
    return res.docs, res.chunks


def test_each_reason_for_a_missing_mean_or_interval_is_its_note(tiny_goldset: Path):
    gs = load_goldset(tiny_goldset)
    one = gs.records[0].qid
    _, summary, _ = score_results(gs, _results(gs), RunOptions(bootstrap_reps=100), slices={"one": {one}})
    docs_only = summary.systems["docs-only"]["all"]
    assert docs_only.levels == {"document": True, "chunk": False}
    ev = docs_only.overall["evidence_mrr"]
    assert ev.mean is None and ev.intervals == {} and ev.note == "not available: the system returned no chunk rankings"
    assert docs_only.overall["mrr"].mean == 0.5 and docs_only.overall["mrr"].note is None
    # chunk metrics missing for a system that gives no chunks do not make its questions "missing"
    assert docs_only.counts.n_missing == 0 and set(docs_only.counts.by_level) == {"document"}
    single = summary.systems["s"]["one"]
    assert single.n_questions == 1 and single.n_clusters == 1
    assert single.overall["mrr"].intervals == {}
    assert single.overall["mrr"].note == "no interval: the slice holds fewer than 2 clusters"
    partial = summary.systems["partial"]["all"]
    assert partial.counts.missing_qids == [gs.records[-1].qid] and partial.flag_shares == {"missing": 1 / 3}
    assert partial.overall["mrr"].mean == 2 / 3  # the question it did not return counts 0
    # external rankings without --corpus: the budget family is not applicable, its note says why
    _, bare, _ = score_results(gs, _results(gs), RunOptions(bootstrap_reps=100), extents=None)
    assert bare.systems["s"]["all"].overall["evidence_recall@250w"].note.startswith("not applicable")
    # a documents-only gold set: chunk metrics are undefined, not 0
    for rec in gs.records:
        for g in rec.gold_documents:
            g.evidence = []
    _, no_ev, _ = score_results(gs, _results(gs), RunOptions(bootstrap_reps=100))
    assert no_ev.systems["s"]["all"].overall["evidence_recall@10"].model_dump() == {
        "mean": None,
        "intervals": {},
        "note": NO_EVIDENCE_NOTE,
        "outcome": "unit",
        "interval": None,  # nothing to show
        "evidence": None,
        "estimand_id": "srs",
    }


def test_records_written_before_load_with_the_same_models():
    """The schema-1 fixture (no ``omitted`` in its counts, ``docs``/``chunks`` level keys) and the committed
    baseline load; what they lack reads as the model's default."""
    old = load_run(SCHEMA_1, log=None)
    counts = next(iter(old.summary.systems.values()))["all"].counts
    assert isinstance(counts, means.Counts) and counts.omitted == {}
    assert set(counts.by_level) <= {"document", "chunk"}
    base = load_run(REPO / "runs" / "baselines" / "mx-leyes-dof-eval-v1-six-systems", log=None)
    assert all(isinstance(s["all"].counts, means.Counts) for s in base.summary.systems.values())
