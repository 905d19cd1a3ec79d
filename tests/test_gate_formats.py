"""The gate's outputs for machines and people (issue 17 item 1): ``--format table|json|markdown|junit``, ``--out``,
the deprecated ``--verdict``, output-path safety (the trial's traps: ``--verdict -``, ``/dev/null``,
``/nonexistent/x.json``, the always-written ``./gate-verdict.json``), the Markdown pull-request comment, JUnit XML,
the regressed questions of ``compare`` and ``gate``, the missing-question warning on stderr and ``HARNESS_WORKDIR``.

junitparser is not installable here (no local wheel), so the JUnit XML is parsed with :mod:`xml.etree` and checked
against the shape of the JUnit XML schema (Jenkins ``junit-10.xsd``: element names, nesting, required attributes,
counts that agree with the test cases).
"""

from __future__ import annotations

import json
import os
import stat
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from conftest import write_tiny_corpus
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_compare import CATS
from typer.testing import CliRunner

from harness.cli import app
from harness.evaluation.compare import compare_runs
from harness.evaluation.gate import gate
from harness.evaluation.record import RUN_SCHEMA_VERSION
from harness.evaluation.runs import write_run_record
from harness.report.junit import junit_xml, xml_safe

runner = CliRunner()


def ranked_run(runs: Path, run_id: str, ranks: dict[str, dict[str, int | None]], *, n_clusters: int = 20,
               missing: dict[str, set[str]] | None = None) -> Path:  # fmt: skip
    """A run record whose question i (cluster i % n_clusters) has its one gold document and gold chunk at
    ``ranks[system][qid]`` (``None``: not retrieved); mrr and evidence_mrr are ``1 / rank`` (0 when not retrieved)."""
    qids = sorted(next(iter(ranks.values())))
    labels = {q: f"c{i % n_clusters}" for i, q in enumerate(qids)}
    rows = []
    for system, rs in ranks.items():
        for i, q in enumerate(qids):
            r = rs[q]
            rr = 0.0 if r is None else 1.0 / r
            rows.append(
                {
                    "system": system,
                    "qid": q,
                    "category": CATS[i % len(CATS)],
                    "split": None,
                    "cluster": labels[q],
                    "metrics": {"mrr": rr, "evidence_mrr": rr, "recall@10": float(r is not None and r <= 10)},
                    "gold_doc_ranks": {f"doc-{q}": r, f"doc-{q}-b": None},
                    "gold_chunk_ranks": {f"doc-{q}#0": None if r is None else r + 1},
                    "flags": {"missing": True} if q in (missing or {}).get(system, set()) else {},
                }
            )
    manifest = {
        "schema_version": RUN_SCHEMA_VERSION,
        "run_id": run_id,
        "goldset": {"sha256": "a" * 64, "name": "g", "version": "1"},
        "corpus": {"corpus_hash": "h" * 64, "chunker_id": "md-words-v1"},
        "depths": {"document": 50, "chunk": 200},
        "systems": list(ranks),
        "clusters": {"mode": "components", "n_clusters": n_clusters, "labels": labels},
    }
    return write_run_record(
        runs, run_id, manifest=manifest, per_question=rows, summary={"systems": {}}, trec_runs={}, qrels={}
    )


QIDS = [f"Q-{i:03d}" for i in range(60)]


def _base_ranks(seed: int = 0) -> dict[str, int]:
    rng = np.random.default_rng(seed)
    return {q: int(r) for q, r in zip(QIDS, rng.integers(1, 4, len(QIDS)), strict=True)}


def scenario(kind: str) -> dict[str, int | None]:
    """Candidate ranks against :func:`_base_ranks`: ``pass`` (improves 20 questions, regresses 12 by one rank),
    ``fail`` (every question two ranks lower), ``inconclusive`` (independent ranks: noisy, mean difference ~0)."""
    base = _base_ranks()
    if kind == "fail":
        return {q: r + 2 for q, r in base.items()}
    if kind == "inconclusive":
        return _base_ranks(seed=7)
    out = dict(base)
    for i, q in enumerate(QIDS):
        if i % 3 == 0:
            out[q] = 1
        elif i % 5 == 1:
            out[q] = base[q] + 1
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("gate-formats")
    out = {"base": ranked_run(tmp, "base", {"bm25": _base_ranks()})}
    for kind in ("pass", "fail", "inconclusive"):
        out[kind] = ranked_run(tmp, kind, {"new": scenario(kind)})
    return out


def _gate(runs, kind: str, *args, cwd: Path | None = None):
    argv = ["gate", "--baseline", str(runs["base"]), "--candidate", str(runs[kind]), *map(str, args)]
    if cwd is None:
        return runner.invoke(app, argv)
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return runner.invoke(app, argv)
    finally:
        os.chdir(old)


