"""Structure rules checked on the source itself (AST, no imports of the package):

* the import graph of ``harness/`` has no cycle — every strongly connected component has one module — counting
  module-level imports, imports inside functions and ``TYPE_CHECKING`` imports alike (a cycle hidden by an import
  inside a function is still a cycle);
* no module of ``harness/`` is over 600 lines;
* no test calls ``pytest.importorskip("harness...")``: the project's own modules are imported plainly, so a missing
  piece fails instead of skipping.

There is no allow-list: the violations found when this test was written (the report/html <-> report/markdown cycle,
six modules over 600 lines, four importorskip calls) were all removed before it was merged.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "harness"
TESTS = REPO / "tests"
MAX_LINES = 600

# --------------------------------------------------------------------------------------------------------------
# The import graph


def module_name(path: Path) -> str:
    """``harness/metrics/__init__.py`` -> ``harness.metrics``; ``harness/io.py`` -> ``harness.io``."""
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules() -> dict[str, Path]:
    """Every module of ``harness/`` by dotted name."""
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve_from(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module a ``from ... import`` names (relative imports resolved against ``module``)."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _owner(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of ``name`` that is a module of the package (``None`` outside ``harness``)."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        cand = ".".join(parts[:i])
        if cand in modules:
            return cand
    return None


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package modules ``module`` imports anywhere in its body (module level, functions, TYPE_CHECKING).

    ``from a.b import c`` counts as importing ``a.b.c`` when that is a module, else ``a.b``.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [_owner(a.name, modules) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_from(module, path.name == "__init__.py", node)
            targets = [_owner(f"{base}.{a.name}", modules) or _owner(base, modules) for a in node.names]
        else:
            continue
        out.update(t for t in targets if t is not None)
    out.discard(module)
    return out


@functools.cache
def import_graph() -> dict[str, set[str]]:
    """``{module: {modules it imports}}`` over the whole package."""
    modules = package_modules()
    return {m: imports_of(m, p, modules) for m, p in modules.items()}


def strongly_connected_components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm (Tarjan 1972), iterative; components with their modules sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                out.append(sorted(comp))
    return out


def test_checker_finds_cycles_hidden_in_functions_type_checking_and_relative_imports(tmp_path):
    """The checker itself, on a toy package: every kind of import is an edge, and Tarjan finds the cycle."""
    files = {
        "harness.x": ("x.py", "import json\n\n\ndef f():\n    from harness.y import g\n"),
        "harness.y": ("y.py", "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    import harness.x\n"),
        "harness.p": ("p/__init__.py", "from . import q\nfrom ..x import f\nfrom harness.p import nothing\n"),
        "harness.p.q": ("p/q.py", "from . import y\nimport numpy\n"),
    }
    mods = {}
    for name, (rel, text) in files.items():
        mods[name] = tmp_path / rel
        mods[name].parent.mkdir(parents=True, exist_ok=True)
        mods[name].write_text(text)
    graph = {m: imports_of(m, p, mods) for m, p in mods.items()}
    assert graph == {
        "harness.x": {"harness.y"},  # inside a function
        "harness.y": {"harness.x"},  # under TYPE_CHECKING
        "harness.p": {"harness.p.q", "harness.x"},  # relative, from a package's __init__; the self-import dropped
        "harness.p.q": {"harness.p"},  # `from . import y`: y is no module of harness.p, so harness.p itself
    }
    assert sorted(c for c in strongly_connected_components(graph) if len(c) > 1) == [
        ["harness.p", "harness.p.q"],
        ["harness.x", "harness.y"],
    ]
    assert all(len(c) == 1 for c in strongly_connected_components({"a": {"b"}, "b": {"c"}, "c": set()}))
    assert sorted(map(len, strongly_connected_components({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}))) == [1, 3]


def test_import_graph_has_no_cycle():
    graph = import_graph()
    assert len(graph) > 50 and "harness.metrics.relevance" in graph["harness.metrics"]
    cycles = [c for c in strongly_connected_components(graph) if len(c) > 1]
    assert cycles == [], f"import cycles: {cycles}"


def test_goldset_corrections_does_not_import_the_validator():
    """Cycle 2 of the architecture review (goldset.corrections -> validate.core -> goldset.corrections) is gone."""
    graph = import_graph()
    assert not any(m.startswith("harness.validate") for m in graph["harness.goldset.corrections"])
    assert "harness.goldset.corrections" in graph["harness.validate.core"]


# --------------------------------------------------------------------------------------------------------------
# Module size


def test_no_module_over_600_lines():
    sizes = {
        str(p.relative_to(REPO)): len(p.read_text(encoding="utf-8").splitlines()) for p in package_modules().values()
    }
    assert {p: n for p, n in sizes.items() if n > MAX_LINES} == {}


# --------------------------------------------------------------------------------------------------------------
# Tests import the project plainly


def importorskip_calls(path: Path, root: Path = REPO) -> set[str]:
    """``"<path relative to root>: <module>"`` for every ``importorskip("harness...")`` call in a test file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        arg = node.args[0]
        if name == "importorskip" and isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            if arg.value == "harness" or arg.value.startswith("harness."):
                out.add(f"{path.relative_to(root)}: {arg.value}")
    return out


def test_importorskip_checker_sees_attribute_and_bare_calls(tmp_path):
    f = tmp_path / "test_probe.py"
    f.write_text(
        "import pytest\nfrom pytest import importorskip\n\n"
        "m = pytest.importorskip('harness.metrics')\nn = importorskip('harness')\nr = pytest.importorskip('ranx')\n"
    )
    assert importorskip_calls(f, tmp_path) == {"test_probe.py: harness.metrics", "test_probe.py: harness"}


def test_no_test_skips_when_a_project_module_is_missing():
    found = set().union(*(importorskip_calls(p) for p in sorted(TESTS.rglob("*.py"))))
    assert found == set(), f"import the project's own modules plainly: {sorted(found)}"
