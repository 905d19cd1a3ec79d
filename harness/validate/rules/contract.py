"""Contract rules V010–V017: what the per-version contract (``validators/*.toml``) asks of the whole set and of each
record: counts, categories, required fields, id prefixes, manifest consistency, splits.
"""

from __future__ import annotations

import re
from collections import defaultdict

from harness.goldset.schema import GoldRecord
from harness.validate.report import Finding
from harness.validate.rules.base import Context, fail, not_applicable, not_checked, ok, rule


@rule("V010", "question-count", scope="dataset", needs_corpus=False)
def v010_question_count(ctx: Context) -> list[Finding]:
    """exact number of questions (contract)

    Checks: exact number of questions (contract ``total_questions``)
    """
    n, want = len(ctx.records), ctx.contract.total_questions
    return [ok() if n == want else fail(f"{n} questions; the contract requires {want}", "records")]


@rule("V011", "category-count", scope="dataset", needs_corpus=False)
def v011_category_count(ctx: Context) -> list[Finding]:
    """exact number of questions per category (contract)

    Checks: exact number per category (contract ``per_category``)
    """
    counts: dict[str, int] = defaultdict(int)
    for r in ctx.records:
        counts[r.category] += 1
    out = []
    for cat, want in ctx.contract.per_category.items():
        got = counts.get(cat, 0)
        out.append(ok() if got == want else fail(f"category {cat}: {got} questions; the contract requires {want}", cat))
    return out


@rule("V012", "category-allowed", scope="record", needs_corpus=False)
def v012_category_allowed(ctx: Context, i: int, rec: GoldRecord) -> list[Finding]:
    """category is allowed by the contract

    Checks: category is one of the contract's ``categories``
    """
    if rec.category in ctx.contract.categories:
        return [ok()]
    return [fail(f"category {rec.category!r} is not allowed by the contract", "category")]


def _present(model, name: str) -> bool:
    if name not in model.model_fields_set:
        return False
    v = getattr(model, name)
    if v is None:
        return False
    return not (isinstance(v, str) and not v.strip())


@rule("V013", "required-fields", scope="record", needs_corpus=False)
def v013_required_fields(ctx: Context, i: int, rec: GoldRecord) -> list[Finding]:
    """contract's required record and gold-document fields are present, non-null, not blank

    Checks: contract ``required_fields`` / ``required_gold_document_fields`` are present, non-null, and not
    blank strings (lists may be empty: V033 says which gold documents need evidence)
    """
    out = []
    for f in ctx.contract.required_fields:
        out.append(ok() if _present(rec, f) else fail(f"required field {f} is missing or empty", f))
    for gi, g in enumerate(rec.gold_documents):
        for f in ctx.contract.required_gold_document_fields:
            w = f"gold_documents[{gi}].{f}"
            out.append(ok() if _present(g, f) else fail(f"required field {f} is missing or empty", w))
    return out


@rule("V014", "id-prefix", scope="record", needs_corpus=False)
def v014_id_prefix(ctx: Context, i: int, rec: GoldRecord) -> list[Finding]:
    """id starts with the contract's prefix for its category

    Checks: id starts with the contract's prefix for its category (SP-, LI-, ...)
    """
    prefix = ctx.contract.id_prefixes.get(rec.category)
    if prefix is None:
        return [not_checked(f"the contract sets no id prefix for category {rec.category!r}", "id")]
    if rec.qid.startswith(prefix):
        return [ok()]
    return [fail(f"id {rec.qid!r} does not start with {prefix!r} (category {rec.category})", "id")]


