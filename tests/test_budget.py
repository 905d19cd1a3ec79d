"""Evidence recall at a context budget (``evidence_recall@<B>w``): hand-computed golden values, the registry ids,
omission (excluded / not applicable) in question_metrics and aggregate, and hypothesis properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.goldset.schema import GoldRecord
from harness.metrics import (
    METRIC_SETS,
    ChunkExtent,
    MetricError,
    MetricSpec,
    QuotedEvidence,
    aggregate,
    question_metrics,
    summary_metric_ids,
)
from harness.metrics.budget import BUDGETS, budget_prefix
from harness.metrics.quoted import intersection_length, merge_spans


def record(qid="Q1") -> GoldRecord:
    return GoldRecord.model_validate(
        {
            "id": qid,
            "category": "single_passage",
            "question": "¿?",
            "persona": "p",
            "difficulty": "easy",
            "as_of": "2024-01-01",
            "answerability": "answerable",
            "reference_answer": "r",
            "required_hops": 1,
            "gold_documents": [
                {
                    "document_id": "A",
                    "role": "answer",
                    "evidence": [{"chunk_id": "c1", "chunk_index": 0, "quote": "q"}],
                }
            ],
        }
    )


# E_q: A[10,20) and A[30,40), B[0,5): 25 evidence characters.
QUOTED = QuotedEvidence({"A": merge_spans([(10, 20), (30, 40)]), "B": ((0, 5),)})
EXTENTS = {
    "c1": ChunkExtent("A", 0, 25, 100),
    "c2": ChunkExtent("A", 25, 50, 200),
    "c3": ChunkExtent("B", 0, 10, 50),
    "c4": ChunkExtent("A", 5, 15, 300),
}


def score(ranking, budgets, quoted=QUOTED, extents=EXTENTS):
    ids = [f"evidence_recall@{b}w" for b in budgets]
    qr = question_metrics(record(), [], ranking, metrics=ids, quoted=quoted, extents=extents)
    return [qr.metrics.get(i) for i in ids], qr


def test_golden_values_by_hand():
    ranking = [("c1", 4.0), ("c2", 3.0), ("c3", 2.0), ("c4", 1.0)]
    # 99: c1 (100 words) does not fit -> empty prefix -> 0.
    # 250: c1 (100); c1+c2 = 300 > 250 -> {c1} covers A[10,20) = 10 of 25 -> 0.4.
    # 300: {c1, c2} covers A[10,20) and A[30,40) = 20 -> 0.8.  350: + c3 covers B[0,5) -> 1.0.
    values, _ = score(ranking, [99, 250, 300, 350, 2000])
    assert values == [0.0, 0.4, 0.8, 1.0, 1.0]


def test_no_skipping_and_overlap_counted_once():
    # c2 (200) fits 250, c4 (300) does not: the prefix ends there even though c3 (50) would fit -> A[30,40): 0.4.
    values, _ = score([("c2", 3.0), ("c4", 2.0), ("c3", 1.0)], [250])
    assert values == [0.4]
    # c1 A[0,25) and c4 A[5,15) overlap: A[10,20) is counted once -> 10/25.
    values, _ = score([("c1", 2.0), ("c4", 1.0)], [400])
    assert values == [0.4]


def test_canonical_order_decides_the_prefix():
    # equal scores: id ascending, so c1 (100) then c2 (200): at 250 only c1.
    values, _ = score([("c2", 1.0), ("c1", 1.0)], [250])
    assert values == [0.4]


def test_ids_parse_and_summary_lists_the_four_budgets():
    s = MetricSpec.parse("evidence_recall@1000w")
    assert (s.name, s.k, s.unit, s.id, s.level) == ("evidence_recall", 1000, "w", "evidence_recall@1000w", "chunks")
    assert MetricSpec.parse("evidence_recall@10").unit == ""
    ids = summary_metric_ids()
    assert (
        [i for i in ids if i.endswith("w")] == [f"evidence_recall@{b}w" for b in BUDGETS] == list(METRIC_SETS["budget"])
    )
    assert "evidence_recall@10" in ids and "evidence_mrr" in ids
    with pytest.raises(MetricError, match="unknown metric 'mrr@5w'"):
        MetricSpec.parse("mrr@5w")
    with pytest.raises(MetricError):
        MetricSpec.parse("evidence_recall@0w")


def test_budget_is_not_bounded_by_the_chunk_depth():
    qr = question_metrics(
        record(), [], [("c1", 1.0)], metrics=["evidence_recall@2000w"], chunk_depth=5, quoted=QUOTED, extents=EXTENTS
    )
    assert qr.metrics["evidence_recall@2000w"] == 0.4


def test_question_without_quotes_is_excluded_and_counted():
    _, qr = score([("c1", 1.0)], [250], quoted=None)
    assert qr.metrics == {} and qr.omitted == {"evidence_recall@250w": "no_quotes"}
    other = question_metrics(
        record("Q2"), [], [("c1", 1.0)], metrics=["evidence_recall@250w"], quoted=QUOTED, extents=EXTENTS
    )
    agg = aggregate([qr, other], ["evidence_recall@250w"])
    assert agg.overall["evidence_recall@250w"] == 0.4  # the mean over Q2 alone, not (0 + 0.4) / 2
    assert agg.counts.omitted == {"evidence_recall@250w": {"no_quotes": ["Q1"]}}


def test_without_extents_not_applicable():
    qr = question_metrics(record(), [], [("c1", 1.0)], quoted=QUOTED)
    assert all(qr.omitted[f"evidence_recall@{b}w"] == "not_applicable" for b in BUDGETS)
    assert "evidence_recall@10" in qr.metrics
    agg = aggregate([qr], summary_metric_ids())
    assert agg.overall["evidence_recall@1000w"] is None
    assert "evidence_recall@1000w" not in agg.per_category["single_passage"].metrics
    named = question_metrics(record(), [], [("c1", 1.0)], metrics=["evidence_recall@250w"], quoted=QUOTED)
    assert named.metrics == {} and named.omitted == {"evidence_recall@250w": "not_applicable"}


def test_a_ranked_chunk_the_corpus_lacks_ends_the_budget_prefix():
    """Its length is unknown (evaluate warns about such ids): nothing ranked after it counts as fitting."""
    assert budget_prefix([("zz", 1.0)], EXTENTS, 250) == []
    first = next(iter(EXTENTS))
    assert budget_prefix([(first, 2.0), ("zz", 1.0), (first, 0.5)], EXTENTS, 10**6) == [EXTENTS[first]]


# ---------------------------------------------------------------------------------------------------------------
# Properties


@st.composite
def cases(draw):
    """A document of length L cut into consecutive chunks (random words), quoted spans in it, a ranking."""
    length = draw(st.integers(10, 200))
    cuts = sorted(set(draw(st.lists(st.integers(1, length - 1), max_size=12))))
    bounds = [0, *cuts, length]
    extents = {
        f"k{i:02d}": ChunkExtent("D", s, e, draw(st.integers(1, 60)))
        for i, (s, e) in enumerate(zip(bounds, bounds[1:], strict=False))
    }
    raw = draw(st.lists(st.tuples(st.integers(0, length - 1), st.integers(1, 30)), min_size=1, max_size=5))
    quoted = QuotedEvidence({"D": merge_spans((s, min(s + w, length)) for s, w in raw)})
    ids = draw(st.permutations(sorted(extents)))
    ranking = [(cid, float(len(ids) - r)) for r, cid in enumerate(ids[: draw(st.integers(1, len(ids)))])]
    return length, extents, quoted, ranking


@settings(max_examples=150, deadline=None)
@given(cases(), st.lists(st.integers(1, 800), min_size=2, max_size=5))
def test_property_monotone_in_the_budget(case, budgets):
    _length, extents, quoted, ranking = case
    budgets = sorted(budgets)
    values, _ = score(ranking, budgets, quoted=quoted, extents=extents)
    assert all(0.0 <= v <= 1.0 for v in values)
    assert values == sorted(values)


@settings(max_examples=150, deadline=None)
@given(cases(), st.data())
def test_property_one_when_the_prefix_covers_every_quote(case, data):
    _length, extents, quoted, ranking = case
    total = sum(e.n_words for e in extents.values())
    ranking = [(cid, 1.0) for cid in sorted(extents)]  # every chunk, and the budget admits them all
    values, _ = score(ranking, [total + data.draw(st.integers(0, 5))], quoted=quoted, extents=extents)
    assert values == [1.0]


@settings(max_examples=150, deadline=None)
@given(
    st.integers(20, 200),
    st.tuples(st.integers(0, 100), st.integers(0, 100)),
    st.lists(st.integers(1, 199), max_size=10),
    st.lists(st.integers(1, 199), max_size=10),
    st.lists(st.tuples(st.integers(0, 199), st.integers(1, 40)), min_size=1, max_size=5),
)
def test_property_invariant_to_chunking_when_every_chunk_fits(length, region, cuts_a, cuts_b, raw):
    lo, hi = sorted((min(region[0], length - 1), min(region[1], length)))
    hi = max(hi, lo + 1)
    quoted = QuotedEvidence({"D": merge_spans((min(s, length - 1), min(s + w, length)) for s, w in raw)})

    def chunking(cuts):
        b = [lo, *sorted({c for c in cuts if lo < c < hi}), hi]
        ext = {f"x{i:02d}": ChunkExtent("D", s, e, 7) for i, (s, e) in enumerate(zip(b, b[1:], strict=False))}
        return ext, [(cid, 1.0) for cid in ext]

    (ea, ra), (eb, rb) = chunking(cuts_a), chunking(cuts_b)
    va, _ = score(ra, [10_000], quoted=quoted, extents=ea)
    vb, _ = score(rb, [10_000], quoted=quoted, extents=eb)
    expected = intersection_length(quoted.spans["D"], ((lo, hi),)) / quoted.n_chars
    assert va == vb == [expected]


@settings(max_examples=100, deadline=None)
@given(cases(), st.integers(0, 800))
def test_property_prefix_is_the_longest_fitting_one(case, budget):
    _length, extents, _quoted, ranking = case
    prefix = budget_prefix(ranking, extents, budget)
    used = sum(e.n_words for e in prefix)
    assert used <= budget
    assert prefix == [extents[c] for c, _ in ranking[: len(prefix)]]
    if len(prefix) < len(ranking):
        assert used + extents[ranking[len(prefix)][0]].n_words > budget
