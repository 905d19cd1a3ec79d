"""BM25 parameters as system options (``bm25:k1=...:b=...``, ``bm25:method=bm25+:delta=1``): the integer build,
the batched search, the known-item face and the registry against bm25s itself, ties included."""

from __future__ import annotations

from pathlib import Path

import bm25s
import numpy as np
import pytest
from bm25s.tokenization import Tokenized
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.corpus.ingest import ingest
from harness.corpus.store import Corpus
from harness.errors import HarnessInputError
from harness.ranking import cut_in_tie, id_rank, top_k_by_score
from harness.retrieve.analyzer import SpanishAnalyzer
from harness.retrieve.bm25 import BM25Index, BM25Options, BM25System
from harness.retrieve.bm25.index import BM25_PARAMS, bm25_params
from harness.retrieve.counts import count_terms
from harness.retrieve.registry import SystemPlan, SystemSet
from harness.studies.known_item.scorers import ScorerInputs, bm25_scorer

PARAMS = [
    {"method": "lucene", "k1": 1.5, "b": 0.75},
    {"method": "lucene", "k1": 0.1, "b": 0.75},
    {"method": "lucene", "k1": 1.2, "b": 0.7},
    {"method": "robertson", "k1": 0.9, "b": 0.4},
    {"method": "atire", "k1": 1.5, "b": 0.75},
    {"method": "atire", "k1": 2.0, "b": 0.0},
    {"method": "bm25l", "k1": 1.5, "b": 0.75, "delta": 0.5},
    {"method": "bm25+", "k1": 1.2, "b": 1.0, "delta": 1.0},
    {"method": "lucene", "k1": 0.0, "b": 0.3},
]
WORDS = ["agu", "rio", "lag", "mar", "bosqu", "montan", "vall", "ley", "decret"]

docs_strategy = st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=9), min_size=2, max_size=12)


def _bm25s(token_lists, params) -> bm25s.BM25:
    """bm25s itself over the same token lists (its own vocabulary order: first occurrence)."""
    vocab: dict[str, int] = {}
    ids = [[vocab.setdefault(t, len(vocab)) for t in toks] for toks in token_lists]
    r = bm25s.BM25(**params)
    r.index(Tokenized(ids=ids, vocab=vocab), show_progress=False)
    return r


def _from_counts(ids, token_lists, params) -> BM25Index:
    vocab: dict[str, int] = {}
    item, term, count, length = count_terms(token_lists, vocab)
    return BM25Index.build_from_counts(ids, item, term, count, length, vocab, SpanishAnalyzer(), params)


@pytest.mark.parametrize("params", PARAMS, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()))
@settings(max_examples=25, deadline=None)
@given(docs=docs_strategy)
def test_integer_build_is_bm25s_bit_for_bit(params, docs):
    ref = _bm25s(docs, params)
    got = _from_counts([f"d{i}" for i in range(len(docs))], docs, params).retriever
    n_terms = len(got.scores["indptr"]) - 1
    np.testing.assert_array_equal(got.scores["indptr"], ref.scores["indptr"][: n_terms + 1])
    np.testing.assert_array_equal(got.scores["indices"], ref.scores["indices"])
    assert got.scores["data"].tobytes() == np.asarray(ref.scores["data"], dtype=np.float32).tobytes()
    if params["method"] in ("bm25l", "bm25+"):
        n_ref = ref.nonoccurrence_array.size  # ours also holds bm25s's empty token (score 0), as index() adds it
        assert got.nonoccurrence_array[:n_ref].tobytes() == ref.nonoccurrence_array.tobytes()
        assert not got.nonoccurrence_array[n_ref:].any()
    else:
        assert got.nonoccurrence_array is None and ref.nonoccurrence_array is None


