"""``#`` in a document id is refused everywhere an id enters, not only in BEIR imports (issue 44 item 8): a Markdown
corpus whose ``metadata.jsonl`` held ``dX`` and ``dX#1`` was accepted (and ``goldset import --qrels``), its run
scored MRR 1.0 and its own exported TREC file re-scored 0.0 (``dX#1`` read back as chunk 1 of ``dX``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.corpus.source import scan_corpus
from harness.errors import HarnessInputError
from harness.evaluation.trec import read_rankings
from harness.retrieve.plugin import check_results


def _corpus(root: Path, ids: list[str]) -> Path:
    root.mkdir(parents=True)
    meta = []
    for i, doc_id in enumerate(ids):
        (root / f"d{i}.md").write_text(f"# Doc {i}\n\nTexto del documento {i} sobre aguas nacionales.\n", "utf-8")
        meta.append(json.dumps({"doc_id": doc_id, "path": f"d{i}.md"}))
    (root / "metadata.jsonl").write_text("\n".join(meta) + "\n", "utf-8")
    return root


def test_metadata_jsonl_with_a_hash_in_doc_id_is_refused_naming_file_line_field(tmp_path):
    corpus = _corpus(tmp_path / "c", ["dX", "dX#1"])
    meta = corpus / "metadata.jsonl"
    with pytest.raises(HarnessInputError, match=rf"^{meta}:2: field doc_id: document id 'dX#1' holds '#'"):
        scan_corpus(corpus)


def test_a_walked_file_name_with_a_hash_is_refused(tmp_path):
    root = tmp_path / "c"
    root.mkdir()
    (root / "dX.md").write_text("# X\n\nuno dos tres\n", "utf-8")
    (root / "dX#1.md").write_text("# X1\n\ncuatro cinco\n", "utf-8")
    with pytest.raises(HarnessInputError, match=r"dX#1.md: field doc_id \(the file name\): document id 'dX#1' holds"):
        scan_corpus(root)


def test_a_cached_scan_recorded_before_the_rule_is_not_trusted(tmp_path, monkeypatch):
    from harness import ids
    from harness.corpus import scan_cache

    corpus = _corpus(tmp_path / "c", ["dX", "dX#1"])
    cache = tmp_path / "scan.json"
    monkeypatch.setattr(ids, "check_item_id", lambda item, *a, **k: str(item))  # a harness without the rule
    assert [d.doc_id for d in scan_corpus(corpus, stat_cache=cache).docs] == ["dX", "dX#1"]
    monkeypatch.undo()
    assert scan_cache.lookup(cache, corpus) is not None  # the record still matches every stat key
    with pytest.raises(HarnessInputError, match=r"metadata.jsonl:2: field doc_id: document id 'dX#1' holds '#'"):
        scan_corpus(corpus, stat_cache=cache)


def test_goldset_import_qrels_refuses_a_hash_in_a_document_id(tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 dX 1\nq1 0 dX#1 2\n", "utf-8")
    queries = tmp_path / "q.tsv"
    queries.write_text("q1\tuna pregunta\n", "utf-8")
    out = tmp_path / "gs"
    r = CliRunner().invoke(app, ["goldset", "import", "--qrels", str(qrels), "--queries", str(queries),
                                 "--out", str(out)])  # fmt: skip
    assert r.exit_code == 2, r.output
    assert f"{qrels}:2: query q1: document id 'dX#1' holds '#'" in r.output
    assert len(r.output.strip().splitlines()) == 1 and not out.exists()


def test_rankings_refuse_a_hash_in_a_document_ranking(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"qid": "q1", "docs": [["dX", 2.0], ["dX#1", 1.0]]}) + "\n", "utf-8")
    with pytest.raises(HarnessInputError, match=rf"^{path}:1: field docs\[1\]: id 'dX#1' holds '#'"):
        read_rankings(path)
    path.write_text(json.dumps({"qid": "q1", "docs": ["dX#1"]}) + "\n", "utf-8")
    with pytest.raises(HarnessInputError, match=rf"^{path}:1: field docs\[0\]: id 'dX#1' holds '#'"):
        read_rankings(path)
    path.write_text(json.dumps({"qid": "q1", "chunks": ["dX#1"]}) + "\n", "utf-8")  # a chunk id: fine
    assert read_rankings(path).results
    trec = tmp_path / "r.trec"
    trec.write_text("q1 Q0 dX 1 2.0 mine\nq1 Q0 dX#1 2 1.0 mine\n", "utf-8")
    with pytest.raises(HarnessInputError, match=rf"^{trec}:2: id 'dX#1' holds '#'"):
        read_rankings(trec, level="document")
    assert read_rankings(trec).results  # without --level, an id with '#' is a chunk's


def test_plugin_document_rankings_refuse_a_hash():
    with pytest.raises(HarnessInputError, match=r"^system mine: result 0: docs\[0\]: id 'dX#1' holds '#'"):
        check_results([{"docs": [("dX#1", 1.0)]}], 1, 10, 10, where="system mine")
    assert check_results([{"chunks": [("dX#1", 1.0)]}], 1, 10, 10, where="system mine")[0].chunks
