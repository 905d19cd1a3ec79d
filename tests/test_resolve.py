"""`harness goldset resolve`: hand-written records (documents + exact quotes, no chunk ids) become a valid dataset
with one command; the optional legal-domain fields; strict types and located errors; our contracts still require
the legal fields."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from typer.testing import CliRunner

from harness.cli import app
from harness.corpus.chunker import normalize_text
from harness.corpus.quotes import check_quote
from harness.corpus.view import open_corpus
from harness.curation.build import id_prefix, starter_contract
from harness.curation.resolve import ResolveError, resolve_goldset, resolve_records
from harness.errors import HarnessInputError
from harness.goldset.io import format_validation_error, load_goldset
from harness.goldset.schema import GoldRecord
from harness.validate import load_contract, validate

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT.parent / "shared" / "reference" / "dof-rag-eval-v4"
REAL_DATASET = ROOT / "datasets" / "mx-leyes-dof-eval-v1"

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


# ------------------------------------------------------------------------------------------------ the corpus

# Section of "Ley de Pruebas > TITULO QUINTO > CAPITULO II": p001..p050, "**Artículo 12.-**", p051..p230 = 232 words
# -> chunks #1 (p001..p098 with the article's 2 words), #2 (p099..p198), #3 (p199..p230, 32 words).
WORDS = [f"p{n:03d}" for n in range(1, 231)]
SECTION = " ".join(WORDS[:50]) + "\n\n**Artículo 12.-** " + " ".join(WORDS[50:])
LEY = f"""# Ley de Pruebas

Texto preliminar de la ley de pruebas.

## TITULO QUINTO

### CAPITULO II

{SECTION}

## TRANSITORIOS

Primero. La presente ley entrará en vigor el día siguiente al de su publicación.
"""
NOTA = """# TIPO de cambio para solventar obligaciones

El tipo de cambio obtenido el día de hoy fue de **$16.5505** M.N. por un dólar de los EE.UU.A.
"""
AVISO = """# AVISO de prueba

Dice: la tasa de interés fue de 11.2450 por ciento. Repite: la tasa de interés fue de 11.2450 por ciento.

## Anexo

