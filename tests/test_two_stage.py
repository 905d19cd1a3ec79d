"""Two-stage evidence search: candidates from the first stage, every candidate chunk re-scored (BM25, dense cosine or
Hamming, their fusion), RRF and weighted golden values, the reranker seam."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.corpus.ingest import ingest
from harness.corpus.store import Corpus
from harness.errors import HarnessInputError
from harness.ranking import canonical_ranking
from harness.retrieve.base import QueryResult
from harness.retrieve.bm25 import BM25System
from harness.retrieve.rerank import CrossEncoderReranker, load_cross_encoder
from harness.retrieve.two_stage import TwoStage
from harness.retrieve.vector import VectorIndex
from harness.retrieve.vector.rescore import FloatVectors

# Documents of several sections; each section of the md-words-v1 chunker becomes one chunk ``<doc>#<i>``.
DOCS: dict[str, list[str]] = {
    "agua": [
        "Disposiciones generales de la ley y su objeto.",
        "Las concesiones de aguas nacionales se otorgan por un plazo de treinta años prorrogables.",
        "La Comisión vigila las cuencas hidrológicas del país.",
    ],
    "bosque": [
        "Los bosques templados son patrimonio forestal de la nación.",
        "La tala clandestina se sanciona con multa de mil días.",
        "El inventario forestal se actualiza cada cinco años.",
    ],
    # Distractor: the query's words, repeated, in another document.
    "minas": [
        "Concesiones concesiones mineras nacionales: se otorgan concesiones por años y años.",
        "Concesiones de aguas nacionales mineras otorgan años concesiones años.",
        "Las minas pagan derechos anuales.",
    ],
    "dof": ["El tipo de cambio fue de 16.5505 pesos por dólar."],
}
Q_AGUA = "¿Por cuántos años se otorgan las concesiones de aguas nacionales?"
Q_TALA = "¿Qué multa tiene la tala clandestina?"


def write_sections_corpus(root: Path, docs: dict[str, list[str]] = DOCS) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    meta = []
    for i, (doc_id, sections) in enumerate(docs.items()):
        body = f"# {doc_id}\n\n" + "".join(f"## Sección {j}\n\n{t}\n\n" for j, t in enumerate(sections))
        (root / f"{doc_id}.md").write_text(body, encoding="utf-8")
        meta.append({"doc_id": doc_id, "path": f"{doc_id}.md", "title": doc_id, "date": f"202{i}-01-01"})
    (root / "metadata.jsonl").write_text("\n".join(json.dumps(m) for m in meta) + "\n", encoding="utf-8")
    return root


# ------------------------------------------------------------------------------------------------------------------
# Fake vector systems with the VectorIndex interface used by TwoStage: packed_bits(), embedder.embed_queries
# ------------------------------------------------------------------------------------------------------------------


class BagOfWordsEmbedder:
    """Deterministic vectors: the sum of a pseudo-random +-1 vector per lower-cased word (similar texts, close bits)."""

    def __init__(self, dim: int = 64):
        self.dim = dim
        self.model_id = "bow-fake"
        self.calls = 0

    def _word(self, w: str) -> np.ndarray:
        h = hashlib.sha256(w.encode()).digest()
        return np.random.default_rng(list(h[:8])).choice([-1.0, 1.0], size=self.dim)

    def vec(self, text: str) -> np.ndarray:
        words = re.findall(r"\w+", text.lower())
        v = sum((self._word(w) for w in words), np.zeros(self.dim)) + 1e-3 * self._word("#bias")
        return v.astype(np.float32)

    def embed_queries(self, texts):
        self.calls += 1
        return np.stack([self.vec(t) for t in texts])

    embed_passages = embed_queries


class FakeVector:
    """The vector-system face two-stage reads, over the chunks of ``docs`` (all by default): ``packed_bits()``
    (sign bits) and ``chunk_ids`` / ``float_vectors()`` (the embedder's passage vectors)."""

    def __init__(self, corpus: Corpus, embedder, docs: set[str] | None = None):
        from harness.retrieve.binary import pack_signs

        rows = corpus.conn.execute("SELECT chunk_id, doc_id, text FROM chunks ORDER BY rowid").fetchall()
        rows = [r for r in rows if docs is None or r[1] in docs]
        self.embedder = embedder
        self.ids = [r[0] for r in rows]
        self.chunk_ids = list(self.ids)
        floats = embedder.embed_passages([r[2] for r in rows])
        self.bits = pack_signs(floats)
        self._floats = FloatVectors(floats)

    def packed_bits(self):
        return list(self.ids), self.bits.copy()

    def float_vectors(self):
        return self._floats


class ExplicitFloats:
    """A vector system with given chunk float vectors and one fixed query vector."""

    def __init__(self, vectors: dict[str, list[float]], query: list[float]):
        self.chunk_ids = list(vectors)
        self._floats = FloatVectors(np.array(list(vectors.values()), dtype=np.float32))
        q = np.array(query, dtype=np.float32)
        self.embedder = type("E", (), {"embed_queries": staticmethod(lambda t: np.tile(q, (len(t), 1)))})()

    def float_vectors(self):
        return self._floats


class ExplicitBits:
    """A vector system with given chunk bits; every query embeds to all -1 (bits 0), so distance = popcount."""

    def __init__(self, bits: dict[str, int], nbytes: int = 1):
        self.ids = list(bits)
        self.bits = np.array([[b] + [0] * (nbytes - 1) for b in bits.values()], dtype=np.uint8)
        dim = 8 * nbytes
        self.embedder = type("E", (), {"embed_queries": staticmethod(lambda t: -np.ones((len(t), dim)))})()

    def packed_bits(self):
        return list(self.ids), self.bits.copy()


class FixedBM25:
    """A BM25 system whose chunk index returns given scores for any query with at least one word."""

    def __init__(self, scores: dict[str, float], all_ids: list[str]):
        sc = np.array([scores.get(c, 0.0) for c in all_ids], dtype=np.float32)
        idx = type(
            "Idx",
            (),
            {
                "ids": all_ids,
                "query_terms": staticmethod(lambda text: re.findall(r"\w+", text.lower())),
                "scores": staticmethod(lambda terms: sc.copy()),
            },
        )
        self.chunk_index = idx()


class WordCountReranker:
    """Scores a passage by how often ``word`` occurs in it (a hand-checkable cross-encoder stand-in)."""

    def __init__(self, word: str):
        self.word = word
        self.seen: list[tuple[str, str]] = []

    def predict(self, pairs):
        self.seen.extend(pairs)
        return [p.lower().count(self.word) for _, p in pairs]

    def config(self) -> dict:
        return {"model_id": f"count:{self.word}"}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("two_stage")
    src = write_sections_corpus(tmp / "corpus")
    db, _, _ = ingest(src, tmp / "work")
    corpus = Corpus(db)
    bm25 = BM25System(corpus, tmp / "work")
    vec = FakeVector(corpus, BagOfWordsEmbedder())
    yield corpus, bm25, vec
    corpus.close()


def chunks_of(corpus: Corpus, docs) -> set[str]:
    return {c for c, d in corpus.conn.execute("SELECT chunk_id, doc_id FROM chunks").fetchall() if d in set(docs)}


def test_corpus_layout(setup):
    corpus, _, _ = setup
    ids = corpus.conn.execute("SELECT chunk_id FROM chunks ORDER BY rowid").fetchall()
    assert [r[0] for r in ids] == [f"{d}#{i}" for d, secs in DOCS.items() for i in range(len(secs))]


# ------------------------------------------------------------------------------------------------------------------
# Document ranking unchanged; chunks inside candidates; evidence found within candidates
# ------------------------------------------------------------------------------------------------------------------


def test_document_ranking_is_the_first_stage(setup):
    corpus, bm25, vec = setup
    first = bm25.search([Q_AGUA, Q_TALA], doc_depth=50, chunk_depth=200)
    before = [(list(r.docs), list(r.chunks)) for r in first]
    out = TwoStage(bm25, vec, corpus, top_docs=2).search([Q_AGUA, Q_TALA], first, doc_depth=3, chunk_depth=200)
    for r, f in zip(out, first, strict=True):
        assert r.docs == canonical_ranking(f.docs, 3)
    assert [(list(r.docs), list(r.chunks)) for r in first] == before  # inputs not mutated


def test_evidence_found_within_candidates_where_global_bm25_misses(setup):
    corpus, bm25, vec = setup
    (glob,) = bm25.search([Q_AGUA], doc_depth=50, chunk_depth=200)
    glob_rank = [c for c, _ in glob.chunks].index("agua#1") + 1
    assert glob_rank > 1  # the distractor's repeated words win over the whole corpus
    first = [QueryResult(docs=[("agua", 2.0), ("bosque", 1.0)], chunks=glob.chunks)]
    for vector in (None, vec):
        kw = {"scorer": "bm25"} if vector is None else {}
        (r,) = TwoStage(bm25, vector, corpus, top_docs=2, **kw).search([Q_AGUA], first, doc_depth=50, chunk_depth=200)
        ranked = [c for c, _ in r.chunks]
        assert ranked[0] == "agua#1"
        assert set(ranked) <= chunks_of(corpus, {"agua", "bosque"})
    # with vectors, every candidate chunk is ranked (each has a cosine)
    assert set(ranked) == chunks_of(corpus, {"agua", "bosque"})
    assert r.flags["n_candidate_docs"] == 2 and r.flags["n_candidate_chunks"] == 6
    assert r.flags["n_candidate_chunks_without_vector"] == 0


def test_only_top_docs_are_candidates(setup):
    corpus, bm25, vec = setup
    first = [QueryResult(docs=[("minas", 3.0), ("agua", 2.0), ("bosque", 1.0)], chunks=[])]
    (r1,) = TwoStage(bm25, vec, corpus, top_docs=1).search([Q_AGUA], first, doc_depth=50, chunk_depth=200)
    assert {c for c, _ in r1.chunks} == chunks_of(corpus, {"minas"})
    (r2,) = TwoStage(bm25, vec, corpus, top_docs=2).search([Q_AGUA], first, doc_depth=50, chunk_depth=200)
    assert "agua#1" in [c for c, _ in r2.chunks]
    # candidates never exceed the documents kept at doc_depth
    (r3,) = TwoStage(bm25, vec, corpus, top_docs=5).search([Q_AGUA], first, doc_depth=1, chunk_depth=200)
    assert r3.flags["n_candidate_docs"] == 1


def test_chunk_depth_cut_and_positional_scores(setup):
    corpus, bm25, vec = setup
    first = [QueryResult(docs=[("agua", 2.0), ("bosque", 1.0), ("minas", 0.5)], chunks=[])]
    ts = TwoStage(bm25, vec, corpus, top_docs=3)
    (full,) = ts.search([Q_AGUA], first, doc_depth=50, chunk_depth=200)
    (cut,) = ts.search([Q_AGUA], first, doc_depth=50, chunk_depth=4)
    assert [c for c, _ in cut.chunks] == [c for c, _ in full.chunks][:4]
    assert [s for _, s in cut.chunks] == [4.0, 3.0, 2.0, 1.0]
    assert canonical_ranking(full.chunks) == full.chunks


# ------------------------------------------------------------------------------------------------------------------
# Golden RRF within candidates (hand-computed)
# ------------------------------------------------------------------------------------------------------------------


def test_rrf_golden_within_candidates(setup):
    corpus, _, _ = setup
    all_ids = [r[0] for r in corpus.conn.execute("SELECT chunk_id FROM chunks ORDER BY rowid").fetchall()]
    # BM25 (positive only): agua#0 = 3, agua#1 = 1, agua#2 = 0 (absent); minas#0 = 9 is outside the candidates.
    bm25 = FixedBM25({"agua#0": 3.0, "agua#1": 1.0, "minas#0": 9.0}, all_ids)
    # Hamming distances = popcounts: agua#0 = 2, agua#1 = 0, agua#2 = 1; minas#* = 0 (outside).
    bits = {c: 0 for c in all_ids} | {"agua#0": 0b11, "agua#1": 0, "agua#2": 0b100}
    ts = TwoStage(bm25, ExplicitBits(bits), corpus, top_docs=1, dense="hamming")
    bm_list, vec_list, n, n_novec = ts.candidate_lists("q", ["agua"])
    assert sorted(bm_list) == [("agua#0", 3.0), ("agua#1", 1.0)]
    assert sorted(vec_list) == [("agua#0", -2.0), ("agua#1", 0.0), ("agua#2", -1.0)]
    assert (n, n_novec) == (3, 0)
    # bm25 ranks: agua#0 1, agua#1 2; vector ranks: agua#1 1, agua#2 2, agua#0 3
    expected = {"agua#0": 1 / (60 + 1) + 1 / (60 + 3), "agua#1": 1 / (60 + 2) + 1 / (60 + 1), "agua#2": 1 / (60 + 2)}
    order = sorted(expected, key=lambda c: (-expected[c], c))
    assert order == ["agua#1", "agua#0", "agua#2"]
    (r,) = ts.search(["q"], [QueryResult(docs=[("agua", 1.0), ("minas", 0.5)], chunks=[])], doc_depth=5, chunk_depth=9)
    assert [c for c, _ in r.chunks] == order
    # k = 0: agua#0 = 1 + 1/3, agua#1 = 1/2 + 1, agua#2 = 1/2 -> agua#1 > agua#0 > agua#2 too; k=1 likewise
    (r0,) = TwoStage(bm25, ExplicitBits(bits), corpus, top_docs=1, fusion="rrf:k=0", dense="hamming").search(
        ["q"], [QueryResult(docs=[("agua", 1.0)], chunks=[])], doc_depth=5, chunk_depth=9
    )
    assert [c for c, _ in r0.chunks] == ["agua#1", "agua#0", "agua#2"]


def test_weighted_fusion_within_candidates_golden(setup):
    corpus, _, _ = setup
    all_ids = [r[0] for r in corpus.conn.execute("SELECT chunk_id FROM chunks ORDER BY rowid").fetchall()]
    bm25 = FixedBM25({"agua#0": 3.0, "agua#1": 1.0}, all_ids)
    bits = {c: 0 for c in all_ids} | {"agua#0": 0b11, "agua#1": 0, "agua#2": 0b100}
    # minmax(bm25): agua#0 1, agua#1 0; minmax(-hamming): agua#1 1, agua#2 (-1+2)/2 = 0.5, agua#0 0
    cases = {
        "w1": ["agua#0", "agua#1", "agua#2"],  # 1, 0, 0 (tie by id)
        "w0.5": ["agua#0", "agua#1", "agua#2"],  # 0.5, 0.5 (tie by id), 0.25
        "w0.25": ["agua#1", "agua#2", "agua#0"],  # 0.75, 0.375, 0.25
    }
    first = [QueryResult(docs=[("agua", 1.0)], chunks=[])]
    for name, want in cases.items():
        (r,) = TwoStage(bm25, ExplicitBits(bits), corpus, top_docs=1, fusion=name, dense="hamming").search(
            ["q"], first, doc_depth=5, chunk_depth=9
        )
        assert [c for c, _ in r.chunks] == want, name


def test_rrf_ties_broken_by_chunk_id(setup):
    corpus, _, _ = setup
    all_ids = [r[0] for r in corpus.conn.execute("SELECT chunk_id FROM chunks ORDER BY rowid").fetchall()]
    # bm25: bosque#2 rank 1, bosque#0 rank 2; vector: bosque#0 rank 1 (d 0), bosque#2 rank 2 (d 1), bosque#1 (d 2)
    bm25 = FixedBM25({"bosque#2": 5.0, "bosque#0": 4.0}, all_ids)
    bits = {c: 0xFF for c in all_ids} | {"bosque#0": 0, "bosque#2": 1, "bosque#1": 3}
    ts = TwoStage(bm25, ExplicitBits(bits), corpus, top_docs=1, dense="hamming")
    (r,) = ts.search(["q"], [QueryResult(docs=[("bosque", 1.0)], chunks=[])], doc_depth=5, chunk_depth=9)
    # bosque#0 and bosque#2 both 1/61 + 1/62: tie -> id ascending
    assert [c for c, _ in r.chunks] == ["bosque#0", "bosque#2", "bosque#1"]


# ------------------------------------------------------------------------------------------------------------------
# Partial vector index, empty inputs, backfill, errors, config
# ------------------------------------------------------------------------------------------------------------------


def test_partial_vector_index(setup):
    corpus, bm25, _ = setup
    vec = FakeVector(corpus, BagOfWordsEmbedder(), docs={"bosque"})
    first = [QueryResult(docs=[("agua", 2.0), ("bosque", 1.0)], chunks=[])]
    (r,) = TwoStage(bm25, vec, corpus, top_docs=2).search([Q_AGUA], first, doc_depth=50, chunk_depth=200)
    assert r.flags["n_candidate_chunks_without_vector"] == 3
    ranked = [c for c, _ in r.chunks]
    assert "agua#1" in ranked  # found by BM25 alone (no vector for the agua chunks)
    # agua chunks without a BM25 match and without a vector are not ranked
    bm_terms = bm25.chunk_index.query_terms(Q_AGUA)
    sc = dict(zip(bm25.chunk_index.ids, bm25.chunk_index.scores(bm_terms), strict=True))
    assert {c for c in ranked if c.startswith("agua")} == {f"agua#{i}" for i in range(3) if sc[f"agua#{i}"] > 0}


def test_empty_query_and_missing_first_stage(setup):
    corpus, bm25, vec = setup
    first = [
        QueryResult(docs=[("agua", 1.0)], chunks=[]),
        QueryResult(docs=None, chunks=None),
        QueryResult(docs=[], chunks=[]),
    ]
    out = TwoStage(bm25, vec, corpus).search(["   ", Q_AGUA, Q_AGUA], first, doc_depth=50, chunk_depth=200)
    assert out[0].flags["empty_query"] and out[0].chunks == [] and out[0].docs == [("agua", 1.0)]
    assert out[1].docs is None and out[1].chunks == [] and out[1].flags["no_first_stage_docs"]
    assert out[2].docs == [] and out[2].chunks == [] and out[2].flags["n_candidate_docs"] == 0


def test_backfill_appends_first_stage_chunks_outside_candidates(setup):
    corpus, bm25, vec = setup
    fs_chunks = [("minas#1", 9.0), ("agua#1", 8.0), ("dof#0", 7.0), ("minas#0", 6.0)]
    first = [QueryResult(docs=[("agua", 2.0)], chunks=fs_chunks)]
    (plain,) = TwoStage(bm25, vec, corpus, top_docs=1).search([Q_AGUA], first, doc_depth=50, chunk_depth=5)
    (bf,) = TwoStage(bm25, vec, corpus, top_docs=1, backfill=True).search([Q_AGUA], first, doc_depth=50, chunk_depth=5)
    assert len(plain.chunks) == 3
    assert [c for c, _ in bf.chunks] == [c for c, _ in plain.chunks] + ["minas#1", "dof#0"]
    assert bf.flags["n_backfilled"] == 2
    assert [s for _, s in bf.chunks] == [5.0, 4.0, 3.0, 2.0, 1.0]


def test_errors(setup):
    corpus, bm25, vec = setup
    with pytest.raises(HarnessInputError, match="first-stage results"):
        TwoStage(bm25, vec, corpus).search(["a", "b"], [QueryResult([], [])], doc_depth=5, chunk_depth=5)
    with pytest.raises(HarnessInputError, match="chunk_depth"):
        TwoStage(bm25, vec, corpus).search(["a"], [QueryResult([], [])], doc_depth=5, chunk_depth=0)
    bad = ({"top_docs": 0}, {"top_docs": True}, {"rerank_top": 0})
    for kw in (*bad, {"fusion": "rrf:k=-1"}, {"fusion": "w2"}, {"fusion": "combmnz"}):
        with pytest.raises(HarnessInputError):
            TwoStage(bm25, vec, corpus, **kw)

    class Bad:
        def predict(self, pairs):
            return [float("nan")] * len(pairs)

    with pytest.raises(HarnessInputError, match="reranker"):
        TwoStage(bm25, vec, corpus, reranker=Bad()).search(
            [Q_AGUA], [QueryResult([("agua", 1.0)], [])], doc_depth=5, chunk_depth=5
        )


def test_config(setup):
    corpus, bm25, vec = setup
    cfg = TwoStage(bm25, vec, corpus, top_docs=7, fusion="rrf:k=30").config()
    assert cfg["top_docs"] == 7 and cfg["fusion"]["params"] == {"k": 30.0} and cfg["reranker"] is None
    assert "1/(30 + rank_i(d))" in cfg["formula"] and "not cut" in cfg["formula"] and "unchanged" in cfg["documents"]
    json.dumps(cfg)
    cfg = TwoStage(bm25, None, corpus, scorer="bm25", reranker=WordCountReranker("años"), rerank_top=3).config()
    assert cfg["reranker"] == {"model_id": "count:años", "rerank_top": 3} and cfg["chunk_lists"]["vector"] is None


# ------------------------------------------------------------------------------------------------------------------
# Properties
# ------------------------------------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    scores=st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0]), min_size=4, max_size=4),
    top_docs=st.integers(1, 5),
    doc_depth=st.integers(1, 5),
    chunk_depth=st.integers(1, 12),
    query=st.sampled_from([Q_AGUA, Q_TALA, "tipo de cambio", "xyzzy"]),
    use_vec=st.booleans(),
)
def test_properties(setup, scores, top_docs, doc_depth, chunk_depth, query, use_vec):
    corpus, bm25, vec = setup
    first = QueryResult(docs=list(zip(DOCS, scores, strict=True)), chunks=[])
    kw = {} if use_vec else {"scorer": "bm25"}
    (r,) = TwoStage(bm25, vec if use_vec else None, corpus, top_docs=top_docs, **kw).search(
        [query], [first], doc_depth=doc_depth, chunk_depth=chunk_depth
    )
    assert r.docs == canonical_ranking(first.docs, doc_depth)
    cand = [d for d, _ in r.docs[:top_docs]]
    ids = [c for c, _ in r.chunks]
    assert len(ids) == len(set(ids)) <= chunk_depth
    assert set(ids) <= chunks_of(corpus, cand)
    assert [s for _, s in r.chunks] == [float(len(ids) - i) for i in range(len(ids))]
    if use_vec and query.strip():
        assert len(ids) == min(chunk_depth, len(chunks_of(corpus, cand)))