def test_scenarios_give_the_three_decisions(runs):
    for kind, code in (("pass", 0), ("fail", 1), ("inconclusive", 3)):
        assert _gate(runs, kind).exit_code == code, kind


# --- files: nothing unless asked, never a device, a folder, a fifo or a missing folder --------------------------


def test_no_file_is_written_unless_asked(runs, tmp_path):
    """Trap: ``./gate-verdict.json`` was always written (fails before the fix)."""
    r = _gate(runs, "pass", cwd=tmp_path)
    assert r.exit_code == 0 and r.stdout.startswith("PASS: mrr new - bm25")
    assert list(tmp_path.iterdir()) == []


def test_verdict_dash_is_json_on_stdout_and_writes_no_file(runs, tmp_path):
    """Trap: ``--verdict -`` created a file named ``-`` (fails before the fix)."""
    r = _gate(runs, "fail", "--verdict", "-", cwd=tmp_path)
    assert r.exit_code == 1
    env = json.loads(r.stdout)
    assert env["kind"] == "gate" and env["data"]["decision"] == "FAIL"
    assert list(tmp_path.iterdir()) == []
    r = _gate(runs, "fail", "--verdict", "-", "--format", "markdown", cwd=tmp_path)
    assert r.exit_code == 2 and "--verdict -" in r.stderr and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("flag", ["--out", "--verdict"])
