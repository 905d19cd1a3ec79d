"""Issue 44 item 2: ``goldset plan --name`` is a gold-set name, not a file path.

Before the fix the name was the stem of the files written inside the new folder's temporary sibling, so
``--name ../../<other>/<stem>`` replaced another gold set's records with an empty file and its manifest with the
plan's (exit 0), and ``--name ../escaped`` or an absolute name wrote outside ``--out``. Now a name that is no plain
file name, or gives no contract name under the slug rule, is refused before any work (one line naming ``--name``,
exit 2) and nothing is written anywhere.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write_tiny_corpus, write_tiny_goldset
from typer.testing import CliRunner

from harness.cli import app

PLAN = "goldset plan --documents 3 --chunk-words 5 --query-words 2 --seed 1"


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    "name",
    ["../../other/tiny", "../escaped", "/ABS/x", "sub/x", "..", ".hidden", "a\\b", "---", " x", "a\nb", "x" * 201],
)
def test_a_name_that_is_no_plain_gold_set_name_is_refused_and_nothing_is_written(tmp_path: Path, name: str):
    corpus = write_tiny_corpus(tmp_path / "corpus")
    write_tiny_goldset(tmp_path / "other", corpus)  # another gold set, which ../../other/tiny would replace
    (tmp_path / "plans").mkdir()
    (tmp_path / "abs").mkdir()
    before = _tree(tmp_path)
    name = name.replace("/ABS", str(tmp_path / "abs"))
    argv = [*PLAN.split(), "--corpus", str(corpus), "--out", str(tmp_path / "plans" / "new"), "--name", name]
    r = CliRunner().invoke(app, argv)
    assert r.exit_code == 2, r.output
    line = r.output.strip()
    assert len(line.splitlines()) == 1 and line.startswith("error: --name "), r.output
    assert _tree(tmp_path) == before  # the other gold set as it was, nothing outside (or inside) --out
    assert sorted(p.name for p in (tmp_path / "plans").iterdir()) == []


def test_a_folder_name_that_is_no_gold_set_name_is_refused(tmp_path: Path):
    corpus = write_tiny_corpus(tmp_path / "corpus")
    r = CliRunner().invoke(app, [*PLAN.split(), "--corpus", str(corpus), "--out", str(tmp_path / ".plan")])
    assert r.exit_code == 2 and r.output.startswith("error: --out '.plan': starts with '.'"), r.output
    assert not (tmp_path / ".plan").exists()


def test_a_plain_name_writes_its_files_inside_out(tmp_path: Path):
    corpus = write_tiny_corpus(tmp_path / "corpus")
    out = tmp_path / "plans" / "new"
    out.parent.mkdir()
    r = CliRunner().invoke(app, [*PLAN.split(), "--corpus", str(corpus), "--out", str(out), "--name", "Mi plan PPS v1"])
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in out.iterdir()) == ["Mi plan PPS v1.jsonl", "Mi plan PPS v1.meta.json", "PLAN.md"]
    assert sorted(p.name for p in out.parent.iterdir()) == ["new"]
