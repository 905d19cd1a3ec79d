"""The known-item check of the gate (issue 30 items 1-3, 6): census difference, document-clustered CR2 interval with
its measured coverage, three-way verdict alone and beside the gold-set checks, refusals and unusable input."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_compare import CATS
from typer.testing import CliRunner

from harness.cli import app
from harness.evaluation.known_item_gate import KnownItemCheck, apply_known_item, load_pair, measured_coverage
from harness.evaluation.record import RUN_SCHEMA_VERSION
from harness.evaluation.runs import write_run_record
from harness.retrieve.registry import SystemPlan

runner = CliRunner()
HASH = "h" * 64
CHUNKER = {"max_words": 100, "min_tail_words": 20}


def write_ki(folder: Path, hits: dict[str, dict[str, list[int]]], *, ranks=None, corpus_hash=HASH, names=None) -> Path:
    """A known-item output folder: ``hits[system][doc] = [0/1 per chunk-query]``; ranks = hit ? 1 : 3 unless given."""
    folder.mkdir(parents=True)
    lines = []
    for system, per_doc in hits.items():
        for doc, hs in per_doc.items():
            for i, h in enumerate(hs):
                r = (ranks or {}).get((system, doc, i), 1 if h else 3)
                lines.append(json.dumps({"doc_id": doc, "chunk_index": i, "system": system, "hit": h, "rank": r}))
    (folder / "outcomes.jsonl.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    plan = SystemPlan.parse(names or list(hits))
    summary = {
        "corpus_hash": corpus_hash,
        "config": {
            "chunker_id": "md-words-v1",
            "chunker_params": CHUNKER,
            "query_words": 20,
            "systems": list(hits),
            "system_options": plan.record(),
        },
        "systems": {s: {} for s in hits},
    }
    (folder / "summary.json").write_text(json.dumps(summary))
    return folder


def population(n_docs=120, seed=0, drop=0.0, noise=0.0):
    """Baseline hits per document (heavy-tailed sizes); the candidate loses each hit with probability ``drop`` and
    gains a miss with probability ``noise``."""
    rng = np.random.default_rng(seed)
    sizes = np.minimum(2 + rng.pareto(1.5, n_docs) * 6, 200).astype(int)
    base, cand = {}, {}
    for d, n in enumerate(sizes):
        p = rng.uniform(0.2, 0.7)
        a = (rng.random(n) < p).astype(int)
        b = a.copy()
        b[(a == 1) & (rng.random(n) < drop)] = 0
        b[(a == 0) & (rng.random(n) < noise)] = 1
        base[f"doc{d:03d}"], cand[f"doc{d:03d}"] = a.tolist(), b.tolist()
    return base, cand


def _gate(args):
    return runner.invoke(app, ["gate", *map(str, args)])


def test_identical_candidate_passes_alone(tmp_path: Path):
    base, _ = population()
    ki = write_ki(tmp_path / "ki", {"bm25": base, "bm25:b=0.7": base})
    r = _gate(["--known-item", ki, "--baseline-system", "bm25", "--candidate-system", "bm25:b=0.7",
               "--known-item-margin", 0.01, "--format", "json"])  # fmt: skip
    assert r.exit_code == 0, r.output
    v = json.loads(r.stdout)
    c = v["data"]["checks"][0] if "data" in v else v["checks"][0]
    assert c["kind"] == "known-item" and c["decision"] == "PASS" and c["census_diff"] == 0.0


def test_worse_candidate_fails_and_every_number_is_carried(tmp_path: Path):
    base, cand = population(drop=0.3)
    ki = write_ki(tmp_path / "ki", {"bm25": base, "worse": cand}, names=["bm25", "worse=bm25:k1=0.1"])
    pair = load_pair(ki, "bm25", "worse")
    a, b = pair.a, pair.b
    v = apply_known_item(None, ki, baseline_system="bm25", candidate_system="worse", margin=0.01)
    c = v.checks[0]
    assert isinstance(c, KnownItemCheck) and (v.decision, v.exit_code) == ("FAIL", 1)
    assert c.census_diff == pytest.approx(b.mean() - a.mean(), abs=1e-15) == pytest.approx(c.diff, abs=1e-15)
    assert c.lower < c.census_diff < c.upper < -0.01
    assert c.n_documents == 120 == c.n_clusters and c.n_questions == a.size
    assert 0.8 < c.coverage["coverage"] <= 1 and c.coverage["design"] == "srswr" and c.coverage["level"] == 0.9
    assert c.minimum_detectable_difference > 0 and "source attribution" in c.proxy
    r = _gate(["--known-item", ki, "--baseline-system", "bm25", "--candidate-system", "worse",
               "--known-item-margin", 0.01, "--format", "json"])  # fmt: skip
    assert r.exit_code == 1, r.output
    text = r.stdout
    for key in ("census_diff", "coverage", "minimum_detectable_difference", "lower", "upper", "proxy"):
        assert f'"{key}"' in text
    for fmt in ("table", "markdown", "junit"):
        r = _gate(["--known-item", ki, "--baseline-system", "bm25", "--candidate-system", "worse",
                   "--known-item-margin", 0.01, "--format", fmt])  # fmt: skip
        assert r.exit_code == 1, r.output
        out = " ".join(r.stdout.split())
        for words in ("census difference on this corpus", "interval for documents like these", "measured coverage",
                      "proxy for source attribution", "minimum detectable difference"):  # fmt: skip
            assert words in out, (fmt, words)
    # rr: the reciprocal rank of the first same-document chunk (hit -> 1, else 1/3 here)
    v_rr = apply_known_item(None, ki, baseline_system="bm25", candidate_system="worse", margin=0.01, metric="rr")
    assert v_rr.checks[0].census_diff == pytest.approx((b.mean() - a.mean()) * (1 - 1 / 3))


def test_small_noisy_difference_is_inconclusive_and_says_underpowered(tmp_path: Path):
    base, cand = population(n_docs=12, drop=0.05, noise=0.05, seed=3)
    ki = write_ki(tmp_path / "ki", {"bm25": base, "new": cand}, names=["bm25", "new=bm25:b=0.5"])
    v = apply_known_item(None, ki, baseline_system="bm25", candidate_system="new", margin=0.01)
    assert (v.decision, v.exit_code) == ("INCONCLUSIVE", 3), v.reason
    assert "underpowered" in v.reason and "needs about" in v.reason
    v2 = apply_known_item(None, ki, baseline_system="bm25", candidate_system="new", margin=0.01, on_inconclusive="fail")
    assert v2.exit_code == 1


def test_cr2_interval_golden_against_the_matrix_formula(tmp_path: Path):
    """The interval is CR2 (documents as clusters, Satterthwaite df): checked against the textbook matrix form
    (Bell & McCaffrey 2002), ``V = (X'X)^-1 sum_g X_g' A_g e_g e_g' A_g X_g (X'X)^-1``, ``A_g = (I - H_gg)^-1/2``."""
    from scipy import linalg
    from scipy import stats as sps

    base = {"d0": [1, 1, 0], "d1": [0, 1], "d2": [1, 0, 0, 1], "d3": [1, 1]}
    cand = {"d0": [0, 1, 0], "d1": [0, 0], "d2": [1, 0, 1, 1], "d3": [0, 1]}
    ki = write_ki(tmp_path / "ki", {"bm25": base, "new": cand}, names=["bm25", "new=tfidf"])
    v = apply_known_item(None, ki, baseline_system="bm25", candidate_system="new", margin=0.01, alpha=0.05)
    c = v.checks[0]
    d = np.array([b - a for k in base for a, b in zip(base[k], cand[k], strict=True)], dtype=float)
    g = np.repeat(np.arange(4), [3, 2, 4, 2])
    n = d.size
    e = d - d.mean()
    meat = 0.0
    for k in range(4):
        idx = g == k
        h = np.full((idx.sum(), idx.sum()), 1.0 / n)
        a_g = linalg.inv(linalg.sqrtm(np.eye(idx.sum()) - h)).real
        meat += (np.ones(idx.sum()) @ a_g @ e[idx]) ** 2
    se = np.sqrt(meat) / n
    assert c.se == pytest.approx(se, rel=1e-10)
    assert c.census_diff == pytest.approx(-2 / 11)  # -1 - 1 + 1 - 1 over 11 chunk-queries
    assert c.upper - c.lower == pytest.approx(2 * sps.t.ppf(0.95, c.df) * se, rel=1e-10)


def test_unusable_inputs_exit_2_naming_system_and_chunk(tmp_path: Path):
    base, cand = population(n_docs=10)
    del cand["doc003"][1:]
    ki = write_ki(tmp_path / "ki", {"bm25": base, "new": cand}, names=["bm25", "new=tfidf"])
    r = _gate(["--known-item", ki, "--baseline-system", "bm25", "--candidate-system", "new",
               "--known-item-margin", 0.01])  # fmt: skip
    assert r.exit_code == 2
    assert "system new has no outcome for chunk-query doc003#1" in " ".join(r.output.split())
    for args, words in (
        (["--candidate-system", "nope", "--known-item-margin", 0.01], "holds no system 'nope'"),
        (["--candidate-system", "new"], "--known-item-margin: required"),
        (["--candidate-system", "new", "--known-item-margin", -1], "--known-item-margin"),
        (["--candidate-system", "new", "--known-item-margin", 0.01, "--known-item-metric", "ndcg"], "hit@1 or rr"),
    ):
        r = _gate(["--known-item", ki, "--baseline-system", "bm25", *args])
        assert r.exit_code == 2 and words.split(" or ")[0] in " ".join(r.output.split()), (args, r.output)
    r = _gate(["--known-item", tmp_path, "--baseline-system", "bm25", "--candidate-system", "new",
               "--known-item-margin", 0.01])  # fmt: skip
    assert r.exit_code == 2 and "not a known-item output folder" in r.output
    r = _gate(["--margin", 0.01])
    assert r.exit_code == 2 and "--baseline and --candidate" in r.output


def make_run(runs: Path, run_id: str, values: dict[str, dict[str, float]], names: list[str], corpus_hash=HASH):
    """A run record with system_options (as harness run writes them) and the corpus's hash and chunking."""
    qids = sorted(next(iter(values.values())))
    rows = [
        {"system": s, "qid": q, "category": CATS[i % len(CATS)], "split": None, "cluster": f"c{i % 20}",
         "metrics": {"mrr": v[q], "recall@10": v[q]}, "flags": {}}
        for s, v in values.items() for i, q in enumerate(qids)
    ]  # fmt: skip
    manifest = {
        "schema_version": RUN_SCHEMA_VERSION,
        "run_id": run_id,
        "goldset": {"sha256": "a" * 64, "name": "g", "version": "1"},
        "corpus": {"corpus_hash": corpus_hash, "chunker_id": "md-words-v1", "chunker_params": CHUNKER},
        "depths": {"document": 50, "chunk": 200},
        "systems": list(values),
        "clusters": {"mode": "components", "n_clusters": 20, "labels": {q: f"c{i % 20}" for i, q in enumerate(qids)}},
        "system_options": SystemPlan.parse(names).record(),
    }
    return write_run_record(
        runs, run_id, manifest=manifest, per_question=rows, summary={"systems": {}}, trec_runs={}, qrels={}
    )


