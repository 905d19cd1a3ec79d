"""Structure rules checked on the source itself (AST, no imports of the package):

* the import graph of ``harness/`` has no cycle — every strongly connected component has one module — counting
  module-level imports, imports inside functions and ``TYPE_CHECKING`` imports alike (a cycle hidden by an import
  inside a function is still a cycle);
* no module of ``harness/`` is over 600 lines;
* no test calls ``pytest.importorskip("harness...")``: the project's own modules are imported plainly, so a missing
  piece fails instead of skipping.

* importing ``harness.a.b.c`` also runs ``harness/a/__init__.py`` and ``harness/a/b/__init__.py``: those package
  edges count too (the circular import ``retrieve.counts -> retrieve.bm25.index -> retrieve/bm25/__init__ ->
  bm25.system -> retrieve.counts`` hid there);
* the **package graph** (each module collapsed to its top-level subpackage or top-level module) follows
  :data:`LAYERS`: a package imports only packages of lower layers, so it has no cycle;
* every module imports on its own in a fresh interpreter (``python -c "import harness.X"``; slow);
* the light entry points stay light: ``import harness.validate`` and ``import harness.report.format`` each load at
  most :data:`MAX_LIGHT_MODULES` harness modules.

The violations found when the cycle and size checks were written (the report/html <-> report/markdown cycle, six
modules over 600 lines, four importorskip calls) were all removed before they were merged; the package-level
component of issue 27 (evaluation, goldset, metrics, report, retrieve, studies, validate) was removed by the moves
listed in the merge commit of the layers branch (``git log --grep "Merge branch .layers."``).
"""

from __future__ import annotations

import ast
import functools
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

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

    ``from a.b import c`` counts as importing ``a.b.c`` when that is a module, else ``a.b``. Importing
    ``harness.a.b.c`` also runs ``harness/a/__init__.py`` and ``harness/a/b/__init__.py``, so those packages are
    edges too, unless they enclose ``module`` itself (then they are already initialised). This is the edge behind
    the circular import ``retrieve.counts -> retrieve.bm25.index`` (which ran ``retrieve/bm25/__init__``, which
    imported ``bm25.system``, which imported ``counts``).
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
    out.update(parent for t in list(out) for parent in _parent_packages(t) if not _is_ancestor(parent, module))
    out.discard(module)
    return out


def _parent_packages(name: str) -> list[str]:
    """The packages Python runs before ``name``: ``harness.a.b.c`` -> ``harness.a``, ``harness.a.b`` (the root
    ``harness`` is an ancestor of every module, so it is left out)."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(2, len(parts))]


def _is_ancestor(package: str, module: str) -> bool:
    """Whether ``package`` is ``module`` or one of its enclosing packages (already initialised when ``module`` runs)."""
    return module == package or module.startswith(package + ".")


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
        # package __init__ edges: importing harness.r.s runs harness/r/__init__, which imports harness.t
        "harness.t": ("t.py", "from harness.r.s import h\n"),
        "harness.r": ("r/__init__.py", "from harness.r.u import k\n"),
        "harness.r.s": ("r/s.py", "h = 1\n"),
        "harness.r.u": ("r/u.py", "import harness.t\n"),
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
        "harness.t": {"harness.r.s", "harness.r"},  # the package whose __init__ runs first
        "harness.r": {"harness.r.u"},  # its own submodule: no edge back to itself
        "harness.r.s": set(),
        "harness.r.u": {"harness.t"},
    }
    assert sorted(c for c in strongly_connected_components(graph) if len(c) > 1) == [
        ["harness.p", "harness.p.q"],
        ["harness.r", "harness.r.u", "harness.t"],
        ["harness.x", "harness.y"],
    ]
    assert all(len(c) == 1 for c in strongly_connected_components({"a": {"b"}, "b": {"c"}, "c": set()}))
    assert sorted(map(len, strongly_connected_components({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}))) == [1, 3]


def test_import_graph_has_no_cycle():
    graph = import_graph()
    assert len(graph) > 50 and "harness.metrics.relevance" in graph["harness.metrics"]
    cycles = [c for c in strongly_connected_components(graph) if len(c) > 1]
    assert cycles == [], f"import cycles: {cycles}"


# --------------------------------------------------------------------------------------------------------------
# The package graph: layers, bottom first. A package may import packages of strictly lower layers only. A new
# top-level package or module gets a layer here (the test names it when it has none).

LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"errors", "nfc", "terminal_safe", "defaults", "tabular", "suggest", "relpath", "wording"}),  # leaves
    frozenset({"progress", "inputs", "harness", "config"}),  # `harness`: the root package's own __init__; config
    frozenset({"ranking", "levels", "io", "memory", "ids", "stats"}),  # stats: pure numerics, knows no metric or report
    frozenset({"corpus", "goldset", "derived"}),  # corpus files, chunkers, quote search; the gold-set model; manifests
    frozenset({"metrics", "retrieve", "validate"}),
    frozenset({"curation", "evaluation", "studies"}),  # gold-set authoring; runs, compare, gate; the studies
    frozenset({"report"}),  # every rendering
    frozenset({"schemas"}),  # the JSON Schema files of the envelopes: models over evaluation's and report's registry
    frozenset({"cli", "api"}),  # the two front ends: the command line and the Python API (harness.api)
    frozenset({"__main__"}),
)


def package_of(module: str) -> str:
    """``harness.report.html.sections`` -> ``report``; ``harness.io`` -> ``io``; ``harness`` -> ``harness``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def package_graph(graph: dict[str, set[str]]) -> dict[str, dict[str, list[str]]]:
    """``{package: {package it imports: ["module -> module", ...]}}`` (edges inside one package left out)."""
    out: dict[str, dict[str, list[str]]] = {}
    for m, targets in graph.items():
        a = package_of(m)
        row = out.setdefault(a, {})
        for t in sorted(targets):
            b = package_of(t)
            if a != b:
                row.setdefault(b, []).append(f"{m} -> {t}")
    return out


