"""Issue 26 item 1: no verb writes an output onto one of its own inputs.

Before the fix single-file outputs were checked only for being a link, a folder or a non-file:
``harness validate DS --out DS/<records>.jsonl`` replaced the gold set it validated with the validation JSON and
exited 0; ``gate``, ``compare``, ``report``, ``power`` and ``run`` could overwrite a file inside a run record (which
then no longer loaded), ``evaluate`` its ``--rankings``, ``goldset apply --result-out`` its ``--correction``. Every
verb now refuses, before any work, an output that is, lies inside, or contains one of its inputs (symbolic links
resolved), or another of its outputs: exit 2, one line naming both paths (:func:`harness.io.check_outputs`, called
by each verb through :func:`harness.cli._common.check_paths`).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import write_tiny_corpus, write_tiny_goldset
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import HarnessInputError
from harness.evaluation.pipeline import RunOptions, run


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict[str, Path]:
    """A tiny corpus, gold set, BM25 run record, rankings file, correction file and coverage CSV."""
    tmp = tmp_path_factory.mktemp("outputs")
    corpus = write_tiny_corpus(tmp / "corpus")
    gs = write_tiny_goldset(tmp / "gs", corpus)
    rec = run(gs, corpus, ["bm25"], workdir=tmp / "wd", runs_dir=tmp / "runs", run_id="base",
              options=RunOptions(bootstrap_reps=200))  # fmt: skip
    rankings = tmp / "rankings.jsonl"
    rankings.write_text(json.dumps({"qid": "SP-001", "system": "x", "docs": ["ley-a"]}) + "\n", "utf-8")
    correction = tmp / "fix.jsonl"
    correction.write_text(json.dumps({"qid": "SP-001", "question": "¿Qué dice la ley A?"}) + "\n", "utf-8")
    csv = tmp / "pop.csv"
    csv.write_text("doc_id,hit\n" + "".join(f"d{i},{i % 2}\n" for i in range(30)), "utf-8")
    os.symlink(gs, tmp / "gs-link")
    return {"tmp": tmp, "corpus": corpus, "gs": gs, "rec": rec, "rankings": rankings, "fix": correction, "csv": csv}


def _snapshot(root: Path) -> dict[str, bytes]:
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    return {str(p): p.read_bytes() for p in files}


#: (verb arguments, the output option named, the input that must stay as it was); ``{name}`` is a path of ``world``.
CASES = [
    ("validate {gs} --out {gs}/tiny.jsonl", "--out", "gs"),
    ("validate {gs}/tiny.jsonl --out {gs}/tiny.jsonl --format json", "--out", "gs"),
    ("validate {gs} --out {gs-link}/tiny.jsonl", "--out", "gs"),  # through a linked folder
    ("validate {gs} --out {gs}/report.json", "--out", "gs"),  # a new file inside the input folder
    ("validate {gs} --correction {fix} --out {fix}", "--out", "fix"),
    ("gate --baseline {rec} --candidate {rec} --out {rec}/summary.json", "--out", "rec"),
    ("gate --baseline {rec} --candidate {rec} --verdict {rec}/per_question.jsonl", "--verdict", "rec"),
    ("compare {rec} {rec} --out {rec}/per_question.jsonl", "--out", "rec"),
    ("report {rec} --out {rec}/summary.json", "--out", "rec"),
    ("report {rec} --format markdown --out {rec}/trec/new.md", "--out", "rec"),
    ("power --candidate {rec} --out {rec}/manifest.json", "--out", "rec"),
    ("sweep --run {rec} --inputs bm25,bm25 --out {gs}/tiny.jsonl", "--out", "gs"),  # the gold set the run names
    ("run --corpus {corpus} --goldset {gs} --runs-dir {tmp}/r1 --out {gs}/tiny.meta.json", "--out", "gs"),
    ("run --corpus {corpus} --goldset {gs} --runs-dir {corpus} --run-id x", "--run-id", "corpus"),
    ("evaluate --goldset {gs} --rankings {rankings} --runs-dir {tmp}/r2 --out {rankings}", "--out", "rankings"),
    (
        "goldset apply {gs} --correction {fix} --out {tmp}/gs2 --result-out {fix} --structural-only",
        "--result-out",
        "fix",
    ),  # fmt: skip
    ("goldset import --qrels {fix} --queries {rankings} --corpus {corpus} --out {corpus}/gs", "--out", "corpus"),
    ("goldset resolve {gs}/tiny.jsonl --corpus {corpus} --out {corpus}/resolved", "--out", "corpus"),
    ("known-item --corpus {corpus} --out {tmp}/ki --result-out {corpus}/ley-a.md", "--result-out", "corpus"),
    ("coverage --population {csv} --reps 10 --result-out {csv}", "--result-out", "csv"),
    ("coverage --population {csv} --reps 10 --evidence-file {csv}", "--evidence-file", "csv"),
]


@pytest.mark.parametrize(
    ("args", "option", "victim"), CASES, ids=[f"{i}-{c[0].split(' {')[0]}" for i, c in enumerate(CASES)]
)
def test_an_output_onto_an_input_is_refused_and_the_input_stays(world, args, option, victim):
    before = _snapshot(world[victim])
    names = {**world, "gs_link": world["tmp"] / "gs-link"}
    argv = [a.format(**names) for a in args.replace("{gs-link}", "{gs_link}").split()]
    r = CliRunner().invoke(app, argv)
    assert r.exit_code == 2, r.output
    line = r.output.strip()
    assert len(line.splitlines()) == 1 and line.startswith(f"error: {option} "), r.output
    assert "input" in line and str(world[victim]) in line, r.output  # names both paths
    assert _snapshot(world[victim]) == before


def test_two_outputs_of_one_command_may_not_overlap(world):
    """``run --overwrite`` of a record with ``--out`` inside that record: before the fix the new record was written,
    then the printed result replaced its summary.json (the record no longer loaded)."""
    tmp = world["tmp"]
    shutil.copytree(world["rec"], tmp / "r3" / "x")
    before = _snapshot(tmp / "r3" / "x")
    args = f"run --corpus {world['corpus']} --goldset {world['gs']} --runs-dir {tmp}/r3 --run-id x --overwrite"
    r = CliRunner().invoke(app, [*args.split(), "--bootstrap-reps", "200", "--out", f"{tmp}/r3/x/summary.json"])
    assert r.exit_code == 2 and "--out" in r.output and "--run-id" in r.output and "writes too" in r.output, r.output
    assert _snapshot(tmp / "r3" / "x") == before


def test_check_outputs_resolves_links_and_names_both_paths(tmp_path: Path):
    from harness.io import check_outputs

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.txt").write_text("x")
    os.symlink(tmp_path / "in" / "a.txt", tmp_path / "alias.txt")
    os.link(tmp_path / "in" / "a.txt", tmp_path / "hard.txt")
    a = tmp_path / "in" / "a.txt"
    for out, how, inp in (
        (tmp_path / "alias.txt", "is", a),  # a link to the input
        (tmp_path / "hard.txt", "is", a),  # the same file under another name
        (tmp_path / "in" / "sub" / "b.txt", "lies inside", tmp_path / "in"),
        (tmp_path, "contains", tmp_path / "in"),
    ):
        with pytest.raises(HarnessInputError, match=f"^--out {out}: {how} the input --x {inp}; refusing"):
            check_outputs([("--out", out)], [("--x", inp)])


def test_outputs_apart_from_the_inputs_pass(tmp_path: Path):
    from harness.io import check_outputs

    outs = [("--out", tmp_path / "a.json"), ("--run-id", tmp_path / "runs" / "x"), ("--result-out", "-")]
    check_outputs(outs, [("--goldset", tmp_path / "gs"), ("--rankings", tmp_path / "gs.jsonl"), ("--corpus", None)])
