r"""Evidence recall at a context budget: ``evidence_recall@<B>w`` (``@250w``, ``@500w``, ``@1000w``, ``@2000w``).

Chunk-count metrics (``evidence_recall@k``, ``evidence_mrr``) are not comparable across chunkers: larger chunks
raise recall@k while filling a generator's context faster. This family fixes the *context budget* instead, in words,
and scores how much of the quoted evidence the retrieved text covers, so it compares chunkers on equal terms.

Definition (exact)
------------------
For a question q:

* **Quoted evidence** ``E_q``: a set of ``(document id, character offset)`` pairs. Each quote of q (its text as
  written: ``source_quote`` when present, else ``quote``) is located in its gold document's NFC source text
  (:mod:`harness.evaluation.evidence`); each non-space character of the normalised quote corresponds to exactly one
  character of that text, and those characters are the quote's evidence characters. ``E_q`` is their union over q's
  quotes (overlaps counted once). Whitespace and the markup characters the quote normaliser removes (``*``, ``_``,
  backticks, escaping backslashes) are not evidence characters: chunk boundaries fall on whitespace, so counting it
  would make the score depend on where a chunker cuts.
* **Budget prefix** ``P_B``: for the canonical chunk ranking ``r_1, r_2, ...`` (score descending, then id
  ascending; cut at the chunk depth) with word counts ``w_i`` (the chunker's words: ``\S+`` runs of the chunk text,
  ``Chunk.n_words``), ``P_B = (r_1, ..., r_m)`` with ``m`` the largest integer such that
  ``w_1 + ... + w_m <= B``. No skipping (a chunk that does not fit ends the prefix even when a later, shorter one
  would fit) and no truncated chunk; a first chunk longer than B gives the empty prefix. A ranked id the corpus
  does not hold (``harness evaluate`` warns about those, with counts) has no known length: it ends the prefix, the
  conservative reading (it may have filled the budget).
* **Cover**: ``C(P) = {(d, p) : some chunk c in P with document(c) = d and char_start(c) <= p < char_end(c)}``.
* **Score**: ``evidence_recall@Bw = |E_q ∩ C(P_B)| / |E_q|``, a share in [0, 1].

A question without a located quote (a documents-only judgement, or quotes not found in the corpus) is *excluded*:
it gets no value and is counted (``QuestionResult.omitted``), and means run over the other questions. Without chunk
extents (word counts and offsets; e.g. ``harness evaluate`` of external rankings without ``--corpus``) the family is
*not applicable*: no value at all, and the run summary's mean is ``None`` with a note (never 0).

Properties (tested): the score is non-decreasing in B; it is 1 when the prefix holds every chunk that contains an
evidence character; and when the budget admits the whole ranking, it depends only on which document text the
ranking covers, not on how that text was cut into chunks. There is no trec_eval counterpart (trec_eval counts
relevant items, not characters): the definition is this project's (issue 20), and the golden tests compute it by
hand.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from harness.metrics.family import MetricDoc
from harness.metrics.quoted import ChunkExtent, QuotedEvidence, intersection_length, merge_spans
from harness.metrics.relevance import ChunkJudgement

__all__ = ["BUDGETS", "DOC", "budget_prefix", "covered_chars", "evidence_recall_at_budget", "omitted"]

DOC = MetricDoc(
    "`|E_q ∩ C(P_B)| / |E_q|`: the share of the question's quoted evidence characters covered by the longest "
    "prefix `P_B` of the chunk ranking whose word counts sum to <= B (no skipping, no truncated chunk; "
    "harness.metrics.budget)",
    "quoted characters of the gold documents' quotes; alternatives do not apply",
    "no value (excluded and counted) without a located quote; not applicable (mean `None`) without chunk extents",
    "-",
    "-",
    "-",
    "the project's own definition (issue 20); comparable across chunkers",
)

BUDGETS: tuple[int, ...] = (250, 500, 1000, 2000)
"""The budgets (words) a run summarises: ``evidence_recall@250w`` ... ``@2000w``."""


def budget_prefix(
    ranking: Sequence[tuple[str, float]], extents: Mapping[str, ChunkExtent], budget: int
) -> list[ChunkExtent]:
    """The longest prefix of ``ranking`` whose total words are at most ``budget`` (no skipping, no truncation).

    Args:
        ranking: a canonical chunk ranking ``[(chunk id, score), ...]`` (already cut at the chunk depth).
        extents: ``{chunk id: ChunkExtent}`` of the corpus's chunks; a ranked id without one ends the prefix.
        budget: B, in words (>= 0).
    """
    out: list[ChunkExtent] = []
    used = 0
    for cid, _ in ranking:
        ext = extents.get(cid)
        if ext is None:  # not a chunk of the corpus: unknown length, so nothing after it is known to fit
            break
        if used + ext.n_words > budget:
            break
        used += ext.n_words
        out.append(ext)
    return out


def covered_chars(evidence: QuotedEvidence, chunks: Iterable[ChunkExtent]) -> int:
    """``|E_q ∩ C(chunks)|``: evidence characters that lie inside some chunk of ``chunks`` (same document)."""
    by_doc: dict[str, list[tuple[int, int]]] = {}
    for c in chunks:
        if c.doc_id in evidence.spans:
            by_doc.setdefault(c.doc_id, []).append((c.char_start, c.char_end))
    return sum(intersection_length(evidence.spans[d], merge_spans(sp)) for d, sp in by_doc.items())


def omitted(j: ChunkJudgement) -> str | None:
    """Why this family has no value for the judged question: ``"not_applicable"`` (no chunk extents were given),
    ``"no_quotes"`` (the question has no located quote: excluded from means and counted), else ``None``."""
    if j.extents is None:
        return "not_applicable"
    if j.quoted is None or j.quoted.n_chars == 0:
        return "no_quotes"
    return None


def evidence_recall_at_budget(j: ChunkJudgement, budget: int) -> float:
    """Share of the question's quoted evidence characters covered by the chunks that fit a budget of B words.

    ``|E_q ∩ C(P_B)| / |E_q|`` (module docstring); called only when :func:`omitted` is ``None``.
    """
    assert j.ranking is not None and j.extents is not None and j.quoted is not None
    total = j.quoted.n_chars
    return covered_chars(j.quoted, budget_prefix(j.ranking, j.extents, budget)) / total
