"""The validation rules: one function per rule, each with a stable code.

Codes never change meaning; a new rule gets a new code. Rules marked *corpus* need ``--corpus``; without it they
are reported as "not checked: corpus unavailable", never as passed. A rule the contract does not ask for (V016
without ``per_split``, V017 without ``split_grouping``), or that does not concern a record (V030 outside
multi_document, V015 without a manifest), is reported as "not applicable", never as passed.

===== ======================= ======= ====== =========================================================================
code  name                    scope   corpus checks
===== ======================= ======= ====== =========================================================================
V001  quote-contiguous        record  yes    each quote, after the chunker's normaliser, is one contiguous span of the
                                             chunk it cites (glued, cross-boundary and wrong-chunk quotes fail)
V002  chunk-exists            record  yes    each chunk_id exists under the manifest's chunker, belongs to its gold
                                             document, and its chunk_index agrees
V003  document-metadata       record  yes    each gold document (and alternative) exists; relpath = metadata path
                                             and publication_date = metadata date where given (V013 says whether
                                             they must be), section = metadata section/edition where the corpus has
                                             one (a gold document's missing section then fails)
V004  heading-path            record  yes    a gold document's heading_path, when given, equals the heading path of its
                                             cited chunk(s) (their longest common prefix when they differ; not
                                             applicable to a gold document without evidence)
V005  corpus-identity         dataset yes    the manifest's corpus (hash or id, document count, date range: each
                                             as far as the manifest declares it) is the corpus given; a manifest
                                             that names no corpus fails
V010  question-count          dataset no     exact number of questions (contract ``total_questions``)
V011  category-count          dataset no     exact number per category (contract ``per_category``)
V012  category-allowed        record  no     category is one of the contract's ``categories``
V013  required-fields         record  no     contract ``required_fields`` / ``required_gold_document_fields`` are
                                             present, non-null, and not blank strings (lists may be empty: V033 says
                                             which gold documents need evidence)
V014  id-prefix               record  no     id starts with the contract's prefix for its category (SP-, LI-, ...)
V015  manifest-consistency    dataset no     what the manifest declares (total_questions, questions_per_category,
                                             categories, records_sha256, corpus_hash vs corpus_version) is true
V016  split-count             dataset no     exact number per split (contract ``per_split``, when set)
V017  split-grouping          dataset no     questions sharing a gold document share a split (contract
                                             ``split_grouping``, when true)
V020  unique-id               record  no     no other record has the same id
V021  unique-question         record  no     no other record has the same question after normalisation (chunker
                                             normaliser, casefold, punctuation dropped)
V030  multi-document-hops     record  no     multi_document questions have >= 2 distinct gold documents and
                                             required_hops >= 2 (when given)
V031  false-premise           record  no     category negative_false_premise <=> answerability false_premise;
                                             false-premise questions have a reference answer that corrects the premise
                                             (contains a contract ``premise_correction_markers`` word), an
                                             unanswerable_reason, and a gold document with a ``refutation_roles`` role
                                             and at least one quote; answerable questions have neither
V032  as-of-date              record  no     as_of is not earlier than the newest gold document's publication_date (both
                                             ISO dates; not applicable without as_of)
V033  evidence-present        record  no     at least one gold document; gold documents distinct; every required
                                             (grade 2) gold document has evidence (unless the contract says
                                             ``require_evidence = false``: a documents-only set); no quote empty after
                                             normalisation; no repeated (chunk_id, quote) within a document
===== ======================= ======= ====== =========================================================================
"""

from __future__ import annotations

import datetime as dt
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.corpus.chunker import normalize_text
from harness.goldset.io import GoldSet
from harness.goldset.schema import GoldManifest, GoldRecord
from harness.validate.contract import Contract
from harness.validate.corpusview import CorpusView, common_heading_path
from harness.validate.quotes import check_quote
from harness.validate.report import Finding, RuleInfo

__all__ = ["RULES", "RULE_INFO", "Context", "normalize_question"]


