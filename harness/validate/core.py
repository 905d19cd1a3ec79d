"""The validator's entry points: :func:`validate` (a dataset folder) and :func:`validate_goldset` (a loaded set)."""

from __future__ import annotations

import datetime as dt
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from harness.corpus.view import CorpusView, open_corpus
from harness.errors import HarnessInputError
from harness.goldset.corrections import CorrectedSet, CorrectionFile, correct_goldset
from harness.goldset.io import GoldSet, load_goldset
from harness.io import read_jsonl
from harness.validate.contract import Contract, find_contract, load_contract, major_of
from harness.validate.report import CorrectionInfo, Counts, Finding, RecordResult, RuleResult, ValidationReport, worst
from harness.validate.rules import RULE_INFO, RULES, Context

__all__ = ["ImpactHook", "resolve_contract", "validate", "validate_correction", "validate_goldset"]

CORPUS_UNAVAILABLE = "corpus unavailable"

#: A correction's metric impact: ``(old set, corrected set) -> JSON-ready dict`` stored as
#: ``report.correction.impact``. The validator only calls it; :func:`harness.evaluation.impact.impact_of` builds one
#: that re-scores run records (evaluation sits above validation, so the validator takes it as an argument).
ImpactHook = Callable[[GoldSet, GoldSet], dict]


def resolve_contract(goldset: GoldSet, contract: str | Path | Contract | None = None) -> Contract:
    """Find and load the contract of ``goldset`` and check that it is the contract of this name and major version.

    Args:
        goldset: a loaded gold set.
        contract: a loaded :class:`Contract`, a ``.toml`` file, a folder to look the slug up in, or ``None`` to
            search :func:`harness.validate.contract.contract_search_dirs` from the gold set's folder (see
            :mod:`harness.validate.contract` for the slug rule).

    Raises:
        HarnessInputError: no manifest and no contract file given; contract missing or malformed; contract for
            another dataset name or major version.
    """
    if isinstance(contract, Contract):
        c = contract
    elif goldset.manifest is None:
        if contract is None or Path(contract).is_dir():
            raise HarnessInputError(
                f"{goldset.records_path}: field manifest: no manifest beside the records; pass a contract file"
            )
        return load_contract(contract)
    else:
        where = str(goldset.manifest_path)
        c = load_contract(
            find_contract(
                goldset.manifest.name,
                goldset.manifest.version,
                contract,
                where=where,
                dataset_dir=Path(goldset.records_path).parent,
            )
        )
    m = goldset.manifest
    if m is not None:
        if c.dataset != m.name:
            raise HarnessInputError(
                f"{c.path}: field dataset: {c.dataset!r} is not the manifest name {m.name!r} ({goldset.manifest_path})"
            )
        major = major_of(m.version, where=str(goldset.manifest_path))
        if c.major != major:
            raise HarnessInputError(
                f"{c.path}: field major: contract for v{c.major}, manifest version is {m.version!r} "
                f"({goldset.manifest_path})"
            )
    return c


def _open_corpus(goldset: GoldSet, corpus_dir: str | Path | None) -> CorpusView | None:
    if corpus_dir is None:
        return None
    if goldset.manifest is None:
        raise HarnessInputError(
            f"{goldset.records_path}: field manifest: no manifest, so no chunker_version to re-chunk the corpus with"
        )
    return open_corpus(corpus_dir, goldset.manifest.chunker_version, where=str(goldset.manifest_path))


def _run(info, fn, args) -> RuleResult:
    findings: list[Finding] = fn(*args)
    checks = sum(1 for f in findings if f.status in ("pass", "fail", "warn"))
    kept = [f for f in findings if f.status != "pass"]
    return RuleResult(info.code, worst(f.status for f in findings), checks, kept)


def _counts(goldset: GoldSet, contract: Contract) -> Counts:
    cats = Counter(r.category for r in goldset.records)
    per_category = {c: cats.get(c, 0) for c in contract.categories}
    for r in goldset.records:
        per_category.setdefault(r.category, cats[r.category])
    splits = Counter(r.split or "none" for r in goldset.records)
    docs = {str(g.document_id) for r in goldset.records for g in r.gold_documents}
    chunks = {str(e.chunk_id) for r in goldset.records for g in r.gold_documents for e in g.evidence}
    quotes = sum(len(g.evidence) for r in goldset.records for g in r.gold_documents)
    return Counts(
        questions=len(goldset.records),
        per_category=per_category,
        per_split=dict(sorted(splits.items())),
        gold_documents=len(docs),
        evidence_chunks=len(chunks),
        quotes=quotes,
    )


