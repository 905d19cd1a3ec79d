"""`harness goldset import`: TREC qrels + queries and BEIR folders become documents-only gold sets that `harness
run` takes; their chunk-level metrics are "not applicable" (null), never 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import TINY_DOCS
from typer.testing import CliRunner

from harness.cli import app
from harness.corpus.chunker import get_chunker, normalize_text
from harness.corpus.ingest import scan_corpus
from harness.curation.importers import import_beir, import_qrels, read_queries, read_trec_qrels
from harness.errors import HarnessInputError
from harness.evaluation.pipeline import NO_EVIDENCE_NOTE, RunOptions, score_results
from harness.goldset.io import load_goldset
from harness.retrieve.base import QueryResult
from harness.validate import load_contract, validate

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


QRELS = """\
q-agua 0 ley-a 2
q-agua 0 dof-c 0
q-cambio 0 dof-c 1
q-cambio 0 dof-d 2
q-bosque 0 ley-b 3
q-nada 0 ley-a 0
"""
QUERIES_TSV = """\
q-bosque\t¿Cómo se sanciona la tala clandestina de los bosques?
q-agua\t¿Por cuántos años se otorgan las concesiones de aguas nacionales?
q-cambio\t¿Cuál fue el tipo de cambio y la tasa de interés interbancaria?
q-nada\t¿Una pregunta sin documentos relevantes?
q-sin-juicio\t¿Una pregunta que nadie juzgó?
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_qrels_and_queries_become_a_runnable_documents_only_gold_set(tiny_corpus: Path, tmp_path: Path):
    qrels = write(tmp_path / "in" / "mine.qrels", QRELS)
    queries = write(tmp_path / "in" / "queries.tsv", QUERIES_TSV)
    out = tmp_path / "gs"
    r = invoke("goldset", "import", "--qrels", qrels, "--queries", queries, "--corpus", tiny_corpus, "--out", out)
    assert r.exit_code == 0, r.output
    assert "wrote" in r.output and "3 questions, 4 gold documents (grade 1: 1, grade 2: 3)" in r.output
    assert "2 judgements with rel <= 0 dropped" in r.output
    assert "1 judged queries have no relevant document and were left out" in r.output
    gs = load_goldset(out)
    # in the queries file's order; rel 0 dropped, rel 1 -> grade 1, rel >= 2 -> grade 2; metadata from the corpus
    assert [r.qid for r in gs.records] == ["q-bosque", "q-agua", "q-cambio"]
    assert gs.by_id()["q-cambio"].relevant_docs() == {"dof-c": 1, "dof-d": 2}
    assert gs.by_id()["q-bosque"].relevant_docs() == {"ley-b": 2}
    g = gs.by_id()["q-cambio"].gold_documents[1]
    assert (g.relpath, g.publication_date, g.evidence) == (TINY_DOCS["dof-d"][0], TINY_DOCS["dof-d"][2], [])
    assert all(r.category == "imported" and not r.evidence_chunks() for r in gs.records)
    src = scan_corpus(tiny_corpus)
    assert gs.manifest.corpus_hash == src.corpus_hash and gs.manifest.corpus_documents == 4
    c = load_contract(out / "validators" / "mine-v1.toml")
    assert not c.require_evidence and c.total_questions == 3 and c.id_prefixes == {"imported": "q-"}
    assert invoke("validate", out, "--corpus", tiny_corpus).exit_code == 0

    # `harness run` takes it end to end; the evidence metrics are not applicable, not 0
    runs = tmp_path / "runs"
    args = ("--workdir", tmp_path / "wd", "--runs-dir", runs, "--run-id", "imp", "--bootstrap-reps", "200")
    r = invoke("run", "--corpus", tiny_corpus, "--goldset", out, "--systems", "bm25", *args)
    assert r.exit_code == 0, r.output
    summary = json.loads((runs / "imp" / "summary.json").read_text())
    overall = summary["systems"]["bm25"]["all"]["overall"]
    assert overall["evidence_recall@10"] == {
        "mean": None,
        "intervals": {},
        "note": NO_EVIDENCE_NOTE,
        "outcome": "unit",
        "interval": None,
        "evidence": None,
        "estimand_id": "independent",
    }  # fmt: skip  (schema 3)
    assert overall["evidence_mrr"]["mean"] is None
    assert overall["mrr"]["mean"] is not None and 0 < overall["mrr"]["mean"] <= 1
    assert overall["recall@10"]["intervals"]  # document metrics keep their intervals


