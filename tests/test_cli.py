"""The command line end to end on a tiny corpus written by the test, and its answers to bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import tiny_records, write_tiny_goldset
from typer.testing import CliRunner

from harness.cli import app
from harness.progress import PLAIN_LINE

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def test_ingest_then_noop(tiny_corpus: Path, tmp_path: Path):
    wd = tmp_path / "wd"
    r1 = invoke("ingest", tiny_corpus, "--workdir", wd)
    assert r1.exit_code == 0, r1.output
    assert "4 documents" in r1.output and "ingested" in r1.output
    r2 = invoke("ingest", tiny_corpus, "--workdir", wd)
    assert r2.exit_code == 0 and "unchanged, nothing to do" in r2.output
    # a changed corpus gets a new hash, hence a new database
    (tiny_corpus / "leyes" / "ley_a.md").write_text("# Otra\n\ntexto nuevo\n", "utf-8")
    r3 = invoke("ingest", tiny_corpus, "--workdir", wd)
    assert r3.exit_code == 0 and "ingested" in r3.output
    assert len(list((wd / "corpora").iterdir())) == 2


def test_run_bm25_prints_tables_and_writes_record(tiny_corpus: Path, tiny_goldset: Path, tmp_path: Path):
    wd, runs = tmp_path / "wd", tmp_path / "runs"
    r = invoke(
        "run",
        "--corpus",
        tiny_corpus,
        "--goldset",
        tiny_goldset,
        "--systems",
        "bm25",
        "--workdir",
        wd,
        "--runs-dir",
        runs,
        "--run-id",
        "r1",
        "--bootstrap-reps",
        "200",
    )
    assert r.exit_code == 0, r.output
    assert "mrr" in r.output and "recall@10" in r.output and "all_hop@10" in r.output
    assert "per category" in r.output and str(runs / "r1") in r.output
    rec = runs / "r1"
    for name in (
        "manifest.json",
        "per_question.jsonl",
        "summary.json",
        "trec/qrels.document.txt",
        "trec/bm25.document.run",
    ):
        assert (rec / name).exists(), name
    man = json.loads((rec / "manifest.json").read_text())
    assert man["depths"] == {"document": 50, "chunk": 200} and man["schema_version"] == 3
    assert man["corpus"]["chunker_id"] == "md-words-v1" and len(man["goldset"]["sha256"]) == 64
    rows = [json.loads(x) for x in (rec / "per_question.jsonl").read_text().splitlines()]
    assert {x["qid"] for x in rows} == {"SP-001", "SP-002", "MD-001"}
    sp1 = next(x for x in rows if x["qid"] == "SP-001")
    assert sp1["rankings"]["document"][0][0] == "ley-a" and sp1["metrics"]["mrr"] == 1.0
    # an existing run id is never overwritten
    r2 = invoke(
        "run",
        "--corpus",
        tiny_corpus,
        "--goldset",
        tiny_goldset,
        "--systems",
        "bm25",
        "--workdir",
        wd,
        "--runs-dir",
        runs,
        "--run-id",
        "r1",
    )
    assert r2.exit_code == 2 and "exists already" in r2.output


def test_run_json_output(tiny_corpus: Path, tiny_goldset: Path, tmp_path: Path):
    r = invoke(
        "run",
        "--corpus",
        tiny_corpus,
        "--goldset",
        tiny_goldset,
        "--workdir",
        tmp_path / "wd",
        "--runs-dir",
        tmp_path / "runs",
        "--json",
        "--bootstrap-reps",
        "200",
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["kind"] == "run" and out["schema_version"] == 3 and Path(out["path"]).is_dir()
    summary = out["data"]
    assert "bm25" in summary["systems"]
    assert summary["systems"]["bm25"]["all"]["n_questions"] == 3


def test_evaluate_external_rankings_trec_and_jsonl(tiny_goldset: Path, tmp_path: Path):
    trec = tmp_path / "mine.run"
    trec.write_text(
        "SP-001 Q0 ley-b 1 2.0 mine\nSP-001 Q0 ley-a 2 1.0 mine\nSP-002 Q0 dof-c 1 5.0 mine\n"
        "MD-001 Q0 ley-b 1 3.0 mine\nMD-001 Q0 dof-d 2 2.0 mine\n",
        "utf-8",
    )
    r = invoke("evaluate", "--goldset", tiny_goldset, "--rankings", trec, "--runs-dir", tmp_path / "runs", "--json")
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)["data"]["systems"]["mine"]["all"]["overall"]
    assert s["mrr"]["mean"] == pytest.approx((1 / 2 + 1 + 1) / 3)
    assert s["all_hop@10"]["mean"] == pytest.approx(1.0)
    jl = tmp_path / "mine.jsonl"
    jl.write_text(
        json.dumps({"qid": "SP-001", "system": "x", "docs": [["ley-a", 1.0]], "chunks": [["ley-a#0", 1.0]]}) + "\n",
        "utf-8",
    )
    r = invoke("evaluate", "--goldset", tiny_goldset, "--rankings", jl, "--runs-dir", tmp_path / "runs", "--json")
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)["data"]["systems"]["x"]["all"]
    # averages run over the whole gold set: the two missing questions score 0
    assert s["overall"]["mrr"]["mean"] == pytest.approx(1 / 3)
    assert s["overall"]["evidence_recall@1"]["mean"] == pytest.approx(1 / 3)


def _run_args(corpus, goldset, tmp_path):
    return (
        "run",
        "--corpus",
        corpus,
        "--goldset",
        goldset,
        "--workdir",
        tmp_path / "wd",
        "--runs-dir",
        tmp_path / "runs",
    )


def _assert_clean(tmp_path: Path):
    runs = tmp_path / "runs"
    assert not runs.exists() or not any(runs.iterdir()), "half-written run record left behind"
    corpora = tmp_path / "wd" / "corpora"
    if corpora.exists():
        assert not [p for p in corpora.rglob("*.tmp")], "temporary database left behind"


@pytest.mark.parametrize(
    ("breaker", "message"),
    [
        ("missing_dir", "corpus directory not found"),
        ("empty", "empty corpus"),
        ("non_utf8", "not valid UTF-8"),
        ("duplicate_doc_id", "field doc_id: duplicate"),
        ("escaping_path", "escapes the corpus directory"),
        ("malformed_metadata", "malformed JSON"),
    ],
)
def test_bad_corpus_inputs(breaker: str, message: str, tiny_corpus: Path, tiny_goldset: Path, tmp_path: Path):
    corpus = tiny_corpus
    meta = corpus / "metadata.jsonl"
    lines = meta.read_text().splitlines()
    if breaker == "missing_dir":
        corpus = tmp_path / "nope"
    elif breaker == "empty":
        corpus = tmp_path / "empty"
        corpus.mkdir()
    elif breaker == "non_utf8":
        (corpus / "leyes" / "ley_a.md").write_bytes(b"# T\n\ncaf\xe9\n")
    elif breaker == "duplicate_doc_id":
        meta.write_text("\n".join(lines + [lines[0]]) + "\n")
    elif breaker == "escaping_path":
        obj = json.loads(lines[0])
        obj["path"] = "../outside.md"
        (tmp_path / "outside.md").write_text("x")
        meta.write_text("\n".join([json.dumps(obj)] + lines[1:]) + "\n")
    elif breaker == "malformed_metadata":
        meta.write_text("\n".join(lines[:2] + ['{"doc_id": "x", "path": ']) + "\n")
    r = invoke(*_run_args(corpus, tiny_goldset, tmp_path))
    assert r.exit_code == 2, r.output
    assert message in r.output
    lines = [x for x in r.output.strip().splitlines() if not PLAIN_LINE.match(x)]  # progress lines aside
    assert len(lines) == 1, "error must be one line"
    _assert_clean(tmp_path)


def test_gold_record_naming_unknown_document(tiny_corpus: Path, tmp_path: Path):
    recs = tiny_records()
    recs[1]["gold_documents"][0]["document_id"] = "no-such-doc"
    gs = write_tiny_goldset(tmp_path / "gs", tiny_corpus, recs)
    r = invoke(*_run_args(tiny_corpus, gs, tmp_path))
    assert r.exit_code == 2
    assert "tiny.jsonl:2: record SP-002: field gold_documents[0].document_id: unknown document" in r.output
    _assert_clean(tmp_path)


def test_malformed_goldset_line(tiny_corpus: Path, tiny_goldset: Path, tmp_path: Path):
    f = tiny_goldset / "tiny.jsonl"
    f.write_text(f.read_text() + '{"id": "X-1", "category": \n')
    r = invoke(*_run_args(tiny_corpus, tiny_goldset, tmp_path))
    assert r.exit_code == 2 and "tiny.jsonl:4: malformed JSON" in r.output
    _assert_clean(tmp_path)


def test_goldset_missing_field_names_line_and_field(tiny_corpus: Path, tmp_path: Path):
    recs = tiny_records()
    del recs[2]["gold_documents"][1]["document_id"]  # relpath & co. are optional in the schema now
    gs = write_tiny_goldset(tmp_path / "gs", tiny_corpus, recs)
    r = invoke(*_run_args(tiny_corpus, gs, tmp_path))
    assert r.exit_code == 2
    assert "tiny.jsonl:3: record MD-001: field gold_documents[1].document_id: Field required" in r.output


@pytest.mark.parametrize(
    ("override", "message"),
    [({"corpus_hash": "0" * 64}, "field corpus_hash"), ({"chunker_version": "md-words-v0"}, "md-words-v0")],
)
def test_goldset_against_other_corpus_or_chunker(override, message, tiny_corpus: Path, tmp_path: Path):
    gs = write_tiny_goldset(tmp_path / "gs", tiny_corpus, **override)
    r = invoke(*_run_args(tiny_corpus, gs, tmp_path))
    assert r.exit_code == 2, r.output
    assert message in r.output
    _assert_clean(tmp_path)


def test_unknown_system(tiny_corpus: Path, tiny_goldset: Path, tmp_path: Path):
    r = invoke(*_run_args(tiny_corpus, tiny_goldset, tmp_path), "--systems", "bm42")
    assert r.exit_code == 2 and "unknown system 'bm42'" in r.output


def test_document_only_rankings_leave_evidence_metrics_unavailable(tiny_goldset: Path, tmp_path: Path):
    """A document-only TREC file must not score evidence metrics as 0 (a false regression in compare)."""
    doc_run = tmp_path / "docs.run"
    doc_run.write_text("SP-001 Q0 ley-a 1 2.0 sys\nSP-002 Q0 dof-c 1 2.0 sys\nMD-001 Q0 ley-b 1 2.0 sys\n", "utf-8")
    both = tmp_path / "both.jsonl"
    both.write_text(
        "\n".join(
            json.dumps({"qid": q, "system": "sys", "docs": [[d, 2.0]], "chunks": [[d + "#0", 1.0]]})
            for q, d in (("SP-001", "ley-a"), ("SP-002", "dof-c"), ("MD-001", "ley-b"))
        )
        + "\n",
        "utf-8",
    )
    runs = tmp_path / "runs"
    r = invoke("evaluate", "--goldset", tiny_goldset, "--rankings", doc_run, "--runs-dir", runs, "--run-id", "d")
    assert r.exit_code == 0, r.output
    assert "no chunk rankings" in r.output and "n/a" in r.output
    summary = json.loads((runs / "d" / "summary.json").read_text())
    assert summary["systems"]["sys"]["all"]["overall"]["evidence_recall@10"]["mean"] is None
    assert (
        invoke("evaluate", "--goldset", tiny_goldset, "--rankings", both, "--runs-dir", runs, "--run-id", "b").exit_code
        == 0
    )
    r = invoke("compare", runs / "b", runs / "d", "--metrics", "mrr,evidence_recall@10", "--format", "json")
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)["data"]
    assert [c["metric"] for c in rep["comparisons"]] == ["mrr"]
    assert any("evidence_recall@10" in n for n in rep["notes"])


def test_jsonl_rankings_line_without_rankings_is_refused(tiny_goldset: Path, tmp_path: Path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"qid": "SP-001", "ranking": ["ley-a"]}\n', "utf-8")
    r = invoke("evaluate", "--goldset", tiny_goldset, "--rankings", bad, "--runs-dir", tmp_path / "runs")
    assert r.exit_code == 2
    assert "bad.jsonl:1: field docs/chunks: missing" in r.output and "ranking" in r.output


def test_outputs_have_normal_permissions(tiny_corpus: Path, tiny_goldset: Path, tmp_path: Path):
    runs = tmp_path / "runs"
    r = invoke(
        "run",
        "--corpus",
        tiny_corpus,
        "--goldset",
        tiny_goldset,
        "--workdir",
        tmp_path / "wd",
        "--runs-dir",
        runs,
        "--run-id",
        "p",
        "--bootstrap-reps",
        "200",
    )
    assert r.exit_code == 0
    out = tmp_path / "report.md"
    assert invoke("report", runs / "p", "--format", "markdown", "--out", out).exit_code == 0
    for p in (runs / "p", runs / "p" / "summary.json", out):
        assert p.stat().st_mode & 0o044 == 0o044, p  # group/other readable under the default umask
