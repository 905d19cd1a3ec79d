"""A plugin that runs argparse on harness's own command line (issue 44 item 21): argparse prints ``usage: ...`` and
raises ``SystemExit``; the user sees one ``error:`` line (quoting argparse's own last line), no usage block. What a
plugin writes to stderr on a call that succeeds is still shown."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app

ARGY = """
import argparse
import sys

from harness.retrieve.base import QueryResult


class AtSearch:
    def search(self, queries, *, doc_depth, chunk_depth):
        print("plugin: parsing my options", file=sys.stderr)
        argparse.ArgumentParser(prog="harness").parse_args(["--no-such-option"])
        return []


class Talks:
    def search(self, queries, *, doc_depth, chunk_depth):
        print("plugin: ranked", len(queries), "queries", file=sys.stderr)
        return [QueryResult(docs=[("ley-a", 1.0)], chunks=None) for _ in queries]
"""

AT_IMPORT = """
import argparse

argparse.ArgumentParser(prog="harness").parse_args()  # harness's own command line: unrecognized arguments


class AtSearch:
    def search(self, queries, *, doc_depth, chunk_depth):
        return []
"""


def _plugin(tmp_path: Path, at_import: bool) -> Path:
    p = tmp_path / ("at_import.py" if at_import else "argy.py")
    p.write_text(AT_IMPORT if at_import else ARGY, encoding="utf-8")
    return p


def _run(tmp_path, tiny_corpus, tiny_goldset, spec: str):
    args = ["run", "--goldset", tiny_goldset, "--corpus", tiny_corpus, "--workdir", tmp_path / "wd",
            "--runs-dir", tmp_path / "runs", "--systems", spec]  # fmt: skip
    args = [str(a) for a in args]
    with pytest.MonkeyPatch.context() as mp:  # the command line the plugin's argparse reads, as the console script's
        mp.setattr(sys, "argv", ["harness", *args])  # (under xdist a worker's own argv parsed without an error)
        return CliRunner().invoke(app, args)


def _one_error(r) -> str:
    assert r.exit_code == 2, r.output
    assert "usage:" not in r.output, r.output
    errors = [x for x in r.output.splitlines() if x.startswith("error:")]
    assert len(errors) == 1, r.output
    return errors[0]


@pytest.mark.parametrize(
    ("at_import", "says"),
    [
        (True, "importing"),
        (False, "search failed (SystemExit: 2; it wrote: harness: error: unrecognized arguments: --no-such-option)"),
    ],
)
def test_argparse_in_a_run_plugin_gives_one_line(tmp_path, tiny_corpus, tiny_goldset, at_import, says):
    plugin = _plugin(tmp_path, at_import)
    line = _one_error(_run(tmp_path, tiny_corpus, tiny_goldset, f"py:{plugin}:AtSearch"))
    assert says in line and "SystemExit: 2" in line and "harness: error:" in line, line
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_argparse_in_a_known_item_plugin_gives_one_line(tmp_path):
    from test_known_item import write_corpus

    corpus = write_corpus(tmp_path / "corpus")
    systems = f"bm25,a=py:{_plugin(tmp_path, False)}:AtSearch"
    args = ["known-item", "--corpus", corpus, "--workers", 1, "--chunk-words", 50, "--query-words", 3,
            "--workdir", tmp_path / "wd", "--out", tmp_path / "o", "--systems", systems]  # fmt: skip
    r = CliRunner().invoke(app, [str(a) for a in args])
    line = _one_error(r)
    assert "system a (py:" in line and "SystemExit: 2" in line and not (tmp_path / "o").exists()
    assert "plugin: parsing my options" not in r.output


def test_what_a_working_plugin_writes_to_stderr_is_still_shown(tmp_path, tiny_corpus, tiny_goldset):
    r = _run(tmp_path, tiny_corpus, tiny_goldset, f"py:{_plugin(tmp_path, False)}:Talks")
    assert r.exit_code == 0, r.output
    assert r.output.count("plugin: ranked 1 queries") == 3, r.output  # the run searches one query per block here
