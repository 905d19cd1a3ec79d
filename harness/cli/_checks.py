"""Numeric options checked where they are parsed: one located line and exit 2, before a verb does any work.

Each factory returns a typer option callback (``typer.Option(50, callback=depth())``). Typer runs it while parsing,
defaults included, so a bad value stops the verb before it reads a file; the message names the option as typed on
the command line (``error: --chunk-depth: 10 is below the largest reported k (20)``). ``None`` (an option not given
whose default is ``None``) always passes. Floats must be finite (typer parses ``nan`` and ``inf``).

The library functions keep their own checks (:class:`~harness.errors.HarnessInputError`); these are the command
line's, so that every numeric option of every verb answers alike (``tests/test_reliability_options.py`` walks them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import typer

from harness.cli._common import _fail
from harness.defaults import DEFAULT_KS
from harness.errors import HarnessInputError

Callback = Callable[[typer.CallbackParam, object], object]


def _flag(param: typer.CallbackParam) -> str:
    """The option's long name (``--doc-depth``)."""
    longs = [o for o in param.opts if o.startswith("--")]
    return longs[0] if longs else param.opts[0]


def _refuse(param: typer.CallbackParam, message: str) -> None:
    _fail(HarnessInputError(f"{_flag(param)}: {message}"))


def at_least(minimum: int) -> Callback:
    """An integer option ``>= minimum``."""

    def check(param: typer.CallbackParam, value):
        if value is not None and value < minimum:
            _refuse(param, f"{value} must be an integer >= {minimum}")
        return value

    return check


def depth() -> Callback:
    """A ranking depth: an integer >= 1 and no smaller than the largest reported cut-off k (the run's @k metrics
    read the first k results, :data:`harness.defaults.DEFAULT_KS`)."""

    def check(param: typer.CallbackParam, value):
        if value is None:
            return value
        if value < 1:
            _refuse(param, f"{value} must be an integer >= 1")
        if value < max(DEFAULT_KS):
            _refuse(param, f"{value} is below the largest reported k ({max(DEFAULT_KS)})")
        return value

    return check


def number(lower: float, upper: float = math.inf, *, open_lower: bool = False, open_upper: bool = False) -> Callback:
    """A finite float in the interval from ``lower`` to ``upper`` (each end closed unless ``open_*``)."""
    left, right = "(" if open_lower else "[", ")" if open_upper else "]"
    if upper == math.inf:
        where = f"{'>' if open_lower else '>='} {lower:g}"
    else:
        where = f"in {left}{lower:g}, {upper:g}{right}"

    def check(param: typer.CallbackParam, value):
        if value is None:
            return value
        ok = math.isfinite(value)
        ok = ok and (value > lower if open_lower else value >= lower)
        ok = ok and (value < upper if open_upper else value <= upper)
        if not ok:
            _refuse(param, f"{value} must be a finite number {where}")
        return value

    return check


def int_list(minimum: int) -> Callback:
    """A comma-separated list of integers, each ``>= minimum``, at least one."""

    def check(param: typer.CallbackParam, value):
        if value is None:
            return value
        items = [x.strip() for x in str(value).split(",") if x.strip()]
        if not items:
            _refuse(param, f"{value!r} is not a comma-separated list of integers")
        for x in items:
            try:
                n = int(x)
            except ValueError:
                _refuse(param, f"{value!r} is not a comma-separated list of integers")
            if n < minimum:
                within = f" (in {value!r})" if len(items) > 1 else ""
                _refuse(param, f"{n}{within} must be an integer >= {minimum}")
        return value

    return check


def given(ctx: typer.Context, name: str) -> bool:
    """Whether the option whose parameter is ``name`` was given (on the command line or through its environment
    variable), as opposed to taking its default; an option given with its default value counts as given."""
    source = ctx.get_parameter_source(name)  # the enum of the click that typer bundles: by name
    return getattr(source, "name", None) in ("COMMANDLINE", "ENVIRONMENT", "PROMPT")


def refuse_unused(ctx: typer.Context, names: Iterable[str], why: str) -> None:
    """Refuse options that would do nothing in this call (issue 44 item 16): when any parameter of ``names`` was
    :func:`given`, one line naming them as typed and ``why`` (``"--design, --seed: no effect without --sample (they
    choose the sample's draws); give --sample K or leave them out"``).

    Raises:
        HarnessInputError: one of the options was given (exit 2).
    """
    params = {p.name: p for p in ctx.command.params}
    flags = [_flag(params[n]) for n in names if n in params and given(ctx, n)]
    if flags:
        raise HarnessInputError(f"{', '.join(flags)}: no effect {why}")
