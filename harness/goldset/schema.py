"""pydantic v2 models of the gold-set record (the eval v4 format, every legal-domain field optional) and manifest.

The field names are those of the published DOF-RAG Evidence Evaluation v4 file (``dof_queries_v4.jsonl``); that
file loads unchanged. Optional extensions of ours: ``split`` per question, ``heading_path``, ``grade`` and
``alternatives`` per gold document, ``source_quote`` per evidence item.

**The smallest valid record** is ``{"id", "question", "category", "gold_documents": [{"document_id"}]}``: every
other eval v4 field (``persona``, ``difficulty``, ``as_of``, ``answerability``, ``reference_answer``,
``required_hops``, ``unanswerable_reason``; per gold document ``relpath``, ``publication_date``, ``section``,
``role``, ``evidence``) is optional in the schema. Which of them a gold set must carry is its *contract's* rule
(``required_fields`` / ``required_gold_document_fields``, checked by ``harness validate`` as V013), not the
schema's: our contracts (``validators/*.toml``) still require all of them. ``category`` is any non-empty string;
the seven eval v4 categories (:data:`CATEGORIES`) are likewise a contract rule (V012). A gold document with no
evidence is a *documents-only* judgement (a TREC qrel); its chunk-level metrics are not applicable.

Types are strict: no coercion (``"1"`` is not an integer, ``1`` is not a string, ``true`` is not an integer).

Relevance conventions used by the metrics (see :mod:`harness.metrics`):

* a gold document's ``grade`` is 2 (required) when absent; grade 1 marks a *useful* document that counts for
  nDCG and MRR but is not required for recall@k and all-hop@k;
* ``alternatives`` lists documents that may replace that gold document: an alternative found in the ranking
  satisfies the gold document it replaces (recall, all-hop, MRR). Alternatives never join clusters.
"""

from __future__ import annotations

import datetime as _dt
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator

CATEGORIES: tuple[str, ...] = (
    "single_passage",
    "list_enumeration",
    "temporal_transitorio",
    "cross_reference",
    "multi_document",
    "monitoring",
    "negative_false_premise",
)
"""The seven eval v4 categories, in the published order."""

CATEGORY_PREFIX: dict[str, str] = {
    "single_passage": "SP",
    "list_enumeration": "LI",
    "temporal_transitorio": "TE",
    "cross_reference": "CR",
    "multi_document": "MD",
    "monitoring": "MO",
    "negative_false_premise": "NE",
}

