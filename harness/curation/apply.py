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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import HarnessInputError
from harness.goldset.readme import regenerate_readme
from harness.io import atomic_directory, sha256_bytes
from harness.validate.contract import Contract
from harness.validate.core import Corrections, ImpactHook, validate_correction
from harness.validate.report import ValidationReport

__all__ = ["ApplyResult", "apply_correction", "dataset_files"]


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


def dataset_files(dataset_dir: Path) -> list[Path]:
    """Every file of a dataset folder (recursively, sorted), refusing symbolic links.

    A link inside a dataset folder would make ``goldset apply`` copy its target, a file from anywhere, into the new
    version; so a link (to a file or a folder) is refused, as are special files.

    Raises:
        HarnessInputError: ``<path>: a symbolic link in the dataset folder ...`` naming the first link found.
    """
    out = []
    for root, dirs, files in os.walk(dataset_dir, followlinks=False):
        for name in sorted(dirs + files):
            p = Path(root) / name
            if p.is_symlink():
                raise HarnessInputError(
                    f"{p}: a symbolic link in the dataset folder {dataset_dir} (to {os.readlink(p)}); a gold-set "
                    "version holds only its own files: replace the link by the file"
                )
            if name in files:
                if not p.is_file():
                    raise HarnessInputError(f"{p}: not a regular file in the dataset folder {dataset_dir}")
                out.append(p)
    return sorted(out)


def _kept_names(files: list[Path], src_root: Path, corrected) -> list[str]:
    """The name each applied correction file is kept under in the new version's ``corrections/`` folder: its own
    name, unless the old version already holds another file of that name (then ``<stem>-<new version><suffix>``)."""
    taken = {f.relative_to(src_root).as_posix(): f for f in files}
    out: list[str] = []
    for cf in corrected.files:
        name = cf.path.name
        old = taken.get(f"corrections/{name}")
        if (old is not None and sha256_bytes(old.read_bytes()) != cf.sha256) or name in out:
            name = f"{cf.path.stem}-{corrected.new_version}{cf.path.suffix}"
        out.append(name)
    return out


def apply_correction(
    dataset_dir: str | Path,
    correction_file: Corrections,
    out_dir: str | Path,
    *,
    corpus_dir: str | Path | None = None,
    structural_only: bool = False,
    contract: str | Path | Contract | None = None,
    today: dt.date | None = None,
    impact: ImpactHook | None = None,
) -> ApplyResult:
    """Validate a corrected gold set and, only if it is valid, write it as a new minor version.

    Args:
        dataset_dir: the dataset folder (never modified; a symbolic link in it is refused: :func:`dataset_files`).
        correction_file: a JSONL correction file, or several applied in order as one version (paths or parsed
            :class:`~harness.goldset.corrections.CorrectionFile` objects).
        out_dir: the new dataset folder; must not exist and must not lie inside ``dataset_dir``.
        corpus_dir: the corpus to check quotes, chunks and documents against. Required unless
            ``structural_only``.
        structural_only: write without a corpus: the corpus rules (V001-V005) are not checked and the change-log
            entry says so (``validation.corpus_rules``, ``validation.structural_only``).
        contract: contract file or folder (default: ``validators/`` by the slug rule) or a loaded contract.
        today: date of the change-log entry (default: today, UTC).
        impact: the metric-impact hook (:func:`harness.evaluation.impact.impact_of`; ``report.correction.impact``).

    Returns:
        :class:`ApplyResult`; ``written`` is true only when the corrected set validated (exit code 0). The new
        folder holds the corrected records, the manifest (new version, records sha256, change log with every
        correction file's author, description and line rationales), the README with its statistics section
        regenerated from the new records (:mod:`harness.goldset.readme`), every other file copied, and each applied
        correction file kept in ``corrections/`` (its own name, or ``<stem>-<version><suffix>`` when the old version
        holds another file of that name; the change-log entry names it in ``kept_as``).

    Raises:
        HarnessInputError: unusable input (see :func:`~harness.goldset.corrections.correct_goldset`,
            :func:`harness.validate.validate`); no corpus and not ``structural_only`` (or both); a symbolic link in
            the dataset folder; a correction that changes nothing; an ``out_dir`` that exists or lies inside the
            input.
    """
    dataset_dir = Path(dataset_dir)
    out = Path(out_dir)
    if corpus_dir is None and not structural_only:
        raise HarnessInputError(
            "--corpus: goldset apply checks the corrected set against its corpus before writing a version; give "
            "--corpus DIR, or --structural-only to write it with the corpus rules (V001-V005) not checked (the "
            "change log then says so)"
        )
    if corpus_dir is not None and structural_only:
        raise HarnessInputError("--structural-only: a corpus is given, so the corpus rules are checked; drop one")
    if not dataset_dir.is_dir():
        raise HarnessInputError(f"{dataset_dir}: field dataset_dir: not a dataset folder")
    src_root = dataset_dir
    if out.resolve() == src_root.resolve() or out.resolve().is_relative_to(src_root.resolve()):
        raise HarnessInputError(f"{out}: field out_dir: must not be inside the input dataset {src_root}")
    if out.exists():
        raise HarnessInputError(f"{out}: field out_dir: already exists; refusing to overwrite")
    files = dataset_files(src_root)
    report, corrected = validate_correction(
        dataset_dir, correction_file, corpus_dir=corpus_dir, contract=contract, today=today, impact=impact
    )
    if not corrected.changed_ids:
        names = ", ".join(f.path.name for f in corrected.files)
        raise HarnessInputError(f"{names}: the correction changes no record")
    if not report.valid:
        return ApplyResult(report, False, None, corrected.new_version, corrected.changed_ids)
    entry = corrected.manifest_raw["changelog"][-1]
    entry["validation"] = {
        "contract": Path(report.contract).name,
        "corpus_id": report.corpus["corpus_id"] if report.corpus else None,
        "corpus_rules": "checked" if report.corpus else "not checked: --structural-only (no corpus)",
        "structural_only": structural_only,
        "warnings": len(report.warnings()),
    }
    kept = _kept_names(files, src_root, corrected)
    for item, name in zip(entry.get("corrections") or [], kept, strict=False):
        item["kept_as"] = f"corrections/{name}"
    gs = corrected.original
    with version_folder(
        out,
        src_root,
        files,
        gs,
        records_text=corrected.records_text,
        manifest=corrected.manifest_raw,
        readme_goldset=corrected.goldset,
    ) as tmp:
        (tmp / "corrections").mkdir(exist_ok=True)
        for cf, name in zip(corrected.files, kept, strict=True):
            data = cf.path.read_bytes()
            if sha256_bytes(data) != cf.sha256:
                raise HarnessInputError(f"{cf.path}: changed while it was applied (sha256 differs); apply it again")
            (tmp / "corrections" / name).write_bytes(data)
    return ApplyResult(report, True, out, corrected.new_version, corrected.changed_ids)


