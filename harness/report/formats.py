"""Output formats of every verb that prints a result: one registry, ``--format table|json|markdown``, ``--out FILE``.

A verb's CLI function calls the library verb and hands the result, wrapped in a :class:`Result` (``kind``, value,
and the ``path`` of a record or folder it wrote), to :func:`emit`, which renders it in the chosen format and writes
it to stdout (``-``, the default) or to a file.

Formats (:data:`FORMATS`, name -> renderer ``(result, console) -> None``):

* ``table`` - rich tables and lines for a terminal (:mod:`harness.report.terminal`, the studies' own renderers);
* ``json`` - one envelope per result, ``{"kind", "schema_version", "path" (when a record was written), "data"}``,
  ``data`` being the kind's machine form (:data:`KINDS`); non-finite numbers are written as ``Infinity`` as in the
  run record's own files;
* ``markdown`` - GitHub-flavoured Markdown (:mod:`harness.report.markdown_verbs`), every input string escaped.

Warnings (few clusters, questions missing on either side, a truncated ICC) are part of every format's output (the
``warnings`` of the JSON ``data``, Markdown block quotes, yellow table lines; :func:`warnings_of`), and :func:`emit`
also prints them on stderr unless the output is the table on stdout.

Adding a format (e.g. ``junit``: the gate's :class:`~harness.evaluation.gate.GateVerdict` holds one check per metric
and per guard with its decision and reason) is one module with a renderer ``(result, console) -> None`` and one line in
:data:`FORMATS`. Output files are written atomically; a path that exists and is not a regular file (a folder, a
device such as ``/dev/null``, a link) is never written, and a missing parent folder is never created.
"""

from __future__ import annotations

import io
import json
import os
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from harness.errors import HarnessInputError
from harness.evaluation.record import RUN_SCHEMA_VERSION
from harness.io import atomic_write_text
from harness.report.markdown_verbs import render as markdown_of
from harness.report.studies import render_known_item, render_sensitivity, render_study
from harness.report.terminal import (
    render_comparison,
    render_gate,
    render_power,
    render_run,
    render_sweep,
    run_warnings,
)


@dataclass(frozen=True)
class Result:
    """What a verb produced, for a formatter.

    Attributes:
        kind: one of :data:`KINDS` (``run``, ``comparison``, ``gate``, ``power``, ``sweep``, ``validation``,
            ``goldset-apply``, ``known-item``, ``known-item-sensitivity``, ``known-item-study``, ``coverage``).
        value: the library verb's result (a :class:`~harness.evaluation.runs.RunRecord`,
            :class:`~harness.evaluation.compare.ComparisonReport`, ...).
        path: the record or output folder the verb wrote, if any (shown by every format).
    """

    kind: str
    value: Any
    path: Path | None = None


@dataclass(frozen=True)
class Kind:
    """A kind of result: the version of its JSON ``data`` shape and how to get it from the value."""

    schema_version: int
    data: Callable[[Any], Any]


def _coverage_data(value) -> dict:
    return {**value.to_dict(), "files": list(value.files)}


#: Every kind of result a verb prints, with its JSON form.
KINDS: dict[str, Kind] = {
    "run": Kind(RUN_SCHEMA_VERSION, lambda rec: rec.summary.model_dump(mode="python")),
    "comparison": Kind(1, lambda rep: rep.to_dict()),
    "gate": Kind(2, lambda v: v.to_dict()),
    "power": Kind(1, dict),
    "sweep": Kind(2, lambda res: res.to_dict()),
    "validation": Kind(1, lambda rep: rep.to_dict()),
    "goldset-apply": Kind(
        1,
        lambda res: {
            "written": res.written,
            "out_dir": None if res.out_dir is None else str(res.out_dir),
            "version": res.version,
            "records_changed": list(res.records_changed),
            "exit_code": res.exit_code,
            "validation": res.report.to_dict(),
        },
    ),
    "known-item": Kind(1, lambda res: res.summary),
    "known-item-sensitivity": Kind(1, lambda res: {"rows": res.rows}),
    "known-item-study": Kind(
        1, lambda res: {"known_item": res.known_item.summary, "coverage": _coverage_data(res.coverage)}
    ),
    "coverage": Kind(1, _coverage_data),
}


#: The warnings (few clusters, missing questions, ICC truncation) of each kind that has them.
_WARNINGS: dict[str, Callable[[Any], list[str]]] = {
    "run": run_warnings,
    "comparison": lambda rep: list(rep.warnings),
    "gate": lambda v: list(v.warnings),
    "power": lambda plan: list(plan.get("warnings", [])),
    "sweep": lambda res: list(res.warnings),
}


def warnings_of(result: Result) -> list[str]:
    """The warnings of a result (every format holds them inside its output: JSON in ``data``, Markdown as block
    quotes, the table as yellow lines); empty for kinds without any."""
    get = _WARNINGS.get(result.kind)
    return [] if get is None else get(result.value)


def _kind(result: Result) -> Kind:
    try:
        return KINDS[result.kind]
    except KeyError:
        raise HarnessInputError(f"no output form for a result of kind {result.kind!r}") from None


def envelope(result: Result) -> dict:
    """The JSON envelope ``{"kind", "schema_version", "path"?, "data"}`` of a result."""
    k = _kind(result)
    out: dict[str, Any] = {"kind": result.kind, "schema_version": k.schema_version}
    if result.path is not None:
        out["path"] = str(result.path)
    out["data"] = k.data(result.value)
    return out


