"""Evidence defined by quotes, resolved per chunker (issue 20, item 1).

A gold record's evidence is, per gold document, the document plus exact quotes *as written* (``source_quote`` when
present, else ``quote``; consecutive items sharing one ``source_quote`` are one quote split at chunk boundaries, as
:mod:`harness.curation.resolve` writes them). Everything chunker-specific is derived from them:

1. **Locating** (one quote matcher in the project). Each quote is searched in its document re-chunked by the gold
   set's own chunker (:class:`harness.corpus.view.CorpusView`) with
   :func:`harness.corpus.quotes.quote_occurrences` on the chunker-normalised text; among several occurrences the
   one :func:`harness.corpus.quotes.choose_occurrence` picks with the stored ``chunk_index`` as hint is cited.
   The occurrence is mapped back to the document's NFC source text
   (:func:`harness.corpus.chunker.normalize_with_offsets`): its *evidence characters* are the source characters of
   its non-space normalised characters (whitespace and the markup the normaliser removes are not evidence). A
   question's quoted evidence ``E_q`` is their union (overlaps once):
   :class:`harness.metrics.quoted.QuotedEvidence`, the input of ``evidence_recall@<B>w``.
2. **Chunks of a chunker X.** The document is chunked by X; a quote's chunks are the chunks of X whose half-open
   ``[char_start, char_end)`` holds one of its evidence characters, in document order. One chunk: the evidence item
   keeps the quote as written; several: the quote is *split* and each item's ``quote`` is the normalised source text
   of its part, all carrying ``source_quote`` (the resolver's rule). Under the gold set's own chunker this
   reproduces the stored chunk ids (tested on the real gold set).

The result, :class:`EvidenceResolution`, is cached as JSON under ``<workdir>/evidence/`` per (gold-set sha256,
corpus hash, chunker id): the file name holds all three, the file repeats them in full (and the gold set's chunker)
and is recomputed when any differs; it is written atomically, with a derived-file manifest ``<key>.manifest.json``
(:mod:`harness.derived`, kind ``evidence-cache``: size and sha256, the hash taken again only when the size or mtime
changed). A cache file that fails it (edited, truncated, no manifest) is recomputed with one notice on stderr
(issue 26, item 2): never read as it is.
"""

from __future__ import annotations

import bisect
import dataclasses
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from harness.corpus.chunker import Chunk, get_chunker, normalize_with_offsets
from harness.corpus.quotes import choose_occurrence, quote_occurrences
from harness.corpus.source import CorpusSource
from harness.corpus.store import Corpus, open_db
from harness.corpus.view import CorpusView, DocChunks
from harness.derived import check_manifest, damaged_notice, write_manifest
from harness.errors import HarnessInputError
from harness.goldset.io import GoldSet
from harness.goldset.schema import Evidence, GoldRecord
from harness.io import atomic_write_json
from harness.metrics.quoted import ChunkExtent, QuotedEvidence, Spans, merge_spans

__all__ = [
    "CACHE_VERSION",
    "EvidenceResolution",
    "chunk_extents",
    "resolve_evidence",
]

CACHE_VERSION = 1
"""Version of the cache file layout (a different version is recomputed)."""


