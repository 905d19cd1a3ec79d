"""What changed between the two sides (issue 28 item 3): ``compare``, ``gate`` and ``report`` list every
configuration difference (per system: kind, model and weights, bits, rescoring, fusion method and parameters; per run:
chunker, harness version, commit) in every format, and still refuse a change of gold set, corpus or depths.

The two sides are the committed baseline and a copy of it whose manifest says it was made with another model
(``--model wordllama`` when the baseline used ``use``, and the reverse): only the manifest is edited (it is the one
file of a record that is not hashed), so the per-question numbers are the same and only the recorded configuration
differs: the change must be shown all the same.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.evaluation.changes import (
    Change,
    change_line,
    changes_between,
    system_facts,
)
from harness.evaluation.runs import load_run

REPO = Path(__file__).resolve().parents[1]
BASELINE = REPO / "runs" / "baselines" / "mx-leyes-dof-eval-v1-six-systems"
runner = CliRunner()

# The recorded identity of the two models (independent reference: the values the run records carry).
MODELS = {
    "wordllama": {
        "model": "wordllama",
        "model_id": "wordllama-l2-supercat-256",
        "weights_sha256": "3f238e3cae21da9a971b8d2c9d506bef906a676c1e97df1904e43d845a1c255c",
        "dim": 256,
    },
    "use": {
        "model": "use",
        "model_id": "use-multilingual-v3",
        "weights_sha256": "425eb937edfda218e8ed21274403ee2a7f889d085829fe2219ebbac78f83b323",
        "dim": 512,
    },
}


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def _set_model(cfg: dict, ident: dict) -> None:
    """Rewrite a vector system's config (and every fusion input's) to another model's identity."""
    if "embedder" in cfg:
        cfg["embedder"]["model"] = ident["model"]
        cfg["embedder"]["model_id"] = ident["model_id"]
        cfg["embedder"]["weights_sha256"] = ident["weights_sha256"]
        cfg["embedder"]["dim"] = ident["dim"]
        cfg["model_id"], cfg["weights_sha256"], cfg["dim"] = ident["model_id"], ident["weights_sha256"], ident["dim"]
    for sub in (cfg.get("inputs") or {}).values():
        if isinstance(sub, dict):
            _set_model(sub, ident)


def variant(tmp_path: Path, name: str, edit) -> Path:
    """A copy of the committed baseline whose manifest ``edit(manifest)`` changed."""
    out = tmp_path / name
    shutil.copytree(BASELINE, out)
    m = json.loads((out / "manifest.json").read_text("utf-8"))
    m["run_id"] = name
    edit(m)
    (out / "manifest.json").write_text(json.dumps(m, indent=1), "utf-8")
    return out


def base_model() -> str:
    m = json.loads((BASELINE / "manifest.json").read_text("utf-8"))
    return m["system_configs"]["vector"]["embedder"]["model"]


def other_model() -> str:
    return "wordllama" if base_model() != "wordllama" else "use"


@pytest.fixture
def other(tmp_path: Path) -> Path:
    """The baseline as if made with the other model (every vector config, fusion inputs included)."""

    def edit(m):
        for cfg in m["system_configs"].values():
            _set_model(cfg, MODELS[other_model()])
        m["system_options"]["vector"]["options"]["model"] = other_model()

    return variant(tmp_path, "other-model", edit)


def _expected_model_line() -> str:
    return f"changed: vector.model {base_model()} → {other_model()}"


# ---- the facts and the diff --------------------------------------------------------------------------------------


def test_system_facts_name_kind_model_weights_bits_rescore():
    m = json.loads((BASELINE / "manifest.json").read_text("utf-8"))
    f = system_facts(m["system_configs"]["vector"], m["system_options"]["vector"])
    cfg = m["system_configs"]["vector"]
    assert f["kind"] == "vector" and f["model"] == base_model()
    assert f["weights"] == cfg["weights_sha256"][:12] and f["dim"] == str(cfg["dim"])
    assert f["bits"] == cfg["binarize"] and f["rescore"] == str(cfg["rescore"])
    w = system_facts(m["system_configs"]["w0.25"], m["system_options"]["w0.25"])
    assert w["kind"] == "fusion" and w["fusion"] == "wsum" and w["params.weights"] == "0.25,0.75"
    assert w["inputs"] == "bm25+vector"
    b = system_facts(m["system_configs"]["bm25"], m["system_options"]["bm25"])
    assert b["params.k1"] == "1.5" and b["params.b"] == "0.75" and b["analyzer"] == "es-snowball-fold-v1"


