"""Contributed corrections: apply JSONL correction files to a gold set in memory, diff it, describe a new version.

Correction file format (JSONL, one object per line, applied in file order; several files apply one after the other,
as one new version):

* an optional **header**, the first line: ``{"correction": {"author": "...", "description": "..."}}`` (both
  optional, non-empty strings): who proposes the file and what it does as a whole; kept in the change log. Files
  without a header (a contribution as submitted) get their author and description from the command line
  (``--author``, ``--description``), or none;
* a **full replacement record**: any gold record (it must have ``id`` and no ``patch`` key); it replaces the record
  with that id. An extra ``"rationale"`` key (a string) is the line's rationale and not part of the record;
* a **patch**: ``{"id": <record id>, "patch": [<RFC 6902 operations>], "rationale"?: "..."}`` applied with the
  ``jsonpatch`` library (RFC 6902; a failing ``test`` operation rejects the correction). The line's rationale is
  its ``rationale`` key or, as contributions write it, a ``rationale`` member of its leading ``test`` operation
  (RFC 6902 section 4 lets an operation carry members it does not define); a ``rationale`` on any other operation,
  or on both, is an error, so no rationale is silently lost.

A line targets the first record whose *current* id (after the lines before it) equals its ``id`` (ids are compared
as strings). Every corrected record must still fit the record schema. Problems with a file itself (malformed JSON,
a misplaced header, an unknown id, a patch that is not valid RFC 6902 or cannot be applied, a result that does not
fit the schema) raise :class:`~harness.errors.HarnessInputError` (exit code 2) naming ``<file>:<line>``, the record
and the field.

The corrected set is a new **minor version**: :func:`bump_minor` (``1.0.0`` -> ``1.1.0``, ``4.0.0-pilot`` ->
``4.1.0-pilot``), ``records_sha256`` of the new records file, and a change-log entry naming every correction file
(sha256, author, description, each line's record and rationale) and the records and fields changed. Untouched
records keep their original JSONL line byte for byte; changed ones are serialised in the style of the file's first
record. The diff of each record is complete (:mod:`harness.goldset.diff`). Everything here is pure: it reads the
gold set and the correction files and works in memory; :func:`harness.validate.apply_correction` validates the
corrected set and writes the new version atomically, only when it validates.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import jsonpatch
import jsonpointer
from pydantic import ValidationError

from harness.errors import HarnessInputError
from harness.goldset.diff import FieldChange, diff_values
from harness.goldset.io import GoldSet, format_validation_error, load_goldset, require_gold_documents
from harness.goldset.schema import GoldManifest, GoldRecord
from harness.io import read_json, read_jsonl, sha256_bytes, sha256_file

__all__ = [
    "CorrectedSet",
    "CorrectionEntry",
    "CorrectionFile",
    "FieldChange",
    "RecordDiff",
    "bump_minor",
    "correct_goldset",
    "diff_values",
    "read_correction_file",
    "read_corrections",
]


@dataclass(frozen=True)
class CorrectionEntry:
    """One line of a correction file.

    Attributes:
        line: 1-based line number.
        id: the target record id (as a string).
        kind: ``"replace"`` (``record`` set) or ``"patch"`` (``patch`` set).
        record: the replacement record (its ``rationale`` key removed).
        patch: the RFC 6902 operations (the leading ``test`` operation's ``rationale`` member removed).
        rationale: why, in the author's words, or ``None``.
    """

    line: int
    id: str
    kind: Literal["replace", "patch"]
    record: dict | None = None
    patch: list | None = None
    rationale: str | None = None


@dataclass(frozen=True)
class CorrectionFile:
    """A parsed correction file.

    Attributes:
        path: the file.
        sha256: sha256 of its bytes.
        author, description: from its header, else from the command line, else ``None``.
        entries: its lines, in file order.
    """

    path: Path
    sha256: str
    author: str | None
    description: str | None
    entries: tuple[CorrectionEntry, ...]

    def to_dict(self) -> dict[str, Any]:
        """``{"file" (name), "sha256", "author", "description"}``."""
        return {"file": self.path.name, "sha256": self.sha256, "author": self.author, "description": self.description}


@dataclass(frozen=True)
class RecordDiff:
    """Field-level diff of one corrected record.

    Attributes:
        id: the id before the correction; ``new_id`` after.
        sources: ``({"file", "line", "author", "rationale"}, ...)``: the correction lines that touched it.
        changes: every difference (:func:`harness.goldset.diff.diff_values`).
    """

    id: str
    new_id: str
    sources: tuple[dict, ...]
    changes: tuple[FieldChange, ...]

    def to_dict(self) -> dict:
        """JSON-ready form."""
        return {
            "id": self.id,
            "new_id": self.new_id,
            "sources": [dict(s) for s in self.sources],
            "changes": [c.to_dict() for c in self.changes],
        }


@dataclass
class CorrectedSet:
    """A gold set with corrections applied in memory (nothing written).

    Attributes:
        goldset: the corrected set; its manifest carries the bumped version, new records_sha256 and change-log entry.
        original: the set as loaded.
        lines: line of each record in the original JSONL (for messages).
        diffs: one per record the corrections touched, in file order.
        records_text: exact text of the new records file.
        manifest_raw: the new manifest as a JSON object (key order of the original kept).
        files: the correction files, in the order applied.
        new_version: the bumped version.
    """

    goldset: GoldSet
    original: GoldSet
    lines: list[int | None]
    diffs: list[RecordDiff]
    records_text: str
    manifest_raw: dict
    files: list[CorrectionFile]
    new_version: str

    @property
    def changed_ids(self) -> list[str]:
        """Ids (after correction) of the records whose content changed."""
        return [d.new_id for d in self.diffs if d.changes]


def _validate_ops(path: Path, line: int, rid: str, ops: Any) -> list:
    if not isinstance(ops, list):
        raise HarnessInputError(f"{path}:{line}: record {rid}: field patch: must be a list of RFC 6902 operations")
    for j, op in enumerate(ops):
        try:
            jsonpatch.JsonPatch([op])
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
            raise HarnessInputError(
                f"{path}:{line}: record {rid}: field patch[{j}]: not a valid RFC 6902 operation ({exc})"
            ) from None
    return ops


def _text(path: Path, line: int, field: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise HarnessInputError(f"{path}:{line}: field {field}: expected a non-empty string, got {value!r}")
    return value


def _rationale(path: Path, line: int, rid: str, obj: dict, ops: list) -> tuple[list, str | None]:
    """The patch without rationale members, and the line's rationale (see the module docstring)."""
    where = f"{path}:{line}: record {rid}: field"
    found = None
    if "rationale" in obj:
        found = _text(path, line, "rationale", obj["rationale"])
    clean = []
    for j, op in enumerate(ops):
        if isinstance(op, dict) and "rationale" in op:
            if j != 0 or op.get("op") != "test":
                raise HarnessInputError(
                    f"{where} patch[{j}].rationale: a rationale belongs on the line or on its leading test operation"
                )
            if found is not None:
                raise HarnessInputError(f"{where} patch[0].rationale: the line has a rationale already")
            found = _text(path, line, f"patch[{j}].rationale", op["rationale"])
            op = {k: v for k, v in op.items() if k != "rationale"}
        clean.append(op)
    return clean, found


def _header(path: Path, line: int, obj: dict) -> dict[str, str]:
    extra = sorted(set(obj) - {"correction"})
    if extra:
        raise HarnessInputError(f"{path}:{line}: field {extra[0]}: a header line holds only 'correction'")
    head = obj["correction"]
    if not isinstance(head, dict):
        raise HarnessInputError(f"{path}:{line}: field correction: expected an object {{author, description}}")
    unknown = sorted(set(head) - {"author", "description"})
    if unknown:
        raise HarnessInputError(f"{path}:{line}: field correction.{unknown[0]}: unknown (author, description)")
    return {k: _text(path, line, f"correction.{k}", v) for k, v in head.items()}


def read_correction_file(
    path: str | Path, *, author: str | None = None, description: str | None = None
) -> CorrectionFile:
    """Parse a correction file (format: module docstring).

    Args:
        path: the JSONL file.
        author, description: defaults for a file whose header does not give them (``--author``,
            ``--description``); a header's own value wins, so one command can apply a contribution without a
            header and a maintainer file with one.

    Raises:
        HarnessInputError: missing or malformed file, a file without corrections, a header that is not the first
            line or holds other keys, a line without a string/integer ``id``, a patch line with keys other than
            ``id``, ``patch``, ``rationale``, operations that are not valid RFC 6902, a misplaced rationale.
    """
    path = Path(path)
    rows = read_jsonl(path)
    meta: dict[str, str] = {}
    out = []
    for k, (line, obj) in enumerate(rows):
        if "correction" in obj and "id" not in obj:
            if k != 0:
                raise HarnessInputError(f"{path}:{line}: field correction: the header must be the first line")
            meta = _header(path, line, obj)
            continue
        rid = obj.get("id")
        if isinstance(rid, bool) or not isinstance(rid, str | int) or (isinstance(rid, str) and not rid):
            raise HarnessInputError(f"{path}:{line}: field id: missing or not a string/integer")
        rid = str(rid)
        if "patch" in obj:
            extra = sorted(set(obj) - {"id", "patch", "rationale"})
            if extra:
                raise HarnessInputError(
                    f"{path}:{line}: record {rid}: field {extra[0]}: a patch line holds only 'id', 'patch' and "
                    "'rationale'"
                )
            ops = _validate_ops(path, line, rid, obj["patch"])
            ops, why = _rationale(path, line, rid, obj, ops)
            out.append(CorrectionEntry(line, rid, "patch", patch=ops, rationale=why))
        else:
            why = _text(path, line, "rationale", obj["rationale"]) if "rationale" in obj else None
            record = {k2: v for k2, v in obj.items() if k2 != "rationale"}
            out.append(CorrectionEntry(line, rid, "replace", record=record, rationale=why))
    if not out:
        raise HarnessInputError(f"{path}: no corrections in the file")
    return CorrectionFile(
        path=path,
        sha256=sha256_file(path),
        author=meta.get("author", author),
        description=meta.get("description", description),
        entries=tuple(out),
    )


def read_corrections(path: str | Path) -> list[CorrectionEntry]:
    """The lines of a correction file (:func:`read_correction_file` without the header).

    Raises:
        HarnessInputError: see :func:`read_correction_file`.
    """
    return list(read_correction_file(path).entries)


def bump_minor(version: str, *, where: str = "manifest") -> str:
    """Next minor version: ``MAJOR.MINOR[.PATCH][SUFFIX]`` -> ``MAJOR.(MINOR+1).0[SUFFIX]``.

    Raises:
        HarnessInputError: the version is not of that form.
    """
    m = re.fullmatch(r"(\d+)\.(\d+)(?:\.(\d+))?(.*)", version.strip())
    if m is None:
        raise HarnessInputError(f"{where}: field version: {version!r} is not MAJOR.MINOR[.PATCH]")
    return f"{m.group(1)}.{int(m.group(2)) + 1}.0{m.group(4)}"


def _serializer(first_line: str, first_obj: dict):
    for seps in ((",", ":"), (", ", ": ")):
        for ea in (False, True):
            if json.dumps(first_obj, ensure_ascii=ea, separators=seps) == first_line.strip():
                return lambda o, s=seps, e=ea: json.dumps(o, ensure_ascii=e, separators=s)
    return lambda o: json.dumps(o, ensure_ascii=False)


def correct_goldset(
    dataset: str | Path | GoldSet,
    corrections: str | Path | CorrectionFile | Sequence[str | Path | CorrectionFile],
    *,
    today: dt.date | None = None,
) -> CorrectedSet:
    """Apply correction files, in order, to a copy of a gold set in memory: one new minor version.

    Args:
        dataset: a dataset folder (or JSONL with a manifest beside it), or an already loaded :class:`GoldSet`.
        corrections: a correction file, a parsed :class:`CorrectionFile`, or several (applied in the order given;
            a later file sees the records as the earlier ones left them).
        today: date of the change-log entry (default: today, UTC).

    Returns:
        The :class:`CorrectedSet`; the input is not modified.

    Raises:
        HarnessInputError: see the module docstring (exit code 2); a gold set without a manifest; no file given.
    """
    gs = dataset if isinstance(dataset, GoldSet) else load_goldset(dataset)
    if isinstance(corrections, str | Path | CorrectionFile):
        corrections = [corrections]
    files = [c if isinstance(c, CorrectionFile) else read_correction_file(c) for c in corrections]
    if not files:
        raise HarnessInputError("--correction: no correction file given")
    if gs.manifest is None or gs.manifest_path is None:
        raise HarnessInputError(f"{gs.records_path}: field manifest: corrections need a gold set with a manifest")
    rows = read_jsonl(gs.records_path)
    text_lines = gs.records_path.read_text(encoding="utf-8").splitlines()
    original = [obj for _, obj in rows]
    current = [copy.deepcopy(obj) for obj in original]
    models: list[GoldRecord] = list(gs.records)
    touched: dict[int, list[dict]] = {}
    for cf in files:
        cpath = cf.path
        for e in cf.entries:
            k = next((i for i, obj in enumerate(current) if str(obj.get("id")) == e.id), None)
            if k is None:
                raise HarnessInputError(f"{cpath}:{e.line}: field id: no record with id {e.id!r} in {gs.records_path}")
            if e.kind == "replace":
                new = copy.deepcopy(e.record)
            else:
                new = current[k]
                for j, op in enumerate(e.patch or []):
                    try:
                        new = jsonpatch.JsonPatch([op]).apply(new, in_place=False)
                    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
                        raise HarnessInputError(
                            f"{cpath}:{e.line}: record {e.id}: field patch[{j}]: cannot apply "
                            f"{op.get('op')} {op.get('path')!r} ({exc})"
                        ) from None
                if not isinstance(new, dict):
                    raise HarnessInputError(
                        f"{cpath}:{e.line}: record {e.id}: field patch: the result is not an object"
                    )
            try:
                models[k] = GoldRecord.model_validate(new)
            except ValidationError as exc:
                raise HarnessInputError(f"{cpath}:{e.line}: record {e.id}: {format_validation_error(exc)}") from None
            require_gold_documents(models[k], f"{cpath}:{e.line}")
            current[k] = new
            touched.setdefault(k, []).append(
                {"file": cpath.name, "line": e.line, "author": cf.author, "rationale": e.rationale}
            )

    diffs = [
        RecordDiff(
            id=str(original[k].get("id")),
            new_id=str(current[k].get("id")),
            sources=tuple(touched[k]),
            changes=tuple(diff_values(original[k], current[k])),
        )
        for k in sorted(touched)
    ]
    changed = {k for k, d in zip(sorted(touched), diffs, strict=True) if d.changes}
    dump = _serializer(text_lines[rows[0][0] - 1], rows[0][1])
    out_lines = [dump(current[k]) if k in changed else text_lines[ln - 1] for k, (ln, _) in enumerate(rows)]
    records_text = "\n".join(out_lines) + "\n"
    records_sha = sha256_bytes(records_text.encode("utf-8"))

    raw = read_json(gs.manifest_path)
    new_version = bump_minor(gs.manifest.version, where=str(gs.manifest_path))
    manifest_raw = copy.deepcopy(raw)
    manifest_raw["version"] = new_version
    manifest_raw["records_sha256"] = records_sha
    changelog = list(manifest_raw.get("changelog") or [])
    changelog.append(
        {
            "version": new_version,
            "previous_version": gs.manifest.version,
            "date": (today or dt.datetime.now(dt.UTC).date()).isoformat(),
            "corrections": [
                cf.to_dict() | {"lines": [{"line": e.line, "id": e.id, "rationale": e.rationale} for e in cf.entries]}
                for cf in files
            ],
            "previous_records_sha256": gs.sha256,
            "records_sha256": records_sha,
            "records_changed": [d.new_id for d in diffs if d.changes],
            "fields_changed": {d.new_id: [c.path for c in d.changes] for d in diffs if d.changes},
        }
    )
    manifest_raw["changelog"] = changelog
    try:
        manifest = GoldManifest.model_validate(manifest_raw)
    except ValidationError as exc:  # pragma: no cover - the original manifest already validated
        raise HarnessInputError(f"{gs.manifest_path}: {format_validation_error(exc)}") from None
    corrected = GoldSet(
        records=models,
        manifest=manifest,
        records_path=gs.records_path,
        manifest_path=gs.manifest_path,
        sha256=records_sha,
        line_of={},
    )
    lines: list[int | None] = [ln for ln, _ in rows]
    for rec, ln in zip(models, lines, strict=True):
        corrected.line_of.setdefault(rec.qid, ln)
    return CorrectedSet(
        goldset=corrected,
        original=gs,
        lines=lines,
        diffs=diffs,
        records_text=records_text,
        manifest_raw=manifest_raw,
        files=files,
        new_version=new_version,
    )
