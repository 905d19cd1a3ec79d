"""Bringing your own rankings (``harness evaluate``): the import refuses to guess (issue 17 item 3).

Each trap the new-user trial found has a test here: ids that match nothing, non-finite scores, constant scores that
used to discard the rank column, duplicate lines, a one-level file reported as "no ranking", and the export rules
(cut at the recorded depth, scores strictly decreasing at float32, alternatives in the qrels)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import tiny_records, write_tiny_goldset
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import HarnessInputError
from harness.evaluation.trec import KnownIds, export_scores, read_rankings, trec_qrels_lines, trec_run_lines
from harness.goldset.io import load_goldset

runner = CliRunner()

#: a TREC run of the tiny gold set: every question's gold document first (MRR 1), then the others
GOOD = {
    "SP-001": ["ley-a", "ley-b", "dof-c", "dof-d"],
    "SP-002": ["dof-c", "ley-a", "ley-b", "dof-d"],
    "MD-001": ["ley-b", "dof-d", "ley-a", "dof-c"],
}


def _trec(path: Path, ranked: dict[str, list[str]], score=lambda r: 10.0 - r, tag: str = "mine") -> Path:
    lines = [f"{q} Q0 {d} {r} {score(r)} {tag}" for q, docs in ranked.items() for r, d in enumerate(docs, start=1)]
    path.write_text("\n".join(lines) + "\n", "utf-8")
    return path


def _evaluate(goldset: Path, rankings: Path, tmp_path: Path, *extra: str):
    return runner.invoke(
        app,
        [
            "evaluate",
            "--goldset",
            str(goldset),
            "--rankings",
            str(rankings),
            "--runs-dir",
            str(tmp_path / "runs"),
            "--format",
            "json",
            *extra,
        ],
    )


def _mrr(stdout: str, system: str = "mine") -> float:
    return json.loads(stdout)["data"]["systems"][system]["all"]["overall"]["mrr"]["mean"]


def test_ids_that_match_nothing_are_refused_naming_file_and_line(tiny_goldset: Path, tmp_path: Path):
    f = _trec(tmp_path / "prefixed.run", {q: [f"doc:{d}" for d in ds] for q, ds in GOOD.items()})
    r = _evaluate(tiny_goldset, f, tmp_path)
    assert r.exit_code == 2, r.output
    assert f"{f}:1: field id: none of the 12 ids" in r.stderr and "'doc:ley-a'" in r.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", "NaN", "Infinity"])
def test_a_score_that_is_not_finite_is_refused_naming_file_line_and_question(
    tiny_goldset: Path, tmp_path: Path, bad: str
):
    f = _trec(tmp_path / "bad.run", GOOD, score=lambda r: bad if r == 3 else 10.0 - r)
    r = _evaluate(tiny_goldset, f, tmp_path)
    assert r.exit_code == 2, r.output
    assert f"{f}:3: question SP-001: field score: score '{bad}' is not finite" in r.stderr


def test_a_jsonl_score_that_is_not_finite_is_refused(tmp_path: Path):
    f = tmp_path / "r.jsonl"
    f.write_text('{"qid": "Q1", "docs": [["a", 1.0]]}\n{"qid": "Q2", "docs": [["a", 2.0], ["b", NaN]]}\n', "utf-8")
    with pytest.raises(HarnessInputError, match=r"r\.jsonl:2: question Q2: field docs\[1\]: score nan is not finite"):
        read_rankings(f)


def test_constant_scores_follow_the_rank_column_and_say_so(tiny_goldset: Path, tmp_path: Path):
    """The trial's MRR 0.673 -> 0.218: with every score equal, the id order used to replace the rank column."""
    scored = _evaluate(tiny_goldset, _trec(tmp_path / "scored.run", GOOD), tmp_path)
    flat = _evaluate(tiny_goldset, _trec(tmp_path / "flat.run", GOOD, score=lambda r: 1.0), tmp_path)
    assert scored.exit_code == 0 and flat.exit_code == 0, flat.output
    assert _mrr(scored.stdout) == 1.0 and _mrr(flat.stdout) == 1.0
    warning = "constant scores at the document level in 3 of 3 questions, e.g. SP-001, SP-002, MD-001"
    assert warning in flat.stderr and "rank column" in flat.stderr and warning not in scored.stderr
    assert any(warning in w for w in json.loads(flat.stdout)["data"]["warnings"])
    # the rank column decides, not the file order
    shuffled = tmp_path / "shuffled.run"
    lines = (tmp_path / "flat.run").read_text("utf-8").splitlines()
    shuffled.write_text("\n".join(reversed(lines)) + "\n", "utf-8")
    back = read_rankings(shuffled).results["mine"]
    assert [d for d, _ in back["SP-002"].docs] == GOOD["SP-002"]


