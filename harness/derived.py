"""Manifests of derived files (issue 26, items 2 and 7): what a build wrote, checked cheaply on every load.

A derived file (a BM25 index's arrays and JSON, the evidence cache, the embedding cache's SQLite file, the vector
index's corpus database) is something harness computed and can compute again. At build the writer records a
manifest next to it (:func:`write_manifest`): per file its size in bytes, its ``mtime_ns``, the sha256 of its bytes
and, for a ``.npy`` array, its shape and dtype (from the header), plus kind-specific ``facts`` (e.g. a row count).

On every load :func:`check_manifest` compares, cheaply: the file set, each size, each ``.npy`` header's shape and
dtype, and the facts. The content hash is taken again **only** for a file whose ``(size, mtime_ns)`` differs from the
manifest's: an unchanged 19 GB index is never re-read (a few ``stat`` calls and headers per load). When the hash
still matches (a copy, a ``touch``), the manifest's ``mtime_ns`` is refreshed so the next load is cheap again; in a
read-only work directory (a copy made without its mtimes) the refresh is skipped and the file is verified by content
on each load, never refused for its mtime alone.

A store that is legitimately changed by other writers between builds (the embedding cache, the corpus database)
passes ``verify=``: a function run instead of the hash comparison when the file changed, which returns a problem or
``None`` (then the manifest is refreshed). What a caller does with a problem (rebuild with one notice through
:func:`damaged_notice`, or exit 2 naming the file) is its own rule; never use a file that failed the check.

Limitation (by design, the price of not hashing on every load): a change that keeps both the size and the
``mtime_ns`` of a file (writing with ``os.utime`` restored) is not seen.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from harness.errors import HarnessError
from harness.io import atomic_write_json, sha256_file, stderr_notice

__all__ = [
    "MANIFEST_VERSION",
    "DerivedManifest",
    "FileFacts",
    "check_manifest",
    "damaged_notice",
    "file_facts",
    "npy_header",
    "remove_derived",
    "write_manifest",
]

MANIFEST_VERSION = 1
"""Layout version of a derived-file manifest (another version is treated as no manifest)."""


class FileFacts(BaseModel):
    """What a manifest records of one file: ``size`` (bytes), ``mtime_ns``, ``sha256`` (hex, or ``None`` for a store
    checked by a ``verify`` function), and for a ``.npy`` file its ``shape`` and ``dtype`` (``numpy.dtype.str``)."""

    model_config = ConfigDict(extra="forbid")
    size: int
    mtime_ns: int
    sha256: str | None
    shape: list[int] | None = None
    dtype: str | None = None


class DerivedManifest(BaseModel):
    """A derived file's manifest: ``kind`` (e.g. ``bm25-index``), ``files`` by name, and kind-specific ``facts``."""

    model_config = ConfigDict(extra="forbid")
    manifest_version: int = MANIFEST_VERSION
    kind: str
    files: dict[str, FileFacts]
    facts: dict = {}


def npy_header(path: Path) -> tuple[list[int], str]:
    """``(shape, dtype.str)`` from a ``.npy`` file's header, reading only the header.

    Raises:
        ValueError: not a readable ``.npy`` header (a zero-byte or overwritten file).
    """
    with open(path, "rb") as f:
        try:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, _fortran, dtype = np.lib.format.read_array_header_1_0(f)
            elif version == (2, 0):
                shape, _fortran, dtype = np.lib.format.read_array_header_2_0(f)
            else:  # 3.0 (utf-8 header): no public header reader; a memory map reads only the header too
                arr = np.load(path, mmap_mode="r", allow_pickle=False)
                shape, dtype = arr.shape, arr.dtype
        except (ValueError, OSError, SyntaxError, TypeError, EOFError) as exc:
            why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ValueError(f"not a .npy header ({why})") from None
    return [int(n) for n in shape], dtype.str


def file_facts(path: Path, *, content_hash: bool = True) -> FileFacts:
    """The :class:`FileFacts` of ``path`` now (``content_hash=False``: ``sha256`` is ``None``).

    Raises:
        OSError: the file cannot be read. ValueError: a ``.npy`` file without a readable header.
    """
    st = path.stat()
    shape = dtype = None
    if path.suffix == ".npy":
        shape, dtype = npy_header(path)
    return FileFacts(
        size=st.st_size,
        mtime_ns=st.st_mtime_ns,
        sha256=sha256_file(path) if content_hash else None,
        shape=shape,
        dtype=dtype,
    )


