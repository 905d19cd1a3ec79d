"""Issue 26 items 15 and 17: input files are read as regular files or bounded pipes, and provenance hashes what was
read.

Item 15: before the fix every input file was read whole, so ``goldset import --qrels /dev/zero`` ran until the
out-of-memory killer stopped it. Inputs now go through :func:`harness.inputs.read_input_bytes`: a regular file whole,
a pipe up to :data:`harness.inputs.MAX_STREAM_BYTES`, a device or a folder refused at once (one line, exit 2).

Item 17: qrels given through a pipe (``--qrels /dev/stdin``, ``<(zcat ...)``) recorded the sha256 of empty input as
their provenance (the file was hashed by reading it a second time); JSONL queries through a pipe were read twice and
came out empty. The provenance is now the sha256 of the bytes read (:func:`harness.inputs.input_sha256`).

The command-line cases run in a child process under a 3 GB address-space limit, so that on code without the fix
they fail with a MemoryError instead of exhausting the shared machine.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import write_tiny_corpus, write_tiny_goldset

QRELS = "1 0 ley-a 2\n2 0 dof-c 2\n"
QUERIES_TSV = "1\taguas nacionales\n2\ttasa de interés\n"
QUERIES_JSONL = '{"_id": "1", "text": "aguas nacionales"}\n{"_id": "2", "text": "tasa de interés"}\n'


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def _harness(*args, stdin: str | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "harness", *map(str, args)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=_limit_memory,
    )


@pytest.mark.slow
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_qrels_from_a_device_is_one_line_and_exit_2(tmp_path: Path, device):
    (tmp_path / "q.tsv").write_text(QUERIES_TSV)
    r = _harness("goldset", "import", "--qrels", device, "--queries", tmp_path / "q.tsv", "--out", tmp_path / "gs")
    assert r.returncode == 2, r.stderr[-2000:]
    assert r.stderr == f"error: {device}: is a device; expected a file (a regular file or a pipe)\n"
    assert not (tmp_path / "gs").exists()


@pytest.mark.slow
def test_rankings_from_a_device_or_a_folder_is_one_line_and_exit_2(tmp_path: Path):
    corpus = write_tiny_corpus(tmp_path / "corpus")
    gs = write_tiny_goldset(tmp_path / "gs", corpus)
    for bad, why in (("/dev/zero", "is a device"), (corpus, "is a folder")):
        r = _harness("-q", "evaluate", "--goldset", gs, "--rankings", bad, "--runs-dir", tmp_path / "runs")
        assert r.returncode == 2, r.stderr[-2000:]
        assert r.stderr.startswith(f"error: {bad}: {why}; expected a rankings file") and r.stderr.count("\n") == 1


@pytest.mark.slow
def test_qrels_through_a_pipe_record_the_hash_of_what_was_read(tmp_path: Path):
    (tmp_path / "q.tsv").write_text(QUERIES_TSV)
    out = tmp_path / "gs"
    r = _harness("goldset", "import", "--qrels", "/dev/stdin", "--queries", tmp_path / "q.tsv", "--out", out,
                 stdin=QRELS)  # fmt: skip
    assert r.returncode == 0, r.stderr
    authoring = json.loads(next(out.glob("*.meta.json")).read_text())["authoring"]
    assert authoring["qrels_sha256"] == hashlib.sha256(QRELS.encode()).hexdigest()
    assert authoring["qrels_sha256"] != hashlib.sha256(b"").hexdigest()


@pytest.mark.slow
def test_jsonl_queries_through_a_pipe_are_read_once(tmp_path: Path):
    (tmp_path / "a.qrels").write_text(QRELS)
    out = tmp_path / "gs"
    r = _harness("goldset", "import", "--qrels", tmp_path / "a.qrels", "--queries", "/dev/stdin", "--out", out,
                 stdin=QUERIES_JSONL)  # fmt: skip
    assert r.returncode == 0, r.stderr
    meta = json.loads(next(out.glob("*.meta.json")).read_text())
    assert meta["authoring"]["queries_sha256"] == hashlib.sha256(QUERIES_JSONL.encode()).hexdigest()
    records = [json.loads(x) for x in next(out.glob("*.jsonl")).read_text().splitlines()]
    assert [r["question"] for r in records] == ["aguas nacionales", "tasa de interés"]


def test_a_device_as_qrels_rankings_or_contract_is_refused_in_process(tmp_path: Path):
    """The fast subset's check (``/dev/null`` ends at once, so code without the fix cannot hang here)."""
    from typer.testing import CliRunner

    from harness.cli import app

    (tmp_path / "q.tsv").write_text(QUERIES_TSV)
    corpus = write_tiny_corpus(tmp_path / "corpus")
    gs = write_tiny_goldset(tmp_path / "gs", corpus)
    for args in (
        ["goldset", "import", "--qrels", "/dev/null", "--queries", tmp_path / "q.tsv", "--out", tmp_path / "o"],
        ["evaluate", "--goldset", gs, "--rankings", "/dev/null", "--runs-dir", tmp_path / "runs"],
        ["validate", gs, "--correction", "/dev/null"],
    ):
        r = CliRunner().invoke(app, [str(a) for a in args])
        assert r.exit_code == 2, r.output
        assert "error: /dev/null: is a device; expected a" in r.output, r.output


def _feed(fifo: Path, data: bytes) -> threading.Thread:
    def write():
        try:
            with open(fifo, "wb") as f:
                f.write(data)
        except BrokenPipeError:
            pass

    t = threading.Thread(target=write, daemon=True)
    t.start()
    return t


def test_read_input_bytes_regular_pipe_device_folder(tmp_path: Path):
    from harness.errors import HarnessInputError
    from harness.inputs import input_sha256, read_input_bytes

    f = tmp_path / "a.txt"
    f.write_bytes(b"abc")
    assert read_input_bytes(f) == b"abc" and input_sha256(f) == hashlib.sha256(b"abc").hexdigest()
    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    t = _feed(fifo, b"x" * 5000)
    assert read_input_bytes(fifo, limit=5000) == b"x" * 5000
    t.join(5)
    assert input_sha256(fifo) == hashlib.sha256(b"x" * 5000).hexdigest()  # no second read of the pipe
    t = _feed(fifo, b"y" * (3 << 20))
    with pytest.raises(HarnessInputError, match=r"more than 2,097,152 bytes through a pipe"):
        read_input_bytes(fifo, limit=2 << 20)
    t.join(5)
    with pytest.raises(HarnessInputError, match="/dev/zero: is a device"):
        read_input_bytes("/dev/zero")
    with pytest.raises(HarnessInputError, match="is a folder"):
        read_input_bytes(tmp_path)
    with pytest.raises(HarnessInputError, match="missing: file not found"):
        read_input_bytes(tmp_path / "missing")