def test_documents_only_summary_nulls_only_the_chunk_metrics(tiny_goldset: Path, tmp_path: Path):
    """Before the fix the evidence metrics of a set without evidence were summarised as 0.000 with intervals."""
    gs = load_goldset(tiny_goldset)
    for rec in gs.records:
        for g in rec.gold_documents:
            g.evidence = []
    results = {
        "s": {
            r.qid: QueryResult(
                docs=[(str(r.gold_documents[0].document_id), 1.0)],
                chunks=[(f"{r.gold_documents[0].document_id}#0", 1.0)],
            )
            for r in gs.records
        }
    }
    _, summary, _ = score_results(gs, results, RunOptions(bootstrap_reps=100))
    overall = summary.systems["s"]["all"].overall
    for m in summary.metric_ids:
        if m.startswith("evidence_"):
            assert overall[m].model_dump() == {
                "mean": None,
                "intervals": {},
                "note": NO_EVIDENCE_NOTE,
                "outcome": "unit",
                "interval": None,
                "evidence": None,
                "estimand_id": "srs",
            }  # fmt: skip  (schema 3: no interval shown)
        else:
            assert overall[m].mean is not None
    assert overall["mrr"].mean == 1.0
    # with evidence the same rankings score as before
    _, summary2, _ = score_results(load_goldset(tiny_goldset), results, RunOptions(bootstrap_reps=100))
    # (MD-001 cites two evidence chunks, one of them ranked)
    assert summary2.systems["s"]["all"].overall["evidence_recall@1"].mean == (1 + 1 + 0.5) / 3


def test_queries_as_jsonl_and_binary_qrels_with_required_rel_1(tmp_path: Path):
    qrels = write(tmp_path / "b.qrels", "1 0 ley-a 1\n2 Q0 ley-b 1\n")
    queries = write(tmp_path / "q.jsonl", '{"_id": 1, "text": "aguas nacionales"}\n{"id": "2", "text": "bosques"}\n')
    assert read_queries(queries) == {"1": "aguas nacionales", "2": "bosques"}
    res = import_qrels(qrels, queries, tmp_path / "gs", required_rel=1)
    assert res.grades == {2: 2} and res.without_required == []
    res = import_qrels(qrels, queries, tmp_path / "gs2")
    assert res.grades == {1: 2} and res.without_required == ["1", "2"]  # recall undefined: reported
    gs = load_goldset(tmp_path / "gs2")
    assert gs.manifest.corpus_version is None and gs.manifest.corpus_hash is None
    assert validate(tmp_path / "gs2").exit_code == 0  # corpus rules not checked


def test_a_set_imported_without_corpus_fails_v005_against_one(tiny_corpus: Path, tmp_path: Path):
    qrels = write(tmp_path / "b.qrels", "1 0 ley-a 2\n")
    queries = write(tmp_path / "q.tsv", "1\taguas\n")
    import_qrels(qrels, queries, tmp_path / "gs")
    rep = validate(tmp_path / "gs", corpus_dir=tiny_corpus)
    v005 = next(r for r in rep.dataset_results if r.code == "V005")
    assert v005.status == "fail" and "the manifest names no corpus" in v005.findings[0].message