def test_same_record_has_no_change_and_a_model_change_is_listed_once(other):
    a, b = load_run(BASELINE), load_run(other)
    assert changes_between(a, a, [(s, s) for s in a.systems]) == []
    got = changes_between(a, b, [(s, s) for s in a.systems])
    fields = [c.field for c in got]
    # run facts equal (same commit); the vector system's model, weights and dim differ; the fusions' inputs are
    # compared pairs themselves, so their nested vector lines are not repeated
    assert fields == ["vector.model", "vector.weights", "vector.dim"], fields
    assert change_line(got[0]) == _expected_model_line()
    # a pair without the vector system on its own: the fusion's nested input says it
    got = changes_between(a, b, [("w0.75", "w0.5")])
    assert [c.field for c in got] == [
        "system",
        "w0.5.params.weights",
        "w0.5.vector.model",
        "w0.5.vector.weights",
        "w0.5.vector.dim",
    ]
    assert got[0] == Change("system", "w0.75", "w0.5")


def test_kinds_differ_lists_the_kind_only_and_formula_follows_params(other):
    a, b = load_run(BASELINE), load_run(other)
    assert changes_between(a, b, [("bm25", "vector")]) == [
        Change("system", "bm25", "vector"),
        Change("vector.kind", "bm25", "vector"),
    ]
    assert changes_between(a, a, [("bm25", "vector")]) == []  # two kinds of one run: the names say it
    got = changes_between(a, a, [("w0.25", "w0.75")])
    assert got == [Change("w0.75.params.weights", "0.25,0.75", "0.75,0.25")]  # the formula line is left out


def test_run_facts_chunker_harness_commit(tmp_path):
    def edit(m):
        m["harness_version"] = "9.9.9"
        m["git_commit"] = "0123456789abcdef0123456789abcdef01234567-dirty"

    b = variant(tmp_path, "newer", edit)
    got = changes_between(load_run(BASELINE), load_run(b), [("bm25", "bm25")])
    assert [(c.field, c.candidate, c.scope) for c in got] == [
        ("harness", "9.9.9", "run"),
        ("commit", "0123456789ab+dirty", "run"),
    ]


# ---- every format -------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_gate_shows_the_change_in_table_json_junit_markdown(other, tmp_path):
    common = ("gate", "--baseline", BASELINE, "--candidate", other, "--baseline-system", "vector",
              "--candidate-system", "vector", "--metric", "mrr")  # fmt: skip
    r = invoke(*common)
    assert r.exit_code == 0, r.output
    assert _expected_model_line() in r.output.splitlines()
    r = invoke(*common, "--format", "json")
    data = json.loads(r.stdout)["data"]
    assert {"field": "vector.model", "baseline": base_model(), "candidate": other_model(), "scope": "system"} in data[
        "changes"
    ]
    r = invoke(*common, "--format", "junit")
    props = {p.get("name"): p.get("value") for p in ET.fromstring(r.stdout.encode()).iter("property")}
    assert f"vector.model {base_model()} → {other_model()}" in props["changes"].split("; ")
    r = invoke(*common, "--format", "markdown")
    assert "- " + _expected_model_line() in r.stdout.replace("\\", "").splitlines()
    # no change: the JUnit property says none, JSON holds an empty list, the table prints no changed line
    same = ("gate", "--baseline", BASELINE, "--candidate", BASELINE, "--baseline-system", "w0.5",
            "--candidate-system", "w0.5", "--metric", "mrr")  # fmt: skip
    r = invoke(*same, "--format", "junit")
    props = {p.get("name"): p.get("value") for p in ET.fromstring(r.stdout.encode()).iter("property")}
    assert props["changes"] == "none"
    assert "changed:" not in invoke(*same).output
    assert json.loads(invoke(*same, "--format", "json").stdout)["data"]["changes"] == []


