"""Output formats of every verb that prints a result, ``harness report`` included: one registry, ``--format``,
``--out FILE``.

A verb's CLI function calls the library verb and hands the result, wrapped in a :class:`Result` (``kind``, value,
and the ``path`` of a record or folder it wrote), to :func:`emit`, which renders it in the chosen format and writes
it to stdout (``-``, the default) or to a file.

Formats (:data:`FORMATS`, name -> :class:`Format`: renderer ``(result, console) -> None``, default file extension,
the kinds it renders):

* ``table`` - rich tables and lines for a terminal (:mod:`harness.report.terminal`, the studies' own renderers);
* ``json`` - one envelope per result, ``{"kind", "schema_version", "path" (when a record was written), "data"}``,
  ``data`` being the kind's machine form (:data:`KINDS`); non-finite numbers are written as ``Infinity`` as in the
  run record's own files;
* ``markdown`` - GitHub-flavoured Markdown (:mod:`harness.report.markdown_verbs`), every input string escaped;
* ``junit`` - JUnit XML (:mod:`harness.report.junit`), for the ``gate`` kind only: asking it of another verb is
  refused before the verb runs (:func:`check_format` with the verb's kind);
* ``html`` - the self-contained report of ``harness report`` (kind ``report``; :mod:`harness.report.html`), which
  also writes ``markdown``. ``harness report`` goes through this same registry (:func:`harness.report.write_report`).

Warnings (few clusters, questions missing on either side, a truncated ICC, questions without a ranking) are part of
every format's output written to a file (the ``warnings`` of the JSON ``data``, Markdown block quotes, yellow table
lines; :func:`warnings_of`), and :func:`emit` prints them on stderr: stdout holds the result only, so the table on
stdout leaves them to stderr (shown on the terminal all the same).

Adding a format is one module with a renderer ``(result, console) -> None`` and one ``Format(...)`` line in
:data:`FORMATS` (its ``kinds`` when it applies to some kinds only, ``report=True`` when it also renders
``harness report``): every verb, ``harness report`` included, accepts it and checks it before any work (recipe:
``docs/CONVENTIONS.md``). Output files are written atomically; a path that exists
and is not a regular file (a folder, a device such as ``/dev/null``, a link) is never written, and a missing parent
folder is never created (:func:`check_output`, the one check of every ``--out`` file).
"""

from __future__ import annotations

import importlib
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
from harness.io import atomic_write_text
from harness.terminal_safe import json_controls, reader_gone, safe_console


def _lazy(module: str, name: str) -> Callable[..., Any]:
    """``name`` of ``module``, imported when first called: the registry names every renderer, and a verb loads only
    the one its format needs (``harness validate --format json`` loads no run table, report or statistics)."""

    def call(*args, **kwargs):
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


junit_xml = _lazy("harness.report.junit", "junit_xml")
markdown_of = _lazy("harness.report.markdown_verbs", "render")
render_known_item, render_sensitivity, render_study = (
    _lazy("harness.report.studies", n) for n in ("render_known_item", "render_sensitivity", "render_study")
)
render_multi_sweep = _lazy("harness.report.sweep_multi", "render_terminal")
format_csv, format_tsv = (_lazy("harness.report.tables", n) for n in ("format_csv", "format_tsv"))
print_warnings, render_comparison, render_gate, render_power, render_run, render_sweep, run_notices, run_warnings = (
    _lazy("harness.report.terminal", n)
    for n in ("print_warnings", "render_comparison", "render_gate", "render_power", "render_run", "render_sweep",
              "run_notices", "run_warnings")
)  # fmt: skip


@dataclass(frozen=True)
class Result:
    """What a verb produced, for a formatter.

    Attributes:
        kind: one of :data:`KINDS` (``run``, ``comparison``, ``gate``, ``power``, ``sweep``, ``validation``,
            ``goldset-apply``, ``known-item``, ``known-item-sensitivity``, ``known-item-study``, ``coverage``,
            ``coverage-suite``).
        value: the library verb's result (a :class:`~harness.evaluation.runs.RunRecord`,
            :class:`~harness.evaluation.compare.ComparisonReport`, ...).
        path: the record or output folder the verb wrote, if any (shown by every format).
    """

    kind: str
    value: Any
    path: Path | None = None