@dataclass
class EvidenceResolution:
    """Quotes located in the corpus and their chunks under one chunker (module docstring).

    Attributes:
        chunker_id: the chunker the chunk ids belong to.
        goldset_chunker: the gold set's own chunker (the one the stored chunk ids and hints belong to).
        goldset_sha256, corpus_hash: the other two parts of the cache key.
        quoted: ``{qid: {document id: merged evidence-character spans}}`` of every question whose quotes were all
            located (offsets in the NFC source text); a question without quotes, or with one not located, is absent.
        items: ``{qid: [[evidence item dicts of gold document 0], [... of gold document 1], ...]}`` under
            ``chunker_id``, for the questions in ``quoted``.
        n_quotes, n_resolved, n_split: quotes of the gold set, how many were located, how many of those lie in more
            than one chunk of ``chunker_id``.
        unresolved: one located line per quote not found (``record <qid>: gold_documents[i].evidence[j]: ...``).
    """

    chunker_id: str
    goldset_chunker: str
    goldset_sha256: str
    corpus_hash: str
    quoted: dict[str, dict[str, Spans]] = field(default_factory=dict)
    items: dict[str, list[list[dict]]] = field(default_factory=dict)
    n_quotes: int = 0
    n_resolved: int = 0
    n_split: int = 0
    unresolved: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        """The cache key ``<gold-set sha256[:16]>-<corpus hash[:16]>-<chunker id>`` (also the file's stem)."""
        return f"{self.goldset_sha256[:16]}-{self.corpus_hash[:16]}-{self.chunker_id}"

    def quoted_evidence(self, qid: str) -> QuotedEvidence | None:
        """``E_q`` of one question, ``None`` when it has no located quote (excluded from the budget family)."""
        spans = self.quoted.get(qid)
        return None if not spans else QuotedEvidence(spans)

    def info(self) -> dict:
        """What a run record states about the resolution: chunker, cache key and counts."""
        return {
            "chunker_id": self.chunker_id,
            "goldset_chunker": self.goldset_chunker,
            "cache_key": self.key,
            "n_quotes": self.n_quotes,
            "n_resolved": self.n_resolved,
            "n_split": self.n_split,
            "n_unresolved": len(self.unresolved),
            "n_questions_with_quotes": len(self.quoted),
        }

    def records(self, goldset: GoldSet) -> list[GoldRecord]:
        """The gold set's records with each gold document's evidence replaced by its items under ``chunker_id``.

        Raises:
            HarnessInputError: a quote was not located (its chunks under ``chunker_id`` are unknown), naming it.
        """
        if self.unresolved:
            more = f" (+{len(self.unresolved) - 1} more)" if len(self.unresolved) > 1 else ""
            raise HarnessInputError(
                f"{goldset.records_path}: {self.unresolved[0]}{more}: its chunks under {self.chunker_id} are unknown"
            )
        out = []
        for rec in goldset.records:
            per_doc = self.items.get(rec.qid)
            if per_doc is None:
                out.append(rec)
                continue
            docs = [
                g.model_copy(update={"evidence": [Evidence.model_validate(e) for e in items]})
                for g, items in zip(rec.gold_documents, per_doc, strict=True)
            ]
            out.append(rec.model_copy(update={"gold_documents": docs}))
        return out

    def to_json(self) -> dict:
        """The cache file's content."""
        return {"cache_version": CACHE_VERSION, **dataclasses.asdict(self)}

    @classmethod
    def from_json(cls, obj: dict) -> EvidenceResolution:
        """Read a cache file's content (spans back to tuples)."""
        body = {k: v for k, v in obj.items() if k != "cache_version"}
        body["quoted"] = {
            q: {d: tuple((int(s), int(e)) for s, e in sp) for d, sp in docs.items()}
            for q, docs in body["quoted"].items()
        }
        return cls(**body)


def _quote_groups(evidence: list[Evidence]) -> list[tuple[int, list[Evidence]]]:
    """``(first item index, items)`` per quote: consecutive items sharing one ``source_quote`` are one quote."""
    groups: list[tuple[int, list[Evidence]]] = []
    for i, ev in enumerate(evidence):
        if groups and ev.source_quote is not None and ev.source_quote == groups[-1][1][0].source_quote:
            groups[-1][1].append(ev)
        else:
            groups.append((i, [ev]))
    return groups


class _Located:
    """Per document: the normalised chunk texts of the gold set's chunker with their source offsets."""

    def __init__(self, doc: DocChunks) -> None:
        self.doc = doc
        self.maps: list[list[int]] = []
        for c, norm in zip(doc.chunks, doc.norm, strict=True):
            text, offs = normalize_with_offsets(c.text)
            if text != norm:  # pragma: no cover - guarded by the property test against normalize_text
                raise AssertionError(f"chunk {c.chunk_id}: offset-tracking normaliser disagrees with the chunker's")
            self.maps.append([c.char_start + o for o in offs])

    def evidence_chars(self, quote_norm: str, hint: int | None) -> list[int] | None:
        """Source offsets of the cited occurrence's evidence characters (sorted), ``None`` when not found."""
        occs = quote_occurrences(self.doc, quote_norm)
        if not occs:
            return None
        occ, _why = choose_occurrence(occs, hint)
        chars: list[int] = []
        for c in occ.chunks:
            lo = self.doc.starts[c.index]
            norm = self.doc.norm[c.index]
            for k in range(max(occ.start, lo) - lo, min(occ.end, lo + len(norm)) - lo):
                if norm[k] != " ":
                    chars.append(self.maps[c.index][k])
        return chars


