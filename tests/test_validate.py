"""The gold-set validator: each rule with a passing and a failing case on a tiny corpus and gold set written to
tmp_path, malformed input (exit 2), the published eval v4 file, and the real gold set on the real corpus."""

from __future__ import annotations

import copy
import json
import shutil
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from harness.corpus.chunker import decode_source, get_chunker
from harness.corpus.ingest import scan_corpus
from harness.corpus.quotes import check_quote, closest_match
from harness.corpus.view import open_corpus
from harness.errors import HarnessInputError
from harness.goldset.io import load_goldset
from harness.report.validation import render
from harness.validate import (
    RULE_INFO,
    contract_slug,
    load_contract,
    validate,
)

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT.parent / "shared" / "reference" / "dof-rag-eval-v4"
REAL_CORPUS = ROOT.parent / "shared" / "corpus" / "mx-leyes-dof"
REAL_DATASET = ROOT / "datasets" / "mx-leyes-dof-eval-v1"
CORPUS_CODES = {"V001", "V002", "V003", "V004", "V005"}

# ----------------------------------------------------------------------------------------------- fixtures

_FILLER = " ".join(f"texto{n}" for n in range(21, 131))  # words 21..130 of the section: 130 words -> 100 + 30
LEY_A = f"""# Ley A

## Capítulo I

Artículo 1. Esta ley es de “orden público” y de **observancia general** en toda la República — sin excepción alguna.
{_FILLER}

## Capítulo II

Artículo 5. Para los efectos del artículo 1, la autoridad competente publicará los avisos en el Diario Oficial.
"""
DOF_1 = """# ACUERDO por el que se establecen los requisitos

Los requisitos son los siguientes: I. Solicitud por escrito; II. Identificación oficial; III. Comprobante de domicilio.

## Transitorios

Primero. El presente Acuerdo entrará en vigor el 1 de abril de 2021.
"""
DOF_2 = """# DECRETO por el que se reforma el artículo 76 de la Ley Federal del Trabajo

Se reforma el artículo 76 de la Ley Federal del Trabajo, en materia de vacaciones.

## Transitorios

Único. El presente Decreto entrará en vigor el 1 de enero de 2023.
"""
METADATA = [
    {"doc_id": "ley-a", "path": "leyes/ley_a.md", "title": "Ley A", "date": "2020-01-15"},
    {
        "doc_id": "dof-1",
        "path": "dof/2021-03-01/MAT_001.md",
        "title": "ACUERDO",
        "date": "2021-03-01",
        "edition": "MAT",
    },
    {
        "doc_id": "dof-2",
        "path": "dof/2022-05-10/VES_001.md",
        "title": "DECRETO",
        "date": "2022-05-10",
        "section": "VES",
    },
]
TEXTS = {"ley-a": LEY_A, "dof-1": DOF_1, "dof-2": DOF_2}


def _gd(doc_id: str, chunk: int, quote: str, *, role: str = "answer", heading=None) -> dict:
    meta = next(m for m in METADATA if m["doc_id"] == doc_id)
    out = {
        "document_id": doc_id,
        "relpath": meta["path"],
        "publication_date": meta["date"],
        "section": meta.get("section", meta.get("edition")),
        "role": role,
        "evidence": [{"chunk_id": f"{doc_id}#{chunk}", "chunk_index": chunk, "quote": quote}],
    }
    if heading is not None:
        out["heading_path"] = heading
    return out


def _rec(rid: str, category: str, question: str, gold: list[dict], **kw) -> dict:
    rec = {
        "id": rid,
        "category": category,
        "question": question,
        "persona": "abogado",
        "difficulty": "easy",
        "as_of": "2023-01-01",
        "answerability": "answerable",
        "reference_answer": "Respuesta.",
        "required_hops": 1,
        "gold_documents": gold,
        "unanswerable_reason": None,
    }
    rec.update(kw)
    return rec


SP_QUOTE = 'Esta ley es de "orden público" y de observancia general en toda la República - sin excepción alguna.'


def base_records() -> list[dict]:
    """Seven valid records, one per category (typographic quotes, **bold** and an em dash in the source of SP-001)."""
    return [
        _rec(
            "SP-001",
            "single_passage",
            "¿Qué carácter tiene la Ley A?",
            [_gd("ley-a", 0, SP_QUOTE, heading=["Ley A", "Capítulo I"])],
        ),
        _rec(
            "LI-001",
            "list_enumeration",
            "¿Qué requisitos fija el acuerdo?",
            [_gd("dof-1", 0, "I. Solicitud por escrito; II. Identificación oficial; III. Comprobante de domicilio.")],
        ),
        _rec(
            "TE-001",
            "temporal_transitorio",
            "¿Cuándo entró en vigor el acuerdo?",
            [_gd("dof-1", 1, "El presente Acuerdo entrará en vigor el 1 de abril de 2021.")],
        ),
        _rec(
            "CR-001",
            "cross_reference",
            "¿Dónde se publican los avisos del artículo 1?",
            [
                _gd(
                    "ley-a",
                    2,
                    "la autoridad competente publicará los avisos en el Diario Oficial.",
                    heading=["Ley A", "Capítulo II"],
                )
            ],
        ),
        _rec(
            "MD-001",
            "multi_document",
            "¿Qué publicaron el acuerdo y el decreto?",
            [
                _gd("dof-1", 0, "Los requisitos son los siguientes:"),
                _gd("dof-2", 0, "Se reforma el artículo 76 de la Ley Federal del Trabajo"),
            ],
            required_hops=2,
        ),
        _rec(
            "MO-001",
            "monitoring",
            "¿Qué decreto publicó el DOF el 10 de mayo de 2022?",
            [_gd("dof-2", 1, "El presente Decreto entrará en vigor el 1 de enero de 2023.")],
        ),
        _rec(
            "NE-001",
            "negative_false_premise",
            "¿Qué cambió la reforma de 2022 al artículo 123 constitucional?",
            [
                _gd(
                    "dof-2",
                    0,
                    "Se reforma el artículo 76 de la Ley Federal del Trabajo, en materia de vacaciones.",
                    role="premise_refutation",
                )
            ],
            answerability="false_premise",
            reference_answer="No reformó el artículo 123 constitucional; reformó el artículo 76 de la Ley Federal del "
            "Trabajo.",
            unanswerable_reason="wrong_legal_instrument",
        ),
    ]