@dataclass(frozen=True)
class Kind:
    """A kind of result: the version of its JSON ``data`` shape, how to get it from the value, and the verbs that
    print it (for messages: ``--format csv: applies to run, evaluate, ...``)."""

    schema_version: int
    data: Callable[[Any], Any]
    verbs: tuple[str, ...] = ()


def _run_evidence(rec) -> dict:
    """``{"coverage_evidence": {metric: ...}}``: the measured coverage of the intervals the tables show (the rule's
    default for the run's design per outcome class, :class:`harness.stats.shown.ShownIntervals`; each entry's
    ``method``) of the run's metrics (:func:`harness.stats.methods.evidence_by_metric`, over the first system's
    ``all`` slice); ``{}`` without an evidence file."""
    from harness.metrics import outcome_of
    from harness.stats.methods import evidence_by_metric
    from harness.stats.shown import ShownIntervals

    first = next(iter(rec.summary.systems.values()), {})
    overall = first["all"].overall if "all" in first else {}
    recorded = {m: (outcome_of(m), set(ov.intervals)) for m, ov in overall.items()}
    shown = ShownIntervals.for_run(rec)
    ev = evidence_by_metric(shown.by_class(recorded), recorded, design=shown.design, source=shown.source)
    return {"coverage_evidence": ev} if ev["metrics"] else {}


def _coverage_data(value) -> dict:
    return {**value.to_dict(), "files": list(value.files)}


#: Every kind of result a verb prints, with its JSON form.
KINDS: dict[str, Kind] = {
    "run": Kind(
        3,  # harness.evaluation.record.RUN_SCHEMA_VERSION (tests/test_formats.py checks they agree)
        lambda rec: {
            **rec.summary.model_dump(mode="python"),
            **_run_evidence(rec),
            **{k: v for k, v in (rec.manifest.model_extra or {}).items() if k in ("subset", "metrics")},
        },
        verbs=("run", "evaluate"),
    ),
    "comparison": Kind(1, lambda rep: rep.to_dict(), verbs=("compare",)),
    "gate": Kind(2, lambda v: v.to_dict(), verbs=("gate",)),
    "power": Kind(1, dict, verbs=("power",)),
    "sweep": Kind(2, lambda res: res.to_dict(), verbs=("sweep",)),
    "sweep-multi": Kind(1, lambda res: res.to_dict(), verbs=("sweep",)),
    "validation": Kind(1, lambda rep: rep.to_dict(), verbs=("validate",)),
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
        verbs=("goldset apply",),
    ),
    "known-item": Kind(1, lambda res: res.summary, verbs=("known-item",)),
    "known-item-sensitivity": Kind(1, lambda res: {"rows": res.rows}, verbs=("known-item",)),
    "known-item-study": Kind(
        1,
        lambda res: {"known_item": res.known_item.summary, "coverage": _coverage_data(res.coverage)},
        verbs=("known-item",),
    ),
    "coverage": Kind(1, _coverage_data, verbs=("coverage",)),
    "coverage-suite": Kind(1, _coverage_data, verbs=("coverage",)),
    "coverage-design": Kind(1, _coverage_data, verbs=("coverage",)),
    "goldset-plan": Kind(1, lambda res: res.to_dict(), verbs=("goldset plan",)),
    "goldset-split": Kind(1, lambda res: res.to_dict(), verbs=("goldset split",)),
}


