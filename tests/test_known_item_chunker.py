"""`harness known-item --chunker`: the known-item study and its coverage run under a registered chunker
(md-legal-v1) beside the md-words-v1 windows (issue 20 item 4)."""

from __future__ import annotations

import json
from pathlib import Path

from test_cli_known_item import write_corpus
from typer.testing import CliRunner

from harness.cli import app
from harness.corpus.chunker import decode_source, get_chunker
from harness.studies.known_item.corpus import chunk_corpus

ARTICLES = "\n\n".join(
    f"**Artículo {i}.-** " + " ".join(f"art{i}palabra{j}" for j in range(60 + 7 * i)) for i in range(1, 9)
)


def _legal_corpus(root: Path) -> Path:
    write_corpus(root)
    (root / "ley.md").write_text(f"# Ley\n\n{ARTICLES}\n", "utf-8")
    with (root / "metadata.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps({"doc_id": "ley", "path": "ley.md", "title": "Ley", "date": "2024-01-01"}) + "\n")
    return root


def test_chunk_corpus_under_a_registered_chunker_is_that_chunkers_chunks(tmp_path: Path):
    corpus = _legal_corpus(tmp_path / "c")
    cc = chunk_corpus(corpus, chunker="md-legal-v1")
    assert cc.chunker_id == "md-legal-v1" and cc.chunker_params == {"max_words": 250, "min_words": 40}
    expected = get_chunker("md-legal-v1").chunk("ley", decode_source((corpus / "ley.md").read_bytes()))
    got = [cid for cid, d in zip(cc.chunk_ids, cc.chunk_doc, strict=True) if cc.doc_ids[d] == "ley"]
    assert got == [c.chunk_id for c in expected] and len(expected) == 8  # one chunk per article
    words = chunk_corpus(corpus, chunk_words=100)
    assert words.chunker_id == "md-words-v1" and words.n_chunks != cc.n_chunks


def test_cli_known_item_with_coverage_under_md_legal(tmp_path: Path):
    corpus = _legal_corpus(tmp_path / "c")
    out = tmp_path / "ki"
    args = ["known-item", "--corpus", str(corpus), "--out", str(out), "--workers", "1", "--chunker", "md-legal-v1"]
    r = CliRunner().invoke(app, [*args, "--coverage", "--reps", "50", "--K", "3,5"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"]["chunker_id"] == "md-legal-v1" and summary["config"]["chunk_words"] is None
    assert (out / "coverage.json").exists()


def test_cli_known_item_chunker_refusals(tmp_path: Path):
    corpus = _legal_corpus(tmp_path / "c")
    base = ["known-item", "--corpus", str(corpus), "--workers", "1"]
    r = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "a"), "--chunker", "nope"])
    assert r.exit_code == 2 and "--chunker: unknown chunker 'nope'" in r.output
    r = CliRunner().invoke(
        app, [*base, "--out", str(tmp_path / "b"), "--chunker", "md-legal-v1", "--chunk-words", "50,100"]
    )
    assert r.exit_code == 2 and "--chunker" in r.output
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