CATS = [
    "single_passage",
    "list_enumeration",
    "temporal_transitorio",
    "cross_reference",
    "multi_document",
    "monitoring",
    "negative_false_premise",
]
PREFIX = dict(zip(CATS, ["SP-", "LI-", "TE-", "CR-", "MD-", "MO-", "NE-"], strict=True))


def contract_text(**over) -> str:
    """The tiny set's contract (TOML); keyword arguments replace top-level scalar/list keys or tables."""
    c = {
        "contract_format": 1,
        "dataset": "Tiny Eval",
        "major": 1,
        "total_questions": 7,
        "categories": CATS,
        "required_fields": ["id", "category", "question", "persona", "as_of", "reference_answer", "gold_documents"],
        "required_gold_document_fields": ["document_id", "relpath", "publication_date", "role", "evidence"],
        "refutation_roles": ["premise_refutation"],
        "premise_correction_markers": ["no", "fals*", "premisa"],
        "per_category": {c: 1 for c in CATS},
        "id_prefixes": PREFIX,
    }
    c.update(over)
    lines, tables = [], []
    for k, v in c.items():
        if isinstance(v, dict):
            tables.append(f"[{k}]\n" + "".join(f"{kk} = {json.dumps(vv)}\n" for kk, vv in v.items()))
        else:
            lines.append(f"{k} = {json.dumps(v, ensure_ascii=False)}")
    return "\n".join(lines) + "\n\n" + "\n".join(tables)


