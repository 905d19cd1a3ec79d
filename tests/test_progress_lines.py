"""Never silent in CI (issue 28 item 5): off a terminal, long steps write plain stderr lines at their start, at least
every ``HARNESS_PROGRESS_INTERVAL`` seconds with done/total and ETA, and at their end, whatever ``--format`` is;
``harness -q`` writes none."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import write_tiny_corpus, write_tiny_goldset

from harness import progress
from harness.progress import PlainLines, interval, progress_bar, stage

TICK = re.compile(
    r"^(?P<label>.+): (?P<done>\d+)/(?P<total>\d+) \((?P<pct>\d+) %\), (?P<el>.+) elapsed, ETA (?P<eta>.+)$"
)


@pytest.fixture(autouse=True)
def _enabled():
    progress.set_enabled(True)
    yield
    progress.set_enabled(True)


@pytest.mark.parametrize(
    ("value", "expected"), [("1", 1.0), ("0.25", 0.25), ("", 30.0), ("abc", 30.0), ("0", 30.0), ("-2", 30.0)]
)
def test_interval_from_the_environment(monkeypatch, value, expected):
    monkeypatch.setenv("HARNESS_PROGRESS_INTERVAL", value)
    assert interval() == expected


def test_interval_default_is_thirty_seconds(monkeypatch):
    monkeypatch.delenv("HARNESS_PROGRESS_INTERVAL", raising=False)
    assert interval() == 30.0


def test_plain_lines_start_tick_with_done_total_eta_and_end():
    buf = io.StringIO()
    lines = PlainLines("embed m", 4, every=0.05, stream=buf).start()
    lines.advance(1)
    time.sleep(0.3)
    lines.advance(3)
    lines.stop()
    out = buf.getvalue().splitlines()
    assert out[0] == "embed m: started, 4 to do"
    ticks = [TICK.match(x) for x in out[1:-1]]
    assert len(ticks) >= 2 and all(ticks), out
    first = ticks[0]
    assert (first["done"], first["total"], first["pct"]) == ("1", "4", "25")
    # ETA = elapsed * remaining / done: 3 x the elapsed time after 1 of 4 (whole seconds here: both 0 s)
    assert first["eta"] == "0 s" and first["el"] == "0 s"
    assert re.fullmatch(r"embed m: done, 4/4 in \d+ s", out[-1]), out[-1]


def test_eta_and_durations_in_minutes():
    lines = PlainLines("x", 100, every=10, stream=io.StringIO())
    lines._t0 = time.monotonic() - 90  # 90 s elapsed
    lines.advance(25)
    assert lines.status() == "25/100 (25 %), 1 min 30 s elapsed, ETA 4 min 30 s"
    unknown = PlainLines("y", None, every=10, stream=io.StringIO())
    unknown._t0 = time.monotonic() - 3700
    assert unknown.status() == "running, 1 h 01 min elapsed"
    none_done = PlainLines("z", 10, every=10, stream=io.StringIO())
    assert none_done.status().endswith("ETA unknown")


def test_a_failing_step_writes_no_done_line():
    buf = io.StringIO()
    with pytest.raises(RuntimeError):
        lines = PlainLines("s", None, every=5, stream=buf).start()
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            lines.stop(ok=False)
            raise
    assert buf.getvalue() == "s: started\n"


def test_bar_and_stage_off_a_terminal_write_lines_and_quiet_writes_none(monkeypatch, capsys):
    monkeypatch.setenv("HARNESS_PROGRESS_INTERVAL", "0.05")
    with progress_bar("ingest", 3) as advance:
        assert advance is not None
        advance(2)
        time.sleep(0.2)
        advance(1)
    with stage("BM25: build the chunk index"):
        time.sleep(0.2)
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "ingest: started, 3 to do" and any(TICK.match(x) for x in err)
    assert "ingest: done, 3/3 in 0 s" in err
    assert "BM25: build the chunk index: started" in err
    assert any(x.startswith("BM25: build the chunk index: running, ") for x in err)
    assert any(x.startswith("BM25: build the chunk index: done in ") for x in err)
    progress.set_enabled(False)
    with progress_bar("ingest", 3) as advance:
        assert advance is None
        time.sleep(0.1)
    with stage("s"):
        time.sleep(0.1)
    assert capsys.readouterr().err == ""


SLOW_PLUGIN = '''
import time


class Slow:
    """Sleeps per query: a per-query retriever whose progress must show."""

    def search(self, queries, *, doc_depth, chunk_depth):
        time.sleep(1.2 * len(queries))
        return [{"docs": [("ley-a", 1.0)]} for _ in queries]
'''


def _run(tmp_path: Path, *pre: str, run_id: str) -> subprocess.CompletedProcess:
    corpus = tmp_path / "corpus"
    if not corpus.exists():
        write_tiny_corpus(corpus)
        write_tiny_goldset(tmp_path / "gs", corpus)
        (tmp_path / "slow.py").write_text(SLOW_PLUGIN, "utf-8")
    env = {**os.environ, "HARNESS_PROGRESS_INTERVAL": "1", "COLUMNS": "150"}
    cmd = [sys.executable, "-m", "harness", *pre, "run", "--corpus", str(corpus), "--goldset",
           str(tmp_path / "gs"), "--systems", f"bm25,vector,slow=py:{tmp_path / 'slow.py'}:Slow", "--workdir",
           str(tmp_path / f"wd-{run_id}"), "--runs-dir", str(tmp_path / "runs"), "--run-id", run_id, "--format",
           "json"]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)


@pytest.mark.slow
def test_run_format_json_on_a_cold_workdir_writes_stage_and_progress_lines(tmp_path):
    r = _run(tmp_path, run_id="loud")
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(r.stdout)["kind"] == "run"  # stdout holds the result only
    err = r.stderr.splitlines()
    for label in ("ingest", "BM25: build the chunk index", "slow: search"):
        assert any(x.startswith(f"{label}: started") for x in err), (label, err)
        assert any(x.startswith(f"{label}: done") for x in err), (label, err)
    assert any(x.startswith("embed ") and ": started" in x for x in err), err
    ticks = [m for m in map(TICK.match, err) if m and m["label"] == "slow: search"]
    assert ticks, err  # the plugin sleeps 1.2 s per query: at least one line per second while it works
    assert all(int(m["total"]) == 3 for m in ticks)  # the tiny gold set's three questions


@pytest.mark.slow
def test_quiet_run_writes_no_progress_line(tmp_path):
    r = _run(tmp_path, "-q", run_id="quiet")
    assert r.returncode == 0, r.stderr[-3000:]
    assert not [x for x in r.stderr.splitlines() if re.search(r": (started|done|running)|ETA", x)], r.stderr
