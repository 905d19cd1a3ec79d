"""Contributed corrections: apply a JSONL correction file to a gold set in memory, diff it, write a new minor version.

Correction file format (JSONL, one object per line, applied in file order):

* a **full replacement record**: any gold record (it must have ``id`` and no ``patch`` key); it replaces the record
  with that id;
* a **patch**: ``{"id": <record id>, "patch": [<RFC 6902 operations>]}`` applied with the ``jsonpatch`` library
  (RFC 6902; a failing ``test`` operation rejects the correction).

A line targets the first record whose *current* id (after the lines before it) equals its ``id`` (ids are compared
as strings). Every corrected record must still fit the record schema. Problems with the file itself (malformed
JSON, an unknown id, a patch that is not valid RFC 6902 or cannot be applied, a result that does not fit the schema)
raise :class:`~harness.errors.HarnessInputError` (exit code 2) naming ``<file>:<line>``, the record and the field.

The corrected set is a new **minor version**: :func:`bump_minor` (``1.0.0`` -> ``1.1.0``, ``4.0.0-pilot`` ->
``4.1.0-pilot``), ``records_sha256`` of the new records file, and a change-log entry naming the records changed.
Untouched records keep their original JSONL line byte for byte; changed ones are serialised in the style of the
file's first record. Everything here is pure: it reads the gold set and the correction file and works in memory;
:func:`harness.validate.apply_correction` validates the corrected set and writes the new version atomically, only
when it validates.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import jsonpatch
import jsonpointer
from pydantic import ValidationError

from harness.errors import HarnessInputError
from harness.goldset.io import GoldSet, format_validation_error, load_goldset
from harness.goldset.schema import GoldManifest, GoldRecord
from harness.io import read_json, read_jsonl, sha256_bytes, sha256_file

__all__ = [
    "CorrectedSet",
    "CorrectionEntry",
    "FieldChange",
    "RecordDiff",
    "bump_minor",
    "correct_goldset",
    "diff_values",
    "read_corrections",
]


@dataclass(frozen=True)
class CorrectionEntry:
    """One line of a correction file.

    Attributes:
        line: 1-based line number.
        id: the target record id (as a string).
        kind: ``"replace"`` (``record`` set) or ``"patch"`` (``patch`` set).
    """

    line: int
    id: str
    kind: Literal["replace", "patch"]
    record: dict | None = None
    patch: list | None = None


@dataclass(frozen=True)
class FieldChange:
    """One changed leaf: ``path`` is an RFC 6901 JSON pointer into the record; ``op`` is added/removed/changed."""

    path: str
    op: Literal["added", "removed", "changed"]
    old: Any = None
    new: Any = None


@dataclass(frozen=True)
class RecordDiff:
    """Field-level diff of one corrected record (``id`` before, ``new_id`` after, correction ``lines``)."""

    id: str
    new_id: str
    lines: tuple[int, ...]
    changes: tuple[FieldChange, ...]

    def to_dict(self) -> dict:
        """JSON-ready form."""
        return {
            "id": self.id,
            "new_id": self.new_id,
            "lines": list(self.lines),
            "changes": [{"path": c.path, "op": c.op, "old": c.old, "new": c.new} for c in self.changes],
        }


@dataclass
class CorrectedSet:
    """A gold set with a correction applied in memory (nothing written).

    Attributes:
        goldset: the corrected set; its manifest carries the bumped version, new records_sha256 and change-log entry.
        original: the set as loaded.
        lines: line of each record in the original JSONL (for messages).
        diffs: one per record the correction touched, in file order.
        records_text: exact text of the new records file.
        manifest_raw: the new manifest as a JSON object (key order of the original kept).
        correction_file: the correction file.
        correction_sha256: its sha256.
        new_version: the bumped version.
    """

    goldset: GoldSet
    original: GoldSet
    lines: list[int | None]
    diffs: list[RecordDiff]
    records_text: str
    manifest_raw: dict
    correction_file: Path
    correction_sha256: str
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


def read_corrections(path: str | Path) -> list[CorrectionEntry]:
    """Parse a correction file.

    Returns:
        The entries in file order.

    Raises:
        HarnessInputError: missing or malformed file, an empty file, a line without a string/integer ``id``, a patch
            line with other keys or with operations that are not valid RFC 6902.
    """
    path = Path(path)
    rows = read_jsonl(path)
    if not rows:
        raise HarnessInputError(f"{path}: no corrections in the file")
    out = []
    for line, obj in rows:
        rid = obj.get("id")
        if isinstance(rid, bool) or not isinstance(rid, str | int) or (isinstance(rid, str) and not rid):
            raise HarnessInputError(f"{path}:{line}: field id: missing or not a string/integer")
        rid = str(rid)
        if "patch" in obj:
            extra = sorted(set(obj) - {"id", "patch"})
            if extra:
                raise HarnessInputError(
                    f"{path}:{line}: record {rid}: field {extra[0]}: a patch line holds only 'id' and 'patch'"
                )
            out.append(CorrectionEntry(line, rid, "patch", patch=_validate_ops(path, line, rid, obj["patch"])))
        else:
            out.append(CorrectionEntry(line, rid, "replace", record=obj))
    return out


def _ptr(parts: list) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def diff_values(old: Any, new: Any, _path: list | None = None) -> list[FieldChange]:
    """Leaf-level differences between two JSON values (dicts by key, lists by position).

    Returns:
        Changes in document order (keys of ``old`` first, then keys only in ``new``); ``1`` and ``1.0`` or ``True``
        differ (JSON types are compared too).
    """
    path = _path or []
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[FieldChange] = []
        for k in old:
            if k in new:
                out += diff_values(old[k], new[k], path + [k])
            else:
                out.append(FieldChange(_ptr(path + [k]), "removed", old=old[k]))
        for k in new:
            if k not in old:
                out.append(FieldChange(_ptr(path + [k]), "added", new=new[k]))
        return out
    if isinstance(old, list) and isinstance(new, list):
        out = []
        for i in range(min(len(old), len(new))):
            out += diff_values(old[i], new[i], path + [i])
        for i in range(len(new), len(old)):
            out.append(FieldChange(_ptr(path + [i]), "removed", old=old[i]))
        for i in range(len(old), len(new)):
            out.append(FieldChange(_ptr(path + [i]), "added", new=new[i]))
        return out
    if type(old) is not type(new) or old != new:
        return [FieldChange(_ptr(path), "changed", old=old, new=new)]
    return []


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
    dataset: str | Path | GoldSet, correction_file: str | Path, *, today: dt.date | None = None
) -> CorrectedSet:
    """Apply a correction file to a copy of a gold set in memory.

    Args:
        dataset: a dataset folder (or JSONL with a manifest beside it), or an already loaded :class:`GoldSet`.
        correction_file: the JSONL correction file.
        today: date of the change-log entry (default: today, UTC).

    Returns:
        The :class:`CorrectedSet`; the input is not modified.

    Raises:
        HarnessInputError: see the module docstring (exit code 2); a gold set without a manifest.
    """
    gs = dataset if isinstance(dataset, GoldSet) else load_goldset(dataset)
    cpath = Path(correction_file)
    entries = read_corrections(cpath)
    if gs.manifest is None or gs.manifest_path is None:
        raise HarnessInputError(f"{gs.records_path}: field manifest: corrections need a gold set with a manifest")
    rows = read_jsonl(gs.records_path)
    text_lines = gs.records_path.read_text(encoding="utf-8").splitlines()
    original = [obj for _, obj in rows]
    current = [copy.deepcopy(obj) for obj in original]
    models: list[GoldRecord] = list(gs.records)
    touched: dict[int, list[int]] = {}
    for e in entries:
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
                raise HarnessInputError(f"{cpath}:{e.line}: record {e.id}: field patch: the result is not an object")
        try:
            models[k] = GoldRecord.model_validate(new)
        except ValidationError as exc:
            raise HarnessInputError(f"{cpath}:{e.line}: record {e.id}: {format_validation_error(exc)}") from None
        current[k] = new
        touched.setdefault(k, []).append(e.line)

    diffs = [
        RecordDiff(
            id=str(original[k].get("id")),
            new_id=str(current[k].get("id")),
            lines=tuple(touched[k]),
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
            "correction_file": cpath.name,
            "correction_sha256": sha256_file(cpath),
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
        correction_file=cpath,
        correction_sha256=sha256_file(cpath),
        new_version=new_version,
    )
