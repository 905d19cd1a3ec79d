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

from harness.cli import app
from harness.errors import HarnessInputError
from harness.evaluation.pipeline import RunOptions, score_results
from harness.evaluation.runs import RUN_SCHEMA_VERSION, record_hashes, write_run_record
from harness.evaluation.sweep import SweepResult, choose, parse_grid, sweep
from harness.goldset.io import load_goldset
from harness.retrieve.base import QueryResult
from harness.retrieve.fusion import FusionSpec
from harness.stats import paired

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
    assert res.grid == [round(0.05 * i, 10) for i in range(21)]
    assert res.n_settings == 21
    assert res.dev_means == pytest.approx(DEV_MRR, abs=1e-12)
    assert res.chosen_value == 0.65
    assert res.dev_best == 1.0
    assert res.test_mean == pytest.approx((0.5 + 0.5 + 1.0) / 3, abs=1e-12)
    assert res.test_per_question == {"T1": 0.5, "T2": 0.5, "T3": 1.0}
    assert (res.n_dev, res.n_test, res.n_unsplit, res.level) == (4, 3, 0, "document")
    assert "21 settings" in res.note and "optimistic" in res.note
    # agrees with the pipeline's own w0.65 system, question by question
    rows = [json.loads(line) for line in (run / "per_question.jsonl").read_text().splitlines()]
    w065 = {r["qid"]: r["metrics"]["mrr"] for r in rows if r["system"] == "w0.65"}
    assert {q: w065[q] for q in res.test_per_question} == res.test_per_question
    # the default interval of a unit metric on test (3 clusters): CR2 on the logit scale (DEFAULTS["unit"])
    iv = res.test_interval
    assert iv["method"] == "cr2_logit" and iv["n"] == 3 and iv["lower"] <= res.test_mean <= iv["upper"]


def test_chunk_level_metric(tmp_path):
    run = write_run(tmp_path, questions())
    res = sweep(run, GRID, "evidence_recall@1")
    assert res.level == "chunk" and res.depth == 200
    want = [0.25] * 7 + [0.75] * 6 + [1.0] * 3 + [0.75] * 5
    assert res.dev_means == pytest.approx(want, abs=1e-12)
    assert res.chosen_value == 0.65
    assert res.test_mean == pytest.approx(1 / 3, abs=1e-12)
    with pytest.raises(HarnessInputError, match="reads the chunk ranking"):
        sweep(run, GRID, "evidence_recall@1", level="document")
    assert sweep(run, GRID, "mrr", level="document").chosen_value == 0.65


def test_dev_and_test_are_separate(tmp_path):
    base = sweep(write_run(tmp_path / "a", questions()), GRID, "mrr")
    # other test questions: the same choice and dev curve, another test value
    other_test = sweep(write_run(tmp_path / "b", questions(test=[("T1", "gt2"), ("T9", "lt4")])), GRID, "mrr")
    assert other_test.chosen_value == base.chosen_value
    assert other_test.dev_means == base.dev_means
    assert other_test.test_mean == pytest.approx(0.75)
    # other dev questions: another choice (lt3 + lt4 on dev: g first iff w < 0.394 -> plateau 0..0.35 -> 0.35)
    other_dev = sweep(write_run(tmp_path / "c", questions(dev=[("D1", "lt3"), ("D2", "lt4")])), GRID, "mrr")
    assert other_dev.chosen_value == 0.35 and other_dev.dev_best == 1.0
    assert other_dev.test_per_question == {"T1": 1.0, "T2": 1.0, "T3": 1.0}


def test_ties_and_grid_orientation(tmp_path):
    # only gt1 questions on dev: MRR 1 for every w >= 0.35 -> the tie goes to 0.5
    run = write_run(tmp_path, questions(dev=[("D1", "gt1"), ("D2", "gt1")]))
    assert sweep(run, GRID, "mrr").chosen_value == 0.5
    assert sweep(run, "0.6,0.4,0.2", "mrr").chosen_value == 0.4
    assert sweep(run, [0.1, 0.9], "mrr").chosen_value == 0.9


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
    assert res.n_unsplit == 1 and "U1" not in res.test_per_question and res.chosen_value == 0.65


