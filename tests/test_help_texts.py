"""Every command's ``--help`` renders its texts as written (issue 28 item 6): typer hands each help text to rich as
markup, where ``[...]`` is a style tag and ``:name:`` an emoji code (``5:100:5`` became ``5💯5``). Each command's
help, each option's and argument's help, is rendered the way typer renders it and compared with its source text;
and each command's ``--help`` output is checked to run and to hold no character the texts do not hold."""

from __future__ import annotations

import pytest
import typer
from rich.text import Text
from typer.testing import CliRunner

from harness.cli import app

runner = CliRunner()
ROOT = typer.main.get_command(app)


def _commands(cmd, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], object]]:
    out = [(path, cmd)]
    subs = getattr(cmd, "commands", {})
    for name in sorted(subs):
        out += _commands(subs[name], (*path, name))
    return out


COMMANDS = _commands(ROOT)


def _texts(cmd) -> list[tuple[str, str]]:
    """(where, help text) of the command and each of its parameters."""
    out = [("command", cmd.help or "")]
    out += [(f"option {p.name}", getattr(p, "help", None) or "") for p in cmd.params]
    return [(w, t) for w, t in out if t]


def test_the_tree_has_the_verbs():
    names = {" ".join(p) for p, _ in COMMANDS}
    assert {"run", "gate", "compare", "report", "sweep", "goldset apply"} <= names


@pytest.mark.parametrize(("path", "cmd"), COMMANDS, ids=[" ".join(p) or "harness" for p, _ in COMMANDS])
def test_every_help_text_renders_as_written(path, cmd):
    """rich markup (typer's rendering: ``Text.from_markup``, emoji codes on) must give back the text itself, the
    escaped ``\\[`` read as ``[``: no tag swallowed, no emoji substituted."""
    for where, text in _texts(cmd):
        rendered = Text.from_markup(text).plain
        written = text.replace("\\[", "[")
        assert rendered == written, f"harness {' '.join(path)} {where}: {written!r} renders as {rendered!r}"


@pytest.mark.parametrize(("path", "cmd"), COMMANDS, ids=[" ".join(p) or "harness" for p, _ in COMMANDS])
def test_every_help_output_runs_and_adds_no_character(path, cmd):
    r = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200", "TERM": "dumb"}, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    source = "".join(t for _, t in _texts(cmd))
    box = set("─│╭╮╰╯┌┐└┘├┤┬┴┼━┃ ")
    extra = {ch for ch in r.output if ord(ch) > 127 and ch not in source and ch not in box}
    assert not extra, f"harness {' '.join(path)} --help: characters not in its texts: {sorted(extra)}"


def test_sweep_k_default_is_readable():
    r = runner.invoke(app, ["sweep", "--help"], env={"COLUMNS": "200"}, catch_exceptions=False)
    assert "💯" not in r.output and "from 5 to 100 in steps of 5" in r.output
