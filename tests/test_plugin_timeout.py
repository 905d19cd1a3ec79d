"""``known-item --plugin-timeout`` stops a plugin that swallows exceptions (issue 44 item 15): the timeout is a
``BaseException`` raised in the plugin's own code, raised again while the plugin keeps running, and the block counts
as timed out even when the plugin caught it and returned."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from test_known_item import write_corpus
from typer.testing import CliRunner

from harness.cli import app
from harness.studies.known_item.systems import PluginTimeout, time_limit

STUBBORN = '''
import time

from harness.retrieve.base import QueryResult

DEADLINE = None


class Retries:
    """Retries its slow step inside ``except Exception`` (``while True: try: slow() except Exception: pass``); the
    way out after 8 s exists only so that a broken limit fails the test instead of hanging it."""

    def search(self, queries, *, doc_depth, chunk_depth):
        global DEADLINE
        if DEADLINE is None:
            DEADLINE = time.monotonic() + 8
        while time.monotonic() < DEADLINE:
            try:
                time.sleep(1)
            except Exception:
                pass
        return [QueryResult(docs=None, chunks=[("gatos#0", 1.0)]) for _ in queries]


class SwallowsOnce:
    """Catches even BaseException once and returns an answer, after the limit."""

    def search(self, queries, *, doc_depth, chunk_depth):
        try:
            time.sleep(3)
        except BaseException:
            pass
        return [QueryResult(docs=None, chunks=[("gatos#0", 1.0)]) for _ in queries]
'''


def _known_item(tmp_path: Path, system: str, out: str):
    corpus = write_corpus(tmp_path / "corpus")
    plugin = tmp_path / "stubborn.py"
    plugin.write_text(STUBBORN, encoding="utf-8")
    args = ["known-item", "--corpus", corpus, "--workers", 1, "--chunk-words", 50, "--query-words", 3,
            "--workdir", tmp_path / "wd", "--out", tmp_path / out, "--systems", f"bm25,slow=py:{plugin}:{system}",
            "--plugin-timeout", 0.5]  # fmt: skip
    t0 = time.monotonic()
    r = CliRunner().invoke(app, [str(a) for a in args])
    return r, time.monotonic() - t0


@pytest.mark.parametrize("system", ["Retries", "SwallowsOnce"])
def test_a_plugin_that_swallows_exceptions_still_times_out(tmp_path: Path, system: str):
    r, took = _known_item(tmp_path, system, "o")
    said = " ".join(r.output.split())
    assert r.exit_code == 2, said
    assert "system slow (py:" in said and "timed out on chunk-queries gatos#0" in said, said
    assert "PluginTimeout: no answer within 0.5 s" in said and not (tmp_path / "o").exists()
    assert len([x for x in r.output.splitlines() if x.startswith("error:")]) == 1 and "Traceback" not in r.output
    assert took < 8, took  # stopped by the limit, not by the plugin's own way out


def test_time_limit_is_not_an_exception_and_is_raised_until_the_block_ends():
    assert not issubclass(PluginTimeout, Exception) and issubclass(PluginTimeout, BaseException)
    caught = 0
    t0 = time.monotonic()
    with pytest.raises(PluginTimeout), time_limit(0.2):
        while time.monotonic() - t0 < 5:
            try:
                time.sleep(1)
            except BaseException:  # noqa: BLE001 - swallows even the timeout, a few times
                caught += 1
                if caught >= 3:
                    break
    assert caught == 3 and time.monotonic() - t0 < 2  # raised again every RETRY_S, then once more on the way out
    time.sleep(0.3)  # the alarm is off after the block: nothing fires here
    with time_limit(5):
        pass
    with time_limit(None):
        time.sleep(0.01)
