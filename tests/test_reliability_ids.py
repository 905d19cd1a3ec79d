"""Ids that a TREC file cannot hold are refused where they enter, naming the record (issue 26, items 10 and 11):
empty ids and ids with whitespace or control characters (plugin results, rankings files, gold-set imports), and
``#`` in BEIR document ids (the chunk-id separator: a run scored MRR 1.0 and its own export 0.0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_import import BEIR_CORPUS, write_beir

from harness.curation.importers import import_beir, read_queries, read_trec_qrels
from harness.errors import HarnessInputError
from harness.evaluation.trec import read_rankings
from harness.ids import check_item_id, id_problem
from harness.retrieve.plugin import check_results

BAD_IDS = ["", "a b", "a\nb", "a\tb", "a\rb", "doc\x1b[32m", "a\u00a0b"]


def test_the_id_rule_golden():
    for bad in BAD_IDS:
        assert id_problem(bad) is not None, repr(bad)
    for good in ("doc1", "doc/2", "ley-a#0", "ñandú", "42"):
        assert id_problem(good) is None
    assert "holds '#'" in id_problem("a#1", document=True)
    assert check_item_id(7, "w") == "7"
    with pytest.raises(HarnessInputError, match=r"^w: id 'a b' holds whitespace"):
        check_item_id("a b", "w")


@pytest.mark.parametrize("bad", BAD_IDS)
def test_plugin_results_with_such_ids_are_refused_naming_the_result(bad):
    with pytest.raises(HarnessInputError, match=r"^system mine: result 1: chunks\[0\]: id "):
        check_results([{"docs": [("ley-a", 1.0)]}, {"chunks": [(bad, 1.0)]}], 2, 10, 10, where="system mine")


@pytest.mark.parametrize("bad", BAD_IDS)
def test_jsonl_rankings_with_such_ids_are_refused_naming_the_line(tmp_path, bad):
    path = tmp_path / "r.jsonl"
    lines = [{"qid": "q1", "docs": [["ley-a", 2.0]]}, {"qid": "q2", "docs": [["ley-a", 2.0], [bad, 1.0]]}]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", "utf-8")
    with pytest.raises(HarnessInputError, match=rf"^{path}:2: field docs\[1\]: id "):
        read_rankings(path)
    path.write_text(json.dumps({"qid": bad, "docs": ["ley-a"]}) + "\n", "utf-8")
    with pytest.raises(HarnessInputError, match=rf"^{path}:1: field qid: id "):
        read_rankings(path)


def test_trec_rankings_with_control_characters_in_ids_are_refused(tmp_path):
    path = tmp_path / "r.trec"
    path.write_text("q1 Q0 ley-a 1 2.0 mine\nq1 Q0 ley\x1b[31m 2 1.0 mine\n", "utf-8")
    with pytest.raises(HarnessInputError, match=rf"^{path}:2: id 'ley\\x1b\[31m' holds a control character"):
        read_rankings(path)
    path.write_text("q\x07 Q0 ley-a 1 2.0 mine\n", "utf-8")
    with pytest.raises(HarnessInputError, match=rf"^{path}:1: query id 'q\\x07' holds a control character"):
        read_rankings(path)


def test_imports_refuse_such_ids_naming_file_and_line(tmp_path: Path):
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"_id": "q 1", "text": "una pregunta"}) + "\n", "utf-8")
    with pytest.raises(HarnessInputError, match=rf"^{q}:1: field _id: id 'q 1' holds whitespace"):
        read_queries(q)
    tsv = tmp_path / "q.tsv"
    tsv.write_text("q1\tuna\n\tdos\n", "utf-8")
    with pytest.raises(HarnessInputError, match=rf"^{tsv}:2: query id '' is empty"):
        read_queries(tsv)
    beir = write_beir(tmp_path / "b")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tdoc 1\t2\n", "utf-8")
    with pytest.raises(HarnessInputError, match=r"test.tsv:2: query q1: document id 'doc 1' holds whitespace"):
        import_beir(beir, tmp_path / "gs")
    assert not (tmp_path / "gs").exists() and not (tmp_path / "gs-corpus").exists()
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 doc1 1\nq\x1b 0 doc1 1\n", "utf-8")
    with pytest.raises(HarnessInputError, match=rf"^{qrels}:2: query id 'q\\x1b' holds a control character"):
        read_trec_qrels(qrels)


def test_a_beir_document_id_with_a_hash_is_refused_naming_the_record(tmp_path: Path):
    beir = write_beir(tmp_path / "b")
    corpus = [dict(d, _id="doc#1") if d["_id"] == "doc1" else d for d in BEIR_CORPUS]
    (beir / "corpus.jsonl").write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in corpus), "utf-8")
    with pytest.raises(HarnessInputError, match=r"corpus.jsonl:1: field _id: id 'doc#1' holds '#', the separator"):
        import_beir(beir, tmp_path / "gs")
    assert not (tmp_path / "gs").exists() and not (tmp_path / "gs-corpus").exists()
    # the qrels too (a qrels id with '#' could only name such a document)
    beir2 = write_beir(tmp_path / "b2")
    (beir2 / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tdoc1#0\t2\n", "utf-8")
    with pytest.raises(HarnessInputError, match=r"test.tsv:2: query q1: document id 'doc1#0' holds '#'"):
        import_beir(beir2, tmp_path / "gs2")


# ---------------------------------------------------------------------------------------------------------------
# item 14: a huge quote across many chunks (goldset resolve)
# ---------------------------------------------------------------------------------------------------------------


def _long_doc(root: Path, n_words: int) -> Path:
    root.mkdir(parents=True)
    (root / "d.md").write_text("# D\n\n" + " ".join(f"w{i}" for i in range(n_words)) + "\n", encoding="utf-8")
    (root / "metadata.jsonl").write_text(json.dumps({"doc_id": "d", "path": "d.md"}) + "\n", encoding="utf-8")
    return root


def _records(path: Path, quote: str) -> Path:
    rec = {
        "id": "Q",
        "category": "c",
        "question": "q",
        "gold_documents": [{"document_id": "d", "evidence": [{"quote": quote}]}],
    }
    path.write_text(json.dumps(rec) + "\n", "utf-8")
    return path


def test_a_quote_whose_split_would_blow_up_is_refused_naming_its_size(tmp_path: Path):
    """8,000 words over 80 chunks of md-words-v1: a 46 KB quote of the whole text wrote each of its 80 parts with
    the quote in source_quote (3.7 MB of records, 80 x the quote; 925 MB for the issue's 1.38 MB quote)."""
    from harness.curation.resolve import MAX_SPLIT_BYTES, ResolveError, resolve_goldset

    corpus = _long_doc(tmp_path / "c", 8000)
    quote = " ".join(f"w{i}" for i in range(8000))
    size = len(quote.encode())
    assert 80 * size > MAX_SPLIT_BYTES
    with pytest.raises(ResolveError) as info:
        resolve_goldset(_records(tmp_path / "r.jsonl", quote), corpus, tmp_path / "out")
    assert f"quote of {size:,} bytes spans 80 chunks" in str(info.value)
    assert not (tmp_path / "out").exists()
    # a quote across a few chunks still splits, and the records stay about as large as the quote (x parts)
    small = " ".join(f"w{i}" for i in range(150, 420))
    res = resolve_goldset(_records(tmp_path / "s.jsonl", small), corpus, tmp_path / "ok")
    assert res.split == 1 and res.built.written is not None
    written = sum(p.stat().st_size for p in (tmp_path / "ok").rglob("*.jsonl"))
    assert written < 4 * len(small.encode()) + 10_000