#: The warnings (few clusters, missing questions, ICC truncation) of each kind that has them.
_WARNINGS: dict[str, Callable[[Any], list[str]]] = {
    "run": lambda rec: run_notices(rec) + run_warnings(rec),
    "comparison": lambda rep: list(rep.warnings),
    "gate": lambda v: list(v.warnings),
    "power": lambda plan: list(plan.get("warnings", [])),
    "sweep": lambda res: list(res.warnings),
    "sweep-multi": lambda res: list(res.warnings),
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
    """The ``json`` format: :func:`envelope`, indented, UTF-8 characters kept but control characters (JSON escapes
    C0 itself; DEL, C1 and bidirectional controls too, :func:`harness.terminal_safe.json_controls`)."""
    text = json.dumps(envelope(result), indent=2, ensure_ascii=False, default=str)
    console.file.write(json_controls(text) + "\n")


def format_markdown(result: Result, console: Console) -> None:
    """The ``markdown`` format (:mod:`harness.report.markdown_verbs`; for the ``report`` kind
    :func:`harness.report.markdown.render_markdown`)."""
    check_format("markdown", result.kind)
    console.file.write(markdown_of(result.kind, result.value, result.path) + "\n")


def _print(console: Console, value) -> None:
    console.print(value)


_TABLES: dict[str, Callable[[Any, Console], None]] = {
    "run": render_run,
    "comparison": render_comparison,
    "gate": render_gate,
    "power": render_power,
    "sweep": render_sweep,
    "sweep-multi": lambda res, console: render_multi_sweep(res, console),
    "validation": lambda rep, console: _validation_table(rep, console),
    "goldset-apply": lambda res, console: _apply_table(res, console),
    "known-item": lambda res, console: console.print(render_known_item(res.summary)),
    "known-item-sensitivity": lambda res, console: console.print(render_sensitivity(res.rows)),
    "known-item-study": lambda res, console: console.print(render_study(res.known_item.summary, res.coverage)),
    "coverage": lambda res, console: _print(console, res),
    "coverage-suite": lambda res, console: _print(console, res),
    "coverage-design": lambda res, console: _print(console, res),
    "goldset-plan": lambda res, console: _print(console, res),
    "goldset-split": lambda res, console: _split_table(res, console),
}


def _validation_table(report, console: Console) -> None:
    from harness.report.validation import render

    render(report, console)


def _split_table(res, console: Console) -> None:
    from rich.text import Text

    if res.out_dir is None:
        _validation_table(res.report, console)
    console.print(Text(res.summary()), soft_wrap=True)


def _apply_table(res, console: Console) -> None:
    from rich.text import Text

    from harness.relpath import shown_path

    _validation_table(res.report, console)
    if res.written:
        changed = ", ".join(res.records_changed)
        console.print(Text(f"wrote {shown_path(res.out_dir)} (version {res.version}; records changed: {changed})"))
    else:
        console.print(Text("not written: the corrected set does not validate", style="red"))


_WHAT = {"run": "run record", "known-item": "outputs", "known-item-study": "outputs", "coverage": "outputs",
         "coverage-suite": "outputs", "coverage-design": "outputs"}  # fmt: skip


def format_table(result: Result, console: Console, *, warnings: bool = True) -> None:
    """The ``table`` format: rich tables (the terminal output of each verb), the warnings (:func:`warnings_of`,
    yellow lines; left out with ``warnings`` false, when :func:`emit` prints them on stderr), then the path of what
    was written."""
    _kind(result)
    _TABLES[result.kind](result.value, console)
    if warnings:
        print_warnings(warnings_of(result), console)
    if result.path is not None and result.kind in _WHAT:
        from rich.text import Text

        console.print(Text(f"{_WHAT[result.kind]}: {result.path}"))


def format_junit(result: Result, console: Console) -> None:
    """The ``junit`` format (:func:`harness.report.junit.junit_xml`; the ``gate`` kind only)."""
    check_format("junit", result.kind)
    console.file.write(junit_xml(result.value))


def format_html(result: Result, console: Console) -> None:
    """The ``html`` format: the self-contained report of ``harness report`` (:func:`harness.report.html.render_html`
    of a :class:`~harness.report.model.ReportData`; the ``report`` kind only)."""
    from harness.report.html import render_html

    check_format("html", result.kind)
    console.file.write(render_html(result.value))


@dataclass(frozen=True)
class Format:
    """An output format of the registry :data:`FORMATS`.

    Attributes:
        name: the ``--format`` value.
        render: ``render(result, console) -> None`` writes the whole output to ``console`` (``console.file`` for
            text that must not be reflowed).
        extension: the default file extension, without the dot (``harness report``'s default output file is
            ``report.<extension>``).
        kinds: the result kinds it renders; ``None``: every kind of :data:`KINDS` (the verbs' results).
        report: it also renders the ``report`` kind (``harness report``: a
            :class:`~harness.report.model.ReportData`).
        aliases: other ``--format`` values accepted for it (``md``).
    """

    name: str
    render: Callable[[Result, Console], None]
    extension: str
    kinds: tuple[str, ...] | None = None
    report: bool = False
    aliases: tuple[str, ...] = ()

    def applies_to(self, kind: str | None) -> bool:
        """Whether it renders results of ``kind`` (``None``: a verb whose kind is known only after it ran, to
        which the formats of every verb kind apply)."""
        if kind == REPORT:
            return self.report
        if self.kinds is None:
            return kind is None or kind in KINDS
        return kind in self.kinds

    def kinds_text(self) -> str:
        """The verbs whose results it renders, for messages, from :data:`KINDS` (``run, evaluate, compare, gate,
        report`` for csv)."""
        verbs = ["every verb's result"] if self.kinds is None else [v for k in self.kinds for v in KINDS[k].verbs]
        return ", ".join(dict.fromkeys(verbs + ([REPORT] if self.report else [])))


#: The result kind of ``harness report`` (a :class:`~harness.report.model.ReportData`; no JSON form).
REPORT = "report"

#: Output formats, one line each: ``Format(name, renderer, default extension, kinds=..., report=...)``.
FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("table", format_table, "txt"),
        Format("json", format_json, "json"),
        Format("markdown", format_markdown, "md", report=True, aliases=("md",)),
        Format("junit", format_junit, "xml", kinds=("gate",)),
        Format("html", format_html, "html", kinds=(), report=True),
        Format("csv", format_csv, "csv", kinds=("run", "comparison", "gate"), report=True),
        Format("tsv", format_tsv, "tsv", kinds=("run", "comparison", "gate"), report=True),
    )
}


