"""``harness goldset resolve``: turn hand-written records (document + exact quote) into a valid dataset folder.

Input: a JSONL file of records in the gold-set schema (:mod:`harness.goldset.schema`), except that per evidence
item ``chunk_id`` and ``chunk_index`` may be missing, null or wrong, and a gold document's ``heading_path`` may be a
string ``"A > B"`` as well as a list. What the author must give: each gold document's ``document_id`` and, per
evidence item, the ``quote`` (exact text of the document, as in V001: compared after the chunker's normaliser).

What resolve does, per evidence item, with the corpus re-chunked by the chunker given (``md-words-v1`` by default;
:class:`harness.corpus.view.CorpusView`):

1. it finds the quote in its document with :func:`harness.corpus.quotes.quote_occurrences` (the search V001
   uses). When the quote occurs more than once, the occurrence containing the chunk the item names
   (``chunk_index``, else ``chunk_id``) wins, else the first occurrence inside a single chunk, else the first
   occurrence; the choice is reported;
2. a quote inside one chunk gets that chunk's ``chunk_id`` and ``chunk_index`` (a different id written by the
   author is replaced and reported); a quote that crosses chunk boundaries is split at those boundaries into one
   evidence item per chunk, each ``quote`` the normalised part inside its chunk (a contiguous span: V001 holds) and
   each keeping the quote as written in ``source_quote``. An item that already has a ``source_quote`` is resolved
   from it (consecutive items with the same ``source_quote`` are one quote), so a set resolved under one chunker
   can be re-resolved under another. A split whose ``source_quote`` copies would exceed :data:`MAX_SPLIT_BYTES`
   (parts x quote bytes: a whole law quoted over hundreds of chunks) is a problem naming the quote's size;
3. a quote not found is a problem: one located line naming the closest match (the chunk whose closest contiguous
   match is most similar, diagnosed by :func:`harness.corpus.quotes.check_quote`, as V001 reports it).

Per gold document: ``heading_path`` becomes the common heading path of its cited chunks (rule V004; a written path
that disagrees is replaced and reported); ``relpath``, ``publication_date`` and ``section`` are filled from the
corpus metadata where it has them (a written value that disagrees is replaced and reported). An unknown document
(or alternative) is a problem.

Output (only when there is no problem and the resolved set validates against its contract and the corpus): the
dataset folder of :mod:`harness.curation.build`, with a starter contract unless one is given. Exit codes of the
CLI: 0 written, 1 resolved but a validation rule fails (nothing written), 2 a problem (nothing written).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import Field, StrictInt, ValidationError

from harness.corpus.chunker import Chunk
from harness.corpus.quotes import Occurrence, check_quote, choose_occurrence, closest_chunk, quote_occurrences
from harness.corpus.view import CorpusView, DocChunks, common_heading_path, open_corpus
from harness.curation.build import BuiltDataset, dataset_manifest, starter_contract, write_dataset
from harness.errors import HarnessInputError
from harness.goldset.io import format_validation_error
from harness.goldset.schema import Evidence, GoldDocument, GoldRecord, Id
from harness.io import read_jsonl, sha256_file
from harness.validate.contract import Contract, load_contract, major_of

__all__ = [
    "DraftRecord",
    "ResolveError",
    "Resolved",
    "folded_occurrences",
    "resolve_goldset",
    "resolve_records",
]

LINE_MARKERS = r"(?:>+|[-+\u2022])"
"""A Markdown line marker as it stands in the chunker's normalised text (:func:`harness.corpus.chunker.
normalize_text` turns the line break before it into a space and keeps it): a blockquote opener ``>`` (``>>``
nested; the opener ``md-legal-v1``'s PREFIX skips) or a list bullet ``-``, ``+``, ``•`` (``*`` bullets are already
removed by the normaliser, as all ``*`` are)."""


def folded_occurrences(doc: DocChunks, quote_norm: str) -> list[Occurrence]:
    """Occurrences of a normalised quote that match once the document's line markers are folded away.

    A quote copied from rendered Markdown has no ``>`` blockquote markers and no list bullets, while the chunk text
    (normalised by the chunker's own :func:`~harness.corpus.chunker.normalize_text`) keeps them as separate tokens
    (``... fracción I; > II. ...``). Between two words of the quote this search lets any run of
    :data:`LINE_MARKERS` tokens stand (and a ``>`` glued to the next word). The spans returned are spans of
    :attr:`DocChunks.joined`, markers included, so the text cut from them is a contiguous span of the chunk (V001
    holds for it). Called only when :func:`~harness.corpus.quotes.quote_occurrences` finds nothing.

    Returns:
        The occurrences in document order (``[]`` when none; non-overlapping, as :func:`re.finditer` gives).
    """
    words = quote_norm.split(" ")
    if not quote_norm or not words:
        return []
    sep = f" (?:{LINE_MARKERS} )*>*"
    rx = re.compile(sep.join(re.escape(w) for w in words))
    return [
        Occurrence(m.start(), m.end(), tuple(doc.chunks_of_span(m.start(), m.end())))
        for m in rx.finditer(doc.joined)
        if m.end() > m.start()
    ]


class DraftEvidence(Evidence):
    """An evidence item as an author writes it: the chunk may be missing, null or wrong."""

    chunk_id: Id | None = None
    chunk_index: StrictInt | None = Field(default=None, ge=0)


class DraftGoldDocument(GoldDocument):
    """A gold document as an author writes it: ``heading_path`` may be a string ``"A > B"``."""

    evidence: list[DraftEvidence] = Field(default_factory=list)
    heading_path: list[str] | str | None = None


class DraftRecord(GoldRecord):
    """A record as an author writes it (see the module docstring)."""

    gold_documents: list[DraftGoldDocument]


class ResolveError(HarnessInputError):
    """Some records cannot be resolved (exit code 2); :attr:`problems` holds one located line per problem."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(f"{problems[0]}{more}; nothing written")


@dataclass
class Resolved:
    """Records resolved in memory (nothing written).

    Attributes:
        records: the resolved records, in input order.
        notes: one located line per change a reader should know of (a replaced heading path, chunk id or metadata
            value; a split quote; a quote that occurs several times).
        problems: one located line per record or quote that could not be resolved (empty when all resolved).
        quotes: number of quotes resolved; ``split``: how many of them crossed chunk boundaries.
        built: the written dataset (set by :func:`resolve_goldset`).
    """

    records: list[GoldRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    quotes: int = 0
    split: int = 0
    built: BuiltDataset | None = None


def _heading_list(hp: list[str] | str | None) -> list[str] | None:
    if isinstance(hp, str):
        return [p.strip() for p in hp.split(">") if p.strip()]
    return hp


def _hint(ev: DraftEvidence, doc: DocChunks) -> int | None:
    """The chunk index an item names (``chunk_index``, else a ``chunk_id`` of this document), if any."""
    if ev.chunk_index is not None:
        return ev.chunk_index
    if ev.chunk_id is not None and str(ev.chunk_id) in doc.by_id:
        return doc.by_id[str(ev.chunk_id)].index
    return None


MAX_SPLIT_BYTES = 2_000_000
"""Most bytes a split quote may write as ``source_quote`` copies (parts x quote bytes; issue 26 item 14): a 1.38 MB
quote over 670 chunks wrote a 925 MB records file and took 6.5 GB; such a quote is refused, naming its size."""


def _resolve_quote(
    doc: DocChunks, view: CorpusView, text: str, group: list[DraftEvidence], where: str, out: Resolved
) -> list[dict] | None:
    """Evidence items for one quote (``group``: the item, or the consecutive items sharing one ``source_quote``),
    or ``None`` (a problem was recorded). Nothing is noted when the group already is what resolution gives."""
    ev = group[0]
    norm = view.chunker.normalize
    q = norm(text)
    if not q:
        out.problems.append(f"{where}.quote: quote is empty after normalisation")
        return None
    occs = quote_occurrences(doc, q)
    folded = False
    if not occs:
        occs = folded_occurrences(doc, q)
        folded = bool(occs)
    if not occs:
        best = closest_chunk(doc, q)
        if best is None:
            out.problems.append(f"{where}.quote: quote not found: document {doc.meta.doc_id} has no text")
            return None
        k, cm = best
        qc = check_quote(doc, k, text, norm)
        out.problems.append(
            f"{where}.quote: quote not found in document {doc.meta.doc_id}; closest match in chunk "
            f"{doc.chunks[k].chunk_id} (similarity {cm['similarity']:.2f}): {qc.message}"
        )
        return None
    occ, why = choose_occurrence(occs, _hint(ev, doc))
    size = len(text.encode("utf-8"))
    if len(occ.chunks) > 1 and len(occ.chunks) * size > MAX_SPLIT_BYTES:
        out.problems.append(
            f"{where}.quote: quote of {size:,} bytes spans {len(occ.chunks)} chunks: split, each part would repeat it "
            f"in source_quote ({len(occ.chunks) * size:,} bytes, over the {MAX_SPLIT_BYTES:,} limit); cite the "
            "passage that answers, not the whole text"
        )
        return None
    out.quotes += 1
    if len(occ.chunks) == 1 and folded:
        c, part = occ.parts(doc)[0]
        items = [{"chunk_id": c.chunk_id, "chunk_index": c.index, "quote": part, "source_quote": text}]
    elif len(occ.chunks) == 1:
        c = occ.chunks[0]
        items = [{"chunk_id": c.chunk_id, "chunk_index": c.index, "quote": text}]
    else:
        out.split += 1
        items = [
            {"chunk_id": c.chunk_id, "chunk_index": c.index, "quote": p, "source_quote": text}
            for c, p in occ.parts(doc)
        ]
    if [e.model_dump(exclude_unset=True) for e in group] == items:
        return items  # already resolved (a set re-resolved under the same chunker)
    if why:
        out.notes.append(f"{where}.quote: {why}")
    if folded:
        out.notes.append(
            f"{where}.quote: found once the chunk's Markdown line markers (> blockquote, list bullets) were folded; "
            "the quote is stored as the chunk has it, the text as written in source_quote"
        )
    if len(items) > 1:
        names = " and ".join(e["chunk_id"] for e in items)
        out.notes.append(
            f"{where}.quote: quote spans chunks {names}: split into {len(items)} evidence items "
            "(each keeps the quote as written in source_quote)"
        )
    elif ev.chunk_id is not None and str(ev.chunk_id) != items[0]["chunk_id"]:
        out.notes.append(
            f"{where}.chunk_id: {str(ev.chunk_id)!r} replaced by {items[0]['chunk_id']!r} (the chunk the quote is in)"
        )
    return items


def _resolve_document(
    g: DraftGoldDocument, raw: dict, view: CorpusView, where: str, out: Resolved
) -> tuple[dict, list[Chunk]] | None:
    doc = view.doc(str(g.document_id))
    if doc is None:
        out.problems.append(f"{where}.document_id: unknown document {g.document_id!r} (not in {view.source.corpus_id})")
        return None
    new = dict(raw)
    meta = doc.meta
    for key, value in (("relpath", meta.path), ("publication_date", meta.date), ("section", meta.section)):
        if value is None:
            continue
        given = raw.get(key)
        if key in raw and given != value:
            out.notes.append(f"{where}.{key}: {given!r} replaced by the corpus metadata's {value!r}")
        new[key] = value
    for ai, a in enumerate(g.alternatives):
        if str(a.document_id) not in view.docs:
            out.problems.append(f"{where}.alternatives[{ai}].document_id: unknown document {a.document_id!r}")
    evidence: list[dict] = []
    ok = True
    groups: list[tuple[int, list[DraftEvidence]]] = []
    for ei, ev in enumerate(g.evidence):
        if groups and ev.source_quote is not None and ev.source_quote == groups[-1][1][0].source_quote:
            groups[-1][1].append(ev)  # another part of one quote split at a chunk boundary
        else:
            groups.append((ei, [ev]))
    for ei, group in groups:
        text = group[0].source_quote or group[0].quote
        items = _resolve_quote(doc, view, text, group, f"{where}.evidence[{ei}]", out)
        if items is None:
            ok = False
        else:
            evidence += items
    if not ok:
        return None
    cited = [doc.chunks[e["chunk_index"]] for e in evidence]
    if "evidence" in raw:
        new["evidence"] = evidence
    written = _heading_list(g.heading_path)
    if cited:
        path = common_heading_path(cited, view.chunker.normalize)
        norm = view.chunker.normalize
        if written is not None and [norm(h) for h in written] != [norm(h) for h in path]:
            shown = g.heading_path if isinstance(g.heading_path, str) else written
            out.notes.append(f"{where}.heading_path: {shown!r} replaced by the cited chunks' {path!r}")
        new["heading_path"] = path
    elif written is not None:
        new["heading_path"] = written
    return new, cited


def resolve_records(records_path: str | Path, view: CorpusView) -> Resolved:
    """Resolve every record of a JSONL file against a re-chunked corpus (module docstring), in memory.

    Args:
        records_path: the hand-written records (JSONL).
        view: the corpus, re-chunked with the chunker the evidence will cite.

    Returns:
        :class:`Resolved`; ``problems`` lists what could not be resolved (``<file>:<line>: record <id>: field
        <path>: <what>``), ``records`` only the records that were.

    Raises:
        HarnessInputError: the file is missing, not UTF-8, or has a line that is not a JSON object; no records.
    """
    path = Path(records_path)
    rows = read_jsonl(path)
    if not rows:
        raise HarnessInputError(f"{path}: no records")
    out = Resolved()
    for line, raw in rows:
        rid = raw.get("id", "?")
        at = f"{path}:{line}: record {rid}: field "
        try:
            draft = DraftRecord.model_validate(raw)
        except ValidationError as exc:
            out.problems.append(f"{path}:{line}: record {rid}: {format_validation_error(exc)}")
            continue
        new = dict(raw)
        docs = []
        ok = True
        for gi, (g, graw) in enumerate(zip(draft.gold_documents, raw["gold_documents"], strict=True)):
            res = _resolve_document(g, graw, view, f"{at}gold_documents[{gi}]", out)
            if res is None:
                ok = False
            else:
                docs.append(res[0])
        if not ok:
            continue
        new["gold_documents"] = docs
        try:
            out.records.append(GoldRecord.model_validate(new))
        except ValidationError as exc:  # pragma: no cover - the draft validated and resolution keeps the types
            out.problems.append(f"{path}:{line}: record {rid}: {format_validation_error(exc)}")
    return out


def resolve_goldset(
    records_path: str | Path,
    corpus_dir: str | Path,
    out: str | Path,
    *,
    chunker: str = "md-words-v1",
    name: str | None = None,
    version: str | None = None,
    contract: str | Path | None = None,
) -> Resolved:
    """Resolve hand-written records and write the dataset folder ``out`` (only when every quote resolves and the
    set validates).

    Args:
        records_path: the records JSONL (never modified).
        corpus_dir: the corpus folder (read only).
        out: the new dataset folder; must not exist, and may not be, contain or lie inside an input.
        chunker: the chunker the evidence cites (``md-words-v1``); recorded as ``chunker_version``.
        name: the gold set's name (default: the contract's ``dataset``, else the records file's stem).
        version: its version (default ``<contract major>.0.0``, else ``1.0.0``).
        contract: a contract file the set must meet; without it a starter contract is written into
            ``out/validators/`` (:func:`harness.curation.build.starter_contract`).

    Returns:
        :class:`Resolved` with ``built`` set: ``built.written`` is ``out`` or ``None`` (a rule failed:
        ``built.report`` says which).

    Raises:
        ResolveError: a record does not fit the schema, a document is unknown, or a quote is not found (exit 2;
            every problem is listed; nothing written).
        HarnessInputError: unusable input (missing files, unknown chunker, a contract that does not fit the name or
            version, ``out`` exists or overlaps an input).
    """
    records_path = Path(records_path)
    c: Contract | None = load_contract(contract) if contract is not None else None
    if c is not None:
        if name is not None and name != c.dataset:
            raise HarnessInputError(f"--name {name!r}: the contract {c.path} is for {c.dataset!r}")
        name = c.dataset
        version = version or f"{c.major}.0.0"
    name = name or records_path.name.removesuffix(".jsonl")
    version = version or "1.0.0"
    major_of(version, where="--version")
    view = open_corpus(corpus_dir, chunker, where="--chunker")
    res = resolve_records(records_path, view)
    if res.problems:
        raise ResolveError(res.problems)
    origin = f"{records_path.name} (sha256 {sha256_file(records_path)[:12]})"
    manifest = dataset_manifest(
        res.records,
        name=name,
        version=version,
        chunker_id=view.chunker.chunker_id,
        source=view.source,
        authoring={
            "method": "harness goldset resolve",
            "source_records": records_path.name,
            "source_records_sha256": sha256_file(records_path),
            "quotes_resolved": res.quotes,
            "quotes_split_at_chunk_boundaries": res.split,
        },
    )
    res.built = write_dataset(
        out,
        res.records,
        manifest,
        contract=c,
        contract_text=None if c is not None else starter_contract(res.records, name, version, origin=origin),
        corpus=view,
        inputs=(records_path, corpus_dir),
    )
    return res