def layer_violations(pgraph: dict[str, dict[str, list[str]]]) -> list[str]:
    """Each package edge that does not go to a strictly lower layer, with the module edges behind it."""
    rank = {p: i for i, layer in enumerate(LAYERS) for p in layer}
    bad = [f"{p}: in no layer of LAYERS" for p in sorted(pgraph) if p not in rank]
    for a, row in sorted(pgraph.items()):
        for b, why in sorted(row.items()):
            if a in rank and b in rank and rank[b] >= rank[a]:
                bad.append(f"{a} -> {b} (layer {rank[a]} -> {rank[b]}): {'; '.join(why)}")
    return bad


def test_layer_checker_on_a_toy_graph():
    """The checker names an upward edge with its modules, a same-layer edge, and a package without a layer."""
    graph = {
        "harness.stats.x": {"harness.errors"},  # down: fine
        "harness.corpus.a": {"harness.goldset.b"},  # same layer: refused
        "harness.metrics.c": {"harness.report.d", "harness.metrics.e"},  # up: refused; inside metrics: ignored
        "harness.newpkg.f": {"harness.io"},
    }
    bad = layer_violations(package_graph(graph))
    assert bad == [
        "newpkg: in no layer of LAYERS",
        "corpus -> goldset (layer 3 -> 3): harness.corpus.a -> harness.goldset.b",
        "metrics -> report (layer 4 -> 6): harness.metrics.c -> harness.report.d",
    ]
    assert layer_violations(package_graph({"harness.stats.x": {"harness.errors"}})) == []


def test_package_graph_follows_the_layers():
    """Function-level, ``TYPE_CHECKING`` and package-``__init__`` edges counted (:func:`imports_of`)."""
    pgraph = package_graph(import_graph())
    assert {"corpus", "goldset", "validate", "curation", "report", "cli"} <= set(pgraph)
    assert layer_violations(pgraph) == []
    flat = {a: set(row) for a, row in pgraph.items()}
    assert [c for c in strongly_connected_components(flat) if len(c) > 1] == []


def test_the_layers_are_disjoint():
    names = [p for layer in LAYERS for p in layer]
    assert len(names) == len(set(names))


# --------------------------------------------------------------------------------------------------------------
# Imports at run time, in fresh interpreters

MAX_LIGHT_MODULES = 25


def _fresh_env(tmp: Path) -> dict[str, str]:
    """The test's environment with bytecode cached under ``tmp`` (each fresh interpreter would otherwise compile
    every module again on a machine with ``PYTHONDONTWRITEBYTECODE``), nothing written into the checkout."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _import_alone(module: str, env: dict[str, str]) -> tuple[str, int, str]:
    proc = subprocess.run(
        [sys.executable, "-c", f"import {module}"], env=env, cwd=REPO, capture_output=True, text=True, timeout=300
    )
    return module, proc.returncode, (proc.stderr.strip().splitlines() or [""])[-1]


# A zygote: an interpreter that has loaded the third-party libraries harness imports (numpy, scipy.stats, pydantic,
# rich, ...) and no harness module, then forks one child per harness module; the child imports that module alone and
# exits. For harness's own import order (the bug class: a cycle through a package ``__init__`` that fails only when
# the cycle's module is imported first) a forked child is a fresh interpreter; it skips re-importing scipy.stats and
# friends 160 times (about 1-3 s each on 2 cores), which made the one-interpreter-per-module test take 8 minutes.
_ZYGOTE = r"""
import json, os, sys, traceback
for name in json.loads(sys.argv[1]):
    try:
        __import__(name)
    except BaseException:
        pass