def write_corpus(root: Path, texts: dict[str, str] | None = None, metadata: list[dict] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    metadata = METADATA if metadata is None else metadata
    for m in metadata:
        p = root / m["path"]
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text((texts or TEXTS)[m["doc_id"]], encoding="utf-8")
    (root / "metadata.jsonl").write_text("\n".join(json.dumps(m, ensure_ascii=False) for m in metadata) + "\n")
    return root


def write_dataset(folder: Path, records: list[dict], manifest: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tiny.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8"
    )
    (folder / "tiny.meta.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=2), encoding="utf-8")
    return folder


def base_manifest(corpus: Path) -> dict:
    src = scan_corpus(corpus)
    dmin, dmax = src.date_range
    return {
        "name": "Tiny Eval",
        "version": "1.0.0",
        "total_questions": 7,
        "corpus_version": src.corpus_id,
        "corpus_hash": src.corpus_hash,
        "corpus_documents": len(src.docs),
        "corpus_date_min": dmin,
        "corpus_date_max": dmax,
        "chunker_version": "md-words-v1",
        "questions_per_category": 1,
        "categories": CATS,
    }


class Fixture:
    """A tiny corpus, gold set and contract folder under ``tmp``; ``build`` writes a (mutated) dataset."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.corpus = write_corpus(tmp / "corpus")
        self.validators = tmp / "validators"
        self.validators.mkdir()
        self.contract = self.validators / "tiny-eval-v1.toml"
        self.contract.write_text(contract_text(), encoding="utf-8")
        self.manifest = base_manifest(self.corpus)
        self.n = 0

    def build(self, mutate=None, manifest=None) -> Path:
        recs = base_records()
        if mutate is not None:
            mutate(recs)
        man = copy.deepcopy(self.manifest)
        if manifest is not None:
            manifest(man)
        self.n += 1
        return write_dataset(self.tmp / f"ds{self.n}", recs, man)

    def run(self, mutate=None, manifest=None, *, corpus=True, contract=None, **kw):
        ds = self.build(mutate, manifest)
        return validate(ds, corpus_dir=self.corpus if corpus else None, contract=contract or self.validators, **kw)


@pytest.fixture
def fx(tmp_path: Path) -> Fixture:
    return Fixture(tmp_path)


def fails(report) -> dict[tuple[str, str], list[str]]:
    """``{(scope, code): [messages]}`` of the failed checks."""
    out: dict[tuple[str, str], list[str]] = {}
    for scope, code, f in report.failures():
        out.setdefault((scope, code), []).append(f.message)
    return out


def failed_codes(report) -> set[str]:
    return {code for _, code, _ in report.failures()}


# ----------------------------------------------------------------------------------------------- the baseline


def test_fixture_chunks_as_designed(fx):
    chunks = get_chunker("md-words-v1").chunk("ley-a", decode_source(LEY_A.encode()))
    assert [c.n_words for c in chunks] == [100, 30, 18]
    assert chunks[0].text.endswith("texto100") and chunks[1].text.startswith("texto101")
    assert chunks[0].heading_path == ("Ley A", "Capítulo I")


def test_valid_set_passes_every_rule_with_corpus(fx):
    r = fx.run()
    assert r.exit_code == 0, fails(r)
    summary = r.rule_summary()
    assert all(s["fail"] == 0 and s["not_checked"] == 0 for s in summary.values()), summary
    assert {x.code for x in RULE_INFO} == set(summary)
    assert r.counts.questions == 7 and r.counts.gold_documents == 3 and r.counts.evidence_chunks == 6
    assert r.corpus["chunker"] == "md-words-v1" and r.corpus["documents_chunked"] == 3


def fx_records(report, qid: str):
    """The gold documents of record ``qid`` of the set a report was made on."""
    return load_goldset(report.dataset["path"]).by_id()[qid].gold_documents


def test_without_corpus_the_corpus_rules_are_not_checked_never_passed(fx):
    r = fx.run(corpus=False)
    assert r.exit_code == 0 and r.corpus is None
    for rec in r.records:
        for res in rec.rules:
            if res.code in CORPUS_CODES:
                assert res.status == "not_checked"
                assert res.findings[0].message == "corpus unavailable"
            elif res.code == "V030" and rec.category != "multi_document":
                assert res.status == "not_applicable" and res.checks == 0
            elif res.code == "V035" and not any(g.alternatives for g in fx_records(r, rec.id)):
                assert res.status == "not_applicable" and res.checks == 0
            else:
                assert res.status == "pass"
    v005 = next(x for x in r.dataset_results if x.code == "V005")
    assert v005.status == "not_checked"


def test_rules_the_contract_does_not_ask_for_are_not_applicable_never_passed(fx):
    """V016/V017 without per_split/split_grouping, and V030 outside multi_document, are "not applicable": no check
    is counted, the finding says why, and the set stays valid."""
    r = fx.run()
    by = {x.code: x for x in r.dataset_results}
    for code, where in (("V016", "contract.per_split"), ("V017", "contract.split_grouping")):
        assert by[code].status == "not_applicable" and by[code].checks == 0
        assert by[code].findings[0].where == where
    summary = r.rule_summary()
    assert set(summary["V030"]) == {"pass", "fail", "warn", "not_checked", "not_applicable"}
    n_md = sum(1 for x in r.records if x.category == "multi_document")
    assert summary["V030"]["pass"] == n_md > 0
    assert summary["V030"]["not_applicable"] == len(r.records) - n_md > 0
    assert all(x.status == "pass" for x in r.records)  # a record with a passing rule is "pass", n/a never lowers it
    assert r.exit_code == 0 and r.status == "pass"
    # once the contract asks for them, the same rules are checked
    fx.contract.write_text(contract_text(per_split={"dev": 4, "test": 3}, split_grouping=True))
    by = {x.code: x for x in fx.run(contract=fx.contract).dataset_results}
    assert by["V016"].status == "fail" and by["V017"].status == "pass" and by["V017"].checks > 0


def test_worst_status_order():
    from harness.validate.report import worst

    assert worst([]) == "pass"
    assert worst(["not_applicable"]) == "not_applicable"
    assert worst(["not_applicable", "pass"]) == "pass"
    assert worst(["pass", "not_checked", "not_applicable"]) == "not_checked"
    assert worst(["not_checked", "fail", "pass"]) == "fail"


def test_without_corpus_the_chunker_is_not_looked_up(fx):
    r = fx.run(corpus=False, manifest=lambda m: m.update(chunker_version="dof-chunker-v1"))
    assert r.exit_code == 0


def test_the_exit_code_follows_the_other_rules_without_corpus(fx):
    r = fx.run(lambda rs: rs[0].update(id="XX-001"), corpus=False)
    assert r.exit_code == 1 and failed_codes(r) == {"V014"}


# ----------------------------------------------------------------------------------------------- V001 quotes


def _quote(rec_i: int, q: str, gd: int = 0, ev: int = 0):
    def m(rs):
        rs[rec_i]["gold_documents"][gd]["evidence"][ev]["quote"] = q

    return m


def test_v001_typographic_quotes_bold_and_dashes_pass_after_normalisation(fx):
    # the source has “orden público”, **observancia general** and an em dash; the quote uses the other forms
    variants = [
        SP_QUOTE,
        "Esta ley es de “orden público” y de **observancia general** en toda la República — sin excepción alguna.",
        "de «orden público» y de _observancia_ general   en toda\nla República – sin",
    ]
    for q in variants:
        r = fx.run(_quote(0, q))
        assert r.exit_code == 0, (q, fails(r))


def test_v001_glued_quote_with_omitted_middle_words_fails_and_shows_the_divergence(fx):
    glued = 'Esta ley es de "orden público" y de observancia general sin excepción alguna.'
    r = fx.run(_quote(0, glued))
    assert failed_codes(r) == {"V001"}
    (f,) = [f for scope, code, f in r.failures() if code == "V001"]
    assert f.where == "gold_documents[0].evidence[0].quote"
    assert f.details["kind"] == "not_contiguous"
    assert f.details["omitted"] == ["en toda la República -"]
    assert f.details["diverges_at_word"] == 10  # 0-based: "sin" where the chunk has "en"
    assert f.details["closest"].startswith("Esta ley es de")
    assert "omits 5 word(s) «en toda la República -»" in f.message
    assert "quote «sin excepción alguna.» vs chunk «en toda la República" in f.message


def test_v001_quote_spanning_two_chunks_fails_and_names_both(fx):
    r = fx.run(_quote(0, "texto98 texto99 texto100 texto101 texto102"))
    (f,) = [f for _, code, f in r.failures() if code == "V001"]
    assert f.details["kind"] == "spans_chunks"
    assert f.details["chunks"] == ["ley-a#0", "ley-a#1"]
    assert "spans chunks ley-a#0 and ley-a#1" in f.message


def test_v001_quote_from_another_chunk_fails_and_names_it(fx):
    r = fx.run(_quote(0, "texto110 texto111 texto112"))
    (f,) = [f for _, code, f in r.failures() if code == "V001"]
    assert f.details["kind"] == "other_chunk" and f.details["found_in"] == ["ley-a#1"]


def test_v001_quote_absent_from_the_document_fails(fx):
    r = fx.run(_quote(1, "I. Solicitud por escrito; II. Pasaporte vigente."))
    (f,) = [f for _, code, f in r.failures() if code == "V001"]
    assert f.details["kind"] == "not_contiguous" and f.details["diverges_at_word"] == 5


# ----------------------------------------------------------------------------------------------- V002 chunks


def _chunk(rec_i: int, chunk_id, index: int | None = None, gd: int = 0):
    def m(rs):
        ev = rs[rec_i]["gold_documents"][gd]["evidence"][0]
        ev["chunk_id"] = chunk_id
        if index is not None:
            ev["chunk_index"] = index

    return m


def test_v002_chunk_id_from_another_chunker_version_fails(fx):
    # an integer id, as dof-chunker-v1 numbered chunks in the published set
    r = fx.run(_chunk(0, 6632609))
    assert failed_codes(r) == {"V002"}
    msg = fails(r)[("SP-001", "V002")][0]
    assert "not a md-words-v1 chunk id" in msg and "the quote occurs in chunk ley-a#0" in msg
    # an index that md-words-v1 never made for this document (e.g. a chunker with smaller windows)
    r = fx.run(_chunk(0, "ley-a#7", 7))
    assert failed_codes(r) == {"V002"}
    assert "document ley-a has 3 chunks under md-words-v1" in fails(r)[("SP-001", "V002")][0]
    # V001 is not checked for a chunk that does not exist (never passed)
    v001 = next(x for x in r.records[0].rules if x.code == "V001")
    assert v001.status == "not_checked"


def test_v002_chunk_of_another_document_fails(fx):
    r = fx.run(_chunk(0, "dof-1#0"))
    assert "belongs to document dof-1, not to ley-a" in fails(r)[("SP-001", "V002")][0]


def test_v002_chunk_index_must_agree(fx):
    r = fx.run(_chunk(0, "ley-a#0", 1))
    assert failed_codes(r) == {"V002"}
    assert "chunk_index 1 disagrees with chunk ley-a#0 (index 0)" in fails(r)[("SP-001", "V002")][0]


# ----------------------------------------------------------------------------------------------- V003 documents


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("relpath", "leyes/otra.md", "differs from the corpus path"),
        ("publication_date", "2020-01-16", "differs from the corpus date"),
    ],
)
def test_v003_relpath_and_date_must_agree(fx, field, value, needle):
    r = fx.run(lambda rs: rs[0]["gold_documents"][0].update({field: value}))
    assert failed_codes(r) == {"V003"} and needle in fails(r)[("SP-001", "V003")][0]


def test_v003_section_where_the_corpus_has_one(fx):
    # dof-1 has edition MAT; dof-2 has section VES
    r = fx.run(lambda rs: rs[1]["gold_documents"][0].update(section="VES"))
    assert failed_codes(r) == {"V003"} and "corpus section 'MAT'" in fails(r)[("LI-001", "V003")][0]
    r = fx.run(lambda rs: rs[5]["gold_documents"][0].update(section=None))
    assert failed_codes(r) == {"V003"}
    # the law has no section in the corpus: not compared
    r = fx.run(lambda rs: rs[0]["gold_documents"][0].update(section="MAT"))
    assert r.exit_code == 0


def test_v003_unknown_document_fails_and_the_dependent_rules_are_not_checked(fx):
    r = fx.run(lambda rs: rs[0]["gold_documents"][0].update(document_id="ley-z"))
    assert failed_codes(r) == {"V003"}
    st_ = {x.code: x.status for x in r.records[0].rules}
    assert st_["V001"] == st_["V002"] == st_["V004"] == "not_checked"


def test_v003_alternatives_are_checked(fx):
    def m(rs):
        rs[0]["gold_documents"][0]["alternatives"] = [{"document_id": "dof-1", "relpath": "x.md"}]

    r = fx.run(m)
    assert fails(r) == {("SP-001", "V003"): ["relpath 'x.md' differs from the corpus path 'dof/2021-03-01/MAT_001.md'"]}
    r = fx.run(lambda rs: rs[0]["gold_documents"][0].update(alternatives=[{"document_id": "dof-1"}]))
    assert r.exit_code == 0


# ----------------------------------------------------------------------------------------------- V004 heading path


def test_v004_heading_path(fx):
    r = fx.run(lambda rs: rs[0]["gold_documents"][0].update(heading_path=["Ley A", "Capítulo II"]))
    assert failed_codes(r) == {"V004"}
    r = fx.run(lambda rs: rs[0]["gold_documents"][0].pop("heading_path"))
    assert r.exit_code == 0  # optional


# ----------------------------------------------------------------------------------------------- V005 corpus


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("corpus_hash", "0" * 64),
        ("corpus_version", "corpus@000000000000"),
        ("corpus_documents", 4),
        ("corpus_date_min", "2020-01-14"),
        ("corpus_date_max", "2023-01-01"),
    ],
)
def test_v005_manifest_corpus_identity(fx, key, value):
    r = fx.run(manifest=lambda m: m.update({key: value}))
    assert ("dataset", "V005") in fails(r)
    assert r.exit_code == 1


def test_v005_a_different_corpus_is_a_rule_failure(fx, tmp_path):
    other = write_corpus(tmp_path / "other", {**TEXTS, "dof-2": DOF_2.replace("Único.", "Primero.")})
    ds = fx.build()
    r = validate(ds, corpus_dir=other, contract=fx.contract)
    assert r.exit_code == 1 and ("dataset", "V005") in fails(r)
    assert "hashes to" in fails(r)[("dataset", "V005")][0]


def test_v005_corpus_named_without_a_hash(fx):
    def m(man):
        man.pop("corpus_hash")
        man["corpus_version"] = "dof-full-v1"

    assert ("dataset", "V005") in fails(fx.run(manifest=m))


# ----------------------------------------------------------------------------------------------- contract rules


def test_v010_and_v011_counts(fx):
    r = fx.run(lambda rs: rs.pop(), manifest=lambda m: m.pop("total_questions"))
    assert failed_codes(r) == {"V010", "V011", "V015"}
    assert "6 questions; the contract requires 7" in fails(r)[("dataset", "V010")][0]
    assert fails(r)[("dataset", "V011")] == ["category negative_false_premise: 0 questions; the contract requires 1"]


def test_v011_category_count(fx):
    def m(rs):
        rs[1].update(category="single_passage", id="SP-002")

    r = fx.run(m)
    assert failed_codes(r) == {"V011", "V015"}
    assert len(fails(r)[("dataset", "V011")]) == 2


def test_v012_category_allowed(fx):
    r = fx.run(lambda rs: rs[0].update(category="bogus"), manifest=lambda m: m.pop("categories"))
    assert ("SP-001", "V012") in fails(r)
    v014 = next(x for x in r.records[0].rules if x.code == "V014")
    assert v014.status == "not_checked"


def test_v013_required_fields(fx):
    r = fx.run(lambda rs: rs[2]["gold_documents"][0].update(role=""))
    assert fails(r) == {("TE-001", "V013"): ["required field role is missing or empty"]}
    fx.contract.write_text(contract_text(required_fields=["id", "split"]))
    r = fx.run(contract=fx.contract)
    assert failed_codes(r) == {"V013"} and len(r.failures()) == 7
    r = fx.run(lambda rs: [x.update(split="dev") for x in rs], contract=fx.contract)
    assert r.exit_code == 0


def test_v014_id_prefix(fx):
    r = fx.run(lambda rs: rs[3].update(id="SP-009"))
    assert fails(r) == {("SP-009", "V014"): ["id 'SP-009' does not start with 'CR-' (category cross_reference)"]}


def test_v015_manifest_consistency(fx, tmp_path):
    r = fx.run(manifest=lambda m: m.update(total_questions=8, records_sha256="f" * 64))
    msgs = fails(r)[("dataset", "V015")]
    assert len(msgs) == 2 and "total_questions 8" in msgs[0] and "records_sha256" in msgs[1]
    ds = fx.build()
    from harness.io import sha256_file

    man = json.loads((ds / "tiny.meta.json").read_text())
    man["records_sha256"] = sha256_file(ds / "tiny.jsonl")
    (ds / "tiny.meta.json").write_text(json.dumps(man))
    assert validate(ds, corpus_dir=fx.corpus, contract=fx.contract).exit_code == 0


def test_v016_and_v017_splits(fx):
    fx.contract.write_text(contract_text(per_split={"dev": 4, "test": 3}, split_grouping=True))
    r = fx.run(contract=fx.contract)
    assert failed_codes(r) == {"V016"}  # no splits at all

    # SP-001 and CR-001 share ley-a; LI-001, TE-001, MD-001 share dof-1; MD-001, MO-001, NE-001 share dof-2
    def good(rs):
        for x in rs:
            x["split"] = "dev" if x["id"] in ("SP-001", "CR-001") else "test"

    fx.contract.write_text(contract_text(per_split={"dev": 2, "test": 5}, split_grouping=True))
    assert fx.run(good, contract=fx.contract).exit_code == 0

    def bad(rs):
        good(rs)
        rs[0]["split"], rs[1]["split"] = "test", "dev"  # SP-001/CR-001 and LI-001/TE-001 now split up

    r = fx.run(bad, contract=fx.contract)
    assert failed_codes(r) == {"V017"}
    msgs = fails(r)[("dataset", "V017")]
    assert msgs[0] == "gold document dof-1 is shared across splits (dev: LI-001; test: TE-001, MD-001)"


# ----------------------------------------------------------------------------------------------- record rules


def test_v020_duplicate_ids(fx):
    r = fx.run(lambda rs: rs[1].update(id="SP-001"))
    f = fails(r)
    assert failed_codes(r) == {"V014", "V020"}
    assert f[("SP-001", "V020")] == ["id 'SP-001' is also used at line 2", "id 'SP-001' is also used at line 1"]


def test_v021_duplicate_questions_after_normalisation(fx):
    r = fx.run(lambda rs: rs[1].update(question="  ¿qué CARÁCTER tiene la  **Ley A** ? "))
    assert failed_codes(r) == {"V021"}
    assert fails(r)[("LI-001", "V021")] == ["the same question (after normalisation) is asked by SP-001 (line 1)"]


def test_v030_multi_document(fx):
    r = fx.run(lambda rs: rs[4].update(required_hops=1))
    assert fails(r) == {("MD-001", "V030"): ["multi_document question with required_hops 1"]}
    r = fx.run(lambda rs: rs[4]["gold_documents"].pop())
    assert fails(r) == {("MD-001", "V030"): ["multi_document question with 1 gold document(s)"]}


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda r: r.update(answerability="answerable", unanswerable_reason=None), "negative_false_premise questions"),
        (lambda r: r.update(reference_answer="Reformó el artículo 76."), "does not correct the premise"),
        (lambda r: r.update(reference_answer=" "), "without a reference answer"),
        (lambda r: r.update(unanswerable_reason=None), "without an unanswerable_reason"),
        (lambda r: r["gold_documents"][0].update(role="answer"), "no gold document with a refuting role"),
        (lambda r: r["gold_documents"][0].update(evidence=[], grade=1), "the refuting gold document has no quote"),
    ],
)
def test_v031_false_premise(fx, mutate, needle):
    r = fx.run(lambda rs: mutate(rs[6]))
    msgs = fails(r)[("NE-001", "V031")]
    assert any(needle in m for m in msgs), msgs


def test_v031_answerable_questions_have_no_reason_and_no_refutation(fx):
    r = fx.run(lambda rs: rs[0].update(unanswerable_reason="wrong_date"))
    assert fails(r) == {("SP-001", "V031"): ["answerable question with unanswerable_reason 'wrong_date'"]}
    r = fx.run(lambda rs: rs[0]["gold_documents"][0].update(role="premise_refutation"))
    assert failed_codes(r) == {"V031"}


def test_v032_as_of_date(fx):
    r = fx.run(lambda rs: rs[4].update(as_of="2022-05-09"))
    assert fails(r) == {
        ("MD-001", "V032"): ["as_of 2022-05-09 is earlier than gold document dof-2's publication_date 2022-05-10"]
    }
    assert fx.run(lambda rs: rs[4].update(as_of="2022-05-10")).exit_code == 0
    r = fx.run(lambda rs: rs[0]["gold_documents"][0].update(publication_date="15/01/2020"), corpus=False)
    assert failed_codes(r) == {"V032"}


def test_v033_evidence_present(fx):
    r = fx.run(lambda rs: rs[0]["gold_documents"][0].update(evidence=[]))
    assert fails(r) == {("SP-001", "V033"): ["required gold document ley-a has no evidence"]}
    assert fx.run(lambda rs: rs[4]["gold_documents"][1].update(evidence=[], grade=1)).exit_code == 0
    r = fx.run(lambda rs: rs[4]["gold_documents"].append(copy.deepcopy(rs[4]["gold_documents"][0])))
    assert ("MD-001", "V033") in fails(r)
    r = fx.run(
        lambda rs: rs[0]["gold_documents"][0]["evidence"].append(dict(rs[0]["gold_documents"][0]["evidence"][0]))
    )
    assert fails(r) == {("SP-001", "V033"): ["the same chunk and quote are cited twice"]}
    r = fx.run(_quote(0, "** __ "))
    assert failed_codes(r) == {"V001", "V033"}


# ----------------------------------------------------------------------------------------------- unusable input


def _one_line(exc: HarnessInputError) -> str:
    msg = str(exc)
    assert "\n" not in msg and exc.exit_code == 2
    return msg


def test_truncated_json_is_exit_2_naming_file_and_line(fx):
    ds = fx.build()
    p = ds / "tiny.jsonl"
    p.write_bytes(p.read_bytes()[:-40])
    with pytest.raises(HarnessInputError) as ei:
        validate(ds, contract=fx.contract)
    assert _one_line(ei.value).startswith(f"{p}:7: malformed JSON")


def test_schema_violation_is_exit_2_naming_record_and_field(fx):
    # persona is optional in the schema now (a missing one is V013's business); a string where the schema wants an
    # integer is a schema violation (strict types: no coercion)
    ds = fx.build(lambda rs: rs[2].update(required_hops="1"))
    with pytest.raises(HarnessInputError) as ei:
        validate(ds, contract=fx.contract)
    assert _one_line(ei.value) == (
        f'{ds / "tiny.jsonl"}:3: record TE-001: field required_hops: expected a valid integer, got "1"'
    )


def test_missing_contract_is_exit_2_naming_file_and_field(fx, tmp_path):
    ds = fx.build()
    (tmp_path / "empty").mkdir()
    with pytest.raises(HarnessInputError) as ei:
        validate(ds, contract=tmp_path / "empty")
    msg = _one_line(ei.value)
    assert "tiny-eval-v1.toml: contract not found" in msg and "field name='Tiny Eval'" in msg
    with pytest.raises(HarnessInputError) as ei:
        validate(ds, contract=tmp_path / "nope.toml")
    assert _one_line(ei.value).startswith(f"{tmp_path / 'nope.toml'}: contract not found")


def test_contract_is_found_beside_the_gold_set_whatever_the_working_directory(fx, tmp_path, monkeypatch):
    """Without --contract: the validators/ folder of the gold set's nearest ancestor, then ./validators, then the
    package's; the error lists every folder searched."""
    from harness.validate import contract_search_dirs

    ds = fx.build()  # <tmp>/ds1, contract in <tmp>/validators
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert contract_search_dirs(ds)[0] == fx.validators.resolve()
    r = validate(ds)
    assert r.exit_code == 0 and r.contract == str(fx.contract.resolve())

    # a gold set with no validators/ above it falls back to ./validators
    other = tmp_path / "other"
    other.mkdir()
    moved = Path(shutil.copytree(ds, other / "lonely"))
    (elsewhere / "validators").mkdir()
    shutil.copy(fx.contract, elsewhere / "validators" / fx.contract.name)
    shutil.rmtree(fx.validators)
    assert not any((a / "validators").is_dir() for a in moved.resolve().parents)
    assert validate(moved).contract == str((elsewhere / "validators" / fx.contract.name).resolve())
    (elsewhere / "validators" / fx.contract.name).unlink()
    with pytest.raises(HarnessInputError) as ei:
        validate(moved)
    msg = _one_line(ei.value)
    assert msg.startswith("tiny-eval-v1.toml: contract not found in ") and str(elsewhere / "validators") in msg
    assert msg.endswith("pass --contract")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("dataset = 'Tiny Eval'\nmajor = 1\n", "field total_questions: missing"),
        ("total_question = 7\n" + contract_text(), "field total_question: unknown contract key"),
        (contract_text(dataset="Other"), "field dataset: 'Other' is not the manifest name 'Tiny Eval'"),
        (contract_text(major=2), "field major: contract for v2"),
        (contract_text(total_questions=8), "field per_category: counts sum to 7, total_questions is 8"),
        (contract_text(required_fields=["nope"]), "field required_fields: 'nope' is not a gold-record field"),
        ("dataset = [", "malformed TOML"),
    ],
)
def test_malformed_contract_is_exit_2(fx, text, needle):
    fx.contract.write_text(text)
    with pytest.raises(HarnessInputError) as ei:
        fx.run(contract=fx.contract)
    assert needle in _one_line(ei.value)