@pytest.mark.parametrize(
    ("qrels", "queries", "needle"),
    [
        ("q1 0 ley-a\n", "q1\tx\n", "b.qrels:1: expected 4 columns 'qid iter docid rel', got 3"),
        ("q1 0 ley-a alto\n", "q1\tx\n", "b.qrels:1: field rel: 'alto' is not an integer"),
        (
            "q1 0 ley-a 1\nq1 0 ley-a 2\n",
            "q1\tx\n",
            "b.qrels:2: query q1: document ley-a judged 2 here and 1 at line 1",
        ),
        ("q1 0 ley-a 1\nq2 0 ley-a 1\n", "q1\tx\n", "b.qrels:2: query q2: not in"),
        ("q1 0 ley-zz 1\n", "q1\tx\n", "b.qrels:1: query q1: document 'ley-zz' is not in the corpus"),
        ("q1 0 ley-a 1\n", "q1 sin tabulador\n", "q.tsv:1: expected 'qid<TAB>text'"),
        ("q1 0 ley-a 1\n", "q1\tx\nq1\ty\n", "q.tsv:2: query q1: repeated (first at line 1)"),
        ("q1 0 ley-a 1\n", "q1\t  \n", "q.tsv:1: query q1: field text: missing or empty"),
        ("q1 0 ley-a 0\n", "q1\tx\n", "b.qrels: no query has a relevant document"),
    ],
)
def test_bad_qrels_or_queries_are_one_located_line_and_nothing_is_written(
    tiny_corpus, tmp_path, qrels, queries, needle
):
    q, qs = write(tmp_path / "b.qrels", qrels), write(tmp_path / "q.tsv", queries)
    r = invoke("goldset", "import", "--qrels", q, "--queries", qs, "--corpus", tiny_corpus, "--out", tmp_path / "gs")
    assert r.exit_code == 2 and needle in r.output and not (tmp_path / "gs").exists(), r.output


def test_cli_refuses_mixed_or_incomplete_inputs(tmp_path: Path):
    r = invoke("goldset", "import", "--out", tmp_path / "gs")
    assert r.exit_code == 2 and "give --qrels FILE and --queries FILE (or --beir DIR)" in r.output
    r = invoke("goldset", "import", "--beir", tmp_path, "--qrels", tmp_path / "x", "--out", tmp_path / "gs")
    assert r.exit_code == 2 and "not both" in r.output


# --------------------------------------------------------------------------------------------------- BEIR

BEIR_CORPUS = [
    {
        "_id": "doc1",
        "title": "Energía solar",
        "text": "Las celdas fotovoltaicas convierten la luz del sol en electricidad.",
    },
    {"_id": "doc/2", "title": "", "text": "Los aerogeneradores producen energía\ncon el viento.\n# no es un título"},
    {"_id": "doc3", "title": "Mareas", "text": "La energía mareomotriz usa la subida y bajada del mar."},
    {"_id": "doc4", "title": "Ruido", "text": "Un documento que nadie juzgó."},
]


