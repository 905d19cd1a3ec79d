"""The project config file: ``harness.toml``, or a ``[tool.harness]`` table in ``pyproject.toml``.

A project names its corpus, gold set, systems, model, directories and gate settings once, instead of repeating them
on every command or in a long environment block of a CI recipe::

    # harness.toml
    corpus = "corpus/mx-leyes-dof"
    goldset = "datasets/mx-leyes-dof-eval-v1"
    systems = "bm25,vector"          # or a list: ["bm25", "vector"]
    model = "use"
    workdir = ".harness"
    runs_dir = "runs"

    [gate]
    baseline_system = "bm25"
    candidate_system = "bm25"
    metrics = ["mrr", "recall@10"]   # or "mrr,recall@10"
    margin = 0.02
    on_inconclusive = "fail"

**Where it is found.** ``$HARNESS_CONFIG`` (a file path) when set; otherwise the working directory and then each
parent, up to the first directory holding a ``harness.toml`` or a ``pyproject.toml`` (the project's root). In that
directory ``harness.toml`` and ``pyproject.toml``'s ``[tool.harness]`` are both read; where both set a key,
``harness.toml`` wins and one ``note:`` line says so. Relative paths in a file are relative to the file's folder.

**Precedence, per setting:** a flag on the command line > the environment (``HARNESS_WORKDIR``, ``HARNESS_RUNS_DIR``) >
``harness.toml`` >
``[tool.harness]`` > the option's default. A key applies to every verb that has the option it maps to
(:data:`OPTION_OF`; ``corpus`` is ``--corpus`` of run, evaluate, embed, known-item, validate...). A run's manifest
records where each of these settings came from (``settings``: ``flag``, ``environment HARNESS_X``, ``harness.toml``,
``pyproject.toml [tool.harness]`` or ``default``); ``harness config`` prints them.

An unknown key, a value of the wrong type or a file that is not TOML is refused: one line naming the file and key,
exit 2 (:class:`~harness.errors.HarnessInputError`).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness.errors import HarnessInputError

__all__ = [
    "CONFIG_ENV",
    "ENV_OF",
    "OPTION_OF",
    "GateSettings",
    "ProjectConfig",
    "ProjectSettings",
    "find_config",
    "load_settings",
]

#: The environment variable that names a config file explicitly (skips the search).
CONFIG_ENV = "HARNESS_CONFIG"

#: ``{setting: the option's parameter name}`` in the verbs (click's ``default_map`` keys).
OPTION_OF: dict[str, str] = {
    "corpus": "corpus",
    "goldset": "goldset",
    "systems": "systems",
    "model": "model",
    "workdir": "workdir",
    "runs_dir": "runs_dir",
    "gate.baseline_system": "system_baseline",
    "gate.candidate_system": "system_candidate",
    "gate.metrics": "metric",
    "gate.margin": "margin",
    "gate.on_inconclusive": "on_inconclusive",
}

#: Settings that apply to ``gate`` only (the others apply to every verb with the option).
_GATE_ONLY = frozenset(k for k in OPTION_OF if k.startswith("gate."))

#: ``{setting: environment variable}``: the environment level of the precedence.
#: Only these two: the CI recipes set ``HARNESS_CORPUS``, ``HARNESS_MODEL``... as shell variables for their own steps,
#: and a verb must not start reading them behind a step's back.
ENV_OF: dict[str, str] = {
    "workdir": "HARNESS_WORKDIR",
    "runs_dir": "HARNESS_RUNS_DIR",
}

_PATH_KEYS = frozenset({"corpus", "goldset", "workdir", "runs_dir"})


def _comma_list(value: Any) -> Any:
    if isinstance(value, str):
        return [p.strip() for p in value.split(",") if p.strip()]
    return value


class GateSettings(BaseModel):
    """The ``[gate]`` table: ``harness gate``'s systems, metrics (a list or a comma-separated
    string; each one check), margin (>= 0, metric units) and ``on_inconclusive`` (``fail`` or ``pass``)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    baseline_system: str | None = None
    candidate_system: str | None = None
    metrics: list[str] | None = None
    margin: float | None = Field(default=None, ge=0.0, allow_inf_nan=False)
    on_inconclusive: str | None = None

    _metrics = field_validator("metrics", mode="before")(_comma_list)

    @field_validator("on_inconclusive")
    @classmethod
    def _mapping(cls, value: str | None) -> str | None:
        if value is not None and value not in ("fail", "pass"):
            raise ValueError("must be 'fail' or 'pass'")
        return value


