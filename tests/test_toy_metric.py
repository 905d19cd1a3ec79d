"""Issue 40 item 1: a metric is one declaration (compute, outcome class, documentation) plus one registry call. A toy
metric defined here parses in ``--metrics``, has its outcome class, appears in the generated ``docs/metrics.md`` and
renders with an interval in the terminal, Markdown, HTML, JSON and CSV."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import tiny_records, write_tiny_corpus, write_tiny_goldset
from typer.testing import CliRunner

from harness.cli import app
from harness.metrics import MetricFamily, outcome_of, parse_metrics, register, unregister
from harness.metrics.catalog import render
from harness.metrics.family import MetricDoc
from harness.metrics.relevance import DocumentJudgement

runner = CliRunner()
INTERVAL = re.compile(r"0\.\d{3} \[0\.\d{3}, [01]\.\d{3}\]")


def top_gold(j: DocumentJudgement, k: int) -> float:
    """1 if some gold document is satisfied within the top k, grade 1 or 2 (a toy measure), else 0."""
    return float(any(r is not None and r <= k for r in j.gold_ranks.values()))


TOY = MetricFamily(
    "toy_top_gold",
    "docs",
    top_gold,
    takes_k=True,
    summary=False,
    outcome="binary",
    doc=MetricDoc("1 if a gold document is ranked within the top k", "grades 1 and 2", "0", "-", "-", "-", "toy"),
)


@pytest.fixture
def toy():
    register(TOY)
    yield TOY
    unregister(TOY.key)


def _gold_and_rankings(tmp_path: Path) -> tuple[Path, Path]:
    corpus = write_tiny_corpus(tmp_path / "corpus")
    recs = [dict(r, id=f"Q-{i}") for i, r in enumerate(tiny_records() * 3)]
    gs = write_tiny_goldset(tmp_path / "gs", corpus, recs)
    lines = []
    for i, r in enumerate(recs):
        gold = r["gold_documents"][0]["document_id"]
        order = [d for d in ("ley-a", "dof-c", "ley-b", "dof-d") if d != gold]
        order.insert(i % 4, gold)
        lines.append({"qid": r["id"], "system": "s", "docs": [[d, 1 - j / 10] for j, d in enumerate(order)]})
    rankings = tmp_path / "rankings.jsonl"
    rankings.write_text("\n".join(json.dumps(x) for x in lines) + "\n", "utf-8")
    return gs, rankings


def _table_row(text: str, fmt: str) -> tuple[list[str], list[str]]:
    """The header cells and system ``s``'s cells of the first table whose header names the toy metric."""
    if fmt == "markdown":
        lines = text.splitlines()
        i = next(i for i, x in enumerate(lines) if x.startswith("| system") and "toy_top_gold@3" in x)
        return [c.strip() for c in lines[i].split("|")], [c.strip() for c in lines[i + 2].split("|")]
    table = next(t for t in text.split("<table") if "<th>toy_top_gold@3</th>" in t)
    head, body = table.split("</thead>", 1)
    row = body.split("</tr>", 1)[0]
    return re.findall(r"<th[^>]*>(.*?)</th>", head), re.findall(r"<td[^>]*>(.*?)</td>", row)


def test_a_toy_metric_is_one_declaration_and_one_registry_call(toy, tmp_path):
    assert parse_metrics(["toy_top_gold@3"])[0].family is toy and outcome_of("toy_top_gold@3") == "binary"
    page = render()
    assert "## `toy_top_gold@k`" in page and "| `toy_top_gold@k` | docs | binary | yes | when asked |" in page
    gs, rankings = _gold_and_rankings(tmp_path)
    args = ["evaluate", "--goldset", str(gs), "--rankings", str(rankings), "--runs-dir", str(tmp_path / "runs"),
            "--metrics", "toy_top_gold@3,mrr", "--bootstrap-reps", "200"]  # fmt: skip
    term = runner.invoke(app, [*args, "--run-id", "t"])
    assert term.exit_code == 0, term.output
    row = next(line for line in term.output.splitlines() if line.startswith("│ s ") and "0.574" in line)
    assert INTERVAL.search(row.split("│")[2]), row  # the toy column: mean [lower, upper]
    run = tmp_path / "runs" / "t"
    entry = json.loads((run / "summary.json").read_text("utf-8"))["systems"]["s"]["all"]["overall"]["toy_top_gold@3"]
    assert entry["intervals"]["cr2"]["lower"] <= entry["mean"] <= entry["intervals"]["cr2"]["upper"]
    js = runner.invoke(app, [*args, "--run-id", "j", "--format", "json"])
    assert js.exit_code == 0, js.output
    data = json.loads(js.stdout)["data"]
    assert "cr2" in data["systems"]["s"]["all"]["overall"]["toy_top_gold@3"]["intervals"]
    assert data["coverage_evidence"]["metrics"]["toy_top_gold@3"]["outcome"] == "binary"
    for fmt in ("markdown", "html", "csv"):
        out = tmp_path / f"report.{fmt}"
        r = runner.invoke(app, ["report", str(run), "--format", fmt, "--out", str(out)])
        assert r.exit_code == 0, r.output
        text = out.read_text("utf-8")
        if fmt == "csv":  # the summary row: ...,metric,level,value,n_questions,n_clusters,method,lower,upper
            row = next(x for x in text.splitlines() if x.startswith("summary,") and ",toy_top_gold@3," in x)
            method, lower, upper = row.split(",")[-3:]
            assert method == "cr2_logit" and 0 <= float(lower) < float(upper) <= 1, row
        else:  # the systems table: the toy column's cell of system s holds mean [lower, upper]
            head, row = _table_row(text.replace("\\_", "_"), fmt)
            cell = row[head.index("toy_top_gold@3")]
            assert INTERVAL.search(re.sub(r"<[^>]+>", " ", cell).replace("  ", " ")), (fmt, cell)
