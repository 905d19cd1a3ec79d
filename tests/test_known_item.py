"""Known-item evaluation: hand-computed hits on a tiny corpus, the search kernel against a brute-force reference."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import HarnessInputError
from harness.ranking import id_rank as _id_rank
from harness.report.studies import render_known_item
from harness.retrieve.analyzer import SpanishAnalyzer
from harness.retrieve.bm25 import BM25Index
from harness.studies.known_item import (
    ScorerInputs,
    SparseScorer,
    chunk_corpus,
    known_item_search,
    paired_comparison,
    run_chunk_size_sensitivity,
    run_known_item,
)
from harness.studies.known_item.scorers import bm25_scorer, tfidf_scorer
from harness.studies.known_item.search import _block_outcomes


def _bm25_scorer(toks, qtoks):
    return bm25_scorer(ScorerInputs(chunk_texts=[], query_texts=[], chunk_tokens=toks, query_tokens=qtoks))


def _tfidf_scorer(toks, qtoks):
    return tfidf_scorer(ScorerInputs(chunk_texts=[], query_texts=[], chunk_tokens=toks, query_tokens=qtoks))


# Every section (text under a "##" heading) is one chunk when chunk_words is large: chunks never cross headings.
DOCS = {
    "gatos": ["gato felino maullido bigotes ronroneo gato felino", "gato felino maullido garras ronroneo", "corto"],
    "perros": ["perro ladrido hueso perro ladrido hueso correa", "perro hueso ladrido perro cachorro"],
    "mixto": ["perro ladrido hueso paseo parque", "volcan lava ceniza crater erupcion"],
    "solo": ["astronomia estrella planeta cometa galaxia"],
    "dupa": ["alfa beta gamma delta epsilon", "alfa beta gamma delta epsilon"],
    "dupb": ["alfa beta gamma delta epsilon", "zeta eta theta iota kappa"],
}
TYPES = {"gatos": "ley", "perros": "ley", "mixto": "aviso", "solo": "aviso", "dupa": "acuerdo", "dupb": "acuerdo"}

# (doc, chunk index) -> (hit, rank of the first same-document chunk or None, tie at the top, tie decided the hit)
EXPECTED = {
    ("gatos", 0): (1, 1, False, False),
    ("gatos", 1): (1, 1, False, False),
    ("perros", 0): (1, 1, False, False),  # perros#1 has perro twice; mixto#0 once, same length
    ("perros", 1): (1, 1, False, False),
    ("mixto", 0): (0, None, False, False),  # the dog words are another document's
    ("mixto", 1): (0, None, False, False),  # matches only itself, which is excluded: nothing retrieved
    ("dupa", 0): (1, 1, True, True),  # dupa#1 and dupb#0 identical: "dupa#1" < "dupb#0"
    ("dupa", 1): (1, 1, True, True),  # dupa#0 and dupb#0 identical: "dupa#0" < "dupb#0"
    ("dupb", 0): (0, None, True, False),  # dupa#0 = dupa#1 both other-document
    ("dupb", 1): (0, None, False, False),
}


def write_corpus(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    meta = []
    for doc_id, sections in DOCS.items():
        body = f"# {doc_id}\n\n" + "".join(f"## s{i}\n\n{t}\n\n" for i, t in enumerate(sections))
        (root / f"{doc_id}.md").write_text(body, encoding="utf-8")
        meta.append({"doc_id": doc_id, "path": f"{doc_id}.md", "doc_type": TYPES[doc_id], "collection": "c"})
    (root / "metadata.jsonl").write_text("\n".join(json.dumps(m) for m in meta) + "\n", encoding="utf-8")
    return root


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "corpus")


KW = dict(chunk_words=50, query_words=3, min_tail_words=1)


def test_chunk_corpus_counts(corpus):
    cc = chunk_corpus(corpus, **KW)
    assert cc.n_chunks == sum(len(v) for v in DOCS.values())
    assert cc.skipped_short == 1  # gatos#2 "corto"
    assert cc.excluded_single_chunk_docs == 1 and cc.excluded_single_chunk_chunks == 1  # solo
    assert len(cc.query_texts) == 10
    assert cc.query_texts[0] == "gato felino maullido"
    assert cc.chunker_id == "md-words-v1:max_words=50,min_tail_words=1"


@pytest.mark.parametrize("system", ["bm25", "tfidf"])
def test_hand_computed_outcomes(corpus, tmp_path, system):
    res = run_known_item(corpus, tmp_path / "out", systems=[system], workers=1, **KW)
    recs = [json.loads(x) for x in gzip.decompress((tmp_path / "out" / "outcomes.jsonl.gz").read_bytes()).splitlines()]
    got = {(r["doc_id"], r["chunk_index"]): (r["hit"], r["rank"], r["tie"], r["tie_decided_hit"]) for r in recs}
    assert got == EXPECTED
    s = res.summary
    assert s["counts"]["skipped_short"] == 1
    assert s["counts"]["excluded_single_chunk_docs"] == 1
    assert s["counts"]["queries"] == 10
    sysd = s["systems"][system]
    assert sysd["micro_hit1"] == pytest.approx(6 / 10)
    assert sysd["macro_hit1"] == pytest.approx((1 + 1 + 0 + 1 + 0) / 5)
    assert sysd["per_document"]["share_at_zero"] == pytest.approx(2 / 5)
    assert sysd["per_document"]["share_at_one"] == pytest.approx(3 / 5)
    per_doc = [json.loads(x) for x in (tmp_path / "out" / "per_document.jsonl").read_text().splitlines()]
    assert {(d["doc_id"], d["n"], d["s"]) for d in per_doc} == {
        ("gatos", 2, 2),
        ("perros", 2, 2),
        ("mixto", 2, 0),
        ("dupa", 2, 2),
        ("dupb", 2, 0),
    }
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["systems"][system]["queries"] == 10


def _reference(scores: np.ndarray, ids: list[str], doc_of: np.ndarray, qchunk: int) -> tuple:
    """Brute force: canonical ranking of positive scores, the query chunk removed."""
    items = [(-float(scores[j]), ids[j], j) for j in range(len(ids)) if j != qchunk and scores[j] > 0]
    items.sort()
    qd = doc_of[qchunk]
    if not items:
        return 0, 0, False, False, -1
    top = items[0]
    tied = [j for s, _, j in items if s == top[0]]
    same = [doc_of[j] == qd for j in tied]
    rank = next((k + 1 for k, (_, _, j) in enumerate(items) if doc_of[j] == qd), 0)
    hit = int(doc_of[top[2]] == qd)
    return hit, rank, len(tied) > 1, any(same) and not all(same), top[2]


def test_bm25_kernel_matches_bm25s_bruteforce(corpus):
    cc = chunk_corpus(corpus, **KW)
    an = SpanishAnalyzer()
    toks = an.tokenize_many(cc.texts)
    qtoks = an.tokenize_many(cc.query_texts)
    scorer, _ = _bm25_scorer(toks, qtoks)
    idr = _id_rank(cc.chunk_ids)
    got = known_item_search(scorer, cc.query_chunks, cc.chunk_doc, idr, batch_size=3, workers=1)
    idx = BM25Index.build(cc.chunk_ids, toks, an)
    for k, qc in enumerate(cc.query_chunks):
        terms = [t for t in qtoks[k] if t in idx.vocab]
        ref = _reference(idx.scores(terms), cc.chunk_ids, cc.chunk_doc, int(qc))
        assert tuple(x[k] for x in got) == ref


def test_tfidf_kernel_matches_dense_cosine(corpus):
    cc = chunk_corpus(corpus, **KW)
    an = SpanishAnalyzer()
    toks = an.tokenize_many(cc.texts)
    qtoks = an.tokenize_many(cc.query_texts)
    scorer, _ = _tfidf_scorer(toks, qtoks)
    idr = _id_rank(cc.chunk_ids)
    got = known_item_search(scorer, cc.query_chunks, cc.chunk_doc, idr, batch_size=4, workers=1)
    dense = (scorer.queries @ scorer.index_t).toarray()
    for k, qc in enumerate(cc.query_chunks):
        ref = _reference(dense[k], cc.chunk_ids, cc.chunk_doc, int(qc))
        assert tuple(x[k] for x in got) == ref


def test_forked_workers_match_serial(corpus):
    cc = chunk_corpus(corpus, **KW)
    an = SpanishAnalyzer()
    scorer, _ = _bm25_scorer(an.tokenize_many(cc.texts), an.tokenize_many(cc.query_texts))
    idr = _id_rank(cc.chunk_ids)
    a = known_item_search(scorer, cc.query_chunks, cc.chunk_doc, idr, batch_size=1, workers=1)
    b = known_item_search(scorer, cc.query_chunks, cc.chunk_doc, idr, batch_size=1, workers=2, task_queries=2)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_block_outcomes_match_reference(data):
    """Integer scores force ties; chunk ids in a random string order exercise the id tie rule."""
    n_docs = data.draw(st.integers(1, 4))
    sizes = data.draw(st.lists(st.integers(1, 4), min_size=n_docs, max_size=n_docs))
    doc_of = np.repeat(np.arange(n_docs), sizes)
    n = doc_of.size
    perm = data.draw(st.permutations(list(range(n))))
    ids = [f"c{p:03d}" for p in perm]
    idr = _id_rank(ids)
    b = data.draw(st.integers(1, 5))
    scores = np.array(data.draw(st.lists(st.integers(0, 3), min_size=b * n, max_size=b * n)), dtype=np.float32).reshape(
        b, n
    )
    qchunks = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=b, max_size=b)))
    lo = np.searchsorted(doc_of, doc_of[qchunks], side="left")
    hi = np.searchsorted(doc_of, doc_of[qchunks], side="right")
    out = _block_outcomes(scores.copy(), qchunks, lo, hi, idr)
    for r in range(b):
        ref = _reference(scores[r], ids, doc_of, int(qchunks[r]))
        assert tuple(x[r] for x in out) == ref


def test_sparse_scorer_ties_are_bit_identical():
    """Two chunks with the same term weights get equal float32 sums whatever other terms intervene."""
    import scipy.sparse as sp

    w = sp.csr_matrix(np.array([[0.1, 0.1, 0.0], [0.7, 0.7, 0.3], [0.2, 0.2, 0.2]], dtype=np.float32))
    q = sp.csr_matrix(np.array([[1.0, 2.0, 1.0]], dtype=np.float32))
    out = np.empty((1, 3), np.float32)
    s = SparseScorer(w, q)(out, 0, 1)
    assert s[0, 0] == s[0, 1]


def test_paired_comparison_counts():
    a = np.array([1, 0, 1, 1, 0, 0, 1])
    b = np.array([0, 1, 0, 1, 1, 0, 1])
    doc = np.array([0, 0, 1, 1, 2, 2, 2])
    p = paired_comparison(a, b, doc)
    assert (p["both_hit"], p["only_a"], p["only_b"], p["neither"]) == (2, 2, 2, 1)
    assert p["micro_diff"] == pytest.approx(0.0)
    # per-document hits A vs B: doc 0 1 vs 1 (tied), doc 1 2 vs 1, doc 2 1 vs 2
    assert p["share_documents_tied"] == pytest.approx(1 / 3)
    assert p["macro_diff"] == pytest.approx((0 - 1 / 2 + 1 / 3) / 3)
    assert p["micro_ci"][0] < p["micro_diff"] < p["micro_ci"][1]


def test_errors(corpus, tmp_path):
    with pytest.raises(HarnessInputError, match="unknown system"):
        run_known_item(corpus, None, systems="bm25,nope", **KW)
    (tmp_path / "exists").mkdir()
    with pytest.raises(HarnessInputError, match="already exists"):
        run_known_item(corpus, tmp_path / "exists", **KW)
    with pytest.raises(HarnessInputError, match="no known-item query"):
        run_known_item(corpus, None, chunk_words=50, query_words=500, min_tail_words=1)


def test_vector_system_unavailable_message(corpus, monkeypatch):
    import harness.retrieve.embed as embed

    def boom(*a, **k):
        raise HarnessInputError("model 'x': cannot load")

    monkeypatch.setattr(embed, "load_embedder", boom)
    with pytest.raises(HarnessInputError, match="vector system unavailable"):
        run_known_item(corpus, None, systems="vector", **KW)


def test_paired_and_rendering(corpus, tmp_path):
    from rich.console import Console

    res = run_known_item(corpus, tmp_path / "o", systems="bm25,tfidf", workers=1, **KW)
    assert "bm25 vs tfidf" in res.summary["paired"]
    con = Console(record=True, width=140)
    con.print(render_known_item(res.summary))
    text = con.export_text()
    assert "Known-item hit@1" in text and "published" in text
    p = res.summary["paired"]["bm25 vs tfidf"]
    assert f"{100 * p['micro_diff']:+.2f} pts" in text  # differences of proportions in signed percentage points
    assert f"[{100 * p['micro_ci'][0]:+.2f} pts, {100 * p['micro_ci'][1]:+.2f} pts]" in text


def test_sensitivity_writes_each_size(corpus, tmp_path):
    res = run_chunk_size_sensitivity(corpus, tmp_path / "sens", sizes=(3, 50), query_words=3, workers=1)
    assert {r["chunk_words"] for r in res.rows} == {3, 50}
    assert (tmp_path / "sens" / "words-3" / "summary.json").exists()
    assert (tmp_path / "sens" / "sensitivity.json").exists()


def test_run_study_known_item_then_coverage(corpus, tmp_path):
    from harness.studies.coverage import load_coverage
    from harness.studies.known_item import run_study

    res = run_study(corpus, tmp_path / "study", reps=50, ks=(2, 4), types=0, b=39, workers=1, **KW)
    assert res.known_item.summary["systems"]["bm25"]["micro_hit1"] == pytest.approx(0.6)
    cov = load_coverage(tmp_path / "study" / "coverage.json")
    assert [(d.design, d.k) for d in cov.designs] == [("srs", 2), ("srs", 4), ("pps", 2), ("pps", 4)]
    assert cov.population["micro"] == pytest.approx(0.6)


REAL_CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "mx-leyes-dof"


@pytest.mark.realcorpus
@pytest.mark.skipif(not REAL_CORPUS.is_dir(), reason="real corpus absent")
def test_real_corpus_kernel_matches_bm25s_on_a_sample():
    """400-word chunks of the real corpus: 150 queries (with their ties) equal bm25s get_scores + the tie rule."""
    cc = chunk_corpus(REAL_CORPUS, chunk_words=400)
    an = SpanishAnalyzer()
    toks = an.tokenize_many(cc.texts)
    rng = np.random.default_rng(0)
    pick = np.sort(rng.choice(cc.query_chunks.size, 150, replace=False))
    qtoks = an.tokenize_many([cc.query_texts[i] for i in pick])
    scorer, _ = _bm25_scorer(toks, qtoks)
    idr = _id_rank(cc.chunk_ids)
    got = known_item_search(scorer, cc.query_chunks[pick], cc.chunk_doc, idr, workers=1)
    idx = BM25Index.build(cc.chunk_ids, toks, an)
    n_tie = 0
    for k, qi in enumerate(pick):
        sc = idx.scores([t for t in qtoks[k] if t in idx.vocab])
        ref = _reference(sc, cc.chunk_ids, cc.chunk_doc, int(cc.query_chunks[qi]))
        assert tuple(x[k] for x in got) == ref
        n_tie += ref[2]
    assert got[0].mean() > 0.2


class HashedBagEmbedder:
    """Deterministic bag-of-words embedder (signed feature hashing, 32 dims), counting the passages it embeds."""

    model_id = "hashed-bag-32"
    weights_sha256 = "0" * 64
    dim = 32

    def __init__(self):
        self.passages = 0
        self.fail_after: int | None = None

    def _vec(self, text: str) -> np.ndarray:
        import hashlib

        v = np.zeros(self.dim, np.float32)
        for w in text.lower().split():
            h = hashlib.sha256(w.encode()).digest()
            v[h[0] % self.dim] += 1.0 if h[1] & 1 else -1.0
        return v

    def embed_passages(self, texts):
        if self.fail_after is not None and self.passages >= self.fail_after:
            raise RuntimeError("simulated kill")
        self.passages += len(texts)
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_queries(self, texts):
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def config(self) -> dict:
        return {"model_id": self.model_id, "weights_sha256": self.weights_sha256, "dim": self.dim}


@pytest.fixture
def bag(monkeypatch) -> HashedBagEmbedder:
    import harness.retrieve.embed as embed

    emb = HashedBagEmbedder()
    monkeypatch.setattr(embed, "load_embedder", lambda *a, **k: emb)
    return emb


def test_vector_system_shares_the_embedding_cache(corpus, tmp_path, bag):
    """With a work directory the chunk embeddings are read from / written to the shared cache: a second run embeds
    nothing and gives the same outcomes as an in-memory run; without one, nothing is cached."""
    work = tmp_path / "work"
    mem = run_known_item(corpus, None, systems="vector", workers=1, **KW)
    n_chunks = mem.corpus.n_chunks
    assert bag.passages == n_chunks and "embedding_cache" not in mem.summary["systems"]["vector"]["config"]
    assert not work.exists()

    first = run_known_item(corpus, None, systems="vector", workers=1, workdir=work, **KW)
    n_distinct = len(set(first.corpus.texts))
    c1 = first.outcomes["vector"].config["embedding_cache"]
    assert (c1["n_texts"], c1["n_cache_hits"], c1["n_embedded"]) == (n_chunks, 0, n_distinct)
    assert (work / "embeddings" / "cache.sqlite").is_file()

    bag.passages = 0
    cached = run_known_item(corpus, None, systems="vector", workers=1, workdir=work, **KW)  # outcomes cached
    assert bag.passages == 0
    assert cached.outcomes["vector"].config["outcomes_cache"]["hit"] is True
    second = run_known_item(corpus, None, systems="vector", workers=1, workdir=work, cache=False, **KW)
    c2 = second.outcomes["vector"].config["embedding_cache"]
    q1 = first.outcomes["vector"].config["query_embedding_cache"]
    q2 = second.outcomes["vector"].config["query_embedding_cache"]  # query vectors cached too (model id #query)
    n_q = len(set(first.corpus.query_texts))
    assert (q1["n_cache_hits"], q1["n_embedded"]) == (0, n_q) and (q2["n_cache_hits"], q2["n_embedded"]) == (n_q, 0)
    assert bag.passages == 0 and (c2["n_cache_hits"], c2["n_embedded"]) == (n_distinct, 0)
    for res in (first, second):
        o, m = res.outcomes["vector"], mem.outcomes["vector"]
        assert np.array_equal(o.hit, m.hit) and np.array_equal(o.rank, m.rank) and np.array_equal(o.tie, m.tie)

    # another chunk size is another cache key: its chunks are embedded, the 50-word vectors stay
    bag.passages = 0
    other = run_known_item(
        corpus, None, systems="vector", workers=1, workdir=work, chunk_words=30, min_tail_words=1, query_words=3
    )
    assert other.outcomes["vector"].config["embedding_cache"]["n_cache_hits"] == 0 and bag.passages > 0


def test_cached_passage_embeddings_resume_and_duplicates(tmp_path):
    """Duplicates are embedded once; a call killed mid-way keeps its committed batches and the rerun embeds only
    the rest; rows come back in input order."""
    from harness.retrieve.vector import EmbeddingCache, cached_passage_embeddings

    texts = [f"texto {i} ley {i % 3}" for i in range(10)] + ["texto 0 ley 0", "texto 1 ley 1"]
    emb = HashedBagEmbedder()
    emb.fail_after = 4  # the second batch of 4 dies
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    with pytest.raises(RuntimeError, match="simulated kill"):
        cached_passage_embeddings(cache, emb, "chunker-x", texts, batch_size=4)
    emb.fail_after, emb.passages = None, 0
    calls: list[int] = []
    vecs, stats = cached_passage_embeddings(cache, emb, "chunker-x", texts, batch_size=4, progress=calls.append)
    assert calls == [4, 4, 2] and sum(calls) == len(set(texts))  # cache hits first, then each embedded batch
    assert (stats["n_texts"], stats["n_cache_hits"], stats["n_embedded"]) == (12, 4, 6) and emb.passages == 6
    assert vecs.shape == (12, 32) and vecs.dtype == np.float32
    assert np.array_equal(vecs, np.stack([emb._vec(t) for t in texts]))
    _, again = cached_passage_embeddings(cache, emb, "chunker-x", texts)
    assert (again["n_cache_hits"], again["n_embedded"]) == (10, 0)
    _, other = cached_passage_embeddings(cache, emb, "chunker-y", texts[:2])
    assert other["n_embedded"] == 2
    with pytest.raises(HarnessInputError, match="batch_size"):
        cached_passage_embeddings(cache, emb, "chunker-x", texts, batch_size=0)
    cache.close()


def test_vector_system_blocks_and_progress_do_not_change_outcomes(corpus, tmp_path, bag, monkeypatch):
    """Queries (and in-memory passages) are embedded EMBED_BLOCK at a time; a block size that splits the
    queries, with the progress bars on, gives exactly the outcomes of one block without bars."""
    import harness.studies.known_item.scorers as ki

    whole = run_known_item(corpus, None, systems="vector", workers=1, **KW)
    n_q = whole.outcomes["vector"].hit.size
    monkeypatch.setattr(ki, "EMBED_BLOCK", 3)
    assert n_q > 3 * 2
    for workdir in (None, tmp_path / "work", tmp_path / "work"):  # in memory, cache filled, cache read
        blocked = run_known_item(corpus, None, systems="vector", workers=1, workdir=workdir, progress=True, **KW)
        o, m = blocked.outcomes["vector"], whole.outcomes["vector"]
        assert np.array_equal(o.hit, m.hit) and np.array_equal(o.rank, m.rank) and np.array_equal(o.tie, m.tie)
    assert ki._embed_in_blocks(bag.embed_queries, [], bag.dim, False, "x").shape == (0, bag.dim)


def test_rendering_shows_input_strings_literally(tmp_path):
    """doc_type / collection labels and the corpus name come from the inputs: rich markup in them is shown as
    text, never interpreted (``[/]`` would otherwise raise MarkupError, ``[red]`` would vanish into a style)."""
    from rich.console import Console

    hostile = {"gatos": "[red]ley[/red]", "perros": "[/]", "mixto": "[link=http://x]aviso", "solo": "a", "dupa": "b"}
    root = tmp_path / "[bold]corpus"
    root.mkdir()
    meta = []
    for doc_id, sections in DOCS.items():
        body = f"# {doc_id}\n\n" + "".join(f"## s{i}\n\n{t}\n\n" for i, t in enumerate(sections))
        (root / f"{doc_id}.md").write_text(body, encoding="utf-8")
        label = hostile.get(doc_id, "[i]c")
        meta.append({"doc_id": doc_id, "path": f"{doc_id}.md", "doc_type": label, "collection": label})
    (root / "metadata.jsonl").write_text("\n".join(json.dumps(m) for m in meta) + "\n", encoding="utf-8")
    res = run_known_item(root, None, systems="bm25", workers=1, **KW)
    con = Console(record=True, width=200)
    con.print(render_known_item(res.summary))
    text = con.export_text()
    for label in ("[red]ley[/red]", "[/]", "[link=http://x]aviso", "[i]c", "[bold]corpus@"):
        assert label in text, label


def test_damaged_embedding_cache_is_named_with_the_fix(corpus, tmp_path, bag):
    """A damaged shared embedding cache is one line naming it and saying how to fix it (it is not deleted: other
    runs may be reading it and re-embedding is slow), not an apsw traceback."""
    cache = tmp_path / "work" / "embeddings" / "cache.sqlite"
    cache.parent.mkdir(parents=True)
    cache.write_bytes(b"not a database at all\n" * 100)
    with pytest.raises(HarnessInputError, match=r"cache\.sqlite: damaged embedding cache .* delete cache\.sqlite"):
        run_known_item(corpus, None, systems="vector", workers=1, workdir=tmp_path / "work", **KW)
    assert cache.read_bytes().startswith(b"not a database")