def test_beside_the_gold_set_checks_intersection_union_and_refusals(tmp_path: Path):
    rng = np.random.default_rng(1)
    qs = [f"Q-{i:02d}" for i in range(42)]
    gold_a = {q: float(x) for q, x in zip(qs, rng.uniform(0.2, 0.9, 42), strict=True)}
    gold_b = {q: float(np.clip(x + rng.normal(0, 0.25), 0, 1)) for q, x in gold_a.items()}
    base_run = make_run(tmp_path / "runs", "base", {"bm25": gold_a}, ["bm25"])
    cand_run = make_run(tmp_path / "runs", "cand", {"worse": gold_b}, ["worse=bm25:k1=0.1"])
    base, cand = population(drop=0.3)
    ki = write_ki(tmp_path / "ki", {"bm25": base, "worse": cand}, names=["bm25", "worse=bm25:k1=0.1"])
    args = ["--baseline", base_run, "--candidate", cand_run, "--baseline-system", "bm25", "--candidate-system",
            "worse", "--margin", 0.02, "--format", "json"]  # fmt: skip
    r = _gate(args)
    assert r.exit_code == 3, r.output  # the gold set alone: INCONCLUSIVE (42 questions, noisy)
    r = _gate([*args, "--known-item", ki, "--known-item-margin", 0.01])
    assert r.exit_code == 1, r.output  # the known-item check FAILs: intersection-union FAIL
    doc = json.loads(r.stdout)
    checks = (doc.get("data") or doc)["checks"]
    assert [c["decision"] for c in checks] == ["INCONCLUSIVE", "FAIL"] and checks[1]["kind"] == "known-item"
    # a KI_DIR of another corpus, or whose candidate is another system, is refused
    other = write_ki(tmp_path / "ki2", {"bm25": base, "worse": cand}, corpus_hash="x" * 64,
                     names=["bm25", "worse=bm25:k1=0.1"])  # fmt: skip
    r = _gate([*args, "--known-item", other, "--known-item-margin", 0.01])
    assert r.exit_code == 2 and "corpus_hash" in r.output
    changed = write_ki(tmp_path / "ki3", {"bm25": base, "worse": cand}, names=["bm25", "worse=bm25:k1=0.2"])
    r = _gate([*args, "--known-item", changed, "--known-item-margin", 0.01])
    assert r.exit_code == 2 and "system_options.worse" in r.output


