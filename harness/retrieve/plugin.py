"""A user's own retriever (or reranker) plugged in without editing the package: ``py:MODULE:ATTR``.

Spec
----
``py:MODULE:ATTR`` where

* ``MODULE`` is an importable module (``my_pkg.retrievers``) or a path to a ``.py`` file (``plugins/mine.py``,
  relative to the working directory, or absolute): a spec whose module part ends in ``.py`` or holds ``/`` is a
  path. A file is loaded under a private module name (``harness_plugin_<sha256[:12]>``), so two files with the
  same name do not collide and the package's own modules are never shadowed;
* ``ATTR`` is an attribute of that module, dotted for nested ones (``Retriever``, ``make``, ``factories.bm42``):
  the text after the **last** ``:`` of the spec (so a Windows-style path may hold ``:``).

What the attribute may be
-------------------------
* an object that already implements the protocol (has the required methods): used as is;
* a class: instantiated with no arguments;
* any other callable: a zero-argument factory, called once; what it returns must implement the protocol.

The retriever protocol (:class:`harness.retrieve.base.Retriever`) is ``search(queries, *, doc_depth,
chunk_depth) -> list[QueryResult]`` (documents, chunks or both per query) and ``config() -> dict``; a reranker
(:class:`harness.retrieve.base.Reranker`) needs ``predict(pairs) -> scores``. ``config`` is optional: a plugin
without one is recorded as ``{}``.

Provenance (:meth:`Plugin.record`): the spec, module, attribute, the sha256 of the module's source file (``None``
for a module without one, e.g. a built-in) and, for a file, its path as given. A replayed run refuses a file whose
sha256 changed (:func:`load_plugin` with ``sha256=``).

Every failure is unusable input (exit 2) on one line naming the field, the spec and what is wrong: a malformed
spec, a module that cannot be found, a module that fails to import (the first line of the error), an attribute
that does not exist, a factory that fails, an object without the protocol's methods.

The contract around plugin code (issue 26, items 4, 5, 6 and 16): every call into it (import, factory, ``search``,
``config``, ``predict``) goes through :func:`plugin_call`, which

* turns any ``BaseException`` but ``KeyboardInterrupt`` (``SystemExit`` from ``sys.exit`` or argparse included)
  into one :class:`~harness.errors.HarnessInputError` line naming the system (exit 2);
* runs it with standard output sent to standard error (Python's ``sys.stdout`` and file descriptor 1), so
  ``--format json`` output holds exactly the result;
* holds what it writes to ``sys.stderr`` until the call returns, and drops it when the call ends in ``SystemExit``
  (a plugin running argparse on harness's command line prints no ``usage:`` block: one line, issue 44 item 21);
* restores the working directory after the call (a plugin that ``chdir``s cannot move where the run is written).

What plugin code returns is checked before it is used (:func:`check_results`, :func:`check_json_value`,
:func:`check_scores`): scores must be finite reals that fit a float (``10**400`` is refused), ids non-empty
strings without whitespace, ``flags`` and ``config()`` strict JSON (no NaN, no set or object, at most
:data:`MAX_JSON_DEPTH` levels deep).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import inspect
import io
import json
import math
import numbers
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.errors import HarnessInputError
from harness.ids import check_item_id
from harness.ranking import canonical_ranking
from harness.retrieve.base import QueryResult

__all__ = [
    "MAX_JSON_DEPTH",
    "PLUGIN_PREFIX",
    "Plugin",
    "check_json_value",
    "check_results",
    "check_scores",
    "is_plugin_spec",
    "load_plugin",
    "parse_plugin_spec",
    "plugin_call",
    "unknown_id_warnings",
]

PLUGIN_PREFIX = "py:"
MAX_JSON_DEPTH = 64
"""Deepest nesting of lists and dicts accepted in a plugin's ``flags`` or ``config()`` (the record stays readable)."""


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Send ``sys.stdout`` and, where there is one, file descriptor 1 to standard error for the block."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    saved = None
    try:
        sys.__stdout__.flush()  # type: ignore[union-attr]
        saved = os.dup(1)
        os.dup2(2, 1)
    except (OSError, AttributeError, ValueError):
        saved = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        if saved is not None:
            with contextlib.suppress(Exception):
                sys.__stdout__.flush()  # type: ignore[union-attr]
            os.dup2(saved, 1)
            os.close(saved)