def test_corpus_directory_absent_is_exit_2(fx, tmp_path):
    ds = fx.build()
    with pytest.raises(HarnessInputError) as ei:
        validate(ds, corpus_dir=tmp_path / "no-corpus", contract=fx.contract)
    assert _one_line(ei.value) == f"{tmp_path / 'no-corpus'}: field corpus_dir: corpus directory not found"


def test_broken_corpus_metadata_is_exit_2(fx, tmp_path):
    bad = write_corpus(tmp_path / "bad")
    (bad / "metadata.jsonl").write_text('{"doc_id": "x", "path": "missing.md"}\n')
    with pytest.raises(HarnessInputError) as ei:
        validate(fx.build(), corpus_dir=bad, contract=fx.contract)
    assert "field path" in _one_line(ei.value)


def test_unknown_chunker_with_corpus_is_exit_2(fx):
    with pytest.raises(HarnessInputError) as ei:
        fx.run(manifest=lambda m: m.update(chunker_version="dof-chunker-v1"))
    msg = _one_line(ei.value)
    assert "tiny.meta.json: field chunker_version: unknown chunker 'dof-chunker-v1'" in msg


def test_missing_dataset_and_manifest_are_exit_2(fx, tmp_path):
    with pytest.raises(HarnessInputError):
        validate(tmp_path / "nothing", contract=fx.contract)
    ds = fx.build()
    (ds / "tiny.meta.json").unlink()
    with pytest.raises(HarnessInputError) as ei:
        validate(ds, contract=fx.contract)
    assert "no *.meta.json manifest" in _one_line(ei.value)


