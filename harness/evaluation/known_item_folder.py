"""A known-item output folder verified before it is trusted (issue 44 item 4): the files ``harness known-item``
wrote are what it wrote, every outcome is of its type and range, and the summary's means are the outcomes' means.

``harness known-item --out DIR`` records in ``summary.json`` (field ``content_sha256``, written last, as a run
record's manifest does: :mod:`harness.evaluation.runs`) the sha256 of ``outcomes.jsonl.gz`` and
``per_document.jsonl`` (:func:`folder_hashes`). :func:`verify_folder` reads a folder back in this order, each
problem one line naming the file, the record (line) and the field (exit 2, :class:`~harness.errors.HarnessInputError`):

1. **Types and ranges** of every record of ``outcomes.jsonl.gz`` (:func:`check_outcome`): ``system`` one the summary
   lists, ``doc_id`` a non-empty string, ``chunk_index`` an integer >= 0, ``hit`` the integer 0 or 1 (not ``true``,
   not 5), ``rank`` ``null`` or an integer >= 1 with ``hit = 1`` exactly when ``rank = 1`` (rule 5 of
   :mod:`harness.studies.known_item`), the flags ``tie``, ``tie_decided_hit``, ``empty_query`` booleans and
   ``n_words`` an integer >= 0 when present; a (system, chunk-query) given twice.
2. **The summary's numbers against the outcomes**: per system, ``queries`` (records), ``hits`` (their sum),
   ``micro_hit1`` (their mean) and ``mrr_first_same_doc`` (the mean of ``1 / rank``), each where the summary records
   it; a system with no records or records of a system the summary does not list.
3. **The sha256** of each file listed in ``content_sha256``. A folder written before the hashes (no
   ``content_sha256``) passes on 1 and 2 alone, with one notice line saying so.

The hashes detect edits and damage, not an adversary who also rewrites ``summary.json`` (as for run records); the
checks of 1 and 2 still hold then.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessInputError
from harness.io import read_json, read_jsonl, sha256_file, stderr_notice

__all__ = ["HASHED_FILES", "KnownItemFolder", "check_outcome", "folder_hashes", "verify_folder"]

HASHED_FILES = ("outcomes.jsonl.gz", "per_document.jsonl")
"""The files of a known-item folder whose sha256 ``summary.json`` records (field ``content_sha256``; written by
:func:`harness.studies.known_item.run_known_item`, whose ``study.HASHED_FILES`` names the same files)."""

_FLAGS = ("tie", "tie_decided_hit", "empty_query")


@dataclass
class KnownItemFolder:
    """A verified known-item folder: ``summary`` (``summary.json``) and ``records`` (``(line, record)`` of
    ``outcomes.jsonl.gz``, every one checked by :func:`check_outcome`); ``hashed``: whether the files were verified
    against recorded sha256s (``False``: a folder written before them)."""

    folder: Path
    summary: dict
    records: list[tuple[int, dict]]
    hashed: bool


def folder_hashes(folder: str | Path) -> dict[str, str]:
    """``{file: hex sha256}`` of the :data:`HASHED_FILES` of a known-item folder (those present)."""
    root = Path(folder)
    return {name: sha256_file(root / name) for name in HASHED_FILES if (root / name).is_file()}


def _int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def check_outcome(rec: dict, path: Path, line: int, systems: set[str] | None) -> str:
    """The problem of one ``outcomes.jsonl.gz`` record, raised (module docstring, rule 1); returns its system.

    Args:
        rec: the record; path, line: where it was read (named in the message); systems: the names the summary lists
            (``None``: any string).

    Raises:
        HarnessInputError: ``<file>:<line>: record <doc>#<chunk> of system <name>: field <f>: <why>``.
    """
    doc, ci, sys_name = rec.get("doc_id"), rec.get("chunk_index"), rec.get("system")

    def bad(field: str, why: str) -> HarnessInputError:
        return HarnessInputError(f"{path}:{line}: record {doc}#{ci} of system {sys_name}: field {field}: {why}")

    for field in ("system", "doc_id", "chunk_index", "hit"):
        if field not in rec:
            raise bad(field, "missing")
    if not isinstance(sys_name, str) or (systems is not None and sys_name not in systems):
        raise bad("system", f"{sys_name!r} is not a system the summary lists ({', '.join(sorted(systems or ()))})")
    if not isinstance(doc, str) or not doc:
        raise bad("doc_id", f"must be a non-empty string, got {doc!r}")
    if not _int(ci) or ci < 0:
        raise bad("chunk_index", f"must be an integer >= 0, got {ci!r}")
    hit, rank = rec["hit"], rec.get("rank")
    if not _int(hit) or hit not in (0, 1):
        raise bad("hit", f"must be the integer 0 or 1, got {hit!r}")
    if rank is not None and (not _int(rank) or rank < 1):
        raise bad("rank", f"must be null or an integer >= 1, got {rank!r}")
    if (hit == 1) != (rank == 1):
        raise bad("hit", f"{hit} disagrees with rank {rank!r} (hit is 1 exactly when the rank is 1)")
    for field in _FLAGS:
        if field in rec and not isinstance(rec[field], bool):
            raise bad(field, f"must be true or false, got {rec[field]!r}")
    if "n_words" in rec and (not _int(rec["n_words"]) or rec["n_words"] < 0):
        raise bad("n_words", f"must be an integer >= 0, got {rec['n_words']!r}")
    return sys_name


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _check_means(summary_path: Path, outcomes: Path, systems: dict, tallies: dict) -> None:
    """Rule 2 of the module docstring."""
    for name, s in systems.items():
        n, hits, inv_rank = tallies.get(name, (0, 0, 0.0))
        if n == 0:
            raise HarnessInputError(f"{outcomes}: no record of system {name!r}, which {summary_path} lists")
        if not isinstance(s, dict):
            raise HarnessInputError(f"{summary_path}: field systems.{name}: must be an object")
        for field, have, exact in (
            ("queries", n, True),
            ("hits", hits, True),
            ("micro_hit1", hits / n, False),
            ("mrr_first_same_doc", inv_rank / n, False),
        ):
            want = s.get(field)
            if want is None:
                continue
            if isinstance(want, bool) or not isinstance(want, int | float) or not math.isfinite(want):
                raise HarnessInputError(f"{summary_path}: field systems.{name}.{field}: not a finite number: {want!r}")
            if (want != have) if exact else not _close(float(want), float(have)):
                raise HarnessInputError(
                    f"{summary_path}: field systems.{name}.{field}: {want!r} differs from {have!r} computed from "
                    f"{outcomes}: the folder was changed after harness wrote it; refusing it"
                )


def _check_hashes(folder: Path, summary_path: Path, listed) -> None:
    """Rule 3 of the module docstring."""
    if not isinstance(listed, dict) or not all(isinstance(v, str) for v in listed.values()):
        raise HarnessInputError(f"{summary_path}: field content_sha256: must map file names to sha256 strings")
    for name in HASHED_FILES:
        if name not in listed:
            raise HarnessInputError(f"{summary_path}: field content_sha256: does not list {name}")
    for name, want in listed.items():
        f = folder / name
        if name not in HASHED_FILES or not f.is_file():
            raise HarnessInputError(f"{f}: listed in {summary_path} field content_sha256 but not a file of the folder")
        got = sha256_file(f)
        if got != want:
            raise HarnessInputError(
                f"{f}: sha256 {got[:12]}… differs from {want[:12]}… recorded in {summary_path} field content_sha256: "
                "the file was changed after harness wrote the folder; refusing it"
            )


def verify_folder(folder: str | Path, *, log: Callable[[str], None] | None = stderr_notice) -> KnownItemFolder:
    """Read and verify a known-item output folder (module docstring).

    Args:
        folder: the output folder of ``harness known-item``.
        log: receives one notice line for a folder written before its files were hashed (``None``: silent).

    Returns:
        The :class:`KnownItemFolder`.

    Raises:
        HarnessInputError: a missing or malformed ``summary.json`` / ``outcomes.jsonl.gz`` (a damaged gzip included),
            or any problem of rules 1-3, one line naming the file, the record and the field.
    """
    root = Path(folder)
    summary_path, outcomes = root / "summary.json", root / "outcomes.jsonl.gz"
    summary = read_json(summary_path)
    if not isinstance(summary, dict):
        raise HarnessInputError(f"{summary_path}: must hold a JSON object")
    systems = summary.get("systems")
    if not isinstance(systems, dict) or not systems:
        raise HarnessInputError(f"{summary_path}: field systems: must be an object naming the systems")
    records = read_jsonl(outcomes)
    names = set(systems)
    seen: set[tuple[str, str, int]] = set()
    tallies: dict[str, tuple[int, int, float]] = {}
    for line, rec in records:
        name = check_outcome(rec, outcomes, line, names)
        key = (name, rec["doc_id"], rec["chunk_index"])
        if key in seen:
            raise HarnessInputError(
                f"{outcomes}:{line}: record {key[1]}#{key[2]} of system {name}: given twice (fields doc_id, "
                "chunk_index)"
            )
        seen.add(key)
        n, hits, inv = tallies.get(name, (0, 0, 0.0))
        rank = rec.get("rank")
        tallies[name] = (n + 1, hits + rec["hit"], inv + (1.0 / rank if rank else 0.0))
    _check_means(summary_path, outcomes, systems, tallies)
    listed = summary.get("content_sha256")
    if listed is None:
        if log is not None:
            log(
                f"{summary_path}: no content_sha256 (a known-item folder written before its files were hashed): "
                "outcomes.jsonl.gz is checked for types, ranges and the summary's means only"
            )
    else:
        _check_hashes(root, summary_path, listed)
    return KnownItemFolder(root, summary, records, listed is not None)