def test_measured_coverage_is_near_nominal_on_a_well_behaved_population():
    rng = np.random.default_rng(0)
    n = rng.integers(20, 40, 300).astype(float)
    d = rng.normal(-0.02, 0.05, 300)
    s = d * n
    ss = (d * d + 0.01) * n
    cov = measured_coverage(n, s, ss, level=0.9, reps=1000)
    assert abs(cov["coverage"] - 0.9) < 3 * cov["mc_margin"] + 0.01
    assert cov["coverage"] + cov["lower_miss"] + cov["upper_miss"] == pytest.approx(1.0)
    pps = measured_coverage(n, s, ss, level=0.9, reps=500, design="pps")
    assert pps["method"] == "hansen_hurwitz" and 0 <= pps["coverage"] <= 1
    with pytest.raises(ValueError):
        measured_coverage(n, s, ss, design="cluster")


@settings(max_examples=20, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 30), st.floats(-1, 1)), min_size=2, max_size=40), st.integers(0, 5))
def test_measured_coverage_shares_add_up(docs, seed):
    n = np.array([x for x, _ in docs], dtype=float)
    s = np.array([x * y for x, y in docs])
    ss = np.array([x * y * y for x, y in docs])
    cov = measured_coverage(n, s, ss, reps=50, seed=seed)
    assert 0 <= cov["coverage"] <= 1 and cov["lower_miss"] + cov["upper_miss"] + cov["coverage"] <= 1 + 1e-12
    assert cov == measured_coverage(n, s, ss, reps=50, seed=seed)  # seeded: reproducible


