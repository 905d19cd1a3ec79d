"""``harness goldset import``: TREC qrels + queries, or a BEIR folder, become a documents-only gold set.

Inputs:

* **TREC qrels** (``--qrels``): one judgement per line, ``qid iter docid rel`` separated by whitespace (trec_eval's
  format; ``iter`` is ignored; ``rel`` an integer). The same (qid, docid) twice with different ``rel`` is an error.
* **queries** (``--queries``): TSV ``qid<TAB>text`` (one per line; the first tab separates), or JSONL objects
  ``{"id" | "_id": ..., "text": ...}`` (BEIR's ``queries.jsonl``); JSONL when the name ends in ``.jsonl`` / ``.json``
  or the first non-blank character is ``{``.
* **BEIR folder** (``--beir``): ``corpus.jsonl`` (``{"_id", "title", "text"}``), ``queries.jsonl`` and
  ``qrels/<split>.tsv`` (``query-id<TAB>corpus-id<TAB>score`` with a header line; ``--split`` test, dev or train).

Mapping (both forms): judgements with ``rel <= 0`` are dropped (``rel 0`` = judged not relevant); ``rel >=
required_rel`` (default 2) gives a gold document of grade 2 (required), ``1 <= rel < required_rel`` grade 1
(useful: counts for MRR and nDCG, not for recall@k / all_hop@k / hit@k). With binary qrels (every ``rel`` 1) use
``required_rel = 1``, or every question has only useful documents and its recall is undefined (reported). A query
without any relevant document is left out (reported); a judged query missing from the queries file is an error;
queries without judgements are ignored. Records: ``{"id", "category", "question", "gold_documents":
[{"document_id", "grade"[, "relpath", "publication_date", "section"]}]}`` in the queries file's order; no
evidence, so the set is *documents-only*: its chunk-level metrics are not applicable (``run`` reports them as
``null``). The starter contract says ``require_evidence = false``.

A BEIR import also writes a corpus folder ``harness run`` accepts (default ``<out>-corpus``): one Markdown file per
document, ``docs/<2 hex of sha1(id)>/<id made file-safe>.md``, holding the text (a text line that would read as a
Markdown heading gets a leading backslash, which the quote normaliser drops, so no text is lost to a heading and the
file has no heading), and ``metadata.jsonl`` (``doc_id``, ``path``, ``title`` and, with ``language``, the ISO 639-1
code every record declares). Each document is thus title + text, as BEIR's reference BM25 builds it (bm25s:
``title + " " + text``): BM25's and TF-IDF's document index holds the title, then the text (title + headings +
text, with no heading); the chunks are the text alone. (Before, the title was also written as a ``# <title>``
heading, so the document index counted it twice.)

``language`` (``--language en``) selects the corpus's analyzer for BM25 and TF-IDF
(:mod:`harness.retrieve.analyzer`); it is part of each record, so it changes the corpus hash. Without it the corpus
declares no language and runs use ``es-snowball-fold-v1``; either way the import checks a sample of the documents
(the first :data:`~harness.retrieve.analyzer.SAMPLE_CHUNKS`, title + text) against the analyzer the runs will use
and returns a warning when they read as another language (:func:`harness.retrieve.analyzer.language_mismatch`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from harness.corpus.chunker import get_chunker
from harness.corpus.ingest import CorpusSource, DocMeta, scan_corpus
from harness.corpus.view import CorpusView, open_corpus
from harness.curation.build import BuiltDataset, dataset_manifest, starter_contract, write_dataset
from harness.errors import HarnessInputError
from harness.goldset.io import format_validation_error
from harness.goldset.schema import GoldRecord
from harness.ids import check_item_id
from harness.inputs import input_sha256, read_input_text
from harness.io import atomic_directory, parse_jsonl, read_jsonl, sha256_file
from harness.nfc import nfc
from harness.retrieve.analyzer import (
    DEFAULT_ANALYZER,
    SAMPLE_CHARS,
    SAMPLE_CHUNKS,
    analyzer_for_language,
    is_language_code,
    language_mismatch,
)

__all__ = ["Imported", "import_beir", "import_qrels", "read_queries", "read_trec_qrels", "write_beir_corpus"]

_HEADING_LIKE = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass
class Imported:
    """Outcome of an import.

    Attributes:
        records: the gold records, in the queries file's order.
        judgements: relevance judgements read; ``dropped_nonrelevant``: of them with ``rel <= 0``.
        grades: ``{1: n, 2: n}`` gold documents per grade.
        queries_without_relevant: judged queries left out because no document has ``rel >= 1``.
        without_required: questions with no grade-2 document (their recall@k is undefined).
        corpus_dir: the corpus the set is checked against (given, or written by a BEIR import), or ``None``.
        built: the written dataset (``built.written`` is ``None`` when the set did not validate).
    """

    records: list[GoldRecord] = field(default_factory=list)
    judgements: int = 0
    dropped_nonrelevant: int = 0
    grades: dict[int, int] = field(default_factory=dict)
    queries_without_relevant: list[str] = field(default_factory=list)
    without_required: list[str] = field(default_factory=list)
    corpus_dir: Path | None = None
    built: BuiltDataset | None = None
    warnings: list[str] = field(default_factory=list)


Judgements = dict[str, dict[str, tuple[int, int]]]
"""``{qid: {docid: (rel, line)}}`` in order of first appearance."""


def _add(out: Judgements, path: Path, line: int, qid: str, docid: str, rel_text: str) -> None:
    check_item_id(qid, f"{path}:{line}", what="query id")
    check_item_id(docid, f"{path}:{line}: query {qid}", what="document id", document=True)
    try:
        rel = int(rel_text)
    except ValueError:
        raise HarnessInputError(f"{path}:{line}: field rel: {rel_text!r} is not an integer") from None
    prev = out.setdefault(qid, {}).get(docid)
    if prev is not None and prev[0] != rel:
        raise HarnessInputError(
            f"{path}:{line}: query {qid}: document {docid} judged {rel} here and {prev[0]} at line {prev[1]}"
        )
    out[qid].setdefault(docid, (rel, line))


def _lines(path: Path, text: str | None = None) -> list[tuple[int, str]]:
    """The non-blank lines of ``path`` (read once: a pipe cannot be read twice; :func:`read_input_text`)."""
    text = read_input_text(path) if text is None else text
    return [(i, ln) for i, ln in enumerate(text.splitlines(), start=1) if ln.strip()]


def read_trec_qrels(path: str | Path) -> Judgements:
    """Read TREC qrels ``qid iter docid rel`` (module docstring).

    Raises:
        HarnessInputError: missing file, not UTF-8, a line without 4 columns, a non-integer ``rel``, a
            contradictory repeated judgement (``<file>:<line>: ...``).
    """
    path = Path(path)
    out: Judgements = {}
    for i, ln in _lines(path):
        cols = ln.split()
        if len(cols) != 4:
            raise HarnessInputError(f"{path}:{i}: expected 4 columns 'qid iter docid rel', got {len(cols)}")
        _add(out, path, i, cols[0], cols[2], cols[3])
    return out


def _read_beir_qrels(path: Path) -> Judgements:
    out: Judgements = {}
    for n, (i, ln) in enumerate(_lines(path)):
        cols = ln.rstrip("\r").split("\t")
        if n == 0 and len(cols) == 3 and not cols[2].strip().lstrip("-").isdigit():
            continue  # the header line: query-id corpus-id score
        if len(cols) != 3:
            raise HarnessInputError(f"{path}:{i}: expected 3 tab-separated columns 'query-id corpus-id score'")
        _add(out, path, i, cols[0].strip(), cols[1].strip(), cols[2].strip())
    return out


def _jsonl_id(path: Path, line: int, obj: dict, key: str = "id", *, document: bool = False) -> str:
    raw = obj.get(key, obj.get("_" + key))
    if isinstance(raw, bool) or not isinstance(raw, str | int) or str(raw).strip() == "":
        raise HarnessInputError(f"{path}:{line}: field _{key}: missing or not a string/integer")
    return check_item_id(raw, f"{path}:{line}: field _{key}", document=document)


def read_queries(path: str | Path) -> dict[str, str]:
    """Read queries as TSV ``qid<TAB>text`` or JSONL ``{"id"|"_id", "text"}`` (module docstring).

    Returns:
        ``{qid: text}`` in file order.

    Raises:
        HarnessInputError: missing file, malformed line, a missing id or text, a repeated id (``<file>:<line>``).
    """
    path = Path(path)
    out: dict[str, tuple[str, int]] = {}
    text = read_input_text(path)
    lines = _lines(path, text)
    as_jsonl = path.suffix in (".jsonl", ".json") or (bool(lines) and lines[0][1].lstrip().startswith("{"))
    rows: list[tuple[int, str, object]] = []
    if as_jsonl:
        for i, obj in parse_jsonl(text, path):
            rows.append((i, _jsonl_id(path, i, obj), obj.get("text")))
    else:
        for i, ln in lines:
            qid, tab, text = ln.partition("\t")
            if not tab:
                raise HarnessInputError(f"{path}:{i}: expected 'qid<TAB>text'")
            rows.append((i, check_item_id(qid.strip(), f"{path}:{i}", what="query id"), text))
    for i, qid, text in rows:
        if not isinstance(text, str) or not text.strip():
            raise HarnessInputError(f"{path}:{i}: query {qid}: field text: missing or empty")
        if qid in out:
            raise HarnessInputError(f"{path}:{i}: query {qid}: repeated (first at line {out[qid][1]})")
        out[qid] = (text.strip(), i)
    return {q: t for q, (t, _) in out.items()}


def _records(
    judged: Judgements,
    queries: dict[str, str],
    *,
    qrels_path: Path,
    queries_path: Path,
    category: str,
    required_rel: int,
    docs: dict[str, DocMeta] | None,
) -> Imported:
    missing = [q for q in judged if q not in queries]
    if missing:
        line = next(iter(judged[missing[0]].values()))[1]
        raise HarnessInputError(
            f"{qrels_path}:{line}: query {missing[0]}: not in {queries_path}"
            + (f" ({len(missing)} judged queries are missing)" if len(missing) > 1 else "")
        )
    res = Imported()
    grades: Counter[int] = Counter()
    for qid, text in queries.items():
        if qid not in judged:
            continue
        gold = []
        for docid, (rel, line) in judged[qid].items():
            res.judgements += 1
            if rel <= 0:
                res.dropped_nonrelevant += 1
                continue
            gd: dict = {"document_id": docid, "grade": 2 if rel >= required_rel else 1}
            if docs is not None:
                meta = docs.get(docid)
                if meta is None:
                    raise HarnessInputError(
                        f"{qrels_path}:{line}: query {qid}: document {docid!r} is not in the corpus"
                    )
                gd["relpath"] = meta.path
                for key, value in (("publication_date", meta.date), ("section", meta.section)):
                    if value is not None:
                        gd[key] = value
            grades[gd["grade"]] += 1
            gold.append(gd)
        if not gold:
            res.queries_without_relevant.append(qid)
            continue
        raw = {"id": qid, "category": category, "question": text, "gold_documents": gold}
        try:
            rec = GoldRecord.model_validate(raw)
        except ValidationError as exc:
            raise HarnessInputError(f"{queries_path}: query {qid}: {format_validation_error(exc)}") from None
        if not any(g.effective_grade == 2 for g in rec.gold_documents):
            res.without_required.append(qid)
        res.records.append(rec)
    res.grades = dict(sorted(grades.items()))
    if not res.records:
        raise HarnessInputError(f"{qrels_path}: no query has a relevant document (rel >= 1): nothing to import")
    return res


#: The sampling designs an import may declare (a PPS design is planned: ``harness goldset plan``).
IMPORT_DESIGNS = ("independent", "from-documents")


def _finish(
    res: Imported,
    out: Path,
    *,
    name: str,
    version: str,
    chunker: str,
    source: CorpusSource | None,
    view: CorpusView | None,
    authoring: dict,
    inputs: tuple,
    design: str = "independent",
) -> Imported:
    manifest = dataset_manifest(
        res.records, name=name, version=version, chunker_id=chunker, source=source, authoring=authoring
    )
    manifest["design"] = {"sampling": design}  # how the questions were sampled (harness.evaluation.design)
    origin = authoring.get("qrels") or authoring.get("beir") or "imported judgements"
    res.built = write_dataset(
        out,
        res.records,
        manifest,
        contract=None,
        contract_text=starter_contract(res.records, name, version, origin=str(origin)),
        corpus=view,
        inputs=inputs,
    )
    return res


def import_qrels(
    qrels: str | Path,
    queries: str | Path,
    out: str | Path,
    *,
    corpus_dir: str | Path | None = None,
    name: str | None = None,
    version: str = "1.0.0",
    category: str = "imported",
    required_rel: int = 2,
    chunker: str = "md-words-v1",
    design: str = "independent",
) -> Imported:
    """TREC qrels + queries -> a documents-only dataset folder ``out`` (module docstring).

    Args:
        qrels, queries: the input files (never modified).
        out: the new dataset folder (must not exist).
        corpus_dir: the corpus the documents are in: every judged document must exist there; ``relpath``,
            ``publication_date`` and ``section`` are filled from its metadata and the manifest records its
            identity. Without it the manifest names no corpus.
        name: gold-set name (default: the qrels file's stem); version: its version.
        category: the category of every question (the schema takes any string).
        required_rel: the smallest ``rel`` that makes a document required (grade 2); >= 1.
        chunker: recorded as ``chunker_version`` (``run`` chunks the corpus with it; no evidence cites it).
        design: the manifest's ``design.sampling`` (:mod:`harness.evaluation.design`): ``independent`` (the
            default: each judged query an independent draw from a query population, its own cluster) or
            ``from-documents`` (queries written on documents drawn at random; clusters of shared gold documents).

    Returns:
        :class:`Imported` (``built.written`` is ``out``, or ``None`` when a validation rule failed).

    Raises:
        HarnessInputError: malformed inputs (``<file>:<line>: ...``), an unknown document, ``out`` exists.
    """
    if required_rel < 1:
        raise HarnessInputError(f"--required-rel {required_rel}: must be >= 1")
    if design not in IMPORT_DESIGNS:
        raise HarnessInputError(f"--design {design!r}: expected {' or '.join(IMPORT_DESIGNS)}")
    qrels, queries, out = Path(qrels), Path(queries), Path(out)
    judged = read_trec_qrels(qrels)
    qs = read_queries(queries)
    view = open_corpus(corpus_dir, chunker, where="--chunker") if corpus_dir is not None else None
    source = view.source if view is not None else None
    res = _records(
        judged,
        qs,
        qrels_path=qrels,
        queries_path=queries,
        category=category,
        required_rel=required_rel,
        docs=view.docs if view is not None else None,
    )
    res.corpus_dir = Path(corpus_dir) if corpus_dir is not None else None
    authoring = {
        "method": "harness goldset import (TREC qrels)",
        "qrels": qrels.name,
        "qrels_sha256": input_sha256(qrels),
        "queries": queries.name,
        "queries_sha256": input_sha256(queries),
        "required_rel": required_rel,
    }
    return _finish(
        res,
        out,
        name=name or qrels.name.rsplit(".", 1)[0],
        version=version,
        chunker=chunker,
        source=source,
        view=view,
        authoring=authoring,
        inputs=(qrels, queries, corpus_dir),
        design=design,
    )


def _safe_name(doc_id: str) -> str:
    digest = hashlib.sha1(doc_id.encode("utf-8")).hexdigest()
    safe = _UNSAFE.sub("_", doc_id).strip("._") or "doc"
    if safe != doc_id or len(safe) > 100:
        safe = f"{safe[:80]}-{digest[:10]}"  # keeps two ids that sanitise alike apart
    return f"docs/{digest[:2]}/{safe}.md"


def _markdown(text: str) -> str:
    body = "\n".join("\\" + ln if _HEADING_LIKE.match(ln) else ln for ln in text.replace("\r\n", "\n").split("\n"))
    return body.strip("\n") + "\n"


def write_beir_corpus(
    corpus_jsonl: str | Path, folder: Path, *, language: str | None = None, sample: list[str] | None = None
) -> int:
    """Write BEIR ``corpus.jsonl`` as a harness corpus folder (module docstring) into ``folder`` (which exists).

    Args:
        corpus_jsonl: the BEIR corpus file (never modified).
        folder: the new corpus folder.
        language: an ISO 639-1 code written into every ``metadata.jsonl`` record (``None``: none written).
        sample: when given, receives ``title + " " + text`` (cut at
            :data:`~harness.retrieve.analyzer.SAMPLE_CHARS`) of the first
            :data:`~harness.retrieve.analyzer.SAMPLE_CHUNKS` documents, for the language check.

    Returns:
        The number of documents written.

    Raises:
        HarnessInputError: a line without ``_id``, a repeated ``_id``, a ``title``/``text`` that is not a string,
            an empty corpus (``<file>:<line>``).
    """
    path = Path(corpus_jsonl)
    meta = []
    seen: dict[str, int] = {}
    seen_raw: set[str] = set()
    for i, obj in read_jsonl(path):
        doc_id = _jsonl_id(path, i, obj, document=True)
        key = nfc(doc_id)  # the corpus reads ids in NFC: two forms of one id are one id
        if key in seen:
            form = "" if doc_id in seen_raw else " in Unicode NFC, as the corpus reads ids"
            raise HarnessInputError(
                f"{path}:{i}: document {ascii(doc_id)}: repeated _id (the same as at line {seen[key]}{form})"
            )
        seen[key] = i
        seen_raw.add(doc_id)
        title, text = obj.get("title") or "", obj.get("text") or ""
        if not isinstance(title, str) or not isinstance(text, str):
            raise HarnessInputError(f"{path}:{i}: document {doc_id}: fields title and text must be strings")
        rel = _safe_name(doc_id)
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(_markdown(text), encoding="utf-8")
        meta.append(
            {"doc_id": doc_id, "path": rel, "title": title or None, **({"language": language} if language else {})}
        )
        if sample is not None and len(sample) < SAMPLE_CHUNKS:
            sample.append(f"{title} {text}"[:SAMPLE_CHARS])
    if not meta:
        raise HarnessInputError(f"{path}: no documents")
    (folder / "metadata.jsonl").write_text(
        "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in meta), encoding="utf-8"
    )
    return len(meta)


def import_beir(
    beir_dir: str | Path,
    out: str | Path,
    *,
    split: str = "test",
    corpus_out: str | Path | None = None,
    name: str | None = None,
    version: str = "1.0.0",
    category: str = "imported",
    required_rel: int = 2,
    chunker: str = "md-words-v1",
    language: str | None = None,
    design: str = "independent",
) -> Imported:
    """A BEIR folder -> a corpus folder and a documents-only dataset folder (module docstring).

    Both folders are written atomically and together: when the dataset is not written (a validation rule fails,
    or an error), the corpus folder is not written either.

    Args:
        beir_dir: the BEIR folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``; never modified).
        out: the new dataset folder (must not exist).
        split: ``test``, ``dev`` or ``train``: which qrels file.
        corpus_out: the new corpus folder (default ``<out>-corpus``; must not exist).
        name: gold-set name (default ``<BEIR folder name>-<split>``); other arguments as :func:`import_qrels`.
        language: the corpus's ISO 639-1 code, written into every ``metadata.jsonl`` record (module docstring).

    Returns:
        :class:`Imported`; ``corpus_dir`` is ``corpus_out`` (written only when ``built.written`` is set).

    Raises:
        HarnessInputError: missing files, malformed lines, unknown chunker, ``out`` or ``corpus_out`` exists or
            overlaps the BEIR folder, ``language`` not a two-letter lowercase code.
    """
    if language is not None and not is_language_code(language):
        raise HarnessInputError(f"--language {language!r}: expected an ISO 639-1 code (two lowercase letters, e.g. en)")
    if split not in ("test", "dev", "train"):
        raise HarnessInputError(f"--split {split!r}: expected test, dev or train")
    if required_rel < 1:
        raise HarnessInputError(f"--required-rel {required_rel}: must be >= 1")
    if design not in IMPORT_DESIGNS:
        raise HarnessInputError(f"--design {design!r}: expected {' or '.join(IMPORT_DESIGNS)}")
    beir, out = Path(beir_dir), Path(out)
    corpus_out = Path(corpus_out) if corpus_out is not None else out.with_name(out.name + "-corpus")
    qrels_path = beir / "qrels" / f"{split}.tsv"
    for p in (beir / "corpus.jsonl", beir / "queries.jsonl", qrels_path):
        if not p.is_file():
            raise HarnessInputError(f"{p}: file not found (a BEIR folder holds corpus.jsonl, queries.jsonl, qrels/)")
    try:
        chunker_obj = get_chunker(chunker)
    except HarnessInputError as exc:
        raise HarnessInputError(f"--chunker: field chunker_version: {exc}") from None
    judged = _read_beir_qrels(qrels_path)
    qs = read_queries(beir / "queries.jsonl")
    authoring = {
        "method": f"harness goldset import (BEIR, split {split})",
        "beir": beir.resolve().name,
        "corpus_sha256": sha256_file(beir / "corpus.jsonl"),
        "queries_sha256": input_sha256(beir / "queries.jsonl"),
        "qrels_sha256": input_sha256(qrels_path),
        "required_rel": required_rel,
        **({"language": language} if language else {}),
    }
    sample: list[str] = []
    try:
        with atomic_directory(corpus_out, inputs=(beir, out), kind="corpus", field="--corpus-out") as tmp:
            authoring["documents"] = write_beir_corpus(beir / "corpus.jsonl", tmp, language=language, sample=sample)
            view = CorpusView(scan_corpus(tmp, name=corpus_out.resolve().name), chunker_obj)
            res = _records(
                judged,
                qs,
                qrels_path=qrels_path,
                queries_path=beir / "queries.jsonl",
                category=category,
                required_rel=required_rel,
                docs=view.docs,
            )
            res.corpus_dir = corpus_out
            _finish(
                res,
                out,
                name=name or f"{beir.resolve().name}-{split}",
                version=version,
                chunker=chunker,
                source=view.source,
                view=view,
                authoring=authoring,
                inputs=(beir, tmp),
                design=design,
            )
            if res.built is None or res.built.written is None:
                raise _NotWritten(res)
    except _NotWritten as nw:
        return nw.res
    analyzer = analyzer_for_language(language) if language else DEFAULT_ANALYZER
    mismatch = language_mismatch(sample, analyzer)
    if mismatch is not None:
        res.warnings.append(mismatch)
    return res


class _NotWritten(Exception):
    """Aborts the corpus folder when the dataset did not validate (carries the result)."""

    def __init__(self, res: Imported) -> None:
        self.res = res
