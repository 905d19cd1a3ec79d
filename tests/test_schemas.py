"""Issue 42 item 11: a JSON Schema file per ``--format json`` envelope (``harness/schemas/<kind>.schema.json``),
generated from the pydantic models (``python -m harness.schemas``), shipped as package data, and every verb's real
JSON output (run, evaluate, compare, gate, sweep, known-item, coverage; power, validate, goldset apply|plan|split;
on corpora written by the tests) valid against its kind's schema."""

from __future__ import annotations

import copy
import fnmatch
import json
import tomllib
from pathlib import Path

import jsonschema
import pytest
from conftest import tiny_records, write_tiny_corpus, write_tiny_goldset
from test_cli_known_item import write_corpus
from test_compare import _values, make_run
from test_validate import Fixture
from typer.testing import CliRunner

from harness import schemas
from harness.cli import app
from harness.report.formats import KINDS
from harness.schemas import DATA_MODELS, generate, load_schema, schema_path
from harness.schemas.__main__ import main as schemas_main

REPO = Path(__file__).resolve().parents[1]

#: The verbs of item 11 (``evaluate`` prints the ``run`` kind), then the other verbs with a JSON form.
VERBS = ("run", "evaluate", "compare", "gate", "sweep", "known-item", "coverage")
OTHER_VERBS = ("power", "validate", "goldset apply", "goldset plan", "goldset split")


def validator(kind: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(load_schema(kind))


def errors(kind: str, env: dict) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator(kind).iter_errors(env)]


def test_committed_schema_files_are_the_generated_ones():
    committed = {p.name: p.read_text("utf-8") for p in schemas.HERE.glob("*.schema.json")}
    assert committed == generate(), "a schema file differs from its model: run python -m harness.schemas"


def test_every_kind_of_the_json_verbs_has_a_valid_schema_pinned_to_the_registry():
    assert {v for spec in KINDS.values() for v in spec.verbs} == {*VERBS, *OTHER_VERBS}
    assert sorted(KINDS) == sorted(DATA_MODELS)
    for kind in KINDS:
        schema = load_schema(kind)
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["properties"]["kind"]["const"] == kind
        assert schema["properties"]["schema_version"]["const"] == KINDS[kind].schema_version
        assert schema["required"] == ["kind", "schema_version", "data"] and schema["additionalProperties"] is False


def test_schema_files_ship_as_package_data():
    project = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
    patterns = project["tool"]["setuptools"]["package-data"]["harness"]
    for kind in DATA_MODELS:
        rel = schema_path(kind).relative_to(REPO / "harness").as_posix()
        assert any(fnmatch.fnmatch(rel, p) for p in patterns), rel


