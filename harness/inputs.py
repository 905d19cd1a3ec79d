"""Reading an input file: regular files and pipes, never a device or a folder, never without bound.

Every input file a verb reads whole (gold-set records and manifests, qrels, queries, rankings, corrections, coverage
CSVs, contracts) goes through :func:`read_input_bytes`:

* a regular file is read whole (its size is known; it is the user's own file);
* a pipe or a socket (``--qrels <(zcat qrels.gz)``, ``/dev/stdin`` fed by a pipe) is read in blocks up to
  :data:`MAX_STREAM_BYTES`, and refused beyond it, so an endless stream stops with one line instead of running the
  machine out of memory;
* a device (``/dev/zero``, ``/dev/urandom``, a terminal), a folder, or anything else is refused at once.

:func:`input_sha256` gives the sha256 of the bytes last read from a path (recorded by :func:`read_input_bytes`), so a
provenance hash is the hash of what was read: a pipe cannot be read twice, and hashing it again after reading hashed
empty input.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from harness.errors import HarnessInputError

#: The most bytes read from a pipe or a socket (1 GiB); a regular file has no limit of its own.
MAX_STREAM_BYTES = 1 << 30

_BLOCK = 1 << 20
_DIGESTS: dict[str, str] = {}


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file or a pipe"


def read_input_bytes(path: str | os.PathLike, *, limit: int = MAX_STREAM_BYTES, what: str = "file") -> bytes:
    """The bytes of the input file ``path`` (module docstring): a regular file whole, a pipe or socket up to
    ``limit`` bytes; the sha256 of what was read is kept for :func:`input_sha256`.

    Args:
        path: the file (links followed).
        limit: the most bytes read from a pipe or socket.
        what: the word for the path in the not-found message (``rankings file``).

    Raises:
        HarnessInputError: one line naming the path: not found, a folder, a device or other non-file, a stream over
            ``limit`` bytes, or unreadable (the system's reason).
    """
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY)
    except FileNotFoundError:
        raise HarnessInputError(f"{p}: {what} not found") from None
    except IsADirectoryError:
        raise HarnessInputError(f"{p}: is a folder; expected a {what}") from None
    except OSError as exc:
        raise HarnessInputError(f"{p}: cannot read ({exc.strerror or exc})") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISREG(mode):
            with os.fdopen(fd, "rb", closefd=False) as f:
                data = f.read()
        elif stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            data = _read_stream(fd, p, limit)
        else:
            raise HarnessInputError(f"{p}: is {_kind(mode)}; expected a {what} (a regular file or a pipe)")
    except OSError as exc:
        raise HarnessInputError(f"{p}: cannot read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    _DIGESTS[str(p)] = hashlib.sha256(data).hexdigest()
    return data


def _read_stream(fd: int, p: Path, limit: int) -> bytes:
    parts, size = [], 0
    while chunk := os.read(fd, _BLOCK):
        size += len(chunk)
        if size > limit:
            raise HarnessInputError(
                f"{p}: more than {limit:,} bytes through a pipe; refusing to read on (write it to a file first)"
            )
        parts.append(chunk)
    return b"".join(parts)


def read_input_text(path: str | os.PathLike, *, limit: int = MAX_STREAM_BYTES, what: str = "file") -> str:
    """:func:`read_input_bytes` decoded as UTF-8.

    Raises:
        HarnessInputError: as :func:`read_input_bytes`, and bytes that are not UTF-8 (naming the byte offset).
    """
    data = read_input_bytes(path, limit=limit, what=what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HarnessInputError(f"{path}: not valid UTF-8 at byte {exc.start}") from None


def input_sha256(path: str | os.PathLike) -> str:
    """Hex sha256 of the bytes :func:`read_input_bytes` last read from ``path`` (the path as given); a path never
    read that way is hashed from the file."""
    got = _DIGESTS.get(str(Path(path)))
    if got is not None:
        return got
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_BLOCK):
            h.update(chunk)
    return h.hexdigest()