def write_manifest(
    manifest_path: Path,
    kind: str,
    files: Mapping[str, Path],
    *,
    facts: Mapping | None = None,
    content_hash: bool = True,
) -> DerivedManifest:
    """Record ``files`` (name -> path) as they are now in ``manifest_path`` (atomic write, strict JSON).

    ``content_hash=False`` records no sha256 (a store checked by ``verify=`` in :func:`check_manifest`).
    """
    man = DerivedManifest(
        kind=kind,
        files={n: file_facts(Path(p), content_hash=content_hash) for n, p in files.items()},
        facts=dict(facts or {}),
    )
    atomic_write_json(manifest_path, man.model_dump(mode="json"))
    return man


def _read(manifest_path: Path) -> DerivedManifest | str:
    try:
        obj = json.loads(manifest_path.read_text("utf-8"))
        man = DerivedManifest.model_validate(obj)
    except FileNotFoundError:
        return "no manifest (written by builds since issue 26)"
    except (OSError, ValueError, ValidationError) as exc:
        what = "not valid JSON" if isinstance(exc, ValueError) and not isinstance(exc, ValidationError) else "malformed"
        return f"{manifest_path.name}: {what}"
    if man.manifest_version != MANIFEST_VERSION:
        return f"{manifest_path.name}: manifest version {man.manifest_version}, expected {MANIFEST_VERSION}"
    return man


def check_manifest(
    manifest_path: Path,
    kind: str,
    files: Mapping[str, Path],
    *,
    facts: Mapping | None = None,
    verify: Callable[[str, Path], str | None] | None = None,
) -> str | None:
    """Check ``files`` against the manifest at ``manifest_path`` (module docstring); ``None`` when they pass.

    Args:
        manifest_path: the manifest :func:`write_manifest` wrote.
        kind: the kind it must name.
        files: name -> path of every file the manifest must list (no more, no fewer).
        facts: kind-specific facts that must equal the recorded ones (``None``: not checked).
        verify: ``verify(name, path) -> problem or None``, run instead of the hash comparison for a file whose
            ``(size, mtime_ns)`` changed and whose manifest entry has no sha256; a file with a sha256 but a changed
            size is a problem without it.

    Returns:
        ``None``, or one phrase naming the file and what differs (``data.csc.index.npy: 0 bytes, the manifest
        says 1,204``), for the caller's notice or error line.
    """
    man = _read(manifest_path)
    if isinstance(man, str):
        return man
    if man.kind != kind:
        return f"{manifest_path.name}: kind {man.kind!r}, expected {kind!r}"
    if set(man.files) != set(files):
        missing = sorted(set(man.files) - set(files)) or sorted(set(files) - set(man.files))
        return f"{manifest_path.name}: lists other files than expected ({', '.join(missing)})"
    changed: dict[str, FileFacts] = {}
    for name in sorted(files):
        want, path = man.files[name], Path(files[name])
        try:
            now = file_facts(path, content_hash=False)
        except FileNotFoundError:
            return f"{name}: missing"
        except (OSError, ValueError) as exc:
            return f"{name}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        if want.sha256 is not None and now.size != want.size:
            return f"{name}: {now.size:,} bytes, the manifest says {want.size:,}"
        if (now.shape, now.dtype) != (want.shape, want.dtype):
            return f"{name}: shape {now.shape} dtype {now.dtype}, the manifest says {want.shape} {want.dtype}"
        if (now.size, now.mtime_ns) != (want.size, want.mtime_ns):
            if want.sha256 is None:
                problem = verify(name, path) if verify is not None else None
                if problem is not None:
                    return f"{name}: {problem}"
            else:
                try:
                    digest = sha256_file(path)
                except OSError as exc:
                    return f"{name}: cannot be read ({exc.strerror or exc})"
                if digest != want.sha256:
                    rec = str(want.sha256)[:12]
                    return f"{name}: content differs from the manifest (sha256 {digest[:12]}, recorded {rec})"
            changed[name] = want.model_copy(update={"size": now.size, "mtime_ns": now.mtime_ns})
    if facts is not None and dict(facts) != man.facts:
        diff = sorted(k for k in set(facts) | set(man.facts) if dict(facts).get(k) != man.facts.get(k))
        return f"{manifest_path.name}: {', '.join(diff)} differ from the manifest"
    if changed:  # verified again: record the new stamps so the next load is cheap (best effort: read-only is fine,
        # the write's one-line HarnessError included: a copy without mtimes in a read-only work directory is verified
        # by content on every load instead)
        files_now = {**man.files, **changed}
        with contextlib.suppress(OSError, HarnessError):
            atomic_write_json(manifest_path, man.model_copy(update={"files": files_now}).model_dump(mode="json"))
    return None


def damaged_notice(what: str, path: Path, problem: str, action: str = "rebuilding it") -> None:
    """The one stderr line of a derived file that failed its check: ``harness: <what> <path>: <problem>; <action>``."""
    stderr_notice(f"{what} {path}: {problem}; {action}")


def remove_derived(path: Path) -> None:
    """Remove a derived file or folder harness built (a damaged one, before its rebuild); missing is fine."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