# ------------------------------------------------------------------------------------------------------------------
# Reranker seam
# ------------------------------------------------------------------------------------------------------------------


def test_reranker_reorders_top_n_only(setup):
    corpus, bm25, vec = setup
    first = [QueryResult(docs=[("agua", 2.0), ("bosque", 1.0)], chunks=[])]
    (base,) = TwoStage(bm25, vec, corpus, top_docs=2).search([Q_AGUA], first, doc_depth=50, chunk_depth=200)
    rr = WordCountReranker("forestal")
    (r,) = TwoStage(bm25, vec, corpus, top_docs=2, reranker=rr, rerank_top=4).search(
        [Q_AGUA], first, doc_depth=50, chunk_depth=200
    )
    head = [c for c, _ in base.chunks][:4]
    assert [q for q, _ in rr.seen] == [Q_AGUA] * 4
    texts = dict(corpus.conn.execute("SELECT chunk_id, text FROM chunks").fetchall())
    assert [p for _, p in rr.seen] == [texts[c] for c in head]
    want = sorted(head, key=lambda c: (-texts[c].lower().count("forestal"), c))
    assert [c for c, _ in r.chunks][:4] == want
    assert [c for c, _ in r.chunks][4:] == [c for c, _ in base.chunks][4:]
    assert r.flags["n_reranked"] == 4
    assert r.docs == base.docs


