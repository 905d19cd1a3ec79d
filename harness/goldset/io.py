"""Loading gold sets: a folder with one ``*.meta.json`` manifest and its JSONL records, or a bare JSONL file.

Layout of a dataset folder (the published eval v4 layout)::

    datasets/<name>-v<major>/
        <stem>.jsonl        one GoldRecord per line
        <stem>.meta.json    GoldManifest (``records_file`` may name the JSONL explicitly)
        README.md           how it was built (optional)
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import ValidationError

from harness.errors import HarnessInputError
from harness.goldset.schema import GoldManifest, GoldRecord
from harness.inputs import input_sha256
from harness.io import read_json, read_jsonl
from harness.nfc import nfc

__all__ = [
    "GoldSet",
    "load_goldset",
    "find_manifest",
    "parse_records",
    "format_validation_error",
    "records_file_in",
    "require_gold_documents",
]


@dataclass
class GoldSet:
    """A loaded gold set.

    Attributes:
        records: the questions in file order.
        manifest: the manifest, or ``None`` for a bare JSONL file.
        records_path: the JSONL file.
        manifest_path: the ``.meta.json`` file, if any.
        sha256: hex sha256 of the JSONL file's bytes (identifies the gold set in run records).
        line_of: ``{qid: line number}`` in the JSONL file.
    """

    records: list[GoldRecord]
    manifest: GoldManifest | None
    records_path: Path
    manifest_path: Path | None = None
    sha256: str = ""
    line_of: dict[str, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """Manifest name, else the file stem."""
        return self.manifest.name if self.manifest else self.records_path.stem

    @property
    def version(self) -> str:
        """Manifest version, else ``"unversioned"``."""
        return self.manifest.version if self.manifest else "unversioned"

    def by_id(self) -> dict[str, GoldRecord]:
        """``{qid: record}``."""
        return {r.qid: r for r in self.records}


PATH_KEYS = frozenset({"relpath"})
"""Record fields that name files and are kept as written (not NFC-normalised: see :mod:`harness.nfc`)."""

_UNION_TAG = re.compile(r"(int|str|float|bool|none|bytes|list|dict|tuple|set|[a-z-]+\[.*\]|[A-Z]\w*)")
"""A ``loc`` part pydantic adds for the member of a union (``chunk_id.int``), not a field name of ours."""


def _loc(parts: tuple) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _UNION_TAG.fullmatch(str(part)):
            continue
        else:
            out += f".{part}" if out else str(part)
    return out or "<record>"


def _got(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _expectation(err: dict) -> str:
    msg = str(err["msg"])
    if err["type"] in ("missing", "extra_forbidden"):
        return msg  # "Field required", "Extra inputs are not permitted"
    if msg.startswith("Value error, "):
        return msg[len("Value error, ") :]
    if msg.startswith("Input should be "):
        return "expected " + msg[len("Input should be ") :]
    return msg[:1].lower() + msg[1:]


def format_validation_error(exc: ValidationError) -> str:
    """One line for the first field a pydantic error names: ``field a.b[0].c: expected ..., got <JSON value>``.

    The alternatives of a union field (pydantic reports ``chunk_id.int`` and ``chunk_id.str`` separately) are
    merged into one expectation (``expected a valid integer or a valid string, got null``); the other fields in
    error are named after it (``(+2 more: x, y)``).
    """
    groups: dict[str, list[dict]] = {}
    for err in exc.errors():
        groups.setdefault(_loc(tuple(err["loc"])), []).append(err)
    loc, errs = next(iter(groups.items()))
    expectations = list(dict.fromkeys(_expectation(e) for e in errs))
    if len(expectations) > 1 and all(x.startswith("expected ") for x in expectations):
        text = "expected " + " or ".join(x[len("expected ") :] for x in expectations)
    else:
        text = "; ".join(expectations)
    if errs[0]["type"] not in ("missing", "extra_forbidden"):
        text += f", got {_got(errs[0].get('input'))}"
    others = list(groups)[1:]
    more = ""
    if others:
        named = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
        more = f" (+{len(others)} more: {named})"
    return f"field {loc}: {text}{more}"


def require_gold_documents(rec: GoldRecord, where: str) -> None:
    """Refuse a record with an empty ``gold_documents`` list (it would run and score 0 on every metric).

    Raises:
        HarnessInputError: ``<where>: record <id>: field gold_documents: ...``.
    """
    if not rec.gold_documents:
        raise HarnessInputError(
            f"{where}: record {rec.qid}: field gold_documents: empty; a question needs at least one gold document "
            "to be scored"
        )


def parse_records(rows: list[tuple[int, dict]], path: Path) -> tuple[list[GoldRecord], dict[str, int]]:
    """Validate raw JSONL rows into records, every string in NFC first (:func:`harness.nfc.nfc`: a question, id,
    category or quote written in NFD is the same record as in NFC), file paths (:data:`PATH_KEYS`) excepted.

    Raises:
        HarnessInputError: ``<file>:<line>: record <id>: field <path>: <message>`` (an empty ``gold_documents``
            list included: :func:`require_gold_documents`).
    """
    records: list[GoldRecord] = []
    line_of: dict[str, int] = {}
    for line, obj in rows:
        try:
            rec = GoldRecord.model_validate(nfc(obj, keep=PATH_KEYS))
        except ValidationError as exc:
            rid = obj.get("id", "?")
            raise HarnessInputError(f"{path}:{line}: record {rid}: {format_validation_error(exc)}") from None
        require_gold_documents(rec, f"{path}:{line}")
        records.append(rec)
        line_of.setdefault(rec.qid, line)
    return records, line_of


def find_manifest(folder: Path) -> Path:
    """The single ``*.meta.json`` in ``folder``.

    Raises:
        HarnessInputError: none or several manifests.
    """
    metas = sorted(folder.glob("*.meta.json"))
    if not metas:
        raise HarnessInputError(f"{folder}: no *.meta.json manifest in the dataset folder")
    if len(metas) > 1:
        raise HarnessInputError(f"{folder}: several manifests ({', '.join(m.name for m in metas)})")
    return metas[0]


def records_file_in(folder: Path, records_name: Any, default: str, *, where: Path) -> Path:
    """The records file a manifest names (``records_file``, else ``default``), which must be a file inside the
    dataset folder.

    ``records_file`` is a relative path without ``..`` parts; after symbolic links are resolved it still lies inside
    ``folder`` (so a manifest cannot make harness read, hash or copy a file from elsewhere: ``../../x.jsonl``,
    ``/etc/passwd`` and a link to one are refused alike).

    Raises:
        HarnessInputError: ``<manifest>: field records_file: ...`` (not a non-empty string, absolute, escaping the
            folder, not found).
    """
    if records_name is None:
        records_name = default
    if not isinstance(records_name, str) or not records_name.strip():
        raise HarnessInputError(f"{where}: field records_file: expected a non-empty string, got {_got(records_name)}")
    pure = PurePosixPath(records_name)
    if pure.is_absolute() or Path(records_name).is_absolute() or ".." in pure.parts or "\\" in records_name:
        raise HarnessInputError(
            f"{where}: field records_file: {records_name!r} is not a path inside the dataset folder {folder} "
            "(absolute paths and '..' are refused)"
        )
    records_path = folder / records_name
    if not records_path.resolve().is_relative_to(folder.resolve()):
        raise HarnessInputError(
            f"{where}: field records_file: {records_name!r} leads outside the dataset folder {folder} "
            f"(a symbolic link to {records_path.resolve()}); refusing to read it"
        )
    if not records_path.is_file():
        raise HarnessInputError(f"{where}: field records_file: {records_name} not found in {folder}")
    return records_path


def load_goldset(path: str | Path) -> GoldSet:
    """Load a gold set from a dataset folder or a JSONL file.

    Args:
        path: a folder holding ``<stem>.meta.json`` and ``<stem>.jsonl`` (or the file named by the manifest's
            ``records_file``, a path inside the folder: :func:`records_file_in`), or a JSONL file (a manifest beside
            it with the same stem is used if present).

    Returns:
        The :class:`GoldSet`; records are validated against :class:`GoldRecord`, the manifest against
        :class:`GoldManifest`, every string of both in NFC (:mod:`harness.nfc`; ``relpath`` kept); ``sha256`` is
        that of the file's bytes as written.

    Raises:
        HarnessInputError: missing folder or file, malformed JSON (``file:line``), a record that does not fit the
            schema (``file:line: record id: field ...``; an empty ``gold_documents`` list among them), a manifest
            that does not fit, a ``records_file`` outside the folder.
    """
    path = Path(path)
    manifest_path: Path | None
    if path.is_dir():
        manifest_path = find_manifest(path)
        raw = read_json(manifest_path)
        stem = manifest_path.name[: -len(".meta.json")]
        records_name = raw.get("records_file") if isinstance(raw, dict) else None
        records_path = records_file_in(path, records_name, f"{stem}.jsonl", where=manifest_path)
    elif path.is_file():
        records_path = path
        cand = path.with_name(path.name[: -len(".jsonl")] + ".meta.json") if path.name.endswith(".jsonl") else None
        manifest_path = cand if cand is not None and cand.exists() else None
        raw = read_json(manifest_path) if manifest_path else None
    else:
        raise HarnessInputError(f"{path}: gold set not found")
    manifest = None
    if manifest_path is not None:
        if not isinstance(raw, dict):
            raise HarnessInputError(f"{manifest_path}: expected a JSON object")
        try:
            manifest = GoldManifest.model_validate(nfc(raw))
        except ValidationError as exc:
            raise HarnessInputError(f"{manifest_path}: {format_validation_error(exc)}") from None
    rows = read_jsonl(records_path)
    if not rows:
        raise HarnessInputError(f"{records_path}: no records")
    records, line_of = parse_records(rows, records_path)
    return GoldSet(
        records=records,
        manifest=manifest,
        records_path=records_path,
        manifest_path=manifest_path,
        sha256=input_sha256(records_path),  # of the bytes read (a pipe cannot be read twice)
        line_of=line_of,
    )
