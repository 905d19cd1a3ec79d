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

The output-path rule (:func:`check_outputs`, re-exported by :mod:`harness.io`) is the other side of the same
contract: no output is ever written onto an input (docs/reliability.md, "No output onto an input").
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Sequence
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


OUTPUT_MARKER = ".harness-output.json"
"""The file every output folder harness writes carries (tool, version, kind, time): only such a folder may be
replaced, and only when the user asks (``--overwrite``)."""


def _resolved(path: str | Path) -> Path:
    return Path(os.path.realpath(os.path.abspath(path)))


PathArg = tuple[str, str | os.PathLike | None]
"""``(option as typed, path)``: how :func:`check_outputs` names a path in its messages (``("--out", "x.json")``)."""


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # either is missing or unreadable: only the resolved names are compared
        return False


def _overlap(o: Path, i: Path) -> str | None:
    """How output ``o`` meets input ``i`` (both resolved): ``"is"``, ``"lies inside"``, ``"contains"`` or ``None``."""
    if o == i or _same_file(o, i):
        return "is"
    if o.is_relative_to(i):
        return "lies inside"
    if i.is_relative_to(o):
        return "contains"
    return None


def _named(label: str, path) -> str:
    return f"{label} {path}" if label else str(path)


#: Marker kinds of the folders no output may be written into (their files are inputs of every verb that reads them):
#: a run record, and a corpus folder harness wrote (``goldset import --beir``).
RECORD_KINDS = ("run record", "corpus")

#: The output options that write a whole record of a kind of :data:`RECORD_KINDS` (``run --run-id X --overwrite``
#: replaces the run record X); any other output given as such a folder is refused.
RECORD_OPTIONS = {"--run-id": "run record", "--corpus-out": "corpus"}


def output_kind(path: str | Path) -> str | None:
    """The ``kind`` the :data:`OUTPUT_MARKER` of folder ``path`` records (``"run record"``, ``"known-item"``, ...),
    or ``None`` when ``path`` is no folder harness wrote (no marker, unreadable, or a marker without a kind)."""
    p = Path(path)
    try:
        kind = json.loads((p / OUTPUT_MARKER).read_text("utf-8")).get("kind") if not p.is_symlink() else None
    except (OSError, ValueError, AttributeError):
        return None
    return kind if isinstance(kind, str) else None


def record_around(path: str | Path) -> tuple[str, Path] | None:
    """``(what, folder)`` of the nearest folder strictly above ``path`` (resolved) that is a run record, a corpus
    harness wrote (their :data:`OUTPUT_MARKER` kind is one of :data:`RECORD_KINDS`) or a gold set (a folder holding
    a ``*.meta.json`` manifest beside its records, :func:`_is_goldset_folder`); ``None`` when there is none.
    ``what`` is ``"run record"``, ``"corpus"`` or ``"gold set"``."""
    for folder in _resolved(path).parents:
        kind = output_kind(folder) if (folder / OUTPUT_MARKER).is_file() else None
        if kind in RECORD_KINDS:
            return kind, folder
        if _is_goldset_folder(folder):
            return "gold set", folder
    return None


def _is_goldset_folder(folder: Path) -> bool:
    """Whether ``folder`` holds a gold set: a ``<stem>.meta.json`` manifest beside its records, ``<stem>.jsonl`` or
    the file its ``records_file`` names (:mod:`harness.goldset.io`); a lone ``*.meta.json`` of another tool is not
    one."""
    try:
        metas = [e.name for e in os.scandir(folder) if e.name.endswith(".meta.json") and e.is_file()]
    except OSError:
        return False
    for name in metas:
        if (folder / (name.removesuffix(".meta.json") + ".jsonl")).is_file():
            return True
        try:
            records = json.loads((folder / name).read_text("utf-8")).get("records_file")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(records, str) and records and (folder / records).is_file():
            return True
    return False


def check_outputs(outputs: Sequence[PathArg], inputs: Sequence[PathArg] = ()) -> None:
    """Refuse, before any work, an output that would be written onto an input: the one rule of every verb's output
    paths (``--out``, ``--result-out``, ``--plot``, the run record, ``--corpus-out``, ...), documented in
    docs/reliability.md ("No output onto an input").

    Every path is resolved first (``os.path.realpath``: symbolic links in it, ``..``, relative paths), and two
    existing paths that are one file (a hard link, another mount of it) count as equal. An output is refused when it
    *is* an input, *lies inside* an input folder, or *contains* an input (a folder output replaced with
    ``--overwrite`` would delete it); when it lies inside a run record, a corpus or a gold set
    (:func:`record_around`: every file of those is an input of the verbs that read them, whether or not this verb
    names it), or is a run record or corpus and its option does not write one (:data:`RECORD_OPTIONS`); and when
    two outputs of the command are one path or one lies inside the other (the second written would replace or change
    the first). A path given as ``None`` or ``-`` (stdout, stdin) is skipped.

    Args:
        outputs: ``(option, path)`` of each path the command writes (a file or a folder).
        inputs: ``(option, path)`` of each file or folder the command reads (``""`` as option: the path alone).

    Raises:
        HarnessInputError: one line naming both paths, e.g. ``--out DS/tiny.jsonl: is the input DATASET
            DS/tiny.jsonl; refusing to write an output onto an input (choose a path outside every input)`` (exit 2).
    """

    def given(args: Sequence[PathArg]) -> list[tuple[str, object, Path]]:
        return [(label, p, _resolved(p)) for label, p in args if p is not None and str(p) != "-"]

    outs, ins = given(outputs), given(inputs)
    for n, (olabel, opath, o) in enumerate(outs):
        for ilabel, ipath, i in ins:
            rel = _overlap(o, i)
            if rel is not None:
                raise HarnessInputError(
                    f"{_named(olabel, opath)}: {rel} the input {_named(ilabel, ipath)}; refusing to write an output "
                    "onto an input (choose a path outside every input)"
                )
        for olabel2, opath2, o2 in outs[n + 1 :]:
            rel = _overlap(o, o2)
            if rel is not None:
                raise HarnessInputError(
                    f"{_named(olabel, opath)}: {rel} {_named(olabel2, opath2)}, which this command writes too; "
                    "give them apart"
                )
        held = output_kind(o)
        if held in RECORD_KINDS and RECORD_OPTIONS.get(olabel) != held:
            raise HarnessInputError(
                f"{_named(olabel, opath)}: is the {held} {o}, an input; refusing to write an output onto an input "
                "(choose a path outside every run record, gold set and corpus)"
            )
        around = record_around(o)
        if around is not None:
            raise HarnessInputError(
                f"{_named(olabel, opath)}: lies inside the {around[0]} {around[1]}, an input; refusing to write an "
                "output onto an input (choose a path outside every run record, gold set and corpus)"
            )


def check_output_location(out: str | Path, inputs: Sequence[str | Path | None] = (), *, field: str = "--out") -> None:
    """Refuse an output folder that is, contains, or lies inside any of ``inputs`` (:func:`check_outputs` with
    unnamed inputs).

    Raises:
        HarnessInputError: one line naming the output and the input it would overwrite.
    """
    check_outputs([(field, out)], [("", i) for i in inputs])