def test_constant_scores_in_jsonl_follow_the_list_order(tmp_path: Path):
    f = tmp_path / "r.jsonl"
    f.write_text('{"qid": "Q1", "docs": [["z", 0.5], ["a", 0.5], ["m", 0.5]]}\n', "utf-8")
    got = read_rankings(f)
    assert [d for d, _ in got.results["external"]["Q1"].docs] == ["z", "a", "m"]
    assert "list order" in got.warnings[0]


def test_duplicate_lines_keep_the_first_and_warn(tiny_goldset: Path, tmp_path: Path):
    f = tmp_path / "dup.run"
    # SP-001: ley-a first at a low score, then again at the top: the first line (rank 3 of 3) is kept
    f.write_text(
        "SP-001 Q0 ley-b 1 9 mine\nSP-001 Q0 dof-c 2 8 mine\nSP-001 Q0 ley-a 3 7 mine\nSP-001 Q0 ley-a 4 99 mine\n",
        "utf-8",
    )
    got = read_rankings(f)
    assert got.results["mine"]["SP-001"].docs == [("ley-b", 9.0), ("dof-c", 8.0), ("ley-a", 7.0)]
    assert any("1 duplicate lines" in w and "SP-001 ley-a (lines 3, 4)" in w for w in got.warnings)
    r = _evaluate(tiny_goldset, f, tmp_path)
    assert r.exit_code == 0 and "duplicate lines" in r.stderr
    assert json.loads(r.stdout)["data"]["systems"]["mine"]["all"]["overall"]["mrr"]["mean"] == pytest.approx(1 / 9)


def test_a_document_only_file_is_not_reported_as_missing_rankings(tiny_goldset: Path, tmp_path: Path):
    """The trial's "42 of 42 questions have no ranking" for a file that held document rankings only."""
    f = _trec(tmp_path / "docs.run", GOOD)
    r = _evaluate(tiny_goldset, f, tmp_path, "--run-id", "d")
    assert r.exit_code == 0, r.output
    sl = json.loads(r.stdout)["data"]["systems"]["mine"]["all"]
    assert sl["counts"]["n_missing"] == 0 and sl["counts"]["n_evaluated"] == 3
    assert sl["overall"]["evidence_recall@10"]["mean"] is None and sl["overall"]["mrr"]["mean"] == 1.0
    assert "document rankings only; the chunk level is not given" in r.stderr
    md = _evaluate(tiny_goldset, f, tmp_path, "--format", "markdown")
    assert "have no ranking" not in md.stdout and "chunk level is not given" in md.stdout
    # a question absent from the file is still missing
    del_one = _trec(tmp_path / "two.run", {q: v for q, v in GOOD.items() if q != "MD-001"})
    r2 = _evaluate(tiny_goldset, del_one, tmp_path)
    assert json.loads(r2.stdout)["data"]["systems"]["mine"]["all"]["counts"]["missing_qids"] == ["MD-001"]


def test_ids_the_corpus_does_not_hold_are_counted_with_examples(tmp_path: Path):
    known = KnownIds(frozenset({"a", "b"}), frozenset({"a#0"}), "corpus c", complete=True)
    f = tmp_path / "r.jsonl"
    f.write_text(
        '{"qid": "Q1", "docs": [["a", 3], ["x1", 2], ["x2", 1]], "chunks": [["a#0", 1], ["a#9", 0.5]]}\n'
        '{"qid": "Q2", "docs": [["b", 3], ["x3", 2], ["x4", 1], ["x5", 0.5], ["x6", 0.25], ["x7", 0.1]]}\n',
        "utf-8",
    )
    got = read_rankings(f, known_ids=known)
    doc_w = next(w for w in got.warnings if "document ids are not in the corpus c" in w)
    assert "7 of 9 document ids" in doc_w and "x1, x2, x3, x4, x5, ... (2 more)" in doc_w
    assert any("1 of 2 chunk ids are not in the corpus c" in w and "a#9" in w for w in got.warnings)


def test_with_the_corpus_evaluate_counts_ids_the_corpus_does_not_hold(
    tiny_corpus: Path, tiny_goldset: Path, tmp_path: Path
):
    ranked = {q: [*ds[:2], "ley-zz", f"{ds[0]}#0", f"{ds[0]}#99"] for q, ds in GOOD.items()}
    f = _trec(tmp_path / "some.run", ranked)
    r = _evaluate(tiny_goldset, f, tmp_path, "--corpus", str(tiny_corpus), "--workdir", str(tmp_path / "wd"))
    assert r.exit_code == 0, r.output
    assert f"warning: {f}: system mine: 3 of 9 document ids are not in the corpus corpus@" in r.stderr
    assert "e.g. ley-zz\n" in r.stderr and "3 of 6 chunk ids are not in the corpus" in r.stderr
    assert "e.g. ley-a#99, dof-c#99, ley-b#99" in r.stderr
    # without the corpus the same file passes silently on this count (the gold set cannot tell)
    assert "not in the" not in _evaluate(tiny_goldset, f, tmp_path).stderr