def test_refuses_missing_systems_changed_goldset_bad_input(tmp_path):
    run = write_run(tmp_path / "a", questions(), systems=("bm25",))
    with pytest.raises(HarnessInputError, match="'vector' not in run"):
        sweep(run, GRID, "mrr")
    run = write_run(tmp_path / "b", questions())
    with pytest.raises(HarnessInputError, match="unknown metric"):
        sweep(run, GRID, "map@3")
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


def test_parse_grid():
    g = parse_grid("0:1:0.05")
    assert len(g) == 21 and g[0] == 0.0 and g[-1] == 1.0 and g[6] == 0.3 and g[7] == 0.35
    assert parse_grid("0:1:0.3") == [0.0, 0.3, 0.6, 0.9]
    assert parse_grid("0.75, 0.25,0.5,0.25") == [0.25, 0.5, 0.75]
    assert parse_grid("0.5") == [0.5]
    assert parse_grid("0.2:0.2:0.1") == [0.2]
    assert parse_grid([0.1 + 0.2]) == [0.3]
    for bad in ("", "0:1", "0:1:0", "0:1:-0.1", "1:0:0.1", "0:2:0.5", "a,b", "1.5", "0:1:1e-9", "nan:1:0.1"):
        with pytest.raises(HarnessInputError):
            parse_grid(bad)


def test_choose_tie_rule():
    assert choose([0.1, 0.45, 0.55, 0.9], [0.2, 0.8, 0.8, 0.1]) == 0.45  # equidistant: smallest
    assert choose([0.2, 0.6, 0.9], [1.0, 1.0, 1.0]) == 0.6  # closest to 0.5
    assert choose([0.0, 1.0], [0.3, 0.3 + 1e-13]) == 0.0  # within tolerance: a tie
    assert choose([0.0, 1.0], [0.3, 0.3 + 1e-9]) == 1.0
    with pytest.raises(ValueError):
        choose([], [])


@given(st.lists(st.tuples(st.sampled_from([i / 20 for i in range(21)]), st.sampled_from([0.0, 0.25, 0.5, 1.0]))))
def test_choose_properties(pairs):
    pairs = list(dict(pairs).items())
    if not pairs:
        return
    ws, vs = [p[0] for p in pairs], [p[1] for p in pairs]
    w = choose(ws, vs)
    best = max(vs)
    assert dict(pairs)[w] == best
    assert all(abs(w - 0.5) <= abs(x - 0.5) for x, v in pairs if v == best)
    assert choose(ws[::-1], vs[::-1]) == w  # order of the grid does not matter


def test_to_dict_and_render(tmp_path):
    res = sweep(write_run(tmp_path, questions()), GRID, "mrr")
    d = json.loads(json.dumps(res.to_dict()))
    assert d["n_settings"] == 21 and d["chosen_value"] == 0.65 and len(d["dev_curve"]) == 21
    assert d["dev_curve"][13] == {"w": 0.65, "dev_mean": 1.0}
    assert math.isclose(d["test"][0]["mean"], 2 / 3) and d["test"][0]["role"] == "chosen" and "optimistic" in d["note"]
    assert [r["system"] for r in d["test"]] == ["w0.65", "bm25", "vector"]
    from rich.console import Console

    from harness.report.terminal import render_sweep

    console = Console(record=True, width=120)
    render_sweep(res, console)
    text = console.export_text()
    assert "settings tried: 21" in text and "optimistic" in text and "0.667" in text and "test (3)" in text
    assert isinstance(res, SweepResult)


# ------------------------------------------------------------------------------------------------------------------
# The chosen setting beside its inputs alone, on test (issue 21 item 6)
# ------------------------------------------------------------------------------------------------------------------


def _recorded(run: Path, system: str, metric: str = "mrr") -> dict[str, float]:
    rows = [json.loads(line) for line in (run / "per_question.jsonl").read_text().splitlines()]
    return {r["qid"]: r["metrics"][metric] for r in rows if r["system"] == system}