def test_validation_never_modifies_input(fx):
    ds = fx.build()
    before = {p: p.read_bytes() for p in [*ds.rglob("*"), *fx.corpus.rglob("*")] if p.is_file()}
    fx_report = validate(ds, corpus_dir=fx.corpus, contract=fx.contract)
    assert fx_report.exit_code == 0
    after = {p: p.read_bytes() for p in [*ds.rglob("*"), *fx.corpus.rglob("*")] if p.is_file()}
    assert before == after


# ----------------------------------------------------------------------------------------------- outputs


def test_json_report_is_deterministic_and_complete(fx):
    ds = fx.build(_quote(0, "Esta ley es de orden público sin excepción alguna."))
    a = validate(ds, corpus_dir=fx.corpus, contract=fx.contract)
    b = validate(ds, corpus_dir=fx.corpus, contract=fx.contract)
    assert a.to_json() == b.to_json()
    d = json.loads(a.to_json())
    assert d["status"] == "fail" and d["exit_code"] == 1
    assert [r["code"] for r in d["rules"]] == [x.code for x in RULE_INFO]
    assert d["counts"]["per_category"] == {c: 1 for c in CATS}
    sp = d["records"][0]
    assert sp["id"] == "SP-001" and sp["line"] == 1 and sp["status"] == "fail"
    v001 = next(x for x in sp["rules"] if x["code"] == "V001")
    assert v001["findings"][0]["details"]["kind"] == "not_contiguous"


