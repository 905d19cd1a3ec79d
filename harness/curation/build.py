"""Assemble a new dataset folder: records JSONL, manifest with the corpus identity, starter contract; validate it
against that contract (and the corpus) before it is moved into place. Used by ``goldset resolve`` and
``goldset import``.

Layout written (see :mod:`harness.goldset.io`)::

    <out>/
        <stem>.jsonl              one record per line (JSON, UTF-8, keys in schema order)
        <stem>.meta.json          GoldManifest: name, version, corpus identity, chunker, counts, records_sha256
        validators/<slug>.toml    starter contract (unless the caller brings its own; slug rule of
                                  :mod:`harness.validate.contract`), found by ``harness validate <out>``

The folder is written by :func:`harness.io.atomic_directory` (no marker: a gold set is data to commit): nothing
appears at ``<out>`` unless every file was written and the set validated.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.corpus.ingest import CorpusSource
from harness.corpus.view import CorpusView
from harness.errors import HarnessInputError
from harness.goldset.io import load_goldset
from harness.goldset.schema import GoldRecord
from harness.io import atomic_directory, sha256_bytes
from harness.validate.contract import Contract, contract_slug, load_contract, major_of
from harness.validate.core import resolve_contract, validate_goldset
from harness.validate.report import ValidationReport

__all__ = ["BuiltDataset", "dataset_manifest", "id_prefix", "records_jsonl", "starter_contract", "write_dataset"]

SCHEMA_VERSION = 1
"""Version of the record schema written into manifests."""

_RECORD_OPTIONAL = (
    "persona",
    "difficulty",
    "as_of",
    "answerability",
    "reference_answer",
    "required_hops",
    "split",
)
_DOC_OPTIONAL = ("relpath", "publication_date", "section", "role", "evidence", "heading_path", "grade")


@dataclass
class BuiltDataset:
    """Outcome of :func:`write_dataset`.

    Attributes:
        report: validation report of the new set against its contract (and the corpus, when one was given).
        written: the dataset folder, or ``None`` when the set did not validate (nothing written).
        contract_written: the starter contract inside the folder, or ``None`` (a contract was given, or not
            written).
    """

    report: ValidationReport
    written: Path | None
    contract_written: Path | None


def records_jsonl(records: Sequence[GoldRecord]) -> str:
    """The records file text: one JSON object per line, keys in schema order, fields never set left out."""
    lines = [json.dumps(r.model_dump(mode="json", exclude_unset=True), ensure_ascii=False) for r in records]
    return "\n".join(lines) + "\n"


def _present(model, name: str) -> bool:
    """Set, not null, not a blank string (the V013 test)."""
    if name not in model.model_fields_set:
        return False
    v = getattr(model, name)
    return v is not None and not (isinstance(v, str) and not v.strip())


def id_prefix(ids: Sequence[str]) -> str | None:
    """The id prefix a category's ids share, as a starter contract states it (V014).

    The longest common prefix of the ids, cut after its last character that is not a letter or digit
    (``SP-001, SP-002`` -> ``SP-``); without such a character, its leading letters (``Q1, Q2`` -> ``Q``); ``None``
    when the ids share no such prefix.
    """
    if not ids:
        return None
    lcp = ids[0]
    for i in ids[1:]:
        k = 0
        while k < min(len(lcp), len(i)) and lcp[k] == i[k]:
            k += 1
        lcp = lcp[:k]
    cut = max((k + 1 for k, ch in enumerate(lcp) if not ch.isalnum()), default=0)
    if cut:
        return lcp[:cut]
    k = 0
    while k < len(lcp) and lcp[k].isalpha():
        k += 1
    return lcp[:k] or None


def _toml_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)  # a JSON string is a TOML basic string


def _toml_key(s: str) -> str:
    return s if s and all(c.isascii() and (c.isalnum() or c in "-_") for c in s) else _toml_str(s)


def _toml_list(items: Sequence[str]) -> str:
    return "[" + ", ".join(_toml_str(i) for i in items) + "]"


def starter_contract(records: Sequence[GoldRecord], name: str, version: str, *, origin: str) -> str:
    """TOML text of a contract the records meet today, to be edited into what the set must be.

    It states: the exact question count (V010) and count per category (V011) of ``records``; their categories,
    in order of first use (V012); as required fields (V013) ``id``, ``category``, ``question``,
    ``gold_documents`` plus every optional record field (``persona``, ``as_of``, ...) that *every* record sets
    (not null, not blank), and likewise for gold documents; the id prefix each category's ids share (V014, see
    :func:`id_prefix`); per-split counts and split grouping (V016, V017) only when every record has a split and
    the grouping holds; ``require_evidence`` (V033) true when every required gold document cites evidence (false
    for a documents-only set); no premise-correction markers (V031's marker test is language-specific).

    Args:
        records: the validated records.
        name, version: the manifest's name and version (the contract covers the version's major).
        origin: what the records came from (written into the header comment).
    """
    cats = Counter(r.category for r in records)
    order = list(dict.fromkeys(r.category for r in records))
    docs = [g for r in records for g in r.gold_documents]
    req = ["id", "category", "question", "gold_documents"]
    req += [f for f in _RECORD_OPTIONAL if all(_present(r, f) for r in records)]
    req_gd = ["document_id"] + [f for f in _DOC_OPTIONAL if docs and all(_present(g, f) for g in docs)]
    prefixes = {c: id_prefix([r.qid for r in records if r.category == c]) for c in order}
    require_evidence = all(g.evidence for g in docs if g.effective_grade == 2)
    splits = Counter(r.split for r in records)
    all_split = None not in splits
    by_doc: dict[str, set[str]] = {}
    for r in records:
        for g in r.gold_documents:
            by_doc.setdefault(str(g.document_id), set()).add(str(r.split))
    grouping = all_split and all(len(s) == 1 for s in by_doc.values())
    today = dt.datetime.now(dt.UTC).date().isoformat()
    lines = [
        f"# Starter contract of {name!r} (every {major_of(version)}.x version), written by harness on {today} from",
        f"# {origin}. It states what the records are today: edit it to say what the set must be",
        "# (every key and rule code: docs/goldsets.md).",
        "contract_format = 1",
        f"dataset = {_toml_str(name)}",
        f"major = {major_of(version)}",
        "",
        "# V010 exact number of questions",
        f"total_questions = {len(records)}",
        "",
        "# V012 allowed categories",
        f"categories = {_toml_list(order)}",
        "",
        "# V013 fields every record / gold document must have (present, not null, not blank)",
        f"required_fields = {_toml_list(req)}",
        f"required_gold_document_fields = {_toml_list(req_gd)}",
        "",
        "# V031 roles of a premise-refuting document; words one of which a false-premise answer must contain",
        "# (none here: the marker test is language-specific; see validators/mx-leyes-dof-eval-v1.toml)",
        'refutation_roles = ["premise_refutation"]',
        "premise_correction_markers = []",
        "",
        "# V033 every required (grade 2) gold document cites evidence (false: a documents-only set)",
        f"require_evidence = {'true' if require_evidence else 'false'}",
    ]
    if all_split:
        lines += [
            "",
            "# V017 questions sharing a gold document share a split",
            f"split_grouping = {str(grouping).lower()}",
        ]
    lines += ["", "# V011 exact number per category", "[per_category]"]
    lines += [f"{_toml_key(c)} = {cats[c]}" for c in order]
    lines += ["", "# V014 id prefix per category (a category whose ids share none is left out)", "[id_prefixes]"]
    lines += [f"{_toml_key(c)} = {_toml_str(p)}" for c, p in prefixes.items() if p]
    if all_split:
        lines += ["", "# V016 exact number per split", "[per_split]"]
        lines += [f"{_toml_key(str(s))} = {n}" for s, n in sorted(splits.items())]
    return "\n".join(lines) + "\n"


def dataset_manifest(
    records: Sequence[GoldRecord],
    *,
    name: str,
    version: str,
    chunker_id: str,
    source: CorpusSource | None,
    authoring: dict,
) -> dict:
    """The manifest of a new dataset (see :class:`harness.goldset.schema.GoldManifest` for each field).

    With ``source``, the corpus identity (``corpus_version`` = ``<name>@<hash12>``, ``corpus_hash``,
    ``corpus_documents``, ``corpus_date_min``/``max``) is the corpus's; without it those fields are left out (a set
    imported without a corpus; V005 then fails when the set is validated against one).
    """
    cats = Counter(r.category for r in records)
    man: dict = {"name": name, "version": version, "created": dt.datetime.now(dt.UTC).date().isoformat()}
    man["total_questions"] = len(records)
    if source is not None:
        man.update(source.manifest_fields())
    man["chunker_version"] = chunker_id
    man["schema_version"] = SCHEMA_VERSION
    if len(set(cats.values())) == 1:
        man["questions_per_category"] = next(iter(cats.values()))
    man["categories"] = list(dict.fromkeys(r.category for r in records))
    splits = Counter(r.split for r in records if r.split)
    if splits:
        man["splits"] = dict(sorted(splits.items()))
    man["records_file"] = f"{_stem(name, version)}.jsonl"
    man["records_sha256"] = sha256_bytes(records_jsonl(records).encode("utf-8"))
    man["authoring"] = authoring
    return man


def _stem(name: str, version: str) -> str:
    return contract_slug(name, version).replace("-", "_")


class _Invalid(Exception):
    def __init__(self, report: ValidationReport) -> None:
        self.report = report


def write_dataset(
    out: str | Path,
    records: Sequence[GoldRecord],
    manifest: dict,
    *,
    contract: Contract | None,
    contract_text: str | None,
    corpus: CorpusView | None,
    inputs: Sequence[str | Path | None] = (),
) -> BuiltDataset:
    """Write the dataset folder atomically, only when it validates.

    The files are written into a temporary sibling of ``out``, loaded back with :func:`load_goldset` and
    validated with :func:`harness.validate.core.validate_goldset` against ``contract`` (or the starter contract
    ``contract_text``, written to ``validators/<slug>.toml``) and ``corpus``; when a rule fails nothing is moved
    into place and the report says why.

    Args:
        out: the new dataset folder (must not exist; never replaced).
        records: the records (already schema-valid).
        manifest: from :func:`dataset_manifest` (its ``records_file`` names the JSONL).
        contract: a contract to validate against (nothing written for it), or ``None`` to use ``contract_text``.
        contract_text: the starter contract's TOML (ignored when ``contract`` is given).
        corpus: the corpus view the corpus rules check against, or ``None`` (corpus rules not checked).
        inputs: paths ``out`` may not be, contain or lie inside.

    Raises:
        HarnessInputError: ``out`` exists or overlaps an input; the records or manifest do not load back (a bug).
    """
    out = Path(out)
    text = records_jsonl(records)
    name, version = manifest["name"], manifest["version"]
    slug = contract_slug(name, version)
    written_contract: Path | None = None
    try:
        with atomic_directory(out, marker=False, inputs=inputs, field="--out") as tmp:
            (tmp / manifest["records_file"]).write_text(text, encoding="utf-8")
            (tmp / f"{_stem(name, version)}.meta.json").write_text(
                json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
            )
            if contract is None:
                if contract_text is None:
                    raise HarnessInputError(f"{out}: no contract given and no starter contract to write")
                (tmp / "validators").mkdir()
                (tmp / "validators" / f"{slug}.toml").write_text(contract_text, encoding="utf-8")
                c = load_contract(tmp / "validators" / f"{slug}.toml")
                written_contract = out / "validators" / f"{slug}.toml"
            else:
                c = contract
            gs = load_goldset(tmp)
            c = resolve_contract(gs, c)
            report = validate_goldset(gs, contract=c, corpus=corpus)
            for key, value in (("path", out), ("records_file", out / manifest["records_file"])):
                report.dataset[key] = str(value)
            report.dataset["manifest_file"] = str(out / f"{_stem(name, version)}.meta.json")
            report.contract = str(written_contract or c.path)
            if not report.valid:
                raise _Invalid(report)
    except _Invalid as inv:
        return BuiltDataset(inv.report, None, None)
    return BuiltDataset(report, out, written_contract)
