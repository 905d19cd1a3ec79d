"""Issue 18 item 7: every numeric option of every verb refuses a bad value with one located line and exit 2.

Before the fix ``--doc-depth`` / ``--chunk-depth`` of 0, -5 or 10 (below the largest reported k, 20) gave a traceback
(exit 1) in ``run`` and ``evaluate``, a negative ``--seed`` a traceback, ``embed --batch-chunks 0`` an error after the
embedding work, ``power --delta inf`` a message about an ICC, and ``coverage --types -1`` / ``--per-type 0`` ran the
study. The command line now checks them while parsing (:mod:`harness.cli._checks`), before any work; library checks
that already answered with a located line (``--index-fraction``, ``gate --alpha``) are walked too.
"""

from __future__ import annotations

import inspect
import json
import shutil
import typing
from pathlib import Path

import pytest
from conftest import write_tiny_corpus, write_tiny_goldset
from typer.testing import CliRunner

from harness.cli import app
from harness.cli._common import goldset_app
from harness.evaluation.pipeline import RunOptions, run

#: (verb, option, bad value, the message after "error: <option>: ").
CASES = [
    *[
        (verb, opt, v, msg)
        for verb in ("run", "evaluate")
        for opt in ("--doc-depth", "--chunk-depth")
        for v, msg in (
            ("0", "0 must be an integer >= 1"),
            ("-5", "-5 must be an integer >= 1"),
            ("10", "10 is below the largest reported k (20)"),
            ("19", "19 is below the largest reported k (20)"),
        )
    ],
    ("run", "--seed", "-1", "-1 must be an integer >= 0"),
    ("evaluate", "--seed", "-1", "-1 must be an integer >= 0"),
    ("run", "--bootstrap-reps", "0", "0 must be an integer >= 100"),
    ("run", "--bootstrap-reps", "99", "99 must be an integer >= 100"),
    ("run", "--index-fraction", "0", "Input should be greater than 0"),
    ("run", "--index-fraction", "1.5", "Input should be less than or equal to 1"),
    ("run", "--index-fraction", "nan", "Input should be a finite number"),
    ("embed", "--index-fraction", "inf", "Input should be a finite number"),
    ("embed", "--batch-chunks", "0", "0 must be an integer >= 1"),
    ("embed", "--workers", "0", "0 must be an integer >= 1"),
    ("embed", "--rescore", "-1", "-1 must be an integer >= 0"),
    ("run", "--rescore", "-1", "-1 must be an integer >= 0"),
    ("known-item", "--rescore", "-1", "-1 must be an integer >= 0"),
    ("embed", "--shard-size", "-1", "-1 must be an integer >= 1"),
    ("goldset import", "--required-rel", "0", "0 must be an integer >= 1"),
    ("compare", "--reps", "0", "0 must be an integer >= 1"),
    ("compare", "--seed", "-1", "-1 must be an integer >= 0"),
    ("gate", "--alpha", "0", "0.0 must lie in (0, 0.5)"),
    ("gate", "--alpha", "nan", "nan must lie in (0, 0.5)"),
    ("power", "--delta", "0", "0.0 must be a finite number > 0"),
    ("power", "--delta", "inf", "inf must be a finite number > 0"),
    ("power", "--alpha", "0.5", "0.5 must be a finite number in (0, 0.5)"),
    ("power", "--power", "1", "1.0 must be a finite number in (0, 1)"),
    ("power", "--power", "nan", "nan must be a finite number in (0, 1)"),
    ("report", "--margin", "-0.1", "-0.1 must be a finite number >= 0"),
    ("report", "--margin", "inf", "inf must be a finite number >= 0"),
    ("known-item", "--chunk-words", "0", "0 must be an integer >= 1"),
    ("known-item", "--chunk-words", "50,-5", "-5 (in '50,-5') must be an integer >= 1"),
    ("known-item", "--query-words", "0", "0 must be an integer >= 1"),
    ("known-item", "--reps", "9", "9 must be an integer >= 10"),
    ("known-item", "--K", "1", "1 must be an integer >= 2"),
    ("known-item", "--K", "x", "'x' is not a comma-separated list of integers"),
    ("known-item", "--workers", "0", "0 must be an integer >= 1"),
    ("known-item", "--chunk-depth", "0", "0 must be an integer >= 1"),
    ("coverage", "--reps", "5", "5 must be an integer >= 10"),
    ("coverage", "--K", "5,0", "0 (in '5,0') must be an integer >= 2"),
    ("coverage", "--types", "-1", "-1 must be an integer >= 0"),
    ("coverage", "--per-type", "0", "0 must be an integer >= 1"),
    ("coverage", "--B", "10", "10 must be an integer >= 39"),
    ("coverage", "--seed", "-1", "-1 must be an integer >= 0"),
    ("evaluate", "--bootstrap-reps", "99", "99 must be an integer >= 100"),
    ("coverage", "--bootstrap-reps", "10", "10 must be an integer >= 39"),
    ("known-item", "--docs-per-sample", "1", "1 must be an integer >= 2"),
    ("coverage", "--docs-per-sample", "5,0", "0 (in '5,0') must be an integer >= 2"),
    ("coverage", "--threads", "0", "0 must be an integer >= 1"),
    ("show", "--around", "-1", "-1 must be an integer >= 0"),
    ("goldset split", "--seed", "-1", "-1 must be an integer >= 0"),
    ("goldset plan", "--documents", "1", "1 must be an integer >= 2"),
    ("goldset plan", "--seed", "-1", "-1 must be an integer >= 0"),
    ("goldset plan", "--chunk-words", "0", "0 must be an integer >= 1"),
    ("goldset plan", "--query-words", "0", "0 must be an integer >= 1"),
    ("known-item", "--sample", "1", "1 must be an integer >= 2"),
    ("known-item", "--plugin-timeout", "0", "0.0 must be a finite number > 0"),
    ("gate", "--known-item-margin", "-0.1", "-0.1 must be a finite number >= 0"),
    ("known-item", "--seed", "-1", "-1 must be an integer >= 0"),
    ("goldset split", "--dev-fraction", "1", "1.0 must be a finite number in (0, 1)"),
    ("goldset split", "--dev-fraction", "nan", "nan must be a finite number in (0, 1)"),
]

