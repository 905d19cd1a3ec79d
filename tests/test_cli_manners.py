"""CLI manners (issue 17 item 5): --version, --quiet/--verbose, one option name per idea with the old spellings as
hidden deprecated aliases (docs/cli.md's table checked against the command tree), help on every option, stdout
holding only the result, and --overwrite for run ids."""

from __future__ import annotations

import io
import json
import re
from importlib import metadata
from pathlib import Path

import pytest
import typer.main
from conftest import write_tiny_corpus, write_tiny_goldset
from rich.text import Text
from test_cli_known_item import write_corpus
from test_compare import _values, make_run
from typer.testing import CliRunner

from harness import progress
from harness.cli import app
from harness.cli._common import DISTRIBUTION, set_verbosity
from harness.io import OUTPUT_MARKER
from harness.metrics import outcome_of
from harness.report.format import diff_iv

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(autouse=True)
def _reset_verbosity():
    """--quiet / --verbose set process state (as in the console script): put it back after each test."""
    yield
    set_verbosity()


def _tree():
    """(command path, parameter) for every parameter of every command, the app callback's included."""
    out = []

    def walk(cmd, path):
        out.extend((path, p) for p in cmd.params)
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, (*path, name))

    walk(typer.main.get_command(app), ("harness",))
    return out


# ----------------------------------------------------------------------------------------------------------------
# --version, --quiet, --verbose
# ----------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_names_the_distribution_and_the_import_package(flag):
    r = invoke(flag)
    assert r.exit_code == 0, r.output
    line = r.stdout.strip()
    assert "\n" not in line
    assert line.startswith(f"harness {metadata.version(DISTRIBUTION)} (distribution {DISTRIBUTION}, import package")
    assert str(REPO / "harness") in line


def test_quiet_and_verbose_together_are_refused():
    r = invoke("-q", "-v", "validate", "x")
    assert r.exit_code == 2 and r.output.strip() == "error: --quiet and --verbose: give at most one"


def _run(tmp_path: Path, *pre: str, run_id: str = "r", extra=()):
    corpus = tmp_path / "corpus"
    if not corpus.exists():
        write_tiny_corpus(corpus)
        write_tiny_goldset(tmp_path / "gs", corpus)
    return invoke(*pre, "run", "--corpus", corpus, "--goldset", tmp_path / "gs", "--workdir", tmp_path / "wd",
                  "--runs-dir", tmp_path / "runs", "--run-id", run_id, "--bootstrap-reps", "200", *extra)  # fmt: skip


def test_quiet_silences_notices_and_progress_verbose_adds_timings(tmp_path: Path):
    normal = _run(tmp_path, run_id="n")
    assert normal.exit_code == 0, normal.output
    lines = [x for x in normal.stderr.splitlines() if not progress.PLAIN_LINE.match(x)]  # progress lines aside
    notices = [x for x in lines if not x.startswith("warning: ")]
    assert notices[0].startswith("corpus corpus@") and "s to load the gold set and ingest the corpus" in notices[0]
    assert "corpus corpus@" not in normal.stdout  # the run's notices: stderr only
    quiet = _run(tmp_path, "--quiet", run_id="q")
    assert quiet.exit_code == 0 and not progress.is_enabled()
    # only the warnings (few clusters here) are left
    assert quiet.stderr.splitlines() == [x for x in normal.stderr.splitlines() if x.startswith("warning: ")] != []
    # the same result on stdout (the run id in the path line aside)
    assert quiet.stdout.replace("runs/q", "runs/n") == normal.stdout
    set_verbosity()
    verbose = _run(tmp_path, "-v", run_id="v")
    assert verbose.exit_code == 0
    assert re.search(r"^run: \d+\.\d s wall clock \(the whole command, start-up excluded\)$", verbose.stderr, re.M)
    assert re.search(r"^timings_s\.bm25_index_build: [0-9.e-]+ s$", verbose.stderr, re.M)  # the record's timings
    assert "wall clock" not in normal.stderr and "timings_s." not in normal.stderr.replace("record's timings_s.", "")


def test_quiet_keeps_warnings_that_change_a_result(tmp_path: Path):
    base = make_run(tmp_path, "fa", {"bm25": _values(n=8)[0]}, n_clusters=4)
    r = invoke("-q", "power", "--candidate", base)
    assert r.exit_code == 0 and "warning: ICC estimated from 4 clusters" in r.stderr