@pytest.mark.parametrize("params", PARAMS, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()))
@pytest.mark.parametrize("backend", ["numpy", "auto"])
@settings(max_examples=15, deadline=None)
@given(docs=docs_strategy, queries=st.lists(st.lists(st.sampled_from([*WORDS, "zzz"]), max_size=5), min_size=1))
def test_batched_search_equals_bm25s_scores_and_tie_rule(params, backend, docs, queries):
    """Every ranking is bm25s's ``get_scores`` under (score desc, id asc), positives only, flags included; the ids
    are in reverse order so the tie rule, not the index order, decides ties (duplicate documents tie exactly)."""
    ids = [f"d{len(docs) - i:02d}" for i in range(len(docs))]
    docs = [*docs, docs[0]]  # an exact duplicate: a tie on every query that matches it
    ids.append("d00")
    ref = _bm25s(docs, params)
    idx = _from_counts(ids, docs, params)
    rank = id_rank(ids)
    for depth in (1, 3, len(ids) + 2):
        got = idx.search_many(queries, depth, analysed=True, backend=backend)
        for q, (ranking, flags) in zip(queries, got, strict=True):
            known = [ref.vocab_dict[t] for t in q if t in ref.vocab_dict]
            if not known:
                assert ranking == [] and flags == {"empty_query": True}
                continue
            sc = ref.get_scores(known)
            top = top_k_by_score(sc, rank, depth)
            assert ranking == [(ids[i], float(sc[i])) for i in top]
            assert bool(flags.get("tie_at_boundary")) == (cut_in_tie(sc, top, depth) and depth < len(ids))


@pytest.mark.parametrize("params", PARAMS[1:], ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()))
def test_known_item_face_equals_bm25s(params):
    """The known-item batched face scores each query against every chunk as bm25s does (queries without repeated
    terms: bit for bit; the face sums a repeated term's weight once, times its count)."""
    docs = [["agu", "rio", "rio", "lag"], ["agu", "mar"], ["bosqu", "montan", "vall", "rio"],
            ["agu", "rio", "rio", "lag"], ["ley", "decret", "agu"], ["mar", "mar", "mar", "vall"]]  # fmt: skip
    queries = [["agu", "rio"], ["mar", "vall"], ["zzz"], ["ley", "bosqu", "lag"], ["rio", "agu", "rio"]]
    opts = BM25Options(**{k: v for k, v in params.items()})
    scorer, config = bm25_scorer(ScorerInputs([], [], docs, queries), opts)
    assert config["params"] == bm25_params(**params)
    block = scorer(np.empty((len(queries), len(docs)), dtype=np.float32), 0, len(queries))
    ref = _bm25s(docs, bm25_params(**params))
    for k, q in enumerate(queries):
        known = [ref.vocab_dict[t] for t in q if t in ref.vocab_dict]
        want = ref.get_scores(known) if known else np.zeros(len(docs), dtype=np.float32)
        if len(set(q)) == len(q):
            assert block[k].tobytes() == np.asarray(want, dtype=np.float32).tobytes()
        else:
            np.testing.assert_allclose(block[k], want, rtol=1e-6)


def test_options_parse_record_and_refuse():
    plan = SystemPlan.parse(["bm25,bm25:b=0.75,bm25:b=0.7,bm25[k1=0.9;b=0.4],bm25:method=bm25+,rrf:bm25:k1=0.1+vector"])
    rec = plan.record()
    assert rec["bm25"]["options"] == {} and plan.key("bm25") == plan.key("bm25:b=0.75")
    assert rec["bm25:b=0.7"]["options"] == {"b": 0.7}
    assert rec["bm25[k1=0.9;b=0.4]"]["options"] == {"k1": 0.9, "b": 0.4}
    assert rec["bm25:method=bm25+"]["options"] == {"method": "bm25+", "delta": 0.5}
    assert rec["rrf:bm25:k1=0.1+vector"]["inputs"] == ["bm25:k1=0.1", "vector"]
    assert BM25Options().params() == BM25_PARAMS
    assert BM25Options(method="bm25l").params() == {**BM25_PARAMS, "method": "bm25l", "delta": 0.5}
    replay = SystemPlan.from_record(rec, ["bm25:b=0.7"])
    assert replay.nodes["bm25:b=0.7"].options == BM25Options(b=0.7)
    for bad, words in (
        ("bm25:b=2", "b: Input should be less than or equal to 1"),
        ("bm25:k1=-1", "k1: Input should be greater than or equal to 0"),
        ("bm25:delta=1", r"delta applies to method bm25l or bm25\+ only"),
        ("bm25:method=bm99", "method: Input should be"),
        ("bm25:k1=nan", "k1"),
        ("bm25:c=1", "Extra inputs are not permitted"),
    ):
        with pytest.raises(HarnessInputError, match=words):
            SystemPlan.parse([bad])


