"""Concurrent processes on one fresh work directory (issue 18, item 5): ingests are serialised by a lock file, the
second process waits with one "waiting for ... held by pid N" line and reuses the first one's database.

Every test here starts real processes (``subprocess``): the CLI, or a small ``python -c`` script.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness.corpus.ingest import LOCK_NAME, corpus_db_path, scan_corpus
from harness.corpus.store import Corpus
from harness.io import file_lock

HARNESS = [str(Path(sys.executable).with_name("harness"))]  # the console script of this venv


def _complete_database(db: Path) -> int:
    """The number of documents of a complete corpus database (raises on a damaged or incomplete one)."""
    with Corpus(db, readonly=True) as cp:
        n = cp.conn.execute("SELECT count(*) FROM documents").fetchone()[0]
        assert n == cp.manifest.n_documents
        return n


def write_corpus(root: Path, n_docs: int = 40, words: int = 600) -> Path:
    """A corpus without metadata.jsonl: ``n_docs`` documents of ``words`` words each (several chunks)."""
    root.mkdir(parents=True)
    for d in range(n_docs):
        body = " ".join(f"palabra{(d * 7919 + i * 104729) % 5000} ley{d % 13}" for i in range(words // 2))
        (root / f"doc{d:03d}.md").write_text(f"# Documento {d}\n\n{body}\n", encoding="utf-8")
    return root


class Proc:
    """A subprocess whose stderr and stdout lines are collected by threads as they come."""

    def __init__(self, args: list[str], cwd: Path):
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
        self.p = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.out: list[str] = []
        self.err: list[str] = []
        self._threads = [
            threading.Thread(target=self._pump, args=(self.p.stdout, self.out), daemon=True),
            threading.Thread(target=self._pump, args=(self.p.stderr, self.err), daemon=True),
        ]
        for t in self._threads:
            t.start()

    @staticmethod
    def _pump(stream, sink: list[str]) -> None:
        for line in stream:
            sink.append(line.rstrip("\n"))

    def wait(self, timeout: float = 120) -> int:
        rc = self.p.wait(timeout=timeout)
        for t in self._threads:
            t.join(timeout=10)
        return rc


def _wait_until(pred, timeout: float, what: str) -> None:
    t0 = time.monotonic()
    while not pred():
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


def test_second_ingest_waits_for_the_lock_and_reuses_the_database(tmp_path: Path):
    """While this test holds the ingest lock, two `harness ingest` processes both wait and say who holds it; once
    it is released one ingests and the other reuses its database (no replacement, both exit 0)."""
    corpus = write_corpus(tmp_path / "corpus", n_docs=8)
    work = tmp_path / "work"
    db = corpus_db_path(work, scan_corpus(corpus), "md-words-v1")
    lock = db.parent / LOCK_NAME
    procs: list[Proc] = []
    with file_lock(lock, log=None):
        for _ in range(2):
            procs.append(Proc([*HARNESS, "ingest", str(corpus), "--workdir", str(work)], tmp_path))
        want = f"waiting for {lock} held by pid {os.getpid()}"
        for p in procs:
            _wait_until(lambda p=p: any(want in line for line in p.err), 120, f"{want!r} on stderr")
        assert not db.exists()  # nobody ingested while the lock was held
    rcs = [p.wait() for p in procs]
    assert rcs == [0, 0], [p.err for p in procs]
    states = sorted("ingested" if "(ingested;" in " ".join(p.out) else "reused" for p in procs)
    assert states == ["ingested", "reused"], [p.out for p in procs]
    assert all(str(db) in " ".join(p.out).replace("\n", "") for p in procs)
    assert _complete_database(db) == 8
    assert not [q for q in db.parent.iterdir() if q.name.endswith(".tmp")]


RACE_SCRIPT = r"""
import hashlib, json, os, sys, time
import numpy as np
from harness.corpus.ingest import ingest
from harness.corpus.store import Corpus
from harness.retrieve.vector import VectorIndex