def _exited(exc: BaseException | None) -> bool:
    """Whether ``exc`` is, or was raised from, a ``SystemExit`` (``sys.exit``, argparse)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, SystemExit):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _last_line(text: str, limit: int = 200) -> str:
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    if not lines:
        return ""
    last = lines[-1]
    return last if len(last) <= limit else last[: limit - 3] + "..."


def plugin_call(where: str, what: str, fn: Callable, *args, **kwargs):
    """``fn(*args, **kwargs)`` under the plugin contract (module docstring): stdout to stderr, the working
    directory restored, any ``BaseException`` but ``KeyboardInterrupt`` raised as one line
    ``<where>: <what> failed (<Type>: <first line>)``.

    What the plugin writes to ``sys.stderr`` (and its ``print`` output) is held during the call and written to
    standard error after it, unless the call ends in a ``SystemExit`` (issue 44 item 21): then it is dropped, so a
    plugin that runs argparse on harness's own command line shows no ``usage: ...`` block above the one-line error,
    and argparse's last line (``error: unrecognized arguments: ...``) is quoted in that line instead.

    Raises:
        HarnessInputError: the plugin code raised (a ``HarnessInputError`` of its own is passed on unchanged).
    """
    cwd = os.getcwd()
    held = io.StringIO()
    exited = False
    try:
        with contextlib.redirect_stderr(held), _stdout_to_stderr():
            return fn(*args, **kwargs)
    except KeyboardInterrupt:
        raise
    except HarnessInputError as exc:
        exited = _exited(exc)
        raise
    except BaseException as exc:  # noqa: BLE001 - SystemExit and GeneratorExit too: a user's code, one line
        exited = isinstance(exc, SystemExit)
        said = _last_line(held.getvalue()) if exited else ""
        said = f"; it wrote: {said}" if said else ""
        raise HarnessInputError(f"{where}: {what} failed ({_first_line(exc)}{said})") from None
    finally:
        if not exited:
            with contextlib.suppress(Exception):
                sys.stderr.write(held.getvalue())
                sys.stderr.flush()
        try:
            moved = os.getcwd() != cwd
        except OSError:  # the plugin removed the folder it moved to
            moved = True
        if moved:
            os.chdir(cwd)


def _depth_ok(value, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict | list | tuple):
            if d > limit:
                return False
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return True


def check_json_value(value, where: str) -> None:
    """Refuse a value the run record cannot hold as strict JSON: not a JSON type (a set, an object), NaN or
    infinity, a non-string key, nesting deeper than :data:`MAX_JSON_DEPTH`.

    Raises:
        HarnessInputError: one line ``<where>: ...`` naming what is wrong.
    """
    if not _depth_ok(value, MAX_JSON_DEPTH):
        raise HarnessInputError(f"{where}: nested deeper than {MAX_JSON_DEPTH} levels; the record must stay readable")
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError, OverflowError) as exc:
        raise HarnessInputError(f"{where}: not strict JSON ({str(exc).splitlines()[0]})") from None


def _real(score, where: str) -> float:
    if isinstance(score, bool | str | bytes) or not isinstance(score, numbers.Real):
        raise HarnessInputError(f"{where}: score {score!r} is not a finite number")
    try:
        value = float(score)
    except (OverflowError, ValueError, TypeError):
        raise HarnessInputError(f"{where}: score {str(score)[:40]!r} does not fit a float") from None
    if not math.isfinite(value):
        raise HarnessInputError(f"{where}: score {score!r} is not a finite number")
    return value


def check_scores(raw, n: int, where: str) -> list[float]:
    """A reranker's ``predict`` output: ``n`` finite real scores (a list, tuple or numeric array; strings, bools,
    values too large for a float refused).

    Raises:
        HarnessInputError: another count, or a score that is not a finite real number.
    """
    if isinstance(raw, str | bytes | dict) or not hasattr(raw, "__len__") or not hasattr(raw, "__iter__"):
        raise HarnessInputError(f"{where}: predict returned {type(raw).__name__}, expected {n} scores")
    try:
        if isinstance(raw, np.ndarray):
            if raw.dtype.kind not in "fiu":
                raise HarnessInputError(f"{where}: predict returned an array of {raw.dtype}, expected numbers")
            raw = raw.reshape(-1).tolist()
        values = list(raw)
    except HarnessInputError:
        raise
    except Exception as exc:  # noqa: BLE001 - a user's object
        raise HarnessInputError(f"{where}: predict's scores cannot be read ({_first_line(exc)})") from None
    if len(values) != n:
        raise HarnessInputError(f"{where}: predict returned {len(values)} scores for {n} pairs")
    return [_real(v, f"{where}: predict score {i}") for i, v in enumerate(values)]


def is_plugin_spec(text: str) -> bool:
    """Whether ``text`` is a ``py:MODULE:ATTR`` spec (by its prefix; :func:`parse_plugin_spec` checks the rest)."""
    return isinstance(text, str) and text.strip().startswith(PLUGIN_PREFIX)


def parse_plugin_spec(spec: str, *, field: str = "--systems") -> tuple[str, str]:
    """``(module, attribute)`` of ``py:MODULE:ATTR``.

    Raises:
        HarnessInputError: no ``py:`` prefix, no ``:`` between module and attribute, an empty part.
    """
    text = spec.strip() if isinstance(spec, str) else ""
    if not text.startswith(PLUGIN_PREFIX):
        raise HarnessInputError(f"{field}: {spec!r} is not a plugin spec (py:MODULE:ATTR)")
    module, sep, attr = text[len(PLUGIN_PREFIX) :].rpartition(":")
    if not sep or not module.strip() or not attr.strip():
        raise HarnessInputError(f"{field}: {spec!r}: expected py:MODULE:ATTR (a module or .py file, then an attribute)")
    return module.strip(), attr.strip()


def _is_path(module: str) -> bool:
    return module.endswith(".py") or "/" in module or "\\" in module


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


@dataclass(frozen=True)
class Plugin:
    """A loaded plugin.

    Attributes:
        obj: the object implementing the protocol.
        spec: the spec as given (stripped).
        module: the module part (a dotted name or the path as given).
        attribute: the attribute part.
        path: the source file (``None`` when the module has none).
        sha256: hex sha256 of the source file (``None`` without one).
    """

    obj: object
    spec: str
    module: str
    attribute: str
    path: Path | None
    sha256: str | None

    def config(self) -> dict:
        """``obj.config()`` as a dict (``{}`` when the object has no ``config``).

        Raises:
            HarnessInputError: ``config()`` fails, does not return a mapping, or returns what is not strict JSON
                (:func:`check_json_value`).
        """
        get = getattr(self.obj, "config", None)
        if get is None:
            return {}
        cfg = plugin_call(self.spec, "config()", get)
        if not isinstance(cfg, dict):
            raise HarnessInputError(f"{self.spec}: config() returned {type(cfg).__name__}, expected a dict")
        check_json_value(cfg, f"{self.spec}: config()")
        return dict(cfg)

    def record(self) -> dict:
        """Provenance for the run manifest: ``{"spec", "module", "attribute", "sha256", "file"}``."""
        return {
            "spec": self.spec,
            "module": self.module,
            "attribute": self.attribute,
            "sha256": self.sha256,
            "file": self.module if _is_path(self.module) else None,
        }


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _import(module: str, field: str, spec: str):
    """The module object and its source file."""
    if _is_path(module):
        path = Path(module)
        if not path.is_file():
            raise HarnessInputError(f"{field}: {spec}: plugin file {module!r} not found")
        digest = _sha256(path)
        name = f"harness_plugin_{digest[:12]}"
        if name in sys.modules:
            return sys.modules[name], path
        loader_spec = importlib.util.spec_from_file_location(name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise HarnessInputError(f"{field}: {spec}: {module!r} cannot be loaded as a Python module")
        mod = importlib.util.module_from_spec(loader_spec)
        sys.modules[name] = mod
        try:
            plugin_call(f"{field}: {spec}", f"importing {module!r}", loader_spec.loader.exec_module, mod)
        except HarnessInputError:
            del sys.modules[name]
            raise
        return mod, path
    mod = plugin_call(f"{field}: {spec}", f"importing {module!r}", _import_module, module)
    if mod is None:
        raise HarnessInputError(f"{field}: {spec}: no module named {module!r}")
    src = getattr(mod, "__file__", None)
    return mod, (Path(src) if src and Path(src).is_file() else None)


def _import_module(module: str):
    """The imported module, or ``None`` when the module itself (or a parent package) does not exist."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module == exc.name or module.startswith(exc.name + ".")):
            return None
        raise