def test_generator_writes_and_checks(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(schemas, "HERE", tmp_path)
    assert schemas_main(["--check"]) == 1 and "differs from the models" in capsys.readouterr().err
    assert schemas_main([]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(generate())
    assert schemas_main(["--check"]) == 0
    gate = tmp_path / "gate.schema.json"
    gate.write_text(gate.read_text("utf-8").replace('"PASS"', '"OK"'), "utf-8")
    assert schemas_main(["--check"]) == 1
    assert capsys.readouterr().err.strip() == f"{gate}: differs from the models; run python -m harness.schemas"
    assert schemas_main(["--bogus"]) == 2


# ----------------------------------------------------------------------------------------------------------------
# Every verb's real output


def invoke(*args) -> dict:
    r = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
    assert r.exit_code in (0, 1, 3), r.output
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, dict]:
    """``{label: envelope}`` of every verb of item 11, each run once on data written here."""
    tmp = tmp_path_factory.mktemp("schemas")
    recs = tiny_records()
    for rec, split in zip(recs, ("dev", "test", "test"), strict=True):
        rec["split"] = split  # the sweep chooses on dev and reports on test
    corpus = write_tiny_corpus(tmp / "corpus")
    gs = write_tiny_goldset(tmp / "gs", corpus, recs)
    runs = tmp / "runs"
    out: dict[str, dict] = {}
    out["run"] = invoke("run", "--corpus", corpus, "--goldset", gs, "--systems", "bm25,tfidf", "--workdir",
                        tmp / "wd", "--runs-dir", runs, "--run-id", "r1", "--bootstrap-reps", "200",
                        "--format", "json")  # fmt: skip
    rankings = tmp / "mine.jsonl"
    line = {"qid": "SP-001", "system": "mine", "docs": [["ley-a", 1.0]], "chunks": [["ley-a#0", 1.0]]}
    rankings.write_text(json.dumps(line) + "\n", "utf-8")
    out["evaluate"] = invoke("evaluate", "--goldset", gs, "--rankings", rankings, "--runs-dir", runs, "--format",
                             "json")  # fmt: skip
    sweep = ("sweep", "--run", runs / "r1", "--inputs", "bm25,tfidf", "--format", "json")
    out["sweep"] = invoke(*sweep, "--fusion", "wsum,rrf")
    out["sweep --level"] = invoke(*sweep, "--fusion", "rrf", "--level", "document")
    a, b = _values(shift=0.05)
    base, cand = make_run(tmp, "base", {"bm25": a}), make_run(tmp, "cand", {"new": b})
    worse = make_run(tmp, "worse", {"new": _values(shift=-0.2)[1]})
    out["compare"] = invoke("compare", base, cand, "--metric", "mrr,recall@10", "--format", "json")
    out["gate"] = invoke("gate", "--baseline", base, "--candidate", cand, "--format", "json")
    out["gate (FAIL)"] = invoke("gate", "--baseline", base, "--candidate", worse, "--format", "json")
    ki_corpus = write_corpus(tmp / "kc")
    ki = ("known-item", "--corpus", ki_corpus, "--systems", "bm25", "--workers", "1", "--workdir", tmp / "kwd")
    out["known-item"] = invoke(*ki, "--out", tmp / "ki", "--systems", "bm25,tfidf", "--format", "json")
    out["known-item --chunk-words"] = invoke(*ki, "--out", tmp / "ki2", "--chunk-words", "60,100", "--format", "json")
    out["known-item --coverage"] = invoke(*ki, "--out", tmp / "ki3", "--coverage", "--reps", "20",
                                          "--docs-per-sample", "2,3", "--format", "json")  # fmt: skip
    cov = ("coverage", "--reps", "20", "--bootstrap-reps", "49", "--format", "json")
    small = ("--types", "0", "--docs-per-sample", "2,3")
    out["coverage"] = invoke(*cov, *small, "--population", tmp / "ki", "--out", tmp / "c1")
    out["coverage (suite)"] = invoke(*cov, *small, "--population", tmp / "ki", "--population", "synthetic", "--out",
                                     tmp / "c2")  # fmt: skip
    out["coverage --run"] = invoke(*cov, "--run", runs / "r1", "--population", tmp / "ki")
    out["power"] = invoke("power", "--candidate", base, "--format", "json")
    plan = ("goldset", "plan", "--corpus", corpus, "--chunk-words", "5", "--query-words", "2", "--documents", "3")
    out["goldset plan"] = invoke(*plan, "--out", tmp / "plan", "--format", "json")
    fx = Fixture(tmp / "fx")  # a gold set with its contract (tests/test_validate.py)
    ds, contract = fx.build(), ("--contract", fx.contract)
    out["validate"] = invoke("validate", ds, "--corpus", fx.corpus, *contract, "--format", "json")
    out["validate (no corpus)"] = invoke("validate", ds, *contract, "--format", "json")
    bad = fx.build(lambda rs: rs[0]["gold_documents"][0]["evidence"][0].update(quote="no such words anywhere"))
    out["validate (fails)"] = invoke("validate", bad, "--corpus", fx.corpus, *contract, "--format", "json")
    out["goldset split"] = invoke("goldset", "split", ds, "--out", tmp / "split", "--seed", "1", *contract,
                                  "--format", "json")  # fmt: skip
    corr = tmp / "c.jsonl"
    corr.write_text(json.dumps({"id": "MO-001", "patch": [{"op": "replace", "path": "/difficulty", "value": "hard"}]}))
    out["goldset apply"] = invoke("goldset", "apply", ds, "--correction", corr, "--out", tmp / "applied", "--corpus",
                                  fx.corpus, *contract, "--format", "json")  # fmt: skip
    return out


EXPECTED_KINDS = {
    "run": "run",
    "evaluate": "run",
    "sweep": "sweep-multi",
    "sweep --level": "sweep",
    "compare": "comparison",
    "gate": "gate",
    "gate (FAIL)": "gate",
    "known-item": "known-item",
    "known-item --chunk-words": "known-item-sensitivity",
    "known-item --coverage": "known-item-study",
    "coverage": "coverage",
    "coverage (suite)": "coverage-suite",
    "coverage --run": "coverage-design",
    "power": "power",
    "validate": "validation",
    "validate (no corpus)": "validation",
    "validate (fails)": "validation",
    "goldset apply": "goldset-apply",
    "goldset plan": "goldset-plan",
    "goldset split": "goldset-split",
}


@pytest.mark.parametrize("label", list(EXPECTED_KINDS))
def test_every_verbs_json_output_is_valid_against_its_schema(outputs, label):
    env = outputs[label]
    assert env["kind"] == EXPECTED_KINDS[label]
    assert errors(env["kind"], env) == []


def test_every_schema_kind_is_exercised():
    assert set(EXPECTED_KINDS.values()) == set(DATA_MODELS)
    assert {label.split(" (")[0].split(" -")[0] for label in EXPECTED_KINDS} == {*VERBS, *OTHER_VERBS}


def test_the_schemas_reject_what_a_reader_could_not_trust(outputs):
    """Required keys, closed sets and ranges are in the schemas: each broken copy of a real output is refused."""
    gate = outputs["gate"]
    assert gate["data"]["decision"] == "PASS" and outputs["gate (FAIL)"]["data"]["decision"] == "FAIL"
    broken = {
        "no decision": lambda e: e["data"].pop("decision"),
        "unknown decision": lambda e: e["data"].update(decision="MAYBE"),
        "exit code 2": lambda e: e["data"].update(exit_code=2),
        "level above 1": lambda e: e["data"].update(level=1.5),
        "negative cluster count": lambda e: e["data"]["checks"][0].update(n_clusters=-1),
        "interval without flags": lambda e: e["data"]["checks"][0]["interval"].pop("flags"),
        "no checks": lambda e: e["data"].update(checks=[]),
        "older schema version": lambda e: e.update(schema_version=1),
        "another kind": lambda e: e.update(kind="comparison"),
        "unknown envelope key": lambda e: e.update(extra=1),
    }
    for why, brk in broken.items():
        env = copy.deepcopy(gate)
        brk(env)
        assert errors("gate", env), why
    run = copy.deepcopy(outputs["run"])
    metric = run["data"]["systems"]["bm25"]["all"]["overall"]["mrr"]
    metric["mean"] = 1.2  # the run summary's own model: a mean is in [0, 1]
    assert errors("run", run)
    run = copy.deepcopy(outputs["run"])
    run["data"]["systems"]["bm25"]["all"]["unknown"] = 1  # the summary is closed
    assert errors("run", run)
    ki = copy.deepcopy(outputs["known-item"])
    ki["data"]["systems"]["bm25"]["micro_hit1"] = -0.1
    assert errors("known-item", ki)
    bad = outputs["validate (fails)"]
    assert bad["data"]["status"] == "fail" and bad["data"]["exit_code"] == 1 and errors("validation", bad) == []
    assert outputs["validate (no corpus)"]["data"]["corpus"] is None
    bad = copy.deepcopy(bad)
    bad["data"]["records"][0]["status"] = "failed"  # not a status
    assert errors("validation", bad)
    cov = copy.deepcopy(outputs["coverage"])
    next(iter(cov["data"]["designs"][0]["rows"].values()))["coverage"] = 1.01
    assert errors("coverage", cov)


def test_docs_link_every_schema_file():
    text = (REPO / "docs" / "cli.md").read_text("utf-8")
    for kind in DATA_MODELS:
        assert f"](../harness/schemas/{kind}.schema.json)" in text, kind
