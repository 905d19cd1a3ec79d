"""The real gold set datasets/mx-leyes-dof-eval-v1: quotes under md-words-v1, structure, measured quality bar."""

from __future__ import annotations

import importlib.util
import json
import statistics

import pytest
from conftest import REAL_CORPUS, REAL_GOLDSET, REPO

from harness.corpus.chunker import MdWordsChunker, decode_source, normalize_text
from harness.goldset.io import load_goldset
from harness.goldset.schema import CATEGORIES
from harness.validate import validate

pytestmark = pytest.mark.realcorpus


def _tool():
    path = REPO / "datasets" / "tools" / "build_goldset_report.py"
    spec = importlib.util.spec_from_file_location("build_goldset_report", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def setup():
    if not REAL_CORPUS.exists():
        pytest.skip(f"real corpus not found at {REAL_CORPUS}")
    meta = {}
    for line in (REAL_CORPUS / "metadata.jsonl").read_text("utf-8").splitlines():
        if line.strip():
            m = json.loads(line)
            meta[m["doc_id"]] = m
    raw = [json.loads(x) for x in (REAL_GOLDSET / "mx_leyes_dof_eval_v1.jsonl").read_text("utf-8").splitlines() if x]
    return meta, raw


def test_loads_with_manifest():
    gs = load_goldset(REAL_GOLDSET)
    m = gs.manifest
    assert (m.name, m.version, m.chunker_version, m.schema_version) == ("mx-leyes-dof-eval", "1.0.0", "md-words-v1", 1)
    assert m.corpus_version == "mx-leyes-dof@10be5dc6cb84" and m.corpus_hash.startswith("10be5dc6cb84")
    assert m.records_sha256 == gs.sha256
    assert len(gs.records) == 42 and m.total_questions == 42 and m.corpus_documents == 507


def test_every_quote_is_one_span_of_its_chunk(setup):
    """Independent of the build script: chunk each cited document and look every quote up in its chunk."""
    meta, raw = setup
    chunker, cache = MdWordsChunker(), {}
    n = 0
    for r in raw:
        for g in r["gold_documents"]:
            d = g["document_id"]
            if d not in cache:
                cache[d] = chunker.chunk(d, decode_source((REAL_CORPUS / meta[d]["path"]).read_bytes()))
            for e in g["evidence"]:
                c = cache[d][e["chunk_index"]]
                assert c.chunk_id == e["chunk_id"], (r["id"], e["chunk_id"])
                assert normalize_text(e["quote"]) in normalize_text(c.text), (r["id"], e["quote"][:60])
                n += 1
    assert n >= 42


def test_structure_and_splits(setup):
    meta, raw = setup
    tool = _tool()
    assert tool.check(raw, meta, tool.Chunks(REAL_CORPUS, meta)) == []
    for s in ("dev", "test"):
        per_cat = [sum(r["split"] == s and r["category"] == c for r in raw) for c in CATEGORIES]
        assert per_cat == [3] * 7


def test_quality_bar(setup):
    meta, raw = setup
    _text, stats = _tool().report(raw, meta, None)
    assert stats["distinct_gold_documents"] >= 25
    assert stats["clusters"] >= 15
    assert stats["deep_evidence_questions"] >= 8
    assert stats["overlap_median"] < 0.5


def test_overlap_measure_is_lexical():
    tool = _tool()
    r = {
        "question": "¿Cuál es la tasa del impuesto?",
        "gold_documents": [{"evidence": [{"quote": "aplicando la tasa del 30%"}]}],
    }
    # content words {tasa, impuesto} ("cuál" folds to the stop word "cual"); only "tasa" is in the quote
    assert tool.overlap(r) == 0.5
    assert statistics.median([tool.overlap(r)]) == 0.5


def test_validator_passes():
    if not REAL_CORPUS.exists():
        pytest.skip(f"real corpus not found at {REAL_CORPUS}")
    report = validate(REAL_GOLDSET, corpus_dir=REAL_CORPUS)
    assert report.exit_code == 0, [f for f in report.failures()][:5]