@contextmanager
def version_folder(
    out: Path,
    src_root: Path,
    files: Sequence[Path],
    gs,
    *,
    records_text: str,
    manifest: dict,
    readme_goldset,
    inputs: Sequence[Path] = (),
) -> Iterator[Path]:
    """Write a new version of the dataset folder ``src_root`` as ``out`` (atomically, as a whole): every file of
    ``files`` copied but the records, the manifest and ``README.md``, which are written anew (``records_text``, the
    ``manifest`` dict as JSON, the README regenerated from ``readme_goldset`` keeping the old README's prose).
    Yields the temporary folder so the caller can add files (``goldset apply``'s ``corrections/``); on an error
    nothing is written. Used by ``goldset apply`` and ``goldset split``.

    Args:
        gs: the input :class:`~harness.goldset.io.GoldSet` (its records and manifest paths lie in ``src_root``).
        inputs: paths an error message may name instead of the temporary folder (:func:`harness.io.atomic_directory`).
    """
    assert gs.manifest_path is not None
    rel_records = gs.records_path.resolve().relative_to(src_root.resolve())
    rel_manifest = gs.manifest_path.resolve().relative_to(src_root.resolve())
    rel_readme = Path("README.md")
    with atomic_directory(out, marker=False, field="--out", inputs=inputs) as tmp:
        os.chmod(tmp, 0o755)
        for f in files:
            rel = f.relative_to(src_root)
            if rel not in (rel_records, rel_manifest, rel_readme):
                (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, tmp / rel)
        (tmp / rel_records).parent.mkdir(parents=True, exist_ok=True)
        (tmp / rel_records).write_text(records_text, encoding="utf-8", newline="\n")
        (tmp / rel_manifest).write_text(
            json.dumps(manifest, ensure_ascii=False, indent=2) + "\n", encoding="utf-8", newline="\n"
        )
        yield tmp
        old_readme = src_root / rel_readme
        text = old_readme.read_text(encoding="utf-8") if old_readme.is_file() else None
        (tmp / rel_readme).write_text(regenerate_readme(text, readme_goldset), encoding="utf-8", newline="\n")