FAILING = '''
import time

from harness.retrieve.base import QueryResult


class FailsOnVolcano:
    """Ranks gatos#0 first for every query, but raises on the query that opens with 'volcan'."""

    def search(self, queries, *, doc_depth, chunk_depth):
        if any(q.startswith("volcan") for q in queries):
            raise ValueError("cannot rank volcanoes")
        return [QueryResult(docs=None, chunks=[("gatos#0", 1.0)]) for _ in queries]


class Slow:
    def search(self, queries, *, doc_depth, chunk_depth):
        time.sleep(5)
        return [QueryResult(docs=None, chunks=[("gatos#0", 1.0)]) for _ in queries]
'''


def test_a_failing_candidate_is_unusable_naming_system_and_chunk(tmp_path: Path):
    """Item 6: an exception or a timeout on one chunk-query is exit 2 naming the system and the chunk, never a 0."""
    from test_known_item import KW, write_corpus

    corpus = write_corpus(tmp_path / "corpus")
    plugin = tmp_path / "failing.py"
    plugin.write_text(FAILING, encoding="utf-8")
    base = ["known-item", "--corpus", corpus, "--workers", 1, "--chunk-words", 50, "--query-words", 3,
            "--workdir", tmp_path / "wd"]  # fmt: skip
    assert KW["query_words"] == 3
    r = _gate_cli_any([*base, "--out", tmp_path / "o1", "--systems", f"bm25,bad=py:{plugin}:FailsOnVolcano"])
    assert r.exit_code == 2
    said = " ".join(r.output.split())
    assert "system bad (py:" in said and "search failed on chunk-query mixto#1" in said, said
    assert "ValueError: cannot rank volcanoes" in said and not (tmp_path / "o1").exists()
    r = _gate_cli_any([*base, "--out", tmp_path / "o2", "--systems", f"bm25,slow=py:{plugin}:Slow",
                       "--plugin-timeout", 0.5])  # fmt: skip
    assert r.exit_code == 2
    said = " ".join(r.output.split())
    assert "system slow (py:" in said and "timed out on chunk-queries gatos#0" in said, said


def _gate_cli_any(args):
    return runner.invoke(app, [str(a) for a in args])