@dataclass
class Context:
    """Everything the rules read.

    Attributes:
        goldset: the gold set (possibly corrected in memory).
        lines: JSONL line of each record, by index.
        contract: the contract.
        corpus: the corpus view, or ``None`` when the corpus is unavailable.
    """

    goldset: GoldSet
    lines: list[int | None]
    contract: Contract
    corpus: CorpusView | None = None
    _ids: dict[str, list[int]] = field(default_factory=dict)
    _questions: dict[str, list[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for i, rec in enumerate(self.records):
            self._ids.setdefault(rec.qid, []).append(i)
            self._questions.setdefault(normalize_question(rec.question), []).append(i)

    @property
    def records(self) -> list[GoldRecord]:
        """The records in file order."""
        return self.goldset.records

    @property
    def manifest(self) -> GoldManifest | None:
        """The manifest, if any."""
        return self.goldset.manifest


def normalize_question(q: str) -> str:
    """Question key for duplicate detection: chunker normaliser, casefold, punctuation dropped, spaces collapsed."""
    t = re.sub(r"[^\w\s]", " ", normalize_text(q).casefold())
    return re.sub(r"\s+", " ", t).strip()


def _ok() -> Finding:
    return Finding("pass", "")


def _fail(msg: str, where: str = "", **details) -> Finding:
    return Finding("fail", msg, where, details)


def _nc(msg: str, where: str = "") -> Finding:
    return Finding("not_checked", msg, where)


def _na(msg: str, where: str = "") -> Finding:
    return Finding("not_applicable", msg, where)


def _line(ctx: Context, i: int) -> str:
    ln = ctx.lines[i] if i < len(ctx.lines) else None
    return f"line {ln}" if ln is not None else f"record #{i + 1}"


# --------------------------------------------------------------------------------------------- corpus rules


def v001_quote_contiguous(ctx: Context, i: int, rec: GoldRecord) -> list[Finding]:
    """V001 quote-contiguous: returns one Finding per check (see the module table)."""
    assert ctx.corpus is not None
    out = []
    for gi, g in enumerate(rec.gold_documents):
        doc = ctx.corpus.doc(str(g.document_id))
        for ei, e in enumerate(g.evidence):
            where = f"gold_documents[{gi}].evidence[{ei}].quote"
            if doc is None:
                out.append(_nc(f"document {g.document_id} is not in the corpus (see V003)", where))
                continue
            chunk = doc.by_id.get(str(e.chunk_id))
            if chunk is None:
                out.append(_nc(f"cited chunk {e.chunk_id} not found (see V002)", where))
                continue
            qc = check_quote(doc, chunk.index, e.quote, ctx.corpus.chunker.normalize)
            out.append(_ok() if qc.ok else _fail(qc.message, where, kind=qc.kind, **qc.details))
    return out


def v002_chunk_exists(ctx: Context, i: int, rec: GoldRecord) -> list[Finding]:
    """V002 chunk-exists: returns one Finding per check (see the module table)."""
    assert ctx.corpus is not None
    cid_name = ctx.corpus.chunker.chunker_id
    out = []
    for gi, g in enumerate(rec.gold_documents):
        doc_id = str(g.document_id)
        doc = ctx.corpus.doc(doc_id)
        for ei, e in enumerate(g.evidence):
            where = f"gold_documents[{gi}].evidence[{ei}].chunk_id"
            if doc is None:
                out.append(_nc(f"document {doc_id} is not in the corpus (see V003)", where))
                continue
            cid = str(e.chunk_id)
            chunk = doc.by_id.get(cid)
            if chunk is not None:
                if chunk.index == e.chunk_index:
                    out.append(_ok())
                else:
                    out.append(
                        _fail(
                            f"chunk_index {e.chunk_index} disagrees with chunk {cid} (index {chunk.index})",
                            f"gold_documents[{gi}].evidence[{ei}].chunk_index",
                            expected=chunk.index,
                        )
                    )
                continue
            # where is the quote really? (a hint for the fix)
            q = ctx.corpus.chunker.normalize(e.quote)
            hint_ids = [c.chunk_id for c, t in zip(doc.chunks, doc.norm, strict=True) if q and q in t]
            hint = f"; the quote occurs in chunk {hint_ids[0]}" if hint_ids else ""
            other = ctx.corpus.locate_chunk(cid)
            if other is not None:
                msg = f"chunk {cid} belongs to document {other.doc_id}, not to {doc_id}{hint}"
            elif cid.rpartition("#")[0] == doc_id and cid.rpartition("#")[2].isdigit():
                msg = (
                    f"no chunk {cid}: document {doc_id} has {len(doc.chunks)} chunks under {cid_name} "
                    f"(a chunk id from another chunker version or an edited document?){hint}"
                )
            else:
                msg = (
                    f"chunk id {cid!r} is not a {cid_name} chunk id of this corpus (expected "
                    f"'{doc_id}#<index>'; an id from another chunker version?){hint}"
                )
            out.append(_fail(msg, where, suggested=hint_ids[:1]))
    return out


def _check_doc_meta(
    ctx: Context, where: str, doc_id, relpath, pub_date, section, *, optional: bool = False
) -> list[Finding]:
    """Compare one document reference with the corpus metadata: relpath and publication_date when given; section
    where the corpus has one (for an ``optional`` reference, an alternative, only when given)."""
    assert ctx.corpus is not None
    meta = ctx.corpus.docs.get(str(doc_id))
    if meta is None:
        return [_fail(f"document {doc_id} is not in the corpus", f"{where}.document_id")]
    out = []
    if relpath is not None:
        out.append(
            _ok()
            if relpath == meta.path
            else _fail(f"relpath {relpath!r} differs from the corpus path {meta.path!r}", f"{where}.relpath")
        )
    if pub_date is not None:
        out.append(
            _ok()
            if pub_date == meta.date
            else _fail(
                f"publication_date {pub_date!r} differs from the corpus date {meta.date!r}",
                f"{where}.publication_date",
            )
        )
    if meta.section is not None and (section is not None or not optional):
        out.append(
            _ok()
            if section == meta.section
            else _fail(f"section {section!r} differs from the corpus section {meta.section!r}", f"{where}.section")
        )
    return out


def v003_document_metadata(ctx: Context, i: int, rec: GoldRecord) -> list[Finding]:
    """V003 document-metadata: returns one Finding per check (see the module table)."""
    out = []
    for gi, g in enumerate(rec.gold_documents):
        w = f"gold_documents[{gi}]"
        out += _check_doc_meta(ctx, w, g.document_id, g.relpath, g.publication_date, g.section)
        for ai, a in enumerate(g.alternatives):
            out += _check_doc_meta(
                ctx, f"{w}.alternatives[{ai}]", a.document_id, a.relpath, a.publication_date, a.section, optional=True
            )
    return out


def v004_heading_path(ctx: Context, i: int, rec: GoldRecord) -> list[Finding]:
    """V004 heading-path: returns one Finding per check (see the module table)."""
    assert ctx.corpus is not None
    norm = ctx.corpus.chunker.normalize
    out = []
    for gi, g in enumerate(rec.gold_documents):
        if g.heading_path is None:
            continue
        where = f"gold_documents[{gi}].heading_path"
        doc = ctx.corpus.doc(str(g.document_id))
        if doc is None:
            out.append(_nc(f"document {g.document_id} is not in the corpus (see V003)", where))
            continue
        if not g.evidence:  # a documents-only judgement (e.g. a grade-1 document): there is nothing to compare
            out.append(_na("the gold document cites no evidence, so no chunk heading path to compare with", where))
            continue
        chunks = [doc.by_id.get(str(e.chunk_id)) for e in g.evidence]
        if any(c is None for c in chunks):
            out.append(_nc("heading path has no resolvable cited chunk to compare with (see V002)", where))
            continue
        common = [norm(h) for h in common_heading_path(chunks, norm)]
        given = [norm(h) for h in g.heading_path]
        if given == common:
            out.append(_ok())
        else:
            out.append(
                _fail(
                    f"heading_path {g.heading_path} differs from the cited chunk's {list(chunks[0].heading_path)}"
                    if len(chunks) == 1
                    else f"heading_path {g.heading_path} differs from the cited chunks' common path {common}",
                    where,
                    expected=common,
                )
            )
    return out


def v005_corpus_identity(ctx: Context) -> list[Finding]:
    """V005 corpus-identity: returns one Finding per check (see the module table)."""
    assert ctx.corpus is not None and ctx.manifest is not None
    src, m = ctx.corpus.source, ctx.manifest
    out = []
    if not m.corpus_hash and not m.corpus_version:
        return [
            _fail(
                "the manifest names no corpus (no corpus_hash, no corpus_version), so it cannot be checked against "
                f"{src.corpus_id}; import or resolve the set with --corpus",
                "manifest.corpus_version",
            )
        ]
    if m.corpus_hash:
        out.append(
            _ok()
            if m.corpus_hash == src.corpus_hash
            else _fail(
                f"manifest corpus_hash {m.corpus_hash[:12]}… but the corpus given hashes to {src.corpus_hash[:12]}…",
                "manifest.corpus_hash",
            )
        )
    name, sep, h = (m.corpus_version or "").rpartition("@")
    if sep and re.fullmatch(r"[0-9a-f]{6,64}", h):
        out.append(
            _ok()
            if src.corpus_hash.startswith(h)
            else _fail(
                f"manifest corpus_version {m.corpus_version!r} but the corpus given is "
                f"{src.name}@{src.corpus_hash[:12]}",
                "manifest.corpus_version",
            )
        )
    elif not m.corpus_hash and m.corpus_version:
        out.append(
            _ok()
            if m.corpus_version == src.name
            else _fail(
                f"manifest corpus_version {m.corpus_version!r} names no hash and is not the corpus given "
                f"({src.corpus_id})",
                "manifest.corpus_version",
            )
        )
    if m.corpus_documents is not None:
        out.append(
            _ok()
            if m.corpus_documents == len(src.docs)
            else _fail(
                f"manifest corpus_documents {m.corpus_documents} but the corpus given has {len(src.docs)}",
                "manifest.corpus_documents",
            )
        )
    dmin, dmax = src.date_range
    for key, want, got in (("corpus_date_min", m.corpus_date_min, dmin), ("corpus_date_max", m.corpus_date_max, dmax)):
        if key not in m.model_fields_set:
            continue
        out.append(
            _ok() if want == got else _fail(f"manifest {key} {want} but the corpus given has {got}", f"manifest.{key}")
        )
    return out


# --------------------------------------------------------------------------------------------- contract rules


def v010_question_count(ctx: Context) -> list[Finding]:
    """V010 question-count: returns one Finding per check (see the module table)."""
    n, want = len(ctx.records), ctx.contract.total_questions
    return [_ok() if n == want else _fail(f"{n} questions; the contract requires {want}", "records")]


def v011_category_count(ctx: Context) -> list[Finding]:
    """V011 category-count: returns one Finding per check (see the module table)."""
    counts: dict[str, int] = defaultdict(int)
    for r in ctx.records:
        counts[r.category] += 1
    out = []
    for cat, want in ctx.contract.per_category.items():
        got = counts.get(cat, 0)
        out.append(
            _ok() if got == want else _fail(f"category {cat}: {got} questions; the contract requires {want}", cat)
        )
    return out


def v012_category_allowed(ctx: Context, i: int, rec: GoldRecord) -> list[Finding]:
    """V012 category-allowed: returns one Finding per check (see the module table)."""
    if rec.category in ctx.contract.categories:
        return [_ok()]
    return [_fail(f"category {rec.category!r} is not allowed by the contract", "category")]


def _present(model, name: str) -> bool:
    if name not in model.model_fields_set:
        return False
    v = getattr(model, name)
    if v is None:
        return False
    return not (isinstance(v, str) and not v.strip())


def v013_required_fields(ctx: Context, i: int, rec: GoldRecord) -> list[Finding]:
    """V013 required-fields: returns one Finding per check (see the module table)."""
    out = []
    for f in ctx.contract.required_fields:
        out.append(_ok() if _present(rec, f) else _fail(f"required field {f} is missing or empty", f))
    for gi, g in enumerate(rec.gold_documents):
        for f in ctx.contract.required_gold_document_fields:
            w = f"gold_documents[{gi}].{f}"
            out.append(_ok() if _present(g, f) else _fail(f"required field {f} is missing or empty", w))
    return out


def v014_id_prefix(ctx: Context, i: int, rec: GoldRecord) -> list[Finding]:
    """V014 id-prefix: returns one Finding per check (see the module table)."""
    prefix = ctx.contract.id_prefixes.get(rec.category)
    if prefix is None:
        return [_nc(f"the contract sets no id prefix for category {rec.category!r}", "id")]
    if rec.qid.startswith(prefix):
        return [_ok()]
    return [_fail(f"id {rec.qid!r} does not start with {prefix!r} (category {rec.category})", "id")]


def v015_manifest_consistency(ctx: Context) -> list[Finding]:
    """V015 manifest-consistency: returns one Finding per check (see the module table)."""
    m = ctx.manifest
    if m is None:
        return [_na("no manifest", "manifest")]
    out = []
    n = len(ctx.records)
    declared = m.model_fields_set
    if m.total_questions is not None:
        out.append(
            _ok()
            if m.total_questions == n
            else _fail(f"manifest total_questions {m.total_questions} but the file has {n}", "manifest.total_questions")
        )
    counts: dict[str, int] = defaultdict(int)
    for r in ctx.records:
        counts[r.category] += 1
    cats = list(m.categories) if "categories" in declared else list(ctx.contract.categories)
    if m.questions_per_category is not None:
        bad = {c: counts.get(c, 0) for c in cats if counts.get(c, 0) != m.questions_per_category}
        out.append(
            _ok()
            if not bad
            else _fail(
                f"manifest questions_per_category {m.questions_per_category} but the file has "
                + ", ".join(f"{c} {k}" for c, k in bad.items()),
                "manifest.questions_per_category",
            )
        )
    if "categories" in declared:
        extra = sorted(set(counts) - set(m.categories))
        mismatch = sorted(set(m.categories) ^ set(ctx.contract.categories))
        if extra:
            out.append(_fail(f"categories used but not in the manifest: {extra}", "manifest.categories"))
        elif mismatch:
            out.append(_fail(f"manifest categories differ from the contract's: {mismatch}", "manifest.categories"))
        else:
            out.append(_ok())
    if m.records_sha256:
        out.append(
            _ok()
            if m.records_sha256 == ctx.goldset.sha256
            else _fail(
                f"manifest records_sha256 {m.records_sha256[:12]}… but the records file hashes to "
                f"{ctx.goldset.sha256[:12]}…",
                "manifest.records_sha256",
            )
        )
    _, sep, h = (m.corpus_version or "").rpartition("@")
    if m.corpus_hash and sep and re.fullmatch(r"[0-9a-f]{6,64}", h):
        out.append(
            _ok()
            if m.corpus_hash.startswith(h)
            else _fail(
                f"manifest corpus_version {m.corpus_version!r} disagrees with its corpus_hash {m.corpus_hash[:12]}…",
                "manifest.corpus_version",
            )
        )
    return out or [_ok()]


def v016_split_count(ctx: Context) -> list[Finding]:
    """V016 split-count: returns one Finding per check (see the module table)."""
    if not ctx.contract.per_split:
        return [_na("the contract sets no per_split counts", "contract.per_split")]
    counts: dict[str, int] = defaultdict(int)
    for r in ctx.records:
        counts[r.split or "none"] += 1
    out = []
    for split, want in ctx.contract.per_split.items():
        got = counts.get(split, 0)
        out.append(
            _ok() if got == want else _fail(f"split {split}: {got} questions; the contract requires {want}", split)
        )
    if counts.get("none"):
        out.append(_fail(f"{counts['none']} question(s) have no split", "split"))
    return out


def v017_split_grouping(ctx: Context) -> list[Finding]:
    """V017 split-grouping: returns one Finding per check (see the module table)."""
    if not ctx.contract.split_grouping:
        return [_na("the contract does not ask for split grouping", "contract.split_grouping")]
    by_doc: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for r in ctx.records:
        for g in r.gold_documents:
            by_doc[str(g.document_id)][r.split or "none"].append(r.qid)
    out = []
    for doc_id in sorted(by_doc):
        splits = by_doc[doc_id]
        if len(splits) > 1:
            desc = "; ".join(f"{s}: {', '.join(q)}" for s, q in sorted(splits.items()))
            out.append(_fail(f"gold document {doc_id} is shared across splits ({desc})", doc_id))
        else:
            out.append(_ok())
    return out or [_ok()]


# --------------------------------------------------------------------------------------------- record rules


def v020_unique_id(ctx: Context, i: int, rec: GoldRecord) -> list[Finding]:
    """V020 unique-id: returns one Finding per check (see the module table)."""
    others = [j for j in ctx._ids[rec.qid] if j != i]
    if not others:
        return [_ok()]
    return [_fail(f"id {rec.qid!r} is also used at {', '.join(_line(ctx, j) for j in others)}", "id")]


def v021_unique_question(ctx: Context, i: int, rec: GoldRecord) -> list[Finding]:
    """V021 unique-question: returns one Finding per check (see the module table)."""
    others = [j for j in ctx._questions[normalize_question(rec.question)] if j != i]
    if not others:
        return [_ok()]
    ids = ", ".join(f"{ctx.records[j].qid} ({_line(ctx, j)})" for j in others)
    return [_fail(f"the same question (after normalisation) is asked by {ids}", "question")]


def v030_multi_document_hops(ctx: Context, i: int, rec: GoldRecord) -> list[Finding]:
    """V030 multi-document-hops: returns one Finding per check (see the module table)."""
    if rec.category != "multi_document":
        return [_na("only multi_document questions", "category")]
    out = []
    n_docs = len({str(g.document_id) for g in rec.gold_documents})
    out.append(
        _ok() if n_docs >= 2 else _fail(f"multi_document question with {n_docs} gold document(s)", "gold_documents")
    )
    if rec.required_hops is not None:  # absent: V013 says whether the contract requires it
        out.append(
            _ok()
            if rec.required_hops >= 2
            else _fail(f"multi_document question with required_hops {rec.required_hops}", "required_hops")
        )
    return out


def _has_marker(text: str, markers: tuple[str, ...]) -> bool:
    words = re.findall(r"\w+", normalize_text(text).casefold())
    for m in markers:
        if m.endswith("*"):
            if any(w.startswith(m[:-1]) for w in words):
                return True
        elif m in words:
            return True
    return False


def v031_false_premise(ctx: Context, i: int, rec: GoldRecord) -> list[Finding]:
    """V031 false-premise: returns one Finding per check (see the module table)."""
    out = []
    roles = set(ctx.contract.refutation_roles)
    is_fp = rec.answerability == "false_premise"
    if "negative_false_premise" in ctx.contract.categories or rec.category == "negative_false_premise":
        if (rec.category == "negative_false_premise") != is_fp:
            out.append(
                _fail(
                    f"category {rec.category} with answerability {rec.answerability} "
                    "(negative_false_premise questions, and only they, are false_premise)",
                    "answerability",
                )
            )
        else:
            out.append(_ok())
    refuting = [g for g in rec.gold_documents if g.role in roles]
    if is_fp:
        if not (rec.reference_answer or "").strip():
            out.append(_fail("false-premise question without a reference answer", "reference_answer"))
        elif ctx.contract.premise_correction_markers and not _has_marker(
            rec.reference_answer, ctx.contract.premise_correction_markers
        ):
            out.append(
                _fail(
                    "reference answer does not correct the premise (none of the contract's "
                    "premise_correction_markers occurs in it)",
                    "reference_answer",
                )
            )
        else:
            out.append(_ok())
        out.append(
            _ok()
            if rec.unanswerable_reason and rec.unanswerable_reason.strip()
            else _fail("false-premise question without an unanswerable_reason", "unanswerable_reason")
        )
        if not refuting:
            out.append(_fail(f"no gold document with a refuting role ({', '.join(sorted(roles))})", "gold_documents"))
        elif not any(g.evidence for g in refuting):
            out.append(_fail("the refuting gold document has no quote", "gold_documents"))
        else:
            out.append(_ok())
    else:
        out.append(
            _ok()
            if rec.unanswerable_reason is None or not rec.unanswerable_reason.strip()
            else _fail(
                f"answerable question with unanswerable_reason {rec.unanswerable_reason!r}", "unanswerable_reason"
            )
        )
        if refuting:
            gi = rec.gold_documents.index(refuting[0])
            out.append(
                _fail(f"answerable question with a {refuting[0].role} gold document", f"gold_documents[{gi}].role")
            )
        else:
            out.append(_ok())
    return out


def _iso(s: str | None) -> dt.date | None:
    try:
        return dt.date.fromisoformat(s)
    except (TypeError, ValueError):
        return None


def v032_as_of_date(ctx: Context, i: int, rec: GoldRecord) -> list[Finding]:
    """V032 as-of-date: returns one Finding per check (see the module table)."""
    out = []
    as_of = _iso(rec.as_of)
    newest: tuple[dt.date, int] | None = None
    for gi, g in enumerate(rec.gold_documents):
        if g.publication_date is None:  # absent: V013 says whether the contract requires it
            continue
        d = _iso(g.publication_date)
        if d is None or len(g.publication_date) != 10:
            out.append(
                _fail(
                    f"publication_date {g.publication_date!r} is not an ISO date",
                    f"gold_documents[{gi}].publication_date",
                )
            )
            continue
        if newest is None or d > newest[0]:
            newest = (d, gi)
    if rec.as_of is None:
        out.append(_na("no as_of date to compare with", "as_of"))
    elif as_of is None:
        out.append(_fail(f"as_of {rec.as_of!r} is not an ISO date", "as_of"))
    elif newest is not None:
        out.append(
            _ok()
            if as_of >= newest[0]
            else _fail(
                f"as_of {rec.as_of} is earlier than gold document {rec.gold_documents[newest[1]].document_id}'s "
                f"publication_date {newest[0].isoformat()}",
                "as_of",
            )
        )
    return out or [_ok()]


def v033_evidence_present(ctx: Context, i: int, rec: GoldRecord) -> list[Finding]:
    """V033 evidence-present: returns one Finding per check (see the module table)."""
    if not rec.gold_documents:
        return [_fail("no gold documents", "gold_documents")]
    out = []
    seen: dict[str, int] = {}
    for gi, g in enumerate(rec.gold_documents):
        did = str(g.document_id)
        if did in seen:
            out.append(_fail(f"gold document {did} repeats gold_documents[{seen[did]}]", f"gold_documents[{gi}]"))
        else:
            seen[did] = gi
            out.append(_ok())
        if g.effective_grade == 2 and not g.evidence and ctx.contract.require_evidence:
            out.append(_fail(f"required gold document {did} has no evidence", f"gold_documents[{gi}].evidence"))
        pairs: set[tuple[str, str]] = set()
        for ei, e in enumerate(g.evidence):
            where = f"gold_documents[{gi}].evidence[{ei}]"
            q = normalize_text(e.quote)
            if not q:
                out.append(_fail("quote is empty after normalisation", f"{where}.quote"))
            elif (str(e.chunk_id), q) in pairs:
                out.append(_fail("the same chunk and quote are cited twice", where))
            else:
                out.append(_ok())
            pairs.add((str(e.chunk_id), q))
    return out


RecordRule = Callable[[Context, int, GoldRecord], list[Finding]]
DatasetRule = Callable[[Context], list[Finding]]

_TABLE: list[tuple[RuleInfo, RecordRule | DatasetRule]] = [
    (
        RuleInfo(
            "V001",
            "quote-contiguous",
            "each quote is one contiguous span of its cited chunk (normalised)",
            "record",
            True,
        ),
        v001_quote_contiguous,
    ),
    (
        RuleInfo(
            "V002",
            "chunk-exists",
            "chunk_id exists under the manifest's chunker, belongs to its document, chunk_index agrees",
            "record",
            True,
        ),
        v002_chunk_exists,
    ),
    (
        RuleInfo(
            "V003",
            "document-metadata",
            "gold document exists; relpath, publication_date, section agree with the corpus",
            "record",
            True,
        ),
        v003_document_metadata,
    ),
    (
        RuleInfo(
            "V004", "heading-path", "heading_path, when given, equals the cited chunk's heading path", "record", True
        ),
        v004_heading_path,
    ),
    (
        RuleInfo(
            "V005",
            "corpus-identity",
            "the manifest's corpus (hash/id, documents, date range) is the corpus given",
            "dataset",
            True,
        ),
        v005_corpus_identity,
    ),
    (RuleInfo("V010", "question-count", "exact number of questions (contract)", "dataset", False), v010_question_count),
    (
        RuleInfo("V011", "category-count", "exact number of questions per category (contract)", "dataset", False),
        v011_category_count,
    ),
    (
        RuleInfo("V012", "category-allowed", "category is allowed by the contract", "record", False),
        v012_category_allowed,
    ),
    (
        RuleInfo(
            "V013",
            "required-fields",
            "contract's required record and gold-document fields are present, non-null, not blank",
            "record",
            False,
        ),
        v013_required_fields,
    ),
    (
        RuleInfo("V014", "id-prefix", "id starts with the contract's prefix for its category", "record", False),
        v014_id_prefix,
    ),
    (
        RuleInfo(
            "V015", "manifest-consistency", "what the manifest declares about the records is true", "dataset", False
        ),
        v015_manifest_consistency,
    ),
    (
        RuleInfo("V016", "split-count", "exact number of questions per split (contract, when set)", "dataset", False),
        v016_split_count,
    ),
    (
        RuleInfo(
            "V017",
            "split-grouping",
            "questions sharing a gold document share a split (contract, when set)",
            "dataset",
            False,
        ),
        v017_split_grouping,
    ),
    (RuleInfo("V020", "unique-id", "no duplicate ids", "record", False), v020_unique_id),
    (
        RuleInfo("V021", "unique-question", "no duplicate questions after normalisation", "record", False),
        v021_unique_question,
    ),
    (
        RuleInfo(
            "V030", "multi-document-hops", "multi_document: >= 2 gold documents and required_hops >= 2", "record", False
        ),
        v030_multi_document_hops,
    ),
    (
        RuleInfo(
            "V031",
            "false-premise",
            "false-premise questions correct the premise with a refuting quote; answerable ones do not",
            "record",
            False,
        ),
        v031_false_premise,
    ),
    (
        RuleInfo("V032", "as-of-date", "as_of is not earlier than the newest gold document", "record", False),
        v032_as_of_date,
    ),
    (
        RuleInfo(
            "V033",
            "evidence-present",
            "gold documents present and distinct; required ones have non-empty quotes",
            "record",
            False,
        ),
        v033_evidence_present,
    ),
]

RULES: dict[str, tuple[RuleInfo, RecordRule | DatasetRule]] = {info.code: (info, fn) for info, fn in _TABLE}
"""``{code: (RuleInfo, function)}`` in code order."""

RULE_INFO: list[RuleInfo] = [info for info, _ in _TABLE]
"""The rules' descriptions in code order."""