def format_json(result: Result, console: Console) -> None:
    """The ``json`` format: :func:`envelope`, indented, UTF-8 characters kept."""
    console.file.write(json.dumps(envelope(result), indent=2, ensure_ascii=False, default=str) + "\n")


def format_markdown(result: Result, console: Console) -> None:
    """The ``markdown`` format (:mod:`harness.report.markdown_verbs`)."""
    _kind(result)
    console.file.write(markdown_of(result.kind, result.value, result.path) + "\n")


def _print(console: Console, value) -> None:
    console.print(value)


_TABLES: dict[str, Callable[[Any, Console], None]] = {
    "run": render_run,
    "comparison": render_comparison,
    "gate": render_gate,
    "power": render_power,
    "sweep": render_sweep,
    "validation": lambda rep, console: _validation_table(rep, console),
    "goldset-apply": lambda res, console: _apply_table(res, console),
    "known-item": lambda res, console: console.print(render_known_item(res.summary)),
    "known-item-sensitivity": lambda res, console: console.print(render_sensitivity(res.rows)),
    "known-item-study": lambda res, console: console.print(render_study(res.known_item.summary, res.coverage)),
    "coverage": lambda res, console: _print(console, res),
}


def _validation_table(report, console: Console) -> None:
    from harness.validate import render

    render(report, console)


def _apply_table(res, console: Console) -> None:
    from rich.text import Text

    _validation_table(res.report, console)
    if res.written:
        changed = ", ".join(res.records_changed)
        console.print(Text(f"wrote {res.out_dir} (version {res.version}; records changed: {changed})"))
    else:
        console.print(Text("not written: the corrected set does not validate", style="red"))


_WHAT = {"run": "run record", "known-item": "outputs", "known-item-study": "outputs", "coverage": "outputs"}


def format_table(result: Result, console: Console) -> None:
    """The ``table`` format: rich tables (the terminal output of each verb), then the path of what was written."""
    _kind(result)
    _TABLES[result.kind](result.value, console)
    if result.path is not None and result.kind in _WHAT:
        from rich.text import Text

        console.print(Text(f"{_WHAT[result.kind]}: {result.path}"))


#: Output formats: name -> renderer ``(result, console) -> None``.
FORMATS: dict[str, Callable[[Result, Console], None]] = {
    "table": format_table,
    "json": format_json,
    "markdown": format_markdown,
}


def check_format(fmt: str) -> str:
    """``fmt`` when it names a format of :data:`FORMATS`.

    Raises:
        HarnessInputError: an unknown format, listing the known ones.
    """
    if fmt not in FORMATS:
        raise HarnessInputError(f"--format: {fmt!r} is not one of {', '.join(FORMATS)}")
    return fmt


def check_output(out: str | os.PathLike | None, *, field: str = "--out") -> None:
    """Refuse an output file that cannot be written safely: one that exists and is not a regular file (a folder, a
    device, a named pipe, a symbolic link), or one whose folder does not exist. ``None`` and ``-`` mean stdout.

    Raises:
        HarnessInputError: one line naming the path (exit 2).
    """
    if out is None or str(out) == "-":
        return
    p = Path(out)
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        what = "a link" if stat.S_ISLNK(st.st_mode) else ("a folder" if stat.S_ISDIR(st.st_mode) else "not a file")
        raise HarnessInputError(f"{field} {out}: exists and is {what}; refusing to write to it (give a file path)")
    parent = p.parent
    if not parent.is_dir():
        raise HarnessInputError(f"{field} {out}: folder {parent} does not exist (harness does not create it)")


def write_output(text: str, out: str | os.PathLike | None, *, field: str = "--out") -> Path | None:
    """Write ``text`` to stdout (``None`` or ``-``) or atomically to a file (see :func:`check_output`).

    Returns:
        The file written, or ``None`` for stdout.
    """
    if out is None or str(out) == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return None
    check_output(out, field=field)
    atomic_write_text(out, text)
    return Path(out)


def emit(
    result: Result,
    fmt: str = "table",
    out: str | os.PathLike | None = None,
    *,
    console: Console | None = None,
    field: str = "--out",
    err: Console | None = None,
) -> None:
    """Render ``result`` in format ``fmt`` and write it to ``out`` (stdout for ``None``/``-``, through ``console``
    when given, so a terminal keeps its colours; ``field`` names the option in messages).

    With ``err`` (the CLI's stderr console), every warning of the result (:func:`warnings_of`) is also printed there,
    one ``warning: ...`` line each, unless the output is the table on stdout (which shows them already).

    Raises:
        HarnessInputError: an unknown format, an output path refused by :func:`check_output` (exit 2).
    """
    render = FORMATS[check_format(fmt)]
    to_stdout = out is None or str(out) == "-"
    if to_stdout:
        render(result, console or Console())
    else:
        check_output(out, field=field)
        buf = io.StringIO()
        render(result, Console(file=buf, width=150, color_system=None, force_terminal=False, soft_wrap=False))
        write_output(buf.getvalue(), out, field=field)
    if err is not None and not (to_stdout and fmt == "table"):
        for w in warnings_of(result):
            err.print(f"warning: {w}", markup=False, highlight=False, soft_wrap=True)