# ----------------------------------------------------------------------------------------------------------------
# help, names, aliases
# ----------------------------------------------------------------------------------------------------------------


def test_every_option_and_argument_has_help_and_long_options_are_lower_case():
    tree = _tree()
    assert len({path for path, _ in tree}) >= 16  # the walk reaches every verb (and the goldset group)
    no_help = [(path, p.name) for path, p in tree if not (getattr(p, "help", None) or "").strip()]
    assert no_help == []
    upper = [
        (path, opt)
        for path, p in tree
        if not getattr(p, "hidden", False)
        for opt in (*p.opts, *p.secondary_opts)
        if opt.startswith("--") and opt != opt.lower()
    ]
    assert upper == []


def _alias_table() -> set[tuple[str, str, str]]:
    """``(verb, old, new)`` rows of docs/cli.md's table of old -> new spellings."""
    text = (REPO / "docs" / "cli.md").read_text("utf-8")
    rows = set()
    for m in re.finditer(r"^\| ([a-z, -]+) \| `([^`]+)` \| `([^`]+)` \|$", text, re.M):
        for verb in m.group(1).split(","):
            rows.add((verb.split()[-1], m.group(2), m.group(3)))  # "goldset split": the command's own name
    return rows


def test_docs_table_lists_exactly_the_hidden_aliases():
    hidden = set()
    for path, p in _tree():
        if getattr(p, "hidden", False):
            assert p.help.startswith("Deprecated: "), (path, p.opts)
            new = p.help.removeprefix("Deprecated: ").removeprefix("same as ").rstrip(".")
            hidden.update((path[-1], opt, new) for opt in p.opts)
    assert hidden == _alias_table()
    # the new spellings exist and are shown
    shown = {(path[-1], opt) for path, p in _tree() if not getattr(p, "hidden", False) for opt in p.opts}
    for verb, _old, new in _alias_table():
        assert (verb, new.split()[0]) in shown, (verb, new)


@pytest.fixture
def two_runs(tmp_path: Path):
    a, b = _values(n=40, shift=0.01)
    return make_run(tmp_path, "a", {"bm25": a, "x": a}), make_run(tmp_path, "b", {"new": b, "y": b})


@pytest.mark.parametrize(
    ("verb", "old", "new"),
    [
        ("compare", "--system-a", "--baseline-system"),
        ("compare", "--system-b", "--candidate-system"),
        ("gate", "--system-baseline", "--baseline-system"),
        ("gate", "--system-candidate", "--candidate-system"),
    ],
)
def test_old_spelling_works_with_a_one_line_notice_and_both_are_refused(verb, old, new, two_runs, tmp_path):
    a, b = two_runs
    value = "bm25" if "baseline" in new else "new"
    other = ("--candidate-system", "new") if "baseline" in new else ("--baseline-system", "bm25")
    if verb == "compare":
        args = ["compare", a, b, "--metric", "mrr", "--format", "json"]
    else:
        args = ["gate", "--baseline", a, "--candidate", b, "--verdict", tmp_path / "v.json", "--format", "json"]
    r_new = invoke(*args, new, value, *other)
    r_old = invoke(*args, old, value, *other)
    assert r_new.exit_code == r_old.exit_code and r_new.exit_code in (0, 1, 3), r_old.output
    assert r_old.stderr.count(f"note: {old} is deprecated; use {new}\n") == 1
    assert "deprecated" not in r_new.stderr
    assert json.loads(r_old.stdout)["data"] == json.loads(r_new.stdout)["data"]
    both = invoke(*args, new, value, old, value, *other)
    assert both.exit_code == 2 and f"error: {old}: deprecated spelling of {new}; give only {new}" in both.output


def test_errors_name_the_new_spelling(two_runs, tmp_path):
    a, b = two_runs
    r = invoke("gate", "--baseline", a, "--candidate", b, "--verdict", tmp_path / "v.json")
    assert r.exit_code == 2 and "choose with --baseline-system and --candidate-system" in r.output
    r = invoke("compare", a, b, "--metric", "mrr")
    assert r.exit_code == 2 and "choose with --baseline-system and --candidate-system" in r.output
    c = make_run(tmp_path, "c", {"bm25": _values(n=40)[0], "y": _values(n=40)[0]})
    r = invoke("compare", a, c, "--metric", "mrr")  # compares bm25 with bm25 and says how to choose others
    assert r.exit_code == 0 and "(choose with --baseline-system / --candidate-system)" in " ".join(r.output.split())


