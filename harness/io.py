"""Small I/O helpers: atomic writes, JSONL reading with located errors, hashing."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from harness.errors import HarnessInputError


def sha256_file(path: str | Path, *, bufsize: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(bufsize):
            h.update(chunk)
    return h.hexdigest()


def sha256_bytes(data: bytes) -> str:
    """Hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no insignificant whitespace (stable input for hashing)."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` via a temporary file in the same folder and an atomic rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the file the usual permissions
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_json(path: str | Path, obj: Any, *, indent: int = 2) -> None:
    """Write ``obj`` as pretty JSON atomically."""
    atomic_write_text(path, json.dumps(obj, indent=indent, ensure_ascii=False, sort_keys=False) + "\n")


OUTPUT_MARKER = ".harness-output.json"
"""The file every output folder harness writes carries (tool, version, kind, time): only such a folder may be
replaced, and only when the user asks (``--overwrite``)."""


def _resolved(path: str | Path) -> Path:
    return Path(os.path.realpath(os.path.abspath(path)))


def check_output_location(out: str | Path, inputs: Sequence[str | Path | None] = (), *, field: str = "--out") -> None:
    """Refuse an output folder that is, contains, or lies inside any of ``inputs`` (symbolic links resolved).

    Raises:
        HarnessInputError: one line naming the output and the input it would overwrite.
    """
    o = _resolved(out)
    for inp in inputs:
        if inp is None:
            continue
        i = _resolved(inp)
        if o == i or i.is_relative_to(o) or o.is_relative_to(i):
            rel = "is" if o == i else ("contains" if i.is_relative_to(o) else "lies inside")
            raise HarnessInputError(
                f"{field} {out}: {rel} the input {inp}; choose an output folder outside every input"
            )


def is_harness_output(path: str | Path) -> bool:
    """True when ``path`` is a real folder (not a link) holding the :data:`OUTPUT_MARKER` file."""
    p = Path(path)
    return p.is_dir() and not p.is_symlink() and (p / OUTPUT_MARKER).is_file()


@contextlib.contextmanager
def atomic_directory(
    final: str | Path,
    *,
    overwrite: bool = False,
    inputs: Sequence[str | Path | None] = (),
    kind: str = "output",
    field: str = "--out",
    marker: bool = True,
) -> Iterator[Path]:
    """Yield a temporary sibling folder; on success it replaces ``final`` in one rename, on error it is removed.

    The folder gets the :data:`OUTPUT_MARKER` file unless ``marker`` is false (a gold-set version, which is data
    to commit and is never replaced). An existing ``final`` is replaced only when ``overwrite`` is true
    *and* it is a folder harness wrote (it holds the marker); a file, a link, or a folder without the marker (one
    written by hand, or by harness before the marker existed) is never touched. The output may not be, contain, or
    lie inside any of ``inputs``.

    Raises:
        HarnessInputError: ``final`` exists and ``overwrite`` is false; ``final`` is not a folder harness wrote; it
            overlaps an input.
    """
    from harness import __version__

    final = Path(final)
    check_output_location(final, inputs, field=field)
    if final.is_symlink() or (final.exists() and not final.is_dir()):
        raise HarnessInputError(f"{field} {final}: exists and is not a folder; refusing to replace it")
    if final.exists():
        if not overwrite:
            raise HarnessInputError(f"{field} {final}: already exists; refusing to overwrite")
        if not is_harness_output(final):
            raise HarnessInputError(
                f"{field} {final}: not a folder harness wrote (no {OUTPUT_MARKER}); refusing to overwrite it: "
                "delete it by hand if it is safe to, or choose another folder"
            )
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))
    os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes 0700; give the final folder the usual permissions
    aside: Path | None = None
    try:
        yield tmp
        if marker:
            stamp = {"tool": "harness", "version": __version__, "kind": kind}
            (tmp / OUTPUT_MARKER).write_text(json.dumps(stamp) + "\n", encoding="utf-8")
        if final.exists():
            aside = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".old", dir=final.parent))
            os.replace(final, aside / "old")
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if aside is not None and (aside / "old").exists() and not final.exists():
            os.replace(aside / "old", final)
        raise
    finally:
        if aside is not None:
            shutil.rmtree(aside, ignore_errors=True)


def read_jsonl(path: str | Path) -> list[tuple[int, dict]]:
    """Read a JSONL file (gzip-compressed when its name ends in ``.gz``) into ``(line_number, object)`` pairs
    (1-based line numbers, blank lines skipped).

    Raises:
        HarnessInputError: missing file, non-UTF-8 bytes, a line that is not JSON or not an object
            (message ``<file>:<line>: ...``).
    """
    path = Path(path)
    try:
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
    except FileNotFoundError:
        raise HarnessInputError(f"{path}: file not found") from None
    except (OSError, EOFError) as exc:
        raise HarnessInputError(f"{path}: cannot read ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HarnessInputError(f"{path}: not valid UTF-8 at byte {exc.start}") from None
    out: list[tuple[int, dict]] = []
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise HarnessInputError(f"{path}:{i}: malformed JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(obj, dict):
            raise HarnessInputError(f"{path}:{i}: expected a JSON object, got {type(obj).__name__}")
        out.append((i, obj))
    return out


def read_json(path: str | Path) -> Any:
    """Read one JSON document.

    Raises:
        HarnessInputError: missing, unreadable or malformed file.
    """
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HarnessInputError(f"{path}: file not found") from None
    except UnicodeDecodeError as exc:
        raise HarnessInputError(f"{path}: not valid UTF-8 at byte {exc.start}") from None
    except json.JSONDecodeError as exc:
        raise HarnessInputError(f"{path}: malformed JSON ({exc.msg} at line {exc.lineno})") from None
