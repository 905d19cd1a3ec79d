"""Issue 18 item 6: a long quote costs ``validate`` bounded work and bounded output per finding.

Before the fix a 20 KB quote took 25 s, 100 KB over 300 s and 20 MB was killed after 740 s: the finding carried the
quote's first "words" whole (an unbroken 20 MB word), and rich's wrapping of one long unbroken line grows faster than
linearly (5,000 / 10,000 / 20,000 characters: 0.5 / 2.2 / 9.2 s, measured). The caps are asserted here on a 20 MB
quote; the time is measured by ``benchmarks/bench_validate_quotes.py`` (no timed unit test).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from conftest import tiny_records, write_tiny_corpus, write_tiny_goldset
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from harness.corpus.quotes import COMPARED_CHARS, EXCERPT_CHARS, closest_match, excerpt
from harness.report.formats import Result, emit
from harness.validate import validate

CONTRACT = """contract_format = 1
dataset = "tiny"
major = 1
total_questions = 3
categories = ["single_passage", "multi_document"]
required_fields = ["id"]
required_gold_document_fields = ["document_id"]
refutation_roles = ["premise_refutation"]
premise_correction_markers = ["no"]

[per_category]
single_passage = 2
multi_document = 1

[id_prefixes]
single_passage = "SP-"
multi_document = "MD-"
"""

MB = 1_000_000


def _long_quote() -> str:
    """20 MB: two words of the cited chunk, one unbroken 10 MB word, then words of the chunk repeated."""
    tail = " ".join(["La presente ley regula la explotación, uso y aprovechamiento de las aguas"] * (10 * MB // 74 + 1))
    return "La presente " + "x" * (10 * MB) + " " + tail


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


def _rendered(report, fmt: str, tmp_path: Path) -> str:
    out = tmp_path / f"report.{fmt}"
    emit(Result("validation", report), fmt, out, console=Console(file=io.StringIO()))
    return out.read_text("utf-8")


def _validate(tmp_path: Path, quote: str | None):
    corpus = write_tiny_corpus(tmp_path / "corpus")
    recs = tiny_records()
    if quote is not None:
        recs[0]["gold_documents"][0]["evidence"][0]["quote"] = quote
    gs = write_tiny_goldset(tmp_path / "goldset", corpus, recs)
    (tmp_path / "tiny-v1.toml").write_text(CONTRACT, "utf-8")
    return validate(gs, corpus_dir=corpus, contract=tmp_path / "tiny-v1.toml")


def test_a_20_mb_quote_gives_a_bounded_finding_in_every_output_format(tmp_path: Path):
    quote = _long_quote()
    assert len(quote) > 20 * MB
    normal = _validate(tmp_path / "normal", None)
    assert normal.valid
    report = _validate(tmp_path / "long", quote)
    (scope, code, finding), *others = report.failures()
    assert (scope, code, others) == ("SP-001", "V001", [])
    d = finding.details
    assert d["kind"] == "not_contiguous"
    # the full length is still reported, and what was aligned is bounded by the chunk plus COMPARED_CHARS
    assert d["quote_chars"] == len(quote)
    assert d["compared_chars"] <= 201 + COMPARED_CHARS  # 201: the cited chunk's normalised length
    assert d["diverges_at_word"] == 2  # the 10 MB word
    assert f"a quote of {len(quote)} characters" in finding.message
    for s in _strings(d):
        assert len(s) <= EXCERPT_CHARS, (len(s), s[:80])
    assert d["quote_from_divergence"].startswith("xxx") and d["quote_from_divergence"].endswith("…")
    assert len(finding.message) < 4 * EXCERPT_CHARS
    # every output format: the report of the long quote is the size of a normal report plus the finding's excerpts
    for fmt in ("table", "json", "markdown"):
        base = len(_rendered(normal, fmt, tmp_path))
        size = len(_rendered(report, fmt, tmp_path))
        assert size < base + 8 * EXCERPT_CHARS, (fmt, base, size)
    data = json.loads(_rendered(report, "json", tmp_path))["data"]
    v001 = next(r for r in data["records"][0]["rules"] if r["code"] == "V001")
    assert v001["findings"][0]["details"]["quote_chars"] == len(quote)


def test_a_long_quote_still_names_its_divergence_inside_the_chunk():
    """A quote longer than COMPARED_CHARS that diverges late (word 150 of 160) is still diagnosed there: the alignment
    compares up to the chunk's length plus COMPARED_CHARS."""
    chunk = " ".join(f"w{i:03d}" for i in range(200))  # 999 characters
    words = [f"w{i:03d}" for i in range(20, 180)]
    words[150] = "typo"
    cm = closest_match(" ".join(words), chunk)
    assert cm["quote_chars"] == cm["compared_chars"] == 799
    assert cm["diverges_at_word"] == 150 and cm["quote_from_divergence"].startswith("typo w171")
    assert cm["chunk_from_divergence"].startswith("w170 w171")


def test_excerpt_caps_at_the_limit():
    assert excerpt("abc", 3) == "abc"
    assert excerpt("abcd", 3) == "ab…" and len(excerpt("x" * 10_000)) == EXCERPT_CHARS


@settings(max_examples=60, deadline=None)
@given(
    quote=st.lists(st.sampled_from(["a", "b", "c", "d" * 700, "e f"]), min_size=1, max_size=40).map(" ".join),
    chunk=st.lists(st.sampled_from(["a", "b", "c", "g" * 300]), min_size=0, max_size=30).map(" ".join),
)
def test_closest_match_strings_and_work_are_bounded(quote: str, chunk: str):
    cm = closest_match(quote, chunk)
    assert cm["quote_chars"] == len(quote)
    assert cm["compared_chars"] <= min(len(quote), len(chunk) + COMPARED_CHARS)
    assert all(len(s) <= EXCERPT_CHARS for s in _strings(cm))
    assert 0.0 <= cm["similarity"] <= 1.0
