"""Record rules V020–V035: uniqueness, multi-document hops, false premises, dates and evidence, record by record."""

from __future__ import annotations

import datetime as dt
import re

from harness.corpus.chunker import normalize_text
from harness.goldset.schema import GoldRecord
from harness.validate.report import Finding
from harness.validate.rules.base import (
    Context,
    fail,
    line_of,
    normalize_question,
    not_applicable,
    ok,
    rule,
    warn,
)

LISTED = 5
"""Records a repeat finding names (V020, V021, V035); the rest are counted, so the findings of n records that
repeat one id or question grow like n, not n² (issue 44 item 9: 20,000 repeats made 44 MB of findings)."""


def _listed(ctx: Context, others: list[int], *, with_ids: bool) -> str:
    """``SP-001 (line 3), ... and 7 more`` (at most :data:`LISTED` named)."""
    shown = [f"{ctx.records[j].qid} ({line_of(ctx, j)})" if with_ids else line_of(ctx, j) for j in others[:LISTED]]
    more = len(others) - len(shown)
    return ", ".join(shown) + (f" and {more:,} more" if more else "")


def _repeat(ctx: Context, i: int, group: list[int], subject: str, field: str, *, with_ids: bool) -> Finding:
    """The finding of record ``i`` in ``group`` (the indices of the records that repeat one value, in file order):
    the first names the others (at most :data:`LISTED`) and the count; each later one names the first, once."""
    n = len(group)
    if i == group[0]:
        return fail(f"{subject} {_listed(ctx, group[1:], with_ids=with_ids)}", field, records=n)
    first = _listed(ctx, group[:1], with_ids=with_ids)
    more = f" and {n - 2:,} more record(s), listed at {line_of(ctx, group[0])}" if n > 2 else ""
    return fail(f"{subject} {first}{more}", field, records=n, first=ctx.records[group[0]].qid)


@rule("V020", "unique-id", scope="record", needs_corpus=False)
def v020_unique_id(ctx: Context, i: int, rec: GoldRecord) -> list[Finding]:
    """no duplicate ids

    Checks: no other record has the same id (a repeated id is listed once, on its first record, with the count)
    """
    group = ctx.ids_at[rec.qid]
    if len(group) == 1:
        return [ok()]
    return [_repeat(ctx, i, group, f"id {rec.qid!r} is also used at", "id", with_ids=False)]


@rule("V021", "unique-question", scope="record", needs_corpus=False)
def v021_unique_question(ctx: Context, i: int, rec: GoldRecord) -> list[Finding]:
    """no duplicate questions after normalisation

    Checks: no other record has the same question after normalisation (chunker normaliser, casefold, punctuation
    dropped); a repeated question is listed once, on its first record, with the count
    """
    group = ctx.questions_at[normalize_question(rec.question)]
    if len(group) == 1:
        return [ok()]
    return [_repeat(ctx, i, group, "the same question (after normalisation) is asked by", "question", with_ids=True)]


