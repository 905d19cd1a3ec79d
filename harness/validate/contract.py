"""Gold-set contracts: the per-major-version rules a gold set must meet, read from ``validators/<slug>.toml``.

Where: ``--contract`` (a file or a folder), else the first folder of :func:`contract_search_dirs` holding the file:
the ``validators/`` of the gold set's nearest ancestor, then ``./validators``, then the one beside the package.

A contract is data, not code. Every minor version of a gold set (``4.0.0``, ``4.1.0`` after a correction...) is
checked against the same contract, the one of its major version.

File name (the *slug rule*, :func:`contract_slug`): take the manifest ``name``, fold accents (NFKD, combining marks
dropped), lowercase it, replace every run of characters outside ``[a-z0-9]`` with ``-``, strip ``-`` at both ends
and drop a trailing ``-v<digits>`` already in the name; append ``-v<major>`` where ``major`` is the leading integer
of the manifest ``version``. ``"DOF-RAG Evidence Evaluation v4"`` at ``4.0.0-pilot`` gives
``dof-rag-evidence-evaluation-v4.toml``; ``"mx-leyes-dof-eval"`` at ``1.0.0`` gives ``mx-leyes-dof-eval-v1.toml``.

Format (TOML; keys outside this list are an error, so a typo cannot silently switch a rule off)::

    contract_format = 1                      # format of this file
    dataset = "DOF-RAG Evidence Evaluation v4"   # must equal the manifest name
    major = 4                                # must equal the manifest version's major number
    total_questions = 42                     # V010: exact number of records
    categories = ["single_passage", ...]     # V012: allowed categories
    required_fields = ["id", ...]            # V013: record fields that must be present, non-null, not blank
    required_gold_document_fields = [...]    # V013: the same for every gold document
    refutation_roles = ["premise_refutation"]    # V031: roles that mark a premise-refuting document
    premise_correction_markers = ["no", "fals*", ...]  # V031: words (``*`` = prefix) one of which a
                                             #   false-premise reference answer must contain
    split_grouping = false                   # V017 (optional): questions sharing a gold document share a split
    require_evidence = true                  # V033 (optional, default true): every required (grade 2) gold
                                             #   document has evidence; false for a documents-only set (qrels)

    [per_category]                           # V011: exact count per category
    single_passage = 6

    [id_prefixes]                            # V014: every id starts with its category's prefix
    single_passage = "SP-"

    [per_split]                              # V016 (optional): exact count per split
    dev = 21
"""

from __future__ import annotations

import re
import tomllib
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import HarnessInputError
from harness.goldset.schema import GoldDocument, GoldRecord
from harness.inputs import read_input_text

__all__ = [
    "Contract",
    "DEFAULT_CONTRACTS_DIR",
    "contract_search_dirs",
    "contract_slug",
    "find_contract",
    "load_contract",
    "major_of",
]

DEFAULT_CONTRACTS_DIR = Path(__file__).resolve().parents[2] / "validators"
"""``validators/`` at the repository root (beside the ``harness`` package)."""

_KEYS = {
    "contract_format",
    "dataset",
    "major",
    "total_questions",
    "categories",
    "required_fields",
    "required_gold_document_fields",
    "refutation_roles",
    "premise_correction_markers",
    "split_grouping",
    "per_category",
    "id_prefixes",
    "per_split",
    "require_evidence",
}
_REQUIRED = ("dataset", "major", "total_questions", "categories", "per_category", "id_prefixes")


@dataclass(frozen=True)
class Contract:
    """A parsed contract (see the module docstring for the meaning of each field).

    Attributes:
        path: the TOML file.
        dataset: manifest name the contract belongs to.
        major: major version it covers.
        total_questions: exact record count.
        categories: allowed categories, in order.
        per_category: exact count per category.
        id_prefixes: required id prefix per category.
        required_fields: record fields that must be present, non-null and not blank strings.
        required_gold_document_fields: the same for every gold document.
        refutation_roles: roles marking the premise-refuting gold document of a false-premise question.
        premise_correction_markers: lowercase words (``*`` suffix = prefix match); a false-premise reference answer
            must contain one.
        per_split: exact count per split (empty: not required).
        split_grouping: questions that share a gold document must share a split.
        require_evidence: every required (grade 2) gold document must cite evidence (V033); false for a
            documents-only set, whose chunk-level metrics are then not applicable.
    """

    path: Path
    dataset: str
    major: int
    total_questions: int
    categories: tuple[str, ...]
    per_category: dict[str, int]
    id_prefixes: dict[str, str]
    required_fields: tuple[str, ...] = ()
    required_gold_document_fields: tuple[str, ...] = ()
    refutation_roles: tuple[str, ...] = ("premise_refutation",)
    premise_correction_markers: tuple[str, ...] = ()
    per_split: dict[str, int] = field(default_factory=dict)
    split_grouping: bool = False
    require_evidence: bool = True