def test_devices_folders_and_fifos_are_refused(runs, tmp_path, flag):
    """Trap: ``--verdict /dev/null`` replaced the device with a regular file (the one check of every --out)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    for target in ("/dev/null", folder, fifo):
        r = _gate(runs, "pass", flag, target)
        assert r.exit_code == 2, (flag, target, r.output)
        assert r.stderr.strip().count("\n") == 0 and f"{flag} {target}" in r.stderr
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and list(folder.iterdir()) == []


@pytest.mark.parametrize("flag", ["--out", "--verdict"])
def test_missing_parent_folders_are_not_created(runs, tmp_path, flag):
    """Trap: ``--verdict /nonexistent/x.json`` created the missing folders."""
    for target in (Path("/nonexistent-harness-test/x.json"), tmp_path / "no" / "such" / "x.json"):
        r = _gate(runs, "pass", flag, target)
        assert r.exit_code == 2 and "does not exist" in r.stderr, r.output
        assert not target.parent.exists()


def test_verdict_file_and_out_file_are_written_atomically_and_hold_the_outputs(runs, tmp_path):
    for fmt in ("table", "json", "markdown", "junit"):
        out = tmp_path / f"gate.{fmt}"
        shown = _gate(runs, "inconclusive", "--format", fmt)
        r = _gate(runs, "inconclusive", "--format", fmt, "--out", out, "--verdict", tmp_path / "v.json")
        assert r.exit_code == 3 and r.stdout == ""
        if fmt != "table":  # the table's width differs on a terminal
            assert out.read_text("utf-8") == shown.stdout
        data = json.loads((tmp_path / "v.json").read_text("utf-8"))
        assert data["decision"] == "INCONCLUSIVE" and data["exit_code"] == 3
    r = _gate(runs, "pass", "--out", tmp_path / "same.json", "--verdict", tmp_path / "same.json")
    assert r.exit_code == 2 and "the same file" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gate.json", "gate.junit", "gate.markdown", "gate.table",
                                                          "v.json"]  # fmt: skip


# --- JSON, Markdown, JUnit --------------------------------------------------------------------------------------


def test_json_lists_every_regressed_question_with_first_gold_ranks(runs):
    env = json.loads(_gate(runs, "fail", "--format", "json").stdout)
    regs = env["data"]["checks"][0]["regressions"]
    base, cand = _base_ranks(), scenario("fail")
    assert len(regs) == 60  # all of them, not capped
    assert {r["qid"] for r in regs} == set(QIDS)
    for r in regs:
        assert (r["rank_baseline"], r["rank_candidate"]) == (base[r["qid"]], cand[r["qid"]])
        assert r["diff"] == pytest.approx(1 / cand[r["qid"]] - 1 / base[r["qid"]]) and r["level"] == "document"
    assert [r["diff"] for r in regs] == sorted(r["diff"] for r in regs)  # worst first


def test_chunk_metric_regressions_use_gold_chunk_ranks(runs):
    v = gate(runs["base"], runs["fail"], metric="evidence_mrr")
    r = v.checks[0].regressions[0]
    assert r["level"] == "chunk" and r["rank_baseline"] == _base_ranks()[r["qid"]] + 1


def test_table_caps_the_regressions_at_ten_with_a_count_of_the_rest(runs):
    r = _gate(runs, "fail")
    assert "60 regressed questions (first gold document rank)" in r.stdout
    assert "... and 50 more (every one in --format json)" in r.stdout
    shown = [q for q in QIDS if q in r.stdout]
    assert len(shown) == 10
    assert "1 -> 3" in r.stdout or "2 -> 4" in r.stdout or "3 -> 5" in r.stdout


def test_markdown_is_a_pull_request_comment(runs):
    r = _gate(runs, "inconclusive", "--format", "markdown", "--report-url", "https://ci.example/r/1 (x).html")
    assert r.exit_code == 2 and "--report-url" in r.stderr  # white space: not a URL
    url = "https://ci.example/jobs/1/artifacts/report.html?a=1&b=)[x]"
    md = _gate(runs, "inconclusive", "--format", "markdown", "--report-url", url).stdout
    lines = md.splitlines()
    assert lines[0] == "## Gate: INCONCLUSIVE (exit 3) on mrr"
    assert lines[2].startswith("| check | diff |") and "**INCONCLUSIVE**" in md
    why = next(x for x in lines if x.startswith("**Why:**"))
    assert "underpowered" in why or "too close to the margin" in why
    assert "[HTML report](https://ci.example/jobs/1/artifacts/report.html?a=1&b=%29%5Bx%5D)" in lines
    assert lines.index(next(x for x in lines if x.startswith("**Why:**"))) < lines.index(
        next(x for x in lines if x.startswith("[HTML report]"))
    )
    assert "regressed questions" in md
    plain = _gate(runs, "inconclusive", "--format", "markdown", "--on-inconclusive", "fail").stdout
    assert plain.startswith("## Gate: INCONCLUSIVE (exit 1, --on-inconclusive fail) on mrr")
    assert "[HTML report]" not in plain
    assert _gate(runs, "inconclusive", "--report-url", "javascript:alert(1)").exit_code == 2


def test_markdown_escapes_input_strings(tmp_path):
    ranks = _base_ranks()
    base = ranked_run(tmp_path, "b", {"| *x* [y](z) <b>": ranks})
    cand = ranked_run(tmp_path, "c", {"new`": scenario("fail")})
    md = runner.invoke(app, ["gate", "--baseline", str(base), "--candidate", str(cand), "--format", "markdown"]).stdout
    assert "\\| \\*x\\* \\[y\\](z) &lt;b&gt;" in md and "new\\`" in md and "<b>" not in md


def _parse_junit(text: str) -> ET.Element:
    """Parse and check the JUnit XML schema's shape; returns the one ``<testsuite>``."""
    root = ET.fromstring(text.encode("utf-8"))
    assert root.tag == "testsuites"
    suites = list(root)
    assert [s.tag for s in suites] == ["testsuite"]
    suite = suites[0]
    cases = suite.findall("testcase")
    assert [c.tag for c in suite if c.tag not in ("properties", "system-err")] == ["testcase"] * len(cases)
    for el in (root, suite):
        assert el.get("name") and int(el.get("tests")) == len(cases)
        assert int(el.get("failures")) == sum(c.find("failure") is not None for c in cases)
        assert int(el.get("skipped")) == sum(c.find("skipped") is not None for c in cases)
        assert el.get("errors") == "0" and float(el.get("time")) >= 0
    for c in cases:
        assert c.get("name") and c.get("classname", "").startswith("harness.gate.")
        kids = [k.tag for k in c]
        assert set(kids) <= {"failure", "skipped", "system-out"} and len(set(kids) & {"failure", "skipped"}) <= 1
        for k in c:
            if k.tag in ("failure", "skipped"):
                assert k.get("message")
    return suite


def _outcomes(suite: ET.Element) -> dict[str, str]:
    out = {}
    for c in suite.findall("testcase"):
        f, s = c.find("failure"), c.find("skipped")
        out[c.get("name")] = "failure " + f.get("type") if f is not None else ("skipped" if s is not None else "pass")
    return out


def test_junit_one_testcase_per_metric_and_guard(runs):
    guard = ["--metric", "mrr,recall@10", "--guard", f"{CATS[0]}:0.5"]
    ok = _parse_junit(_gate(runs, "pass", *guard, "--format", "junit").stdout)
    assert _outcomes(ok) == {"mrr": "pass", "recall@10": "pass", f"guard {CATS[0]}: mrr": "pass"}
    props = {p.get("name"): p.get("value") for p in ok.find("properties")}
    assert props["decision"] == "PASS" and props["exit_code"] == "0"
    bad = _parse_junit(_gate(runs, "fail", "--format", "junit", "--report-url", "https://x.example/r").stdout)
    assert _outcomes(bad) == {"mrr": "failure FAIL"}
    case = bad.find("testcase")
    assert "worse than the margin" in case.find("failure").get("message")
    assert "regressed questions (60" in case.find("failure").text and "... and 50 more" in case.find("system-out").text
    assert {p.get("name"): p.get("value") for p in bad.find("properties")}["report_url"] == "https://x.example/r"


