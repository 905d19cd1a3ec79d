"""What a killed process leaves behind, and its clean-up on the next start (issue 18, item 11).

Temporaries carry their owner's pid (``.<name>.<pid>-<random>.tmp|old``; the ingest's ``.corpus.db.<pid>.tmp``);
the next ingest or output write removes those whose process is gone and never touches a live process's.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.corpus.ingest import corpus_db_path, ingest, scan_corpus
from harness.errors import HarnessInputError
from harness.io import (
    atomic_directory,
    atomic_write_text,
    clean_stale_temporaries,
    parse_temporary_name,
    pid_alive,
    temporary_path,
)


def write_corpus(root: Path, n_docs: int = 6) -> Path:
    root.mkdir(parents=True)
    for d in range(n_docs):
        body = " ".join(f"termino{(d * 31 + i) % 97}" for i in range(250))
        (root / f"d{d}.md").write_text(f"# Doc {d}\n\n{body}\n", encoding="utf-8")
    return root


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    assert not pid_alive(p.pid)
    return p.pid


def start_stuck(code: str, *args: str) -> subprocess.Popen:
    """Run ``code`` in a fresh interpreter; it prints one line when it is where the test wants it, then blocks."""
    p = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    line = p.stdout.readline().strip()
    assert line, p.stderr.read()
    p.ready_line = line
    return p


def kill(p: subprocess.Popen) -> None:
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    p.stdout.close()
    p.stderr.close()


# The ingest blocks after chunking its first document: the temporary database exists, the final one does not.
STUCK_INGEST = r"""
import sys, time
from harness.corpus import chunker

real = chunker.MdWordsChunker.chunk
calls = []

def chunk(self, doc_id, text):
    calls.append(doc_id)
    if len(calls) == 2:
        print("stuck", flush=True)
        time.sleep(600)
    return real(self, doc_id, text)

chunker.MdWordsChunker.chunk = chunk
from harness.corpus.ingest import ingest
ingest(sys.argv[1], sys.argv[2])
"""


def test_killed_ingest_leaves_its_temporary_and_the_next_ingest_removes_it(tmp_path: Path):
    corpus = write_corpus(tmp_path / "corpus")
    work = tmp_path / "work"
    db = corpus_db_path(work, scan_corpus(corpus), "md-words-v1")
    p = start_stuck(STUCK_INGEST, str(corpus), str(work))
    tmp = db.with_name(f".corpus.db.{p.pid}.tmp")
    assert tmp.is_file() and not db.exists()
    kill(p)
    assert tmp.is_file()  # what a SIGKILL leaves
    lines: list[str] = []
    path, manifest, created = ingest(corpus, work, log=lines.append)
    assert created and path == db and manifest.n_documents == 6
    assert not tmp.exists()
    assert not [q.name for q in db.parent.iterdir() if q.name.startswith(".corpus.db.")]
    assert any(str(tmp) in line and f"process {p.pid}" in line for line in lines), lines


def test_ingest_leaves_a_live_process_temporary_alone(tmp_path: Path):
    corpus = write_corpus(tmp_path / "corpus")
    work = tmp_path / "work"
    db = corpus_db_path(work, scan_corpus(corpus), "md-words-v1")
    db.parent.mkdir(parents=True)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        live = db.with_name(f".corpus.db.{other.pid}.tmp")  # another process, alive
        live.write_bytes(b"in use")
        journal = db.with_name(f".corpus.db.{dead_pid()}.tmp-journal")
        journal.write_bytes(b"stale")
        ingest(corpus, work, log=lambda _m: None)
        assert live.read_bytes() == b"in use"
        assert not journal.exists()
    finally:
        other.kill()
        other.wait()


# A run record being written: the hidden temporary folder exists, the record does not.
STUCK_OUTPUT = r"""
import sys, time
from pathlib import Path
from harness.io import atomic_directory

with atomic_directory(Path(sys.argv[1])) as tmp:
    (tmp / "summary.json").write_text("{}")
    print(tmp, flush=True)
    time.sleep(600)
