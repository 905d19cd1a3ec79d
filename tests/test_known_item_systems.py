"""The known-item study reads its systems from the system registry: batched faces for the base kinds, the
per-query face for fusions and ``py:`` retrievers (checked against the batched face and a brute-force RRF)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from test_cli_known_item import write_corpus as write_dense_corpus
from test_known_item import KW, write_corpus
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import HarnessInputError
from harness.retrieve.analyzer import SpanishAnalyzer
from harness.retrieve.registry import KINDS
from harness.studies.known_item import FACES, ScorerInputs, chunk_corpus, run_known_item
from harness.studies.known_item.scorers import bm25_scorer, tfidf_scorer

PLUGIN = '''
from harness.retrieve.analyzer import SpanishAnalyzer
from harness.retrieve.base import QueryResult
from harness.retrieve.bm25 import BM25Index
from harness.studies.known_item import chunk_corpus

CORPUS = {corpus!r}
KW = {kw!r}


class StudyBM25:
    """bm25 over the study's own chunks, answered the way a run answers (search_many at chunk_depth)."""

    def __init__(self):
        cc = chunk_corpus(CORPUS, **KW)
        self.an = SpanishAnalyzer()
        self.index = BM25Index.build(cc.chunk_ids, self.an.tokenize_many(cc.texts), self.an)

    def search(self, queries, *, doc_depth, chunk_depth):
        found = self.index.search_many(list(queries), chunk_depth)
        return [QueryResult(docs=None, chunks=r, flags=f) for r, f in found]

    def config(self):
        return {{"what": "bm25 over the study's chunks"}}


class DocsOnly:
    def search(self, queries, *, doc_depth, chunk_depth):
        return [QueryResult(docs=[("gatos", 1.0)], chunks=None) for _ in queries]


class Foreign:
    def search(self, queries, *, doc_depth, chunk_depth):
        return [QueryResult(docs=None, chunks=[("elsewhere#0", 1.0)]) for _ in queries]


class Broken:
    def search(self, queries, *, doc_depth, chunk_depth):
        raise RuntimeError("index offline")