def test_rich_rendering(fx):
    r = fx.run(_quote(0, "texto98 texto99 texto100 texto101"))
    console = Console(record=True, width=200)
    render(r, console)
    text = console.export_text()
    assert "INVALID" in text and "V001 SP-001 (line 1) gold_documents[0].evidence[0].quote" in text
    assert "spans chunks ley-a#0 and ley-a#1" in text
    console = Console(record=True, width=200)
    render(fx.run(corpus=False), console)
    text = console.export_text()
    assert "VALID (corpus rules NOT checked): exit 0" in text and "not checked: corpus unavailable" in text
    assert "warning: V001, V002, V003, V004, V005 corpus rules not checked (no --corpus)" in text


# ----------------------------------------------------------------------------------------------- contracts


def test_contract_slug_rule():
    assert contract_slug("DOF-RAG Evidence Evaluation v4", "4.0.0-pilot") == "dof-rag-evidence-evaluation-v4"
    assert contract_slug("mx-leyes-dof-eval", "1.0.0") == "mx-leyes-dof-eval-v1"
    assert contract_slug("Evaluación Año  2026", "v2.3") == "evaluacion-ano-2026-v2"
    with pytest.raises(HarnessInputError, match="field version"):
        contract_slug("x", "pilot")


def test_repository_contracts_load():
    for p in sorted((ROOT / "validators").glob("*.toml")):
        c = load_contract(p)
        assert contract_slug(c.dataset, str(c.major)) == p.stem
        assert sum(c.per_category.values()) == c.total_questions


