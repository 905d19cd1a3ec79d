"""TREC and JSONL in and out: rankings produced by other systems in, TREC runs and qrels of a run record out.

In (:func:`read_rankings`). TREC: ``qid Q0 id rank score tag`` per line (whitespace separated); the tag names the
system; the level is ``chunk`` when ids contain ``#`` (``<doc_id>#<index>``) unless forced. The ``rank`` column is
ignored: rankings are re-sorted by score descending then id ascending, the project's one tie rule (trec_eval also
re-sorts by score).

JSONL: one object per (system, question): ``{"qid": .., "system": "name" (default "external"),
"docs": [[id, score], ...], "chunks": [[id, score], ...]}``; either list may be absent; a plain list of ids is
accepted and scored ``n - position``.

Question ids, system tags and document/chunk ids are read in NFC (:mod:`harness.nfc`), the form gold sets and
corpora are read in, so an id written in NFD matches its gold id.

Out (:func:`trec_run_lines`, :func:`trec_qrels_lines`): the ``trec/`` files of a run record, readable by trec_eval,
ir_measures and ranx.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.errors import HarnessInputError
from harness.goldset.io import GoldSet
from harness.nfc import nfc
from harness.ranking import sort_ranking
from harness.retrieve.base import QueryResult

__all__ = ["read_rankings", "trec_qrels_lines", "trec_run_lines"]


def _pairs(value, where: str, field: str) -> list[tuple[str, float]]:
    if not isinstance(value, list):
        raise HarnessInputError(f"{where}: field {field}: expected a list")
    out = []
    n = len(value)
    for i, item in enumerate(value):
        if isinstance(item, str | int) and not isinstance(item, bool):
            out.append((nfc(str(item)), float(n - i)))
        elif isinstance(item, list) and len(item) == 2 and isinstance(item[1], int | float):
            out.append((nfc(str(item[0])), float(item[1])))
        else:
            raise HarnessInputError(f"{where}: field {field}[{i}]: expected [id, score] or id")
    return out


def read_rankings(
    path: str | Path, *, level: str | None = None, known_qids: set[str] | None = None
) -> dict[str, dict[str, QueryResult]]:
    """Read rankings into ``{system: {qid: QueryResult}}``.

    Args:
        path: TREC run file or ``.jsonl``.
        level: ``document`` or ``chunk`` to force the level of a TREC file.
        known_qids: question ids of the gold set; an unknown qid is an error.

    Every id and tag is returned in NFC (:func:`harness.nfc.nfc`).

    Raises:
        HarnessInputError: missing file, malformed line (``file:line: field``), unknown qid, bad level.
    """
    path = Path(path)
    if level not in (None, "document", "chunk"):
        raise HarnessInputError(f"--level: {level!r} is not 'document' or 'chunk'")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise HarnessInputError(f"{path}: rankings file not found") from None
    except UnicodeDecodeError as exc:
        raise HarnessInputError(f"{path}: not valid UTF-8 at byte {exc.start}") from None
    raw: dict[str, dict[str, dict[str, list]]] = {}
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
            qid = nfc(str(obj["qid"]))
            system = nfc(str(obj.get("system", "external")))
            slot = raw.setdefault(system, {}).setdefault(qid, {})
            for fld in ("docs", "chunks"):
                if fld in obj and obj[fld] is not None:
                    slot.setdefault(fld, []).extend(_pairs(obj[fld], where, fld))
        else:
            parts = line.split()
            if len(parts) != 6:
                raise HarnessInputError(f"{where}: expected 6 columns 'qid Q0 id rank score tag', got {len(parts)}")
            qid, _q0, item, _rank, score, tag = nfc(parts)
            try:
                s = float(score)
            except ValueError:
                raise HarnessInputError(f"{where}: field score: {score!r} is not a number") from None
            lv = level or ("chunk" if "#" in item else "document")
            fld = "chunks" if lv == "chunk" else "docs"
            raw.setdefault(tag, {}).setdefault(qid, {}).setdefault(fld, []).append((item, s))
    if not raw:
        raise HarnessInputError(f"{path}: no rankings")
    out: dict[str, dict[str, QueryResult]] = {}
    for system, per_q in raw.items():
        out[system] = {}
        for qid, slot in per_q.items():
            if known_qids is not None and qid not in known_qids:
                raise HarnessInputError(
                    f"{path}: field qid: {qid!r} is not a question of the gold set (system {system})"
                )
            docs = sort_ranking(slot["docs"]) if "docs" in slot else None
            chunks = sort_ranking(slot["chunks"]) if "chunks" in slot else None
            out[system][qid] = QueryResult(docs=docs, chunks=chunks, flags={})
    return out


def trec_run_lines(system: str, level: str, rankings: dict[str, list[tuple[str, float]]]) -> list[str]:
    """TREC run lines ``qid Q0 id rank score tag`` (rank from 1; tag = ``system``)."""
    lines = []
    for qid, ranking in rankings.items():
        for r, (item, score) in enumerate(ranking, start=1):
            lines.append(f"{qid} Q0 {item} {r} {score:.9g} {system}")
    return lines


def trec_qrels_lines(goldset: GoldSet, level: str) -> list[str]:
    """TREC qrels ``qid 0 id rel``: documents with their grade (alternatives with the grade they stand in for),
    chunks with relevance 1."""
    lines = []
    for rec in goldset.records:
        if level == "document":
            seen: dict[str, int] = {}
            for g in rec.gold_documents:
                seen[str(g.document_id)] = max(seen.get(str(g.document_id), 0), g.effective_grade)
                for a in g.alternatives:
                    seen.setdefault(str(a.document_id), g.effective_grade)
            lines += [f"{rec.qid} 0 {d} {grade}" for d, grade in seen.items()]
        else:
            lines += [f"{rec.qid} 0 {c} 1" for c in rec.evidence_chunks()]
    return lines
