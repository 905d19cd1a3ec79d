"""Write a gold set with a new dev/test split as a new dataset folder (``harness goldset split``).

The assignment is :func:`harness.goldset.split.assign_split` (whole clusters, categories balanced, seeded). The new
folder is the input folder copied (refusing symbolic links, :func:`harness.curation.apply.dataset_files`) with:

* the records file: each line with its ``split`` set (other fields and their order kept as written);
* the manifest: the next minor version (:func:`harness.goldset.corrections.bump_minor`), the new ``records_sha256``,
  ``splits`` counts, and a change-log entry naming the seed, the dev fraction, the clusters per side and the counts
  per category;
* the README's generated statistics section regenerated (:mod:`harness.goldset.readme`).

The records are first checked against the manifest's ``records_sha256`` (records edited after their release are
refused, as ``run`` and ``validate`` refuse them, rather than versioned without a word), and a set whose questions
form one cluster is refused (exit 1: one side would be empty). The new set is validated against the input's
contract (structural rules; the split rules V016/V017 among them) before anything is written; the input is never
modified.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from harness.curation.apply import dataset_files, version_folder
from harness.errors import HarnessInputError
from harness.goldset.corrections import _serializer, bump_minor
from harness.goldset.io import GoldSet, load_goldset
from harness.goldset.schema import GoldManifest
from harness.goldset.split import SplitPlan, assign_split
from harness.io import read_json, read_jsonl, sha256_bytes
from harness.validate.core import resolve_contract, validate_goldset
from harness.validate.report import ValidationReport
from harness.validate.scoring import check_records_hash

__all__ = ["SplitWritten", "write_split"]


@dataclass
class SplitWritten:
    """Outcome of :func:`write_split`.

    Attributes:
        plan: the assignment; report: validation of the new set against the input's contract (structural rules).
        out_dir: the new folder, ``None`` when the new set did not validate (nothing written); version: its version.
    """

    plan: SplitPlan
    report: ValidationReport
    out_dir: Path | None
    version: str

    @property
    def exit_code(self) -> int:
        """0 written, 1 the new set fails its contract (nothing written)."""
        return self.report.exit_code

    def summary(self) -> str:
        """The one line ``harness goldset split`` prints: what was written, questions and clusters per side,
        dev/test per category, the imbalance and the seed (or that nothing was written)."""
        if self.out_dir is None:
            return "not written: the split set does not meet its contract"
        plan = self.plan
        cats = "; ".join(f"{c} {v['dev']}/{v['test']}" for c, v in plan.per_category.items())
        return (
            f"wrote {self.out_dir} (version {self.version}): dev "
            f"{sum(v['dev'] for v in plan.per_category.values())}, test "
            f"{sum(v['test'] for v in plan.per_category.values())} questions; clusters dev {plan.clusters['dev']}, "
            f"test {plan.clusters['test']} (of {plan.n_clusters}, each on one side); per category dev/test: {cats}; "
            f"imbalance {plan.cost:g}; seed {plan.seed}"
        )

    def to_dict(self) -> dict:
        """A JSON-ready dict (the ``data`` of ``harness goldset split --format json``)."""
        return {
            "kind": "goldset-split",
            "out_dir": str(self.out_dir) if self.out_dir else None,
            "version": self.version,
            "written": self.out_dir is not None,
            "plan": self.plan.to_dict(),
        }


def write_split(
    dataset_dir: str | Path,
    out_dir: str | Path,
    *,
    seed: int,
    dev_fraction: float = 0.5,
    contract=None,
    today: dt.date | None = None,
) -> SplitWritten:
    """Assign a cluster-aware dev/test split and write it as a new minor version (module docstring).

    Args:
        dataset_dir: a dataset folder with a manifest (never modified).
        out_dir: the new folder; must not exist and must not lie inside ``dataset_dir``.
        seed, dev_fraction: see :func:`harness.goldset.split.assign_split`.
        contract: contract file or folder (default: the input's, found as ``harness validate`` finds it).
        today: date of the change-log entry (default: today, UTC).

    Raises:
        HarnessInputError: not a dataset folder, no manifest, a symbolic link in it, an existing ``out_dir`` or one
            inside the input, records that differ from the manifest's ``records_sha256`` (edited after the release:
            :func:`harness.validate.scoring.check_records_hash`), a bad fraction, fewer than two questions, no
            contract found (exit 2).
        SplitRefusedError: every question in one cluster: no split has two non-empty sides (exit 1).
    """
    src = Path(dataset_dir)
    out = Path(out_dir)
    if not src.is_dir():
        raise HarnessInputError(f"{src}: field dataset: not a dataset folder")
    if out.resolve() == src.resolve() or out.resolve().is_relative_to(src.resolve()):
        raise HarnessInputError(f"{out}: field --out: must not be inside the input dataset {src}")
    if out.exists():
        raise HarnessInputError(f"{out}: field --out: already exists; refusing to overwrite")
    files = dataset_files(src)
    gs = load_goldset(src)
    if gs.manifest is None or gs.manifest_path is None:  # pragma: no cover - a folder always has a manifest
        raise HarnessInputError(f"{src}: field manifest: missing")
    check_records_hash(gs)  # records edited after their release are not versioned silently
    the_contract = resolve_contract(gs, contract)
    plan = assign_split(gs.records, seed=seed, dev_fraction=dev_fraction, where=str(gs.records_path))

    rows = read_jsonl(gs.records_path)
    text_lines = gs.records_path.read_text(encoding="utf-8").splitlines()
    dump = _serializer(text_lines[rows[0][0] - 1], rows[0][1])
    lines = []
    for _ln, obj in rows:
        obj = dict(obj)
        obj["split"] = plan.split[str(obj["id"])]
        lines.append(dump(obj))
    records_text = "\n".join(lines) + "\n"
    records_sha = sha256_bytes(records_text.encode("utf-8"))
    new_records = [r.model_copy(update={"split": plan.split[r.qid]}) for r in gs.records]

    raw = read_json(gs.manifest_path)
    version = bump_minor(gs.manifest.version, where=str(gs.manifest_path))
    man = dict(raw)
    man["version"] = version
    man["records_sha256"] = records_sha
    man["splits"] = {s: sum(1 for v in plan.split.values() if v == s) for s in ("dev", "test")}
    man["changelog"] = [
        *(raw.get("changelog") or []),
        {
            "version": version,
            "previous_version": gs.manifest.version,
            "date": (today or dt.datetime.now(dt.UTC).date()).isoformat(),
            "change": (
                f"dev/test split by harness goldset split --seed {seed} --dev-fraction {dev_fraction:g}: whole "
                f"clusters ({plan.clusters['dev']} dev, {plan.clusters['test']} test of {plan.n_clusters}), "
                f"categories balanced (imbalance {plan.cost:g})"
            ),
            "split": plan.to_dict(),
            "previous_records_sha256": gs.sha256,
            "records_sha256": records_sha,
        },
    ]
    manifest = GoldManifest.model_validate(man)
    new_gs = GoldSet(
        records=new_records,
        manifest=manifest,
        records_path=gs.records_path,
        manifest_path=gs.manifest_path,
        sha256=records_sha,
        line_of=dict(gs.line_of),
    )
    report = validate_goldset(new_gs, contract=the_contract, lines=[ln for ln, _ in rows])
    if not report.valid:
        return SplitWritten(plan, report, None, version)
    with version_folder(
        out, src, files, gs, records_text=records_text, manifest=man, readme_goldset=new_gs, inputs=[src]
    ):
        pass
    return SplitWritten(plan, report, out, version)
