"""A user's own retriever as py:MODULE:ATTR: file and module plugins, factories, provenance, every failure mode, and
the check of what a plugin returns."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest
from conftest import REPO

from harness.errors import HarnessInputError
from harness.retrieve.base import QueryResult
from harness.retrieve.plugin import check_results, is_plugin_spec, load_plugin, parse_plugin_spec

TOY_FILE = REPO / "tests" / "fixtures" / "plugins" / "toy_retriever.py"
TOY = f"py:{TOY_FILE}"


def test_a_file_plugin_class_is_instantiated_and_recorded():
    p = load_plugin(f"{TOY}:ToyRetriever")
    assert type(p.obj).__name__ == "ToyRetriever" and p.obj.bonus == 0.0
    sha = hashlib.sha256(TOY_FILE.read_bytes()).hexdigest()
    assert p.sha256 == sha and p.path == TOY_FILE
    assert p.record() == {
        "spec": f"{TOY}:ToyRetriever",
        "module": str(TOY_FILE),
        "attribute": "ToyRetriever",
        "sha256": sha,
        "file": str(TOY_FILE),
    }
    assert p.config()["name"] == "toy"
    res = p.obj.search(["¿Qué multa tiene la tala?"], doc_depth=5, chunk_depth=5)
    assert res == [{"docs": [("ley-b", 2.0)], "flags": {"toy": True}}]


def test_a_relative_file_path_and_a_factory_and_an_instance(monkeypatch):
    monkeypatch.chdir(REPO)
    made = load_plugin("py:tests/fixtures/plugins/toy_retriever.py:make")
    assert made.obj.bonus == 0.5 and made.module == "tests/fixtures/plugins/toy_retriever.py"
    inst = load_plugin("py:tests/fixtures/plugins/toy_retriever.py:TOY")
    assert inst.obj.bonus == 0.0 and inst.attribute == "TOY"
    # the same file twice is one module object: the instance is the module's
    assert load_plugin("py:tests/fixtures/plugins/toy_retriever.py:TOY").obj is inst.obj


def test_a_module_plugin_with_a_dotted_attribute(tmp_path, monkeypatch):
    pkg = tmp_path / "my_plugins"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", "utf-8")
    (pkg / "retrievers.py").write_text(
        "class Box:\n"
        "    class Inner:\n"
        "        def search(self, queries, *, doc_depth, chunk_depth):\n"
        "            return [{'chunks': [('ley-a#0', 1.0)]} for _ in queries]\n",
        "utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    p = load_plugin("py:my_plugins.retrievers:Box.Inner")
    assert p.module == "my_plugins.retrievers" and p.attribute == "Box.Inner"
    assert p.sha256 == hashlib.sha256((pkg / "retrievers.py").read_bytes()).hexdigest()
    assert p.config() == {}  # no config(): recorded as {}
    assert p.record()["file"] is None


def test_a_reranker_protocol():
    p = load_plugin(f"{TOY}:ToyReranker", protocol=("predict",))
    assert p.obj.predict([("multa tala", "la tala se multa"), ("x", "y")]) == [2 - 16 / 1000, -1 / 1000]
    with pytest.raises(HarnessInputError, match="has no predict"):
        load_plugin(f"{TOY}:ToyRetriever", protocol=("predict",))


def test_spec_parsing():
    assert parse_plugin_spec("py:a.b:C") == ("a.b", "C")
    assert parse_plugin_spec("py:C:/plugins/x.py:make") == ("C:/plugins/x.py", "make")  # the last ':' splits
    assert is_plugin_spec(" py:x:y") and not is_plugin_spec("bm25")
    for bad in ("py:", "py:mod", "py::attr", "py:mod:", "mod:attr"):
        with pytest.raises(HarnessInputError, match="--systems"):
            parse_plugin_spec(bad)


@pytest.mark.parametrize(
    ("attr", "message"),
    [
        ("Missing", "has no attribute 'Missing'"),
        ("NotARetriever", "NotARetriever is not a retriever: NotARetriever has no search"),
        ("broken", r"calling broken\(\) failed \(RuntimeError: the factory broke\)"),
        ("needs_an_argument", r"calling needs_an_argument\(\) failed \(TypeError"),
        ("KEYWORDS", "not a retriever: dict has no search"),
    ],
)
def test_attribute_failures_name_the_spec(attr, message):
    with pytest.raises(HarnessInputError, match=message) as exc:
        load_plugin(f"{TOY}:{attr}", field="--systems")
    assert str(exc.value).startswith(f"--systems: {TOY}:{attr}: ") and "\n" not in str(exc.value)


def test_module_failures(tmp_path, monkeypatch):
    with pytest.raises(HarnessInputError, match="no module named 'no_such_plugin_module'"):
        load_plugin("py:no_such_plugin_module:X")
    with pytest.raises(HarnessInputError, match="plugin file .* not found"):
        load_plugin(f"py:{tmp_path / 'absent.py'}:X")
    bad = tmp_path / "bad.py"
    bad.write_text("raise ImportError('needs a GPU')\n", "utf-8")
    with pytest.raises(HarnessInputError, match=r"importing .*bad.py' failed \(ImportError: needs a GPU\)"):
        load_plugin(f"py:{bad}:X")
    syntax = tmp_path / "syntax.py"
    syntax.write_text("def f(:\n", "utf-8")
    with pytest.raises(HarnessInputError, match="SyntaxError"):
        load_plugin(f"py:{syntax}:f")
    (tmp_path / "needs_dep.py").write_text("import a_dependency_that_is_missing\n", "utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(HarnessInputError, match=r"importing 'needs_dep' failed \(ModuleNotFoundError"):
        load_plugin("py:needs_dep:X")


def test_config_failures(tmp_path):
    f = tmp_path / "cfg.py"
    f.write_text(
        "class A:\n    def search(self, q, *, doc_depth, chunk_depth): return []\n    def config(self): return [1]\n"
        "class B(A):\n    def config(self): raise KeyError('x')\n",
        "utf-8",
    )
    with pytest.raises(HarnessInputError, match="config\\(\\) returned list"):
        load_plugin(f"py:{f}:A").config()
    with pytest.raises(HarnessInputError, match="config\\(\\) failed \\(KeyError"):
        load_plugin(f"py:{f}:B").config()


def test_a_changed_file_is_refused_on_replay(tmp_path):
    f = tmp_path / "mine.py"
    f.write_text(TOY_FILE.read_text("utf-8"), "utf-8")
    p = load_plugin(f"py:{f}:ToyRetriever")
    assert load_plugin(f"py:{f}:ToyRetriever", sha256=p.sha256).sha256 == p.sha256
    f.write_text(TOY_FILE.read_text("utf-8") + "\n# edited\n", "utf-8")
    with pytest.raises(HarnessInputError, match="changed since the run"):
        load_plugin(f"py:{f}:ToyRetriever", sha256=p.sha256)


# ------------------------------------------------------------------------------------------------------------------
# what a plugin returns


def test_results_are_made_canonical_and_cut():
    raw = [
        QueryResult(docs=[("b", 1.0), ("a", 1.0), ("c", 3.0), ("a", 0.5)], chunks=None),
        {"chunks": [(7, np.float32(2.5)), ("x#1", np.int64(4))], "flags": {"k": 1}},
        {},
    ]
    out = check_results(raw, 3, 2, 5, where="system t")
    assert out[0] == QueryResult(docs=[("c", 3.0), ("a", 1.0)], chunks=None, flags={})
    assert out[1] == QueryResult(docs=None, chunks=[("x#1", 4.0), ("7", 2.5)], flags={"k": 1})
    assert out[2] == QueryResult(docs=None, chunks=None, flags={})


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([{}], "returned 1 results for 2 queries"),
        ("ab", "returned 2 results"),
        (None, "returned NoneType results"),
        ([{}, 3], "result 1 is a int"),
        ([{}, {"docs": "abc"}], "result 1: docs: expected a list"),
        ([{}, {"docs": [("a",)]}], r"result 1: docs\[0\]: expected \(id, score\)"),
        ([{}, {"docs": [(True, 1.0)]}], r"docs\[0\]: expected \(id, score\) with a str or int id"),
        ([{}, {"chunks": [("a", math.nan)]}], r"chunks\[0\]: score nan is not a finite number"),
        ([{}, {"chunks": [("a", "1")]}], "score '1' is not a finite number"),
        ([{}, {"docs": [("a", math.inf)]}], "score inf"),
        ([{}, {"docs": [], "flags": ["x"]}], "flags must be a dict"),
    ],
)
def test_malformed_results_name_system_result_and_field(raw, message):
    with pytest.raises(HarnessInputError, match=message) as exc:
        check_results(raw, 2, 10, 10, where="system mine (py:m.py:M)")
    assert str(exc.value).startswith("system mine (py:m.py:M): ")