def validate_goldset(
    goldset: GoldSet,
    *,
    contract: Contract,
    corpus: CorpusView | None = None,
    lines: list[int | None] | None = None,
) -> ValidationReport:
    """Run every rule on a loaded gold set.

    Args:
        goldset: the gold set (not modified).
        contract: its contract (see :func:`resolve_contract`).
        corpus: the corpus view (see :func:`harness.corpus.view.open_corpus`), or ``None``: the corpus rules
            are then "not checked: corpus unavailable".
        lines: JSONL line of each record (default: read from ``goldset.records_path``).

    Returns:
        The :class:`ValidationReport` (``exit_code`` 0 valid, 1 invalid).

    Raises:
        HarnessInputError: a cited corpus document that cannot be read or decoded.
    """
    t0 = time.perf_counter()
    if lines is None:
        try:
            lines = [ln for ln, _ in read_jsonl(goldset.records_path)]
        except HarnessInputError:
            lines = []
        if len(lines) != len(goldset.records):
            lines = [goldset.line_of.get(r.qid) for r in goldset.records]
    ctx = Context(goldset=goldset, lines=lines, contract=contract, corpus=corpus)
    not_checked = [Finding("not_checked", CORPUS_UNAVAILABLE)]
    dataset_results: list[RuleResult] = []
    record_rules = []
    for info, fn in RULES.values():
        if info.scope == "record":
            record_rules.append((info, fn))
        elif info.needs_corpus and corpus is None:
            dataset_results.append(RuleResult(info.code, "not_checked", 0, list(not_checked)))
        else:
            dataset_results.append(_run(info, fn, (ctx,)))
    records = []
    for i, rec in enumerate(goldset.records):
        results = []
        for info, fn in record_rules:
            if info.needs_corpus and corpus is None:
                results.append(RuleResult(info.code, "not_checked", 0, list(not_checked)))
            else:
                results.append(_run(info, fn, (ctx, i, rec)))
        records.append(RecordResult(i, rec.qid, lines[i] if i < len(lines) else None, rec.category, results))
    m = goldset.manifest
    corpus_info = None
    if corpus is not None:
        src = corpus.source
        dmin, dmax = src.date_range
        corpus_info = {
            "dir": str(src.root),
            "corpus_id": src.corpus_id,
            "corpus_hash": src.corpus_hash,
            "documents": len(src.docs),
            "date_min": dmin,
            "date_max": dmax,
            "chunker": corpus.chunker.chunker_id,
            "documents_chunked": corpus.chunked_documents,
        }
    return ValidationReport(
        dataset={
            "path": str(goldset.manifest_path.parent if goldset.manifest_path else goldset.records_path),
            "records_file": str(goldset.records_path),
            "manifest_file": str(goldset.manifest_path) if goldset.manifest_path else None,
            "name": goldset.name,
            "version": goldset.version,
            "records_sha256": goldset.sha256,
            "chunker_version": m.chunker_version if m else None,
            "corpus_version": m.corpus_version if m else None,
        },
        contract=str(contract.path),
        corpus=corpus_info,
        counts=_counts(goldset, contract),
        rules=list(RULE_INFO),
        dataset_results=dataset_results,
        records=records,
        elapsed_s=round(time.perf_counter() - t0, 3),
    )


def _status_changes(before: ValidationReport, after: ValidationReport) -> list[dict]:
    out = []
    for b, a in zip(before.dataset_results, after.dataset_results, strict=True):
        if b.status != a.status:
            out.append({"scope": "dataset", "code": a.code, "before": b.status, "after": a.status})
    for rb, ra in zip(before.records, after.records, strict=True):
        for b, a in zip(rb.rules, ra.rules, strict=True):
            if b.status != a.status:
                out.append({"scope": ra.id, "code": a.code, "before": b.status, "after": a.status})
    return out


Corrections = str | Path | CorrectionFile | Sequence[str | Path | CorrectionFile]
"""One correction file or several (applied in order as one new version): paths or parsed files."""