Segunda mención: la tasa de interés fue de 11.2450 por ciento.
"""
META = [
    {"doc_id": "ley-p", "path": "leyes/ley_p.md", "title": "Ley de Pruebas", "date": "2020-01-15"},
    {"doc_id": "dof-n", "path": "dof/nota.md", "title": "TIPO de cambio", "date": "2024-04-01", "edition": "MAT"},
    {"doc_id": "dof-a", "path": "dof/aviso.md", "title": "AVISO", "date": "2024-04-12", "edition": "MAT"},
]
TEXTS = {"ley-p": LEY, "dof-n": NOTA, "dof-a": AVISO}


def write_corpus(root: Path) -> Path:
    for m in META:
        (root / m["path"]).parent.mkdir(parents=True, exist_ok=True)
        (root / m["path"]).write_text(TEXTS[m["doc_id"]], encoding="utf-8")
    (root / "metadata.jsonl").write_text("".join(json.dumps(m) + "\n" for m in META), encoding="utf-8")
    return root


def span(a: int, b: int) -> str:
    """Words a..b (1-based, inclusive) of the long section."""
    return " ".join(WORDS[a - 1 : b])


def hand_written() -> list[dict]:
    """Records as an author writes them: null / missing / wrong chunk ids, quotes across chunk boundaries, string
    and list heading paths that disagree with the chunker, the legal fields on some records only, no contract."""
    legal = {"persona": "abogado", "difficulty": "medium", "as_of": "2025-08-26", "answerability": "answerable"}
    return [
        {
            "id": "SP-001",
            "category": "single_passage",
            "question": "¿Qué dice el artículo 12 de la ley de pruebas?",
            **legal,
            "reference_answer": "Lo que dicen sus palabras.",
            "required_hops": 1,
            "gold_documents": [
                {
                    "document_id": "ley-p",
                    "role": "answer",
                    "heading_path": "TITULO QUINTO > CAPITULO II",  # string, and without the law's title
                    "evidence": [{"chunk_id": None, "chunk_index": None, "quote": "Artículo 12.- " + span(51, 60)}],
                }
            ],
        },
        {
            "id": "SP-002",
            "category": "single_passage",
            "question": "¿Qué palabras cruzan el primer corte del capítulo?",
            **legal,
            "reference_answer": "De p095 a p105.",
            "required_hops": 1,
            "gold_documents": [
                {
                    "document_id": "ley-p",
                    "role": "answer",
                    "heading_path": ["Ley de Pruebas", "TITULO QUINTO"],  # a list, too short
                    "evidence": [{"quote": span(95, 105)}, {"quote": span(180, 225)}],  # both cross a boundary
                }
            ],
        },
        {
            "id": "MO-001",
            "category": "monitoring",
            "question": "¿Cuál fue el tipo de cambio del 1 de abril de 2024?",
            "gold_documents": [
                {
                    "document_id": "dof-n",
                    "relpath": "dof/otra.md",  # wrong: replaced from the metadata
                    "evidence": [{"chunk_id": "dof-n#7", "chunk_index": 7, "quote": "fue de $16.5505 M.N."}],
                }
            ],
        },
        {
            "id": "MO-002",
            "category": "monitoring",
            "question": "¿Cuál fue la tasa de interés publicada en el aviso?",
            "gold_documents": [
                {
                    "document_id": "dof-a",
                    # occurs twice in chunk #0 and once in chunk #1: the chunk_index picks the Anexo's
                    "evidence": [{"chunk_index": 1, "quote": "la tasa de interés fue de 11.2450 por ciento"}],
                }
            ],
        },
        {
            "id": "MD-001",
            "category": "multi_document",
            "question": "¿Qué dice la ley de pruebas al final del capítulo y cuándo entra en vigor?",
            "required_hops": 2,
            "gold_documents": [
                {
                    "document_id": "ley-p",
                    "evidence": [{"quote": span(226, 230)}, {"quote": "entrará en vigor el día siguiente"}],
                },
                {"document_id": "dof-n", "evidence": [{"quote": "por un dólar de los EE.UU.A."}]},
            ],
        },
    ]


def write_records(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "corpus")


def tree(p: Path) -> dict:
    return {str(f.relative_to(p)): f.read_bytes() for f in sorted(p.rglob("*")) if f.is_file()}


# ------------------------------------------------------------------------------------------- the main path


def test_hand_written_records_become_a_valid_dataset_with_one_resolve(corpus: Path, tmp_path: Path):
    recs = write_records(tmp_path / "mine.jsonl", hand_written())
    before = tree(corpus)
    out = tmp_path / "ds"
    r = invoke("goldset", "resolve", recs, "--corpus", corpus, "--out", out, "--name", "Mi Conjunto")
    assert r.exit_code == 0, r.output
    assert tree(corpus) == before  # the corpus is read only
    assert "wrote" in r.output and "8 quotes resolved (2 split at chunk boundaries)" in r.output
    # the written heading paths that disagree are replaced and reported, with the record's location
    assert (
        f"{recs}:1: record SP-001: field gold_documents[0].heading_path: 'TITULO QUINTO > CAPITULO II' replaced by "
        "the cited chunks' ['Ley de Pruebas', 'TITULO QUINTO', 'CAPITULO II']" in r.output
    )
    assert (
        "record SP-002: field gold_documents[0].heading_path: ['Ley de Pruebas', 'TITULO QUINTO'] replaced" in r.output
    )
    assert "record MO-001: field gold_documents[0].evidence[0].chunk_id: 'dof-n#7' replaced by 'dof-n#0'" in r.output
    assert "record MO-001: field gold_documents[0].relpath: 'dof/otra.md' replaced by the corpus metadata's" in r.output
    assert (
        "record SP-002: field gold_documents[0].evidence[0].quote: quote spans chunks ley-p#1 and ley-p#2" in r.output
    )

    gs = load_goldset(out)
    assert gs.manifest is not None and gs.manifest.name == "Mi Conjunto" and gs.manifest.version == "1.0.0"
    assert gs.manifest.chunker_version == "md-words-v1" and gs.manifest.records_sha256 == gs.sha256
    assert (out / "validators" / "mi-conjunto-v1.toml").is_file()
    by = gs.by_id()
    sp1 = by["SP-001"].gold_documents[0]
    assert sp1.heading_path == ["Ley de Pruebas", "TITULO QUINTO", "CAPITULO II"]
    assert [(e.chunk_id, e.chunk_index, e.source_quote) for e in sp1.evidence] == [("ley-p#1", 1, None)]
    assert sp1.relpath == "leyes/ley_p.md" and sp1.publication_date == "2020-01-15" and sp1.section is None
    # a quote across a boundary: one item per chunk, each a contiguous span of its chunk, the quote kept
    ev = by["SP-002"].gold_documents[0].evidence
    assert [e.chunk_id for e in ev] == ["ley-p#1", "ley-p#2", "ley-p#2", "ley-p#3"]
    assert [e.quote for e in ev] == [span(95, 98), span(99, 105), span(180, 198), span(199, 225)]
    assert [e.source_quote for e in ev] == [span(95, 105)] * 2 + [span(180, 225)] * 2
    mo1 = by["MO-001"].gold_documents[0]
    assert mo1.relpath == "dof/nota.md" and mo1.section == "MAT" and mo1.evidence[0].chunk_id == "dof-n#0"
    assert by["MO-002"].gold_documents[0].evidence[0].chunk_id == "dof-a#1"  # the hint chose the Anexo's
    md = by["MD-001"].gold_documents
    assert [e.chunk_id for e in md[0].evidence] == ["ley-p#3", "ley-p#4"]
    assert md[0].heading_path == ["Ley de Pruebas"]  # the common prefix of the cited chunks' paths
    # the starter contract requires what every record has, and the set meets it
    c = load_contract(out / "validators" / "mi-conjunto-v1.toml")
    assert c.total_questions == 5 and c.per_category == {"single_passage": 2, "monitoring": 2, "multi_document": 1}
    assert c.id_prefixes == {"single_passage": "SP-", "monitoring": "MO-", "multi_document": "MD-"}
    assert c.required_fields == ("id", "category", "question", "gold_documents")
    assert c.required_gold_document_fields == ("document_id", "relpath", "publication_date", "evidence", "heading_path")
    assert c.require_evidence
    v = invoke("validate", out, "--corpus", corpus)
    assert v.exit_code == 0, v.output
    assert "VALID: exit 0" in v.output
    report = validate(out, corpus_dir=corpus)
    assert report.exit_code == 0 and report.rule_summary()["V001"]["fail"] == 0


def test_legal_fields_every_record_has_become_required_by_the_starter_contract(corpus: Path, tmp_path: Path):
    recs = [r for r in hand_written() if r["id"].startswith("SP-")]
    res = resolve_goldset(write_records(tmp_path / "sp.jsonl", recs), corpus, tmp_path / "ds")
    assert res.built is not None and res.built.written == tmp_path / "ds"
    c = load_contract(tmp_path / "ds" / "validators" / "sp-v1.toml")
    assert c.required_fields == (
        "id",
        "category",
        "question",
        "gold_documents",
        "persona",
        "difficulty",
        "as_of",
        "answerability",
        "reference_answer",
        "required_hops",
    )
    assert "role" in c.required_gold_document_fields
    # and a later correction that drops one is caught by V013
    corr = tmp_path / "drop.jsonl"
    corr.write_text(json.dumps({"id": "SP-001", "patch": [{"op": "remove", "path": "/persona"}]}) + "\n", "utf-8")
    rep = validate(tmp_path / "ds", correction=corr)
    fails = {(r.id, x.code) for r in rep.records for x in r.rules if x.status == "fail"}
    assert fails == {("SP-001", "V013")}


def _parts_property_corpus(root: Path, n_words: int) -> Path:
    words = " ".join(f"w{i}" for i in range(n_words))
    (root / "d.md").parent.mkdir(parents=True, exist_ok=True)
    (root / "d.md").write_text(f"# D\n\n{words}\n", encoding="utf-8")
    (root / "metadata.jsonl").write_text(json.dumps({"doc_id": "d", "path": "d.md"}) + "\n", encoding="utf-8")
    return root


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_split_part_is_a_contiguous_span_of_its_chunk_and_the_parts_rejoin_to_the_quote(tmp_path_factory, data):
    root = _parts_property_corpus(tmp_path_factory.mktemp("c"), 437)  # chunks of 100, 100, 100, 137 words
    view = open_corpus(root, "md-words-v1")
    a = data.draw(st.integers(0, 436))
    b = data.draw(st.integers(a, min(436, a + 250)))
    quote = " ".join(f"w{i}" for i in range(a, b + 1))
    path = write_records(
        root.parent / f"r{a}-{b}.jsonl",
        [
            {
                "id": "Q",
                "category": "c",
                "question": "q",
                "gold_documents": [{"document_id": "d", "evidence": [{"quote": quote}]}],
            }
        ],
    )
    res = resolve_records(path, view)
    assert not res.problems
    ev = res.records[0].gold_documents[0].evidence
    doc = view.doc("d")
    for e in ev:  # V001 holds for every part
        assert check_quote(doc, e.chunk_index, e.quote, normalize_text).ok
    assert " ".join(e.quote for e in ev) == normalize_text(quote)
    assert [e.chunk_index for e in ev] == sorted({e.chunk_index for e in ev})
    assert (len(ev) > 1) == all(e.source_quote == quote for e in ev)


def test_a_quote_that_occurs_several_times_cites_the_first_and_says_so(corpus: Path, tmp_path: Path):
    recs = [r for r in hand_written() if r["id"] == "MO-002"]
    del recs[0]["gold_documents"][0]["evidence"][0]["chunk_index"]
    res = resolve_records(write_records(tmp_path / "r.jsonl", recs), open_corpus(corpus, "md-words-v1"))
    assert res.records[0].gold_documents[0].evidence[0].chunk_id == "dof-a#0"
    assert res.notes == [
        f"{tmp_path / 'r.jsonl'}:1: record MO-002: field gold_documents[0].evidence[0].quote: quote occurs 3 times "
        "(dof-a#0, dof-a#0, dof-a#1); cited dof-a#0, the first inside one chunk"
    ]


def test_re_resolving_a_resolved_set_changes_nothing(corpus: Path, tmp_path: Path):
    res = resolve_goldset(write_records(tmp_path / "mine.jsonl", hand_written()), corpus, tmp_path / "ds")
    assert res.built is not None and res.built.written is not None
    gs = load_goldset(tmp_path / "ds")
    again = resolve_records(gs.records_path, open_corpus(corpus, "md-words-v1"))
    assert not again.problems and not again.notes  # every chunk id, path and split part is already right
    assert [r.model_dump() for r in again.records] == [r.model_dump() for r in gs.records]


# ------------------------------------------------------------------------------------------- failure modes


def test_a_quote_that_cannot_be_resolved_names_its_closest_match_and_nothing_is_written(corpus: Path, tmp_path: Path):
    recs = hand_written()
    recs[0]["gold_documents"][0]["evidence"][0]["quote"] = span(51, 55) + " " + span(57, 60)  # glued: p056 omitted
    recs[2]["gold_documents"][0]["document_id"] = "dof-zz"
    path = write_records(tmp_path / "mine.jsonl", recs)
    out = tmp_path / "ds"
    r = invoke("goldset", "resolve", path, "--corpus", corpus, "--out", out)
    assert r.exit_code == 2 and not out.exists()
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert lines[0] == (
        f"{path}:1: record SP-001: field gold_documents[0].evidence[0].quote: quote not found in document ley-p; "
        "closest match in chunk ley-p#1 (similarity 0.95): quote is not contiguous in chunk ley-p#1: it omits 1 "
        "word(s) «p056»; diverges from the closest match at quote word 6: quote «p057 p058 p059 p060» vs chunk «p056 "
        "p057 p058 p059 p060 p061 p062 p063»"
    )
    assert lines[1] == (
        f"{path}:3: record MO-001: field gold_documents[0].document_id: unknown document 'dof-zz' "
        "(not in corpus@" + lines[1].split("corpus@")[1]
    )
    assert lines[2] == "error: 2 problem(s) above; nothing written"
    with pytest.raises(ResolveError) as ei:
        resolve_goldset(path, corpus, out)
    assert len(ei.value.problems) == 2 and ei.value.exit_code == 2 and "\n" not in str(ei.value)


def test_schema_errors_are_one_located_line_per_record(corpus: Path, tmp_path: Path):
    recs = hand_written()
    recs[1]["gold_documents"][0]["evidence"][1]["chunk_index"] = "3"
    recs[3]["required_hops"] = True
    del recs[4]["question"]
    path = write_records(tmp_path / "mine.jsonl", recs)
    with pytest.raises(ResolveError) as ei:
        resolve_goldset(path, corpus, tmp_path / "ds")
    assert ei.value.problems == [
        f'{path}:2: record SP-002: field gold_documents[0].evidence[1].chunk_index: expected a valid integer, got "3"',
        f"{path}:4: record MO-002: field required_hops: expected a valid integer, got true",
        f"{path}:5: record MD-001: field question: Field required",
    ]


def test_null_chunk_id_in_a_dataset_reads_as_one_line_not_pydantic_union_noise(tmp_path: Path):
    """Before the fix: ``field gold_documents[0].evidence[1].chunk_id.int: Input should be a valid integer (+3
    more)``."""
    rec = {
        "id": "Q-7",
        "category": "c",
        "question": "q",
        "gold_documents": [
            {
                "document_id": "d",
                "evidence": [
                    {"chunk_id": "d#0", "chunk_index": 0, "quote": "a"},
                    {"chunk_id": None, "chunk_index": 1, "quote": "b"},
                ],
            }
        ],
    }
    path = tmp_path / "records.jsonl"
    path.write_text(
        json.dumps({**rec, "id": "Q-6"}) + "\n" + json.dumps({**rec, "id": "Q-6b"}) + "\n" + json.dumps(rec) + "\n"
    )
    with pytest.raises(HarnessInputError) as ei:
        load_goldset(path)
    assert str(ei.value) == (
        f"{path}:1: record Q-6: field gold_documents[0].evidence[1].chunk_id: expected a valid integer or a valid "
        "string, got null"
    )
    rec["gold_documents"][0]["evidence"][1].update(chunk_id=[1], chunk_index=None)
    rec["grade"] = 3
    with pytest.raises(ValidationError) as ve:
        GoldRecord.model_validate(rec)
    assert format_validation_error(ve.value) == (
        "field gold_documents[0].evidence[1].chunk_id: expected a valid integer or a valid string, got [1] "
        "(+2 more: gold_documents[0].evidence[1].chunk_index, grade)"
    )


def test_a_resolved_set_that_breaks_a_rule_is_not_written(corpus: Path, tmp_path: Path):
    recs = hand_written()
    recs[3]["id"] = "MO-001"  # duplicate id: V020
    r = invoke(
        "goldset", "resolve", write_records(tmp_path / "dup.jsonl", recs), "--corpus", corpus, "--out", tmp_path / "ds"
    )
    assert r.exit_code == 1 and not (tmp_path / "ds").exists()
    assert "V020" in r.output and "not written: the resolved set does not validate" in r.output


def test_a_given_contract_is_used_and_none_is_written(corpus: Path, tmp_path: Path):
    res = resolve_goldset(write_records(tmp_path / "mine.jsonl", hand_written()), corpus, tmp_path / "ds1")
    contract = tmp_path / "mine-v2.toml"
    text = (tmp_path / "ds1" / "validators" / "mine-v1.toml").read_text()
    contract.write_text(text.replace('dataset = "mine"', 'dataset = "Mine"').replace("major = 1", "major = 2"))
    out = tmp_path / "ds2"
    res = resolve_goldset(tmp_path / "mine.jsonl", corpus, out, contract=contract)
    assert res.built is not None and res.built.written == out and res.built.contract_written is None
    gs = load_goldset(out)
    assert gs.manifest.name == "Mine" and gs.manifest.version == "2.0.0" and not (out / "validators").exists()
    assert validate(out, corpus_dir=corpus, contract=contract).exit_code == 0
    with pytest.raises(HarnessInputError, match="--name 'other': the contract .* is for 'Mine'"):
        resolve_goldset(tmp_path / "mine.jsonl", corpus, tmp_path / "ds3", contract=contract, name="other")


def test_existing_output_and_output_inside_the_corpus_are_refused(corpus: Path, tmp_path: Path):
    path = write_records(tmp_path / "mine.jsonl", hand_written())
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "keep.txt").write_text("mine")
    r = invoke("goldset", "resolve", path, "--corpus", corpus, "--out", tmp_path / "ds")
    assert r.exit_code == 2 and "already exists" in r.output
    assert (tmp_path / "ds" / "keep.txt").read_text() == "mine"
    r = invoke("goldset", "resolve", path, "--corpus", corpus, "--out", corpus / "ds")
    assert r.exit_code == 2 and "lies inside the input" in r.output and not (corpus / "ds").exists()
    r = invoke("goldset", "resolve", path, "--corpus", corpus, "--out", tmp_path / "x", "--chunker", "nope")
    assert r.exit_code == 2 and "unknown chunker" in r.output


# ------------------------------------------------------------------------------ schema: what is optional now


def test_the_smallest_valid_record_and_strict_types():
    rec = GoldRecord.model_validate(
        {"id": "Q1", "question": "¿Qué?", "category": "cualquiera", "gold_documents": [{"document_id": "d1"}]}
    )
    assert rec.persona is None and rec.answerability is None and rec.gold_documents[0].evidence == []
    assert rec.gold_documents[0].effective_grade == 2
    for bad, where in (
        ({"required_hops": "1"}, "field required_hops: expected a valid integer"),
        ({"category": ""}, "field category: string should have at least 1 character"),
        ({"as_of": "2024-1-5"}, "field as_of: '2024-1-5' is not an ISO date"),
        ({"id": 1.0}, "field id: expected a valid integer or a valid string, got 1.0"),
        ({"gold_documents": [{"document_id": "d", "grade": "2"}]}, "field gold_documents[0].grade: expected 1 or 2"),
    ):
        with pytest.raises(ValidationError) as ve:
            GoldRecord.model_validate(
                {"id": "Q1", "question": "q", "category": "c", "gold_documents": [{"document_id": "d"}], **bad}
            )
        assert format_validation_error(ve.value).startswith(where), format_validation_error(ve.value)


def test_the_published_v4_file_still_loads():
    gs = load_goldset(PUBLISHED)
    assert len(gs.records) == 42 and gs.manifest is not None and gs.manifest.version == "4.0.0-pilot"
    assert isinstance(gs.records[0].gold_documents[0].evidence[0].chunk_id, int)


@pytest.mark.parametrize(
    ("dataset", "field"),
    [
        (REAL_DATASET, "/persona"),
        (REAL_DATASET, "/reference_answer"),
        (REAL_DATASET, "/gold_documents/0/relpath"),
        (PUBLISHED, "/as_of"),
        (PUBLISHED, "/gold_documents/0/section"),
    ],
)
def test_our_contracts_still_require_the_legal_fields(tmp_path: Path, dataset: Path, field: str):
    """The schema no longer requires them; the contracts do (V013), so our sets validate as strictly as before."""
    first = load_goldset(dataset).records[0].qid
    corr = tmp_path / "c.jsonl"
    corr.write_text(json.dumps({"id": first, "patch": [{"op": "remove", "path": field}]}) + "\n", "utf-8")
    rep = validate(dataset, correction=corr)
    fails = [(r.id, x.code, [f.where for f in x.findings]) for r in rep.records for x in r.rules if x.status == "fail"]
    assert fails == [(first, "V013", [field.lstrip("/").replace("/0/", "[0].")])] and rep.exit_code == 1
    assert validate(dataset).exit_code == 0


def test_starter_contract_is_a_contract_the_records_meet_and_id_prefixes(tmp_path: Path):
    assert [
        id_prefix(i) for i in (["SP-001", "SP-002"], ["Q1", "Q22"], ["1", "2"], ["abc_x1"], ["MO-006", "MO-016"])
    ] == [
        "SP-",
        "Q",
        None,
        "abc_",
        "MO-",
    ]
    recs = [
        GoldRecord.model_validate(
            {
                "id": str(i),
                "category": 'raro "x" y',
                "question": f"q{i}",
                "split": s,
                "gold_documents": [{"document_id": f"d{i}"}],
            }
        )
        for i, s in ((1, "dev"), (2, "test"))
    ]
    p = tmp_path / "c.toml"
    p.write_text(starter_contract(recs, "Otro conjunto", "3.1.0", origin="x.jsonl"), encoding="utf-8")
    c = load_contract(p)
    assert (c.dataset, c.major, c.categories, c.per_category) == (
        "Otro conjunto",
        3,
        ('raro "x" y',),
        {'raro "x" y': 2},
    )
    assert c.id_prefixes == {} and c.per_split == {"dev": 1, "test": 1} and c.split_grouping and not c.require_evidence
    assert c.required_fields == ("id", "category", "question", "gold_documents", "split")


def test_resolve_leaves_its_inputs_untouched(corpus: Path, tmp_path: Path):
    path = write_records(tmp_path / "mine.jsonl", hand_written())
    before = path.read_bytes()
    shutil.copytree(corpus, tmp_path / "copy")
    resolve_goldset(path, corpus, tmp_path / "ds")
    assert path.read_bytes() == before and tree(corpus) == tree(tmp_path / "copy")


REAL_CORPUS = ROOT.parent / "shared" / "corpus" / "mx-leyes-dof"


@pytest.mark.realcorpus
def test_resolve_rebuilds_our_gold_set_byte_for_byte_from_its_quotes(tmp_path: Path):
    """Our 42 questions with every chunk_id and heading_path removed (the chunk_index kept, as the authoring script
    used it to choose among repeated passages): one resolve gives back the committed records file, byte for byte;
    without chunk_index as well, 200 of the 209 quotes (1.1.0; 187 of 193 in 1.0.0) land on the same chunk and every
    repeated quote is reported. The two useful (grade 1) documents of NE-005 cite no passage and keep their heading
    path, which nothing derives."""
    src = REAL_DATASET / "mx_leyes_dof_eval_v1.jsonl"
    rows = [json.loads(ln) for ln in src.read_text(encoding="utf-8").splitlines()]
    for keep_index in (True, False):
        stripped = json.loads(json.dumps(rows))
        for r in stripped:
            for g in r["gold_documents"]:
                if g["evidence"]:  # a document citing no passage keeps its heading path: nothing derives it
                    del g["heading_path"]
                for e in g["evidence"]:
                    del e["chunk_id"]
                    if not keep_index:
                        del e["chunk_index"]
        path = write_records(tmp_path / f"stripped-{keep_index}.jsonl", stripped)
        out = tmp_path / f"ds-{keep_index}"
        res = resolve_goldset(
            path, REAL_CORPUS, out, name="mx-leyes-dof-eval", contract=ROOT / "validators" / "mx-leyes-dof-eval-v1.toml"
        )
        assert res.built is not None and res.built.written == out and res.quotes == 209 and res.split == 0
        new = (out / "mx_leyes_dof_eval_v1.jsonl").read_bytes()
        if keep_index:
            assert new == src.read_bytes() and not res.notes
        else:
            got = [json.loads(ln) for ln in new.decode("utf-8").splitlines()]
            same = [
                e1["chunk_id"] == e2["chunk_id"]
                for r1, r2 in zip(rows, got, strict=True)
                for g1, g2 in zip(r1["gold_documents"], r2["gold_documents"], strict=True)
                for e1, e2 in zip(g1["evidence"], g2["evidence"], strict=True)
            ]
            assert (sum(same), len(same)) == (200, 209)
            assert sum("quote occurs" in n for n in res.notes) == 13  # every repeated quote is reported


def test_v004_is_not_applicable_to_a_gold_document_without_evidence(corpus: Path, tmp_path: Path):
    """A useful (grade 1) document may cite no passage; its heading path has nothing to be compared with. Before:
    "not checked", which reads as if the corpus had been missing."""
    recs = hand_written()
    recs[2]["gold_documents"].append(
        {"document_id": "dof-a", "grade": 1, "heading_path": ["AVISO de prueba"], "evidence": []}
    )
    res = resolve_goldset(write_records(tmp_path / "mine.jsonl", recs), corpus, tmp_path / "ds")
    assert res.built is not None and res.built.written is not None
    rep = validate(tmp_path / "ds", corpus_dir=corpus)
    v004 = next(x for r in rep.records if r.id == "MO-001" for x in r.rules if x.code == "V004")
    assert v004.status == "pass" and [f.status for f in v004.findings] == ["not_applicable"]
    assert rep.exit_code == 0