def test_outcomes_are_cached_by_content(tmp_path: Path, monkeypatch):
    """Item 4: a warm re-run searches no unchanged system; a changed parameter set is searched, once."""
    from test_known_item import KW, write_corpus

    import harness.studies.known_item.study as study

    corpus = write_corpus(tmp_path / "corpus")
    calls: list[str] = []
    real = study._run_system

    def counting(name, *a, **k):
        calls.append(name)
        return real(name, *a, **k)

    monkeypatch.setattr(study, "_run_system", counting)
    wd = tmp_path / "wd"
    cold = study.run_known_item(corpus, tmp_path / "a", systems="bm25,tfidf", workers=1, workdir=wd, **KW)
    assert calls == ["bm25", "tfidf"]
    warm = study.run_known_item(corpus, tmp_path / "b", systems="bm25,tfidf,bm25:b=0.5", workers=1, workdir=wd, **KW)
    assert calls == ["bm25", "tfidf", "bm25:b=0.5"]
    for name in ("bm25", "tfidf"):
        for f in ("hit", "rank", "tie", "tie_decided_hit", "empty_query", "top_chunk"):
            np.testing.assert_array_equal(getattr(cold.outcomes[name], f), getattr(warm.outcomes[name], f))
        assert warm.summary["systems"][name]["config"]["outcomes_cache"]["hit"] is True
    other = dict(KW, query_words=4)  # other query words: another key
    study.run_known_item(corpus, None, systems="bm25", workers=1, workdir=wd, **other)
    assert calls[-1] == "bm25" and len(calls) == 4
    study.run_known_item(corpus, None, systems="bm25", workers=1, workdir=wd, cache=False, **KW)
    assert len(calls) == 5


@pytest.mark.parametrize("system", ["bm25", "tfidf", "bm25:method=bm25+", "bm25:k1=0.1"])
def test_compiled_sparse_kernel_equals_the_dense_blocks(tmp_path: Path, system):
    """The numba path of the batched faces gives the same outcomes as the dense numpy blocks, ties included."""
    from test_known_item import KW, write_corpus

    from harness.ranking import id_rank
    from harness.retrieve.analyzer import SpanishAnalyzer
    from harness.studies.known_item import ScorerInputs, chunk_corpus, known_item_search
    from harness.studies.known_item.systems import FACES, plan_study_systems

    cc = chunk_corpus(write_corpus(tmp_path / "corpus"), **KW)
    an = SpanishAnalyzer()
    inputs = ScorerInputs(cc.texts, cc.query_texts, an.tokenize_many(cc.texts), an.tokenize_many(cc.query_texts))
    node = plan_study_systems([system]).nodes[system]
    scorer, _ = FACES[node.record.kind](inputs, node.options)
    idr = id_rank(cc.chunk_ids)
    dense = known_item_search(scorer, cc.query_chunks, cc.chunk_doc, idr, workers=1, batch_size=3, backend="numpy")
    fast = known_item_search(scorer, cc.query_chunks, cc.chunk_doc, idr, workers=2)
    for x, y in zip(dense, fast, strict=True):
        np.testing.assert_array_equal(x, y)


@settings(max_examples=30, deadline=None)
@given(
    docs=st.lists(
        st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), min_size=1, max_size=5), min_size=3, max_size=14
    ),
    cuts=st.lists(st.integers(1, 3), min_size=1, max_size=6),
)
def test_compiled_kernel_property_equals_dense(docs, cuts):
    """Random tiny corpora full of exact ties: the compiled kernel and the dense blocks agree on every outcome."""
    from harness.ranking import id_rank
    from harness.studies.known_item import ScorerInputs, known_item_search
    from harness.studies.known_item.scorers import bm25_scorer

    chunk_doc, d = [], 0
    for i in range(len(docs)):
        chunk_doc.append(d)
        if i + 1 >= sum(cuts[: d + 1]):
            d += 1
    chunk_doc = np.asarray(chunk_doc)
    ids = [f"x{d}#{i}" for i, d in enumerate(chunk_doc)][::-1]  # id order differs from column order
    queries = np.arange(len(docs))
    scorer, _ = bm25_scorer(ScorerInputs([], [], docs, [docs[q][:2] for q in queries]))
    idr = id_rank(ids)
    dense = known_item_search(scorer, queries, chunk_doc, idr, workers=1, batch_size=4, backend="numpy")
    fast = known_item_search(scorer, queries, chunk_doc, idr, workers=1)
    for x, y in zip(dense, fast, strict=True):
        np.testing.assert_array_equal(x, y)