loaded = sorted(m for m in sys.modules if m == "harness" or m.startswith("harness."))
print(json.dumps(["<zygote>", 0 if not loaded else 1, " ".join(loaded)]), flush=True)
for line in sys.stdin:
    module = line.strip()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        code = 0
        try:
            __import__(module)
        except BaseException:
            code = 1
            os.write(w, traceback.format_exc().strip().splitlines()[-1].encode())
        os._exit(code)
    os.close(w)
    chunks = []
    while (b := os.read(r, 65536)):
        chunks.append(b)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    print(json.dumps([module, os.waitstatus_to_exitcode(status), b"".join(chunks).decode()]), flush=True)
"""


def _third_party_modules(env: dict[str, str], modules: list[str]) -> list[str]:
    """The non-harness, non-stdlib modules that importing every module of ``modules`` loads (in one interpreter)."""
    code = (
        "import json, sys\n"
        f"for m in {modules!r}: __import__(m)\n"
        "top = lambda m: m.split('.')[0]\n"
        "print(json.dumps(sorted(m for m in sys.modules if top(m) != 'harness' "
        "and top(m) not in sys.stdlib_module_names)))"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.slow
def test_every_module_imports_alone_in_a_fresh_interpreter(tmp_path):
    """``import harness.X`` succeeds for every module X with no other harness module loaded before it (an import
    cycle through a package ``__init__`` fails only when the cycle's module is imported first): each in a child
    forked from a zygote that holds the third-party libraries and no harness module, and, as a check of the zygote,
    a few modules in truly fresh interpreters (``harness.retrieve.counts`` is the one that failed, issue 27).
    ``harness.__main__`` runs the CLI, so it is left out."""
    env = {**_fresh_env(tmp_path / "pycache"), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    modules = sorted(m for m in package_modules() if m != "harness.__main__")
    preload = _third_party_modules(env, modules)
    assert "numpy" in preload and "pydantic" in preload
    proc = subprocess.run(
        [sys.executable, "-c", _ZYGOTE, json.dumps(preload)],
        input="\n".join(modules) + "\n",
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    assert results[0] == ["<zygote>", 0, ""], results[0]  # no harness module in the zygote
    assert [r[0] for r in results[1:]] == modules, proc.stderr[-2000:]
    assert [r for r in results[1:] if r[1] != 0] == []
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        fresh = ["harness.retrieve.counts", "harness.validate", "harness.report.format", "harness.cli"]
        assert [r for r in pool.map(lambda m: _import_alone(m, env), fresh) if r[1] != 0] == []


def test_the_zygote_sees_an_import_cycle_through_a_package_init(tmp_path):
    """The zygote's children fail where a fresh interpreter fails: a package whose ``__init__`` imports a submodule
    that imports a name from the half-initialised package."""
    pkg = tmp_path / "cyc"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from cyc.a import f\nVALUE = 1\n", "utf-8")
    (pkg / "a.py").write_text("from cyc.b import g\ndef f():\n    return g()\n", "utf-8")
    (pkg / "b.py").write_text("from cyc import VALUE\ndef g():\n    return VALUE\n", "utf-8")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", _ZYGOTE, json.dumps(["json"])],
        input="cyc.b\njson\n",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    assert results[1][0] == "cyc.b" and results[1][1] == 1 and "ImportError" in results[1][2], results
    assert results[2] == ["json", 0, ""]
    fresh = subprocess.run([sys.executable, "-c", "import cyc.b"], env=env, capture_output=True, text=True)
    assert fresh.returncode == 1 and "ImportError" in fresh.stderr


def _loaded_by(module: str, env: dict[str, str]) -> list[str]:
    code = (
        f"import sys, {module}\n"
        "print('\\n'.join(sorted(m for m in sys.modules if m == 'harness' or m.startswith('harness.'))))"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, check=True)
    return proc.stdout.split()


@pytest.mark.parametrize("module", ["harness.validate", "harness.report.format"])
def test_light_entry_points_load_few_modules(module, tmp_path):
    """Validating a gold set does not load runs, gates or studies; the shared formatters load no report model (issue
    27: they loaded 79 and 51 harness modules)."""
    loaded = _loaded_by(module, _fresh_env(tmp_path / "pycache"))
    assert module in loaded
    assert len(loaded) <= MAX_LIGHT_MODULES, loaded
    assert not any(m.startswith(("harness.evaluation.gate", "harness.studies", "harness.report.model")) for m in loaded)


#: Issue 40 item 7: what ``harness validate --format json`` and ``import harness.studies.known_item`` may load (the
#: format registry imported every renderer up front: 122 and 105 harness modules).
MAX_VERB_MODULES = 40


def test_lazy_renderers_keep_validate_json_and_the_known_item_package_light(tmp_path):
    from conftest import REFERENCE_V4

    env = _fresh_env(tmp_path / "pycache")
    loaded = _loaded_by("harness.studies.known_item", env)
    assert len(loaded) <= MAX_VERB_MODULES, loaded
    gs = REFERENCE_V4  # the reference gold set, which has a contract here
    code = (
        "import sys\nfrom harness.cli import main\n"
        f"sys.argv = ['harness', 'validate', {str(gs)!r}, '--format', 'json']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('MODULES', *sorted(m for m in sys.modules if m.split('.')[0] == 'harness'), file=sys.stderr)"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["kind"] == "validation"
    loaded = proc.stderr.rpartition("MODULES ")[2].split()
    assert "harness.validate" in loaded and len(loaded) <= MAX_VERB_MODULES, loaded
    assert not any(
        m.startswith(("harness.stats", "harness.evaluation", "harness.report.terminal", "harness.schemas"))
        for m in loaded
    )


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


# --------------------------------------------------------------------------------------------------------------
# The CLI: one error handler


def test_cli_commands_leave_harness_errors_to_the_one_handler():
    """No command of ``harness/cli`` catches :class:`HarnessError` itself (:class:`harness.cli._common.HarnessTyper`
    turns it into one line and its exit code); ``_common.py``'s own helpers and the app callback may."""
    found = []
    for path in sorted((PACKAGE / "cli").glob("*.py")):
        if path.name == "_common.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            caught = node.type if isinstance(node, ast.ExceptHandler) else None
            if isinstance(caught, ast.Name) and caught.id == "HarnessError":
                found.append(f"{path.name}:{node.lineno}")
    assert found == []


def test_the_handler_turns_a_harness_error_into_one_line_and_its_exit_code():
    from typer.testing import CliRunner

    from harness.cli._common import HarnessTyper
    from harness.errors import HarnessInputError

    app = HarnessTyper()

    @app.command()
    def fails(name: str = "x") -> None:
        """A command that refuses its input."""
        raise HarnessInputError(f"--name {name}: refused")

    @app.command()
    def works() -> None:
        print("ok")

    r = CliRunner().invoke(app, ["fails", "--name", "y"])
    assert r.exit_code == 2 and r.output.strip() == "error: --name y: refused"
    assert CliRunner().invoke(app, ["works"]).output == "ok\n"
    assert fails.__name__ == "fails"  # the decorator gives the function back unchanged


def test_default_depths_and_ks_are_declared_once():
    """``DEFAULT_KS`` and the 50/200 ranking depths live in :mod:`harness.defaults` (a leaf, so the CLI reads it
    without loading the metrics registry); every other module imports them (no literal ``50``/``200`` default)."""
    import typer

    import harness.evaluation.known_item_gate as known_item_gate
    import harness.evaluation.pipeline as pipeline
    import harness.report.model as model
    import harness.studies.coverage.population as population
    import harness.studies.known_item.systems as known_item
    from harness.cli import app
    from harness.defaults import DEFAULT_CHUNK_DEPTH, DEFAULT_DOC_DEPTH, DEFAULT_KS
    from harness.metrics import DEFAULT_KS as METRICS_KS

    assert pipeline.DEFAULT_KS is DEFAULT_KS and model.DEFAULT_KS is DEFAULT_KS and METRICS_KS is DEFAULT_KS
    assert (pipeline.DEFAULT_DOC_DEPTH, pipeline.DEFAULT_CHUNK_DEPTH) == (DEFAULT_DOC_DEPTH, DEFAULT_CHUNK_DEPTH)
    assert known_item.DEFAULT_DEPTH == population.RR_DEPTH == known_item_gate.RR_DEPTH == DEFAULT_CHUNK_DEPTH
    commands = typer.main.get_command(app).commands
    for verb in ("run", "evaluate"):
        params = {p.name: p.default for p in commands[verb].params}
        assert (params["doc_depth"], params["chunk_depth"]) == (DEFAULT_DOC_DEPTH, DEFAULT_CHUNK_DEPTH), verb
    assert {p.name: p.default for p in commands["known-item"].params}["chunk_depth"] == DEFAULT_CHUNK_DEPTH
    declared = [
        p.relative_to(REPO)
        for p in package_modules().values()
        if "DEFAULT_KS = (" in p.read_text(encoding="utf-8") or "DEFAULT_KS: tuple" in p.read_text(encoding="utf-8")
    ]
    assert declared == [Path("harness/defaults.py")]