def major_of(version: str, *, where: str = "manifest") -> int:
    """The leading integer of a version string (``"4.0.0-pilot"`` -> 4).

    Raises:
        HarnessInputError: the version does not start with a number (``<where>: field version: ...``).
    """
    m = re.match(r"\s*v?(\d+)", str(version))
    if m is None:
        raise HarnessInputError(f"{where}: field version: {version!r} does not start with a major version number")
    return int(m.group(1))


def contract_slug(name: str, version: str, *, where: str = "manifest") -> str:
    """The contract file stem for a manifest ``name`` and ``version`` (slug rule of the module docstring)."""
    folded = "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))
    slug = re.sub(r"[^a-z0-9]+", "-", folded.lower()).strip("-")
    slug = re.sub(r"-v\d+$", "", slug)
    if not slug:
        raise HarnessInputError(f"{where}: field name: {name!r} gives an empty contract name")
    return f"{slug}-v{major_of(version, where=where)}"


def contract_search_dirs(dataset_dir: str | Path | None = None) -> list[Path]:
    """Folders searched for a contract when none is given, in order, without duplicates.

    1. ``validators/`` in the nearest ancestor of ``dataset_dir`` that has one (a gold set kept as
       ``<project>/datasets/<name>/`` finds ``<project>/validators/``, whatever the working directory or install);
    2. ``./validators`` in the working directory;
    3. :data:`DEFAULT_CONTRACTS_DIR` (beside the package: the repository of an editable install).
    """
    out: list[Path] = []
    if dataset_dir is not None:
        start = Path(dataset_dir).resolve()
        for anc in (start, *start.parents):
            if (anc / "validators").is_dir():
                out.append(anc / "validators")
                break
    out += [Path.cwd() / "validators", DEFAULT_CONTRACTS_DIR]
    seen: set[Path] = set()
    uniq = []
    for d in out:
        r = d.resolve()
        if r not in seen:
            seen.add(r)
            uniq.append(d)
    return uniq


def find_contract(
    name: str,
    version: str,
    contract: str | Path | None = None,
    *,
    where: str = "manifest",
    dataset_dir: str | Path | None = None,
) -> Path:
    """Locate the contract file.

    Args:
        name: manifest name.
        version: manifest version.
        contract: an explicit ``.toml`` file, a folder to look the slug up in, or ``None`` for the first of
            :func:`contract_search_dirs` that holds the slug's file.
        where: the manifest path, for messages.
        dataset_dir: the gold set's folder (starts the ancestor search; ``None``: working directory and package).

    Raises:
        HarnessInputError: the file does not exist (message names the file, or every folder searched, and the
            manifest fields used).
    """
    fields = f"for {where} field name={name!r}, field version={version!r}"
    if contract is not None and not Path(contract).is_dir():
        path = Path(contract)
    elif contract is not None:
        path = Path(contract) / f"{contract_slug(name, version, where=where)}.toml"
    else:
        slug = f"{contract_slug(name, version, where=where)}.toml"
        dirs = contract_search_dirs(dataset_dir)
        for d in dirs:
            if (d / slug).is_file():
                return d / slug
        raise HarnessInputError(
            f"{slug}: contract not found in {', '.join(str(d) for d in dirs)} ({fields}); pass --contract"
        )
    if not path.is_file():
        raise HarnessInputError(f"{path}: contract not found ({fields})")
    return path


def _str_list(path: Path, raw: dict, key: str) -> tuple[str, ...]:
    val = raw.get(key, [])
    if not isinstance(val, list) or not all(isinstance(v, str) and v for v in val):
        raise HarnessInputError(f"{path}: field {key}: must be a list of non-empty strings")
    return tuple(val)


