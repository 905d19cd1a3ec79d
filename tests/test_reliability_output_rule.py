"""Issue 44 item 1: one output-path rule for every verb (:func:`harness.io.check_outputs`).

Before the fix these replaced an input and exited 0: ``coverage --run RUN --result-out RUN/summary.json`` (also
``per_question.jsonl``, ``manifest.json``), ``sweep --run RUN --plot RUN/summary.json``, ``goldset plan --corpus C
--result-out C/metadata.jsonl``, and ``report --out`` / ``run --out`` onto a file inside another run record (one the
verb was not given). Now every output path, resolved, is compared with every input of the verb, the gold set its run
records name, and every file of any run record, corpus or gold set it would land in: refused with one line naming
the option and the input, exit 2, nothing written.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import tiny_records, write_tiny_corpus, write_tiny_goldset
from typer.testing import CliRunner

from harness import io
from harness.cli import app
from harness.errors import HarnessInputError
from harness.evaluation.pipeline import RunOptions, run


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict[str, Path]:
    """A tiny corpus, gold set, a BM25 + TF-IDF run record ``base``, a second record ``other`` and a known-item
    folder (5-word chunks, so the tiny corpus has queries)."""
    tmp = tmp_path_factory.mktemp("rule")
    corpus = write_tiny_corpus(tmp / "corpus")
    recs = [{**r, "split": ("dev", "test")[i % 2]} for i, r in enumerate(tiny_records())]  # sweep needs both
    gs = write_tiny_goldset(tmp / "gs", corpus, recs)
    rec = run(gs, corpus, ["bm25", "tfidf"], workdir=tmp / "wd", runs_dir=tmp / "runs", run_id="base",
              options=RunOptions(bootstrap_reps=200))  # fmt: skip
    shutil.copytree(rec, tmp / "runs" / "other")
    argv = f"known-item --corpus {corpus} --out {tmp / 'ki'} --chunk-words 5 --query-words 2 --workers 1"
    argv += f" --workdir {tmp / 'wd'} --format json --result-out {tmp / 'k.json'}"
    assert CliRunner().invoke(app, argv.split()).exit_code == 0
    return {"tmp": tmp, "gs": gs}


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


#: (verb arguments, the output option named, the folder that must stay as it was); ``{name}``: a path of the copy
#: of ``world`` each case gets (``rec`` = runs/base, ``other`` = runs/other), ``{gs}`` the gold set ``base`` names.
CASES = [
    ("coverage --run {rec} --population {ki} --reps 10 --result-out {rec}/summary.json", "--result-out", "rec"),
    ("coverage --run {rec} --population {ki} --reps 10 --result-out {rec}/per_question.jsonl", "--result-out", "rec"),
    ("coverage --run {rec} --population {ki} --reps 10 --result-out {rec}/manifest.json", "--result-out", "rec"),
    ("sweep --run {rec} --inputs bm25,tfidf --plot {rec}/summary.json", "--plot", "rec"),
    (
        "goldset plan --corpus {corpus} --out {tmp}/plan --documents 3 --chunk-words 5 --query-words 2 "
        "--result-out {corpus}/metadata.jsonl",
        "--result-out",
        "corpus",
    ),  # fmt: skip
    ("report {rec} --out {other}/summary.json", "--out", "other"),  # a record the verb was not given
    ("report {rec} --format markdown --out {other}/trec/new.md", "--out", "other"),
    (
        "run --corpus {corpus} --goldset {gs2} --runs-dir {tmp}/r1 --bootstrap-reps 200 --out {other}/summary.json",
        "--out",
        "other",
    ),  # fmt: skip
    (
        "evaluate --goldset {gs2} --rankings {rec}/trec/bm25.document.run --runs-dir {tmp}/r2 --out {other}/x.json",
        "--out",
        "other",
    ),  # fmt: skip
    (
        "known-item --corpus {corpus} --out {other} --overwrite --chunk-words 5 --query-words 2 --workers 1",
        "--out",
        "other",
    ),  # fmt: skip  (a run record replaced by a folder of another kind)
    ("known-item --corpus {corpus} --out {other}/ki --chunk-words 5 --query-words 2 --workers 1", "--out", "other"),
    ("report {rec} --out {gs}/tiny.meta.json", "--out", "gs"),  # the gold set the run names (not a verb input)
]


@pytest.mark.parametrize(
    ("args", "option", "victim"), CASES, ids=[f"{i}-{c[0].split()[0]}" for i, c in enumerate(CASES)]
)
def test_an_output_onto_a_record_or_input_is_refused_and_nothing_changes(world, tmp_path, args, option, victim):
    src = world["tmp"]
    for name in ("runs", "corpus", "ki", "gs"):
        shutil.copytree(src / name, tmp_path / name, symlinks=True)
    names = {"tmp": tmp_path, "rec": tmp_path / "runs" / "base", "other": tmp_path / "runs" / "other"}
    names |= {"corpus": tmp_path / "corpus", "ki": tmp_path / "ki", "gs2": tmp_path / "gs", "gs": world["gs"]}
    watched = ("rec", "other", "corpus", "ki", "gs")
    before = {k: _snapshot(names[k]) for k in watched}
    argv = [a.format(**names) for a in args.split()]
    r = CliRunner().invoke(app, [*argv, "--workdir", str(src / "wd")] if argv[0] in ("run", "known-item") else argv)
    assert r.exit_code == 2, r.output
    line = r.output.strip()
    assert len(line.splitlines()) == 1 and line.startswith(f"error: {option} "), r.output
    assert "input" in line and str(names[victim]) in line, r.output  # names the option and the input
    assert {k: _snapshot(names[k]) for k in watched} == before
    assert not (tmp_path / "plan").exists() and not (tmp_path / "r1").exists() and not (tmp_path / "r2").exists()


def test_record_around_finds_run_records_corpora_and_gold_sets(world):
    rec, gs = world["tmp"] / "runs" / "base", world["gs"]
    assert io.record_around(rec / "trec" / "x.run") == ("run record", rec.resolve())
    assert io.record_around(gs / "report.json") == ("gold set", gs.resolve())
    assert io.record_around(world["tmp"] / "elsewhere" / "a.json") is None
    assert io.record_around(rec) is None  # the record itself is the run's own output when it is overwritten
    lone = world["tmp"] / "lone"
    lone.mkdir(exist_ok=True)
    (lone / "photo.meta.json").write_text("{}", "utf-8")  # another tool's file: no gold set without its records
    assert io.record_around(lone / "a.json") is None
    (lone / "photo.jsonl").write_text("", "utf-8")
    assert io.record_around(lone / "a.json") == ("gold set", lone.resolve())


def test_a_link_into_a_run_record_is_resolved(world, tmp_path: Path):
    link = tmp_path / "alias.json"
    link.symlink_to(world["tmp"] / "runs" / "other" / "summary.json")
    with pytest.raises(HarnessInputError, match=r"^--out .*alias.json: lies inside the run record .*other, an input"):
        io.check_outputs([("--out", link)])


def test_outputs_beside_records_still_pass(world, tmp_path: Path):
    io.check_outputs([("--out", world["tmp"] / "runs" / "report.html"), ("--run-id", world["tmp"] / "runs" / "new")])
    r = CliRunner().invoke(
        app, ["report", str(world["tmp"] / "runs" / "base"), "--format", "markdown", "--out", str(tmp_path / "r.md")]
    )
    assert r.exit_code == 0, r.output
    assert (tmp_path / "r.md").is_file()