def formats_of(kind: str | None) -> list[str]:
    """The names of the formats that render results of ``kind`` (registry order)."""
    return [f.name for f in FORMATS.values() if f.applies_to(kind)]


def _named(fmt: str) -> Format | None:
    for f in FORMATS.values():
        if fmt == f.name or fmt in f.aliases:
            return f
    return None


def check_format(fmt: str, kind: str | None = None) -> str:
    """The canonical name of format ``fmt`` (an alias resolved) when it renders results of ``kind`` (``None``: a
    verb that does not name its kind, to which only the formats of every verb kind apply).

    Raises:
        HarnessInputError: an unknown format, listing the known ones; a format of other kinds only (``--format
            junit: applies to gate only``).
    """
    f = _named(fmt)
    if f is None:
        known = formats_of(kind) if kind is not None else list(FORMATS)
        raise HarnessInputError(f"--format: {fmt!r} is not one of {', '.join(known)}")
    if not f.applies_to(kind):
        raise HarnessInputError(f"--format {f.name}: applies to {f.kinds_text()} only")
    return f.name


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
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:  # `| head`: the rest is dropped, the verb keeps its exit code
            reader_gone()
        return None
    check_output(out, field=field)
    atomic_write_text(out, text)
    return Path(out)


def render_text(result: Result, fmt: str) -> str:
    """``result`` rendered in format ``fmt`` as the text written to a file (no colours, 150 columns)."""
    buf = io.StringIO()
    FORMATS[check_format(fmt, result.kind)].render(
        result, safe_console(file=buf, width=150, color_system=None, force_terminal=False, soft_wrap=False)
    )
    return buf.getvalue()


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

    With ``err`` (the CLI's stderr console), every warning of the result (:func:`warnings_of`) is printed there, one
    ``warning: ...`` line each; the table on stdout then leaves them out (stdout holds the result only), a file or
    a machine format keeps them too.

    Raises:
        HarnessInputError: an unknown format, an output path refused by :func:`check_output` (exit 2).
    """
    fmt = check_format(fmt, result.kind)
    render = FORMATS[fmt].render
    to_stdout = out is None or str(out) == "-"
    if to_stdout and fmt == "table":
        format_table(result, console or safe_console(), warnings=err is None)
    elif to_stdout:
        render(result, console or safe_console())
    else:
        check_output(out, field=field)
        write_output(render_text(result, fmt), out, field=field)
    if err is not None:
        for w in warnings_of(result):
            err.print(f"warning: {w}", markup=False, highlight=False, soft_wrap=True)