def test_indexes_cached_per_parameter_set(tiny_corpus: Path, tmp_path: Path):
    db, _m, _c = ingest(tiny_corpus, tmp_path / "wd")
    with Corpus(db) as corpus:
        default = BM25System(corpus, tmp_path / "wd")
        tuned = BM25System(corpus, tmp_path / "wd", params=bm25_params(k1=0.9, b=0.4))
        again = BM25System(corpus, tmp_path / "wd", params=bm25_params(k1=0.9, b=0.4))
        plus = BM25System(corpus, tmp_path / "wd", params=bm25_params("bm25+", delta=1.0))
        assert tuned.build_seconds["chunk"] > 0 and again.build_seconds == {"chunk": 0.0, "document": 0.0}
        assert len({default.folders["chunk"], tuned.folders["chunk"], plus.folders["chunk"]}) == 3
        q = ["concesiones de aguas nacionales"]
        r_def = default.search(q, doc_depth=10, chunk_depth=10)[0]
        r_tun = tuned.search(q, doc_depth=10, chunk_depth=10)[0]
        assert r_tun == again.search(q, doc_depth=10, chunk_depth=10)[0]
        assert [s for _, s in r_def.chunks] != [s for _, s in r_tun.chunks]
        assert again.config()["params"] == {"method": "lucene", "k1": 0.9, "b": 0.4}
        # bm25+ gives every chunk the query's non-occurrence score: every chunk is retrieved (positive scores)
        r_plus = plus.search(q, doc_depth=1000, chunk_depth=1000)[0]
        assert len(r_plus.chunks) == len(corpus.chunk_keys()[0])
        # the registry opens the same indexes from the name
        systems = SystemSet(["bm25:k1=0.9:b=0.4"], corpus, tmp_path / "wd")
        got = systems.search_all(q, ["q1"], doc_depth=10, chunk_depth=10)["bm25:k1=0.9:b=0.4"]["q1"]
        assert got == r_tun


def test_parameters_outside_where_bm25_is_finite_are_refused_with_one_line(tiny_corpus, tiny_goldset, tmp_path):
    """Issue 44 item 18: ``bm25:k1=1e308`` ran with every ranking empty (MRR 0, exit 0) and ``atire`` / ``bm25+`` with
    an overflowing k1 or delta ended in a traceback; now k1 and delta lie in [0, 1000] and b in [0, 1], exit 2 with
    one line naming the system and the field, nothing written. The bounds themselves still rank."""
    from typer.testing import CliRunner

    from harness.cli import app

    MAX_DELTA = MAX_K1 = 1000

    runner = CliRunner()
    base = ["run", "--goldset", str(tiny_goldset), "--corpus", str(tiny_corpus), "--workdir", str(tmp_path / "wd")]
    for bad, field in (
        ("bm25:k1=1e308", "k1"),
        ("bm25:method=atire:k1=1e308", "k1"),
        ("bm25:k1=1000.5", "k1"),
        ("bm25:method=bm25+:delta=1e30", "delta"),
        ("bm25:method=bm25l:delta=inf", "delta"),
        ("bm25:b=1.0000001", "b"),
        ("bm25:b=-0.0001", "b"),
    ):
        r = runner.invoke(app, [*base, "--systems", bad, "--runs-dir", str(tmp_path / "runs")])
        assert r.exit_code == 2, (bad, r.output)
        lines = r.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"error: --systems: {bad!r}: {field}: "), (bad, r.output)
        assert not (tmp_path / "runs").exists()
    # the known-item study parses the same names
    ki = ["known-item", "--corpus", str(tiny_corpus), "--out", str(tmp_path / "ki"), "--workdir", str(tmp_path / "wd")]
    r = runner.invoke(app, [*ki, "--systems", "bm25,bm25:k1=1e308"])
    assert r.exit_code == 2 and "'bm25:k1=1e308': k1: " in r.output and len(r.output.strip().splitlines()) == 1
    assert not (tmp_path / "ki").exists()
    # the bounds are accepted and still rank every question's document (not an empty ranking)
    for good in (f"bm25:k1={MAX_K1:g}", f"bm25:method=bm25+:k1={MAX_K1:g}:delta={MAX_DELTA:g}", "bm25:k1=0:b=1"):
        plan = SystemPlan.parse([good])
        assert plan.record()[good]["options"]
    from harness import api

    res = api.run(tiny_goldset, tiny_corpus, [f"bm25:k1={MAX_K1:g}"], workdir=tmp_path / "wd",
                  runs_dir=tmp_path / "ok", bootstrap_reps=200)  # fmt: skip
    assert res.record.summary.systems[f"bm25:k1={MAX_K1:g}"]["all"].overall["mrr"].mean > 0