def test_compare_metric_is_repeatable_like_gate(two_runs):
    a, b = two_runs
    pick = ["--baseline-system", "bm25", "--candidate-system", "new", "--format", "json"]
    r = invoke("compare", a, b, "--metric", "mrr", "--metric", "recall@10", *pick)
    assert [c["metric"] for c in json.loads(r.stdout)["data"]["comparisons"]] == ["mrr", "recall@10"]
    old = invoke("compare", a, b, "--metrics", "mrr,recall@10", *pick)
    assert json.loads(old.stdout)["data"] == json.loads(r.stdout)["data"]


def _untimed(value):
    """``value`` without its wall times (``seconds``) and file lists."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k not in ("seconds", "files")}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def test_coverage_lower_case_options_and_aliases(tmp_path: Path):
    corpus = write_corpus(tmp_path / "c")
    out = tmp_path / "ki"
    r = invoke("known-item", "--corpus", corpus, "--out", out, "--workdir", tmp_path / "wd", "--workers", "1")
    assert r.exit_code == 0, r.output
    common = ["coverage", "--population", out, "--reps", "30", "--types", "0", "--format", "json"]
    new = invoke(*common, "--docs-per-sample", "2,3", "--bootstrap-reps", "49", "--out", tmp_path / "c1")
    old = invoke(*common, "--K", "2,3", "--B", "49", "--out", tmp_path / "c2")
    assert new.exit_code == old.exit_code == 0, old.output
    assert "note: --K is deprecated; use --docs-per-sample" in old.stderr and "--B is deprecated" in old.stderr
    d_new, d_old = json.loads(new.stdout)["data"], json.loads(old.stdout)["data"]
    assert _untimed(d_new) == _untimed(d_old)
    bad = invoke(*common, "--bootstrap-reps", "10", "--out", tmp_path / "c3")
    assert bad.exit_code == 2 and "--bootstrap-reps: 10 must be an integer >= 39" in bad.output


# ----------------------------------------------------------------------------------------------------------------
# stdout holds only the result
# ----------------------------------------------------------------------------------------------------------------


def test_every_judging_verb_writes_only_json_on_stdout_and_warnings_on_stderr(tmp_path: Path):
    few_a, few_b = _values(n=8, shift=0.05, noise=0.05)
    base = make_run(tmp_path, "fa", {"bm25": few_a}, n_clusters=4)
    cand = make_run(tmp_path, "fb", {"new": few_b}, n_clusters=4, missing={"new": {"Q-000"}})
    calls = {
        "compare": ["compare", base, cand, "--metric", "mrr"],
        "gate": ["gate", "--baseline", base, "--candidate", cand, "--verdict", tmp_path / "v.json"],
        "power": ["power", "--candidate", base],
    }
    for verb, args in calls.items():
        r = invoke(*args, "--format", "json")
        assert r.exit_code in (0, 1, 3), (verb, r.output)
        env = json.loads(r.stdout)  # nothing else on stdout
        assert env["kind"] in ("comparison", "gate", "power")
        assert "warning: " in r.stderr, verb
        table = invoke(*args)
        assert "warning:" not in table.stdout and "warning: " in table.stderr, verb


def test_run_and_evaluate_notices_on_stderr(tmp_path: Path):
    corpus = write_tiny_corpus(tmp_path / "corpus")
    gs = write_tiny_goldset(tmp_path / "gs", corpus)
    rankings = tmp_path / "mine.jsonl"  # two of three questions without a ranking
    line = {"qid": "SP-001", "system": "mine", "docs": [["ley-a", 1.0]], "chunks": [["ley-a#0", 1.0]]}
    rankings.write_text(json.dumps(line) + "\n", "utf-8")
    for fmt in ("json", "table"):
        r = invoke("evaluate", "--goldset", gs, "--rankings", rankings, "--runs-dir", tmp_path / "runs",
                   "--format", fmt)  # fmt: skip
        assert r.exit_code == 0, r.output
        assert "mine: 2 of 3 questions have no ranking and score 0" in r.stderr
        assert "no ranking" not in r.stdout
        if fmt == "json":
            assert json.loads(r.stdout)["kind"] == "run"
    r = invoke("run", "--corpus", corpus, "--goldset", gs, "--workdir", tmp_path / "wd", "--runs-dir",
               tmp_path / "runs", "--bootstrap-reps", "200", "--format", "json")  # fmt: skip
    assert r.exit_code == 0 and json.loads(r.stdout)["kind"] == "run"


def test_goldset_import_notes_on_stderr(tmp_path: Path):
    corpus = write_tiny_corpus(tmp_path / "corpus")
    qrels = tmp_path / "m.qrels"
    qrels.write_text("1 0 ley-a 2\n2 0 ley-b 1\n3 0 ley-b 0\n", "utf-8")
    queries = tmp_path / "q.tsv"
    queries.write_text("1\tprimera pregunta\n2\tsegunda pregunta\n3\ttercera pregunta\n", "utf-8")
    r = invoke("goldset", "import", "--qrels", qrels, "--queries", queries, "--corpus", corpus, "--out",
               tmp_path / "gs")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("wrote ") and r.stdout.count("\n") == 1  # the result line only
    assert "note: 1 judged queries have no relevant document and were left out" in r.stderr
    assert "warning: 1 of 2 questions have no document with rel >= 2" in r.stderr
    assert "design: independent (design.sampling in the manifest): each of the 2 queries is its own cluster" in r.stderr
    q = invoke("-q", "goldset", "import", "--qrels", qrels, "--queries", queries, "--corpus", corpus, "--out",
               tmp_path / "gs2")  # fmt: skip
    assert "note:" not in q.stderr and "warning: 1 of 2" in q.stderr  # quiet keeps the warning only


# ----------------------------------------------------------------------------------------------------------------
# --overwrite for run ids
# ----------------------------------------------------------------------------------------------------------------


def test_existing_run_id_suggests_overwrite_and_overwrite_replaces_only_harness_records(tmp_path: Path):
    corpus = write_tiny_corpus(tmp_path / "corpus")
    gs = write_tiny_goldset(tmp_path / "gs", corpus)
    rankings = tmp_path / "mine.run"
    rankings.write_text("SP-001 Q0 ley-a 1 2.0 mine\nSP-002 Q0 dof-c 1 2.0 mine\n", "utf-8")
    runs = tmp_path / "runs"
    args = ["evaluate", "--goldset", gs, "--rankings", rankings, "--runs-dir", runs, "--run-id", "e"]
    assert invoke(*args).exit_code == 0
    (runs / "e" / "stale.txt").write_text("from the first run", "utf-8")
    again = invoke(*args)
    assert again.exit_code == 2 and "give --overwrite" in again.output and (runs / "e" / "stale.txt").exists()
    replaced = invoke(*args, "--overwrite")
    assert replaced.exit_code == 0, replaced.output
    assert not (runs / "e" / "stale.txt").exists() and (runs / "e" / OUTPUT_MARKER).is_file()
    # a folder harness did not write is never replaced, even with --overwrite
    mine = runs / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep", "utf-8")
    r = invoke("evaluate", "--goldset", gs, "--rankings", rankings, "--runs-dir", runs, "--run-id", "mine",
               "--overwrite")  # fmt: skip
    assert r.exit_code == 2 and "not a run record harness wrote" in r.output
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    # run: refused before any work (no workdir created), then replaced with --overwrite
    first = _run(tmp_path, run_id="r")
    assert first.exit_code == 0
    refused = _run(tmp_path, run_id="r", extra=["--workdir", tmp_path / "wd2"])
    assert refused.exit_code == 2 and "give --overwrite" in refused.output and not (tmp_path / "wd2").exists()
    assert _run(tmp_path, run_id="r", extra=["--overwrite"]).exit_code == 0


# ----------------------------------------------------------------------------------------------------------------
# progress displays on every long step
# ----------------------------------------------------------------------------------------------------------------


def test_every_long_step_shows_progress_with_elapsed_time_and_eta(tmp_path: Path, monkeypatch):
    """With stderr a terminal (a forced-terminal console recording what it drew), each long step draws its display:
    bars (with an ETA) for ingest, BM25 tokenisation, known-item search and the coverage study; spinners (with the
    elapsed time) for the BM25 index builds, the known-item re-chunking, tokenisation and index build, and the
    metrics. Nothing is drawn on a console that is not a terminal, or with --quiet."""
    from rich.console import Console

    screen = io.StringIO()
    monkeypatch.setattr(progress, "_console", lambda: Console(file=screen, force_terminal=True, width=120))

    def drawn() -> str:
        text = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", screen.getvalue())
        screen.seek(0), screen.truncate()
        return text

    assert _run(tmp_path, run_id="p").exit_code == 0
    text = drawn()
    for label in ("ingest", "BM25: tokenise chunks", "BM25: build the chunk index", "BM25: build the document index",
                  "metrics and intervals"):  # fmt: skip
        assert label in text, label
    assert re.search(r"BM25: tokenise chunks.*\d+/\d+.*\d:\d\d:\d\d ETA", text), text[-2000:]
    corpus = write_corpus(tmp_path / "c")
    r = invoke("known-item", "--corpus", corpus, "--out", tmp_path / "ki", "--workdir", tmp_path / "wd", "--workers",
               "1", "--coverage", "--reps", "30", "--docs-per-sample", "3")  # fmt: skip
    assert r.exit_code == 0, r.output
    text = drawn()
    labels = [
        "known-item: re-chunk the corpus (100 words)",
        "known-item: tokenise 32 chunks and their queries",
        "known-item bm25: index build",
        "known-item bm25 ",
        "coverage study (samples, every design)",
    ]
    for label in labels:
        assert label in text, label
    assert re.search(r"coverage study \(samples, every design\).*\d+/\d+.*ETA", text)
    assert _run(tmp_path, "-q", run_id="p2").exit_code == 0 and drawn() == ""


# ----------------------------------------------------------------------------------------------------------------
# tables at 100 columns
# ----------------------------------------------------------------------------------------------------------------

BASELINE = REPO / "runs" / "baselines" / "mx-leyes-dof-eval-v1-six-systems"


def _table(kind: str, value, width: int) -> str:
    """The table format of a result as a terminal of ``width`` columns shows it (no colours)."""
    from rich.console import Console

    from harness.report.formats import Result, emit

    buf = io.StringIO()
    screen = Console(file=buf, width=width, color_system=None, force_terminal=True)
    emit(Result(kind, value), "table", console=screen)
    return buf.getvalue()


def _intervals_whole(text: str, width: int) -> None:
    for line in text.splitlines():
        assert len(line) <= width, line
        assert "…" not in line, line  # no cell cut short
        assert line.count("[") == line.count("]"), line  # no interval split over two lines


def test_run_compare_and_gate_tables_fit_100_columns_with_intervals_on_one_line(tmp_path: Path):
    from harness.evaluation.compare import compare_runs
    from harness.evaluation.gate import gate
    from harness.evaluation.runs import load_run
    from harness.report.terminal import EVIDENCE_METRICS, MAIN_METRICS, fmt_interval
    from harness.stats.shown import ShownIntervals

    rec = load_run(BASELINE)
    narrow, wide = _table("run", rec, 100), _table("run", rec, 150)
    tables = narrow.split("gold chunks found deeper")[0]  # the lists of chunk ids after the tables are not cells
    _intervals_whole(tables, 100)
    shown = ShownIntervals.for_run(rec)
    for system, s in rec.summary.systems.items():
        for m in (*MAIN_METRICS, *EVIDENCE_METRICS):
            ov = s["all"].overall.get(m)
            cell = fmt_interval(ov, shown.method(outcome_of(m), ov.intervals))
            assert cell.partition(" ")[2] in tables and cell in wide, (system, m)  # narrow: stacked; wide: as before
    assert "negative_false_premise" in tables  # per-category table transposed, labels whole
    rep = compare_runs(BASELINE, BASELINE, metrics=("mrr", "recall@10", "evidence_recall@10"), system_a="bm25",
                       system_b="w0.75", reps=200)  # fmt: skip
    text = _table("comparison", rep, 100)
    _intervals_whole(text, 100)
    for c in rep.comparisons:
        assert c.system_b in text and c.metric in text
    for c in rep.comparisons:  # each paired interval whole, on one line, as the wide table writes it
        assert Text.from_markup(diff_iv(c.diff, c.interval)).plain in text, c.metric
    v = gate(BASELINE, BASELINE, metric=["mrr", "recall@10"], margin=0.02, system_baseline="bm25",
             system_candidate="w0.75")  # fmt: skip
    text = _table("gate", v, 100)
    _intervals_whole(text.split("gold set ")[0], 100)
    for c in v.checks:  # each check's interval whole, as its one-line form writes it
        assert f"[{c.lower:+.4f}, {c.upper:+.4f}]" in text, c.metric
