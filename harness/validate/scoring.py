"""What ``harness run`` and ``harness evaluate`` check of a gold set before they score anything.

A run scores what the gold set says; a gold set that ``harness validate`` would fail scores wrongly and silently (a
wrong chunk id turns a question's evidence recall from 1.0 to 0.0). So before scoring, :func:`check_before_scoring`
enforces, and refuses with exit code 2 naming the rule, the record and the field:

1. **the records hash**: a manifest that declares ``records_sha256`` must match the records file's bytes (records
   edited after a release would otherwise run under the released name and version);
2. **the corpus identity**, when a corpus is given: the manifest's ``corpus_hash`` and ``chunker_version`` are the
   corpus's (:class:`~harness.errors.StaleGoldsetError`) and every gold document id is a corpus document;
3. **the corpus rules** V001–V005 (quotes, chunk ids, document metadata, heading paths, corpus identity), when a
   corpus is given: for ``run`` on the ingested database, whose chunks are exactly those the systems retrieve
   (:meth:`~harness.corpus.view.CorpusView.from_database`; nothing is re-chunked);
4. **the structural rules** :data:`STRUCTURAL_RULES` (ids unique; gold documents distinct, quotes non-empty, no
   repeated chunk and quote), which need neither a corpus nor a contract.

The contract rules (V010–V017) and the other record rules stay with ``harness validate``: they say whether a set is
*complete* for its release (counts, categories, required fields), not whether its scores are right.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.corpus.ingest import corpus_db_path, database_problem
from harness.corpus.store import Corpus
from harness.corpus.view import CorpusView, open_corpus
from harness.errors import HarnessInputError, StaleGoldsetError
from harness.goldset.io import GoldSet
from harness.validate.report import Finding
from harness.validate.rules import RULES, Context

__all__ = ["STRUCTURAL_RULES", "ScoringCheck", "check_before_scoring", "check_records_hash", "scoring_view"]

STRUCTURAL_RULES: tuple[str, ...] = ("V020", "V033")
"""Record rules checked before scoring with or without a corpus: unique ids (two records with one id would share
one row of per-question metrics) and distinct gold documents with non-empty, unrepeated quotes (V033 without the
contract's ``require_evidence``)."""


@dataclass(frozen=True)
class ScoringCheck:
    """What :func:`check_before_scoring` checked (it raises on the first problem, so everything here passed).

    Attributes:
        rules: the rule codes checked, in code order.
        skipped: the rule codes not checked (the corpus rules, without a corpus).
        records_hash: ``"checked"``, ``"not declared"`` (the manifest has no ``records_sha256``) or
            ``"no manifest"``.
        corpus_id: the corpus checked against, or ``None``.
    """

    rules: tuple[str, ...]
    skipped: tuple[str, ...] = ()
    records_hash: str = "checked"
    corpus_id: str | None = None

    def skipped_note(self) -> str | None:
        """One line naming what was not checked (``None`` when nothing was skipped)."""
        if not self.skipped:
            return None
        return (
            f"note: no --corpus: the corpus rules {', '.join(self.skipped)} (quotes, chunk ids, document metadata, "
            "heading paths, corpus identity) and the gold document ids were not checked; checked: the records hash "
            f"({self.records_hash}) and {', '.join(c for c in self.rules)}"
        )


def _where(goldset: GoldSet, qid: str | None) -> str:
    if qid is None:
        return str(goldset.manifest_path or goldset.records_path)
    return f"{goldset.records_path}:{goldset.line_of.get(qid, '?')}: record {qid}"


def check_records_hash(goldset: GoldSet) -> str:
    """Refuse records edited after their version was written: a manifest's ``records_sha256`` must be the records
    file's sha256 (rule 1 of the module docstring; also checked by ``goldset split`` before it versions the records).

    Returns:
        ``"checked"``, ``"not declared"`` (no ``records_sha256``) or ``"no manifest"``.

    Raises:
        HarnessInputError: the hashes differ (naming the records file and the manifest; exit 2).
    """
    m = goldset.manifest
    if m is None:
        return "no manifest"
    if not m.records_sha256:
        return "not declared"
    if m.records_sha256 != goldset.sha256:
        raise HarnessInputError(
            f"{goldset.records_path}: records sha256 {goldset.sha256[:12]}… differs from records_sha256 "
            f"{m.records_sha256[:12]}… of {goldset.manifest_path} ({m.name} {m.version}): the records were edited "
            "after this version was written; version the change with `harness goldset apply`, or restore the records"
        )
    return "checked"


def _check_identity(goldset: GoldSet, view: CorpusView) -> None:
    man = goldset.manifest
    src = goldset.manifest_path or goldset.records_path
    if man is not None:
        if man.corpus_hash and man.corpus_hash != view.source.corpus_hash:
            raise StaleGoldsetError(
                f"{src}: field corpus_hash: gold set built against {man.corpus_hash[:12]}, "
                f"corpus given is {view.source.corpus_hash[:12]} ({view.source.corpus_id})"
            )
        if man.chunker_version != view.chunker.chunker_id:
            raise StaleGoldsetError(
                f"{src}: field chunker_version: gold set uses {man.chunker_version!r}, "
                f"corpus was chunked with {view.chunker.chunker_id!r}"
            )
    for rec in goldset.records:
        for i, g in enumerate(rec.gold_documents):
            if str(g.document_id) not in view.docs:
                raise HarnessInputError(
                    f"{_where(goldset, rec.qid)}: field gold_documents[{i}].document_id: unknown document "
                    f"{g.document_id!r}"
                )


def check_before_scoring(goldset: GoldSet, view: CorpusView | None = None) -> ScoringCheck:
    """Refuse a gold set whose scores would be wrong (see the module docstring for what is checked, in order).

    Args:
        goldset: the loaded gold set (the schema, empty gold lists and strict types were checked at load).
        view: the corpus the rankings come from (for ``run``: :meth:`CorpusView.from_database` of the ingested
            database); ``None``: the corpus rules are skipped (:meth:`ScoringCheck.skipped_note` says so).

    Returns:
        The :class:`ScoringCheck` (everything in it passed).

    Raises:
        StaleGoldsetError: the manifest's corpus hash or chunker is not the corpus's (exit code 2).
        HarnessInputError: records edited after the manifest was written; an unknown gold document; a failed rule,
            as ``<records>:<line>: record <id>: <code> <rule>: field <where>: <message>`` (and how many other checks
            failed; ``harness validate`` lists them all). Exit code 2.
    """
    records_hash = check_records_hash(goldset)
    if view is not None:
        _check_identity(goldset, view)
    lines = [goldset.line_of.get(r.qid) for r in goldset.records]
    ctx = Context(goldset=goldset, lines=lines, contract=None, corpus=view)
    codes = [c for c, (info, _) in RULES.items() if c in STRUCTURAL_RULES or (info.needs_corpus and view is not None)]
    failures: list[tuple[str | None, str, Finding]] = []
    for code in codes:
        info, fn = RULES[code]
        if info.scope == "dataset":
            failures += [(None, code, f) for f in fn(ctx) if f.status == "fail"]
        else:
            for i, rec in enumerate(goldset.records):
                failures += [(rec.qid, code, f) for f in fn(ctx, i, rec) if f.status == "fail"]
    if failures:
        qid, code, f = failures[0]
        more = f" (and {len(failures) - 1} more failed check(s))" if len(failures) > 1 else ""
        where = f"field {f.where}: " if f.where else ""
        how = "harness validate DATASET" + (" --corpus CORPUS" if view is not None else "")
        raise HarnessInputError(
            f"{_where(goldset, qid)}: {code} {RULES[code][0].name}: {where}{f.message}{more}; not scored "
            f"(`{how}` lists every problem)"
        )
    skipped = () if view is not None else tuple(c for c, (info, _) in RULES.items() if info.needs_corpus)
    return ScoringCheck(
        rules=tuple(codes),
        skipped=skipped,
        records_hash=records_hash,
        corpus_id=view.source.corpus_id if view is not None else None,
    )


@contextlib.contextmanager
def scoring_view(corpus_dir: str | Path, chunker_id: str, workdir: str | Path, *, where: str) -> Iterator[CorpusView]:
    """The corpus view ``harness evaluate --corpus`` checks against (a context: a database it opens is closed on
    exit): the ingested database in ``workdir`` when one for this corpus and chunker exists and is sound (nothing is
    re-chunked), else the corpus folder (only the cited documents are chunked; nothing is written).

    Raises:
        HarnessInputError: the folder is missing or unreadable, its metadata is malformed, an unknown chunker.
    """
    folder = open_corpus(corpus_dir, chunker_id, where=where)
    db = corpus_db_path(workdir, folder.source, chunker_id)
    if db.is_file() and database_problem(db)[1] is None:
        with Corpus(db, readonly=True) as corpus:
            yield CorpusView.from_database(corpus)
        return
    yield folder
