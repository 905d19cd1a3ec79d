"""Corpus rules V001–V005: quotes, chunks, document metadata, heading paths and corpus identity.

They need ``--corpus`` (the documents the gold set cites, re-chunked); without it they are reported as "not
checked: corpus unavailable", never as passed.
"""

from __future__ import annotations

import re

from harness.corpus.quotes import check_quote
from harness.corpus.view import common_heading_path
from harness.goldset.schema import GoldRecord
from harness.validate.report import Finding
from harness.validate.rules.base import Context, fail, not_applicable, not_checked, ok, rule


@rule("V001", "quote-contiguous", scope="record", needs_corpus=True)
def v001_quote_contiguous(ctx: Context, i: int, rec: GoldRecord) -> list[Finding]:
    """each quote is one contiguous span of its cited chunk (normalised)

    Checks: each quote, after the chunker's normaliser, is one contiguous span of the chunk it cites (glued,
    cross-boundary and wrong-chunk quotes fail)
    """
    assert ctx.corpus is not None
    out = []
    for gi, g in enumerate(rec.gold_documents):
        doc = ctx.corpus.doc(str(g.document_id))
        for ei, e in enumerate(g.evidence):
            where = f"gold_documents[{gi}].evidence[{ei}].quote"
            if doc is None:
                out.append(not_checked(f"document {g.document_id} is not in the corpus (see V003)", where))
                continue
            chunk = doc.by_id.get(str(e.chunk_id))
            if chunk is None:
                out.append(not_checked(f"cited chunk {e.chunk_id} not found (see V002)", where))
                continue
            qc = check_quote(doc, chunk.index, e.quote, ctx.corpus.chunker.normalize)
            out.append(ok() if qc.ok else fail(qc.message, where, kind=qc.kind, **qc.details))
    return out


