"""A sampled known-item study (``harness known-item --sample K --design pps|srs --seed S``).

Instead of every document's chunk-queries, K documents are drawn and only their queries are searched (against the
whole corpus's chunks, as in the full study); the estimate is of the corpus's chunk-weighted mean (micro hit@1, micro
reciprocal rank):

* ``pps`` (recommended): K independent draws, document d with probability ``p_d = q_d / sum(q)`` (``q_d`` its number
  of queries), with replacement (a document drawn twice counts twice). The Hansen-Hurwitz estimate is the mean of the
  draws' rates, with the logit-scale t interval on K - 1 df for hit@1 and reciprocal rank
  (:func:`harness.stats.pps.hansen_hurwitz`, ``svyciprop(method = "xlogit")``) and the identity-scale one for paired
  differences. Its coverage on this corpus's populations at K = 10, 20, 40 is measured by
  ``benchmarks/coverage_design.py`` (docs/measurements.md, coverage-design block).
* ``srs``: K documents drawn at random without replacement; CR2 over the queries clustered by document, which on
  this corpus's populations covers far less than 95 % (the output says "coverage not guaranteed").

K is bounded before any draw (:func:`bound_draws`): at most the documents with queries, in both designs.

Randomness: ``numpy.random.default_rng(seed)``; the draws are recorded (document id and probability).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from harness.errors import HarnessInputError
from harness.stats.cr2 import cr2
from harness.stats.design_evidence import ESTIMANDS, srs_documents_note
from harness.stats.evidence import committed_evidence
from harness.stats.pps import hansen_hurwitz
from harness.studies.known_item.corpus import ChunkedCorpus

DESIGNS = ("pps", "srs")


@dataclass(frozen=True)
class DocumentSample:
    """K drawn documents: ``docs`` (K,) document indices in draw order, ``p`` (K,) their draw probabilities
    (``pps``; ``1 / D`` for ``srs``), ``design``, ``seed``."""

    docs: np.ndarray
    p: np.ndarray
    design: str
    seed: int


def draw_documents(cc: ChunkedCorpus, k: int, design: str = "pps", seed: int = 0) -> DocumentSample:
    """Draw ``k`` documents among those with queries (module docstring).

    Raises:
        HarnessInputError: unknown design, ``k < 2``, or ``k`` above the number of documents with queries (``srs``).
    """
    if design not in DESIGNS:
        raise HarnessInputError(f"--design {design!r}: expected one of {', '.join(DESIGNS)}")
    q = np.bincount(cc.chunk_doc[cc.query_chunks], minlength=len(cc.doc_ids)).astype(np.float64)
    eligible = np.flatnonzero(q > 0)
    if k < 2:
        raise HarnessInputError(f"--sample {k}: need at least 2 documents")
    rng = np.random.default_rng(seed)
    if design == "pps":
        p = q / q.sum()
        docs = rng.choice(q.size, size=k, replace=True, p=p)
        return DocumentSample(docs, p[docs], design, seed)
    if k > eligible.size:
        raise HarnessInputError(f"--sample {k}: only {eligible.size} documents have queries")
    docs = rng.choice(eligible, size=k, replace=False)
    return DocumentSample(docs, np.full(k, 1.0 / eligible.size), design, seed)


def bound_draws(cc: ChunkedCorpus, k: int, design: str, *, field: str, per_document: bool) -> None:
    """Refuse ``k`` draws beyond the population's size, before any draw (``10**12`` draws ended in a
    ``MemoryError``), with one line naming the option.

    Bounds: ``srs`` (without replacement) draws at most D, the documents with queries. ``pps`` (with replacement):
    with ``per_document`` (a sampled known-item study) at most D too, since K draws touch at most min(K, D) documents
    and a census of the D searches no more and has no sampling error; without it (a gold-set plan, one question or
    more per draw) at most Q, the chunk-queries the draws are proportional to.

    Raises:
        HarnessInputError: an unknown design; ``k`` above the bound (exit 2), naming ``field``, the bound and the
            population.
    """
    if design not in DESIGNS:
        raise HarnessInputError(f"--design {design!r}: expected one of {', '.join(DESIGNS)}")
    q = np.bincount(cc.chunk_doc[cc.query_chunks], minlength=len(cc.doc_ids))
    n_docs, n_queries = int(np.count_nonzero(q)), int(cc.query_chunks.size)
    if design == "srs" and k > n_docs:
        raise HarnessInputError(
            f"{field} {k:,}: only {n_docs:,} documents have queries (srs draws without replacement); draw at most "
            f"{n_docs:,}"
        )
    if design == "pps" and per_document and k > n_docs:
        raise HarnessInputError(
            f"{field} {k:,}: more draws than the {n_docs:,} documents with queries; draw at most {n_docs:,}, or "
            "search them all (without --sample: the census, no sampling error)"
        )
    if design == "pps" and k > n_queries:
        raise HarnessInputError(
            f"{field} {k:,}: more draws than the {n_queries:,} chunk-queries of the {n_docs:,} documents with "
            f"queries; draw at most {n_queries:,}"
        )


def restrict(cc: ChunkedCorpus, sample: DocumentSample) -> ChunkedCorpus:
    """``cc`` with only the queries of the drawn documents (each once; the chunks searched are all of them)."""
    keep = np.isin(cc.chunk_doc[cc.query_chunks], np.unique(sample.docs))
    return replace(
        cc,
        query_chunks=cc.query_chunks[keep],
        query_texts=[t for t, k in zip(cc.query_texts, keep, strict=True) if k],
    )


def _rows(cc: ChunkedCorpus, sample: DocumentSample, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of every draw (a document drawn twice has its queries twice, under two draw labels)."""
    qdoc = cc.chunk_doc[cc.query_chunks]
    ys, labels = [], []
    for j, d in enumerate(sample.docs):
        v = values[qdoc == d]
        ys.append(v)
        labels.append(np.full(v.size, j))
    return np.concatenate(ys), np.concatenate(labels)


