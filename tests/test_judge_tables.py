"""Issue 42 item 10: ``compare`` and ``gate`` as CSV/TSV tables (one row per system pair and metric, one row per
check) through the shared writer, and the verbs a format applies to read from the registry."""

from __future__ import annotations

import ast
import csv
import io
import json
from pathlib import Path

from typer.testing import CliRunner

from harness.cli import app
from harness.report.formats import FORMATS, KINDS
from harness.report.tables import COMPARISON_COLUMNS, GATE_COLUMNS

REPO = Path(__file__).resolve().parents[1]
BASELINE = REPO / "runs" / "baselines" / "mx-leyes-dof-eval-v1-six-systems"
GATE = ["gate", "--baseline", str(BASELINE), "--candidate", str(BASELINE), "--baseline-system", "bm25"]
GATE += ["--candidate-system", "w0.75", "--metric", "mrr,recall@10", "--guard", "single_passage:0.1"]


def _table(text: str, delimiter: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text), delimiter=delimiter))


def test_compare_csv_has_one_row_per_pair_and_metric_matching_the_json():
    args = ["compare", str(BASELINE), str(BASELINE), "--metric", "mrr,recall@10", "--reps", "500"]
    r = CliRunner().invoke(app, [*args, "--format", "csv"])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0] == ",".join(COMPARISON_COLUMNS)
    rows = _table(r.stdout, ",")
    js = json.loads(CliRunner().invoke(app, [*args, "--format", "json"]).stdout)["data"]["comparisons"]
    assert len(rows) == len(js) == 2 * 5  # bm25 against the five others, two metrics
    for row, c in zip(rows, js, strict=True):
        assert (row["baseline_system"], row["candidate_system"], row["metric"]) == (c["system_a"], c["system_b"],
                                                                                   c["metric"])  # fmt: skip
        assert float(row["diff"]) == c["diff"] and float(row["lower"]) == c["interval"]["lower"]
        assert float(row["p_holm"]) == c["p_holm"] and int(row["cluster_wins"]) == c["clusters"]["wins"]


def test_gate_tsv_has_one_row_per_check_and_keeps_the_exit_code():
    r = CliRunner().invoke(app, [*GATE, "--format", "tsv"])
    assert r.exit_code == 3, r.output  # the guard is INCONCLUSIVE: so is the gate
    assert r.stdout.splitlines()[0] == "\t".join(GATE_COLUMNS)
    rows = _table(r.stdout, "\t")
    assert [(x["check"], x["kind"], x["decision"]) for x in rows] == [
        ("mrr", "metric", "PASS"), ("recall@10", "metric", rows[1]["decision"]),
        ("guard single_passage: mrr", "guard", "INCONCLUSIVE"),
    ]  # fmt: skip
    assert {x["verdict"] for x in rows} == {"INCONCLUSIVE"} and {x["exit_code"] for x in rows} == {"3"}
    assert rows[0]["lower"] == repr(0.011972886695268966) and rows[0]["margin"] == "0.02"
    csv_out = CliRunner().invoke(app, [*GATE, "--format", "csv"])
    assert csv_out.exit_code == 3 and _table(csv_out.stdout, ",") == rows


def test_the_verbs_of_each_format_come_from_the_registry():
    """Every verb that hands a result kind to the formats is listed under that kind in KINDS, so the refusal
    ``--format X: applies to ...`` names exactly the verbs that take X."""
    found: dict[str, set[str]] = {}
    for path in (REPO / "harness" / "cli").glob("*.py"):
        for fn in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not isinstance(fn, ast.FunctionDef):
                continue
            for dec in fn.decorator_list:
                if not (isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute)):
                    continue
                if dec.func.attr != "command":
                    continue
                owner = dec.func.value.id if isinstance(dec.func.value, ast.Name) else ""
                name = dec.args[0].value if dec.args else fn.name.replace("_", "-")
                verb = f"goldset {name}" if owner == "goldset_app" else name
                for call in ast.walk(fn):
                    if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "emit" and call.args:
                        arg = call.args[0]
                        if isinstance(arg, ast.Constant):
                            found.setdefault(arg.value, set()).add(verb)
    assert {"run", "comparison", "gate", "goldset-split"} <= set(found)
    for kind, verbs in found.items():
        assert verbs <= set(KINDS[kind].verbs), (kind, verbs, KINDS[kind].verbs)
    assert FORMATS["csv"].kinds_text() == "run, evaluate, compare, gate, report"
    assert FORMATS["junit"].kinds_text() == "gate"