#: Numeric options given as text (comma lists or grids), walked like the int and float ones.
TEXT_NUMERIC = {
    ("known-item", "--chunk-words"),
    ("known-item", "--K"),
    ("coverage", "--K"),
    ("known-item", "--docs-per-sample"),
    ("coverage", "--docs-per-sample"),
    ("sweep", "--w"),
    ("sweep", "--k"),
}

#: Numeric options not walked here, with the reason.
ELSEWHERE = {
    ("gate", "--margin"): "the gate's margin rule is reworked on the gate branch (harness.evaluation.gate)",
    ("sweep", "--w"): "the weight grid is parsed and checked by harness.evaluation.sweep (tests/test_sweep.py)",
    ("sweep", "--k"): "the rrf k grid is parsed and checked by harness.evaluation.sweep (tests/test_sweep.py)",
}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, list]:
    """Valid arguments of each verb, so that the numeric option is the only bad input."""
    tmp = tmp_path_factory.mktemp("options")
    corpus = write_tiny_corpus(tmp / "corpus")
    gs = write_tiny_goldset(tmp / "gs", corpus)
    wd = ["--workdir", tmp / "wd"]
    rec = run(gs, corpus, ["bm25"], workdir=tmp / "wd", runs_dir=tmp / "runs", run_id="r", options=RunOptions())
    pop = tmp / "pop"
    pop.mkdir()
    rows = [{"system": "bm25", "doc_id": f"d{i}", "n": 5, "s": i % 5, "doc_type": f"t{i % 3}"} for i in range(60)]
    (pop / "per_document.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    (tmp / "qrels.txt").write_text("SP-001 0 ley-a 2\n", "utf-8")
    (tmp / "queries.tsv").write_text("SP-001\t¿qué?\n", "utf-8")
    out = tmp / "out"
    return {
        "out": [out],
        "run": ["run", "--corpus", corpus, "--goldset", gs, "--runs-dir", out, *wd],
        "evaluate": ["evaluate", "--goldset", gs, "--rankings", rec / "trec" / "bm25.document.run", "--runs-dir", out],
        "embed": ["embed", "--corpus", corpus, *wd],
        "goldset import": [
            "goldset",
            "import",
            "--out",
            out,
            "--qrels",
            tmp / "qrels.txt",
            "--queries",
            tmp / "queries.tsv",
        ],
        "compare": ["compare", rec, rec],
        "show": ["show", "ley-a#0", "--corpus", corpus],
        "goldset split": ["goldset", "split", gs, "--out", out, "--seed", "0"],
        "goldset plan": ["goldset", "plan", "--corpus", corpus, "--out", out],
        "gate": ["gate", "--baseline", rec, "--candidate", rec, "--verdict", out],
        "power": ["power", "--run", rec],
        "report": ["report", rec, "--out", out],
        "known-item": ["known-item", "--corpus", corpus, "--out", out, "--coverage", *wd],
        "coverage": ["coverage", "--population", pop, "--out", out],
    }


@pytest.mark.parametrize(("verb", "option", "value", "message"), CASES, ids=[f"{c[0]} {c[1]} {c[2]}" for c in CASES])
def test_a_bad_numeric_option_is_one_located_line_and_exit_2(inputs, verb, option, value, message):
    args = [str(a) for a in inputs[verb]] + [option, value]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 2, r.output
    lines = [x for x in r.output.splitlines() if not x.startswith("harness: ")]  # notices of other layers
    assert len(lines) == 1, r.output
    assert lines[0].startswith(f"error: {option}: {message}"), lines[0]
    assert not Path(inputs["out"][0]).exists()  # nothing written


def _numeric_options() -> set[tuple[str, str]]:
    """``(verb, option)`` of every int or float option of every command (from the commands' signatures)."""
    out = set()
    for prefix, typer_app in (("", app), ("goldset ", goldset_app)):
        for cmd in typer_app.registered_commands:
            fn = cmd.callback
            verb = prefix + (cmd.name or fn.__name__.replace("_", "-"))
            hints = typing.get_type_hints(fn)
            for name, p in inspect.signature(fn).parameters.items():
                if hints.get(name) in (int, float):
                    decls = [d for d in (p.default.param_decls or ()) if d.startswith("--")]
                    out.add((verb, decls[0] if decls else "--" + name.replace("_", "-")))
    return out


def test_every_numeric_option_of_every_verb_is_walked():
    walked = {(c[0], c[1]) for c in CASES}
    every = _numeric_options() | TEXT_NUMERIC
    assert ("run", "--doc-depth") in every and ("coverage", "--B") in every and ("power", "--power") in every
    missing = every - walked - set(ELSEWHERE)
    assert not missing, f"numeric options without a bad-value case: {sorted(missing)}"
    assert not (walked & set(ELSEWHERE)) and set(ELSEWHERE) <= every


@pytest.mark.parametrize(
    ("verb", "option", "value"), [("run", "--doc-depth", "20"), ("evaluate", "--chunk-depth", "20")]
)
def test_a_depth_equal_to_the_largest_k_is_accepted(inputs, verb, option, value):
    args = [str(a) for a in inputs[verb]] + [option, value, "--format", "json"]
    r = CliRunner().invoke(app, args)
    try:
        assert r.exit_code == 0, r.output
    finally:
        shutil.rmtree(inputs["out"][0], ignore_errors=True)
