"""Small I/O helpers: atomic writes, JSONL reading with located errors, hashing, work-directory locks, and the
clean-up of temporaries a killed process left behind.

Temporaries. Every temporary this module makes sits beside its final path and is named
``.<final name>.<pid>-<random>.tmp`` (``.old`` for the previous version of a folder being replaced), where ``pid``
is the process that made it (:func:`temporary_path`). The ingest's temporary database is ``.corpus.db.<pid>.tmp``
(plus SQLite's ``-journal``/``-wal``/``-shm`` beside it). :func:`parse_temporary_name` reads the pid back from such
a name; :func:`clean_stale_temporaries` removes the ones whose process is gone (``kill(pid, 0)`` fails with "no such
process") and never touches a live process's, nor any name it does not recognise (a hidden ``.*.tmp`` folder
without a pid, written by a harness older than this rule, is left alone). The owner check is local: a work
directory shared by several machines must not rely on it.

Locks. :func:`file_lock` is an exclusive ``fcntl.flock`` on a lock file that is created once and never deleted.
The kernel drops the lock when its holder exits, however it exits (SIGKILL included), so a lock is never stale.
POSIX only (Linux, macOS); on NFS, Linux maps ``flock`` to byte-range locks, which NFS supports.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import functools
import gzip
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from harness.errors import HarnessError, HarnessInputError
from harness.inputs import (  # noqa: F401  (the output-path rule lives beside the input readers; re-exported)
    OUTPUT_MARKER,
    RECORD_KINDS,
    RECORD_OPTIONS,
    PathArg,
    check_output_location,
    check_outputs,
    output_kind,
    read_input_bytes,
    read_input_text,
    record_around,
)


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


def stderr_notice(message: str) -> None:
    """Write one notice line ``harness: <message>`` on stderr (the default ``log`` of the helpers below; control
    characters escaped, :func:`harness.terminal_safe.escape_controls`)."""
    from harness.terminal_safe import escape_controls

    sys.stderr.write(f"harness: {escape_controls(message)}\n")
    sys.stderr.flush()


_TEMP_RE = re.compile(r"^\.(?P<name>.+)\.(?P<pid>[0-9]+)-[a-z0-9_]+\.(?P<kind>tmp|old)$")
_INGEST_TEMP_RE = re.compile(r"^\.(?P<name>corpus\.db)\.(?P<pid>[0-9]+)\.(?P<kind>tmp)(?:-journal|-wal|-shm)?$")


def temporary_path(final: str | Path, *, kind: str = "tmp", directory: bool = False) -> Path:
    """Create a temporary file (or folder) beside ``final``, named ``.<final name>.<pid>-<random>.<kind>``.

    The pid in the name lets :func:`clean_stale_temporaries` tell a dead process's leftovers from a live one's.
    A file is created empty with mode 0600 (``tempfile.mkstemp``), a folder with 0700 (``tempfile.mkdtemp``).

    Args:
        final: the path the temporary will replace; its folder must exist.
        kind: ``"tmp"`` (the new content) or ``"old"`` (the previous content, moved aside during a replace).
        directory: make a folder instead of a file.

    Raises:
        ValueError: ``kind`` is not ``"tmp"`` or ``"old"``.
    """
    if kind not in ("tmp", "old"):
        raise ValueError(f"kind={kind!r}: must be 'tmp' or 'old'")
    final = Path(final)
    prefix, suffix = f".{final.name}.{os.getpid()}-", f".{kind}"
    if directory:
        return Path(tempfile.mkdtemp(prefix=prefix, suffix=suffix, dir=final.parent))
    fd, name = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=final.parent)
    os.close(fd)
    return Path(name)


def parse_temporary_name(name: str) -> tuple[str, int, str] | None:
    """``(final name, pid, kind)`` of a harness temporary's file name (:func:`temporary_path`'s
    ``.<final>.<pid>-<random>.<kind>``, or the ingest's ``.corpus.db.<pid>.tmp`` and its SQLite journals, kind
    ``"tmp"``), or ``None`` when ``name`` is not one. A reader can use it to refuse a half-written output."""
    m = _TEMP_RE.match(name) or _INGEST_TEMP_RE.match(name)
    return (m["name"], int(m["pid"]), m["kind"]) if m else None


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this machine (``os.kill(pid, 0)``; a process of another user counts;
    an exited child not yet reaped by its parent still counts)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale_temporaries(
    folder: str | Path,
    *,
    name: str | None = None,
    depth: int = 0,
    log: Callable[[str], None] | None = stderr_notice,
) -> list[Path]:
    """Remove the harness temporaries in ``folder`` whose owner process is gone (see the module docstring).

    A stale ``.old`` folder (the previous version of a folder, moved aside by :func:`atomic_directory` just before
    the new one was renamed in) is put back in place when its final path is missing, so a kill at that instant
    loses nothing; otherwise it is deleted. Links are never followed or removed.

    Args:
        folder: where to look (a missing folder is no error).
        name: only the temporaries of this final name (``.<name>.<pid>-*``).
        depth: also look this many levels of sub-folders down (temporaries themselves are not entered).
        log: called with one line per removed or restored path (default: a line on stderr; ``None``: silent).

    Returns:
        The paths removed or restored.
    """
    folder = Path(folder)
    done: list[Path] = []
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return done
    for e in entries:
        p = Path(e.path)
        parsed = parse_temporary_name(e.name)
        if parsed is None:
            if depth > 0 and e.is_dir(follow_symlinks=False):
                done += clean_stale_temporaries(p, name=name, depth=depth - 1, log=log)
            continue
        final_name, pid, kind = parsed
        if (name is not None and final_name != name) or e.is_symlink() or pid_alive(pid):
            continue
        final = folder / final_name
        if kind == "old" and (p / "old").is_dir() and not os.path.lexists(final):
            os.replace(p / "old", final)
            shutil.rmtree(p, ignore_errors=True)
            what = f"restored {final} from {p.name}, left by process {pid}, killed while replacing it"
        else:
            if e.is_dir(follow_symlinks=False):
                shutil.rmtree(p, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()
            what = f"removed {p}, a temporary left by process {pid}, which is gone"
        done.append(p)
        if log is not None:
            log(what)
    return done


@contextlib.contextmanager
def file_lock(path: str | Path, *, log: Callable[[str], None] | None = stderr_notice) -> Iterator[None]:
    """Hold an exclusive lock on the file ``path`` (``fcntl.flock``; created with its folder if missing, never
    deleted) for the ``with`` block; released on exit, and by the kernel when the process dies.

    While another process holds it, ``log`` gets one line ``waiting for <path> held by pid N`` (the holder writes
    its pid into the file) and the call blocks until the lock is free.

    Raises:
        OSError: the lock file cannot be created or opened (e.g. a read-only folder).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            if log is not None:
                log(f"waiting for {path} held by {'pid ' + holder if holder.isdigit() else 'another process'}")
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # closing the last descriptor releases the lock


