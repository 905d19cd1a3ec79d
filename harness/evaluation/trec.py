"""TREC and JSONL in and out: rankings produced by other systems in, TREC runs and qrels of a run record out.

In (:func:`read_rankings`; the formats, and what is refused and what is warned, are in ``docs/rankings.md``). TREC:
``qid Q0 id rank score tag`` per line (whitespace separated); the tag names the system; the level is ``chunk`` when
ids contain ``#`` (``<doc_id>#<index>``) unless forced. Rankings are sorted by score descending then id ascending,
the project's one tie rule (trec_eval also re-sorts by score); the ``rank`` column (an integer) is used only where
a question's scores are all equal at a level: the ranking then follows the rank column (ties: file order).

JSONL: one object per (system, question): ``{"qid": .., "system": "name" (default "external"),
"docs": [[id, score], ...], "chunks": [[id, score], ...]}``; either list may be absent; a plain list of ids is
accepted and scored ``n - position``; constant scores follow the list order.

Refused (:class:`~harness.errors.HarnessInputError`, one line naming file and line): a malformed line, a score that
is not finite (NaN, +-inf; the line and the question named), an unknown question, a file none of whose ids is a
known document or chunk (:class:`KnownIds`). Warned (:attr:`ImportedRankings.warnings`, counts and up to five
examples): ids the corpus does not hold, questions whose scores are constant, duplicate lines for one id (the first
is kept), a system given at one level only.

Question ids, system tags and document/chunk ids are read in NFC (:mod:`harness.nfc`), the form gold sets and
corpora are read in, so an id written in NFD matches its gold id.

Out (:func:`trec_run_lines`, :func:`trec_qrels_lines`): the ``trec/`` files of a run record, readable by trec_eval,
ir_measures and ranx, which then reproduce the harness's numbers (:func:`export_scores`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from harness.errors import HarnessInputError
from harness.goldset.io import GoldSet
from harness.ids import check_item_id
from harness.inputs import read_input_text
from harness.nfc import nfc
from harness.ranking import sort_ranking
from harness.retrieve.base import QueryResult

__all__ = [
    "ImportedRankings",
    "KnownIds",
    "export_scores",
    "read_rankings",
    "trec_qrels_lines",
    "trec_run_lines",
]

_FIELDS = {"docs": "document", "chunks": "chunk"}
_EXAMPLES = 5


@dataclass(frozen=True)
class KnownIds:
    """The ids a rankings file is checked against.

    Attributes:
        documents, chunks: the known document ids and chunk ids (``<doc_id>#<index>``).
        source: what they come from, in words (``"corpus mx-leyes-dof"``, ``"gold set mx-leyes-dof-eval-v1"``).
        complete: ``True`` when they are every id of a corpus (an id outside them names nothing and is warned
            about); ``False`` for a gold set's ids only (most retrieved ids are legitimately outside them, so only a
            file with no known id at all is refused; a chunk id counts as known when its document is).
    """

    documents: frozenset[str]
    chunks: frozenset[str]
    source: str
    complete: bool

    @classmethod
    def of_goldset(cls, goldset: GoldSet) -> KnownIds:
        """The gold documents, their alternatives and the evidence chunks of every question (``complete=False``)."""
        docs = {str(g.document_id) for r in goldset.records for g in r.gold_documents}
        docs |= {str(a.document_id) for r in goldset.records for g in r.gold_documents for a in g.alternatives}
        chunks = {c for r in goldset.records for c in r.evidence_chunks()}
        return cls(frozenset(docs), frozenset(chunks), f"gold set {goldset.name}", complete=False)

    def knows(self, item: str, level: str) -> bool:
        """Whether ``item`` is a known id at ``level`` (``document`` / ``chunk``)."""
        if level == "document":
            return item in self.documents
        if item in self.chunks:
            return True
        return not self.complete and item.rpartition("#")[0] in self.documents


@dataclass
class ImportedRankings:
    """What :func:`read_rankings` read.

    Attributes:
        results: ``{system: {qid: QueryResult}}`` in the tie order, duplicates removed (first line kept).
        warnings: one line each (counts and up to five examples): unknown ids, constant scores, duplicates, a
            missing level.
    """

    results: dict[str, dict[str, QueryResult]]
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Entry:
    item: str
    score: float
    rank: int | None  # TREC rank column; None for JSONL (list position orders instead)
    line: int


def _score(value: object, where: str, qid: str, fld: str) -> float:
    s = float(value)  # type: ignore[arg-type]
    if not math.isfinite(s):
        raise HarnessInputError(
            f"{where}: question {qid}: field {fld}: score {value!r} is not finite (NaN and +-inf are refused)"
        )
    return s


def _pairs(value, where: str, field: str, qid: str, line: int) -> list[_Entry]:
    if not isinstance(value, list):
        raise HarnessInputError(f"{where}: field {field}: expected a list")
    out = []
    n = len(value)
    document = field == "docs"  # a document id holds no '#' (harness.ids)
    for i, item in enumerate(value):
        if isinstance(item, str | int) and not isinstance(item, bool):
            item_id = nfc(check_item_id(item, f"{where}: field {field}[{i}]", document=document))
            out.append(_Entry(item_id, float(n - i), None, line))
        elif (
            isinstance(item, list)
            and len(item) == 2
            and isinstance(item[1], int | float)
            and not isinstance(item[1], bool)
        ):
            item_id = nfc(check_item_id(item[0], f"{where}: field {field}[{i}]", document=document))
            out.append(_Entry(item_id, _score(item[1], where, qid, f"{field}[{i}]"), None, line))
        else:
            raise HarnessInputError(f"{where}: field {field}[{i}]: expected [id, score] or id")
    return out


def _examples(items: Sequence[str]) -> str:
    more = f", ... ({len(items) - _EXAMPLES} more)" if len(items) > _EXAMPLES else ""
    return ", ".join(items[:_EXAMPLES]) + more


def read_rankings(
    path: str | Path,
    *,
    level: str | None = None,
    known_qids: set[str] | None = None,
    known_ids: KnownIds | None = None,
) -> ImportedRankings:
    """Read rankings into ``{system: {qid: QueryResult}}`` with the import's warnings (``docs/rankings.md``).

    Args:
        path: TREC run file or ``.jsonl``.
        level: ``document`` or ``chunk`` to force the level of a TREC file.
        known_qids: question ids of the gold set; an unknown qid is an error.
        known_ids: ids to check the file's ids against (:class:`KnownIds`); ``None``: not checked.

    Returns:
        :class:`ImportedRankings`. Per (system, question, level): the first line of an id is kept; when every score
        is equal (two items or more) the items are ordered by the rank column (TREC; ties by line) or the list
        order (JSONL) and scored ``n - position``; then sorted by the tie rule.

    Every id and tag is returned in NFC (:func:`harness.nfc.nfc`).

    Raises:
        HarnessInputError: missing file, malformed line (``file:line: field``), a rank that is not an integer, a
            score that is not finite (``file:line: question Q: field score``), unknown qid, bad level, no id of the
            file among ``known_ids``.
    """
    path = Path(path)
    if level not in (None, "document", "chunk"):
        raise HarnessInputError(f"--level: {level!r} is not 'document' or 'chunk'")
    text = read_input_text(path, what="rankings file")  # a regular file or a pipe, never a device
    raw: dict[str, dict[str, dict[str, list[_Entry]]]] = {}
    is_jsonl = path.suffix == ".jsonl" or text.lstrip().startswith("{")
    for ln, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{ln}"
        if is_jsonl:
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise HarnessInputError(f"{where}: malformed JSON ({exc.msg})") from None
            if not isinstance(obj, dict) or "qid" not in obj:
                raise HarnessInputError(f"{where}: field qid: missing")
            if obj.get("docs") is None and obj.get("chunks") is None:
                unknown = sorted(set(obj) - {"qid", "system", "docs", "chunks"})
                hint = f" (unknown keys: {', '.join(unknown)})" if unknown else ""
                raise HarnessInputError(f"{where}: field docs/chunks: missing; give at least one ranking{hint}")
            qid = nfc(check_item_id(obj["qid"], f"{where}: field qid"))
            system = nfc(str(obj.get("system", "external")))
            slot = raw.setdefault(system, {}).setdefault(qid, {})
            for fld in ("docs", "chunks"):
                if fld in obj and obj[fld] is not None:
                    slot.setdefault(fld, []).extend(_pairs(obj[fld], where, fld, qid, ln))
        else:
            parts = line.split()
            if len(parts) != 6:
                raise HarnessInputError(f"{where}: expected 6 columns 'qid Q0 id rank score tag', got {len(parts)}")
            qid, _q0, item, rank, score, tag = nfc(parts)
            check_item_id(qid, where, what="query id")  # whitespace cannot occur here; control characters can
            check_item_id(item, where, document=level == "document")  # '#' makes an id a chunk's without --level
            try:
                s = float(score)
            except ValueError:
                raise HarnessInputError(f"{where}: field score: {score!r} is not a number") from None
            if not math.isfinite(s):
                _score(score, where, qid, "score")
            try:
                r = int(rank)
            except ValueError:
                raise HarnessInputError(f"{where}: field rank: {rank!r} is not an integer") from None
            lv = level or ("chunk" if "#" in item else "document")
            fld = "chunks" if lv == "chunk" else "docs"
            raw.setdefault(tag, {}).setdefault(qid, {}).setdefault(fld, []).append(_Entry(item, s, r, ln))
    if not raw:
        raise HarnessInputError(f"{path}: no rankings")
    return _resolve(path, raw, known_qids, known_ids)


def _resolve(
    path: Path,
    raw: dict[str, dict[str, dict[str, list[_Entry]]]],
    known_qids: set[str] | None,
    known_ids: KnownIds | None,
) -> ImportedRankings:
    """Check the parsed entries, apply the duplicate and constant-score rules, sort, and collect the warnings."""
    if known_ids is not None:
        _check_any_known(path, raw, known_ids)
    warnings: list[str] = []
    out: dict[str, dict[str, QueryResult]] = {}
    for system, per_q in raw.items():
        out[system] = {}
        duplicates: list[str] = []
        constant: dict[str, list[str]] = {"docs": [], "chunks": []}
        unknown: dict[str, list[str]] = {"docs": [], "chunks": []}
        n_entries = {"docs": 0, "chunks": 0}
        for qid, slot in per_q.items():
            if known_qids is not None and qid not in known_qids:
                raise HarnessInputError(
                    f"{path}: field qid: {qid!r} is not a question of the gold set (system {system})"
                )
            lists: dict[str, list[tuple[str, float]] | None] = {"docs": None, "chunks": None}
            for fld, entries in slot.items():
                first: dict[str, _Entry] = {}
                for e in entries:
                    if e.item in first:
                        duplicates.append(f"{qid} {e.item} (lines {first[e.item].line}, {e.line})")
                    else:
                        first[e.item] = e
                kept = list(first.values())
                n_entries[fld] += len(kept)
                if known_ids is not None and known_ids.complete:
                    unknown[fld] += [e.item for e in kept if not known_ids.knows(e.item, _FIELDS[fld])]
                if len(kept) >= 2 and len({e.score for e in kept}) == 1:
                    constant[fld].append(qid)
                    order = sorted(range(len(kept)), key=lambda i: (kept[i].rank if kept[i].rank is not None else i, i))
                    lists[fld] = [(kept[i].item, float(len(kept) - p)) for p, i in enumerate(order)]
                else:
                    lists[fld] = [(e.item, e.score) for e in kept]
            out[system][qid] = QueryResult(
                docs=None if lists["docs"] is None else sort_ranking(lists["docs"]),
                chunks=None if lists["chunks"] is None else sort_ranking(lists["chunks"]),
                flags={},
            )
        warnings += _system_warnings(path, system, per_q, duplicates, constant, unknown, n_entries, known_ids)
    return ImportedRankings(out, warnings)


def _system_warnings(path, system, per_q, duplicates, constant, unknown, n_entries, known_ids) -> list[str]:
    out = []
    n_q = len(per_q)
    for fld, lv in _FIELDS.items():
        if unknown[fld]:
            ids = list(dict.fromkeys(unknown[fld]))
            out.append(
                f"{path}: system {system}: {len(unknown[fld])} of {n_entries[fld]} {lv} ids are not in the "
                f"{known_ids.source} (they count as not relevant), e.g. {_examples(ids)}"
            )
        if constant[fld]:
            order = "rank column (ties: file order)" if _is_trec(per_q) else "list order"
            out.append(
                f"{path}: system {system}: constant scores at the {lv} level in {len(constant[fld])} of {n_q} "
                f"questions, e.g. {_examples(constant[fld])}; their ranking follows the {order}, scored n - position"
            )
    if duplicates:
        out.append(
            f"{path}: system {system}: {len(duplicates)} duplicate lines for one id in a question (the first is "
            f"kept), e.g. {_examples(duplicates)}"
        )
    given = [lv for fld, lv in _FIELDS.items() if any(fld in slot for slot in per_q.values())]
    if len(given) == 1:
        missing = "chunk" if given == ["document"] else "document"
        out.append(
            f"{path}: system {system}: {given[0]} rankings only; the {missing} level is not given, so its metrics "
            "are not measured (null in the summary)"
        )
    return out


def _is_trec(per_q: dict[str, dict[str, list[_Entry]]]) -> bool:
    return any(e.rank is not None for slot in per_q.values() for entries in slot.values() for e in entries)


def _check_any_known(path: Path, raw: dict[str, dict[str, dict[str, list[_Entry]]]], known: KnownIds) -> None:
    """Refuse a file none of whose ids is known (e.g. every id carries a prefix the corpus does not use)."""
    first: _Entry | None = None
    n = 0
    for per_q in raw.values():
        for slot in per_q.values():
            for fld, entries in slot.items():
                for e in entries:
                    if known.knows(e.item, _FIELDS[fld]):
                        return
                    n += 1
                    if first is None or e.line < first.line:
                        first = e
    assert first is not None  # raw is not empty
    raise HarnessInputError(
        f"{path}:{first.line}: field id: none of the {n} ids of the file is a document or chunk of the "
        f"{known.source} (first: {first.item!r}); ids must be the corpus's document ids and chunk ids "
        "'<doc_id>#<index>'"
    )


def export_scores(scores: Sequence[float]) -> list[float]:
    """Scores to write for a ranking already in the harness's order, strictly decreasing at 32-bit precision.

    trec_eval reads a run's scores as 32-bit floats, re-sorts by score and breaks ties by docid *descending*;
    ranx and ir_measures re-sort too. Written with these scores, every tool reads back the harness's order. Each
    score is rounded to float32; one that is not below the previous one becomes the next float32 below it
    (``numpy.nextafter``), so a run of ties descends by one unit in the last place per item and distinct scores stay
    as they were (to float32 precision). Scores beyond float32's range (|s| > 3.4e38, which float32 would make
    infinite) are replaced, for that ranking, by ``n - position``. The original scores stay in
    ``per_question.jsonl``.

    Args:
        scores: shape ``(n,)``, finite, non-increasing (the tie rule's order).

    Returns:
        ``n`` Python floats, each exactly a finite float32 value, strictly decreasing.

    Raises:
        ValueError: a score that is not finite.
    """
    out: list[float] = []
    prev: np.float32 | None = None
    for s in scores:
        if not math.isfinite(s):
            raise ValueError(f"export_scores: score {s!r} is not finite")
        with np.errstate(over="ignore"):
            v = np.float32(s)
        if prev is not None and not v < prev:
            v = np.nextafter(prev, np.float32(-np.inf), dtype=np.float32)
        out.append(float(v))
        prev = v
    if not all(math.isfinite(v) for v in out):
        return [float(len(out) - i) for i in range(len(out))]
    return out


def trec_run_lines(
    system: str, level: str, rankings: dict[str, list[tuple[str, float]]], depth: int | None = None
) -> list[str]:
    """TREC run lines ``qid Q0 id rank score tag`` (rank from 1; tag = ``system``).

    Args:
        system: the tag.
        level: ``document`` or ``chunk`` (the file's level; the lines are the same).
        rankings: ``{qid: [(id, score)]}`` in the harness's tie order.
        depth: the recorded depth of the level; each ranking is cut there (``None``: not cut).

    Returns:
        Lines whose scores (:func:`export_scores`, written with 9 significant digits, which read back as the same
        float32) strictly decrease within a question, so trec_eval, ir_measures and ranx read the harness's order.
    """
    lines = []
    for qid, ranking in rankings.items():
        cut = ranking if depth is None else ranking[:depth]
        scores = export_scores([s for _, s in cut])
        for r, ((item, _), score) in enumerate(zip(cut, scores, strict=True), start=1):
            lines.append(f"{qid} Q0 {item} {r} {score:.9g} {system}")
    return lines


def trec_qrels_lines(goldset: GoldSet, level: str) -> list[str]:
    """TREC qrels ``qid 0 id rel``: documents with their grade (every alternative with the grade of the gold
    document it stands in for), chunks with relevance 1.

    A qrels file cannot say "any one of these": tools count each alternative as one more relevant document, so
    recall, all-hop and nDCG differ from the harness's on questions with alternatives (``docs/rankings.md``)."""
    lines = []
    for rec in goldset.records:
        if level == "document":
            seen: dict[str, int] = {}
            for g in rec.gold_documents:
                seen[str(g.document_id)] = max(seen.get(str(g.document_id), 0), g.effective_grade)
                for a in g.alternatives:
                    seen[str(a.document_id)] = max(seen.get(str(a.document_id), 0), g.effective_grade)
            lines += [f"{rec.qid} 0 {d} {grade}" for d, grade in seen.items()]
        else:
            lines += [f"{rec.qid} 0 {c} 1" for c in rec.evidence_chunks()]
    return lines
