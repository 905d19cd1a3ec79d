"""Analyzers as a registry chosen by the corpus's language (issue 41 item 1): each analyzer against PyStemmer and its
bm25s stop list on fixed words (golden values written here), the choice rules, the language check, and the BEIR
import's ``--language`` and title + text documents."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import bm25s
import pytest
import Stemmer
from bm25s.stopwords import (
    STOPWORDS_EN,
    STOPWORDS_FRENCH,
    STOPWORDS_GERMAN,
    STOPWORDS_ITALIAN,
    STOPWORDS_PORTUGUESE,
    STOPWORDS_SPANISH,
)
from conftest import REAL_CORPUS, REPO
from typer.testing import CliRunner

from harness.cli import app
from harness.corpus.ingest import ingest, scan_corpus
from harness.corpus.store import Corpus
from harness.curation.importers import import_beir
from harness.errors import HarnessInputError
from harness.retrieve.analyzer import (
    ANALYZERS,
    DEFAULT_ANALYZER,
    LANGUAGE_ANALYZERS,
    SpanishAnalyzer,
    analyzer_id_of,
    choose_analyzer,
    declared_language,
    detect_language,
    get_analyzer,
    language_mismatch,
)
from harness.retrieve.bm25 import BM25Options
from harness.retrieve.tfidf import TfidfOptions

CISI = REPO.parent / "shared" / "collections" / "cisi"
runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


# ---- each analyzer on fixed words ------------------------------------------------------------------------------------

GOLDEN = {
    "es": ("Las acciones del Estado y la niñez", "es-snowball-fold-v1", ["accion", "ninez"]),
    "en": (
        "The libraries' classifications of 18 editions, I think the indexing is running",
        "en-snowball-v1",
        ["librari", "classif", "18", "edit", "think", "index", "run"],
    ),
    "pt": (
        "As bibliotecas públicas e a classificação dos documentos não são avaliações",
        "pt-snowball-v1",
        ["bibliotec", "públic", "classific", "document", "avali"],
    ),
    "fr": (
        "L'état des bibliothèques et la classification des documents",
        "fr-snowball-v1",
        ["état", "bibliothequ", "classif", "docu"],
    ),
    "de": (
        "Die Bibliotheken und die Klassifikation der Häuser an der Straße",
        "de-snowball-v1",
        ["bibliothek", "klassifikation", "haus", "strass"],
    ),
    "it": (
        "Le biblioteche e la classificazione dell'anno dei documenti",
        "it-snowball-v1",
        ["bibliotec", "classif", "anno", "document"],
    ),
}
REFERENCE = {  # (PyStemmer algorithm, bm25s stop list, token pattern, fold accents after stemming)
    "es": ("spanish", STOPWORDS_SPANISH, r"\w+", True),
    "en": ("english", STOPWORDS_EN, r"\w\w+", False),
    "pt": ("portuguese", STOPWORDS_PORTUGUESE, r"\w\w+", False),
    "fr": ("french", STOPWORDS_FRENCH, r"\w\w+", False),
    "de": ("german", STOPWORDS_GERMAN, r"\w\w+", False),
    "it": ("italian", STOPWORDS_ITALIAN, r"\w\w+", False),
}


def _fold(t: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", t) if not unicodedata.combining(c))


@pytest.mark.parametrize("code", list(GOLDEN))
def test_each_analyzer_gives_the_golden_terms_and_what_pystemmer_and_its_stop_list_give(code):
    text, aid, want = GOLDEN[code]
    an = get_analyzer(code)
    assert an.analyzer_id == aid and an.language == code and LANGUAGE_ANALYZERS[code] == aid
    assert an.tokenize(text) == want
    algo, stops, pattern, fold = REFERENCE[code]
    stem = Stemmer.Stemmer(algo)
    ref = [stem.stemWord(t) for t in re.findall(pattern, text.lower()) if t not in set(stops)]
    assert an.tokenize(text) == ([_fold(t) for t in ref] if fold else ref)
    assert an.config()["stopwords"].endswith({"es": "SPANISH", "en": "EN"}.get(code, REFERENCE[code][0].upper()))


def test_the_spanish_analyzer_keeps_its_id_and_config_so_the_baseline_index_key_is_unchanged():
    want = {
        "analyzer_id": "es-snowball-fold-v1",
        "token_pattern": r"\w+",
        "stopwords": "bm25s.stopwords.STOPWORDS_SPANISH",
        "n_stopwords": 313,
        "stemmer": "snowball-spanish (PyStemmer)",
        "order": "lowercase > stopwords > stem > fold accents",
    }
    assert SpanishAnalyzer().config() == want == get_analyzer("es").config()
    base = json.loads((REPO / "runs/baselines/mx-leyes-dof-eval-v1-six-systems/manifest.json").read_text())
    assert base["system_configs"]["bm25"]["analyzer"] == want
    assert DEFAULT_ANALYZER == "es-snowball-fold-v1"
    # one-character tokens and numbers stay, as before
    assert SpanishAnalyzer().tokenize("Artículo 5 a) de la Ley") == ["articul", "5", "ley"]


def test_the_english_analyzer_gives_bm25s_tokenize_terms_on_cisi_documents():
    if not CISI.is_dir():
        pytest.skip("../shared/collections/cisi is not here")
    docs = [json.loads(ln) for ln in (CISI / "corpus.jsonl").read_text().splitlines()[:60]]
    texts = [d["title"] + " " + d["text"] for d in docs]
    ref = bm25s.tokenize(
        texts, stopwords="en", stemmer=Stemmer.Stemmer("english"), return_ids=False, show_progress=False
    )
    assert get_analyzer("en").tokenize_many(texts) == [list(t) for t in ref]


def test_the_neutral_analyzer_lowercases_and_splits_only():
    an = get_analyzer("neutral")
    assert an.analyzer_id == "neutral-word-v1" and an.language is None
    assert an.tokenize("Ünïcode WORD ß 東京 a1_b") == ["ünïcode", "word", "ß", "東京", "a1_b"]
    assert analyzer_id_of("ja") == "neutral-word-v1"  # a language without a stemmer here


def test_names_an_analyzer_may_be_given_by_and_an_unknown_one_is_one_line():
    assert analyzer_id_of("pt") == analyzer_id_of("pt-snowball-v1") == "pt-snowball-v1"
    assert set(ANALYZERS) >= {"es-snowball-fold-v1", "en-snowball-v1", "pt-snowball-v1", "neutral-word-v1"}
    with pytest.raises(HarnessInputError, match=r"^--analyzer: unknown analyzer 'klingon'"):
        analyzer_id_of("klingon")
    assert BM25Options(analyzer="pt").analyzer == "pt-snowball-v1"  # stored as the id: one system, one index
    assert TfidfOptions(analyzer="en").analyzer == "en-snowball-v1"
    with pytest.raises(ValueError, match="unknown analyzer"):
        BM25Options(analyzer="xx-yy")


def test_the_corpus_language_picks_the_analyzer_and_none_or_disagreement_gives_the_spanish_default_with_a_note():
    assert declared_language(["en", "en"]) == ("en", "declares language en")
    assert declared_language([None, None])[0] is None
    code, why = declared_language(["en", "fr", None])
    assert code is None and why == "records disagree on language (en 1, fr 1, none 1)"
    assert choose_analyzer(None, ["pt", "pt"]).analyzer_id == "pt-snowball-v1"
    assert choose_analyzer("en", ["pt"]).record() == {"analyzer_id": "en-snowball-v1", "chosen_by": "option"}
    d = choose_analyzer(None, ["en", None])
    assert d.analyzer_id == "es-snowball-fold-v1" and d.chosen_by == "default"
    assert d.note is not None and "\n" not in d.note and "es-snowball-fold-v1" in d.note


# ---- the language check -------------------------------------------------------------------------------------------


def _cisi_texts(n: int = 80) -> list[str]:
    if not CISI.is_dir():
        pytest.skip("../shared/collections/cisi is not here")
    docs = [json.loads(ln) for ln in (CISI / "corpus.jsonl").read_text().splitlines()[:n]]
    return [d["title"] + " " + d["text"] for d in docs]


def _spanish_texts(n: int = 12) -> list[str]:
    meta = REAL_CORPUS / "metadata.jsonl"
    if not meta.is_file():
        pytest.skip("../shared/corpus/mx-leyes-dof is not here")
    recs = [json.loads(ln) for ln in meta.read_text(encoding="utf-8").splitlines()]
    step = max(1, len(recs) // n)
    return [(REAL_CORPUS / r["path"]).read_text(encoding="utf-8")[:2000] for r in recs[::step][:n]]


def test_the_language_check_warns_on_an_english_corpus_analysed_as_spanish():
    texts = _cisi_texts()
    assert detect_language(texts)[0] == "en"
    assert language_mismatch(texts, "es-snowball-fold-v1") == (
        "the corpus reads as English (en) but is analysed with es-snowball-fold-v1; pass --language en to goldset "
        "import (or --analyzer en)"
    )
    assert language_mismatch(texts, "en-snowball-v1") is None


def test_the_language_check_is_silent_on_a_sample_of_the_real_spanish_corpus():
    texts = _spanish_texts()
    assert detect_language(texts)[0] == "es"
    assert language_mismatch(texts, "es-snowball-fold-v1") is None
    assert "reads as Spanish (es)" in language_mismatch(texts, "en-snowball-v1")


def test_too_little_text_is_not_judged():
    assert language_mismatch(["the of and"], "es-snowball-fold-v1") is None


# ---- the BEIR import: --language, title + text, the warning ---------------------------------------------------------


def _mini_cisi(root: Path, n: int = 60) -> Path:
    """The first ``n`` CISI documents with the queries and judgements that only cite them (a BEIR folder)."""
    if not CISI.is_dir():
        pytest.skip("../shared/collections/cisi is not here")
    docs = [json.loads(ln) for ln in (CISI / "corpus.jsonl").read_text().splitlines()[:n]]
    ids = {d["_id"] for d in docs}
    lines = (CISI / "qrels" / "test.tsv").read_text().splitlines()
    kept = [ln for ln in lines[1:] if ln.split("\t")[1] in ids]
    qids = {ln.split("\t")[0] for ln in kept}
    queries = [q for q in map(json.loads, (CISI / "queries.jsonl").read_text().splitlines()) if q["_id"] in qids]
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (root / "qrels" / "test.tsv").write_text("\n".join([lines[0], *kept]) + "\n")
    return root


def _warnings(output: str) -> list[str]:
    return [ln for ln in output.splitlines() if ln.startswith("warning:")]


def test_an_english_import_without_language_prints_exactly_one_warning_naming_the_fix(tmp_path: Path):
    beir = _mini_cisi(tmp_path / "cisi")
    r = invoke("goldset", "import", "--beir", beir, "--required-rel", "1", "--out", tmp_path / "s")
    assert r.exit_code == 0, r.output
    (w,) = _warnings(r.output)
    assert "(en)" in w and "es-snowball-fold-v1" in w and "--language en" in w
    assert all("language" not in json.loads(ln) for ln in (tmp_path / "s-corpus/metadata.jsonl").open())
    r = invoke("goldset", "import", "--beir", beir, "--required-rel", "1", "--language", "en", "--out", tmp_path / "e")
    assert r.exit_code == 0, r.output
    assert _warnings(r.output) == []
    assert all(json.loads(ln)["language"] == "en" for ln in (tmp_path / "e-corpus/metadata.jsonl").open())
    # the language is part of each record: the corpus hash changes with it
    assert scan_corpus(tmp_path / "s-corpus").corpus_hash != scan_corpus(tmp_path / "e-corpus").corpus_hash


def test_language_must_be_an_iso_639_1_code(tmp_path: Path):
    beir = _mini_cisi(tmp_path / "cisi", n=20)
    with pytest.raises(HarnessInputError, match=r"^--language 'EN': expected an ISO 639-1 code"):
        import_beir(beir, tmp_path / "s", required_rel=1, language="EN")
    assert not (tmp_path / "s").exists() and not (tmp_path / "s-corpus").exists()
    corpus = tmp_path / "c"
    (corpus / "d").mkdir(parents=True)
    (corpus / "d" / "a.md").write_text("text\n")
    (corpus / "metadata.jsonl").write_text('{"doc_id": "a", "path": "d/a.md", "language": "English"}\n')
    with pytest.raises(HarnessInputError, match=r"metadata.jsonl:1: record a: field language: 'English' is not an"):
        scan_corpus(corpus)


def test_a_qrels_import_refuses_language_and_says_where_it_goes(tmp_path: Path):
    (tmp_path / "q.txt").write_text("q1 0 d1 1\n")
    (tmp_path / "q.tsv").write_text("q1\tsome query\n")
    r = invoke("goldset", "import", "--qrels", tmp_path / "q.txt", "--queries", tmp_path / "q.tsv", "--language",
               "en", "--out", tmp_path / "s")  # fmt: skip
    assert r.exit_code == 2 and "--language: a --qrels import writes no corpus" in r.output
    assert not (tmp_path / "s").exists()


def test_a_beir_document_is_its_title_then_its_text_once(tmp_path: Path):
    beir = _mini_cisi(tmp_path / "cisi", n=20)
    import_beir(beir, tmp_path / "s", required_rel=1, language="en")
    db, _m, _c = ingest(tmp_path / "s-corpus", tmp_path / "wd")
    docs = [json.loads(ln) for ln in (beir / "corpus.jsonl").read_text().splitlines()]
    an = get_analyzer("en")
    with Corpus(db) as corpus:
        ids, texts = corpus.document_texts()
        got = dict(zip(ids, texts, strict=True))
        for d in docs:
            assert an.tokenize(got[d["_id"]]) == an.tokenize(d["title"] + " " + d["text"])


# ---- a run: the corpus's language, the options, the record, one warning ---------------------------------------------


def _run(tmp_path: Path, set_dir: Path, corpus: Path, run_id: str, *extra) -> tuple[dict, dict, str]:
    runs = tmp_path / "runs"
    r = invoke("run", "--corpus", corpus, "--goldset", set_dir, "--workdir", tmp_path / "wd", "--runs-dir", runs,
               "--run-id", run_id, "--bootstrap-reps", "200", "--metrics", "nDCG@10", *extra)  # fmt: skip
    assert r.exit_code == 0, r.output
    manifest = json.loads((runs / run_id / "manifest.json").read_text())
    summary = json.loads((runs / run_id / "summary.json").read_text())
    return manifest, summary, r.output


def test_a_run_uses_the_declared_language_or_the_options_records_the_choice_and_warns_once(tmp_path: Path):
    beir = _mini_cisi(tmp_path / "cisi")
    import_beir(beir, tmp_path / "es", required_rel=1)
    import_beir(beir, tmp_path / "en", required_rel=1, language="en")
    m, s, out = _run(tmp_path, tmp_path / "es", tmp_path / "es-corpus", "r-es", "--systems", "bm25,tfidf")
    assert m["analyzers"] == {
        "bm25": {"analyzer_id": "es-snowball-fold-v1", "chosen_by": "default"},
        "tfidf": {"analyzer_id": "es-snowball-fold-v1", "chosen_by": "default"},
    }
    lang = [w for w in s["warnings"] if "reads as" in w]
    assert lang == [
        "the corpus reads as English (en) but is analysed with es-snowball-fold-v1; pass --language en to goldset "
        "import (or --analyzer en)"
    ]
    assert len([w for w in _warnings(out) if "reads as" in w]) == 1
    m, s, out = _run(tmp_path, tmp_path / "en", tmp_path / "en-corpus", "r-en", "--systems", "bm25,tfidf:analyzer=pt")
    assert m["analyzers"] == {
        "bm25": {"analyzer_id": "en-snowball-v1", "chosen_by": "corpus language"},
        "tfidf:analyzer=pt": {"analyzer_id": "pt-snowball-v1", "chosen_by": "option"},
    }
    assert m["system_configs"]["bm25"]["analyzer"]["analyzer_id"] == "en-snowball-v1"
    assert m["system_options"]["bm25"]["options"] == {}  # the default is not written: old records replay unchanged
    assert m["system_options"]["tfidf:analyzer=pt"]["options"] == {"analyzer": "pt-snowball-v1"}
    assert [w for w in s["warnings"] if "reads as" in w] == [
        "the corpus reads as English (en) but is analysed with pt-snowball-v1; pass --language en to goldset "
        "import (or --analyzer en)"
    ]
    m, s, _out = _run(tmp_path, tmp_path / "es", tmp_path / "es-corpus", "r-opt", "--systems", "bm25",
                      "--analyzer", "en")  # fmt: skip
    assert m["analyzers"]["bm25"] == {"analyzer_id": "en-snowball-v1", "chosen_by": "option"}
    assert m["system_options"]["bm25"]["options"] == {"analyzer": "en-snowball-v1"}  # a replay keeps it
    assert not [w for w in s.get("warnings", []) if "reads as" in w]


# ---- the known-item study -------------------------------------------------------------------------------------------


def test_the_known_item_study_follows_the_declared_language_or_analyzer_and_warns_once(tmp_path: Path):
    from harness.studies.known_item import run_known_item

    beir = _mini_cisi(tmp_path / "cisi")
    import_beir(beir, tmp_path / "es", required_rel=1)
    import_beir(beir, tmp_path / "en", required_rel=1, language="en")
    kw = {"systems": "bm25,tfidf", "workers": 1, "chunk_words": 30, "min_tail_words": 5, "query_words": 10}
    es = run_known_item(tmp_path / "es-corpus", None, **kw).summary
    assert es["config"]["analyzer_choice"] == {"analyzer_id": "es-snowball-fold-v1", "chosen_by": "default"}
    assert es["warnings"] == [
        "the corpus reads as English (en) but is analysed with es-snowball-fold-v1; pass --language en to goldset "
        "import (or --analyzer en)"
    ]
    assert len(es["analyzer_notes"]) == 1
    en = run_known_item(tmp_path / "en-corpus", None, **kw).summary
    assert en["config"]["analyzer_choice"] == {"analyzer_id": "en-snowball-v1", "chosen_by": "corpus language"}
    assert en["config"]["analyzer"]["analyzer_id"] == "en-snowball-v1"
    assert en["warnings"] == [] and en["analyzer_notes"] == []
    opt = run_known_item(tmp_path / "es-corpus", None, analyzer="en", **kw).summary
    assert opt["config"]["analyzer_choice"] == {"analyzer_id": "en-snowball-v1", "chosen_by": "option"}
    # the known-item hit@1 follows the analyzer: English analysis of an English corpus is not the Spanish one
    hit1 = {k: s["systems"]["bm25"]["micro_hit1"] for k, s in (("es", es), ("en", en), ("opt", opt))}
    assert hit1["en"] == hit1["opt"] != hit1["es"]
    with pytest.raises(HarnessInputError, match=r"give the analyzer to the whole study with --analyzer"):
        run_known_item(tmp_path / "en-corpus", None, **{**kw, "systems": "bm25:analyzer=pt"})
