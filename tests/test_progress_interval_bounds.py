"""``HARNESS_PROGRESS_INTERVAL`` beyond what a timer can wait is clamped with one line (issue 44 item 13: ``1e18``
printed an ``OverflowError`` traceback from the progress thread); an unusable value says so on one line."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness import progress
from harness.progress import MAX_INTERVAL, PlainLines, interval

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _fresh_notes(monkeypatch):
    monkeypatch.setattr(progress, "_NOTED", set(), raising=False)


@pytest.mark.parametrize("value", ["1e18", "1e308", "100000"])
def test_a_huge_interval_is_clamped_with_one_note(monkeypatch, capsys, value):
    monkeypatch.setenv("HARNESS_PROGRESS_INTERVAL", value)
    assert interval() == MAX_INTERVAL == 86400.0
    assert interval() == MAX_INTERVAL  # the note is written once
    err = capsys.readouterr().err.splitlines()
    assert err == [f"harness: note: HARNESS_PROGRESS_INTERVAL='{value}' is above the largest interval, 86400 s "
                   "(one day); using 86400 s"]  # fmt: skip


@pytest.mark.parametrize("value", ["abc", "0", "-2", "nan", "inf"])
def test_an_unusable_interval_falls_back_with_one_note(monkeypatch, capsys, value):
    monkeypatch.setenv("HARNESS_PROGRESS_INTERVAL", value)
    assert interval() == 30.0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "is not a number of seconds > 0; using the default, 30 s" in err[0]


def test_the_timer_thread_survives_a_huge_interval(monkeypatch):
    errors = []
    monkeypatch.setattr(threading, "excepthook", lambda args: errors.append(args.exc_value))
    buf = io.StringIO()
    lines = PlainLines("step", 3, every=1e18, stream=buf).start()
    time.sleep(0.2)
    lines.advance(3)
    lines.stop()
    assert errors == [] and lines.every == MAX_INTERVAL
    assert buf.getvalue().splitlines()[-1].startswith("step: done, 3/3 in ")


def test_the_cli_prints_no_traceback(tmp_path):
    code = ("from harness.progress import progress_bar\n"
            "with progress_bar('step', 3) as adv:\n"
            "    adv(3)\n")  # fmt: skip
    env = {**os.environ, "HARNESS_PROGRESS_INTERVAL": "1e18", "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "Traceback" not in r.stderr and "OverflowError" not in r.stderr, r.stderr
    assert "HARNESS_PROGRESS_INTERVAL='1e18' is above the largest interval" in r.stderr