@pytest.mark.slow
def test_compare_shows_the_change_in_table_json_markdown(other):
    common = ("compare", BASELINE, other, "--metric", "mrr")
    r = invoke(*common)
    assert r.exit_code == 0, r.output
    assert _expected_model_line() in r.output.splitlines()
    assert r.output.count("changed: ") == 3  # model, weights, dim; the fusions do not repeat it
    data = json.loads(invoke(*common, "--format", "json").stdout)["data"]
    assert [c["field"] for c in data["changes"]] == ["vector.model", "vector.weights", "vector.dim"]
    md = invoke(*common, "--format", "markdown").stdout
    assert [x for x in md.splitlines() if x.startswith("- changed:")][0].replace("\\", "") == (
        "- " + _expected_model_line()
    )


@pytest.mark.slow
def test_report_html_row_and_markdown_lines(other, tmp_path):
    out = tmp_path / "r.html"
    r = invoke("report", BASELINE, other, "--out", out)
    assert r.exit_code == 0, r.output
    html = out.read_text("utf-8")
    table = html.split("id='table-changes'", 1)[1].split("</table>", 1)[0]
    assert f"<td class='l wrap'>vector.model</td><td class='l wrap'>{base_model()}</td>" in table
    assert f"<td class='l wrap'>{other_model()}</td>" in table
    md = invoke("report", BASELINE, other, "--format", "markdown", "--out", "-").stdout
    assert "**Changes**" in md and _expected_model_line() in md.replace("\\", "")


@pytest.mark.slow
def test_values_are_escaped_in_every_format(tmp_path):
    """A model name holding rich markup, HTML and Markdown is printed literally everywhere."""
    evil = "[bold]x[/bold]<script>|*_`"

    def edit(m):
        for cfg in m["system_configs"].values():
            _set_model(cfg, {**MODELS["use"], "model": evil})

    b = variant(tmp_path, "evil", edit)
    common = ("gate", "--baseline", BASELINE, "--candidate", b, "--baseline-system", "vector",
              "--candidate-system", "vector", "--metric", "mrr")  # fmt: skip
    assert f"changed: vector.model {base_model()} → {evil}" in invoke(*common).output.splitlines()
    md = invoke(*common, "--format", "markdown").stdout
    line = next(x for x in md.splitlines() if x.startswith("- changed: vector.model"))
    assert line == f"- changed: vector.model {base_model()} → \\[bold\\]x\\[/bold\\]&lt;script&gt;\\|\\*\\_\\`"
    out = tmp_path / "r.html"
    assert invoke("report", BASELINE, b, "--out", out).exit_code == 0
    assert "&lt;script&gt;" in out.read_text("utf-8") and "<script>|" not in out.read_text("utf-8")


def test_gold_set_corpus_depths_still_refused_and_chunker_listed(tmp_path):
    for name, edit in (
        ("gs", lambda m: m["goldset"].update(sha256="b" * 64)),
        ("corpus", lambda m: m["corpus"].update(corpus_hash="c" * 64)),
        ("depths", lambda m: m["depths"].update(document=10)),
    ):
        b = variant(tmp_path, name, edit)
        r = invoke("gate", "--baseline", BASELINE, "--candidate", b, "--baseline-system", "bm25",
                   "--candidate-system", "bm25")  # fmt: skip
        assert r.exit_code == 2 and "not comparable" in r.output, (name, r.output)
    b = variant(tmp_path, "chunker", lambda m: m["corpus"].update(chunker_id="md-legal-v1"))
    got = changes_between(load_run(BASELINE), load_run(b), [("bm25", "bm25")])
    assert Change("chunker", "md-words-v1", "md-legal-v1", "run") in got


def test_copy_of_record_keeps_values(other):
    """The variant differs only in its manifest: the per-question rows are the baseline's (sanity of the fixture)."""
    a, b = load_run(BASELINE), load_run(other)
    assert a.metric_vector("vector", "mrr") == b.metric_vector("vector", "mrr")
    assert a.manifest.depths == b.manifest.depths