class LockBusy(Exception):
    """:func:`claim_file` found the claim held: ``path`` the lock file, ``holder`` the pid its holder wrote into it
    (``None`` when not readable yet)."""

    def __init__(self, path: Path, holder: int | None) -> None:
        super().__init__(f"{path}: held by {'pid ' + str(holder) if holder else 'another process'}")
        self.path, self.holder = path, holder


@contextlib.contextmanager
def claim_file(path: str | Path) -> Iterator[None]:
    """Hold an exclusive claim on the lock file ``path`` for the ``with`` block, without waiting: an ``fcntl.flock``
    on a file created for it (its folder must exist), which holds the holder's pid and is removed on exit by its
    holder (the kernel drops the lock if the process dies; a file left by a killed holder is claimed again).

    Unlike :func:`file_lock` the file does not outlive the claim: a claimer whose lock landed on a file its last
    holder had just removed (another process may have made a new one meanwhile) tries again on the file now there.

    Raises:
        LockBusy: another process (or another claim in this one) holds it.
        OSError: the file cannot be created (a read-only folder, ...).
    """
    path = Path(path)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            raise LockBusy(path, int(holder) if holder.isdigit() else None) from None
        except BaseException:
            os.close(fd)
            raise
        try:
            st = os.stat(path)
            mine = (st.st_dev, st.st_ino) == (os.fstat(fd).st_dev, os.fstat(fd).st_ino)
        except FileNotFoundError:
            mine = False
        if mine:
            break
        os.close(fd)  # removed by its last holder after this open: claim the file there now
    try:
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)  # while still holding the lock: a waiting claimer then tries the new file
        os.close(fd)


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` via a temporary file in the same folder (:func:`temporary_path`) and an
    atomic rename; stale temporaries of the same name left by dead processes are removed first.

    Raises:
        HarnessError: the file system refuses the write (no space, read-only, permission, ...): one line naming
            ``path`` and the cause (:func:`write_error`, exit 2); nothing is left behind.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        clean_stale_temporaries(path.parent, name=path.name)
        tmp = temporary_path(path)
    except OSError as exc:
        raise write_error(exc, path) from None
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the file the usual permissions
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise write_error(exc, path) from None
        raise


def atomic_write_json(path: str | Path, obj: Any, *, indent: int = 2) -> None:
    """Write ``obj`` as pretty JSON atomically."""
    atomic_write_text(path, json.dumps(obj, indent=indent, ensure_ascii=False, sort_keys=False) + "\n")


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
    written by hand, or by harness before the marker existed) is never touched, nor is a run record or a corpus
    replaced by a folder of another ``kind``. The output may not be, contain, or lie inside any of ``inputs``, nor
    lie inside a run record, corpus or gold set (:func:`check_outputs`).

    Raises:
        HarnessInputError: ``final`` exists and ``overwrite`` is false; ``final`` is not a folder harness wrote, or
            is a run record or corpus and ``kind`` another; it overlaps an input.
    """
    from harness import __version__

    final = Path(final)
    check_output_location(final, inputs, field=field)
    clean_stale_temporaries(final.parent)  # first: it may put back a folder a killed replace had moved aside
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
        held = output_kind(final)
        if held in RECORD_KINDS and held != kind:
            raise HarnessInputError(
                f"{field} {final}: is a {held} harness wrote, not a {kind} folder; refusing to replace it with one "
                "(choose another folder)"
            )
    start = _identity(final)  # the folder an overwrite may replace; None: nothing may be there at the end either
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = temporary_path(final, directory=True)
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes 0700; give the final folder the usual permissions
    except OSError as exc:
        raise write_error(exc, final, field=field) from None
    aside: Path | None = None
    try:
        try:
            yield tmp
            if marker:
                stamp = {"tool": "harness", "version": __version__, "kind": kind}
                (tmp / OUTPUT_MARKER).write_text(json.dumps(stamp) + "\n", encoding="utf-8")
            if start is not None:
                aside = temporary_path(final, kind="old", directory=True)
                _move_aside(final, aside / "old", start, field=field)
            try:
                rename_noreplace(tmp, final)
            except FileExistsError:
                raise HarnessInputError(
                    f"{field} {final}: appeared while this command ran (another process wrote it); left it as it "
                    "is, nothing written"
                ) from None
        except HarnessError as exc:  # name the user's path, not the temporary folder that is about to be deleted
            if str(tmp) in str(exc):  # the same exception (its class and attributes kept), its message reworded
                exc.args = (f"{str(exc).replace(str(tmp), str(final))} (nothing written)",)
            raise
        except OSError as exc:
            raise write_error(exc, final, field=field) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if aside is not None and (aside / "old").exists():
            with contextlib.suppress(OSError):  # put the old folder back, unless something took its place
                rename_noreplace(aside / "old", final)
        raise
    finally:
        if aside is not None:
            shutil.rmtree(aside, ignore_errors=True)


def _identity(path: Path) -> tuple[int, int] | None:
    """``(device, inode)`` of an existing folder (links not followed), or ``None``."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


def _move_aside(final: Path, aside: Path, start: tuple[int, int], *, field: str) -> None:
    """Move the folder an overwrite replaces out of the way, only if it is still the one found at the start."""
    try:
        os.rename(final, aside)
    except FileNotFoundError:
        return  # removed meanwhile: the new folder goes in only if nothing else appears (rename_noreplace)
    if _identity(aside) != start:
        with contextlib.suppress(OSError):
            rename_noreplace(aside, final)
        raise HarnessInputError(
            f"{field} {final}: replaced by another process while this command ran; left it as it is, nothing written"
        )


_RENAME_NOREPLACE = 1  # linux/fs.h


def rename_noreplace(src: str | Path, dst: str | Path) -> None:
    """Rename ``src`` to ``dst`` atomically unless ``dst`` exists (then ``FileExistsError``; nothing is replaced).

    Linux ``renameat2(RENAME_NOREPLACE)`` (glibc 2.28+); where it is missing or the file system refuses it, an
    exclusive ``mkdir(dst)`` claims the name and the rename replaces that empty claim (folders only; a second
    writer's ``mkdir`` fails meanwhile).

    Raises:
        FileExistsError: ``dst`` exists. OSError: any other failure of the rename.
    """
    src, dst = os.fsencode(src), os.fsencode(dst)
    fn = getattr(_libc(), "renameat2", None)
    if fn is not None:
        if fn(-100, src, -100, dst, _RENAME_NOREPLACE) == 0:  # -100: AT_FDCWD
            return
        err = ctypes.get_errno()
        if err == errno.EEXIST:
            raise FileExistsError(err, os.strerror(err), os.fsdecode(dst))
        if err not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
            raise OSError(err, os.strerror(err), os.fsdecode(dst))
    if not os.path.isdir(src):
        raise OSError(errno.ENOTSUP, "no atomic rename without replacing here", os.fsdecode(dst))
    os.mkdir(dst)  # FileExistsError when taken
    try:
        os.rename(src, dst)
    except BaseException:
        with contextlib.suppress(OSError):
            os.rmdir(dst)
        raise


@functools.cache
def _libc():
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO, errno.EMLINK,
                 errno.EFBIG, errno.ENAMETOOLONG, errno.ENOTDIR, errno.EISDIR, errno.EEXIST}  # fmt: skip


def write_error(exc: OSError, path: str | Path, *, field: str | None = None) -> HarnessError | OSError:
    """The one-line error (exit 2) for an ``OSError`` met while writing the output ``path``: the real cause
    (``No space left on device``, ``Read-only file system``, ``Permission denied``, ``Too many links`` for a full
    folder) and the user's path, never a temporary name; ``exc`` itself when it is not a file-system condition."""
    if exc.errno not in _WRITE_ERRNOS:
        return exc
    where = f"{field} {path}" if field else str(path)
    return HarnessError(f"{where}: cannot write ({exc.strerror or exc}); nothing written")


def read_jsonl(path: str | Path) -> list[tuple[int, dict]]:
    """Read a JSONL file (gzip-compressed when its name ends in ``.gz``) into ``(line_number, object)`` pairs
    (1-based line numbers, blank lines skipped); a regular file or a pipe, never a device
    (:func:`harness.inputs.read_input_bytes`).

    Raises:
        HarnessInputError: missing file, non-UTF-8 bytes, a line that is not JSON or not an object
            (message ``<file>:<line>: ...``).
    """
    path = Path(path)
    data = read_input_bytes(path)
    if path.suffix == ".gz":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:  # not gzip, truncated, a damaged deflate stream
            raise HarnessInputError(f"{path}: cannot read ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HarnessInputError(f"{path}: not valid UTF-8 at byte {exc.start}") from None
    return parse_jsonl(text, path)


def parse_jsonl(text: str, path: str | Path) -> list[tuple[int, dict]]:
    """JSONL ``text`` (read from ``path``, named in messages) as :func:`read_jsonl` returns it.

    Raises:
        HarnessInputError: a line that is not JSON or not an object (``<file>:<line>: ...``).
    """
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
        return json.loads(read_input_text(path))
    except json.JSONDecodeError as exc:
        raise HarnessInputError(f"{path}: malformed JSON ({exc.msg} at line {exc.lineno})") from None