def write_beir(root: Path) -> Path:
    write(root / "corpus.jsonl", "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in BEIR_CORPUS))
    queries = [
        {"_id": "q1", "text": "¿cómo producen electricidad las celdas solares?"},
        {"_id": "q2", "text": "energía del viento y del mar"},
        {"_id": "q3", "text": "una consulta de otro split"},
    ]
    write(root / "queries.jsonl", "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries))
    write(
        root / "qrels" / "test.tsv", "query-id\tcorpus-id\tscore\nq1\tdoc1\t2\nq2\tdoc/2\t2\nq2\tdoc3\t1\nq2\tdoc4\t0\n"
    )
    write(root / "qrels" / "dev.tsv", "query-id\tcorpus-id\tscore\nq3\tdoc4\t1\n")
    return root


def test_a_beir_folder_round_trips_into_a_corpus_and_a_gold_set_that_run_takes(tmp_path: Path):
    beir = write_beir(tmp_path / "mini-beir")
    out = tmp_path / "gs"
    r = invoke("goldset", "import", "--beir", beir, "--out", out)
    assert r.exit_code == 0, r.output
    corpus = tmp_path / "gs-corpus"
    assert f"corpus {corpus}" in r.output
    # the corpus: every document, its title in the metadata (not as a heading: the document is title + text once),
    # its text as chunk text
    src = scan_corpus(corpus)
    assert [d.doc_id for d in src.docs] == ["doc1", "doc/2", "doc3", "doc4"]
    assert [d.title for d in src.docs] == ["Energía solar", None, "Mareas", "Ruido"]
    chunker = get_chunker("md-words-v1")
    for d, b in zip(src.docs, BEIR_CORPUS, strict=True):
        chunks = chunker.chunk(d.doc_id, (corpus / d.path).read_text(encoding="utf-8"))
        text = " ".join(normalize_text(c.text) for c in chunks)
        assert text == normalize_text(b["text"])  # no word lost, the heading-like line included
        assert all(list(c.heading_path) == [] for c in chunks)
    # the gold set: the test split only, grades from the scores, rel 0 dropped
    gs = load_goldset(out)
    assert gs.manifest.name == "mini-beir-test" and gs.manifest.corpus_hash == src.corpus_hash
    assert {r.qid: r.relevant_docs() for r in gs.records} == {"q1": {"doc1": 2}, "q2": {"doc/2": 2, "doc3": 1}}
    assert validate(out, corpus_dir=corpus).exit_code == 0
    runs = tmp_path / "runs"
    r = invoke("run", "--corpus", corpus, "--goldset", out, "--systems", "bm25", "--workdir", tmp_path / "wd",
               "--runs-dir", runs, "--run-id", "b", "--bootstrap-reps", "200")  # fmt: skip
    assert r.exit_code == 0, r.output
    rows = [json.loads(ln) for ln in (runs / "b" / "per_question.jsonl").read_text().splitlines()]
    assert {row["qid"] for row in rows} == {"q1", "q2"}
    assert next(row for row in rows if row["qid"] == "q1")["gold_doc_ranks"]["doc1"] == 1
    # the dev split, into chosen folders
    res = import_beir(beir, tmp_path / "dev", split="dev", corpus_out=tmp_path / "c2", name="mini dev")
    assert [r.qid for r in res.records] == ["q3"] and (tmp_path / "c2" / "metadata.jsonl").is_file()


def test_a_beir_import_writes_both_folders_or_neither(tmp_path: Path):
    beir = write_beir(tmp_path / "b")
    (tmp_path / "gs-corpus").mkdir()
    with pytest.raises(HarnessInputError, match="already exists"):
        import_beir(beir, tmp_path / "gs")
    assert not (tmp_path / "gs").exists()
    (tmp_path / "taken").mkdir()
    with pytest.raises(HarnessInputError, match="already exists"):
        import_beir(beir, tmp_path / "taken", corpus_out=tmp_path / "c")
    assert not (tmp_path / "c").exists()
    write(beir / "qrels" / "test.tsv", "query-id\tcorpus-id\tscore\nq1\tdoc9\t1\n")
    with pytest.raises(HarnessInputError, match="test.tsv:2: query q1: document 'doc9' is not in the corpus"):
        import_beir(beir, tmp_path / "gs2", corpus_out=tmp_path / "c3")
    assert not (tmp_path / "gs2").exists() and not (tmp_path / "c3").exists()
    with pytest.raises(HarnessInputError, match="expected test, dev or train"):
        import_beir(beir, tmp_path / "gs3", split="valid")


def test_read_trec_qrels_keeps_first_appearance_order(tmp_path: Path):
    q = write(tmp_path / "q", "b 0 d2 1\na 0 d1 2\nb 0 d1 0\n")
    assert read_trec_qrels(q) == {"b": {"d2": (1, 1), "d1": (0, 3)}, "a": {"d1": (2, 2)}}