def test_junit_inconclusive_is_skipped_unless_the_policy_fails_it(runs):
    for policy, outcome, code in ((None, "skipped", 3), ("fail", "failure INCONCLUSIVE", 1), ("pass", "skipped", 0)):
        args = ["--format", "junit"] + (["--on-inconclusive", policy] if policy else [])
        r = _gate(runs, "inconclusive", *args)
        assert r.exit_code == code
        assert _outcomes(_parse_junit(r.stdout)) == {"mrr": outcome}


def test_junit_is_refused_for_other_verbs_before_they_run(runs, tmp_path):
    for argv in (
        ["compare", str(runs["base"]), str(runs["fail"]), "--metrics", "mrr"],
        ["power", "--run", str(runs["base"])],
        ["validate", str(tmp_path / "no-such-goldset")],
    ):
        r = runner.invoke(app, [*argv, "--format", "junit"])
        assert r.exit_code == 2 and r.stderr.strip() == "error: --format junit: applies to gate only", argv


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(min_size=1, max_size=12), reason=st.text(max_size=30))
def test_junit_is_well_formed_for_any_input_string(runs, name, reason):
    v = gate(runs["base"], runs["pass"])
    v.system_candidate = name
    v.checks[0].reason = reason
    v.report_url = name
    suite = _parse_junit(junit_xml(v))
    assert suite.get("name") == f"harness gate: {xml_safe(name)} - bm25"
    assert suite.find("testcase").find("system-out").text.count(xml_safe(reason)) >= 1


# --- regressions in compare, missing questions, HARNESS_WORKDIR -----------------------------------------------


def test_compare_lists_the_regressed_questions(runs):
    rep = compare_runs(runs["base"], runs["pass"], metrics=("mrr",))
    regs = rep.comparisons[0].regressions
    base, cand = _base_ranks(), scenario("pass")
    assert [r["qid"] for r in regs] == sorted((q for q in QIDS if cand[q] > base[q]),
                                              key=lambda q: (1 / cand[q] - 1 / base[q], q))  # fmt: skip
    r = runner.invoke(app, ["compare", str(runs["base"]), str(runs["pass"]), "--metrics", "mrr"])
    assert f"{len(regs)} regressed questions" in r.stdout and regs[0]["qid"] in r.stdout
    r = runner.invoke(app, ["compare", str(runs["base"]), str(runs["pass"]), "--metrics", "mrr", "--format", "json"])
    assert len(json.loads(r.stdout)["data"]["comparisons"][0]["regressions"]) == len(regs)
    r = runner.invoke(
        app, ["compare", str(runs["base"]), str(runs["pass"]), "--metrics", "mrr", "--format", "markdown"]
    )
    assert f"{len(regs)} regressed questions" in r.stdout


def test_gate_warns_on_stderr_with_counts_when_a_side_lacks_questions(tmp_path):
    ranks = _base_ranks()
    gone = set(QIDS[:5])
    base = ranked_run(tmp_path, "b", {"bm25": ranks})
    cand = ranked_run(tmp_path, "c", {"new": {q: None if q in gone else r for q, r in ranks.items()}},
                      missing={"new": gone})  # fmt: skip
    for fmt in ("table", "json", "markdown", "junit"):
        r = runner.invoke(app, ["gate", "--baseline", str(base), "--candidate", str(cand), "--format", fmt])
        assert "warning: the candidate (new) has no ranking for 5 of 60 questions; they score 0" in r.stderr, fmt
        assert "baseline (bm25) has no ranking" not in r.stderr


def test_harness_workdir_sets_the_default_work_directory(tmp_path, monkeypatch):
    corpus = write_tiny_corpus(tmp_path / "corpus")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HARNESS_WORKDIR", str(tmp_path / "warm"))
    r = runner.invoke(app, ["ingest", str(corpus)])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "warm").is_dir() and any((tmp_path / "warm").iterdir())
    assert not (tmp_path / ".harness").exists()
    r = runner.invoke(app, ["ingest", str(corpus), "--workdir", str(tmp_path / "explicit")])
    assert r.exit_code == 0 and (tmp_path / "explicit").is_dir()