def _items_for(chars: list[int], text: str, chunks: list[Chunk], starts: list[int], normalize) -> list[dict]:
    """The evidence items of one located quote under a chunker: one per chunk holding an evidence character."""
    by_chunk: dict[int, list[int]] = {}
    for p in chars:
        i = bisect.bisect_right(starts, p) - 1
        if i >= 0 and chunks[i].char_start <= p < chunks[i].char_end:
            by_chunk.setdefault(i, []).append(p)
        else:  # pragma: no cover - chunkers cover every word outside heading lines, and quotes lie in chunk text
            raise AssertionError(f"evidence character {p} lies in no chunk")
    if len(by_chunk) == 1:
        (i,) = by_chunk
        return [{"chunk_id": chunks[i].chunk_id, "chunk_index": chunks[i].index, "quote": text}]
    items = []
    for i in sorted(by_chunk):
        ps = by_chunk[i]
        c = chunks[i]
        part = normalize(c.text[ps[0] - c.char_start : ps[-1] + 1 - c.char_start])
        items.append({"chunk_id": c.chunk_id, "chunk_index": c.index, "quote": part, "source_quote": text})
    return items


def _compute(goldset: GoldSet, source: CorpusSource, chunker_id: str, goldset_chunker: str) -> EvidenceResolution:
    own = CorpusView(source, get_chunker(goldset_chunker))
    target = own if chunker_id == goldset_chunker else CorpusView(source, get_chunker(chunker_id))
    res = EvidenceResolution(chunker_id, goldset_chunker, goldset.sha256, source.corpus_hash)
    located: dict[str, _Located] = {}
    normalize = own.chunker.normalize
    for rec in goldset.records:
        spans: dict[str, list[tuple[int, int]]] = {}
        per_doc: list[list[dict]] = []
        ok = True
        for gi, g in enumerate(rec.gold_documents):
            doc_id = str(g.document_id)
            items: list[dict] = []
            groups = _quote_groups(g.evidence)
            if groups and doc_id not in located:
                doc = own.doc(doc_id)
                if doc is None:
                    raise HarnessInputError(
                        f"{goldset.records_path}: record {rec.qid}: field gold_documents[{gi}].document_id: "
                        f"unknown document {doc_id!r} (not in {source.corpus_id})"
                    )
                located[doc_id] = _Located(doc)
            for ei, group in groups:
                res.n_quotes += 1
                text = group[0].source_quote or group[0].quote
                chars = located[doc_id].evidence_chars(normalize(text), group[0].chunk_index)
                if not chars:
                    res.unresolved.append(
                        f"record {rec.qid}: field gold_documents[{gi}].evidence[{ei}].quote: quote not found in "
                        f"document {doc_id}"
                    )
                    ok = False
                    continue
                res.n_resolved += 1
                tdoc = target.doc(doc_id)
                assert tdoc is not None  # the same corpus holds it
                starts = [c.char_start for c in tdoc.chunks]
                new = _items_for(chars, text, tdoc.chunks, starts, normalize)
                res.n_split += len(new) > 1
                items += new
                spans.setdefault(doc_id, []).extend((p, p + 1) for p in chars)
            per_doc.append(items)
        if ok and spans:
            res.quoted[rec.qid] = {d: merge_spans(sp) for d, sp in spans.items()}
            res.items[rec.qid] = per_doc
    return res