def test_inputs_alone_on_test_with_paired_differences(tmp_path):
    """By hand (module docstring): on test, bm25 alone ranks g second on lt4 and first on gt1 (2/3, the chosen
    w = 0.65 gives the same per question); vector alone ranks g first on lt4 and second on gt1 (5/6). On dev, bm25
    alone scores (1 + 1 + 1 + 1/2)/4 and vector (1/2 + 1/2 + 1/2 + 1)/4."""
    run = write_run(tmp_path, questions())
    res = sweep(run, GRID, "mrr")
    chosen, bm25, vector = res.test
    assert (chosen.system, chosen.role, bm25.system, bm25.role, vector.system) == (
        "w0.65", "chosen", "bm25", "input", "vector"
    )  # fmt: skip
    assert bm25.per_question == {"T1": 0.5, "T2": 0.5, "T3": 1.0} == chosen.per_question
    assert vector.per_question == {"T1": 1.0, "T2": 1.0, "T3": 0.5}
    assert bm25.mean == pytest.approx(2 / 3) and vector.mean == pytest.approx(5 / 6)
    assert bm25.diff == 0.0 and vector.diff == pytest.approx(-1 / 6)
    # the inputs alone equal their own recorded per-question values
    for row in (bm25, vector):
        assert row.per_question == {q: v for q, v in _recorded(run, row.system).items() if q in row.per_question}
    # paired difference chosen - input with the test split design's paired interval over the test clusters (3
    # clusters, not measured: the nearest measured design's default, CR3; harness.stats.shown)
    assert res.paired_method == "cr3"
    ref = paired([1.0, 1.0, 0.5], [0.5, 0.5, 1.0], ["q:T1", "q:T2", "q:T3"], method="cr3", level=0.95)
    got = vector.paired_interval
    assert (got["lower"], got["upper"], got["method"]) == (ref.lower, ref.upper, "paired_cr3")
    assert bm25.paired_interval["lower"] == bm25.paired_interval["upper"] == 0.0
    assert res.dev_inputs == {"bm25": pytest.approx(0.875), "vector": pytest.approx(0.625)}
    d = res.to_dict()
    assert d["test"][1]["paired_interval"]["flags"]["degenerate"] is True  # chosen == bm25 on every question
    assert d["test"][2]["paired_interval"]["flags"]["degenerate"] is False


def test_rrf_k_sweep_agrees_with_the_runs_own_rrf_systems(tmp_path):
    run = write_run(tmp_path, questions(), extra=("rrf:k=1", "rrf:k=10", "rrf"))
    res = sweep(run, "1,10,60", "mrr", fusion="rrf")
    assert res.param == "k" and res.grid == [1.0, 10.0, 60.0] and res.fusion == "rrf"
    dev = [r for r, _k, split in questions() if split == "dev"]
    for k, name, m in zip(res.grid, ("rrf:k=1", "rrf:k=10", "rrf"), res.dev_means, strict=True):
        rec = _recorded(run, name)
        assert m == pytest.approx(sum(rec[q] for q in dev) / len(dev), abs=1e-12), k
    assert res.chosen_system == {1.0: "rrf:k=1", 10.0: "rrf:k=10", 60.0: "rrf"}[res.chosen_value]
    rec = _recorded(run, res.chosen_system)
    assert res.chosen.per_question == {q: rec[q] for q in res.chosen.per_question}
    assert "closest to 60" in res.tie_rule and [r.system for r in res.test][1:] == ["bm25", "vector"]
    # the default k grid
    assert sweep(run, None, "mrr", fusion="rrf").grid == [float(k) for k in range(5, 101, 5)]