def _table(path: Path, raw: dict, key: str, typ: type) -> dict:
    val = raw.get(key, {})
    if not isinstance(val, dict):
        raise HarnessInputError(f"{path}: field {key}: must be a table")
    for k, v in val.items():
        if not isinstance(v, typ) or isinstance(v, bool) or (typ is int and v < 0):
            raise HarnessInputError(
                f"{path}: field {key}.{k}: must be a {'non-negative integer' if typ is int else 'string'}"
            )
    return dict(val)


def load_contract(path: str | Path) -> Contract:
    """Read and check a contract file.

    Raises:
        HarnessInputError: missing or malformed file, an unknown key, a missing required key, a field of the wrong
            type, an internally inconsistent contract (``<file>: field <key>: <problem>``).
    """
    path = Path(path)
    try:
        raw = tomllib.loads(read_input_text(path, what="contract"))
    except tomllib.TOMLDecodeError as exc:
        raise HarnessInputError(f"{path}: malformed TOML ({exc})") from None
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise HarnessInputError(f"{path}: field {unknown[0]}: unknown contract key")
    for key in _REQUIRED:
        if key not in raw:
            raise HarnessInputError(f"{path}: field {key}: missing")
    fmt = raw.get("contract_format", 1)
    if fmt != 1:
        raise HarnessInputError(f"{path}: field contract_format: unsupported format {fmt!r} (expected 1)")
    if not isinstance(raw["dataset"], str) or not raw["dataset"]:
        raise HarnessInputError(f"{path}: field dataset: must be a non-empty string")
    for key in ("major", "total_questions"):
        if not isinstance(raw[key], int) or isinstance(raw[key], bool) or raw[key] < 0:
            raise HarnessInputError(f"{path}: field {key}: must be a non-negative integer")
    categories = _str_list(path, raw, "categories")
    per_category = _table(path, raw, "per_category", int)
    id_prefixes = _table(path, raw, "id_prefixes", str)
    per_split = _table(path, raw, "per_split", int)
    for key, table in (("per_category", per_category), ("id_prefixes", id_prefixes)):
        extra = [k for k in table if k not in categories]
        if extra:
            raise HarnessInputError(f"{path}: field {key}.{extra[0]}: not one of the contract's categories")
    if set(per_category) == set(categories) and sum(per_category.values()) != raw["total_questions"]:
        raise HarnessInputError(
            f"{path}: field per_category: counts sum to {sum(per_category.values())}, "
            f"total_questions is {raw['total_questions']}"
        )
    if per_split and sum(per_split.values()) != raw["total_questions"]:
        raise HarnessInputError(
            f"{path}: field per_split: counts sum to {sum(per_split.values())}, "
            f"total_questions is {raw['total_questions']}"
        )
    required = _str_list(path, raw, "required_fields")
    bad = [f for f in required if f not in GoldRecord.model_fields]
    if bad:
        raise HarnessInputError(f"{path}: field required_fields: {bad[0]!r} is not a gold-record field")
    required_gd = _str_list(path, raw, "required_gold_document_fields")
    bad = [f for f in required_gd if f not in GoldDocument.model_fields]
    if bad:
        raise HarnessInputError(f"{path}: field required_gold_document_fields: {bad[0]!r} is not a gold-document field")
    split_grouping = raw.get("split_grouping", False)
    if not isinstance(split_grouping, bool):
        raise HarnessInputError(f"{path}: field split_grouping: must be true or false")
    require_evidence = raw.get("require_evidence", True)
    if not isinstance(require_evidence, bool):
        raise HarnessInputError(f"{path}: field require_evidence: must be true or false")
    markers = tuple(m.lower() for m in _str_list(path, raw, "premise_correction_markers"))
    return Contract(
        path=path,
        dataset=raw["dataset"],
        major=raw["major"],
        total_questions=raw["total_questions"],
        categories=categories,
        per_category=per_category,
        id_prefixes=id_prefixes,
        required_fields=required,
        required_gold_document_fields=required_gd,
        refutation_roles=_str_list(path, raw, "refutation_roles")
        if "refutation_roles" in raw
        else ("premise_refutation",),
        premise_correction_markers=markers,
        per_split=per_split,
        split_grouping=split_grouping,
        require_evidence=require_evidence,
    )