def _correct_and_validate(
    goldset: GoldSet,
    corrections: Corrections,
    contract: Contract,
    corpus: CorpusView | None,
    today: dt.date | None,
) -> tuple[ValidationReport, CorrectedSet]:
    corrected = correct_goldset(goldset, corrections, today=today)
    before = validate_goldset(goldset, contract=contract, corpus=corpus)
    after = validate_goldset(corrected.goldset, contract=contract, corpus=corpus, lines=corrected.lines)
    after.correction = CorrectionInfo(
        files=[f.to_dict() for f in corrected.files],
        records=[d.to_dict() for d in corrected.diffs],
        status_changes=_status_changes(before, after),
        exit_code_before=before.exit_code,
        new_version=corrected.new_version,
    )
    return after, corrected


def validate_correction(
    dataset_dir: str | Path,
    correction: Corrections,
    *,
    corpus_dir: str | Path | None = None,
    contract: str | Path | Contract | None = None,
    today: dt.date | None = None,
    impact: ImpactHook | None = None,
) -> tuple[ValidationReport, CorrectedSet]:
    """Apply corrections in memory and validate the result; also returns the corrected set (for writing it).

    Args:
        dataset_dir: the dataset folder (never modified).
        correction: a correction file or several, applied in order (:func:`~harness.goldset.corrections.
            correct_goldset`); parsed :class:`~harness.goldset.corrections.CorrectionFile` objects carry an author
            and description given on the command line.
        corpus_dir, contract: as for :func:`validate`.
        today: date of the change-log entry.
        impact: called with the old and the corrected set; its result goes to ``report.correction.impact``
            (:func:`harness.evaluation.impact.impact_of` re-scores run records' stored rankings against both).

    Raises:
        HarnessInputError: see :func:`validate`, and whatever ``impact`` raises
            (:func:`~harness.evaluation.impact.correction_impact`).
    """
    t0 = time.perf_counter()
    gs = load_goldset(dataset_dir)
    c = resolve_contract(gs, contract)
    corpus = _open_corpus(gs, corpus_dir)
    report, corrected = _correct_and_validate(gs, correction, c, corpus, today)
    if impact is not None:
        assert report.correction is not None
        report.correction.impact = impact(corrected.original, corrected.goldset)
    report.elapsed_s = round(time.perf_counter() - t0, 3)
    return report, corrected


def validate(
    dataset_dir: str | Path,
    corpus_dir: str | Path | None = None,
    correction: Corrections | None = None,
    contract: str | Path | Contract | None = None,
    impact: ImpactHook | None = None,
) -> ValidationReport:
    """Validate a gold set (optionally with a correction applied in memory) against its contract and corpus.

    Args:
        dataset_dir: a dataset folder (``*.meta.json`` + records JSONL) or a records JSONL file. Never modified.
        corpus_dir: the corpus folder; the documents the gold set cites are re-chunked with the manifest's
            ``chunker_version``. ``None``: the corpus rules (V001-V005) are "not checked: corpus unavailable".
        correction: a JSONL correction file (full replacement records or ``{"id", "patch": [RFC 6902 ops]}``),
            or several applied in order; the report then describes the corrected set and carries the complete diff,
            the rule statuses that changed and, with ``impact``, the metric impact (``report.correction``).
        contract: a contract file, a folder of contracts, or a loaded :class:`Contract`; default
            ``validators/<slug>-v<major>.toml`` (see :mod:`harness.validate.contract`).
        impact: with ``correction``, the metric-impact hook (see :func:`validate_correction`).

    Returns:
        :class:`ValidationReport` with ``exit_code`` 0 (valid) or 1 (a rule failed), ``to_json()`` and
        ``render(report, console)``. Rule codes: see :mod:`harness.validate.rules`.

    Raises:
        HarnessInputError: unusable input, exit code 2 (missing or malformed files, a record that does not fit the
            schema, missing or malformed contract, corpus directory absent or unreadable, unknown chunker with a
            corpus given, a correction that is not valid RFC 6902 or cannot be applied). The message is one line
            naming the file and the field.
    """
    if correction is not None:
        return validate_correction(dataset_dir, correction, corpus_dir=corpus_dir, contract=contract, impact=impact)[0]
    if impact is not None:
        raise HarnessInputError("--impact: re-scoring runs needs a --correction to compare the gold sets")
    t0 = time.perf_counter()
    gs = load_goldset(dataset_dir)
    c = resolve_contract(gs, contract)
    corpus = _open_corpus(gs, corpus_dir)
    report = validate_goldset(gs, contract=c, corpus=corpus)
    report.elapsed_s = round(time.perf_counter() - t0, 3)
    return report