def test_inputs_other_than_bm25_and_vector(tmp_path):
    run = write_run(tmp_path, questions())
    base = sweep(run, GRID, "mrr")
    # the weight on the first input: vector,bm25 at w equals bm25,vector at 1 - w
    swapped = sweep(run, GRID, "mrr", inputs=("vector", "bm25"))
    assert swapped.dev_means == pytest.approx(base.dev_means[::-1], abs=1e-12)
    assert [r.system for r in swapped.test][1:] == ["vector", "bm25"]
    # any system name: rename vector -> dense in the record
    renamed = tmp_path / "runs" / "dense"
    renamed.mkdir()
    for name in ("summary.json", "per_question.jsonl", "manifest.json"):
        text = (run / name).read_text()
        text = text.replace('"system": "vector"', '"system": "dense"').replace('"vector": {', '"dense": {')
        text = text.replace('"vector"\n', '"dense"\n').replace('"run_id": "r1"', '"run_id": "dense"')
        (renamed / name).write_text(text)
    man = json.loads((renamed / "manifest.json").read_text())  # a deliberate edit: record its hashes (else refused)
    man["content_sha256"] = record_hashes(renamed)
    (renamed / "manifest.json").write_text(json.dumps(man), encoding="utf-8")
    res = sweep(renamed, GRID, "mrr", inputs=("bm25", "dense"), goldset_path=tmp_path / "gold" / "r1.jsonl")
    assert res.dev_means == base.dev_means and res.chosen_system == "w0.65:bm25+dense"
    assert res.test_per_question == base.test_per_question
    with pytest.raises(HarnessInputError, match="'vector' not in run"):
        sweep(renamed, GRID, "mrr", goldset_path=tmp_path / "gold" / "r1.jsonl")
    with pytest.raises(HarnessInputError, match="exactly 2 systems"):
        sweep(run, GRID, "mrr", inputs=("bm25", "vector", "bm25x"))
    with pytest.raises(HarnessInputError, match="at least two distinct"):
        sweep(run, None, "mrr", fusion="rrf", inputs=("bm25", "bm25"))


def test_a_method_without_a_parameter_and_refusals(tmp_path):
    run = write_run(tmp_path, questions(), extra=("mnz",))
    res = sweep(run, None, "mrr", fusion="mnz")
    assert res.param is None and res.grid == [] and res.n_settings == 1 and res.chosen_system == "mnz"
    rec = _recorded(run, "mnz")
    assert res.chosen.per_question == {q: rec[q] for q in res.chosen.per_question}
    assert res.to_dict()["dev_curve"] == [{"system": "mnz", "dev_mean": res.dev_best}]
    with pytest.raises(HarnessInputError, match="takes no parameter"):
        sweep(run, "0.5", "mrr", fusion="mnz")
    with pytest.raises(HarnessInputError, match="--fusion: 'combsum'"):
        sweep(run, None, "mrr", fusion="combsum")
    with pytest.raises(HarnessInputError, match="--k '-1'"):
        sweep(run, "-1", "mrr", fusion="rrf")


def test_cli_shows_the_inputs_on_test_in_every_format(tmp_path):
    from typer.testing import CliRunner

    run = write_run(tmp_path, questions())
    cli = CliRunner()
    # --level: the single-metric sweep (the multi-metric one, the default, is tested in test_sweep_multi.py)
    one = ["--level", "document"]
    r = cli.invoke(app, ["sweep", "--run", str(run), "--fusion", "rrf", "--k", "1,60", *one])
    assert r.exit_code == 0, r.output
    text = r.stdout
    assert "(chosen)" in text and "bm25" in text and "vector" in text and "chosen - system" in text
    r = cli.invoke(app, ["sweep", "--run", str(run), "--format", "markdown", *one])
    assert r.exit_code == 0 and "| test | 3 | vector | 0.8333 |" in r.stdout and "w0.65 (chosen)" in r.stdout
    r = cli.invoke(app, ["sweep", "--run", str(run), "--format", "json", *one])
    env = json.loads(r.stdout)
    assert env["schema_version"] == 2 and env["data"]["test"][2]["diff"] == pytest.approx(-1 / 6)
    # 3 test clusters: the few-cluster warnings are in the output and on stderr
    assert any("df" in w for w in env["data"]["warnings"]) and "warning:" in r.stderr
    r = cli.invoke(app, ["sweep", "--run", str(run), "--fusion", "rrf", "--w", "0.5"])
    assert r.exit_code == 2 and "--w: applies to --fusion wsum only" in r.output
