"""docs/measurements.md is written by benchmarks/measurements.py: blocks are balanced and registered, the baseline
block is what its command prints now, and the README carries no measured figure of its own."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _tool():
    spec = importlib.util.spec_from_file_location("measurements_tool", REPO / "benchmarks" / "measurements.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses resolve their module through sys.modules
    spec.loader.exec_module(mod)
    return mod


TOOL = _tool()
DOC_TEXT = (REPO / "docs" / "measurements.md").read_text(encoding="utf-8")


def test_replace_block_round_trip():
    text = "# T\n\nintro\n\n<!-- BEGIN a -->\nold\n<!-- END a -->\n\nafter\n"
    new = TOOL.replace_block(text, "a", "new body")
    assert new == "# T\n\nintro\n\n<!-- BEGIN a -->\nnew body\n<!-- END a -->\n\nafter\n"
    assert TOOL.replace_block(new, "a", "new body") == new
    appended = TOOL.replace_block(text, "b", "x")
    assert appended.endswith("<!-- BEGIN b -->\nx\n<!-- END b -->\n") and "old" in appended


@pytest.mark.parametrize(
    "text",
    [
        "<!-- BEGIN a -->\nx\n",
        "x\n<!-- END a -->",
        "<!-- END a -->\n<!-- BEGIN a -->",
        "<!-- BEGIN a --><!-- BEGIN a --><!-- END a -->",
    ],
)
def test_unbalanced_markers_are_refused(text):
    with pytest.raises(ValueError, match="block 'a'"):
        TOOL.block_span(text, "a")


def test_every_block_in_the_doc_is_registered_and_every_registered_block_is_in_the_doc():
    in_doc = re.findall(r"<!-- BEGIN ([\w.-]+) -->", DOC_TEXT)
    assert sorted(in_doc) == sorted(TOOL.BLOCKS), "docs/measurements.md and benchmarks/measurements.py BLOCKS differ"
    for name in in_doc:
        start, end = TOOL.block_span(DOC_TEXT, name)
        body = DOC_TEXT[start:end].strip()
        assert body, f"block {name!r} is empty: run benchmarks/measurements.py {name}"
        if TOOL.BLOCKS[name].mode != "self":
            assert body.startswith(f"_Written by `benchmarks/measurements.py {name}`"), name


def _without_provenance(body: str) -> str:
    return body.strip().split("\n", 1)[1].strip()


def test_the_baseline_block_is_what_its_command_prints_now():
    start, end = TOOL.block_span(DOC_TEXT, "baseline")
    fresh = TOOL.measure("baseline", TOOL.BLOCKS["baseline"])
    assert _without_provenance(DOC_TEXT[start:end]) == _without_provenance(fresh)


def test_readme_types_no_measured_figure():
    """Means, intervals, rates and timings live in docs/measurements.md blocks, not in the README's prose."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    prose = re.sub(r"```.*?```", "", readme, flags=re.S)
    figures = re.findall(r"\b0\.\d{3}\b|\b\d+(?:\.\d+)? ?(?:%|ms|s/q|chunks/s|GB|MB)(?=[\s,.;)])", prose)
    # confidence and power levels, and the coverage rule's threshold, are settings, not measurements
    nominal = {"95 %", "90 %", "80 %", "93 %"}
    figures = [f for f in figures if f not in nominal]
    assert not figures, f"README.md types measured figures {figures[:5]}: move them to a docs/measurements.md block"