def _tiny_cross_encoder(folder: Path) -> Path:
    """A 2-layer BERT cross-encoder (1 label) with a WordPiece vocabulary of the corpus' words, saved locally."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    words = sorted({w for secs in DOCS.values() for t in secs for w in re.findall(r"\w+", t.lower())})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tok = BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), do_lower_case=True)
    cfg = BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=128,
        num_labels=1,
        initializer_range=0.5,
    )
    torch.manual_seed(0)
    BertForSequenceClassification(cfg).save_pretrained(folder / "model")
    tok.save_pretrained(folder / "model")
    return folder / "model"


def test_cross_encoder_seam(setup, tmp_path, monkeypatch):
    pytest.importorskip("sentence_transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    corpus, bm25, vec = setup
    path = _tiny_cross_encoder(tmp_path / "ce")
    rr = load_cross_encoder(path)
    assert isinstance(rr, CrossEncoderReranker)
    first = [QueryResult(docs=[("agua", 2.0), ("bosque", 1.0), ("minas", 0.5)], chunks=[])]
    (base,) = TwoStage(bm25, vec, corpus, top_docs=3).search([Q_AGUA], first, doc_depth=50, chunk_depth=200)
    ts = TwoStage(bm25, vec, corpus, top_docs=3, reranker=rr, rerank_top=5)
    (r,) = ts.search([Q_AGUA], first, doc_depth=50, chunk_depth=200)
    head = [c for c, _ in base.chunks][:5]
    texts = dict(corpus.conn.execute("SELECT chunk_id, text FROM chunks").fetchall())
    # the reference: the CrossEncoder itself, called directly
    from sentence_transformers import CrossEncoder

    ref = CrossEncoder(str(path), device="cpu").predict([(Q_AGUA, texts[c]) for c in head])
    assert len(set(np.round(ref, 6))) > 1  # the tiny model does tell passages apart
    want = [c for c, _ in canonical_ranking(zip(head, ref.tolist(), strict=True))]
    assert [c for c, _ in r.chunks][:5] == want
    assert [c for c, _ in r.chunks][5:] == [c for c, _ in base.chunks][5:]
    cfg = ts.config()["reranker"]
    assert cfg["model_id"] == str(path) and cfg["rerank_top"] == 5
    assert re.fullmatch(r"[0-9a-f]{64}", cfg["fingerprint"])
    with pytest.raises(HarnessInputError, match="cannot load"):
        load_cross_encoder(tmp_path / "nope")


# ------------------------------------------------------------------------------------------------------------------
# With the real BM25 and vector systems
# ------------------------------------------------------------------------------------------------------------------


def test_with_real_vector_index(tmp_path):
    src = write_sections_corpus(tmp_path / "corpus")
    db, _, _ = ingest(src, tmp_path / "work")
    with Corpus(db) as corpus:
        emb = BagOfWordsEmbedder()
        emb.weights_sha256 = "0" * 64
        emb.config = lambda: {"model_id": emb.model_id, "weights_sha256": emb.weights_sha256, "dim": emb.dim}
        vi = VectorIndex.build(corpus, tmp_path / "work", emb)
        bm25 = BM25System(corpus, tmp_path / "work")
        first = bm25.search([Q_AGUA, Q_TALA], doc_depth=50, chunk_depth=200)
        real = TwoStage(bm25, vi, corpus, top_docs=2).search([Q_AGUA, Q_TALA], first, doc_depth=50, chunk_depth=200)
        fake = TwoStage(bm25, FakeVector(corpus, emb), corpus, top_docs=2).search(
            [Q_AGUA, Q_TALA], first, doc_depth=50, chunk_depth=200
        )
        assert [r.chunks for r in real] == [r.chunks for r in fake]
        # the vector list within candidates equals the vector system's own distances
        (vres,) = vi.search([Q_TALA], doc_depth=50, chunk_depth=200)
        ts = TwoStage(bm25, vi, corpus, top_docs=4, dense="hamming")
        _, vec_list, _, _ = ts.candidate_lists(Q_TALA, list(DOCS))
        assert canonical_ranking(vec_list) == vres.chunks
        assert real[1].chunks[0][0] == "bosque#1"


# ------------------------------------------------------------------------------------------------------------------
# Scorers: bm25 alone, dense cosine alone, their fusion (golden values); the typed options
# ------------------------------------------------------------------------------------------------------------------

# agua#0 = (1, 0), agua#1 = (1, 1), agua#2 = (0, 1), query (1, 0.2): cosines 0.9806, 0.8321, 0.1961
GOLDEN_FLOATS = {"agua#0": [1.0, 0.0], "agua#1": [1.0, 1.0], "agua#2": [0.0, 1.0]}
GOLDEN_QUERY = [1.0, 0.2]


def test_dense_cosine_scorer_golden(setup):
    corpus, _, _ = setup
    all_ids = [r[0] for r in corpus.conn.execute("SELECT chunk_id FROM chunks ORDER BY rowid").fetchall()]
    bm25 = FixedBM25({"agua#2": 3.0, "agua#1": 1.0, "minas#0": 9.0}, all_ids)
    vec = ExplicitFloats(GOLDEN_FLOATS, GOLDEN_QUERY)
    ts = TwoStage(bm25, vec, corpus, top_docs=1, scorer="dense")
    _, vec_list, n, n_novec = ts.candidate_lists("q", ["agua"])
    want = {"agua#0": 1 / np.sqrt(1.04), "agua#1": 1.2 / np.sqrt(2 * 1.04), "agua#2": 0.2 / np.sqrt(1.04)}
    assert [c for c, _ in vec_list] == ["agua#0", "agua#1", "agua#2"] and (n, n_novec) == (3, 0)
    np.testing.assert_allclose([s for _, s in vec_list], [want[c] for c in want], rtol=1e-6)
    first = [QueryResult(docs=[("agua", 1.0), ("minas", 0.5)], chunks=[])]
    (r,) = ts.search(["q"], first, doc_depth=5, chunk_depth=9)
    assert [c for c, _ in r.chunks] == ["agua#0", "agua#1", "agua#2"]  # cosine order; BM25 ignored
    (b,) = TwoStage(bm25, vec, corpus, top_docs=1, scorer="bm25").search(["q"], first, doc_depth=5, chunk_depth=9)
    assert [c for c, _ in b.chunks] == ["agua#2", "agua#1"]  # BM25 order, positive scores only
    # RRF: agua#0 = 1/61 (dense 1st, no BM25), agua#1 = 1/62 + 1/62, agua#2 = 1/61 + 1/63
    (f,) = TwoStage(bm25, vec, corpus, top_docs=1).search(["q"], first, doc_depth=5, chunk_depth=9)
    rrf = {"agua#0": 1 / 61, "agua#1": 2 / 62, "agua#2": 1 / 61 + 1 / 63}
    assert [c for c, _ in f.chunks] == sorted(rrf, key=lambda c: (-rrf[c], c)) == ["agua#2", "agua#1", "agua#0"]
    assert ts.config()["scorer"] == "dense" and ts.config()["fusion"] is None and "cosine" in str(ts.config())


def test_bm25_scorer_needs_no_vector_and_other_scorers_do(setup):
    corpus, bm25, vec = setup
    first = bm25.search([Q_AGUA], doc_depth=50, chunk_depth=200)
    (a,) = TwoStage(bm25, None, corpus, top_docs=2, scorer="bm25").search([Q_AGUA], first, doc_depth=9, chunk_depth=9)
    (b,) = TwoStage(bm25, vec, corpus, top_docs=2, scorer="bm25").search([Q_AGUA], first, doc_depth=9, chunk_depth=9)
    assert a.chunks == b.chunks and a.chunks
    # the bm25 scorer is the bm25 system's own chunk ranking restricted to the candidates
    cand = {d for d, _ in first[0].docs[:2]}
    own = [c for c, _ in first[0].chunks if c.split("#")[0] in cand]
    assert [c for c, _ in a.chunks] == own[: len(a.chunks)]
    for scorer in ("dense", "fusion"):
        with pytest.raises(HarnessInputError, match="needs a vector"):
            TwoStage(bm25, None, corpus, scorer=scorer)
    for bad in ({"scorer": "splade"}, {"dense": "l2"}):
        with pytest.raises(HarnessInputError, match="scorer"):
            TwoStage(bm25, vec, corpus, **bad)


def test_two_stage_options_and_their_registry_inputs():
    from pydantic import ValidationError

    from harness.retrieve.registry import SystemPlan
    from harness.retrieve.two_stage import DEFAULT_SCORER, DEFAULT_TOP_DOCS, TwoStageOptions

    o = TwoStageOptions()
    assert (o.top_docs, o.scorer, o.dense, o.fusion) == (DEFAULT_TOP_DOCS, DEFAULT_SCORER, "cosine", "rrf")
    assert TwoStageOptions(scorer="bm25", vector="none").reads_vector is None
    assert TwoStageOptions(vector="none").scorer == "bm25"  # a BM25-only second stage
    with pytest.raises(ValidationError, match="needs a vector"):
        TwoStageOptions(scorer="dense", vector="none")
    with pytest.raises(ValidationError, match="scorer"):
        TwoStageOptions(scorer="hamming")
    rec = SystemPlan.parse(["two-stage:scorer=bm25:top_docs=5:bm25", "two-stage[scorer=dense]:rrf"]).record()
    assert rec["two-stage:scorer=bm25:top_docs=5:bm25"]["inputs"] == ["bm25", "bm25"]
    assert rec["two-stage[scorer=dense]:rrf"]["inputs"] == ["rrf", "bm25", "vector"]
    assert rec["two-stage[scorer=dense]:rrf"]["options"]["scorer"] == "dense"