def resolve_evidence(
    goldset: GoldSet, source: CorpusSource, chunker_id: str, *, workdir: str | Path | None = None
) -> EvidenceResolution:
    """Locate the gold set's quotes and derive their chunks under ``chunker_id`` (module docstring), cached.

    Args:
        goldset: the loaded gold set (its ``sha256`` and manifest ``chunker_version``, default ``md-words-v1``).
        source: the scanned corpus (:func:`harness.corpus.ingest.scan_corpus`).
        chunker_id: a registered chunker.
        workdir: where the cache lives (``<workdir>/evidence/<key>.json``); ``None``: no cache.

    Returns:
        The :class:`EvidenceResolution` (from the cache when its three keys and the gold set's chunker match).

    Raises:
        HarnessInputError: an unknown chunker, or a gold document the corpus does not hold.
    """
    goldset_chunker = goldset.manifest.chunker_version if goldset.manifest else "md-words-v1"
    get_chunker(chunker_id)
    probe = EvidenceResolution(chunker_id, goldset_chunker, goldset.sha256, source.corpus_hash)
    path = None if workdir is None else Path(workdir) / "evidence" / f"{probe.key}.json"
    manifest = None if path is None else path.with_name(f"{probe.key}.manifest.json")
    if path is not None and path.is_file():
        problem = check_manifest(manifest, "evidence-cache", {path.name: path})
        try:
            if problem is not None:
                damaged_notice("evidence cache", path, problem)
                raise ValueError(problem)
            obj = json.loads(path.read_text("utf-8"))
            cached = EvidenceResolution.from_json(obj) if obj.get("cache_version") == CACHE_VERSION else None
        except (ValueError, TypeError, KeyError, AttributeError):
            cached = None  # a damaged cache file is derived: recompute it
        if cached is not None and (
            cached.chunker_id,
            cached.goldset_chunker,
            cached.goldset_sha256,
            cached.corpus_hash,
        ) == (chunker_id, goldset_chunker, goldset.sha256, source.corpus_hash):
            return cached
    res = _compute(goldset, source, chunker_id, goldset_chunker)
    if path is not None:
        atomic_write_json(path, res.to_json(), indent=None)
        write_manifest(manifest, "evidence-cache", {path.name: path})
    return res


def chunk_extents(corpus: Corpus) -> ChunkExtents:
    """``{chunk id: ChunkExtent}`` of the chunks of a corpus database (document, offsets, word count), read on demand:
    what the budget family reads at scoring time (:class:`ChunkExtents`)."""
    return ChunkExtents(corpus.path)


class ChunkExtents(Mapping[str, ChunkExtent]):
    """The chunk extents of a corpus database as a read-only mapping, each read when first asked for.

    Scoring needs the extents of the ranked chunks only (questions x systems x the chunk depth); reading every chunk
    into a dict cost tens of seconds and gigabytes at DOF scale (6.73 M chunks). A lookup is one query on the unique
    ``chunk_id`` index of its own read-only connection (opened on first use), memoised.

    Args:
        db_path: the corpus database.
    """

    def __init__(self, db_path: str | Path):
        self.db_path = Path(db_path)
        self._memo: dict[str, ChunkExtent | None] = {}
        self._conn = None

    def _db(self):
        if self._conn is None:
            self._conn = open_db(self.db_path, readonly=True)
        return self._conn

    def __getitem__(self, chunk_id: str) -> ChunkExtent:
        if chunk_id not in self._memo:
            row = (
                self._db()
                .execute("SELECT doc_id, char_start, char_end, n_words FROM chunks WHERE chunk_id = ?", (chunk_id,))
                .fetchone()
            )
            self._memo[chunk_id] = None if row is None else ChunkExtent(*row)
        ext = self._memo[chunk_id]
        if ext is None:
            raise KeyError(chunk_id)
        return ext

    def __iter__(self) -> Iterator[str]:
        return (r[0] for r in self._db().execute("SELECT chunk_id FROM chunks ORDER BY rowid"))

    def __len__(self) -> int:
        return int(self._db().execute("SELECT count(*) FROM chunks").fetchone()[0])

    def __getstate__(self) -> dict:
        return {"db_path": self.db_path, "_memo": dict(self._memo), "_conn": None}
