"""Issue 18 item 10: the same inputs in NFD and in NFC are the same inputs.

Before the fix the questions of a gold set written in NFD (decomposed accents) changed the vector results of the same
questions, and an id in NFD matched nothing. Gold sets, ranking files and corpus metadata are now read in NFC
(:mod:`harness.nfc`); corpus text is NFC already (the chunker's rule 1). Each test fails on ``main`` before the fix.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
from conftest import TINY_DOCS, tiny_records, write_tiny_corpus, write_tiny_goldset

from harness.corpus.source import scan_corpus
from harness.errors import HarnessInputError
from harness.evaluation.pipeline import RunOptions, evaluate_rankings, run
from harness.evaluation.runs import load_run
from harness.evaluation.trec import read_rankings
from harness.goldset.io import load_goldset
from harness.nfc import nfc
from harness.retrieve.vector import VectorOptions

OPTS = RunOptions(bootstrap_reps=200, system_defaults={"vector": VectorOptions(model="wordllama")})  # unit model


def nfd(value):
    """Every string of a JSON value in NFD."""
    if isinstance(value, str):
        return unicodedata.normalize("NFD", value)
    if isinstance(value, dict):
        return {nfd(k): nfd(v) for k, v in value.items()}
    if isinstance(value, list):
        return [nfd(v) for v in value]
    return value


def _to_nfd(path: Path) -> None:
    """Rewrite a JSONL file with every string in NFD (``ensure_ascii=False``, so the bytes change)."""
    text = path.read_text("utf-8")
    lines = [json.dumps(nfd(json.loads(x)), ensure_ascii=False) for x in text.splitlines() if x.strip()]
    path.write_text("\n".join(lines) + "\n", "utf-8")
    assert path.read_text("utf-8") != text


def _rows(path: Path) -> dict[tuple[str, str], tuple[dict, dict]]:
    return {(r.system, r.qid): (r.metrics, r.rankings.model_dump()) for r in load_run(path).per_question}


def test_the_tiny_gold_set_in_nfd_gives_exactly_the_nfc_runs_metrics(tmp_path: Path):
    corpus = write_tiny_corpus(tmp_path / "corpus")
    nfc_set = write_tiny_goldset(tmp_path / "nfc", corpus)
    nfd_set = write_tiny_goldset(tmp_path / "nfd", corpus)
    _to_nfd(nfd_set / "tiny.jsonl")  # the manifest is ASCII
    systems = ["bm25", "vector", "rrf"]
    kw = dict(workdir=tmp_path / "wd", runs_dir=tmp_path / "runs", options=OPTS)
    a = run(nfc_set, corpus, systems, run_id="nfc", **kw)
    b = run(nfd_set, corpus, systems, run_id="nfd", **kw)
    ra, rb = _rows(a), _rows(b)
    assert ra == rb
    assert len(ra) == 9
    sa, sb = load_run(a).summary.model_dump(), load_run(b).summary.model_dump()
    assert sa == sb
    questions = [r.question for r in load_goldset(nfd_set).records]
    assert questions == [r["question"] for r in tiny_records()]  # read back in NFC


def _accented_corpus(root: Path, form: str) -> Path:
    """The tiny corpus with document ids ``ley-año``, ``ley-bosqué`` (and titles) written in ``form``."""
    write_tiny_corpus(root)
    meta = [json.loads(x) for x in (root / "metadata.jsonl").read_text("utf-8").splitlines()]
    rename = {"ley-a": "ley-año", "ley-b": "ley-bosqué"}
    for m in meta:
        m["doc_id"] = unicodedata.normalize(form, rename.get(m["doc_id"], m["doc_id"]))
        m["title"] = unicodedata.normalize(form, m["title"])
    (root / "metadata.jsonl").write_text("\n".join(json.dumps(m, ensure_ascii=False) for m in meta) + "\n", "utf-8")
    return root


def _accented_records() -> list[dict]:
    text = json.dumps(tiny_records(), ensure_ascii=False)
    return json.loads(text.replace('"ley-a', '"ley-año').replace('"ley-b', '"ley-bosqué'))


def test_corpus_metadata_in_nfd_is_read_in_nfc_and_hashes_alike(tmp_path: Path):
    a = scan_corpus(_accented_corpus(tmp_path / "nfc" / "c", "NFC"), name="c")
    b = scan_corpus(_accented_corpus(tmp_path / "nfd" / "c", "NFD"), name="c")
    assert [d.doc_id for d in b.docs] == [d.doc_id for d in a.docs]
    assert "ley-año" in {d.doc_id for d in b.docs}
    assert [d.title for d in b.docs] == [d.title for d in a.docs]
    assert b.corpus_hash == a.corpus_hash


def test_an_nfd_corpus_and_an_nfc_gold_set_meet(tmp_path: Path):
    """Gold ids in NFC find the documents of a corpus whose metadata is NFD: the same metrics as an NFC corpus."""
    records = _accented_records()
    out = {}
    for form in ("NFC", "NFD"):
        corpus = _accented_corpus(tmp_path / form / "corpus", form)
        gs = write_tiny_goldset(tmp_path / form / "gs", corpus, records)
        path = run(
            gs, corpus, ["bm25"], workdir=tmp_path / form / "wd", runs_dir=tmp_path / "runs", run_id=form, options=OPTS
        )
        out[form] = _rows(path)
    assert out["NFC"] == out["NFD"]
    assert out["NFC"][("bm25", "SP-001")][0]["recall@10"] == 1.0


def test_rankings_with_nfd_ids_score_like_nfc_ones(tmp_path: Path):
    corpus = _accented_corpus(tmp_path / "corpus", "NFC")
    gs = write_tiny_goldset(tmp_path / "gs", corpus, _accented_records())
    base = run(gs, corpus, ["bm25"], workdir=tmp_path / "wd", runs_dir=tmp_path / "runs", run_id="base", options=OPTS)
    trec = (base / "trec" / "bm25.document.run").read_text("utf-8")
    assert "ley-año" in trec
    nfd_trec = tmp_path / "nfd.run"
    nfd_trec.write_text(unicodedata.normalize("NFD", trec.replace(" bm25\n", " sístema\n")), "utf-8")
    nfd_jsonl = tmp_path / "nfd.jsonl"
    rows = [
        {"qid": r.qid, "system": "sístema", "docs": [list(p) for p in r.rankings.document]}
        for r in load_run(base).per_question
    ]
    nfd_jsonl.write_text("\n".join(json.dumps(nfd(x), ensure_ascii=False) for x in rows) + "\n", "utf-8")
    expected = load_run(base).metric_vector("bm25", "recall@10")
    assert expected["SP-001"] == 1.0
    for i, f in enumerate((nfd_trec, nfd_jsonl)):
        assert set(read_rankings(f).results) == {"sístema"}
        ev = load_run(evaluate_rankings(gs, f, runs_dir=tmp_path / "runs", run_id=f"ev{i}", options=OPTS))
        assert ev.systems == ["sístema"]
        for m in ("mrr", "recall@10", "all_hop@10", "ndcg@10"):
            assert ev.metric_vector("sístema", m) == load_run(base).metric_vector("bm25", m), (f.name, m)


def test_file_names_in_nfd_give_nfc_ids_and_are_still_read(tmp_path: Path):
    root = tmp_path / "c"
    name = unicodedata.normalize("NFD", "Ley-de-Año")
    (root / "leyes").mkdir(parents=True)
    (root / "leyes" / f"{name}.md").write_text(TINY_DOCS["ley-a"][3], "utf-8")
    src = scan_corpus(root)
    (doc,) = src.docs
    assert doc.doc_id == "leyes/Ley-de-Año" and doc.path == f"leyes/{name}.md"  # the path as the file system has it
    (root / "leyes" / "Ley-de-Año.md").write_text(TINY_DOCS["ley-b"][3], "utf-8")
    with pytest.raises(HarnessInputError, match="differ only in their Unicode form"):
        scan_corpus(root)


def test_nfc_keeps_paths_and_leaves_nfc_text_equal():
    d = unicodedata.normalize("NFD", "año")
    assert nfc({"a": [d, (d, 1)], d: None, "relpath": d}, keep={"relpath"}) == {
        "a": ["año", ("año", 1)],
        "año": None,
        "relpath": d,
    }
    text = "¿Por cuántos años?"
    assert nfc(text) is text