def _has(obj: object, methods: tuple[str, ...]) -> bool:
    return all(callable(getattr(obj, m, None)) for m in methods)


def load_plugin(
    spec: str,
    *,
    field: str = "--systems",
    protocol: tuple[str, ...] = ("search",),
    sha256: str | None = None,
) -> Plugin:
    """Load ``py:MODULE:ATTR`` (see the module docstring).

    Args:
        spec: the plugin spec.
        field: what error messages name (the CLI option or record field the spec came from).
        protocol: the methods the object must have: ``("search",)`` for a retriever, ``("predict",)`` for a reranker.
        sha256: when given (a replay), the source file must still have this sha256.

    Returns:
        The :class:`Plugin` (object and provenance).

    Raises:
        HarnessInputError: see the module docstring; also a source file whose sha256 differs from ``sha256``.
    """
    module, attr = parse_plugin_spec(spec, field=field)
    text = spec.strip()
    mod, path = _import(module, field, text)
    obj: object = mod
    for part in attr.split("."):
        if not part or not hasattr(obj, part):
            raise HarnessInputError(f"{field}: {text}: module {module!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if inspect.isclass(obj) or (callable(obj) and not _has(obj, protocol)):
        obj = plugin_call(f"{field}: {text}", f"calling {attr}()", obj)
    if not _has(obj, protocol):
        missing = [m for m in protocol if not callable(getattr(obj, m, None))]
        what = "retriever" if protocol == ("search",) else "plugin"
        raise HarnessInputError(
            f"{field}: {text}: {attr} is not a {what}: {type(obj).__name__} has no {', '.join(missing)}() method"
        )
    digest = _sha256(path) if path is not None else None
    if sha256 is not None and digest != sha256:
        raise HarnessInputError(
            f"{field}: {text}: source sha256 {str(digest)[:12]} differs from the recorded {sha256[:12]}: the plugin "
            "changed since the run"
        )
    return Plugin(obj=obj, spec=text, module=module, attribute=attr, path=path, sha256=digest)


def _plugin_ranking(value, where: str, depth: int, *, document: bool = False):
    if value is None:
        return None
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise HarnessInputError(f"{where}: expected a list of (id, score) pairs, got {type(value).__name__}")
    pairs = []
    for j, pair in enumerate(value):
        ok = isinstance(pair, Sequence) and not isinstance(pair, str | bytes) and len(pair) == 2
        if not ok or isinstance(pair[0], bool) or not isinstance(pair[0], str | numbers.Integral):
            raise HarnessInputError(f"{where}[{j}]: expected (id, score) with a str or int id, got {pair!r}")
        item = check_item_id(pair[0], f"{where}[{j}]", document=document)  # a document id holds no '#'
        pairs.append((item, _real(pair[1], f"{where}[{j}]")))
    return canonical_ranking(pairs, depth)


def check_results(results, n: int, doc_depth: int, chunk_depth: int, *, where: str) -> list[QueryResult]:
    """A retriever plugin's ``search`` output checked and made canonical.

    Args:
        results: what ``search`` returned: ``n`` results, each a :class:`~harness.retrieve.base.QueryResult` or a
            mapping with ``docs`` / ``chunks`` / ``flags`` (a missing or ``None`` ranking: that level is not ranked).
        n: the number of queries.
        doc_depth, chunk_depth: the rankings are cut here.
        where: what error messages name (the system).

    Returns:
        ``n`` :class:`~harness.retrieve.base.QueryResult`: each ranking canonical
        (:func:`harness.ranking.canonical_ranking`: score descending, then id ascending; a duplicate id keeps its best
        score) and cut at its depth.

    Raises:
        HarnessInputError: not one result per query; a result that is neither; a ranking that is not a list of
            ``(id, score)`` pairs with a ``str``/``int`` id (non-empty, no whitespace, a document id no ``#``:
            :func:`harness.ids.check_item_id`) and a finite real score that fits a float; flags that are not a
            mapping or not strict JSON.
    """
    if isinstance(results, str | bytes) or not isinstance(results, Sequence) or len(results) != n:
        got = len(results) if isinstance(results, Sequence) else type(results).__name__
        raise HarnessInputError(f"{where}: search returned {got} results for {n} queries; expected one per query")
    out = []
    for i, r in enumerate(results):
        if isinstance(r, Mapping):
            docs, chunks, flags = r.get("docs"), r.get("chunks"), r.get("flags") or {}
        elif isinstance(r, QueryResult):
            docs, chunks, flags = r.docs, r.chunks, r.flags or {}
        else:
            raise HarnessInputError(f"{where}: result {i} is a {type(r).__name__}, not a QueryResult")
        if not isinstance(flags, Mapping):
            raise HarnessInputError(f"{where}: result {i}: flags must be a dict")
        check_json_value(dict(flags), f"{where}: result {i}: flags")
        out.append(
            QueryResult(
                docs=_plugin_ranking(docs, f"{where}: result {i}: docs", doc_depth, document=True),
                chunks=_plugin_ranking(chunks, f"{where}: result {i}: chunks", chunk_depth),
                flags=dict(flags),
            )
        )
    return out


def unknown_id_warnings(name: str, results, corpus) -> list[str]:
    """One warning per level where a plugin returned ids ``corpus`` (a :class:`harness.corpus.store.Corpus`) does
    not hold (they count as not relevant), with counts and up to five examples, worded as ``evaluate``'s
    (:mod:`harness.evaluation.trec`; issue 26 item 9). ``results``: the plugin's checked
    :class:`~harness.retrieve.base.QueryResult` list."""
    chunk_ids, _docs = corpus.chunk_keys()
    known = {"docs": set(corpus.documents()), "chunks": set(chunk_ids)}
    out = []
    for level, word in (("docs", "document"), ("chunks", "chunk")):
        ids = [i for r in results for i, _ in (getattr(r, level) or [])]
        unknown = [i for i in ids if i not in known[level]]
        if unknown:
            eg = ", ".join(repr(i) for i in list(dict.fromkeys(unknown))[:5])
            out.append(
                f"system {name}: {len(unknown)} of {len(ids)} {word} ids are not in the corpus (they count as "
                f"not relevant), e.g. {eg}"
            )
    return out
