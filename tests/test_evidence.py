"""Evidence defined by quotes, resolved per chunker: the offset-tracking normaliser, locating quotes as source
characters, chunks under another chunker (split quotes), the cache (keys, invalidation, damage), ``run --chunker``,
and, on the real gold set, that resolution under md-words-v1 reproduces every stored chunk id."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
from conftest import REAL_CORPUS, REAL_GOLDSET, tiny_records, write_tiny_corpus, write_tiny_goldset
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.corpus.chunker import normalize_text, normalize_with_offsets
from harness.corpus.ingest import scan_corpus
from harness.errors import HarnessInputError, StaleGoldsetError
from harness.evaluation.evidence import resolve_evidence
from harness.evaluation.pipeline import RunOptions, run
from harness.goldset.io import load_goldset


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="ab c\n\t\u00a0*_`\\:“”‘’–—«»-.xÁé", max_size=40))
def test_property_offset_normaliser_equals_normalize_text(raw):
    text = unicodedata.normalize("NFC", raw)
    norm, offs = normalize_with_offsets(text)
    assert norm == normalize_text(text)
    assert len(offs) == len(norm)
    assert offs == sorted(set(offs)) and all(0 <= o < len(text) for o in offs)
    for c, o in zip(norm, offs, strict=True):  # every kept character comes from the source character it names
        assert (text[o].isspace() or text[o] == "\u00a0") if c == " " else normalize_text(text[o]) == c


LONG = " ".join(f"w{i}" for i in range(150))  # one section of 150 words: md-words-v1 cuts it at word 100


def _corpus_with_long_doc(root: Path) -> Path:
    write_tiny_corpus(root)
    (root / "leyes" / "ley_e.md").write_text(f"# Ley E\n\n**Artículo 1.-** {LONG}\n", "utf-8")
    with (root / "metadata.jsonl").open("a", encoding="utf-8") as f:
        f.write(
            json.dumps({"doc_id": "ley-e", "path": "leyes/ley_e.md", "title": "Ley E", "date": "2020-01-01"}) + "\n"
        )
    return root


def _records_with_long_quote() -> list[dict]:
    recs = tiny_records()
    rec = dict(recs[0], id="SP-009")
    rec["gold_documents"] = [
        {
            "document_id": "ley-e",
            "role": "answer",
            "evidence": [
                {
                    "chunk_id": "ley-e#0",
                    "chunk_index": 0,
                    "quote": "w96 w97",  # md-words-v1's first chunk ends at w97
                    "source_quote": "w96 w97 w98 w99 w100 w101",
                },
                {
                    "chunk_id": "ley-e#1",
                    "chunk_index": 1,
                    "quote": "w98 w99 w100 w101",
                    "source_quote": "w96 w97 w98 w99 w100 w101",
                },
            ],
        }
    ]
    return [*recs, rec]


@pytest.fixture
def long_case(tmp_path: Path) -> tuple[Path, Path]:
    corpus = _corpus_with_long_doc(tmp_path / "corpus")
    return corpus, write_tiny_goldset(tmp_path / "gs", corpus, records=_records_with_long_quote())


def test_quotes_become_source_characters_and_chunks_per_chunker(long_case, tmp_path):
    corpus, gs_dir = long_case
    gs, src = load_goldset(gs_dir), scan_corpus(corpus)
    words = resolve_evidence(gs, src, "md-words-v1")
    legal = resolve_evidence(gs, src, "md-legal-v1")
    # under its own chunker the stored ids come back, the split quote is split again
    for rec in gs.records:
        assert [[e["chunk_id"] for e in items] for items in words.items[rec.qid]] == [
            [str(e.chunk_id) for e in g.evidence] for g in rec.gold_documents
        ]
    assert (words.n_quotes, words.n_resolved, words.n_split) == (5, 5, 1)
    # md-legal-v1 keeps the 150-word article whole: one chunk, the quote as written, not split
    assert legal.items["SP-009"] == [[{"chunk_id": "ley-e#0", "chunk_index": 0, "quote": "w96 w97 w98 w99 w100 w101"}]]
    assert legal.n_split == 0
    # E_q is the same characters under both: the non-space characters of the quote in the NFC source
    text = (corpus / "leyes" / "ley_e.md").read_text("utf-8")
    start = text.index("w96 ")
    quoted = "w96 w97 w98 w99 w100 w101"
    expected = tuple((start + i, start + i + len(w)) for i, w in _word_offsets(quoted))
    assert words.quoted["SP-009"] == legal.quoted["SP-009"] == {"ley-e": expected}


def _word_offsets(s: str):
    pos = 0
    for w in s.split(" "):
        yield pos, w
        pos += len(w) + 1


def test_markup_is_not_evidence(tmp_path):
    corpus = write_tiny_corpus(tmp_path / "corpus")
    recs = tiny_records()
    rec = dict(recs[0], id="SP-010")
    rec["gold_documents"] = [
        {
            "document_id": "dof-d",
            "role": "answer",
            "evidence": [{"chunk_id": "dof-d#0", "chunk_index": 0, "quote": "Interbancaria de Equilibrio"}],
        }
    ]
    gs = load_goldset(write_tiny_goldset(tmp_path / "gs", corpus, records=[rec]))
    res = resolve_evidence(gs, scan_corpus(corpus), "md-words-v1")
    text = (corpus / "dof" / "2024-04-12" / "nota_d.md").read_text("utf-8")
    s = text.index("Interbancaria")
    assert res.quoted["SP-010"] == {"dof-d": ((s, s + 13), (s + 14, s + 16), (s + 17, s + 27))}
    assert res.quoted_evidence("SP-010").n_chars == len("Interbancaria") + len("de") + len("Equilibrio")


def test_cache_is_keyed_by_goldset_corpus_and_chunker_and_recomputed_when_damaged(long_case, tmp_path):
    corpus, gs_dir = long_case
    work = tmp_path / "work"
    gs, src = load_goldset(gs_dir), scan_corpus(corpus)
    a = resolve_evidence(gs, src, "md-words-v1", workdir=work)
    b = resolve_evidence(gs, src, "md-legal-v1", workdir=work)
    files = sorted(p.name for p in (work / "evidence").iterdir())
    assert files == sorted([f"{k}{ext}" for k in (a.key, b.key) for ext in (".json", ".manifest.json")])
    assert a.key == f"{gs.sha256[:16]}-{src.corpus_hash[:16]}-md-words-v1"
    assert resolve_evidence(gs, src, "md-words-v1", workdir=work) == a  # read back from the cache
    # a damaged cache file is derived: recomputed and rewritten
    (work / "evidence" / f"{a.key}.json").write_text("{not json", "utf-8")
    assert resolve_evidence(gs, src, "md-words-v1", workdir=work) == a
    json.loads((work / "evidence" / f"{a.key}.json").read_text("utf-8"))
    # a cache file whose content names other inputs is not trusted
    obj = json.loads((work / "evidence" / f"{a.key}.json").read_text("utf-8"))
    obj["quoted"] = {}
    obj["corpus_hash"] = "0" * 64
    (work / "evidence" / f"{a.key}.json").write_text(json.dumps(obj), "utf-8")
    assert resolve_evidence(gs, src, "md-words-v1", workdir=work) == a
    # another gold set (bytes) gets another key
    (gs_dir / "tiny.jsonl").write_text((gs_dir / "tiny.jsonl").read_text("utf-8") + "\n", "utf-8")
    gs2 = load_goldset(gs_dir)
    assert resolve_evidence(gs2, src, "md-words-v1", workdir=work).key != a.key


def test_unlocated_quote_is_counted_and_refused_under_another_chunker(tmp_path):
    corpus = write_tiny_corpus(tmp_path / "corpus")
    recs = tiny_records()
    recs[0]["gold_documents"][0]["evidence"][0]["quote"] = "texto que no está en el documento"
    gs = load_goldset(write_tiny_goldset(tmp_path / "gs", corpus, records=recs))
    res = resolve_evidence(gs, scan_corpus(corpus), "md-legal-v1")
    assert (res.n_quotes, res.n_resolved) == (4, 3) and "SP-001" not in res.quoted
    assert "record SP-001: field gold_documents[0].evidence[0].quote: quote not found" in res.unresolved[0]
    with pytest.raises(HarnessInputError, match="SP-001.*chunks under md-legal-v1 are unknown"):
        res.records(gs)


def test_run_under_another_chunker_scores_derived_evidence(long_case, tmp_path):
    corpus, gs_dir = long_case
    opts = RunOptions(bootstrap_reps=200)
    work, runs = tmp_path / "work", tmp_path / "runs"
    p_words = run(gs_dir, corpus, ["bm25"], workdir=work, runs_dir=runs, run_id="w", options=opts)
    p_legal = run(
        gs_dir,
        corpus,
        ["bm25"],
        workdir=work,
        runs_dir=runs,
        run_id="l",
        options=RunOptions(bootstrap_reps=200, chunker="md-legal-v1"),
    )
    mw = json.loads((p_words / "manifest.json").read_text())
    ml = json.loads((p_legal / "manifest.json").read_text())
    assert (mw["corpus"]["chunker_id"], ml["corpus"]["chunker_id"]) == ("md-words-v1", "md-legal-v1")
    assert ml["goldset"]["chunker_version"] == "md-words-v1"  # the gold set is what it is
    assert ml["evidence"] == {
        "chunker_id": "md-legal-v1",
        "goldset_chunker": "md-words-v1",
        "cache_key": ml["evidence"]["cache_key"],
        "n_quotes": 5,
        "n_resolved": 5,
        "n_split": 0,
        "n_unresolved": 0,
        "n_questions_with_quotes": 4,
    }
    assert ml["evidence"]["cache_key"].endswith("-md-legal-v1")
    # the BM25 indexes of the two chunkings do not collide
    folders = sorted(p.name for p in (work / "indexes" / "bm25").iterdir())
    assert len(folders) == 4, folders
    rows = {json.loads(x)["qid"]: json.loads(x) for x in (p_legal / "per_question.jsonl").read_text().splitlines()}
    assert set(rows["SP-009"]["gold_chunk_ranks"]) == {"ley-e#0"}  # derived, not the stored ley-e#0 + ley-e#1
    qrels = (p_legal / "trec" / "qrels.chunk.txt").read_text()
    assert "ley-e#1" not in qrels
    summary = json.loads((p_legal / "summary.json").read_text())["systems"]["bm25"]["all"]["overall"]
    assert 0.0 <= summary["evidence_recall@1000w"]["mean"] <= 1.0


def test_run_refuses_an_unknown_chunker(tiny_goldset, tiny_corpus, tmp_path):
    with pytest.raises(HarnessInputError, match="--chunker: unknown chunker 'nope'"):
        run(
            tiny_goldset,
            tiny_corpus,
            ["bm25"],
            workdir=tmp_path / "w",
            runs_dir=tmp_path / "r",
            options=RunOptions(chunker="nope"),
        )


def test_gold_set_of_one_chunker_still_refused_on_a_database_of_another(tiny_goldset, tiny_corpus):
    """Outside ``run --chunker`` (which checks the gold set on its own chunking, then derives the evidence), a gold
    set is refused on a database of another chunker."""
    from harness.corpus.ingest import ingest
    from harness.corpus.store import Corpus
    from harness.corpus.view import CorpusView
    from harness.validate.scoring import check_before_scoring

    db, _m, _c = ingest(tiny_corpus, tiny_corpus.parent / "w", chunker_id="md-legal-v1")
    with Corpus(db) as c:
        with pytest.raises(StaleGoldsetError, match="chunker_version"):
            check_before_scoring(load_goldset(tiny_goldset), CorpusView.from_database(c))


@pytest.mark.realcorpus
@pytest.mark.slow
def test_real_gold_set_resolution_reproduces_every_stored_chunk_id(tmp_path):
    gs, src = load_goldset(REAL_GOLDSET), scan_corpus(REAL_CORPUS)
    res = resolve_evidence(gs, src, "md-words-v1")
    assert res.unresolved == [] and res.n_resolved == res.n_quotes > 0
    cited = [r for r in gs.records if r.evidence_chunks()]
    assert sorted(res.items) == sorted(r.qid for r in cited)
    for rec in cited:
        assert [[e["chunk_id"] for e in items] for items in res.items[rec.qid]] == [
            [str(e.chunk_id) for e in g.evidence] for g in rec.gold_documents
        ], rec.qid


def test_evaluate_scores_budget_metrics_only_with_the_corpus(long_case, tmp_path):
    from harness.evaluation.pipeline import NO_EVIDENCE_NOTE, OMITTED_NOTES, evaluate_rankings

    corpus, gs_dir = long_case
    runs, work = tmp_path / "runs", tmp_path / "work"
    p = run(gs_dir, corpus, ["bm25"], workdir=work, runs_dir=runs, run_id="r", options=RunOptions(bootstrap_reps=200))
    trec = p / "trec" / "bm25.chunk.run"
    opts = RunOptions(bootstrap_reps=200)
    bare = evaluate_rankings(gs_dir, trec, runs_dir=runs, run_id="bare", options=opts)
    full = evaluate_rankings(gs_dir, trec, runs_dir=runs, run_id="full", options=opts, corpus_dir=corpus, workdir=work)

    def overall(path):
        return json.loads((path / "summary.json").read_text())["systems"]["bm25"]["all"]["overall"]

    ref, o_bare, o_full = overall(p), overall(bare), overall(full)
    for b in (250, 500, 1000, 2000):
        m = f"evidence_recall@{b}w"
        assert o_bare[m]["mean"] is None and o_bare[m]["note"] == OMITTED_NOTES["not_applicable"] != NO_EVIDENCE_NOTE
        assert o_full[m]["mean"] == ref[m]["mean"] is not None
    assert o_bare["evidence_recall@10"]["mean"] == ref["evidence_recall@10"]["mean"]
    assert json.loads((full / "manifest.json").read_text())["evidence"]["n_resolved"] == 5


def test_report_pairs_runs_under_two_chunkers_on_the_comparable_metrics(long_case, tmp_path):
    """Before: `harness report` refused runs under two chunkers (exit 2, "corpus.chunker_id differs"), though compare
    and gate pair them. Now it pairs them on the metrics comparable across chunkers and says which it left out."""
    from harness.errors import IncomparableError
    from harness.report import build_report, write_report
    from harness.report.markdown import render_markdown

    corpus, gs_dir = long_case
    work, runs = tmp_path / "work", tmp_path / "runs"
    a = run(gs_dir, corpus, ["bm25"], workdir=work, runs_dir=runs, run_id="w", options=RunOptions(bootstrap_reps=200))
    opts = RunOptions(bootstrap_reps=200, chunker="md-legal-v1")
    b = run(gs_dir, corpus, ["bm25"], workdir=work, runs_dir=runs, run_id="l", options=opts)
    data = build_report([a, b], reps=200)
    metrics = {r.metric for r in data.paired}
    assert "evidence_recall@1000w" in metrics and "mrr" in metrics
    assert not metrics & {"evidence_recall@10", "evidence_recall@20", "evidence_mrr"}
    assert any("different chunkers (md-words-v1 vs md-legal-v1)" in n for n in data.notes)
    md = render_markdown(data)
    assert "Per question: MRR / evidence recall@1000w" in md and "different chunkers" in md
    out = write_report([a, b], tmp_path / "r.html", fmt="html")
    assert "evidence_recall@1000w" in Path(out).read_text("utf-8")
    with pytest.raises(IncomparableError, match="counts chunks"):
        build_report([a, b], compare_metrics=("evidence_recall@10",), reps=200)
    with pytest.raises(IncomparableError, match="gate_metric evidence_mrr: counts chunks"):
        build_report([a, b], gate_metric="evidence_mrr", reps=200)
    one = build_report([a, a], reps=200)  # one chunker: the per-question column stays evidence_recall@10
    assert one.evidence_metric() == "evidence_recall@10" and not any("chunkers" in n for n in one.notes)


def test_chunk_extents_are_read_on_demand_and_equal_the_whole_table(tiny_corpus, tmp_path):
    """DOF scale (issue 34): every run read all chunks' extents into a dict (6.73 M rows, tens of seconds and GB);
    the mapping now reads the ranked chunks only, with the same values."""
    import pickle

    from harness.corpus.ingest import ingest
    from harness.corpus.store import Corpus
    from harness.evaluation.evidence import chunk_extents
    from harness.metrics.quoted import ChunkExtent

    db, _m, _c = ingest(tiny_corpus, tmp_path / "w", log=lambda _m: None)
    with Corpus(db) as corpus:
        rows = corpus.conn.execute("SELECT chunk_id, doc_id, char_start, char_end, n_words FROM chunks").fetchall()
        ext = chunk_extents(corpus)
    whole = {r[0]: ChunkExtent(r[1], r[2], r[3], r[4]) for r in rows}
    first = rows[0][0]
    assert ext.get(first) == whole[first] and ext._memo.keys() == {first}  # one row read, not the table
    assert ext.get("no-such-chunk") is None and "no-such-chunk" not in ext
    assert dict(ext) == whole and len(ext) == len(whole)
    assert pickle.loads(pickle.dumps(ext)).get(first) == whole[first]