@rule("V002", "chunk-exists", scope="record", needs_corpus=True)
def v002_chunk_exists(ctx: Context, i: int, rec: GoldRecord) -> list[Finding]:
    """chunk_id exists under the manifest's chunker, belongs to its document, chunk_index agrees

    Checks: each chunk_id exists under the manifest's chunker, belongs to its gold document, and its chunk_index
    agrees
    """
    assert ctx.corpus is not None
    cid_name = ctx.corpus.chunker.chunker_id
    out = []
    for gi, g in enumerate(rec.gold_documents):
        doc_id = str(g.document_id)
        doc = ctx.corpus.doc(doc_id)
        for ei, e in enumerate(g.evidence):
            where = f"gold_documents[{gi}].evidence[{ei}].chunk_id"
            if doc is None:
                out.append(not_checked(f"document {doc_id} is not in the corpus (see V003)", where))
                continue
            cid = str(e.chunk_id)
            chunk = doc.by_id.get(cid)
            if chunk is not None:
                if chunk.index == e.chunk_index:
                    out.append(ok())
                else:
                    out.append(
                        fail(
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
            out.append(fail(msg, where, suggested=hint_ids[:1]))
    return out


def _check_doc_meta(
    ctx: Context, where: str, doc_id, relpath, pub_date, section, *, optional: bool = False
) -> list[Finding]:
    """Compare one document reference with the corpus metadata: relpath and publication_date when given; section
    where the corpus has one (for an ``optional`` reference, an alternative, only when given)."""
    assert ctx.corpus is not None
    meta = ctx.corpus.docs.get(str(doc_id))
    if meta is None:
        return [fail(f"document {doc_id} is not in the corpus", f"{where}.document_id")]
    out = []
    if relpath is not None:
        out.append(
            ok()
            if relpath == meta.path
            else fail(f"relpath {relpath!r} differs from the corpus path {meta.path!r}", f"{where}.relpath")
        )
    if pub_date is not None:
        out.append(
            ok()
            if pub_date == meta.date
            else fail(
                f"publication_date {pub_date!r} differs from the corpus date {meta.date!r}",
                f"{where}.publication_date",
            )
        )
    if meta.section is not None and (section is not None or not optional):
        out.append(
            ok()
            if section == meta.section
            else fail(f"section {section!r} differs from the corpus section {meta.section!r}", f"{where}.section")
        )
    return out


@rule("V003", "document-metadata", scope="record", needs_corpus=True)
def v003_document_metadata(ctx: Context, i: int, rec: GoldRecord) -> list[Finding]:
    """gold document exists; relpath, publication_date, section agree with the corpus

    Checks: each gold document (and alternative) exists; relpath = metadata path and publication_date = metadata
    date where given (V013 says whether they must be), section = metadata section/edition where the corpus has
    one (a gold document's missing section then fails)
    """
    out = []
    for gi, g in enumerate(rec.gold_documents):
        w = f"gold_documents[{gi}]"
        out += _check_doc_meta(ctx, w, g.document_id, g.relpath, g.publication_date, g.section)
        for ai, a in enumerate(g.alternatives):
            out += _check_doc_meta(
                ctx, f"{w}.alternatives[{ai}]", a.document_id, a.relpath, a.publication_date, a.section, optional=True
            )
    return out


@rule("V004", "heading-path", scope="record", needs_corpus=True)
def v004_heading_path(ctx: Context, i: int, rec: GoldRecord) -> list[Finding]:
    """heading_path, when given, equals the cited chunk's heading path

    Checks: a gold document's heading_path, when given, equals the heading path of its cited chunk(s) (their
    longest common prefix when they differ; not applicable to a gold document without evidence)
    """
    assert ctx.corpus is not None
    norm = ctx.corpus.chunker.normalize
    out = []
    for gi, g in enumerate(rec.gold_documents):
        if g.heading_path is None:
            continue
        where = f"gold_documents[{gi}].heading_path"
        doc = ctx.corpus.doc(str(g.document_id))
        if doc is None:
            out.append(not_checked(f"document {g.document_id} is not in the corpus (see V003)", where))
            continue
        if not g.evidence:  # a documents-only judgement (e.g. a grade-1 document): there is nothing to compare
            out.append(
                not_applicable("the gold document cites no evidence, so no chunk heading path to compare with", where)
            )
            continue
        chunks = [doc.by_id.get(str(e.chunk_id)) for e in g.evidence]
        if any(c is None for c in chunks):
            out.append(not_checked("heading path has no resolvable cited chunk to compare with (see V002)", where))
            continue
        common = [norm(h) for h in common_heading_path(chunks, norm)]
        given = [norm(h) for h in g.heading_path]
        if given == common:
            out.append(ok())
        else:
            out.append(
                fail(
                    f"heading_path {g.heading_path} differs from the cited chunk's {list(chunks[0].heading_path)}"
                    if len(chunks) == 1
                    else f"heading_path {g.heading_path} differs from the cited chunks' common path {common}",
                    where,
                    expected=common,
                )
            )
    return out


@rule("V005", "corpus-identity", scope="dataset", needs_corpus=True)
def v005_corpus_identity(ctx: Context) -> list[Finding]:
    """the manifest's corpus (hash/id, documents, date range) is the corpus given

    Checks: the manifest's corpus (hash or id, document count, date range: each as far as the manifest declares
    it) is the corpus given; a manifest that names no corpus fails
    """
    assert ctx.corpus is not None
    if ctx.manifest is None:  # a bare records file run by `harness run` (validate refuses it with a corpus)
        return [not_applicable("a records file without a manifest declares no corpus", "manifest")]
    src, m = ctx.corpus.source, ctx.manifest
    out = []
    if not m.corpus_hash and not m.corpus_version:
        return [
            fail(
                "the manifest names no corpus (no corpus_hash, no corpus_version), so it cannot be checked against "
                f"{src.corpus_id}; import or resolve the set with --corpus",
                "manifest.corpus_version",
            )
        ]
    if m.corpus_hash:
        out.append(
            ok()
            if m.corpus_hash == src.corpus_hash
            else fail(
                f"manifest corpus_hash {m.corpus_hash[:12]}… but the corpus given hashes to {src.corpus_hash[:12]}…",
                "manifest.corpus_hash",
            )
        )
    name, sep, h = (m.corpus_version or "").rpartition("@")
    if sep and re.fullmatch(r"[0-9a-f]{6,64}", h):
        out.append(
            ok()
            if src.corpus_hash.startswith(h)
            else fail(
                f"manifest corpus_version {m.corpus_version!r} but the corpus given is "
                f"{src.name}@{src.corpus_hash[:12]}",
                "manifest.corpus_version",
            )
        )
    elif not m.corpus_hash and m.corpus_version:
        out.append(
            ok()
            if m.corpus_version == src.name
            else fail(
                f"manifest corpus_version {m.corpus_version!r} names no hash and is not the corpus given "
                f"({src.corpus_id})",
                "manifest.corpus_version",
            )
        )
    if m.corpus_documents is not None:
        out.append(
            ok()
            if m.corpus_documents == len(src.docs)
            else fail(
                f"manifest corpus_documents {m.corpus_documents} but the corpus given has {len(src.docs)}",
                "manifest.corpus_documents",
            )
        )
    dmin, dmax = src.date_range
    for key, want, got in (("corpus_date_min", m.corpus_date_min, dmin), ("corpus_date_max", m.corpus_date_max, dmax)):
        if key not in m.model_fields_set:
            continue
        out.append(
            ok() if want == got else fail(f"manifest {key} {want} but the corpus given has {got}", f"manifest.{key}")
        )
    return out
