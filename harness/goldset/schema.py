"""pydantic v2 models of the eval v4 gold-set record (the canonical format) and of its manifest.

The field names are those of the published DOF-RAG Evidence Evaluation v4 file
(``dof_queries_v4.jsonl``); that file loads unchanged. Optional extensions of ours: ``split`` per question,
``heading_path``, ``grade`` and ``alternatives`` per gold document.

Relevance conventions used by the metrics (see :mod:`harness.metrics`):

* a gold document's ``grade`` is 2 (required) when absent; grade 1 marks a *useful* document that counts for
  nDCG and MRR but is not required for recall@k and all-hop@k;
* ``alternatives`` lists documents that may replace that gold document: an alternative found in the ranking
  satisfies the gold document it replaces (recall, all-hop, MRR). Alternatives never join clusters.
"""

from __future__ import annotations

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
    model_config = ConfigDict(extra="forbid", frozen=False, populate_by_name=True)


class Evidence(_Model):
    """One cited passage: a chunk of the gold document and an exact quote from it.

    Attributes:
        chunk_id: id of the chunk under the gold set's chunker (``<doc_id>#<index>`` for ``md-words-v1``).
        chunk_index: 0-based position of the chunk within its document.
        quote: text that, after the chunker's normaliser, is one contiguous span of the chunk.
    """

    chunk_id: Id
    chunk_index: int = Field(ge=0)
    quote: str = Field(min_length=1)


class Alternative(_Model):
    """A document that may replace a gold document (extension)."""

    document_id: Id
    relpath: str | None = None
    publication_date: str | None = None
    section: str | None = None


class GoldDocument(_Model):
    """A gold document of a question.

    Attributes:
        document_id: id of the document in the corpus (``doc_id`` of ``metadata.jsonl``).
        relpath: path of the document relative to the corpus root.
        publication_date: ISO date (YYYY-MM-DD) that must agree with the corpus metadata ``date``.
        section: DOF section/edition where the corpus has one (``MAT``), else null.
        role: free label; ``premise_refutation`` marks the refuting document of a false-premise question.
        evidence: cited chunks and quotes (may be empty only for documents with grade 1).
        heading_path: extension: the heading path of the cited chunk(s).
        grade: extension: 2 required (default), 1 useful.
        alternatives: extension: documents that may replace this one.
    """

    document_id: Id
    relpath: str
    publication_date: str
    section: str | None = None
    role: str
    evidence: list[Evidence] = Field(default_factory=list)
    heading_path: list[str] | None = None
    grade: Literal[1, 2] | None = None
    alternatives: list[Alternative] = Field(default_factory=list)

    @property
    def effective_grade(self) -> int:
        """2 when ``grade`` is absent."""
        return 2 if self.grade is None else int(self.grade)


class GoldRecord(_Model):
    """One eval v4 question.

    Attributes follow the published file; ``split`` (``dev``/``test``) is an extension.
    """

    id: Id
    category: str
    question: str = Field(min_length=1)
    persona: str
    difficulty: str
    as_of: str
    answerability: Literal["answerable", "false_premise"]
    reference_answer: str
    required_hops: int = Field(ge=1)
    gold_documents: list[GoldDocument]
    unanswerable_reason: str | None = None
    split: Literal["dev", "test"] | None = None

    @field_validator("as_of")
    @classmethod
    def _iso_date(cls, v: str) -> str:
        import datetime as _dt

        _dt.date.fromisoformat(v)
        return v

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
    """

    model_config = ConfigDict(extra="allow")

    name: str
    version: str
    corpus_version: str
    corpus_documents: int
    corpus_date_min: str
    corpus_date_max: str
    chunker_version: str
    questions_per_category: int | None = None
    categories: list[str] = Field(default_factory=lambda: list(CATEGORIES))
    total_questions: int | None = None
    corpus_hash: str | None = None
    schema_version: int | None = None
    records_file: str | None = None
    records_sha256: str | None = None
    changelog: list[dict] = Field(default_factory=list)
