"""Shared pieces of the command line: the typer apps, consoles, common options, the error handler and the one
place that decides what is printed besides the result (``--quiet`` / ``--verbose``, :func:`notice`, :func:`detail`,
:func:`warn`).

Streams: the result (tables, JSON, Markdown) goes to stdout; everything else (errors, warnings, notices, progress,
timings, deprecation notes) goes to stderr. ``--quiet`` silences progress displays and notices; warnings that change
the meaning of a result (few clusters, questions missing, ...) still print. ``--verbose`` adds timings and detail.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from importlib import metadata
from pathlib import Path

import typer

from harness import progress
from harness.errors import HarnessError, HarnessInputError
from harness.terminal_safe import escape_controls, reader_gone, safe_console

#: The distribution name on PyPI (``pip install harness-rag-eval``); the import package stays ``harness``. Chosen as
#: unregistered on 2026-12-01 against an offline copy of PyPI's name list (the name ``harness`` belongs to an
#: unrelated project).
DISTRIBUTION = "harness-rag-eval"


class HarnessTyper(typer.Typer):
    """A :class:`typer.Typer` whose commands share one error handler: a :class:`~harness.errors.HarnessError`
    raised anywhere in a command becomes one ``error: ...`` line on stderr and the error's exit code (2 for unusable
    input), the way every verb reports it. Commands therefore hold no ``try/except HarnessError`` of their own."""

    def command(self, *args, **kwargs):
        register = super().command(*args, **kwargs)

        def decorator(f):
            @functools.wraps(f)
            def handled(*a, **kw):
                try:
                    return f(*a, **kw)
                except HarnessError as exc:
                    _fail(exc)

            register(handled)
            return f

        return decorator


app = HarnessTyper(add_completion=True, no_args_is_help=True, help="Retrieval benchmark harness for RAG systems.")
goldset_app = HarnessTyper(no_args_is_help=True, help="Gold-set maintenance.")
app.add_typer(goldset_app, name="goldset")

_WIDTH = None if sys.stdout.isatty() else int(os.environ.get("COLUMNS", "150"))
console = safe_console(width=_WIDTH)  # every printed string has its control characters escaped (issue 26)
err_console = safe_console(stderr=True, width=_WIDTH)

_VERBOSITY = {"quiet": False, "verbose": False}


def set_verbosity(*, quiet: bool = False, verbose: bool = False) -> None:
    """Set the process's verbosity (the app callback's ``--quiet`` / ``--verbose``); quiet also turns every progress
    display off (:func:`harness.progress.set_enabled`).

    Raises:
        HarnessInputError: both quiet and verbose (exit 2).
    """
    if quiet and verbose:
        raise HarnessInputError("--quiet and --verbose: give at most one")
    _VERBOSITY.update(quiet=bool(quiet), verbose=bool(verbose))
    progress.set_enabled(not quiet)


def is_quiet() -> bool:
    """Whether ``--quiet`` was given."""
    return _VERBOSITY["quiet"]


def is_verbose() -> bool:
    """Whether ``--verbose`` was given."""
    return _VERBOSITY["verbose"]


def _err(text: str) -> None:
    err_console.print(escape_controls(text), markup=False, highlight=False, soft_wrap=True)


def notice(text: str) -> None:
    """A notice (what was written, what was left out and why, a deprecated spelling): stderr, unless quiet."""
    if not is_quiet():
        _err(text)


def detail(text: str) -> None:
    """Detail and timings: stderr, only with ``--verbose``."""
    if is_verbose():
        _err(text)


def warn(text: str) -> None:
    """A warning that changes the meaning of a result: stderr, always (``--quiet`` too)."""
    _err(f"warning: {text}")


def version_text() -> str:
    """``harness 0.1.0 (distribution harness-rag-eval, import package harness at PATH; Python 3.x)``: the
    installed distribution's version (:func:`importlib.metadata.version`), or ``not installed`` for a source tree."""
    import harness

    try:
        ver, dist = metadata.version(DISTRIBUTION), f"distribution {DISTRIBUTION}"
    except metadata.PackageNotFoundError:
        ver, dist = harness.__version__, f"source tree, distribution {DISTRIBUTION} not installed"
    where = Path(harness.__file__).resolve().parent
    py = ".".join(map(str, sys.version_info[:3]))
    return f"harness {ver} ({dist}, import package harness at {where}; Python {py})"


def _show_version(value: bool) -> None:
    if value:
        typer.echo(version_text())
        raise typer.Exit()