def _interval(y: np.ndarray, cl: np.ndarray, design: str, unit: bool) -> dict:
    if design == "pps":
        iv = hansen_hurwitz(y, cl, transform="logit" if unit else None)
    else:
        iv = cr2(y, cl, clip=unit)
    return {"method": iv.method, "estimate": iv.estimate, "lower": iv.lower, "upper": iv.upper, "se": iv.se,
            "df": iv.df, "warnings": list(iv.extras.get("warnings", []))}  # fmt: skip


def _coverage_note(design: str) -> str:
    if design == "srs":
        return srs_documents_note("cr2", "binary", labels={"cr2": "CR2"})
    ev = committed_evidence()
    got = None if ev is None else ev.methods.get("hansen_hurwitz_logit", {}).get("binary")
    if got is None or got.design != "pps":
        return "Hansen–Hurwitz logit: coverage not measured for PPS draws here"
    lo, hi = 100 * got.min, 100 * got.max
    return (
        f"Hansen–Hurwitz logit: measured coverage {lo:.1f}–{hi:.1f} % of nominal 95 % intervals for PPS draws of whole "
        f"documents at K = {ev.k_min}–{ev.k_max} on {ev.description}"
    )


def sample_summary(cc: ChunkedCorpus, sample: DocumentSample, outcomes: dict) -> dict:
    """The ``sample`` section of the study's ``summary.json``: the draws, the estimand, and per system the estimate
    and interval of hit@1 and reciprocal rank (``rr``, 0 beyond the retrieved depth), plus paired differences of the
    first system minus each other (module docstring).

    Args:
        cc: the restricted corpus (:func:`restrict`); sample: the draws; outcomes: ``{system: KnownItemOutcomes}``.
    """
    systems = {}
    values = {}
    for name, o in outcomes.items():
        rr = np.where(o.rank > 0, 1.0 / np.maximum(o.rank, 1), 0.0)
        values[name] = {"hit@1": o.hit.astype(np.float64), "rr": rr}
        systems[name] = {m: _interval(*_rows(cc, sample, v), sample.design, True) for m, v in values[name].items()}
    names = list(outcomes)
    paired = {
        f"{names[0]} - {b}": {
            m: _interval(*_rows(cc, sample, values[names[0]][m] - values[b][m]), sample.design, False)
            for m in ("hit@1", "rr")
        }
        for b in names[1:]
    }
    estimand = ESTIMANDS["pps"] if sample.design == "pps" else ESTIMANDS["srs-documents"]
    return {
        "design": sample.design,
        "k": int(sample.docs.size),
        "seed": sample.seed,
        "documents": int(np.unique(sample.docs).size),
        "queries": int(cc.query_chunks.size),
        "draws": [{"doc_id": cc.doc_ids[d], "p": float(p)} for d, p in zip(sample.docs, sample.p, strict=True)],
        "estimand": estimand,
        "coverage": _coverage_note(sample.design),
        "systems": systems,
        "paired": paired,
    }