# ----------------------------------------------------------------------------------------------- quote matcher


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_contiguous_word_span_passes_and_dropping_an_inner_word_fails(tmp_path_factory, data):
    corpus = write_corpus(tmp_path_factory.mktemp("c"))
    view = open_corpus(corpus, "md-words-v1")
    doc = view.doc("ley-a")
    i = data.draw(st.integers(0, len(doc.chunks) - 1))
    words = doc.chunks[i].text.split()
    a = data.draw(st.integers(0, len(words) - 1))
    b = data.draw(st.integers(a + 1, len(words)))
    quote = " ".join(words[a:b])
    assert check_quote(doc, i, quote, view.chunker.normalize).ok
    if b - a >= 3:
        k = data.draw(st.integers(a + 1, b - 2))
        glued = " ".join(words[a:k] + words[k + 1 : b])
        res = check_quote(doc, i, glued, view.chunker.normalize)
        assert not res.ok and res.kind == "not_contiguous"


def test_closest_match_reports_the_first_divergence():
    cm = closest_match("a b c x e", "z a b c d e f")
    assert cm["closest"] == "a b c d e" and cm["diverges_at_word"] == 3 and cm["omitted"] == []
    assert closest_match("a b e f", "a b c d e f")["omitted"] == ["c d"]
    assert closest_match("q r", "a b")["closest"] == ""
    # glued quote whose second run is the longer one: the closest match puts the omitted words back
    cm = closest_match("a b g h i j k l", "z a b c d e f g h i j k l m")
    assert cm["closest"] == "a b c d e f g h i j k l" and cm["diverges_at_word"] == 2
    assert cm["omitted"] == ["c d e f"] and cm["quote_from_divergence"].startswith("g h")
    assert cm["chunk_from_divergence"].startswith("c d e f g")


