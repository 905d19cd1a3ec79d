"""Issue 26 item 12: control characters from inputs never reach the terminal.

Before the fix a system name holding ESC sequences (erase the line, return to its start, print a green ``PASS``)
went raw into the gate's table, so a failing gate displayed a green PASS on a terminal; a newline in a name or a
path started a line of its own in an error. One function, :func:`harness.terminal_safe.escape_controls`, now makes
such characters visible (``\\x1b``) in every terminal rendering: the table cells (before layout), the command line's
consoles (a rich render hook over everything printed), the one-line errors, warnings and notices, Markdown, and
JSON (which escapes C0 itself; DEL, C1 and bidirectional controls are written as ``\\u`` escapes).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from conftest import write_tiny_corpus, write_tiny_goldset
from rich.text import Text
from typer.testing import CliRunner

from harness.cli import app
from harness.evaluation.pipeline import RunOptions, evaluate_rankings

#: Erase the line, go back to its start, print a bold green PASS, reset; then a C1 CSI, a bidi override, a newline.
FAKE = "cand\x1b[2K\r\x1b[1;32mPASS\x1b[0m\x9b31m\u202eSSAP\nPASS"
RAW = ("\x1b", "\r", "\x9b", "\u202e")
DOCS = ["ley-a", "ley-b", "dof-c", "dof-d"]
GOLD = {"SP-001": ["ley-a"], "SP-002": ["dof-c"], "MD-001": ["ley-b", "dof-d"]}  # conftest.tiny_records


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> tuple[Path, Path]:
    """A perfect baseline and a candidate named :data:`FAKE` that ranks every gold document last (the gate fails)."""
    tmp = tmp_path_factory.mktemp("terminal")
    corpus = write_tiny_corpus(tmp / "corpus")
    gs = write_tiny_goldset(tmp / "gs", corpus)
    paths = []
    for name, worse in (("base", False), (FAKE, True)):
        rk = tmp / f"{'worse' if worse else 'base'}.jsonl"
        lines = []
        for q, g in GOLD.items():
            docs = [d for d in DOCS if d not in g] + g if worse else g + [d for d in DOCS if d not in g]
            lines.append(json.dumps({"qid": q, "system": name, "docs": docs}) + "\n")
        rk.write_text("".join(lines), "utf-8")
        run_id = "cand" if worse else "base"
        paths.append(
            evaluate_rankings(gs, rk, runs_dir=tmp / "runs", run_id=run_id, options=RunOptions(bootstrap_reps=200))
        )
    return paths[0], paths[1]


def _clean(text: str) -> None:
    for ch in RAW:
        assert ch not in text, (ch, text)


@pytest.mark.parametrize("fmt", ["table", "markdown", "json", "junit"])
def test_a_crafted_system_name_cannot_print_a_fake_pass(records, fmt):
    base, cand = records
    r = CliRunner().invoke(app, ["gate", "--baseline", str(base), "--candidate", str(cand), "--format", fmt])
    assert r.exit_code == 1, r.output  # FAIL
    _clean(r.stdout)
    _clean(r.stderr)
    if fmt == "table":
        assert "\\x1b[1;32mPASS\\x1b[0m" in r.stdout  # the name is shown, escaped
        assert not any(line.strip().startswith("PASS") for line in r.stdout.splitlines()), r.stdout
    if fmt == "json":
        data = json.loads(r.stdout)["data"]
        assert data["system_candidate"] == FAKE  # the same value, only written with escapes


@pytest.mark.parametrize("verb", [["compare"], ["report", "--format", "markdown", "--out", "-"]])
def test_other_verbs_escape_the_name_too(records, verb):
    base, cand = records
    r = CliRunner().invoke(app, [*verb, str(base), str(cand)])
    assert r.exit_code == 0, r.output
    _clean(r.stdout)
    _clean(r.stderr)


def test_a_path_with_a_newline_and_esc_is_one_error_line(tmp_path: Path):
    bad = tmp_path / "gs\n\x1b[32mPASS"
    r = CliRunner().invoke(app, ["validate", str(bad)])
    assert r.exit_code == 2
    assert len(r.output.strip().splitlines()) == 1 and "gs\\n\\x1b[32mPASS" in r.output, r.output
    _clean(r.output)


def test_every_console_print_is_escaped_after_layout():
    from harness.terminal_safe import escape_controls, safe_console

    buf = io.StringIO()
    console = safe_console(file=buf, force_terminal=True, width=80)
    console.print(Text("a\x1b[32mB", style="bold"), "line\nnext")  # styled text keeps its own codes
    out = buf.getvalue()
    assert "\x1b[32mB" not in out and "a\\x1b[32mB" in out
    assert "\x1b[1m" in out  # rich's own styling still works
    assert "line\nnext" in out  # a layout's line break is kept
    assert escape_controls("ok é ñ") == "ok é ñ"
    assert escape_controls("a\tb\x7f\x9b\u202e\n") == "a\\tb\\x7f\\x9b\\u202e\\n"


def test_a_result_line_naming_an_output_with_a_newline_stays_one_line(tmp_path: Path):
    (tmp_path / "a.qrels").write_text("1 0 ley-a 2\n")
    (tmp_path / "q.tsv").write_text("1\taguas\n")
    out = tmp_path / "gs\n\x1b[32mPASS"
    r = CliRunner().invoke(app, ["goldset", "import", "--qrels", str(tmp_path / "a.qrels"), "--queries",
                                 str(tmp_path / "q.tsv"), "--out", str(out)])  # fmt: skip
    assert r.exit_code == 0, r.output
    _clean(r.output)
    assert [ln for ln in r.stdout.splitlines() if ln.strip()] == [ln for ln in r.stdout.splitlines() if "wrote" in ln]
    assert "gs\\n\\x1b[32mPASS" in r.stdout


def test_a_progress_label_holding_a_plugin_name_is_escaped(monkeypatch):
    """A system name reaches the known-item progress label (``known-item <name>``): before, ``[/x]`` in it was a
    rich MarkupError and an ESC sequence went to the terminal."""
    from rich.console import Console

    import harness.progress as progress

    buf = io.StringIO()
    monkeypatch.setattr(progress, "_console", lambda: Console(file=buf, force_terminal=True, width=120))
    with progress.progress_bar("known-item mine[/x]\x1b[1;32mPASS", 2) as advance:
        advance(2)
    with progress.stage("bm25 of mine[/x]\x1b[1;32mPASS"):
        pass
    assert "\x1b[1;32mPASS" not in buf.getvalue() and "mine[/x]\\x1b[1;32mPASS" in buf.getvalue()