class Bag:
    model_id, weights_sha256, dim = "bag-32", "0" * 64, 32
    def _v(self, t):
        v = np.zeros(32, np.float32)
        for w in t.split():
            h = hashlib.sha256(w.encode()).digest()
            v[h[0] % 32] += 1.0 if h[1] & 1 else -1.0
        return v
    def embed_passages(self, texts):
        return np.stack([self._v(t) for t in texts]) if texts else np.zeros((0, 32), np.float32)
    embed_queries = embed_passages
    def config(self):
        return {"model_id": self.model_id, "weights_sha256": self.weights_sha256, "dim": self.dim}

corpus, work, go = sys.argv[1:4]
while not os.path.exists(go):
    time.sleep(0.002)
db, man, created = ingest(corpus, work)
ino = os.stat(db).st_ino
with Corpus(db) as cp:
    idx = VectorIndex.build(cp, work, Bag(), batch_chunks=64)
    n = idx.coverage()["n_indexed_chunks"]
print(json.dumps({"created": created, "inode": ino, "vectors": n, "chunks": man.n_chunks}))
"""


def test_two_runs_at_once_in_a_fresh_workdir_ingest_once_and_both_build(tmp_path: Path):
    """Two processes released at the same instant ingest and build the vector index in one fresh work directory
    (what `harness embed` / `harness run --systems vector` do): both exit 0, exactly one ingested, both used the
    one database file that stays in place, and both see every chunk indexed."""
    corpus = write_corpus(tmp_path / "corpus", n_docs=150, words=1200)
    work = tmp_path / "work"
    go = tmp_path / "go"
    procs = [Proc([sys.executable, "-c", RACE_SCRIPT, str(corpus), str(work), str(go)], tmp_path) for _ in range(2)]
    time.sleep(1.0)  # both interpreters up and polling for the start signal
    go.write_text("go")
    rcs = [p.wait(timeout=300) for p in procs]
    assert rcs == [0, 0], [p.err[-5:] for p in procs]
    res = [json.loads(p.out[-1]) for p in procs]
    db = corpus_db_path(work, scan_corpus(corpus), "md-words-v1")
    assert sorted(r["created"] for r in res) == [False, True], res
    assert {r["inode"] for r in res} == {os.stat(db).st_ino}
    assert all(r["vectors"] == r["chunks"] for r in res)
    assert _complete_database(db) == 150


def test_lock_is_released_when_its_holder_is_killed(tmp_path: Path):
    """A process killed with SIGKILL while holding the lock does not leave it held: the kernel drops flock locks
    with the process."""
    lock = tmp_path / "work" / LOCK_NAME
    code = (
        "import sys, time\nfrom harness.io import file_lock\n"
        "with file_lock(sys.argv[1]):\n    print('held', flush=True)\n    time.sleep(600)\n"
    )
    holder = Proc([sys.executable, "-c", code, str(lock)], tmp_path)
    _wait_until(lambda: holder.out == ["held"], 60, "the holder to take the lock")
    assert lock.read_text().strip() == str(holder.p.pid)
    lines: list[str] = []

    def take() -> None:
        with file_lock(lock, log=lines.append):
            pass

    waiter = threading.Thread(target=take, daemon=True)
    waiter.start()
    _wait_until(lambda: lines, 30, "the waiting line")
    assert lines == [f"waiting for {lock} held by pid {holder.p.pid}"]
    holder.p.kill()
    holder.wait()
    waiter.join(timeout=30)
    assert not waiter.is_alive()


@pytest.mark.parametrize("held", [False, True])
def test_file_lock_is_exclusive_and_reentrant_per_block(tmp_path: Path, held: bool):
    """In one process, a second `file_lock` on another descriptor of the same file waits like another process
    would (flock locks belong to open file descriptions); when free it is taken at once, silently."""
    lock = tmp_path / "x.lock"
    lines: list[str] = []
    if not held:
        with file_lock(lock, log=lines.append):
            assert lock.read_text().strip() == str(os.getpid())
        assert lines == [] and lock.read_text() == ""
        return
    got = threading.Event()

    def second():
        with file_lock(lock, log=lines.append):
            got.set()

    with file_lock(lock, log=None):
        t = threading.Thread(target=second, daemon=True)
        t.start()
        _wait_until(lambda: lines, 30, "the waiting line")
        assert not got.is_set()
    t.join(timeout=30)
    assert got.is_set() and lines == [f"waiting for {lock} held by pid {os.getpid()}"]
