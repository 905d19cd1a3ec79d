"""A fusion's input depth is a recorded system option with a fixed default (issue 42 item 16): asking for a deeper
metric (``--metrics AP@100`` grows the run's document depth from 50 to 100) never changes what a fusion fuses, so
every shallower metric keeps its value; the deeper cut-offs read what the fused union of the cut lists holds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.evaluation.changes import changes_between
from harness.evaluation.runs import load_run
from harness.retrieve.base import QueryResult
from harness.retrieve.fusion import FusionSpec, FusionSpecError
from harness.retrieve.registry import SystemSet

REPO = Path(__file__).resolve().parents[1]
BASELINE = REPO / "runs" / "baselines" / "mx-leyes-dof-eval-v1-six-systems"


def _lists(n: int = 120) -> tuple[list, list]:
    """Input A ranks ``y`` 1st and ``x`` 2nd; input B ranks ``x`` 51st (just past the default input depth of 50)
    and never ``y`` (fillers named z... lose ties on id). Cut at 50, RRF puts ``y`` first (1/61 > 1/62); cut at
    100, ``x`` first (1/62 + 1/111 > 1/61)."""
    a = [("y", 100.0), ("x", 99.0)] + [(f"za{i:03d}", 98.0 - i * 0.1) for i in range(n)]
    b = [(f"zb{i:03d}", 200.0 - i) for i in range(50)] + [("x", 149.0)] + [(f"zc{i:03d}", 148.0 - i) for i in range(n)]
    return a, b


def test_run_fusion_cuts_inputs_at_its_own_depth_not_the_runs():
    spec = FusionSpec.parse("rrf:A+B")
    a, b = _lists()
    # the inputs as a run at depth 100 holds them (each system ranked 100 documents)
    fused = SystemSet._fuse(spec, [[QueryResult(docs=a[:100], chunks=None)], [QueryResult(docs=b[:100], chunks=None)]])
    top = [d for d, _ in fused[0].docs]
    assert top[0] == "y"  # the default input depth (50) decides, not the run's 100
    assert "x" in top and len(top) == 100  # the union of two 50-lists: deeper cut-offs read it
    # the same inputs as a run at depth 50 holds them: the same fused list, so every shallow metric is unchanged
    fused50 = SystemSet._fuse(spec, [[QueryResult(docs=a[:50], chunks=None)], [QueryResult(docs=b[:50], chunks=None)]])
    assert [d for d, _ in fused50[0].docs] == top
    deep = FusionSpec.parse("rrf[input_depth=100]:A+B")
    fused_deep = SystemSet._fuse(
        deep, [[QueryResult(docs=a[:100], chunks=None)], [QueryResult(docs=b[:100], chunks=None)]]
    )
    assert fused_deep[0].docs[0][0] == "x"  # an explicit input depth of 100 fuses the deeper lists


def test_input_depth_is_an_option_with_a_canonical_name_and_a_recorded_config():
    spec = FusionSpec.parse("rrf")
    assert spec.name == "rrf"  # defaults are not written
    assert spec.config()["input_depth"] == {"document": 50, "chunk": 200}
    deep = FusionSpec.parse("w0.25[input_depth=100;chunk_input_depth=400]:bm25+mine")
    assert deep.name == "w0.25[input_depth=100;chunk_input_depth=400]:bm25+mine"
    assert FusionSpec.parse(deep.name) == deep
    assert deep.config()["input_depth"] == {"document": 100, "chunk": 400}
    assert FusionSpec.parse("rrf[input_depth=80]:k=30").name == "rrf[input_depth=80]:k=30"
    for bad in ("rrf[input_depth=0]", "rrf[input_depth=x]", "w0.5[input_depth=1e9]"):
        with pytest.raises(FusionSpecError, match="input_depth"):
            FusionSpec.parse(bad)


def test_sweep_fuses_at_the_fusions_input_depth():
    a, b = _lists()
    spec = FusionSpec.parse("rrf:A+B")
    assert spec.fuse([a, b], level="document")[0][0] == "y"
    assert spec.fuse([a, b], level="document") == spec.fuse([a[:50], b[:50]])
    assert spec.fuse([a, b], depth=100)[0][0] == "x"  # the explicit depth keeps its old meaning


def test_a_baseline_that_predates_the_option_shows_no_change(tmp_path: Path):
    """The committed baseline's fusions cut their inputs at the run's depths (50 / 200): a new record that states
    the default input depths agrees with it, and one with another input depth is a listed change."""
    new = tmp_path / "new"
    shutil.copytree(BASELINE, new)
    man = json.loads((new / "manifest.json").read_text("utf-8"))
    fusions = [n for n, c in man["system_configs"].items() if "fusion" in c]
    assert fusions, "the baseline holds fusion systems"
    for name in fusions:
        assert "input_depth" not in man["system_configs"][name]
        man["system_configs"][name]["input_depth"] = {"document": 50, "chunk": 200}
    (new / "manifest.json").write_text(json.dumps(man, indent=1), "utf-8")
    base, cand = load_run(BASELINE), load_run(new)
    pairs = [(n, n) for n in fusions]
    assert [c for c in changes_between(base, cand, pairs) if "input_depth" in c.field] == []
    man["system_configs"][fusions[0]]["input_depth"] = {"document": 100, "chunk": 200}
    (new / "manifest.json").write_text(json.dumps(man, indent=1), "utf-8")
    [change] = [c for c in changes_between(base, load_run(new), pairs) if "input_depth" in c.field]
    assert change.field == f"{fusions[0]}.input_depth"
    assert (change.baseline, change.candidate) == ("documents 50, chunks 200", "documents 100, chunks 200")


def test_rrf_k_is_bounded_where_its_ranks_stay_distinct():
    """``rrf:k=1e308`` gave every id the same fused score (exit 0): k is refused above 1e9 with one line naming it,
    and at the bound the fused order still follows the ranks."""
    for bad in ("rrf:k=1e308", "rrf:k=1e10"):
        with pytest.raises(FusionSpecError, match=r"k: Input should be less than or equal to 1000000000"):
            FusionSpec.parse(bad)
    spec = FusionSpec.parse("rrf:k=1e9:A+B")
    fused = spec.fuse([[("a", 3.0), ("b", 2.0), ("c", 1.0)], [("c", 5.0), ("a", 1.0)]], depth=None)
    assert [d for d, _ in fused] == ["a", "c", "b"]  # a: ranks 1 + 2, c: 3 + 1, b: 2 alone
    assert len({s for _, s in fused}) == 3
