"""Errors name the user's input, not an internal module (issue 44 item 17): ``compare``, ``power`` and ``report`` on
a run whose questions lie in one cluster said ``harness.stats.cr3: clusters: ...`` / ``harness.stats.design_effect:
...``; a two-stage reranker's failure named the class inside the plugin (``reranker _Impl``) instead of its spec."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import tiny_records, write_tiny_goldset
from typer.testing import CliRunner

from harness import api
from harness.cli import app


@pytest.fixture
def one_cluster_run(tmp_path: Path, tiny_corpus: Path) -> Path:
    """A run of bm25 and tfidf over two questions with one gold document: one cluster."""
    first = tiny_records()[0]
    records = [first, {**first, "id": "SP-003", "question": "¿Cuánto duran las concesiones de aguas nacionales?"}]
    gs = write_tiny_goldset(tmp_path / "gs1", tiny_corpus, records)
    res = api.run(gs, tiny_corpus, ["bm25", "tfidf"], workdir=tmp_path / "wd", runs_dir=tmp_path / "runs",
                  run_id="one", bootstrap_reps=200)  # fmt: skip
    assert res.record.manifest.clusters.n_clusters == 1
    return res.path


@pytest.mark.parametrize(
    "verb",
    [
        ["compare", "{run}", "{run}"],
        ["power", "--run", "{run}", "--system", "bm25"],
        ["report", "{run}", "--out", "{tmp}/report.html"],
    ],
    ids=["compare", "power", "report"],
)
def test_a_one_cluster_run_is_refused_naming_the_run_record(one_cluster_run: Path, tmp_path: Path, verb):
    args = [a.format(run=one_cluster_run, tmp=tmp_path) for a in verb]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 2, r.output
    errors = [x for x in r.output.splitlines() if x.startswith("error:")]
    assert len(errors) == 1 and "harness." not in errors[0], r.output
    assert errors[0].startswith(f"error: {one_cluster_run}: per_question.jsonl: field cluster: "), errors[0]
    assert "lie in 1 cluster (clustering components)" in errors[0]
    assert not (tmp_path / "report.html").exists()


def test_a_failing_reranker_is_named_by_its_spec(tmp_path: Path, tiny_corpus: Path, tiny_goldset: Path):
    plugin = tmp_path / "rr.py"
    plugin.write_text(
        "class _Impl:\n    def predict(self, pairs):\n        raise ValueError('model weights missing')\n\n\n"
        "def make():\n    return _Impl()\n",
        "utf-8",
    )
    system = f"two-stage[scorer=bm25;reranker=py:{plugin}:make]:bm25"
    args = ["run", "--goldset", tiny_goldset, "--corpus", tiny_corpus, "--systems", system,
            "--workdir", tmp_path / "wd", "--runs-dir", tmp_path / "runs"]  # fmt: skip
    r = CliRunner().invoke(app, [str(a) for a in args])
    assert r.exit_code == 2, r.output
    said = " ".join(r.output.split())
    assert f"two-stage: reranker py:{plugin}:make: predict failed (ValueError: model weights missing)" in said, said
    assert "_Impl" not in said
