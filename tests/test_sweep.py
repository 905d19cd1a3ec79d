"""Fusion-weight sweep: choose on dev, report on test, from the rankings stored in a run record.

The synthetic run below has, per question, three items ``g`` (gold), ``x`` and ``z`` in the bm25 and vector lists,
with scores chosen so that, after min-max normalisation, ``g`` ranks first exactly on one side of a threshold ``t``
(otherwise second, MRR 1/2):

* type ``gt1`` - bm25 ``g=1, x=0, z=0``; vector (Hamming) ``x=0, g=31, z=64`` -> ``v_g = 33/64``:
  ``g - x = w - (1 - w) * 31/64 > 0``  iff  ``w > 31/95 = 0.3263``;
* type ``gt2`` - bm25 ``g=12, x=6, z=2`` -> ``x=0.4``; vector ``x=0, g=64, z=64``:
  ``g - x = 0.6 w - (1 - w) > 0``  iff  ``w > 1/1.6 = 0.625``;
* type ``lt3`` - bm25 ``x=12, g=9, z=2`` -> ``g=0.7``; vector ``g=0, x=64, z=64``:
  ``g - x = -0.3 w + (1 - w) > 0``  iff  ``w < 1/1.3 = 0.7692``;
* type ``lt4`` - bm25 ``x=1, g=0, z=0``; vector ``g=0, x=39, z=60`` -> ``v_x = 0.35``:
  ``g - x = -w + 0.65 (1 - w) > 0``  iff  ``w < 0.65/1.65 = 0.3939``.

Dev = {gt1, gt1, gt2, lt3}: MRR 0.625 for w <= 0.30, 0.875 for 0.35..0.60, 1 for 0.65..0.75, 0.875 for w >= 0.80.
The plateau 0.65-0.75 ties; the rule (closest to 0.5, then smallest) picks 0.65. Test = {lt4, lt4, gt1}: at 0.65,
MRR = (1/2 + 1/2 + 1)/3 = 2/3.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.errors import HarnessInputError
from harness.evaluation.pipeline import RunOptions, score_results
from harness.evaluation.runs import RUN_SCHEMA_VERSION, record_hashes, write_run_record
from harness.evaluation.sweep import SweepResult, choose_weight, parse_weight_grid, sweep
from harness.goldset.io import load_goldset
from harness.retrieve.base import QueryResult
from harness.retrieve.fusion import FusionSpec

TYPES = {
    # (bm25 {item: score}, vector {item: hamming distance})
    "gt1": ({"g": 1.0, "x": 0.0, "z": 0.0}, {"x": 0, "g": 31, "z": 64}),
    "gt2": ({"g": 12.0, "x": 6.0, "z": 2.0}, {"x": 0, "g": 64, "z": 64}),
    "lt3": ({"x": 12.0, "g": 9.0, "z": 2.0}, {"g": 0, "x": 64, "z": 64}),
    "lt4": ({"x": 1.0, "g": 0.0, "z": 0.0}, {"g": 0, "x": 39, "z": 60}),
}
DEV = [("D1", "gt1"), ("D2", "gt1"), ("D3", "gt2"), ("D4", "lt3")]
TEST = [("T1", "lt4"), ("T2", "lt4"), ("T3", "gt1")]
GRID = "0:1:0.05"
# dev MRR by weight, by hand (module docstring)
DEV_MRR = [0.625] * 7 + [0.875] * 6 + [1.0] * 3 + [0.875] * 5


def record(qid: str, split: str | None) -> dict:
    doc = f"g-{qid}"
    return {
        "id": qid,
        "category": "single_passage",
        "question": f"pregunta {qid}",
        "persona": "p",
        "difficulty": "easy",
        "as_of": "2024-01-01",
        "answerability": "answerable",
        "reference_answer": "r",
        "required_hops": 1,
        "gold_documents": [
            {
                "document_id": doc,
                "relpath": f"{doc}.md",
                "publication_date": "2024-01-01",
                "role": "answer",
                "evidence": [{"chunk_id": f"{doc}#0", "chunk_index": 0, "quote": "q"}],
            }
        ],
        **({"split": split} if split is not None else {}),
    }


def rankings(qid: str, kind: str) -> dict[str, QueryResult]:
    bm, vec = TYPES[kind]
    b = [(f"{i}-{qid}", s) for i, s in bm.items() if s > 0 or kind in ("gt1", "lt4")]
    v = [(f"{i}-{qid}", -float(d)) for i, d in vec.items()]
    bc = [(f"{i}#0", s) for i, s in b]
    vc = [(f"{i}#0", s) for i, s in v]
    return {"bm25": QueryResult(docs=b, chunks=bc), "vector": QueryResult(docs=v, chunks=vc)}


def write_run(
    tmp: Path, questions, *, splits=True, systems=("bm25", "vector"), extra=(), run_id="r1", move_goldset=False
) -> Path:
    gdir = tmp / "gold"
    gdir.mkdir(parents=True, exist_ok=True)
    gpath = gdir / f"{run_id}.jsonl"
    recs = [record(q, split if splits else None) for q, _k, split in questions]
    gpath.write_text("\n".join(json.dumps(r) for r in recs) + "\n", encoding="utf-8")
    gs = load_goldset(gpath)
    results: dict[str, dict[str, QueryResult]] = {s: {} for s in (*systems, *extra)}
    for qid, kind, _split in questions:
        per = rankings(qid, kind)
        for s in systems:
            results[s][qid] = per[s]
        for name in extra:
            spec = FusionSpec.parse(name)
            lists = [per["bm25"], per["vector"]]
            docs = spec.fuse([r.docs for r in lists], depth=50)
            results[name][qid] = QueryResult(docs=docs, chunks=spec.fuse([r.chunks for r in lists], depth=200))
    opts = RunOptions(bootstrap_reps=200)
    rows, summary, clusters = score_results(gs, results, opts, n_docs=1000, n_chunks=5000)
    manifest = {
        "schema_version": RUN_SCHEMA_VERSION,
        "run_id": run_id,
        "kind": "run",
        "goldset": {"name": gs.name, "version": gs.version, "sha256": gs.sha256, "path": str(gpath)},
        "corpus": {"n_documents": 1000, "n_chunks": 5000},
        "systems": list(results),
        "depths": {"document": opts.doc_depth, "chunk": opts.chunk_depth},
        "ks": list(opts.ks),
        "level": opts.level,
        "clusters": clusters,
    }
    path = write_run_record(
        tmp / "runs", run_id, manifest=manifest, per_question=rows, summary=summary, trec_runs={}, qrels={}
    )
    return path


def questions(dev=DEV, test=TEST):
    return [(q, k, "dev") for q, k in dev] + [(q, k, "test") for q, k in test]


# ------------------------------------------------------------------------------------------------------------------
# The hand-computed case
# ------------------------------------------------------------------------------------------------------------------


def test_hand_computed_best_weight(tmp_path):
    run = write_run(tmp_path, questions(), extra=("w0.65",))
    res = sweep(run, GRID, "mrr")
    assert res.weights == [round(0.05 * i, 10) for i in range(21)]
    assert res.n_weights == 21
    assert res.dev_means == pytest.approx(DEV_MRR, abs=1e-12)
    assert res.chosen_weight == 0.65
    assert res.dev_best == 1.0
    assert res.test_mean == pytest.approx((0.5 + 0.5 + 1.0) / 3, abs=1e-12)
    assert res.test_per_question == {"T1": 0.5, "T2": 0.5, "T3": 1.0}
    assert (res.n_dev, res.n_test, res.n_unsplit, res.level) == (4, 3, 0, "document")
    assert "21 weights" in res.note and "optimistic" in res.note
    # agrees with the pipeline's own w0.65 system, question by question
    rows = [json.loads(line) for line in (run / "per_question.jsonl").read_text().splitlines()]
    w065 = {r["qid"]: r["metrics"]["mrr"] for r in rows if r["system"] == "w0.65"}
    assert {q: w065[q] for q in res.test_per_question} == res.test_per_question
    # the CR2 interval on test (3 clusters)
    iv = res.test_interval
    assert iv["method"] == "cr2" and iv["n"] == 3 and iv["lower"] <= res.test_mean <= iv["upper"]


def test_chunk_level_metric(tmp_path):
    run = write_run(tmp_path, questions())
    res = sweep(run, GRID, "evidence_recall@1")
    assert res.level == "chunk" and res.depth == 200
    want = [0.25] * 7 + [0.75] * 6 + [1.0] * 3 + [0.75] * 5
    assert res.dev_means == pytest.approx(want, abs=1e-12)
    assert res.chosen_weight == 0.65
    assert res.test_mean == pytest.approx(1 / 3, abs=1e-12)
    with pytest.raises(HarnessInputError, match="reads the chunk ranking"):
        sweep(run, GRID, "evidence_recall@1", level="document")
    assert sweep(run, GRID, "mrr", level="document").chosen_weight == 0.65


def test_dev_and_test_are_separate(tmp_path):
    base = sweep(write_run(tmp_path / "a", questions()), GRID, "mrr")
    # other test questions: the same choice and dev curve, another test value
    other_test = sweep(write_run(tmp_path / "b", questions(test=[("T1", "gt2"), ("T9", "lt4")])), GRID, "mrr")
    assert other_test.chosen_weight == base.chosen_weight
    assert other_test.dev_means == base.dev_means
    assert other_test.test_mean == pytest.approx(0.75)
    # other dev questions: another choice (lt3 + lt4 on dev: g first iff w < 0.394 -> plateau 0..0.35 -> 0.35)
    other_dev = sweep(write_run(tmp_path / "c", questions(dev=[("D1", "lt3"), ("D2", "lt4")])), GRID, "mrr")
    assert other_dev.chosen_weight == 0.35 and other_dev.dev_best == 1.0
    assert other_dev.test_per_question == {"T1": 1.0, "T2": 1.0, "T3": 1.0}


def test_ties_and_grid_orientation(tmp_path):
    # only gt1 questions on dev: MRR 1 for every w >= 0.35 -> the tie goes to 0.5
    run = write_run(tmp_path, questions(dev=[("D1", "gt1"), ("D2", "gt1")]))
    assert sweep(run, GRID, "mrr").chosen_weight == 0.5
    assert sweep(run, "0.6,0.4,0.2", "mrr").chosen_weight == 0.4
    assert sweep(run, [0.1, 0.9], "mrr").chosen_weight == 0.9


# ------------------------------------------------------------------------------------------------------------------
# Refusals
# ------------------------------------------------------------------------------------------------------------------


def test_refuses_a_goldset_without_split(tmp_path):
    run = write_run(tmp_path, questions(), splits=False)
    with pytest.raises(HarnessInputError, match="0 dev and 0 test") as exc:
        sweep(run, GRID, "mrr")
    assert exc.value.exit_code == 2
    only_dev = write_run(tmp_path / "d", [(q, k, "dev") for q, k in DEV])
    with pytest.raises(HarnessInputError, match="4 dev and 0 test"):
        sweep(only_dev, GRID, "mrr")


def test_unsplit_questions_are_counted_not_used(tmp_path):
    run = write_run(tmp_path, questions() + [("U1", "lt4", None)])
    res = sweep(run, GRID, "mrr")
    assert res.n_unsplit == 1 and "U1" not in res.test_per_question and res.chosen_weight == 0.65


def test_refuses_missing_systems_changed_goldset_bad_input(tmp_path):
    run = write_run(tmp_path / "a", questions(), systems=("bm25",))
    with pytest.raises(HarnessInputError, match="'vector' not in run"):
        sweep(run, GRID, "mrr")
    run = write_run(tmp_path / "b", questions())
    with pytest.raises(HarnessInputError, match="unknown metric"):
        sweep(run, GRID, "precision@3")
    with pytest.raises(HarnessInputError, match="level"):
        sweep(run, GRID, "mrr", level="passage")
    gold = Path(json.loads((run / "manifest.json").read_text())["goldset"]["path"])
    gold.write_text(gold.read_text() + "\n", encoding="utf-8")
    with pytest.raises(HarnessInputError, match="differs from the run's gold set"):
        sweep(run, GRID, "mrr")
    gold.unlink()
    with pytest.raises(HarnessInputError, match="not found"):
        sweep(run, GRID, "mrr")


def test_missing_rankings_score_zero(tmp_path):
    run = write_run(tmp_path, questions())
    lines = [json.loads(x) for x in (run / "per_question.jsonl").read_text().splitlines()]
    kept = [r for r in lines if r["qid"] != "T2"]
    (run / "per_question.jsonl").write_text("\n".join(json.dumps(r) for r in kept) + "\n", encoding="utf-8")
    man = json.loads((run / "manifest.json").read_text())  # a deliberate edit: record its hash (else refused)
    man["content_sha256"] = record_hashes(run)
    (run / "manifest.json").write_text(json.dumps(man), encoding="utf-8")
    res = sweep(run, GRID, "mrr")
    assert res.missing == {"dev": 0, "test": 1} and res.n_test == 3
    assert res.test_per_question["T2"] == 0.0 and res.test_mean == pytest.approx(0.5)


# ------------------------------------------------------------------------------------------------------------------
# Grid, tie rule, output
# ------------------------------------------------------------------------------------------------------------------


def test_parse_weight_grid():
    g = parse_weight_grid("0:1:0.05")
    assert len(g) == 21 and g[0] == 0.0 and g[-1] == 1.0 and g[6] == 0.3 and g[7] == 0.35
    assert parse_weight_grid("0:1:0.3") == [0.0, 0.3, 0.6, 0.9]
    assert parse_weight_grid("0.75, 0.25,0.5,0.25") == [0.25, 0.5, 0.75]
    assert parse_weight_grid("0.5") == [0.5]
    assert parse_weight_grid("0.2:0.2:0.1") == [0.2]
    assert parse_weight_grid([0.1 + 0.2]) == [0.3]
    for bad in ("", "0:1", "0:1:0", "0:1:-0.1", "1:0:0.1", "0:2:0.5", "a,b", "1.5", "0:1:1e-9", "nan:1:0.1"):
        with pytest.raises(HarnessInputError):
            parse_weight_grid(bad)


def test_choose_weight_tie_rule():
    assert choose_weight([0.1, 0.45, 0.55, 0.9], [0.2, 0.8, 0.8, 0.1]) == 0.45  # equidistant: smallest
    assert choose_weight([0.2, 0.6, 0.9], [1.0, 1.0, 1.0]) == 0.6  # closest to 0.5
    assert choose_weight([0.0, 1.0], [0.3, 0.3 + 1e-13]) == 0.0  # within tolerance: a tie
    assert choose_weight([0.0, 1.0], [0.3, 0.3 + 1e-9]) == 1.0
    with pytest.raises(ValueError):
        choose_weight([], [])


@given(st.lists(st.tuples(st.sampled_from([i / 20 for i in range(21)]), st.sampled_from([0.0, 0.25, 0.5, 1.0]))))
def test_choose_weight_properties(pairs):
    pairs = list(dict(pairs).items())
    if not pairs:
        return
    ws, vs = [p[0] for p in pairs], [p[1] for p in pairs]
    w = choose_weight(ws, vs)
    best = max(vs)
    assert dict(pairs)[w] == best
    assert all(abs(w - 0.5) <= abs(x - 0.5) for x, v in pairs if v == best)
    assert choose_weight(ws[::-1], vs[::-1]) == w  # order of the grid does not matter


def test_to_dict_and_render(tmp_path):
    res = sweep(write_run(tmp_path, questions()), GRID, "mrr")
    d = json.loads(json.dumps(res.to_dict()))
    assert d["n_weights"] == 21 and d["chosen_weight"] == 0.65 and len(d["dev_curve"]) == 21
    assert d["dev_curve"][13] == {"w": 0.65, "dev_mean": 1.0}
    assert math.isclose(d["test_mean"], 2 / 3) and "optimistic" in d["note"]
    from rich.console import Console

    from harness.report.terminal import render_sweep

    console = Console(record=True, width=120)
    render_sweep(res, console)
    text = console.export_text()
    assert "weights tried: 21" in text and "optimistic" in text and "0.6667" in text and "test" in text
    assert isinstance(res, SweepResult)