# ----------------------------------------------------------------------------------------------- published and real


@pytest.mark.skipif(not PUBLISHED.is_dir(), reason="published eval v4 reference not present in ../shared/reference")
def test_published_v4_passes_every_rule_that_does_not_need_its_corpus():
    r = validate(PUBLISHED)
    assert r.exit_code == 0
    assert Path(r.contract).name == "dof-rag-evidence-evaluation-v4.toml"
    for code, s in r.rule_summary().items():
        if code in CORPUS_CODES:
            assert s["pass"] == 0 and s["fail"] == 0, code
        else:
            assert s["fail"] == 0 and s["not_checked"] == 0, (code, s)
    c = r.counts
    assert c.questions == 42 and set(c.per_category.values()) == {6} and len(c.per_category) == 7
    assert c.gold_documents == 14 and c.evidence_chunks == 31
    assert r.dataset["records_sha256"] == "33235d4d6fb38824be7b6fd8549acc89b5273f51e4ab4f906ff59c4a350e5e91"


@pytest.mark.skipif(not PUBLISHED.is_dir(), reason="published eval v4 reference not present in ../shared/reference")
def test_published_v4_with_a_corpus_needs_its_chunker(fx):
    with pytest.raises(HarnessInputError, match="unknown chunker 'dof-chunker-v1'"):
        validate(PUBLISHED, corpus_dir=fx.corpus)


@pytest.mark.realcorpus
@pytest.mark.skipif(not REAL_CORPUS.is_dir(), reason="real corpus ../shared/corpus/mx-leyes-dof absent")
def test_real_goldset_validates_against_the_real_corpus():
    """Correctness only: the speed target (< 10 s) is measured by ``benchmarks/bench_run.py``, not asserted here."""
    if not REAL_DATASET.is_dir():
        pytest.skip(f"{REAL_DATASET.relative_to(ROOT)} does not exist yet (issue 4)")
    t0 = time.perf_counter()
    r = validate(REAL_DATASET, corpus_dir=REAL_CORPUS)
    elapsed = time.perf_counter() - t0
    print(f"validated {r.counts.questions} questions against {r.corpus['documents']} documents in {elapsed:.2f} s")
    assert r.exit_code == 0, [(s, c, f.where, f.message) for s, c, f in r.failures()][:20]
    assert r.counts.questions == 42 and r.corpus["corpus_id"].startswith("mx-leyes-dof@")


# ----------------------------------------------------------------------------------------------- the rule registry


def test_rule_registry_codes_names_scopes_in_code_order():
    """The split into rules/{corpus,contract,records}.py kept every code, name, scope and corpus need, in order."""
    import harness.validate.rules as rules_pkg
    from harness.validate.rules import RULES, rules_table

    assert [(i.code, i.name, i.scope, i.needs_corpus) for i in RULE_INFO] == [
        ("V001", "quote-contiguous", "record", True),
        ("V002", "chunk-exists", "record", True),
        ("V003", "document-metadata", "record", True),
        ("V004", "heading-path", "record", True),
        ("V005", "corpus-identity", "dataset", True),
        ("V010", "question-count", "dataset", False),
        ("V011", "category-count", "dataset", False),
        ("V012", "category-allowed", "record", False),
        ("V013", "required-fields", "record", False),
        ("V014", "id-prefix", "record", False),
        ("V015", "manifest-consistency", "dataset", False),
        ("V016", "split-count", "dataset", False),
        ("V017", "split-grouping", "dataset", False),
        ("V020", "unique-id", "record", False),
        ("V021", "unique-question", "record", False),
        ("V030", "multi-document-hops", "record", False),
        ("V031", "false-premise", "record", False),
        ("V032", "as-of-date", "record", False),
        ("V033", "evidence-present", "record", False),
        ("V034", "answer-figures-quoted", "record", False),
        ("V035", "alternatives-consistent", "record", False),
    ]
    assert RULE_INFO[0].description == "each quote is one contiguous span of its cited chunk (normalised)"
    modules = {code: fn.__module__.rsplit(".", 1)[1] for code, (_, fn) in RULES.items()}
    assert {m: sorted(c for c, mm in modules.items() if mm == m) for m in set(modules.values())} == {
        "corpus": ["V001", "V002", "V003", "V004", "V005"],
        "contract": ["V010", "V011", "V012", "V013", "V014", "V015", "V016", "V017"],
        "records": ["V020", "V021", "V030", "V031", "V032", "V033", "V034", "V035"],
    }
    table = rules_table()
    assert all(f"{i.code}  {i.name}" in table for i in RULE_INFO) and table in (rules_pkg.__doc__ or "")


def test_rule_decorator_takes_the_description_from_the_docstring_and_refuses_bad_declarations():
    from harness.validate.rules.base import rule, rule_info

    @rule("V099", "toy", scope="record", needs_corpus=False)
    def toy(ctx, i, rec):
        """a toy rule

        Checks: nothing.
        """
        return []

    info = rule_info(toy)
    assert info is not None and (info.code, info.name, info.description) == ("V099", "toy", "a toy rule")
    assert rule_info(len) is None
    with pytest.raises(ValueError, match="three digits"):
        rule("X1", "bad", scope="record", needs_corpus=False)
    with pytest.raises(ValueError, match="scope"):
        rule("V098", "bad", scope="file", needs_corpus=False)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="docstring"):
        rule("V097", "bad", scope="record", needs_corpus=False)(lambda ctx, i, rec: [])
