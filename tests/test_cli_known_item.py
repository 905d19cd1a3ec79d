"""`harness known-item` and `harness coverage` from the command line on a corpus written by the test."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from harness.cli import app


def write_corpus(root: Path, n_docs: int = 8, words_per_doc: int = 330) -> Path:
    rng = np.random.default_rng(7)
    common = [f"comun{i}" for i in range(40)]
    root.mkdir(parents=True)
    meta = []
    for d in range(n_docs):
        own = [f"doc{d}palabra{i}" for i in range(30)]
        words = [own[i] if rng.random() < 0.5 else common[i % 40] for i in rng.integers(0, 30, words_per_doc)]
        (root / f"d{d}.md").write_text(f"# Documento {d}\n\n" + " ".join(words) + "\n", "utf-8")
        meta.append(
            {
                "doc_id": f"d{d}",
                "path": f"d{d}.md",
                "title": f"Documento {d}",
                "date": "2024-01-01",
                "doc_type": "ley" if d % 2 else "aviso",
                "collection": "x",
            }
        )
    (root / "metadata.jsonl").write_text("\n".join(json.dumps(m) for m in meta) + "\n", "utf-8")
    return root


def test_known_item_then_coverage(tmp_path: Path):
    corpus = write_corpus(tmp_path / "c")
    out = tmp_path / "ki"
    r = CliRunner().invoke(
        app,
        ["known-item", "--corpus", str(corpus), "--out", str(out), "--systems", "bm25,tfidf", "--workers", "1"],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["systems"]) == {"bm25", "tfidf"}
    for name in ("outcomes.jsonl.gz", "per_document.jsonl"):
        assert (out / name).exists()
    r = CliRunner().invoke(
        app,
        [
            "coverage",
            "--population",
            str(out),
            "--reps",
            "50",
            "--docs-per-sample",
            "3,5",
            "--bootstrap-reps",
            "99",
            "--types",
            "0",
        ],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    cov = json.loads((out / "coverage.json").read_text())
    assert "CR2" in r.output and cov
    # an existing output folder is not overwritten
    r = CliRunner().invoke(app, ["known-item", "--corpus", str(corpus), "--out", str(out)])
    assert r.exit_code == 2


def test_known_item_bad_inputs(tmp_path: Path):
    r = CliRunner().invoke(app, ["known-item", "--corpus", str(tmp_path / "nope"), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "corpus directory not found" in r.output
    corpus = write_corpus(tmp_path / "c")
    r = CliRunner().invoke(
        app, ["known-item", "--corpus", str(corpus), "--out", str(tmp_path / "o"), "--systems", "bm99"]
    )
    assert r.exit_code == 2
    r = CliRunner().invoke(app, ["coverage", "--population", str(tmp_path / "missing")])
    assert r.exit_code == 2


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_overwrite_never_deletes_an_input_or_a_folder_harness_did_not_write(tmp_path: Path):
    """Reliability issue, item 1: `--out CORPUS --overwrite` used to delete the corpus (exit 0)."""
    corpus = write_corpus(tmp_path / "c")
    before = _tree(corpus)
    args = ["known-item", "--corpus", str(corpus), "--systems", "bm25", "--workers", "1", "--overwrite"]
    for out, words in ((corpus, "is the input"), (tmp_path, "contains the input"), (corpus / "sub", "lies inside")):
        r = CliRunner().invoke(app, [*args, "--out", str(out)])
        assert r.exit_code == 2, r.output
        assert words in r.output and r.output.count("\n") == 1, r.output
        assert _tree(corpus) == before
    # the chunk-size sensitivity study writes into its --out folder too
    r = CliRunner().invoke(app, [*args, "--chunk-words", "50,100", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "contains the input" in r.output
    assert _tree(corpus) == before
    # a folder harness did not write (no marker) is never replaced
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    r = CliRunner().invoke(app, [*args, "--out", str(mine)])
    assert r.exit_code == 2 and "not a folder harness wrote" in r.output and "by hand" in r.output
    assert (mine / "notes.txt").read_text() == "keep me"
    # a file is never replaced by a folder
    (tmp_path / "file").write_text("x")
    r = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "file")])
    assert r.exit_code == 2 and (tmp_path / "file").read_text() == "x"


def test_overwrite_replaces_a_folder_harness_wrote(tmp_path: Path):
    corpus = write_corpus(tmp_path / "c")
    out = tmp_path / "ki"
    args = ["known-item", "--corpus", str(corpus), "--systems", "bm25", "--workers", "1", "--out", str(out)]
    assert CliRunner().invoke(app, args, catch_exceptions=False).exit_code == 0
    assert json.loads((out / ".harness-output.json").read_text())["kind"] == "known-item"
    (out / "stale.txt").write_text("from the first run")
    r = CliRunner().invoke(app, [*args, "--overwrite"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert not (out / "stale.txt").exists() and (out / "summary.json").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary folder left behind


def test_each_mode_prints_its_tables(tmp_path: Path):
    """One run, the chunk-size sensitivity (a comma list) and the whole study (--coverage) each print their own
    tables (rendered by harness.report.studies)."""
    corpus = write_corpus(tmp_path / "c")
    base = ["known-item", "--corpus", str(corpus), "--workers", "1", "--workdir", str(tmp_path / "w")]
    r = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "one")], catch_exceptions=False)
    assert r.exit_code == 0 and "Known-item hit@1" in r.output and "hit@1 by collection (bm25)" in r.output
    r = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "sens"), "--chunk-words", "50,100"])
    assert r.exit_code == 0 and "Chunk-size sensitivity" in r.output, r.output
    assert json.loads((tmp_path / "sens" / "sensitivity.json").read_text())["rows"][0]["chunk_words"] == 50
    args = [*base, "--out", str(tmp_path / "study"), "--coverage", "--reps", "40", "--docs-per-sample", "3"]
    r = CliRunner().invoke(app, args, catch_exceptions=False)
    assert r.exit_code == 0 and "Known-item hit@1" in r.output and "CR2" in r.output, r.output
    assert (tmp_path / "study" / "coverage.json").is_file()
