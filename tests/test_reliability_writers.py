"""Issue 26 item 3: a second writer of one output folder fails (exit 2) and the first writer's output stays.

Before the fix :func:`harness.io.atomic_directory` checked that the output was absent at the start and, at the end,
moved aside and deleted whatever had appeared meanwhile: two concurrent ``goldset import --out X`` both exited 0 and
only the later result remained (4 of 4 tries; ``known-item`` 1 of 4). The new folder now goes in with an atomic
rename that never replaces (``renameat2(RENAME_NOREPLACE)``, :func:`harness.io.rename_noreplace`); an overwrite
replaces only the very folder it found at the start (same device and inode).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import harness.curation.build as build
from harness.cli import app
from harness.curation.importers import import_qrels
from harness.errors import HarnessInputError
from harness.io import OUTPUT_MARKER, atomic_directory


def _write(folder: Path, text: str, *, marker: bool = True) -> None:
    folder.mkdir()
    (folder / "who.txt").write_text(text)
    if marker:
        (folder / OUTPUT_MARKER).write_text("{}\n")


def test_a_folder_that_appears_while_writing_is_kept_and_this_writer_fails(tmp_path: Path):
    final = tmp_path / "out"
    with pytest.raises(HarnessInputError, match="appeared while this command ran") as err:
        with atomic_directory(final) as tmp:
            (tmp / "who.txt").write_text("second")
            _write(final, "first")  # another process finished first
    assert err.value.exit_code == 2
    assert (final / "who.txt").read_text() == "first"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no temporary left


def test_an_overwrite_replaces_only_the_folder_it_found(tmp_path: Path):
    final = tmp_path / "out"
    _write(final, "old")
    with pytest.raises(HarnessInputError, match="replaced by another process"):
        with atomic_directory(final, overwrite=True) as tmp:
            (tmp / "who.txt").write_text("mine")
            _write(tmp_path / "theirs", "theirs")
            os.rename(final, tmp_path / "gone")
            os.rename(tmp_path / "theirs", final)  # another overwrite finished first
    assert (final / "who.txt").read_text() == "theirs"
    with atomic_directory(final, overwrite=True) as tmp:  # with nobody else, an overwrite still replaces
        (tmp / "who.txt").write_text("mine")
    assert (final / "who.txt").read_text() == "mine"


def test_rename_noreplace_never_replaces(tmp_path: Path):
    from harness.io import rename_noreplace

    for kind in ("dir", "file"):
        src, dst = tmp_path / f"{kind}-a", tmp_path / f"{kind}-b"
        for p, text in ((src, "a"), (dst, "b")):
            if kind == "dir":
                _write(p, text, marker=False)
            else:
                p.write_text(text)
        with pytest.raises(FileExistsError):
            rename_noreplace(src, dst)
        read = (lambda p: (p / "who.txt").read_text()) if kind == "dir" else (lambda p: p.read_text())
        assert (read(src), read(dst)) == ("a", "b")
    rename_noreplace(tmp_path / "dir-a", tmp_path / "dir-c")
    assert (tmp_path / "dir-c" / "who.txt").read_text() == "a" and not (tmp_path / "dir-a").exists()


QRELS = "1 0 ley-a 2\n2 0 dof-c 2\n"
QUERIES = "1\taguas nacionales\n2\ttasa de interés\n"


def test_two_goldset_imports_into_one_folder_the_second_fails_and_the_first_stays(tmp_path, monkeypatch):
    """The second import runs to the end while the first is validating its folder (the first writer to finish
    keeps the folder; the other, here the outer CLI command, exits 2)."""
    qrels, queries = tmp_path / "a.qrels", tmp_path / "q.tsv"
    qrels.write_text(QRELS)
    queries.write_text(QUERIES)
    out = tmp_path / "gs"
    real = build.load_goldset
    calls = []

    def racing_load(folder):
        if not calls:
            calls.append(folder)
            import_qrels(qrels, queries, out, name="first-to-finish")  # the other process
        return real(folder)

    monkeypatch.setattr(build, "load_goldset", racing_load)
    r = CliRunner().invoke(app, ["goldset", "import", "--qrels", str(qrels), "--queries", str(queries),
                                 "--out", str(out), "--name", "second"])  # fmt: skip
    assert r.exit_code == 2, r.output
    assert r.output.startswith(f"error: --out {out}: appeared while this command ran"), r.output
    meta = json.loads(next(out.glob("*.meta.json")).read_text())
    assert meta["name"] == "first-to-finish"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.qrels", "gs", "q.tsv"]


@pytest.mark.slow
def test_two_import_processes_at_once_one_wins_and_the_other_exits_2(tmp_path: Path):
    """Two real processes (4 tries): exactly one exits 0, the other 0 too only if it finished after seeing the
    folder at its start (exit 2 either way when it loses), and the folder holds a complete set of the winner."""
    qrels, queries = tmp_path / "a.qrels", tmp_path / "q.tsv"
    qrels.write_text(QRELS)
    queries.write_text(QUERIES)
    for attempt in range(4):
        out = tmp_path / f"gs{attempt}"
        cmd = [sys.executable, "-m", "harness", "goldset", "import", "--qrels", str(qrels), "--queries", str(queries),
               "--out", str(out)]  # fmt: skip
        procs = [subprocess.Popen([*cmd, "--name", f"p{i}"], stderr=subprocess.PIPE, text=True) for i in range(2)]
        codes = [p.wait(timeout=120) for p in procs]
        errs = [p.stderr.read() for p in procs]
        assert sorted(codes) == [0, 2], (codes, errs)
        winner = codes.index(0)
        meta = json.loads(next(out.glob("*.meta.json")).read_text())
        assert meta["name"] == f"p{winner}"
        assert "already exists" in errs[1 - winner] or "appeared while this command ran" in errs[1 - winner]