Id = StrictInt | str
"""Question, document and chunk ids may be integers (published file) or strings (ours)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False, populate_by_name=True, strict=True)


def _iso_date(v: str | None) -> str | None:
    """``v`` unchanged when it is ``None`` or an ISO date ``YYYY-MM-DD``; else ``ValueError``."""
    if v is not None:
        if len(v) != 10:
            raise ValueError(f"{v!r} is not an ISO date (YYYY-MM-DD)")
        _dt.date.fromisoformat(v)
    return v


class Evidence(_Model):
    """One cited passage: a chunk of the gold document and an exact quote from it.

    Attributes:
        chunk_id: id of the chunk under the gold set's chunker (``<doc_id>#<index>`` for ``md-words-v1``).
        chunk_index: 0-based position of the chunk within its document.
        quote: text that, after the chunker's normaliser, is one contiguous span of the chunk (rule V001).
        source_quote: extension, optional: the quote *as its author wrote it*, when ``harness goldset resolve``
            had to split it at chunk boundaries into several evidence items (each item's ``quote`` is then the
            normalised part that falls in its chunk, and every part carries the same ``source_quote``). The
            chunker-independent form of the evidence: re-resolving the set under another chunker starts from it,
            so a quote is never lost to a chunking decision.
    """

    chunk_id: Id
    chunk_index: StrictInt = Field(ge=0)
    quote: str = Field(min_length=1)
    source_quote: str | None = Field(default=None, min_length=1)


class Alternative(_Model):
    """A document that may replace a gold document (extension)."""

    document_id: Id
    relpath: str | None = None
    publication_date: str | None = None
    section: str | None = None


class GoldDocument(_Model):
    """A gold document of a question. Only ``document_id`` is required by the schema.

    Attributes:
        document_id: id of the document in the corpus (``doc_id`` of ``metadata.jsonl``).
        relpath: path of the document relative to the corpus root (checked against the corpus by V003).
        publication_date: ISO date (YYYY-MM-DD) that must agree with the corpus metadata ``date`` (V003).
        section: DOF section/edition where the corpus has one (``MAT``), else null (V003).
        role: free label; ``premise_refutation`` marks the refuting document of a false-premise question.
        heading_path: extension: the heading path of the cited chunk(s) (their longest common prefix, V004).
        grade: extension: 2 required (default), 1 useful.
        alternatives: extension: documents that may replace this one.
        evidence: cited chunks and quotes; empty for a documents-only judgement (a contract may require evidence
            for every required document: V033).
    """

    document_id: Id
    relpath: str | None = None
    publication_date: str | None = None
    section: str | None = None
    role: str | None = None
    heading_path: list[str] | None = None
    grade: Literal[1, 2] | None = None
    alternatives: list[Alternative] = Field(default_factory=list)
    evidence: list[Evidence] = Field(default_factory=list)

    @property
    def effective_grade(self) -> int:
        """2 when ``grade`` is absent."""
        return 2 if self.grade is None else int(self.grade)


class GoldRecord(_Model):
    """One question. Required by the schema: ``id``, ``category``, ``question``, ``gold_documents`` (at least one
    when a gold set is loaded or corrected, :func:`harness.goldset.io.require_gold_documents`: a question without a
    gold document cannot be scored; the model itself accepts an empty list, so metrics stay defined for it).

    Attributes follow the published eval v4 file; ``split`` (``dev``/``test``) is an extension. ``category`` is
    any non-empty string (the contract lists the allowed ones, V012); ``answerability`` absent means answerable;
    ``as_of``, when given, is an ISO date; ``required_hops``, when given, is an integer >= 1.
    """

    id: Id
    category: str = Field(min_length=1)
    question: str = Field(min_length=1)
    persona: str | None = None
    difficulty: str | None = None
    as_of: str | None = None
    answerability: Literal["answerable", "false_premise"] | None = None
    reference_answer: str | None = None
    required_hops: StrictInt | None = Field(default=None, ge=1)
    gold_documents: list[GoldDocument]
    unanswerable_reason: str | None = None
    split: Literal["dev", "test"] | None = None

    @field_validator("as_of")
    @classmethod
    def _as_of_iso(cls, v: str | None) -> str | None:
        return _iso_date(v)

    @property
    def qid(self) -> str:
        """The id as a string (used as the key of rankings, metrics and clusters)."""
        return str(self.id)

    def relevant_docs(self) -> dict[str, int]:
        """``{doc_id: grade}`` of the gold documents (ids as strings)."""
        return {str(g.document_id): g.effective_grade for g in self.gold_documents}

    def evidence_chunks(self) -> list[str]:
        """Distinct evidence chunk ids (as strings), in order of first citation."""
        seen: dict[str, None] = {}
        for g in self.gold_documents:
            for e in g.evidence:
                seen.setdefault(str(e.chunk_id), None)
        return list(seen)


class GoldManifest(BaseModel):
    """The dataset manifest, in the published ``.meta.json`` form, extended with corpus hash and schema version.

    Unknown keys of the published file (``authoring``, ``intended_metrics``, ``limitations``...) are kept.

    Attributes:
        name: the gold set's name (its contract file is named after it: see :mod:`harness.validate.contract`).
        version: ``MAJOR.MINOR.PATCH[-tag]``; a correction bumps the minor version, the contract covers a major.
        corpus_version: the corpus it was built against: ``<name>@<hash12>`` (V005 compares the hash prefix) or a
            bare name; ``None`` for a set imported without a corpus (V005 then fails when a corpus is given).
        corpus_documents: number of documents in that corpus (V005).
        corpus_date_min, corpus_date_max: its first and last document date, ISO (V005).
        chunker_version: the chunker whose chunk ids the evidence cites (``md-words-v1``); ``run`` ingests the
            corpus with it; required.
        questions_per_category: when set, every category has exactly this many questions (V015).
        categories: the categories the set uses (V015: none used outside this list; same set as the contract's).
        total_questions: when set, the number of records (V015).
        corpus_hash: full sha256 of the corpus (V005; ``run`` refuses another corpus).
        schema_version: version of the record schema (1).
        records_file: name of the records JSONL inside the dataset folder (default ``<stem>.jsonl``).
        records_sha256: sha256 of the records file's bytes (V015).
        changelog: one entry per version after the first (written by ``goldset apply`` / ``goldset resolve``).
    """

    model_config = ConfigDict(extra="allow", strict=True)

    name: str = Field(min_length=1)
    version: str = Field(min_length=1)
    corpus_version: str | None = None
    corpus_documents: int | None = Field(default=None, ge=0)
    corpus_date_min: str | None = None
    corpus_date_max: str | None = None
    chunker_version: str = Field(min_length=1)
    questions_per_category: int | None = None
    categories: list[str] = Field(default_factory=lambda: list(CATEGORIES))
    total_questions: int | None = None
    corpus_hash: str | None = None
    schema_version: int | None = None
    records_file: str | None = None
    records_sha256: str | None = None
    changelog: list[dict] = Field(default_factory=list)
