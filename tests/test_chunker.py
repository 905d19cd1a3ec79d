"""Golden fixture for the frozen chunker md-words-v1 and its quote normaliser."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.corpus.chunker import MdWordsChunker, decode_source, get_chunker, normalize_text
from harness.errors import HarnessInputError

FIX = Path(__file__).parent / "fixtures" / "chunker"


def test_golden_fixture_md_words_v1():
    expected = json.loads((FIX / "md-words-v1.expected.json").read_text(encoding="utf-8"))
    src = decode_source((FIX / "md-words-v1.input.md").read_bytes())
    assert len(src) == expected["source_nfc_length"]
    chunks = get_chunker("md-words-v1").chunk(expected["doc_id"], src)
    got = [
        dict(
            chunk_id=c.chunk_id,
            index=c.index,
            heading_path=list(c.heading_path),
            char_start=c.char_start,
            char_end=c.char_end,
            n_words=c.n_words,
            first=c.text.split()[0],
            last=c.text.split()[-1],
        )
        for c in chunks
    ]
    assert got == expected["chunks"]
    for c in chunks:
        assert src[c.char_start : c.char_end] == c.text


def test_fixture_properties_spelled_out():
    src = decode_source((FIX / "md-words-v1.input.md").read_bytes())
    chunks = MdWordsChunker().chunk("doc-1", src)
    # BOM dropped, CRLF folded: the preamble starts at offset 0 and has no heading path.
    assert chunks[0].char_start == 0 and chunks[0].heading_path == ()
    # 250 words -> 100, 100, 50 (a 50-word tail is long enough to stand alone).
    assert [c.n_words for c in chunks[1:4]] == [100, 100, 50]
    # 215 words -> 100 + (100 + 15 merged): a tail under 20 words joins the previous window.
    assert [c.n_words for c in chunks[4:6]] == [100, 115]
    # a 20-word tail is not merged (the rule is "fewer than 20").
    assert [c.n_words for c in chunks[8:10]] == [100, 20]
    # "#sin espacio" and a 4-space indented "#" are text, not headings.
    assert chunks[6].text.startswith("#sin espacio") and "# cuatro espacios" in chunks[6].text
    # NFD input is composed (NFC) and a closing "#" run is dropped from the heading text.
    assert chunks[7].text.startswith("Caf\u00e9") and chunks[1].heading_path == ("Ley de Prueba",)
    # a level-1 heading resets the path; a level-4 heading below it nests directly.
    assert chunks[10].heading_path == ("Otra ley", "Sección profunda")
    assert chunks[10].n_words == 19  # a short section is one chunk on its own


def test_windows_never_cross_headings():
    text = "# A\n" + " ".join(["x"] * 30) + "\n# B\n" + " ".join(["y"] * 5)
    chunks = MdWordsChunker().chunk("d", text)
    assert [c.n_words for c in chunks] == [30, 5]
    assert [c.heading_path for c in chunks] == [("A",), ("B",)]


def test_empty_and_heading_only_documents_have_no_chunks():
    assert MdWordsChunker().chunk("d", "") == []
    assert MdWordsChunker().chunk("d", "# Solo\n\n## encabezados\n") == []


def test_non_utf8_source_is_rejected_with_file_name():
    with pytest.raises(HarnessInputError, match=r"bad\.md: not valid UTF-8 at byte 3"):
        decode_source(b"abc\xff", origin="bad.md")


def test_unknown_chunker():
    with pytest.raises(HarnessInputError, match="unknown chunker 'md-words-v0'"):
        get_chunker("md-words-v0")


@pytest.mark.parametrize(
    ("raw", "norm"),
    [
        ("“Artículo 5.-” dice — algo", '"Artículo 5.-" dice - algo'),
        ("**Artículo 5o.-** La  presente\n\nLey", "Artículo 5o.- La presente Ley"),
        ("‘uno’ – dos", "'uno' - dos"),
        ("_cursiva_ y `code`", "cursiva y code"),
        ('**\\"**EL CONGRESO', '"EL CONGRESO'),
        ("Cafe\u0301\u00a0 x", "Caf\u00e9 x"),
    ],
)
def test_normalizer_examples(raw, norm):
    assert normalize_text(raw) == norm


@given(st.text())
def test_normalizer_is_idempotent(s):
    once = normalize_text(s)
    assert normalize_text(once) == once


@given(st.lists(st.sampled_from(["w", "palabra", "#", "## H", "\n", " ", "\n\n", "x" * 3]), max_size=400))
def test_chunks_partition_words_in_order(parts):
    text = "".join(parts)
    chunks = MdWordsChunker().chunk("d", text)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert a.char_end <= b.char_start
    for c in chunks:
        assert c.text == text[c.char_start : c.char_end]
        assert c.n_words == len(c.text.split()) and 1 <= c.n_words <= 119
