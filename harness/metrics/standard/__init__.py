"""The measures IR engineers know by their ir_measures names (``RR``, ``AP``, ``nDCG``, ``P``, ``R``, ``Success``,
``Judged``), with trec_eval / ir_measures semantics, over the run record's qrels.

Each family reads the *qrels view* of a question (:func:`qrels`): exactly what the run record's
``trec/qrels.<level>.txt`` says (:func:`harness.evaluation.trec.trec_qrels_lines`), a flat ``{id: rel}``:

* document level: every gold document with its grade (2 required, 1 useful) and every ``alternative`` with the grade
  of the gold document it stands in for (a qrels file cannot say "any one of these": an alternative is one more
  relevant document, unlike the harness's own ``recall@k``, ``all_hop@k``, ``ndcg@k``, which credit a gold document
  once through any of its alternatives);
* chunk level (the ``chunk.`` forms, ``chunk.AP@100``): every evidence chunk with rel 1.

A ranked id is *relevant* when its rel is >= 1 (trec_eval's default ``-l 1``; ir_measures' ``rel=1``), so ``R@k``
counts useful documents too and need not equal ``recall@k`` (required documents only). Rankings are the canonical
ones (score descending, then id ascending) cut at the run's depth; the exported TREC files carry scores that make
trec_eval, ir_measures and ranx read the same order (:func:`harness.evaluation.trec.export_scores`), so these
families equal pytrec_eval on the exports question by question (``tests/test_standard_metrics.py``).

A question without any relevant id scores 0 and is listed as undefined (trec_eval and ir_measures leave a query
absent from the qrels out of their means; the harness keeps every question in its means).
"""

from __future__ import annotations

from harness.metrics.family import MetricDoc
from harness.metrics.relevance import ChunkJudgement, DocumentJudgement

__all__ = ["doc", "no_relevant", "qrels", "relevant_ranks", "top"]

_FLAT = (
    "the record's qrels: every gold document with its grade and every alternative with the grade of the gold "
    "document it stands in for (each alternative one more relevant document); relevant = rel >= 1"
)
_FLAT_CHUNK = (
    "the record's chunk qrels: every evidence chunk, rel 1; alternatives do not apply (their chunks are not evidence)"
)
_NO_REL = "0, listed as undefined (trec_eval and ir_measures leave a query without relevant documents out)"


def doc(tools: tuple[str, str, str, str], *, chunk: bool, judged: bool = False) -> MetricDoc:
    """The :class:`~harness.metrics.family.MetricDoc` of one ir_measures family from its module's ``TOOLS``
    (``(formula, trec_eval name, ir_measures name, ranx name)``), at the document or chunk (``chunk``) level;
    ``judged``: the ``Judged`` family (no undefined case; compared with ir_measures' judged provider)."""
    formula, te, im, rx = tools
    return MetricDoc(
        formula=formula,
        alternatives=_FLAT_CHUNK if chunk else _FLAT,
        no_gold="0 (empty ranking)" if judged else _NO_REL,
        trec_eval=te,
        ir_measures=im,
        ranx=rx,
        difference=(
            "none: equal per question to ir_measures' judged provider on the exports"
            if judged
            else MetricDoc.difference
        ),
    )


def qrels(j: DocumentJudgement | ChunkJudgement) -> dict[str, int]:
    """``{id: rel >= 1}`` of one question at the judgement's level, as the run record's TREC qrels file holds it
    (documents: gold documents and their alternatives with their grade, the highest when listed twice; chunks:
    every evidence chunk with rel 1)."""
    if isinstance(j, ChunkJudgement):
        return dict.fromkeys(j.evidence, 1)
    out: dict[str, int] = {}
    for grade, ids in j.targets.values():
        for i in ids:
            out[i] = max(out.get(i, 0), grade)
    return out


def top(j: DocumentJudgement | ChunkJudgement, k: int | None) -> list[str]:
    """The ids of the top ``k`` of the canonical ranking (the whole ranking, cut at the depth, for ``None``)."""
    ranking = j.ranking or []
    return [i for i, _ in (ranking if k is None else ranking[:k])]


def relevant_ranks(j: DocumentJudgement | ChunkJudgement, k: int | None) -> list[int]:
    """Ranks (from 1) of the relevant ids (rel >= 1) within the top ``k``, ascending."""
    rel = qrels(j)
    return [r for r, i in enumerate(top(j, k), start=1) if rel.get(i, 0) >= 1]


def no_relevant(j: DocumentJudgement | ChunkJudgement) -> bool:
    """Undefined-case test: the question has no relevant id in the qrels (the value is 0 by convention)."""
    return not any(v >= 1 for v in qrels(j).values())
