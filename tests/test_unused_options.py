"""Options that would do nothing in a call are refused, not ignored (issue 44 item 16): ``known-item --design``
without ``--sample``, ``gate --qids`` with ``--known-item`` alone, and their kin in the same verbs. Each is one line
naming the options as typed, exit 2, before anything is read or written."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_known_item import write_corpus
from test_known_item_gate import population, write_ki
from typer.testing import CliRunner

from harness.cli import app

runner = CliRunner()


def _invoke(args):
    return runner.invoke(app, [str(a) for a in args])


def _one_line(r, start: str) -> str:
    lines = r.output.strip().splitlines()
    assert r.exit_code == 2 and len(lines) == 1, r.output
    assert lines[0].startswith(f"error: {start}: no effect "), lines[0]
    return lines[0]


KNOWN_ITEM_UNUSED = [
    (["--design", "srs"], "--design", "without --sample"),
    (["--design", "pps"], "--design", "without --sample"),  # the default's value, typed: still does nothing
    (["--seed", "3"], "--seed", "without --sample"),
    (["--design", "srs", "--seed", "3"], "--design, --seed", "without --sample"),
    (["--reps", "100"], "--reps", "without --coverage"),
    (["--docs-per-sample", "5,10"], "--docs-per-sample", "without --coverage"),
    (["--K", "5"], "--K", "without --coverage"),
    (["--chunker", "md-legal-v1", "--chunk-words", "50"], "--chunk-words", "with --chunker"),
    (["--plugin-timeout", "5"], "--plugin-timeout", "without a py: retriever"),
]


@pytest.mark.parametrize(("extra", "flags", "why"), KNOWN_ITEM_UNUSED, ids=[" ".join(c[0]) for c in KNOWN_ITEM_UNUSED])
def test_known_item_options_that_do_nothing_are_refused(tmp_path: Path, extra, flags, why):
    corpus = write_corpus(tmp_path / "corpus")
    out = tmp_path / "out"
    r = _invoke(["known-item", "--corpus", corpus, "--out", out, "--workdir", tmp_path / "wd", *extra])
    assert why in _one_line(r, flags)
    assert not out.exists() and not (tmp_path / "wd").exists()


def test_known_item_coverage_with_a_list_of_chunk_sizes_is_refused(tmp_path: Path):
    """The sensitivity study (a list of --chunk-words) ran without the coverage study that --coverage asked for."""
    corpus = write_corpus(tmp_path / "corpus")
    r = _invoke(["known-item", "--corpus", corpus, "--out", tmp_path / "o", "--chunk-words", "50,100", "--coverage"])
    assert "with a list of --chunk-words" in _one_line(r, "--coverage") and not (tmp_path / "o").exists()


def test_known_item_options_that_apply_are_still_accepted(tmp_path: Path):
    """The same options where they do something: --design/--seed with --sample, --plugin-timeout with a py: system."""
    corpus = write_corpus(tmp_path / "corpus")
    base = ["known-item", "--corpus", corpus, "--workdir", tmp_path / "wd", "--chunk-words", 50, "--query-words", 3,
            "--workers", 1, "--format", "json"]  # fmt: skip
    r = _invoke([*base, "--out", tmp_path / "a", "--sample", 2, "--design", "srs", "--seed", 3])
    assert r.exit_code == 0, r.output
    plugin = tmp_path / "first.py"
    plugin.write_text(
        "from harness.retrieve.base import QueryResult\n\n\nclass First:\n"
        "    def search(self, queries, *, doc_depth, chunk_depth):\n"
        "        return [QueryResult(docs=None, chunks=[('gatos#0', 1.0)]) for _ in queries]\n",
        "utf-8",
    )
    r = _invoke([*base, "--out", tmp_path / "b", "--systems", f"bm25,p=py:{plugin}:First", "--plugin-timeout", 30])
    assert r.exit_code == 0, r.output


GATE_ALONE_UNUSED = [
    (["--qids", "SP-001"], "--qids"),
    (["--category", "single_passage"], "--category"),
    (["--split", "test"], "--split"),
    (["--metric", "recall@10"], "--metric"),
    (["--margin", "0.05"], "--margin"),
    (["--guard", "single_passage:0.1"], "--guard"),
    (["--allow-unhashed"], "--allow-unhashed"),
    (["--qids", "SP-001", "--margin", "0.05"], "--qids, --margin"),
]


@pytest.mark.parametrize(("extra", "flags"), GATE_ALONE_UNUSED, ids=[" ".join(c[0]) for c in GATE_ALONE_UNUSED])
def test_gate_run_options_with_known_item_alone_are_refused(tmp_path: Path, extra, flags):
    base, _ = population(n_docs=30)
    ki = write_ki(tmp_path / "ki", {"bm25": base, "tfidf": base})
    out = tmp_path / "verdict.json"
    r = _invoke(["gate", "--known-item", ki, "--baseline-system", "bm25", "--candidate-system", "tfidf",
                 "--known-item-margin", 0.01, "--out", out, "--format", "json", *extra])  # fmt: skip
    assert "with --known-item alone" in _one_line(r, flags) and not out.exists()


def test_gate_known_item_alone_without_run_options_still_judges(tmp_path: Path):
    base, _ = population(n_docs=30)
    ki = write_ki(tmp_path / "ki", {"bm25": base, "tfidf": base})
    r = _invoke(["gate", "--known-item", ki, "--baseline-system", "bm25", "--candidate-system", "tfidf",
                 "--known-item-margin", 0.01, "--known-item-metric", "rr", "--alpha", 0.05])  # fmt: skip
    assert r.exit_code in (0, 3), r.output


@pytest.mark.parametrize("extra", [["--known-item-margin", "0.01"], ["--known-item-metric", "rr"]])
def test_gate_known_item_options_without_known_item_are_refused(tmp_path: Path, extra, tiny_corpus, tiny_goldset):
    from harness import api

    rec = api.run(tiny_goldset, tiny_corpus, ["bm25"], workdir=tmp_path / "wd", runs_dir=tmp_path / "runs",
                  run_id="r", bootstrap_reps=200).path  # fmt: skip
    r = _invoke(["gate", "--baseline", rec, "--candidate", rec, *extra])
    assert "without --known-item" in _one_line(r, extra[0])