"""


def test_killed_output_write_leaves_a_temporary_folder_the_next_write_removes(tmp_path: Path):
    runs = tmp_path / "runs"
    dead = start_stuck(STUCK_OUTPUT, str(runs / "run-a"))
    dead_tmp = Path(dead.ready_line)
    kill(dead)
    alive = start_stuck(STUCK_OUTPUT, str(runs / "run-b"))
    alive_tmp = Path(alive.ready_line)
    try:
        assert parse_temporary_name(dead_tmp.name) == ("run-a", dead.pid, "tmp")
        assert parse_temporary_name(alive_tmp.name) == ("run-b", alive.pid, "tmp")
        with atomic_directory(runs / "run-c") as tmp:
            (tmp / "summary.json").write_text("{}")
        assert not dead_tmp.exists()  # its process is gone
        assert (alive_tmp / "summary.json").is_file()  # its process is alive: untouched
        assert sorted(p.name for p in runs.iterdir() if not p.name.startswith(".")) == ["run-c"]
    finally:
        kill(alive)


def test_parse_temporary_name():
    assert parse_temporary_name(".run-2024.12.01.4321-ab_c9xyz.tmp") == ("run-2024.12.01", 4321, "tmp")
    assert parse_temporary_name(".summary.json.77-k2j4h5g6.tmp") == ("summary.json", 77, "tmp")
    assert parse_temporary_name(".out.12-abcdefgh.old") == ("out", 12, "old")
    assert parse_temporary_name(".corpus.db.555.tmp") == ("corpus.db", 555, "tmp")
    assert parse_temporary_name(".corpus.db.555.tmp-journal") == ("corpus.db", 555, "tmp")
    for name in (
        ".run-a.abcdefgh.tmp",  # a temporary without a pid (older harness): not recognised, left alone
        "run.12-abcdefgh.tmp",  # not hidden
        ".x.12-ABCDEFGH.tmp",  # not mkstemp's alphabet
        ".x.12-abcdefgh.tmp2",
        ".x.-abcdefgh.tmp",
        ".other.db.555.tmp",
    ):
        assert parse_temporary_name(name) is None, name


def test_temporary_path_carries_the_pid(tmp_path: Path):
    for kind, directory in (("tmp", False), ("tmp", True), ("old", True)):
        p = temporary_path(tmp_path / "final.json", kind=kind, directory=directory)
        assert p.parent == tmp_path and p.is_dir() == directory
        assert parse_temporary_name(p.name) == ("final.json", os.getpid(), kind)
    with pytest.raises(ValueError):
        temporary_path(tmp_path / "x", kind="bak")


def test_clean_stale_temporaries_dead_live_unknown_links_and_depth(tmp_path: Path):
    d = dead_pid()
    me = os.getpid()
    (tmp_path / f".a.{d}-abcdefgh.tmp").write_text("dead file")
    (tmp_path / f".b.{d}-abcdefgh.tmp").mkdir()
    (tmp_path / f".b.{d}-abcdefgh.tmp" / "x").write_text("dead folder")
    (tmp_path / f".c.{me}-abcdefgh.tmp").write_text("live")
    (tmp_path / ".d.abcdefgh.tmp").write_text("no pid")
    (tmp_path / "keep.txt").write_text("user file")
    target = tmp_path / "elsewhere"
    target.mkdir()
    (tmp_path / f".e.{d}-abcdefgh.tmp").symlink_to(target)
    sub = tmp_path / "corpora" / "c1"
    sub.mkdir(parents=True)
    (sub / f".corpus.db.{d}.tmp").write_bytes(b"x" * 100)
    (sub / f".corpus.db.{d}.tmp-journal").write_bytes(b"j")
    lines: list[str] = []
    assert clean_stale_temporaries(tmp_path, log=lines.append) == [
        tmp_path / f".a.{d}-abcdefgh.tmp",
        tmp_path / f".b.{d}-abcdefgh.tmp",
    ]
    assert len(lines) == 2 and all(f"process {d}" in line for line in lines)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([f".c.{me}-abcdefgh.tmp", ".d.abcdefgh.tmp", f".e.{d}-abcdefgh.tmp", "corpora", "elsewhere",
                           "keep.txt"])  # fmt: skip
    assert (tmp_path / f".e.{d}-abcdefgh.tmp").is_symlink() and target.is_dir()
    assert sorted(p.name for p in sub.iterdir()) == [f".corpus.db.{d}.tmp", f".corpus.db.{d}.tmp-journal"]
    assert len(clean_stale_temporaries(tmp_path, depth=2, log=None)) == 2
    assert list(sub.iterdir()) == []


def test_a_kill_between_the_two_renames_of_a_replace_loses_nothing(tmp_path: Path):
    """atomic_directory moves the old folder aside, then renames the new one in; killed in between, the old one
    sits in ``.<name>.<pid>-*.old/old`` and the final path is missing: the clean-up puts it back."""
    d = dead_pid()
    aside = tmp_path / f".report.{d}-abcdefgh.old"
    (aside / "old").mkdir(parents=True)
    (aside / "old" / "summary.json").write_text('{"v": 1}')
    new = tmp_path / f".report.{d}-ijklmnop.tmp"
    new.mkdir()
    lines: list[str] = []
    clean_stale_temporaries(tmp_path, log=lines.append)
    assert (tmp_path / "report" / "summary.json").read_text() == '{"v": 1}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]
    assert any("restored" in line for line in lines)
    # with the final path present, a stale aside is only deleted
    aside2 = tmp_path / f".report.{d}-qrstuvwx.old"
    (aside2 / "old").mkdir(parents=True)
    clean_stale_temporaries(tmp_path, log=None)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]


def test_atomic_write_text_removes_its_own_stale_temporaries_only(tmp_path: Path):
    d = dead_pid()
    stale = tmp_path / f".out.json.{d}-abcdefgh.tmp"
    stale.write_text("half")
    other = tmp_path / f".other.json.{d}-abcdefgh.tmp"
    other.write_text("half")
    atomic_write_text(tmp_path / "out.json", "{}\n")
    assert (tmp_path / "out.json").read_text() == "{}\n"
    assert not stale.exists() and other.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [other.name, "out.json"]


def test_pid_alive():
    assert pid_alive(os.getpid())
    assert not pid_alive(0) and not pid_alive(-1)
    assert not pid_alive(dead_pid())
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        time.sleep(0.05)
        assert pid_alive(p.pid)
    finally:
        p.kill()
        p.wait()


def test_a_restored_folder_is_not_replaced_without_overwrite(tmp_path: Path):
    """The clean-up runs before the existence checks: a folder put back from a killed replace counts as existing."""
    d = dead_pid()
    aside = tmp_path / f".ki.{d}-abcdefgh.old"
    (aside / "old").mkdir(parents=True)
    (aside / "old" / "summary.json").write_text("{}")
    with pytest.raises(HarnessInputError, match="already exists"), atomic_directory(tmp_path / "ki"):
        pass
    assert (tmp_path / "ki" / "summary.json").read_text() == "{}"
