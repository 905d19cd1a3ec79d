"""docs/systems.md stays true: its example retriever, taken from the page, runs in `harness run` (alone and fused
with bm25) and in `harness known-item`, and the page names every system kind and fusion of the registry."""

from __future__ import annotations

import json
import re
from pathlib import Path

from test_cli_known_item import write_corpus as write_known_item_corpus
from typer.testing import CliRunner

from harness.cli import app
from harness.retrieve.fusion import FUSIONS
from harness.retrieve.registry import KINDS

REPO = Path(__file__).resolve().parents[1]
PAGE = (REPO / "docs" / "systems.md").read_text("utf-8")


def _example(tmp_path: Path) -> Path:
    blocks = re.findall(r"```python\n(.*?)```", PAGE, re.DOTALL)
    assert len(blocks) == 1 and blocks[0].startswith("# my_retriever.py")
    path = tmp_path / "my_retriever.py"
    path.write_text(blocks[0], "utf-8")
    return path


def test_the_page_names_every_kind_and_fusion_of_the_registry():
    table = PAGE.split("## Names", 1)[1].split("##", 1)[0]
    for name in [*KINDS, *FUSIONS, "two-stage", "py:MODULE:ATTR"]:
        head = "w0.75" if name == "wsum" else name
        assert f"`{head}" in table or f"{head}`" in table or f"`mine={head}`" in table, name


def test_the_pages_example_retriever_runs_fused_and_in_the_known_item_study(
    tiny_corpus, tiny_goldset, tmp_path, monkeypatch
):
    plugin = _example(tmp_path)
    monkeypatch.setenv("MY_CORPUS", str(tiny_corpus))
    systems = f"bm25,mine=py:{plugin}:WordOverlap,rrf:bm25+mine"
    args = ["--workdir", str(tmp_path / "wd"), "--runs-dir", str(tmp_path / "runs"), "--run-id", "doc"]
    r = CliRunner().invoke(
        app,
        ["run", "--corpus", str(tiny_corpus), "--goldset", str(tiny_goldset), "--systems", systems, *args]
        + ["--bootstrap-reps", "200", "--format", "json"],
    )
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)["data"]["systems"]
    assert list(data) == ["bm25", "mine", "rrf:bm25+mine"]
    mrr = data["mine"]["all"]["overall"]["mrr"]["mean"]
    assert 0 < mrr <= 1  # the toy finds some gold documents of the tiny gold set
    manifest = json.loads((tmp_path / "runs" / "doc" / "manifest.json").read_text("utf-8"))
    assert manifest["system_options"]["mine"]["plugin"]["file"] == str(plugin)
    known_item_corpus = write_known_item_corpus(tmp_path / "ki-corpus")
    monkeypatch.setenv("MY_CORPUS", str(known_item_corpus))
    out = tmp_path / "ki"
    k = CliRunner().invoke(
        app,
        [
            "known-item",
            "--corpus",
            str(known_item_corpus),
            "--out",
            str(out),
            "--systems",
            f"bm25,mine=py:{plugin}:WordOverlap",
        ]
        + ["--workers", "1", "--query-words", "5"],
    )
    assert k.exit_code == 0, k.output
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    assert summary["systems"]["mine"]["queries"] == summary["systems"]["bm25"]["queries"] > 0


def test_help_texts_keep_their_brackets():
    """rich read ``two-stage[reranker=...]`` in the --systems help as a markup tag and printed ``two-stage:S`` twice
    (found 2026-12-01); the help escapes it now."""
    r = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    flat = re.sub(r"[\s│]+", " ", r.output)
    assert "two-stage[reranker=py:FILE.py:ATTR]:S" in flat and "docs/systems.md" in flat