class ProjectConfig(BaseModel):
    """One config file's contents (``harness.toml``, or ``[tool.harness]``): every key optional; unknown keys
    refused. ``systems`` is a list or a comma-separated string (stored comma-joined, as ``--systems`` takes it)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    corpus: str | None = None
    goldset: str | None = None
    systems: str | None = None
    model: str | None = None
    workdir: str | None = None
    runs_dir: str | None = None
    gate: GateSettings | None = None

    @field_validator("systems", mode="before")
    @classmethod
    def _systems(cls, value: Any) -> Any:
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return ",".join(value)
        return value

    def flat(self) -> dict[str, Any]:
        """``{setting: value}`` of the keys this file sets (``gate.metrics``... for the ``[gate]`` table)."""
        out = {k: v for k, v in self.model_dump(exclude={"gate"}).items() if v is not None}
        if self.gate is not None:
            out.update({f"gate.{k}": v for k, v in self.gate.model_dump().items() if v is not None})
        return out


@dataclass(frozen=True)
class ProjectSettings:
    """The merged settings of the config files and the environment.

    Attributes:
        values: ``{setting: value}`` (paths made absolute against their file's folder; environment values as given).
        sources: ``{setting: where its value came from}`` (``harness.toml``, ``pyproject.toml [tool.harness]``,
            ``environment HARNESS_X``), for the settings in ``values``.
        files: the config files read, in precedence order (highest first).
        notes: lines to print once (both files set a key...).
    """

    values: Mapping[str, Any] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)
    files: tuple[Path, ...] = ()
    notes: tuple[str, ...] = ()

    def default_map(self, commands: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        """click's ``default_map`` for a group: ``{command name: {parameter name: value}}`` for every command of
        ``commands`` (``{name: click.Command}``; groups are descended into) that has the option a setting maps to.
        Environment values already in :attr:`values` sit at the default-map level, below the flags."""
        out: dict[str, dict[str, Any]] = {}
        for name, cmd in commands.items():
            sub = getattr(cmd, "commands", None)
            if sub is not None:
                nested = self.default_map(sub)
                if nested:
                    out[name] = nested
                continue
            params = {p.name: p for p in getattr(cmd, "params", ()) if getattr(p, "param_type_name", "") == "option"}
            entry = {}
            for key, value in self.values.items():
                pname = OPTION_OF[key]
                if key in _GATE_ONLY and name != "gate":
                    continue
                if pname in params:
                    entry[pname] = list(value) if isinstance(value, list) else value
            if entry:
                out[name] = entry
        return out

    def source_of(self, setting: str) -> str:
        """Where ``setting``'s value came from (``default`` when no file or variable sets it)."""
        return self.sources.get(setting, "default")


def find_config(start: Path | None = None) -> tuple[Path | None, Path | None]:
    """``(harness.toml, pyproject.toml)`` of the project: ``$HARNESS_CONFIG`` alone when set (as the first item, or
    the second when its name is ``pyproject.toml``), else the first directory from ``start`` (default: the working
    directory) upwards that holds either file; ``None`` for a file that is absent.

    Raises:
        HarnessInputError: ``$HARNESS_CONFIG`` names no file.
    """
    explicit = os.environ.get(CONFIG_ENV)
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise HarnessInputError(f"{CONFIG_ENV}={explicit}: no such config file")
        return (None, path) if path.name == "pyproject.toml" else (path, None)
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        toml, pyproject = folder / "harness.toml", folder / "pyproject.toml"
        if toml.is_file() or pyproject.is_file():
            return (toml if toml.is_file() else None), (pyproject if pyproject.is_file() else None)
    return None, None


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise HarnessInputError(f"{path}: cannot read the config file ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise HarnessInputError(f"{path}: not TOML ({exc})") from None


def _parse(path: Path, raw: Mapping[str, Any], table: str) -> ProjectConfig:
    """Validate one file's table; one located line on the first error (file, key, message)."""
    try:
        return ProjectConfig.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"] if p != "[key]")
        prefix = f"{table}." if table else ""
        if err["type"] == "extra_forbidden":
            known = ", ".join(sorted(k for k in OPTION_OF))
            raise HarnessInputError(f"{path}: unknown key {prefix}{key} (known keys: {known})") from None
        msg = err["msg"].removeprefix("Value error, ")
        raise HarnessInputError(f"{path}: key {prefix}{key}: {msg} (got {err.get('input')!r})") from None


def _absolute(values: dict[str, Any], folder: Path) -> dict[str, Any]:
    return {k: (str(folder / v) if k in _PATH_KEYS and not Path(v).is_absolute() else v) for k, v in values.items()}


def load_settings(start: Path | None = None, environ: Mapping[str, str] | None = None) -> ProjectSettings:
    """Read the project's config files (:func:`find_config`) and the environment into one
    :class:`ProjectSettings`, layered ``[tool.harness]`` < ``harness.toml`` < environment (flags, above all, are
    click's own: a given option ignores the default map).

    Raises:
        HarnessInputError: a file that is not TOML, an unknown key or a value of the wrong type (one line naming the
            file and key).
    """
    environ = os.environ if environ is None else environ
    toml_path, pyproject_path = find_config(start)
    layers: list[tuple[str, Path, dict[str, Any]]] = []
    if pyproject_path is not None:
        table = _read_toml(pyproject_path).get("tool", {}).get("harness")
        if table is not None:
            if not isinstance(table, dict):
                raise HarnessInputError(f"{pyproject_path}: [tool.harness] must be a table")
            cfg = _parse(pyproject_path, table, "tool.harness")
            layers.append(
                ("pyproject.toml [tool.harness]", pyproject_path, _absolute(cfg.flat(), pyproject_path.parent))
            )
    if toml_path is not None:
        cfg = _parse(toml_path, _read_toml(toml_path), "")
        layers.append(("harness.toml", toml_path, _absolute(cfg.flat(), toml_path.parent)))
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    notes: list[str] = []
    for label, _path, layer in layers:
        for key, value in layer.items():
            if key in values and label == "harness.toml":
                notes.append(f"note: {key}: harness.toml wins over pyproject.toml [tool.harness]")
            values[key], sources[key] = value, label
    for key, var in ENV_OF.items():
        if environ.get(var):
            values[key], sources[key] = environ[var], f"environment {var}"
    files = tuple(p for _l, p, _v in reversed(layers))
    return ProjectSettings(values=values, sources=sources, files=files, notes=tuple(notes))
