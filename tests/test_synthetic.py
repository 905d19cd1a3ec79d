"""The synthetic corpus generator (benchmarks/synthetic.py): determinism, ingestibility, Zipf and length shapes."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.corpus.ingest import ingest
from harness.corpus.store import Corpus

_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "synthetic.py"
_spec = importlib.util.spec_from_file_location("bench_synthetic", _PATH)
sy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sy)

SMALL_VOCAB = 30_000


def _tree_digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("syn") / "corpus"
    stats = sy.generate_corpus(out, 2000, seed=3, vocab_size=SMALL_VOCAB)
    return out, stats


def test_zipf_probabilities_golden():
    p = sy.zipf_probabilities(1000)
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(np.diff(p) < 0)
    # p(1)/p(2) = ((2 + q) / (1 + q))^s
    assert p[0] / p[1] == pytest.approx(((2 + 2.7) / (1 + 2.7)) ** 1.13, rel=1e-12)


def test_vocabulary_shape():
    v = sy.make_vocabulary(SMALL_VOCAB, seed=0)
    assert len(v) == len(set(v)) == SMALL_VOCAB
    from bm25s.stopwords import STOPWORDS_SPANISH

    assert set(v[: sy.N_FUNCTION_WORDS]) <= set(STOPWORDS_SPANISH)
    assert v == sy.make_vocabulary(SMALL_VOCAB, seed=0)
    assert v != sy.make_vocabulary(SMALL_VOCAB, seed=1)
    p = sy.zipf_probabilities(SMALL_VOCAB)
    token_len = float((p * np.array([len(w) for w in v])).sum())
    assert 4.4 < token_len < 6.2  # real corpus 5.5 per running word; 5.6 with the default 2^20 types
    # frequent words are shorter than rare ones (Zipf's law of abbreviation)
    assert np.mean([len(w) for w in v[200:1200]]) < np.mean([len(w) for w in v[-1000:]])


@settings(max_examples=20, deadline=None)
@given(size=st.integers(min_value=1, max_value=3000), seed=st.integers(min_value=0, max_value=2**31))
def test_vocabulary_invariants(size, seed):
    v = sy.make_vocabulary(size, seed=seed)
    assert len(v) == size
    assert len(set(v)) == size
    assert all(w and w == w.lower() and not any(c.isspace() for c in w) for w in v)


def test_deterministic(tmp_path, small_corpus):
    out, stats = small_corpus
    again = tmp_path / "again"
    stats2 = sy.generate_corpus(again, 2000, seed=3, vocab_size=SMALL_VOCAB)
    assert {k: v for k, v in stats.items() if k != "seconds"} == {k: v for k, v in stats2.items() if k != "seconds"}
    assert _tree_digest(out) == _tree_digest(again)


def test_refuses_existing(small_corpus):
    out, _ = small_corpus
    with pytest.raises(FileExistsError):
        sy.generate_corpus(out, 10, vocab_size=500)


def test_ingests_to_target_size_with_heavy_tail(tmp_path, small_corpus):
    out, stats = small_corpus
    db, man, created = ingest(out, tmp_path / "work")
    assert created
    assert man.n_documents == stats["n_documents"]
    assert man.n_words == stats["n_words"]
    assert abs(man.n_chunks - 2000) / 2000 < 0.15
    assert 5 < man.n_chunks / man.n_documents < 20  # DOF: 10.2 chunks per document
    meta = [json.loads(line) for line in (out / "metadata.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [m["doc_id"] for m in meta] == sorted(m["doc_id"] for m in meta)
    words = np.array([m["words"] for m in meta], dtype=float)
    assert words.max() / np.median(words) > 5  # heavy tail
    assert 0.8 < np.log(words).std() < 1.5  # log-normal sigma 1.2 (clipped)
    corpus = Corpus(db)
    try:
        _, _, _, texts = corpus.chunk_table()
        counts: dict[str, int] = {}
        for t in texts:
            for w in t.lower().split():
                counts[w] = counts.get(w, 0) + 1
        freq = np.array(sorted(counts.values(), reverse=True), dtype=float)
        r = np.arange(1, freq.size + 1)
        sel = (r >= 10) & (r <= 1000)
        slope = np.polyfit(np.log(r[sel]), np.log(freq[sel]), 1)[0]
        assert -1.35 < slope < -0.85, slope  # Zipf, s = 1.13
        assert not math.isnan(slope)
    finally:
        corpus.close()