@app.callback()
def _main(
    ctx: typer.Context,
    version: bool = typer.Option(
        False,
        "--version",
        "-V",
        callback=_show_version,
        is_eager=True,
        help="Print the installed version (distribution and import package) and exit.",
    ),
    quiet: bool = typer.Option(
        False, "--quiet", "-q", help="No progress displays or notices (warnings about a result still print, stderr)."
    ),
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="Also print timings and detail on stderr (each timing says what it covers)."
    ),
) -> None:
    """Retrieval benchmark harness for RAG systems. Results go to stdout; errors, warnings, notices and progress to
    stderr. Exit codes of verbs that judge: 0 pass, 1 fail, 2 unusable input (gate: 3 inconclusive)."""
    try:
        set_verbosity(quiet=quiet, verbose=verbose)
        _apply_config(ctx)
    except HarnessError as exc:
        _fail(exc)
    if verbose:
        start = time.perf_counter()
        ctx.call_on_close(
            lambda: detail(
                f"{ctx.invoked_subcommand}: {time.perf_counter() - start:.1f} s wall clock "
                "(the whole command, start-up excluded)"
            )
        )


_SETTINGS: dict = {}


def _apply_config(ctx: typer.Context) -> None:
    """Read the project config (:func:`harness.config.load_settings`: ``harness.toml``, ``[tool.harness]``, the
    ``HARNESS_*`` variables) into click's ``default_map`` of the invoked verb, below its flags; print its notes."""
    if not ctx.invoked_subcommand or not _config_present():
        return
    from harness.config import load_settings  # only then: the start-up module budgets hold without a config

    settings = load_settings()
    _SETTINGS["settings"] = settings
    ctx.default_map = {**(ctx.default_map or {}), **settings.default_map(ctx.command.commands)}
    for line in settings.notes:
        notice(line)


def _config_present() -> bool:
    """Whether :func:`harness.config.load_settings` has anything to read: ``$HARNESS_CONFIG`` or
    ``$HARNESS_RUNS_DIR`` set, or, in the first directory upwards holding a ``harness.toml`` or a ``pyproject.toml``,
    a ``harness.toml`` or a ``pyproject.toml`` that mentions ``tool.harness`` (a cheap test; the loader parses)."""
    if os.environ.get("HARNESS_CONFIG") or os.environ.get("HARNESS_RUNS_DIR"):
        return True
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        toml, pyproject = folder / "harness.toml", folder / "pyproject.toml"
        if toml.is_file():
            return True
        if pyproject.is_file():
            try:
                return "tool.harness" in pyproject.read_text("utf-8", errors="replace")
            except OSError:
                return True  # let the loader say what is wrong
    return False


def settings_sources(ctx: typer.Context) -> dict[str, str]:
    """``{setting: where its value came from}`` for the project settings the verb of ``ctx`` has (``flag``,
    ``environment HARNESS_X``, ``harness.toml``, ``pyproject.toml [tool.harness]``, ``default``): what a run
    manifest records as ``settings`` (:mod:`harness.config`)."""
    from harness.config import OPTION_OF

    settings = _SETTINGS.get("settings")
    params = {p.name: p for p in ctx.command.params}
    out = {}
    for key, pname in OPTION_OF.items():
        if pname not in params or (key.startswith("gate.") and ctx.info_name != "gate"):
            continue
        source = getattr(ctx.get_parameter_source(pname), "name", "DEFAULT")  # click's ParameterSource
        if source == "COMMANDLINE":
            out[key] = "flag"
        elif source == "ENVIRONMENT":
            out[key] = f"environment {params[pname].envvar}"
        elif source == "DEFAULT_MAP" and settings is not None:
            out[key] = settings.source_of(key)
        else:
            out[key] = "default"
    return out


def _given(value) -> bool:
    return value is not None and value != [] and value != ()


def renamed(new_value, old_value, *, new: str, old: str):
    """The value of an option renamed from ``old`` to ``new`` (the old spelling is a hidden alias for one release;
    both default to ``None`` or an empty list): ``new_value`` unless only the old spelling was given, which prints a
    one-line deprecation notice on stderr (:func:`notice`).

    Raises:
        HarnessInputError: both spellings given (exit 2).
    """
    if not _given(old_value):
        return new_value
    if _given(new_value):
        raise HarnessInputError(f"{old}: deprecated spelling of {new}; give only {new}")
    notice(f"note: {old} is deprecated; use {new}")
    return old_value


