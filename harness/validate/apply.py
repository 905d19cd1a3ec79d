"""Write a corrected gold set as a new minor version, only when it validates (``harness goldset apply``).

This is the orchestration above both halves: :mod:`harness.goldset.corrections` applies a correction file in memory
(pure: it never imports the validator), :func:`harness.validate.core.validate_correction` validates the result, and
:func:`apply_correction` writes the new dataset folder atomically when, and only when, it is valid.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import HarnessInputError
from harness.io import atomic_directory
from harness.validate.contract import Contract
from harness.validate.core import validate_correction
from harness.validate.report import ValidationReport

__all__ = ["ApplyResult", "apply_correction"]


@dataclass
class ApplyResult:
    """Outcome of :func:`apply_correction`.

    Attributes:
        report: validation report of the corrected set (with its correction diff).
        written: whether ``out_dir`` was written (only when the corrected set is valid).
        out_dir: the new dataset folder, or ``None`` when nothing was written.
        version: the new version.
        records_changed: ids of the records changed.
    """

    report: ValidationReport
    written: bool
    out_dir: Path | None
    version: str
    records_changed: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """0 when written, 1 when the corrected set is invalid (unusable input raises instead: 2)."""
        return self.report.exit_code


def apply_correction(
    dataset_dir: str | Path,
    correction_file: str | Path,
    out_dir: str | Path,
    *,
    corpus_dir: str | Path | None = None,
    contract: str | Path | Contract | None = None,
    today: dt.date | None = None,
) -> ApplyResult:
    """Validate a corrected gold set and, only if it is valid, write it as a new minor version.

    Args:
        dataset_dir: the dataset folder (never modified).
        correction_file: the JSONL correction file.
        out_dir: the new dataset folder; must not exist and must not lie inside ``dataset_dir``.
        corpus_dir: the corpus to check quotes, chunks and documents against; without it the corpus rules are
            "not checked" and the change-log entry says so.
        contract: contract file or folder (default: ``validators/`` by the slug rule) or a loaded contract.
        today: date of the change-log entry (default: today, UTC).

    Returns:
        :class:`ApplyResult`; ``written`` is true only when the corrected set validated (exit code 0).

    Raises:
        HarnessInputError: unusable input (see :func:`~harness.goldset.corrections.correct_goldset`,
            :func:`harness.validate.validate`), a
            correction that changes nothing, an ``out_dir`` that exists or lies inside the input.
    """
    dataset_dir = Path(dataset_dir)
    out = Path(out_dir)
    if not dataset_dir.is_dir():
        raise HarnessInputError(f"{dataset_dir}: field dataset_dir: not a dataset folder")
    src_root = dataset_dir
    if out.resolve() == src_root.resolve() or out.resolve().is_relative_to(src_root.resolve()):
        raise HarnessInputError(f"{out}: field out_dir: must not be inside the input dataset {src_root}")
    if out.exists():
        raise HarnessInputError(f"{out}: field out_dir: already exists; refusing to overwrite")
    report, corrected = validate_correction(
        dataset_dir, correction_file, corpus_dir=corpus_dir, contract=contract, today=today
    )
    if not corrected.changed_ids:
        raise HarnessInputError(f"{correction_file}: the correction changes no record")
    if not report.valid:
        return ApplyResult(report, False, None, corrected.new_version, corrected.changed_ids)
    entry = corrected.manifest_raw["changelog"][-1]
    entry["validation"] = {
        "contract": Path(report.contract).name,
        "corpus_id": report.corpus["corpus_id"] if report.corpus else None,
        "corpus_rules": "checked" if report.corpus else "not checked: corpus unavailable",
    }
    gs = corrected.original
    assert gs.manifest_path is not None
    rel_records = gs.records_path.resolve().relative_to(src_root.resolve())
    rel_manifest = gs.manifest_path.resolve().relative_to(src_root.resolve())
    with atomic_directory(out, marker=False, field="--out") as tmp:
        os.chmod(tmp, 0o755)
        for f in sorted(src_root.rglob("*")):
            rel = f.relative_to(src_root)
            if f.is_file() and rel not in (rel_records, rel_manifest):
                (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, tmp / rel)
        (tmp / rel_records).parent.mkdir(parents=True, exist_ok=True)
        (tmp / rel_records).write_text(corrected.records_text, encoding="utf-8", newline="\n")
        (tmp / rel_manifest).write_text(
            json.dumps(corrected.manifest_raw, ensure_ascii=False, indent=2) + "\n", encoding="utf-8", newline="\n"
        )
    return ApplyResult(report, True, out, corrected.new_version, corrected.changed_ids)