def test_a_gold_set_knows_chunks_of_its_documents(tiny_goldset: Path):
    known = KnownIds.of_goldset(load_goldset(tiny_goldset))
    assert known.knows("ley-a#7", "chunk") and not known.knows("ley-zz#0", "chunk")
    assert known.knows("dof-d", "document") and not known.knows("dof-zz", "document")


def test_the_rank_column_must_be_an_integer(tmp_path: Path):
    f = tmp_path / "r.run"
    f.write_text("Q1 Q0 a 1 2.0 s\nQ1 Q0 b first 1.0 s\n", "utf-8")
    with pytest.raises(HarnessInputError, match=r"r\.run:2: field rank: 'first' is not an integer"):
        read_rankings(f)


# ---------------------------------------------------------------------------------------------------------------
# Exports


def test_exports_are_cut_at_the_recorded_depths(tiny_goldset: Path, tmp_path: Path):
    f = _trec(tmp_path / "long.run", {q: ds + [f"other-{i}" for i in range(30)] for q, ds in GOOD.items()})
    r = _evaluate(tiny_goldset, f, tmp_path, "--run-id", "cut", "--doc-depth", "20")
    assert r.exit_code == 0, r.output
    lines = (tmp_path / "runs" / "cut" / "trec" / "mine.document.run").read_text("utf-8").splitlines()
    assert len(lines) == 3 * 20 and max(int(ln.split()[3]) for ln in lines) == 20


def test_exported_ties_are_strictly_decreasing_at_float32_in_the_harness_order():
    lines = trec_run_lines("s", "document", {"Q": [("a", 0.5), ("b", 0.5), ("c", 0.5), ("d", 0.25)]})
    scores = [np.float32(ln.split()[4]) for ln in lines]
    assert all(x > y for x, y in zip(scores, scores[1:], strict=False))
    assert [ln.split()[2] for ln in lines] == ["a", "b", "c", "d"] and scores[0] == np.float32(0.5)
    # distinct in float64 but equal in float32 (what trec_eval compares): nudged apart too
    close = export_scores([11.18702131, 11.18702130])
    assert np.float32(close[0]) > np.float32(close[1])


def test_scores_beyond_float32_are_exported_as_ranks():
    assert export_scores([1e300, 5.0, 5.0]) == [3.0, 2.0, 1.0]
    assert export_scores([2.0, -1e300]) == [2.0, 1.0]


@given(st.lists(st.floats(-1e30, 1e30, allow_nan=False, allow_infinity=False), min_size=1, max_size=60))
def test_export_scores_strictly_decrease_at_float32_and_read_back_exactly(values):
    ordered = sorted(values, reverse=True)
    out = export_scores(ordered)
    f32 = [np.float32(float(f"{v:.9g}")) for v in out]
    assert all(x > y for x, y in zip(f32, f32[1:], strict=False))
    assert all(float(np.float32(v)) == v for v in out)
    assert out[0] == float(np.float32(ordered[0]))


def test_qrels_mark_every_alternative_relevant(tiny_corpus: Path, tmp_path: Path):
    recs = tiny_records()
    recs[0]["gold_documents"][0]["alternatives"] = [{"document_id": "ley-b"}, {"document_id": "dof-c"}]
    gs = load_goldset(write_tiny_goldset(tmp_path / "gs", tiny_corpus, recs))
    qrels = trec_qrels_lines(gs, "document")
    assert {"SP-001 0 ley-a 2", "SP-001 0 ley-b 2", "SP-001 0 dof-c 2"} <= set(qrels)
    # an alternative that is also a lower-graded gold document listed earlier satisfies the required one: grade 2,
    # so Success@k at relevance level 2 credits it as the harness's hit@k does
    recs = tiny_records()
    useful = {**recs[2]["gold_documents"][1], "grade": 1}
    recs[2]["gold_documents"] = [useful, {**recs[2]["gold_documents"][0], "alternatives": [{"document_id": "dof-d"}]}]
    gs = load_goldset(write_tiny_goldset(tmp_path / "gs2", tiny_corpus, recs))
    lines = [x for x in trec_qrels_lines(gs, "document") if x.startswith("MD-001 ")]
    assert lines == ["MD-001 0 dof-d 2", "MD-001 0 ley-b 2"]
