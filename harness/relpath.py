"""Paths as the outputs people share show them (the HTML report, the pull-request comment, the JUnit XML, the gate's
hints, the validation table of ``validate`` and ``goldset apply``): relative to the working directory, never an
absolute path of the machine that made them. Run manifests and JSON outputs keep the paths as recorded."""

from __future__ import annotations

import os
from pathlib import Path


def shown_path(path: str | os.PathLike | None, *, cwd: str | os.PathLike | None = None, pasteable: bool = False) -> str:
    """``path`` for a shared output: as given when relative; relative to ``cwd`` (default the working directory) when
    it lies inside it or beside it (sharing a top-level folder with it: ``../shared/corpus/x``); else its last
    component (the dataset's or run's folder name), or with ``pasteable`` (a command to paste, such as the coverage
    hint) the relative path all the same (``../../home/u/runs/x``). ``None`` and ``""`` give ``""``; ``"-"`` stays
    ``"-"``.

    >>> shown_path("/work/p/runs/a", cwd="/work/p")
    'runs/a'
    >>> shown_path("/work/shared/c", cwd="/work/p")
    '../shared/c'
    >>> shown_path("/home/u/data/ds", cwd="/tmp/ci")
    'ds'
    >>> shown_path("/home/u/data/ds", cwd="/tmp/ci", pasteable=True)
    '../../home/u/data/ds'
    """
    if path is None or str(path) in ("", "-"):
        return "" if path is None else str(path)
    p = str(path)
    if not os.path.isabs(p):
        return p
    base = os.path.abspath(os.fspath(cwd) if cwd is not None else os.getcwd())
    p = os.path.normpath(p)
    try:
        common = os.path.commonpath([p, base])
    except ValueError:  # another drive (Windows)
        return Path(p).name or p
    if common == os.path.dirname(common) and p != common and not pasteable:  # only the root in common
        return Path(p).name or p
    return os.path.relpath(p, base)