'''


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "corpus")


def _plugin_file(path: Path, corpus: Path, kw: dict) -> Path:
    path.write_text(PLUGIN.format(corpus=str(corpus), kw=kw), encoding="utf-8")
    return path


@pytest.fixture
def plugin(tmp_path: Path, corpus: Path) -> Path:
    return _plugin_file(tmp_path / "study_plugin.py", corpus, KW)


DENSE_KW = dict(chunk_words=40, query_words=4, min_tail_words=1)
"""8 documents of 330 words sharing 40 common words: most chunks score against most queries, so depths bind."""


def _outcomes(res, name: str) -> tuple:
    o = res.outcomes[name]
    return o.hit.tolist(), o.rank.tolist(), o.tie.tolist(), o.tie_decided_hit.tolist()


def test_every_batched_face_is_a_base_kind_of_the_registry():
    """A batched face is a speed-up: a base kind without one ranks on the per-query face (next test)."""
    assert set(FACES) <= set(KINDS) and {"bm25", "tfidf", "vector"} <= set(FACES)


def test_a_base_kind_without_a_batched_face_ranks_per_query_with_its_own_system(tmp_path, monkeypatch):
    """A new registry kind needs no known-item code: without a face, the kind's own system (opened by the registry
    on an ingest of the corpus under the study's chunker) is ranked per query. Checked on tfidf, whose batched face
    it must reproduce outcome for outcome (hits, ranks, ties)."""
    import harness.studies.known_item.systems as systems_mod

    dense = write_dense_corpus(tmp_path / "dense")
    kw = dict(query_words=4, workers=1, workdir=tmp_path / "wd")
    ref = run_known_item(dense, None, systems=["tfidf"], **kw)
    monkeypatch.delitem(systems_mod.FACES, "tfidf")
    res = run_known_item(dense, None, systems=["tfidf"], **kw)
    assert _outcomes(res, "tfidf") == _outcomes(ref, "tfidf") and res.outcomes["tfidf"].hit.sum() > 0
    cfg = res.summary["systems"]["tfidf"]["config"]
    assert cfg["kind"] == "tfidf" and cfg["path"].startswith("per-query: ranked to 200 chunks")
    assert "over an ingest of the corpus (md-words-v1)" in cfg["path"]
    with pytest.raises(HarnessInputError, match="kind tfidf has no batched known-item face.*--chunk-words 100"):
        run_known_item(dense, None, systems=["tfidf"], chunk_words=50, **kw)


def test_a_py_retriever_on_the_per_query_face_gives_the_batched_bm25_outcomes(corpus, plugin):
    res = run_known_item(corpus, None, systems=["bm25", f"mine=py:{plugin}:StudyBM25"], workers=2, batch_size=3, **KW)
    assert _outcomes(res, "mine") == _outcomes(res, "bm25")
    assert res.outcomes["mine"].hit.sum() == 6  # the hand-computed outcomes of test_known_item
    pair = res.summary["paired"]["bm25 vs mine"]
    assert pair["only_a"] == pair["only_b"] == 0
    cfg = res.summary["systems"]["mine"]["config"]
    assert cfg["kind"] == "py" and cfg["config"] == {"what": "bm25 over the study's chunks"}
    assert len(cfg["plugin"]["sha256"]) == 64 and cfg["path"].startswith("per-query: ranked to 200 chunks")
    assert res.summary["config"]["system_options"]["mine"]["kind"] == "py"


def _canonical(scores: np.ndarray, ids: list[str], own: int, depth: int) -> list[int]:
    """Brute force: positive scores, the query chunk removed, score descending then id ascending, cut at depth."""
    items = sorted((-float(scores[j]), ids[j], j) for j in range(len(ids)) if j != own and scores[j] > 0)
    return [j for _, _, j in items[:depth]]


@pytest.mark.parametrize("depth", [200, 3])
def test_a_fusion_on_the_per_query_face_equals_a_brute_force_rrf(tmp_path, depth):
    corpus = write_dense_corpus(tmp_path / "dense")
    plugin = _plugin_file(tmp_path / "dense_plugin.py", corpus, DENSE_KW)
    mine = f"py:{plugin}:StudyBM25"
    systems = ["rrf:bm25+tfidf", f"rrf:bm25+{mine}", mine]
    res = run_known_item(corpus, None, systems=systems, chunk_depth=depth, workers=2, batch_size=7, **DENSE_KW)
    cc = chunk_corpus(corpus, **DENSE_KW)
    an = SpanishAnalyzer()
    inputs = ScorerInputs(cc.texts, cc.query_texts, an.tokenize_many(cc.texts), an.tokenize_many(cc.query_texts))
    dense = []
    for factory in (bm25_scorer, tfidf_scorer):
        scorer, _ = factory(inputs)
        dense.append((scorer.queries @ scorer.index_t).toarray())

    def outcome(ranking: list[int], qc: int) -> tuple[int, int]:
        same = [r for r, j in enumerate(ranking, start=1) if cc.chunk_doc[j] == cc.chunk_doc[qc]]
        return int(bool(same) and same[0] == 1), same[0] if same else 0

    def rrf(lists: list[list[int]]) -> list[int]:
        fused: dict[int, float] = {}
        for ranking in lists:
            for r, j in enumerate(ranking, start=1):
                fused[j] = fused.get(j, 0.0) + 1.0 / (60 + r)
        return sorted(fused, key=lambda j: (-fused[j], cc.chunk_ids[j]))[:depth]

    want: dict[str, list[tuple[int, int]]] = {name: [] for name in systems}
    for k, qc in enumerate(cc.query_chunks):
        bm25, tfidf = (_canonical(d[k], cc.chunk_ids, int(qc), depth) for d in dense)
        want["rrf:bm25+tfidf"].append(outcome(rrf([bm25, tfidf]), qc))
        want[f"rrf:bm25+{mine}"].append(outcome(rrf([bm25, bm25]), qc))
        want[mine].append(outcome(bm25, qc))
    ranked_all = [
        outcome(_canonical(dense[0][k], cc.chunk_ids, int(q), 10**6), q) for k, q in enumerate(cc.query_chunks)
    ]
    binds = sum(a != b for a, b in zip(ranked_all, want[mine], strict=True))
    assert (binds > 0) == (depth == 3)  # at depth 3 some first same-document chunk falls below the cut
    for name in systems:
        got = list(zip(res.outcomes[name].hit.tolist(), res.outcomes[name].rank.tolist(), strict=True))
        assert got == want[name], name
    cfg = res.summary["systems"]["rrf:bm25+tfidf"]["config"]
    assert set(cfg["inputs"]) == {"bm25", "tfidf"} and cfg["path"].startswith(f"per-query: ranked to {depth} chunks")


def test_two_names_of_one_system_are_searched_once_and_both_reported(corpus):
    res = run_known_item(corpus, None, systems="rrf:bm25+tfidf, mix=rrf:bm25+tfidf, tfidf", **KW)
    assert list(res.summary["systems"]) == ["rrf:bm25+tfidf", "mix", "tfidf"]
    assert _outcomes(res, "mix") == _outcomes(res, "rrf:bm25+tfidf")
    assert res.outcomes["mix"].system == "mix"
    assert res.summary["paired"]["rrf:bm25+tfidf vs mix"]["share_queries_equal"] == 1.0


@pytest.mark.parametrize(
    ("systems", "message"),
    [
        (["two-stage:bm25"], "two-stage is not available in the known-item study"),
        (["mine=py:{plugin}:DocsOnly"], "returned no chunk ranking"),
        (["mine=py:{plugin}:Foreign"], "gatos#0: returned chunk id 'elsewhere#0', not a chunk of the study"),
        (
            ["mine=py:{plugin}:Broken"],
            r"system mine \(py:.*:Broken\): search failed on chunk-query gatos#0 \(RuntimeError: index offline\)",
        ),
        (["mine=py:{plugin}:Nope"], "has no attribute 'Nope'"),
        (["mine=py:no_such_module_here:X"], "no module named 'no_such_module_here'"),
        (["bm25", "nope"], "unknown system 'nope'"),
        (["tfidf:k1=2"], "k1"),
    ],
)
def test_unusable_systems_are_refused_naming_them(corpus, plugin, tmp_path, systems, message):
    out = tmp_path / "out"
    with pytest.raises(HarnessInputError, match=message):
        run_known_item(corpus, out, systems=[s.format(plugin=plugin) for s in systems], **KW)
    assert not out.exists()


def test_cli_takes_registry_names_and_refuses_a_bad_plugin_with_exit_2(corpus, plugin, tmp_path):
    out = tmp_path / "ki"
    base = ["known-item", "--corpus", str(corpus), "--chunk-words", "50", "--query-words", "3", "--workers", "1"]
    systems = f"bm25,mine=py:{plugin}:StudyBM25,rrf:bm25+mine"
    r = CliRunner().invoke(app, [*base, "--out", str(out), "--systems", systems, "--chunk-depth", "20"])
    assert r.exit_code == 0, r.output
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    assert list(summary["systems"]) == ["bm25", "mine", "rrf:bm25+mine"]
    assert summary["config"]["chunk_depth"] == 20
    bad = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "bad"), "--systems", f"m=py:{plugin}:Foreign"])
    assert bad.exit_code == 2
    assert "not a chunk of the study" in bad.output and not (tmp_path / "bad").exists()