@rule("V015", "manifest-consistency", scope="dataset", needs_corpus=False)
def v015_manifest_consistency(ctx: Context) -> list[Finding]:
    """what the manifest declares about the records is true

    Checks: what the manifest declares (total_questions, questions_per_category, categories, records_sha256,
    corpus_hash vs corpus_version) is true
    """
    m = ctx.manifest
    if m is None:
        return [not_applicable("no manifest", "manifest")]
    out = []
    n = len(ctx.records)
    declared = m.model_fields_set
    if m.total_questions is not None:
        out.append(
            ok()
            if m.total_questions == n
            else fail(f"manifest total_questions {m.total_questions} but the file has {n}", "manifest.total_questions")
        )
    counts: dict[str, int] = defaultdict(int)
    for r in ctx.records:
        counts[r.category] += 1
    cats = list(m.categories) if "categories" in declared else list(ctx.contract.categories)
    if m.questions_per_category is not None:
        bad = {c: counts.get(c, 0) for c in cats if counts.get(c, 0) != m.questions_per_category}
        out.append(
            ok()
            if not bad
            else fail(
                f"manifest questions_per_category {m.questions_per_category} but the file has "
                + ", ".join(f"{c} {k}" for c, k in bad.items()),
                "manifest.questions_per_category",
            )
        )
    if "categories" in declared:
        extra = sorted(set(counts) - set(m.categories))
        mismatch = sorted(set(m.categories) ^ set(ctx.contract.categories))
        if extra:
            out.append(fail(f"categories used but not in the manifest: {extra}", "manifest.categories"))
        elif mismatch:
            out.append(fail(f"manifest categories differ from the contract's: {mismatch}", "manifest.categories"))
        else:
            out.append(ok())
    if m.records_sha256:
        out.append(
            ok()
            if m.records_sha256 == ctx.goldset.sha256
            else fail(
                f"manifest records_sha256 {m.records_sha256[:12]}… but the records file hashes to "
                f"{ctx.goldset.sha256[:12]}…",
                "manifest.records_sha256",
            )
        )
    _, sep, h = (m.corpus_version or "").rpartition("@")
    if m.corpus_hash and sep and re.fullmatch(r"[0-9a-f]{6,64}", h):
        out.append(
            ok()
            if m.corpus_hash.startswith(h)
            else fail(
                f"manifest corpus_version {m.corpus_version!r} disagrees with its corpus_hash {m.corpus_hash[:12]}…",
                "manifest.corpus_version",
            )
        )
    return out or [ok()]


@rule("V016", "split-count", scope="dataset", needs_corpus=False)
def v016_split_count(ctx: Context) -> list[Finding]:
    """exact number of questions per split (contract, when set)

    Checks: exact number per split (contract ``per_split``, when set)
    """
    if not ctx.contract.per_split:
        return [not_applicable("the contract sets no per_split counts", "contract.per_split")]
    counts: dict[str, int] = defaultdict(int)
    for r in ctx.records:
        counts[r.split or "none"] += 1
    out = []
    for split, want in ctx.contract.per_split.items():
        got = counts.get(split, 0)
        out.append(
            ok() if got == want else fail(f"split {split}: {got} questions; the contract requires {want}", split)
        )
    if counts.get("none"):
        out.append(fail(f"{counts['none']} question(s) have no split", "split"))
    return out


@rule("V017", "split-grouping", scope="dataset", needs_corpus=False)
def v017_split_grouping(ctx: Context) -> list[Finding]:
    """questions sharing a gold document share a split (contract, when set)

    Checks: questions sharing a gold document share a split (contract ``split_grouping``, when true)
    """
    if not ctx.contract.split_grouping:
        return [not_applicable("the contract does not ask for split grouping", "contract.split_grouping")]
    by_doc: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for r in ctx.records:
        for g in r.gold_documents:
            by_doc[str(g.document_id)][r.split or "none"].append(r.qid)
    out = []
    for doc_id in sorted(by_doc):
        splits = by_doc[doc_id]
        if len(splits) > 1:
            desc = "; ".join(f"{s}: {', '.join(q)}" for s, q in sorted(splits.items()))
            out.append(fail(f"gold document {doc_id} is shared across splits ({desc})", doc_id))
        else:
            out.append(ok())
    return out or [ok()]
