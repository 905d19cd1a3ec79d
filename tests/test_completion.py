"""Issue 42 item 7: shell completion (typer's own): ``harness --install-completion`` / ``--show-completion`` for bash,
zsh and fish, and the completions they install answer with the verbs and options."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from harness.cli import app

#: Typer's switch for naming the shell on the command line (``--show-completion zsh``) instead of detecting the
#: shell the command runs in (shellingham), which is how a user calls it; the scripts are the same.
NAMED = {"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}


def _harness(args, env):
    return CliRunner().invoke(app, args, prog_name="harness", env=env)


@pytest.mark.parametrize(
    ("shell", "marker"),
    [("bash", "complete -o default -F _harness_completion harness"), ("zsh", "#compdef harness"),
     ("fish", "complete --command harness")],
)  # fmt: skip
def test_show_completion_prints_each_shells_script(shell, marker, monkeypatch):
    monkeypatch.setenv(*next(iter(NAMED.items())))  # read when the command is built, before invoke's env applies
    r = _harness(["--show-completion", shell], {})
    assert r.exit_code == 0, r.output
    assert marker in r.stdout and f"_HARNESS_COMPLETE=complete_{shell}" in r.stdout


def test_install_completion_writes_the_script_under_home(tmp_path, monkeypatch):
    monkeypatch.setenv(*next(iter(NAMED.items())))
    r = _harness(["--install-completion", "bash"], {"HOME": str(tmp_path)})
    assert r.exit_code == 0, r.output
    assert "bash completion installed in" in r.stdout
    assert "harness" in (tmp_path / ".bashrc").read_text("utf-8")
    assert "_HARNESS_COMPLETE=complete_bash" in (tmp_path / ".bash_completions" / "harness.sh").read_text("utf-8")


def test_the_installed_completion_answers_with_verbs_and_options():
    bash = _harness([], {"_HARNESS_COMPLETE": "complete_bash", "COMP_WORDS": "harness co", "COMP_CWORD": "1"})
    assert bash.exit_code == 0 and bash.stdout.split() == ["compare", "coverage"]
    words = "harness gate --candidate-s"
    bash = _harness([], {"_HARNESS_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": "2"})
    assert bash.stdout.split() == ["--candidate-system"]
    zsh = _harness([], {"_HARNESS_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": "harness co"})
    assert zsh.exit_code == 0 and '"compare":' in zsh.stdout and '"coverage":' in zsh.stdout
    fish = _harness(
        [],
        {"_HARNESS_COMPLETE": "complete_fish", "_TYPER_COMPLETE_ARGS": "harness co", "_TYPER_COMPLETE_FISH_ACTION":
         "get-args"},
    )  # fmt: skip
    assert fish.exit_code == 0 and fish.stdout.splitlines()[0].startswith("compare")