WORKDIR = typer.Option(
    Path(".harness"),
    "--workdir",
    envvar="HARNESS_WORKDIR",
    help="Derived files (database, indexes, caches); default $HARNESS_WORKDIR, else .harness.",
)
RUNS_DIR = typer.Option(Path("runs"), "--runs-dir", help="Where run records go.")


def _fail(exc: HarnessError) -> None:
    err_console.print(f"error: {escape_controls(str(exc))}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(exc.exit_code)


def _csv_ints(text: str, name: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise HarnessError(f"{name}: {text!r} is not a comma-separated list of integers") from None


FORMAT = typer.Option(
    "table",
    "--format",
    help="Output format: table (rich, for a terminal), json (one envelope), markdown, or a registered one "
    "(harness.report.formats.FORMATS; junit for gate).",
)
OUT = typer.Option("-", "--out", help="Write the output to FILE, atomically (- = stdout); its folder must exist.")
RESULT_OUT = typer.Option(
    "-", "--result-out", help="Write the printed result to FILE, atomically (- = stdout); its folder must exist."
)
JSON_ALIAS = typer.Option(False, "--json", hidden=True, help="Deprecated: same as --format json.")


def output_format(
    fmt: str, as_json: bool = False, *, out: str = "-", field: str = "--out", kind: str | None = None
) -> str:
    """The output format chosen (``--json`` is a deprecated alias of ``--format json``), after checking the format
    (for the verb's result ``kind``: a format of some kinds only, such as ``junit``, is refused elsewhere) and the
    output file, before the verb does any work."""
    from harness.report.formats import check_format, check_output

    if as_json:
        notice("note: --json is deprecated; use --format json")
        fmt = "json"
    fmt = check_format(fmt, kind)  # a HarnessError: one line and exit 2 (the commands' one handler)
    check_output(out, field=field)
    return fmt


def recorded_goldset(run: Path) -> Path | None:
    """The gold set a run record names (``manifest.json`` ``goldset.path``, found as the sweep finds it: as given,
    then beside the runs folder, then in the record), for the output check; ``None`` when it cannot be read (the
    verb reading the record then says why)."""
    import json

    run = Path(run)
    try:
        recorded = json.loads((run / "manifest.json").read_text("utf-8"))["goldset"]["path"]
        cands = [Path(recorded)]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not cands[0].is_absolute():
        cands += [run.parent.parent / recorded, run / recorded]
    return next((c for c in cands if c.exists()), None)


def check_paths(outputs, inputs=()) -> None:
    """Refuse, before the verb does any work, an output written onto one of its inputs (exit 2, one line naming
    both paths): :func:`harness.io.check_outputs` over ``(option, path)`` pairs; ``None`` and ``-`` are skipped.

    The inputs are completed first: each run record among them (a folder holding a ``manifest.json``) adds the gold
    set its manifest names (:func:`recorded_goldset`), which the verbs reading a record may read too; every file of
    a run record, corpus or gold set is refused as an output whether or not it is named
    (:func:`harness.io.record_around`)."""
    from harness.io import check_outputs

    inputs = list(inputs)
    for label, p in list(inputs):
        if p is not None and str(p) != "-" and (Path(p) / "manifest.json").is_file():
            gs = recorded_goldset(Path(p))
            if gs is not None:
                inputs.append((f"the gold set of {label} {p}:", gs))
    try:
        check_outputs(outputs, inputs)
    except HarnessError as exc:
        _fail(exc)


def plugin_files(systems: str | None) -> list[tuple[str, str]]:
    """``("--systems", FILE.py)`` for each retriever or reranker file a ``--systems`` value names (``py:FILE.py:ATTR``):
    inputs of the verb, which no output may replace."""
    import re

    return [("--systems", f) for f in re.findall(r"py:([^:,\[\]]+\.py):", systems or "")]


def emit(kind: str, value, fmt: str, out: str, *, path=None, field: str = "--out") -> None:
    """Hand a verb's result to the output-format registry (:func:`harness.report.formats.emit`)."""
    from harness.report.formats import Result
    from harness.report.formats import emit as do_emit

    try:
        do_emit(Result(kind, value, path), fmt, out, console=console, field=field, err=err_console)
        if out == "-":
            sys.stdout.flush()
    except BrokenPipeError:  # a format written to stdout directly; rich's consoles handle it themselves
        reader_gone()