@rule("V030", "multi-document-hops", scope="record", needs_corpus=False)
def v030_multi_document_hops(ctx: Context, i: int, rec: GoldRecord) -> list[Finding]:
    """multi_document: >= 2 gold documents and required_hops >= 2

    Checks: multi_document questions have >= 2 distinct gold documents and required_hops >= 2 (when given)
    """
    if rec.category != "multi_document":
        return [not_applicable("only multi_document questions", "category")]
    out = []
    n_docs = len({str(g.document_id) for g in rec.gold_documents})
    out.append(
        ok() if n_docs >= 2 else fail(f"multi_document question with {n_docs} gold document(s)", "gold_documents")
    )
    if rec.required_hops is not None:  # absent: V013 says whether the contract requires it
        out.append(
            ok()
            if rec.required_hops >= 2
            else fail(f"multi_document question with required_hops {rec.required_hops}", "required_hops")
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


@rule("V031", "false-premise", scope="record", needs_corpus=False)
def v031_false_premise(ctx: Context, i: int, rec: GoldRecord) -> list[Finding]:
    """false-premise questions correct the premise with a refuting quote; answerable ones do not

    Checks: category negative_false_premise <=> answerability false_premise; false-premise questions have a
    reference answer that corrects the premise (contains a contract ``premise_correction_markers`` word), an
    unanswerable_reason, and a gold document with a ``refutation_roles`` role and at least one quote; answerable
    questions have neither
    """
    out = []
    roles = set(ctx.contract.refutation_roles)
    is_fp = rec.answerability == "false_premise"
    if "negative_false_premise" in ctx.contract.categories or rec.category == "negative_false_premise":
        if (rec.category == "negative_false_premise") != is_fp:
            out.append(
                fail(
                    f"category {rec.category} with answerability {rec.answerability} "
                    "(negative_false_premise questions, and only they, are false_premise)",
                    "answerability",
                )
            )
        else:
            out.append(ok())
    refuting = [g for g in rec.gold_documents if g.role in roles]
    if is_fp:
        if not (rec.reference_answer or "").strip():
            out.append(fail("false-premise question without a reference answer", "reference_answer"))
        elif ctx.contract.premise_correction_markers and not _has_marker(
            rec.reference_answer, ctx.contract.premise_correction_markers
        ):
            out.append(
                fail(
                    "reference answer does not correct the premise (none of the contract's "
                    "premise_correction_markers occurs in it)",
                    "reference_answer",
                )
            )
        else:
            out.append(ok())
        out.append(
            ok()
            if rec.unanswerable_reason and rec.unanswerable_reason.strip()
            else fail("false-premise question without an unanswerable_reason", "unanswerable_reason")
        )
        if not refuting:
            out.append(fail(f"no gold document with a refuting role ({', '.join(sorted(roles))})", "gold_documents"))
        elif not any(g.evidence for g in refuting):
            out.append(fail("the refuting gold document has no quote", "gold_documents"))
        else:
            out.append(ok())
    else:
        out.append(
            ok()
            if rec.unanswerable_reason is None or not rec.unanswerable_reason.strip()
            else fail(
                f"answerable question with unanswerable_reason {rec.unanswerable_reason!r}", "unanswerable_reason"
            )
        )
        if refuting:
            gi = rec.gold_documents.index(refuting[0])
            out.append(
                fail(f"answerable question with a {refuting[0].role} gold document", f"gold_documents[{gi}].role")
            )
        else:
            out.append(ok())
    return out


def _iso(s: str | None) -> dt.date | None:
    try:
        return dt.date.fromisoformat(s)
    except (TypeError, ValueError):
        return None


@rule("V032", "as-of-date", scope="record", needs_corpus=False)
def v032_as_of_date(ctx: Context, i: int, rec: GoldRecord) -> list[Finding]:
    """as_of is not earlier than the newest gold document

    Checks: as_of is not earlier than the newest gold document's publication_date (both ISO dates; not
    applicable without as_of)
    """
    out = []
    as_of = _iso(rec.as_of)
    newest: tuple[dt.date, int] | None = None
    for gi, g in enumerate(rec.gold_documents):
        if g.publication_date is None:  # absent: V013 says whether the contract requires it
            continue
        d = _iso(g.publication_date)
        if d is None or len(g.publication_date) != 10:
            out.append(
                fail(
                    f"publication_date {g.publication_date!r} is not an ISO date",
                    f"gold_documents[{gi}].publication_date",
                )
            )
            continue
        if newest is None or d > newest[0]:
            newest = (d, gi)
    if rec.as_of is None:
        out.append(not_applicable("no as_of date to compare with", "as_of"))
    elif as_of is None:
        out.append(fail(f"as_of {rec.as_of!r} is not an ISO date", "as_of"))
    elif newest is not None:
        out.append(
            ok()
            if as_of >= newest[0]
            else fail(
                f"as_of {rec.as_of} is earlier than gold document {rec.gold_documents[newest[1]].document_id}'s "
                f"publication_date {newest[0].isoformat()}",
                "as_of",
            )
        )
    return out or [ok()]


@rule("V033", "evidence-present", scope="record", needs_corpus=False)
def v033_evidence_present(ctx: Context, i: int, rec: GoldRecord) -> list[Finding]:
    """gold documents distinct; required ones have non-empty quotes

    Checks: gold documents distinct; every required (grade 2) gold document has
    evidence (unless the contract says ``require_evidence = false``: a documents-only set; not asked before
    scoring, where no contract is read); no quote empty after normalisation; no repeated (chunk_id, quote) within a
    document. (An empty gold_documents list is refused when the set is loaded.)
    """
    require_evidence = ctx.contract is not None and ctx.contract.require_evidence
    out = []
    seen: dict[str, int] = {}
    for gi, g in enumerate(rec.gold_documents):
        did = str(g.document_id)
        if did in seen:
            out.append(fail(f"gold document {did} repeats gold_documents[{seen[did]}]", f"gold_documents[{gi}]"))
        else:
            seen[did] = gi
            out.append(ok())
        if g.effective_grade == 2 and not g.evidence and require_evidence:
            out.append(fail(f"required gold document {did} has no evidence", f"gold_documents[{gi}].evidence"))
        pairs: set[tuple[str, str]] = set()
        for ei, e in enumerate(g.evidence):
            where = f"gold_documents[{gi}].evidence[{ei}]"
            q = normalize_text(e.quote)
            if not q:
                out.append(fail("quote is empty after normalisation", f"{where}.quote"))
            elif (str(e.chunk_id), q) in pairs:
                out.append(fail("the same chunk and quote are cited twice", where))
            else:
                out.append(ok())
            pairs.add((str(e.chunk_id), q))
    return out


@rule("V034", "answer-figures-quoted", scope="record", needs_corpus=False)
def v034_answer_figures_quoted(ctx: Context, i: int, rec: GoldRecord) -> list[Finding]:
    """the reference answer's figures occur in its quotes (warn)

    Checks: every date, article number and number of the reference answer occurs in one of the record's quotes
    (``quote`` and ``source_quote`` of every evidence item) or in its question (the answer restating what was
    asked; extraction and matching: :mod:`harness.validate.figures`); a figure found in none is a *warning*
    (status ``warn``: a person checks the answer against the law; the exit code does not change). Not applicable
    without a reference answer or without quotes (a documents-only record)
    """
    if not rec.reference_answer:
        return [not_applicable("no reference answer", "reference_answer")]
    quotes = [q for g in rec.gold_documents for e in g.evidence for q in (e.quote, e.source_quote) if q]
    if not quotes:
        return [not_applicable("no quotes to compare the reference answer with", "reference_answer")]
    from harness.validate.figures import unsupported_figures  # on first use: `import harness.validate` stays light

    missing = unsupported_figures(rec.reference_answer, quotes, also_in=rec.question)
    if not missing:
        return [ok()]
    return [
        warn(
            f"figure(s) of the reference answer found in none of its quotes: {', '.join(missing)}",
            "reference_answer",
            figures=missing,
        )
    ]


@rule("V035", "alternatives-consistent", scope="record", needs_corpus=False)
def v035_alternatives_consistent(ctx: Context, i: int, rec: GoldRecord) -> list[Finding]:
    """an alternative is never a second required document beside the one it replaces

    Checks: for every alternative A of a gold document D, no record (this one included) lists D and A as two
    distinct required (grade 2) gold documents: an alternative says A may replace D (it carries the same text), two
    required documents say both are needed (two hops), and the two readings cannot both hold (e.g. a law and the
    law that abrogates it). A grade-1 (useful) document beside D elsewhere is not flagged. Not applicable to a
    record without alternatives
    """
    out = []
    for gi, g in enumerate(rec.gold_documents):
        doc = str(g.document_id)
        for ai, alt in enumerate(g.alternatives):
            a = str(alt.document_id)
            both = ctx.required_by_both(doc, a)
            if a == doc:
                out.append(fail(f"{doc} lists itself as an alternative", f"gold_documents[{gi}].alternatives[{ai}]"))
            elif both:
                where = _listed(ctx, both, with_ids=True)
                out.append(
                    fail(
                        f"{a} is an alternative of {doc} here, but {where} list(s) {doc} and {a} as two distinct "
                        "required gold documents (hops)",
                        f"gold_documents[{gi}].alternatives[{ai}]",
                    )
                )
    if not any(g.alternatives for g in rec.gold_documents):
        return [not_applicable("no alternatives", "gold_documents")]
    return out or [ok()]
