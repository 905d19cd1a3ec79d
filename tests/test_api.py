"""The Python API (issue 31 item 3): the README's example runs and returns one row per system x question; results
convert to plain dicts and DataFrames and equal what the CLI writes."""

from __future__ import annotations

import builtins
import json
import re
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO

from harness import api
from harness.errors import HarnessInputError


def readme_example() -> str:
    text = (REPO / "README.md").read_text("utf-8")
    section = text.split("## Python API", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_example_runs_and_returns_one_row_per_system_and_question(
    tiny_corpus: Path, tiny_goldset: Path, tmp_path: Path, monkeypatch, capsys
):
    code = readme_example()
    assert len(code.strip().splitlines()) <= 5
    # the README's paths are the real corpus and gold set; here the same code runs on the tiny ones
    for real, tiny in (("datasets/mx-leyes-dof-eval-v1", tiny_goldset), ("../shared/corpus/mx-leyes-dof", tiny_corpus)):
        assert code.count(f'"{real}"') == 1
        code = code.replace(f'"{real}"', repr(str(tiny)))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HARNESS_WORKDIR", str(tmp_path / "wd"))
    env: dict = {}
    exec(compile(code, "README.md", "exec"), env)  # noqa: S102 - the README's own example
    df = env["df"]
    assert isinstance(df, pd.DataFrame)
    assert (
        len(df) == 2 * 3 and set(df["system"]) == {"bm25", "tfidf"} and df.groupby("system").size().tolist() == [3, 3]
    )
    assert not df.duplicated(["system", "qid"]).any()
    assert {"mrr", "AP@100", "RR@10"} <= set(df.columns)
    rec = json.loads(env["res"].path.joinpath("manifest.json").read_text("utf-8"))
    assert rec["metrics"] == ["AP@100", "RR@10"] and rec["depths"]["document"] == 100
    assert "AP@100" in capsys.readouterr().out
    # the frame holds exactly the recorded values
    rows = [json.loads(x) for x in env["res"].path.joinpath("per_question.jsonl").read_text("utf-8").splitlines()]
    for r in rows:
        got = df[(df.system == r["system"]) & (df.qid == r["qid"])].iloc[0]
        assert got["AP@100"] == r["metrics"]["AP@100"] and got["mrr"] == r["metrics"]["mrr"]


def test_compare_gate_and_dicts(tiny_corpus: Path, tiny_goldset: Path, tmp_path: Path):
    kw = {"workdir": tmp_path / "wd", "runs_dir": tmp_path / "runs", "bootstrap_reps": 200}
    a = api.run(api.load_goldset(tiny_goldset), tiny_corpus, ["bm25"], run_id="a", **kw)
    b = api.run(tiny_goldset, tiny_corpus, ["tfidf"], run_id="b", **kw)
    d = a.to_dict()
    assert d["run_id"] == "a" and len(d["per_question"]) == 3 and json.dumps(d)
    s = a.to_pandas("summary")
    assert set(s.columns) >= {"system", "metric", "mean", "lower", "upper"}
    mrr = s[s.metric == "mrr"].iloc[0]
    assert mrr["mean"] == a.record.summary.systems["bm25"]["all"].overall["mrr"].mean
    long = a.to_pandas("long")
    assert set(long["table"]) == {"question", "summary"}
    c = api.compare(a, str(b.path), metrics="mrr,P@3", qids="SP-001,MD-001")
    cdf = c.to_pandas()
    assert list(cdf["metric"]) == ["mrr", "P@3"] and (cdf["n_clusters"] == 2).all()
    assert c.to_dict()["comparisons"][0]["metric"] == "mrr"
    g = api.gate(a, b, metrics=["mrr"], margin=0.5)
    assert g.decision in ("PASS", "INCONCLUSIVE") and g.to_pandas()["metric"].tolist() == ["mrr"]
    assert api.load_run(a.path).to_dict()["per_question"] == d["per_question"]
    with pytest.raises(Exception, match="--qids: 1 question id not in it: nope"):
        api.compare(a, b, qids="nope")


def test_to_pandas_without_pandas_says_how_to_install(tiny_corpus, tiny_goldset, tmp_path, monkeypatch):
    res = api.run(
        tiny_goldset, tiny_corpus, ["bm25"], workdir=tmp_path / "wd", runs_dir=tmp_path / "r", bootstrap_reps=200
    )
    real_import = builtins.__import__

    def no_pandas(name, *args, **kw):
        if name == "pandas":
            raise ImportError("No module named 'pandas'")
        return real_import(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_pandas)
    with pytest.raises(ImportError, match=r"harness-rag-eval\[pandas\]"):
        res.to_pandas()
    assert res.to_dict()["per_question"]  # plain dicts need nothing


def test_summary_refuses_an_unknown_method_or_slice_naming_the_choices(tiny_corpus, tiny_goldset, tmp_path):
    """Issue 44 item 14: an unknown interval method or slice raised nothing and gave no intervals."""
    from harness.errors import HarnessInputError

    res = api.run(
        tiny_goldset, tiny_corpus, ["bm25"], workdir=tmp_path / "wd", runs_dir=tmp_path / "r", bootstrap_reps=200
    )
    run = api.load_run(res.path)
    recorded = list(run.record.summary.systems["bm25"]["all"].overall["mrr"].intervals)
    assert "cr2" in recorded
    with pytest.raises(HarnessInputError, match=r"summary\(method='nope'\): .*recorded: .*cr2") as e:
        run.summary(method="nope")
    assert str(res.path) in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(HarnessInputError, match=r"summary\(slice_name='nope'\): no such slice; .*all") as e:
        run.summary("nope")
    assert "\n" not in str(e.value)
    # the valid choices still work: every recorded method gives an interval for mrr
    for m in recorded:
        rows = [r for r in run.summary(method=m) if r["metric"] == "mrr"]
        assert rows and rows[0]["method"] is not None
    assert all(r["lower"] is not None for r in run.summary() if r["metric"] == "mrr")


def test_keywords_are_the_command_lines_names_and_the_old_ones_warn():
    """Issue 42 item 9: ``baseline_system``/``candidate_system`` as ``--baseline-system``/``--candidate-system``;
    ``system_a``/``system_b`` (compare) and ``system_baseline``/``system_candidate`` (gate) still work and warn."""
    base = Path(__file__).resolve().parents[1] / "runs" / "baselines" / "mx-leyes-dof-eval-v1-six-systems"
    g = api.gate(base, base, metrics="mrr", baseline_system="bm25", candidate_system="w0.75")
    assert g.decision == "PASS" and g.verdict.system_candidate == "w0.75"
    with pytest.warns(FutureWarning, match=r"system_candidate is deprecated; use candidate_system"):
        old = api.gate(base, base, metrics="mrr", system_baseline="bm25", system_candidate="w0.75")
    assert old.to_dict() == g.to_dict()
    c = api.compare(base, base, metrics="mrr", baseline_system="bm25", candidate_system="w0.75", reps=200)
    with pytest.warns(FutureWarning, match=r"system_a is deprecated; use baseline_system \(as --baseline-system\)"):
        c_old = api.compare(base, base, metrics="mrr", system_a="bm25", system_b="w0.75", reps=200)
    assert c_old.to_dict() == c.to_dict()
    with pytest.raises(HarnessInputError, match="system_b: deprecated alias of candidate_system; give only"):
        api.compare(base, base, candidate_system="w0.75", system_b="w0.75")


def test_run_shows_progress_like_the_command_line_unless_asked_not_to(tiny_corpus, tiny_goldset, tmp_path, capfd):
    """Issue 42 item 9: ``api.run`` printed nothing during a 37 s run; it now writes the command line's progress to
    stderr (plain lines off a terminal), and ``progress=False`` is silent."""
    from harness.progress import PLAIN_LINE

    kw = {"workdir": tmp_path / "wd", "runs_dir": tmp_path / "runs", "bootstrap_reps": 200}
    api.run(tiny_goldset, tiny_corpus, ["bm25"], run_id="a", **kw)
    lines = capfd.readouterr().err.splitlines()
    assert "metrics and intervals: started" in lines
    assert any(x.startswith("metrics and intervals: done in") for x in lines)
    assert all(PLAIN_LINE.match(x) or x.startswith("harness: ") for x in lines), lines
    api.run(tiny_goldset, tiny_corpus, ["bm25"], run_id="b", progress=False, **kw)
    assert capfd.readouterr().err == ""
