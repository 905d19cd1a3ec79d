"""md-legal-v1: the docstring's definitions, the golden fixture (synthetic rules + real documents by sha256),
property tests of its invariants against an independent reading of the rules, and idempotent ingest.

The fixture ``tests/fixtures/chunker/md-legal-v1.expected.json`` stores only expected chunks (ids, offsets, heading
paths, word counts, first and last words) and, for real documents, the sha256 of each source file, which is read
from ``../shared/corpus/mx-leyes-dof`` at test time. Freeze it once with ``python tests/test_chunker_legal.py
--freeze`` (refuses to overwrite: a change of behaviour needs a new chunker id, not a new fixture).
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from harness.cli import app
from harness.corpus import legal
from harness.corpus.chunker import _HEADING_RE, CHUNKERS, MdWordsChunker, decode_source, get_chunker, normalize_text
from harness.corpus.ingest import ingest
from harness.corpus.legal import ARTICLE_LEVEL, DEFINITIONS, KINDS, START_PATTERNS, MdLegalChunker, classify_line

REPO = Path(__file__).resolve().parents[1]
FIX = Path(__file__).parent / "fixtures" / "chunker"
EXPECTED = FIX / "md-legal-v1.expected.json"
SYNTHETIC = FIX / "md-legal-v1.input.md"
REAL_CORPUS = REPO.parent / "shared" / "corpus" / "mx-leyes-dof"
MAX_WORDS, MIN_WORDS = 250, 40
WORD = re.compile(r"\S+")

# Real documents frozen by the fixture: each collection, small and large, each converter.
REAL_DOCS = (
    "ley-020-19",  # Ley de Amnistía, 526 words: articles 1o-4o, ## TRANSITORIOS, **PRIMERO.-**
    "ley-073-lgn",  # Ley de la Guardia Nacional 2025, 14,006 words: fracciones in blockquotes, Bis articles
    "ley-hist-320-lgn-2019",  # superseded 2019 version (antiword): plain "I." fracciones, plain "PRIMERO."
    "dof-20240401-mat-004",  # DOF decree (pymupdf): "Artículo 1." plain, fracciones alone on a line ("I.")
    "dof-20260731-5795159",  # DOF aviso (sidof): "TRANSITORIOS ÚNICO." inline, "SEGUNDO." points
    "dof-20240412-mat-007",  # DOF convenio (docling): cláusulas "PRIMERA.", "DÉCIMA SEXTA."
    "dof-20240412-mat-055",  # DOF avisos judiciales (docling), 3,447 words: no structure, long paragraphs split
    "dof-20240401-mat-045",  # DOF edicto (pymupdf), 176 words
)


def _rows(chunks) -> list[dict]:
    return [
        {
            "chunk_id": c.chunk_id,
            "index": c.index,
            "heading_path": list(c.heading_path),
            "char_start": c.char_start,
            "char_end": c.char_end,
            "n_words": c.n_words,
            "first": c.text.split()[0],
            "last": c.text.split()[-1],
        }
        for c in chunks
    ]


def _real_metadata() -> dict[str, dict]:
    assert REAL_CORPUS.is_dir(), f"real corpus missing at {REAL_CORPUS}: the md-legal-v1 fixture needs it"
    lines = (REAL_CORPUS / "metadata.jsonl").read_text("utf-8").splitlines()
    return {m["doc_id"]: m for m in map(json.loads, filter(None, lines))}


# ---------------------------------------------------------------------------------------------------------------
# The definition in the docstring is the code's definition


def _docstring_definitions() -> dict[str, str]:
    """Parse rule 2's literal block: ``name = value`` lines, deeper-indented lines continue the value."""
    doc = legal.__doc__
    block = doc[doc.index("A test checks this list against the code::") :].split("\n\n")[1]
    out: dict[str, str] = {}
    name = None
    for line in block.splitlines():
        m = re.match(r" {7}(\w+) += (.*)$", line)
        if m:
            name = m.group(1)
            out[name] = m.group(2)
        else:
            out[name] += line.strip()
    return out


def test_docstring_definitions_are_the_code():
    assert _docstring_definitions() == DEFINITIONS
    assert tuple(k for k in _docstring_definitions() if k.islower()) == KINDS
    assert [k for k, _ in START_PATTERNS] == list(KINDS)
    assert {k: p.pattern for k, p in START_PATTERNS} == {k: legal.expand(k) for k in KINDS}
    assert all("{" + n + "}" not in legal.expand(k) for k in KINDS for n in DEFINITIONS)
    assert ARTICLE_LEVEL == {"transitorio", "article", "ordinal"}
    assert MdLegalChunker().params == {"max_words": MAX_WORDS, "min_words": MIN_WORDS}


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("**Artículo 1o.-** Esta Ley", "article"),
        ("**ARTICULO 2o.** Para los efectos", "article"),
        ("**ARTÍCULO 17.-** Los habitantes", "article"),
        ("**Artículo 2 Bis.-** Se", "article"),
        ("**Artículo 1390 Bis 2.-** En el juicio", "article"),
        ("**Artículo 170-B.** (Se deroga).", "article"),
        ("**Artículo 1,099.-** (Se deroga).", "article"),
        ("**Artículo 32 bis 6.** Las", "article"),
        ("**Artículo 26.**", "article"),
        ("**Artículo 1** La presente", "article"),
        ("**Artículo 64**.- (Se deroga).", "article"),
        ("**Artículo** **2.-** El sector", "article"),
        ("**ARTICULO 1°.-** La presente", "article"),
        ("**ARTÍCULO ÚNICO.-** Se reforma", "article"),
        ("**ARTICULO UNICO:** Se reforma", "article"),
        ("**Artículo Decimosexto.** El Congreso", "article"),
        ("ARTÍCULO TRIGÉSIMO CUARTO. El Coordinador", "article"),
        ("ARTÍCULO TERCERO . - El Comité", "article"),
        ("Artículo 20. Para la transmisión", "article"),
        ("> **Artículo 5.-** citado", "article"),
        ("**PRIMERO.-** El presente Decreto", "ordinal"),
        ("**Primero.** El presente", "ordinal"),
        ("**Primero. Vigencia.** El", "ordinal"),
        ("PRIMERO. Es procedente", "ordinal"),
        ("PRIMERO .- Con la presente", "ordinal"),
        ("**DÉCIMO PRIMERO.-** Las", "ordinal"),
        ("Vigésimo Quinto.- Se", "ordinal"),
        ("**ÚNICO. -** El presente", "ordinal"),
        ("**UNICO:** El presente", "ordinal"),
        ("PRIMERA. OBJETO. El", "ordinal"),
        ("DÉCIMA SEXTA. CONFIDENCIALIDAD", "ordinal"),
        ("**I.** Secretaría, la", "fraccion"),
        ("> **XIV.** Documento digital", "fraccion"),
        ("**XIV.-** Documento", "fraccion"),
        ("I. Carrera de Guardia", "fraccion"),
        ("I.", "fraccion"),
        ("III.", "fraccion"),
        ("V.- Representante:", "fraccion"),
        ("> **XLIX.** Mantener", "fraccion"),
        ("L. Publicar trimestralmente", "fraccion"),
        ("XCIX. la última", "fraccion"),
        ("**I.-**Sin espacio", "fraccion"),
        ("## no es encabezado aquí", None),  # the chunker never classifies heading lines; as text it is no start
        ("TRANSITORIOS", "transitorio"),
        ("**TRANSITORIOS:**", "transitorio"),
        ("TRANSITORIOS ÚNICO. El presente Aviso", "transitorio"),
        ("**Disposiciones Transitorias**", "transitorio"),
        ("**ARTICULO TRANSITORIO.-** El", "transitorio"),
        ("ARTICULOS TRANSITORIOS DEL DECRETO", "transitorio"),
        # not starts
        ("*Artículo reformado DOF 14-08-2001*", None),
        ("*Artículo adicionado DOF 07-04-1986. Derogado DOF 06-04-1990*", None),
        ("Artículo declarado inválido por sentencia", None),
        ("Artículo 27 de la Constitución", None),
        ("artículo 5.- en minúsculas", None),
        ("**Artículos Segundo y Tercero.**", None),
        ("C. Juez de Distrito", None),
        ("**C.** Esta Constitución reconoce", None),
        ("**lI.** Autoridad", None),
        ("a) inciso", None),
        ("A. Apartado", None),
        ("II.1. Se reconocen", None),
        ("IIII. no romano", None),
        ("IC. no romano", None),
        ("Tercero especialista: Profesional", None),
        ("TERCERA INTERESADA.", None),
        ("Segundo párrafo del artículo", None),
        ("Primer Convenio Modificatorio", None),
        ("primero. en minúsculas", None),
        ("Transitoriamente, dijo", None),
        ("| **Artículo 5.-** en una tabla |", None),
        ("", None),
    ],
)
def test_classify_line(line, kind):
    assert classify_line(line) == kind
    # the combined alternation gives the kind of the first pattern that matches, in KINDS order
    first = next((k for k, p in START_PATTERNS if p.match(line)), None)
    assert first == kind


def test_registered_without_importing_legal_explicitly():
    code = (
        "from harness.corpus.chunker import get_chunker\n"
        "c = get_chunker('md-legal-v1')\n"
        "print(type(c).__name__, c.chunker_id, c.params['max_words'], c.params['min_words'])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.split() == ["MdLegalChunker", "md-legal-v1", "250", "40"]
    assert isinstance(get_chunker("md-legal-v1"), MdLegalChunker) and "md-words-v1" in CHUNKERS


def test_normaliser_is_md_words_v1s():
    s = "**Artículo 5o.-** “La”  presente — Ley"
    assert MdLegalChunker().normalize(s) == normalize_text(s) == MdWordsChunker().normalize(s)


# ---------------------------------------------------------------------------------------------------------------
# Golden fixture


@pytest.fixture(scope="module")
def expected() -> dict:
    return json.loads(EXPECTED.read_text("utf-8"))


def test_fixture_header(expected):
    assert expected["chunker_id"] == "md-legal-v1"
    assert expected["params"] == MdLegalChunker().params
    assert [d["doc_id"] for d in expected["real"]] == list(REAL_DOCS)


def test_golden_synthetic(expected):
    src = decode_source(SYNTHETIC.read_bytes())
    syn = expected["synthetic"]
    assert len(src) == syn["source_nfc_length"]
    assert hashlib.sha256(SYNTHETIC.read_bytes()).hexdigest() == syn["sha256"]
    chunks = get_chunker("md-legal-v1").chunk(syn["doc_id"], src)
    assert _rows(chunks) == syn["chunks"]
    for c in chunks:
        assert src[c.char_start : c.char_end] == c.text


def test_synthetic_rules_spelled_out():
    """Each rule of the docstring on the synthetic input, counted by hand (see the comments)."""
    src = decode_source(SYNTHETIC.read_bytes())
    ch = MdLegalChunker().chunk("s", src)
    words = [c.n_words for c in ch]
    firsts = [c.text.split()[0] for c in ch]
    # text before the first heading: a lead unit with an empty heading path
    assert ch[0].heading_path == () and words[0] == 8 and ch[0].char_start == 0
    # lead (4 words) < 40 absorbs Artículo 1o (62 words)
    assert words[1] == 4 + 62 and firsts[1] == "LEY" and ch[1].text.split()[-1] == "a60"
    # Artículo 2 (10) < 40 absorbs fracción I (21) and II in a blockquote (52): 83; then III has 47 >= 40 words
    assert words[2] == 10 + 21 + 52 and ch[2].text.startswith("**Artículo 2.-**")
    # III starts its own chunk (blockquote prefix); IV (11 < 40) joins backwards; "**lI.**" (OCR) and the
    # reform note "*Artículo reformado ...*" are no starts, they continue IV
    assert ch[3].text.startswith("> **III.**") and words[3] == 47 + 11 + 6 + 4
    # three "(Se deroga)" articles (4 words each) merge: 12; adding Artículo 6 (242) would give 254 > 250
    assert words[4] == 12 and ch[4].text.count("(Se deroga)") == 3
    assert words[5] == 242
    # Artículo 7 Bis is one line of 303 words: k = 2 parts of floor(303/2) = 151 and 152 words, cut mid-line
    assert words[6:8] == [151, 152] and ch[6].text.split()[-1] == "g148" and firsts[7] == "g149"
    # Artículo 8: two lines of 152 words (304 > 250): split at the line boundary; "Segundo párrafo" is no start
    assert words[8:10] == [152, 152] and firsts[9] == "Segundo"
    # a short article (22) at the end of its section stays alone: chunks never cross a heading
    assert words[10] == 22 and ch[10].heading_path == ("Ley Sintética de Prueba",)
    assert ch[11].heading_path == ("Ley Sintética de Prueba", "Capítulo II")
    # lead 5 + ARTÍCULO 10 (32) = 37 < 40 absorbs "**Artículo** **11.-**" (12): 49; ARTICULO 12o (47) alone
    assert words[11:13] == [5 + 32 + 12, 47] and firsts[12] == "**ARTICULO"
    # transitorios: PRIMERO (46) alone; Segundo (11) does not join backwards but absorbs DÉCIMO PRIMERO (47)
    assert words[13:15] == [46, 11 + 47] and firsts[14] == "**Segundo.**"
    # DOF note: lead 14 + "TRANSITORIOS ÚNICO." (12) = 26 < 40 absorbs the PRIMERA unit (52 + "C. Juez" 47 +
    # "Artículo 27 de la ..." 45 + "a)" 51 + "II.1." 21 = 216): 242 (C., references, incisos, II.1. are no starts)
    assert words[15] == 14 + 12 + 216 and ch[15].text.split()[-1] == "z20"
    # a 520-word line: k = 3 equal parts 173, 173, 174; a heading-only section has no chunk
    assert words[16:19] == [173, 173, 174] and all(c.heading_path[-1] == "Sección larga" for c in ch[16:19])
    # "SEGUNDA:" (31) + "Tercero especialista:" (7, no start) = 38 < 40 absorbs TERCERA. (42): 80
    assert words[19] == 31 + 7 + 42 and ch[19].heading_path[-1] == "Cláusulas"
    # ordinal-labelled and "1,099"/"170-B" articles; "(Se deroga)" (4) absorbs 170-B (42)
    assert words[20:] == [42, 42, 46] and firsts[20:] == ["**ARTÍCULO", "**Artículo", "**Artículo"]
    assert len(ch) == 23 and max(words) <= MAX_WORDS


@pytest.mark.realcorpus
@pytest.mark.parametrize("doc_id", REAL_DOCS)
def test_golden_real_documents(expected, doc_id):
    """Real documents, read from ../shared at test time; a missing corpus or a changed file fails the test."""
    meta = _real_metadata()
    exp = next(d for d in expected["real"] if d["doc_id"] == doc_id)
    assert meta[doc_id]["path"] == exp["path"]
    raw = (REAL_CORPUS / exp["path"]).read_bytes()
    assert hashlib.sha256(raw).hexdigest() == exp["sha256"], f"{exp['path']} changed: the fixture no longer applies"
    src = decode_source(raw)
    assert len(src) == exp["source_nfc_length"]
    chunks = get_chunker("md-legal-v1").chunk(doc_id, src)
    assert _rows(chunks) == exp["chunks"]
    assert sum(c.n_words for c in chunks) == sum(c.n_words for c in MdWordsChunker().chunk(doc_id, src))


# ---------------------------------------------------------------------------------------------------------------
# Property tests


def _reference(text: str, max_words: int = MAX_WORDS, min_words: int = MIN_WORDS) -> list[tuple[int, int, int]]:
    """An independent, word-list reading of rules 1-5: ``(char_start, char_end, n_words)`` per chunk.

    It walks lines with ``str.split("\\n")`` and offsets, tries the four patterns one by one, and builds every
    piece as a list of word indices; nothing is shared with the module but the patterns and the heading regex.
    """
    words: list[tuple[int, int]] = []
    sections: list[list[tuple[str, list[int]]]] = [[]]  # section -> units -> (kind, word indices)
    off = 0
    for line in text.split("\n"):
        if _HEADING_RE.match(line):
            sections.append([])
        else:
            idx = []
            for m in WORD.finditer(line):
                idx.append(len(words))
                words.append((off + m.start(), off + m.end()))
            if idx:
                kind = next((k for k, p in START_PATTERNS if p.match(line)), None)
                if kind is None and sections[-1]:
                    sections[-1][-1][1].append(idx)
                else:
                    sections[-1].append((kind or "lead", [idx]))
        off += len(line) + 1
    out = []
    for units in sections:
        items = []  # (article_level, word indices)
        for kind, lines in units:
            flat = [i for ln in lines for i in ln]
            if len(flat) <= max_words:
                items.append((kind in ARTICLE_LEVEL, flat))
                continue
            parts = []
            for ln in lines:
                k = -(-len(ln) // max_words)
                parts += [ln[j * len(ln) // k : (j + 1) * len(ln) // k] for j in range(k)]
            pieces = [parts[0]]
            for p in parts[1:]:
                if len(pieces[-1]) + len(p) <= max_words:
                    pieces[-1] = pieces[-1] + p
                else:
                    pieces.append(p)
            items += [(j == 0 and kind in ARTICLE_LEVEL, p) for j, p in enumerate(pieces)]
        chunks: list[list[int]] = []
        for art, p in items:
            c = chunks[-1] if chunks else None
            if c and len(c) + len(p) <= max_words and (len(c) < min_words or (len(p) < min_words and not art)):
                c += p
            else:
                chunks.append(list(p))
        out += [(words[c[0]][0], words[c[-1]][1], len(c)) for c in chunks]
    return out


_PLAIN = st.sampled_from(["ley", "la", "Secretaría", "(Se", "deroga).", "*Párrafo", "DOF", "a)", "C.", "I.1.", "x"])
_STARTS = st.sampled_from(
    [
        "**Artículo 1o.-**",
        "**ARTICULO 2 Bis.-**",
        "Artículo 3.",
        "**Artículo** **4.-**",
        "**ARTÍCULO ÚNICO.-**",
        "**I.**",
        "> **XIV.-**",
        "II.",
        "**PRIMERO.-**",
        "Segundo.",
        "DÉCIMA SEXTA.",
        "TRANSITORIOS",
        "**Disposiciones Transitorias**",
        "*Artículo reformado DOF 01-01-2020*",
        "",
    ]
)
_WS = st.sampled_from([" ", " ", "  ", "\t", "\u00a0", " \u2003"])


@st.composite
def _line(draw) -> str:
    form = draw(st.sampled_from(["start", "start", "plain", "heading", "blank", "long", "junk"]))
    if form == "heading":
        return draw(st.sampled_from(["#", "##", "###", "####", " ##", "######"])) + " " + draw(_PLAIN)
    if form == "blank":
        return draw(st.sampled_from(["", " ", "\t", ">"]))
    if form == "junk":
        return draw(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n"), max_size=30))
    n = draw(st.integers(0, 620 if form == "long" else 60))
    body = [draw(_PLAIN) for _ in range(min(n, 12))] + ["w"] * max(0, n - 12)
    head = [draw(_STARTS)] if form == "start" else []
    sep = draw(_WS)
    return sep.join(head + body)


_DOCS = st.lists(_line(), max_size=40).map("\n".join)


@settings(max_examples=300, deadline=None)
@given(_DOCS)
def test_properties_against_the_rules(text):
    chunks = MdLegalChunker().chunk("d", text)
    # chunk ids, order, slices, bounds
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert [c.chunk_id for c in chunks] == [f"d#{i}" for i in range(len(chunks))]
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert a.char_end < b.char_start
    for c in chunks:
        assert c.text == text[c.char_start : c.char_end]
        assert c.n_words == len(WORD.findall(c.text)) and 1 <= c.n_words <= MAX_WORDS
    # every word outside heading lines is in exactly one chunk, in order
    body = "\n".join(ln for ln in text.split("\n") if not _HEADING_RE.match(ln))
    assert [w for c in chunks for w in WORD.findall(c.text)] == WORD.findall(body)
    # rule 6: a chunk under 40 words is the last of its section, or the next chunk's first piece overflowed it
    for a, b in zip(chunks, chunks[1:], strict=False):
        between = text[a.char_end : b.char_start].split("\n")[1:-1]
        same_section = not any(_HEADING_RE.match(ln) for ln in between)
        if a.n_words < MIN_WORDS and same_section:
            assert a.n_words + b.n_words > MAX_WORDS
    # the same chunks as the independent reading of the docstring's rules
    assert [(c.char_start, c.char_end, c.n_words) for c in chunks] == _reference(text)
    # deterministic, and the document id only enters the chunk ids
    again = MdLegalChunker().chunk("otro", text)
    assert [(c.char_start, c.char_end, c.heading_path, c.text) for c in again] == [
        (c.char_start, c.char_end, c.heading_path, c.text) for c in chunks
    ]
    # the heading path is md-words-v1's for the same section (both chunkers start a chunk at each section)
    words_paths = {c.char_start: c.heading_path for c in MdWordsChunker().chunk("d", text)}
    for c in chunks:
        if c.char_start in words_paths:
            assert c.heading_path == words_paths[c.char_start]


@settings(max_examples=200, deadline=None)
@given(_DOCS)
def test_article_level_starts_begin_a_chunk_unless_absorbed(text):
    """Rule 5 seen from outside: an article-level start line that does not begin a chunk follows < 40 words."""
    chunks = MdLegalChunker().chunk("d", text)
    off = 0
    for line in text.split("\n"):
        m = WORD.search(line)
        kind = classify_line(line) if m and not _HEADING_RE.match(line) else None
        if kind in ARTICLE_LEVEL:
            pos = off + m.start()
            c = next(c for c in chunks if c.char_start <= pos < c.char_end)
            assert c.char_start == pos or len(WORD.findall(text[c.char_start : pos])) < MIN_WORDS
        off += len(line) + 1


def test_long_line_is_split_into_equal_parts():
    text = "# T\n" + " ".join(f"w{i}" for i in range(1001))
    chunks = MdLegalChunker().chunk("d", text)
    # k = ceil(1001/250) = 5 parts of floor(i*1001/5): 200, 200, 200, 200, 201
    assert [c.n_words for c in chunks] == [200, 200, 200, 200, 201]


def test_empty_and_heading_only_documents_have_no_chunks():
    assert MdLegalChunker().chunk("d", "") == []
    assert MdLegalChunker().chunk("d", "# Solo\n\n## encabezados\n\n  \n\t\n") == []
    # a lone blockquote marker is a word (\S+), as under md-words-v1
    assert [c.text for c in MdLegalChunker().chunk("d", "# Solo\n>")] == [">"]


# ---------------------------------------------------------------------------------------------------------------
# Ingest


def _db_chunks(db: Path) -> list[tuple]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(
            "SELECT chunk_id, doc_id, chunk_index, heading_path, char_start, char_end, n_words, text FROM chunks "
            "ORDER BY rowid"
        ).fetchall()
    finally:
        conn.close()


@settings(max_examples=15, deadline=None)
@given(st.lists(_DOCS, min_size=1, max_size=3))
def test_ingest_is_idempotent(texts):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "corpus"
        root.mkdir()
        for i, t in enumerate(texts):
            (root / f"doc{i}.md").write_text(t, encoding="utf-8")
        wd = Path(tmp) / "wd"
        db1, man1, created1 = ingest(root, wd, chunker_id="md-legal-v1")
        rows1 = _db_chunks(db1)
        mtime = db1.stat().st_mtime_ns
        db2, man2, created2 = ingest(root, wd, chunker_id="md-legal-v1")
        assert created1 and not created2 and db2 == db1 and db1.stat().st_mtime_ns == mtime
        assert man2 == man1 and _db_chunks(db2) == rows1
        assert man1.chunker_id == "md-legal-v1" and man1.chunker_params == {"max_words": 250, "min_words": 40}
        # what is stored is what the chunker gives
        want = []
        for i, t in enumerate(texts):
            for c in MdLegalChunker().chunk(f"doc{i}", decode_source(t.encode("utf-8"))):
                want.append((c.chunk_id, c.doc_id, c.index, c.char_start, c.char_end, c.n_words, c.text))
        assert [(r[0], r[1], r[2], r[4], r[5], r[6], r[7]) for r in rows1] == want
        # a fresh workdir rebuilds the same chunks
        db3, _, created3 = ingest(root, Path(tmp) / "wd2", chunker_id="md-legal-v1")
        assert created3 and _db_chunks(db3) == rows1


def test_cli_ingest_with_md_legal_v1(tiny_corpus: Path, tmp_path: Path):
    runner = CliRunner()
    wd = tmp_path / "wd"
    r1 = runner.invoke(app, ["ingest", str(tiny_corpus), "--workdir", str(wd), "--chunker", "md-legal-v1"])
    assert r1.exit_code == 0, r1.output
    assert "chunker md-legal-v1" in r1.output and "ingested" in r1.output
    r2 = runner.invoke(app, ["ingest", str(tiny_corpus), "--workdir", str(wd), "--chunker", "md-legal-v1"])
    assert r2.exit_code == 0 and "unchanged, nothing to do" in r2.output
    r3 = runner.invoke(app, ["ingest", str(tiny_corpus), "--workdir", str(wd)])  # md-words-v1: its own database
    assert r3.exit_code == 0 and "chunker md-words-v1" in r3.output and "ingested" in r3.output
    dbs = sorted(p.name for p in (wd / "corpora").iterdir())
    assert len(dbs) == 2 and dbs[0].endswith("-md-legal-v1") and dbs[1].endswith("-md-words-v1")
    legal_rows = _db_chunks(wd / "corpora" / dbs[0] / "corpus.db")
    # ley-a: "## Capítulo I" then two short articles (< 40 words together): one chunk under the chapter heading
    ley_a = [r for r in legal_rows if r[1] == "ley-a"]
    assert len(ley_a) == 1 and ley_a[0][7].startswith("**Artículo 1.-**") and "**Artículo 2.-**" in ley_a[0][7]


# ---------------------------------------------------------------------------------------------------------------
# Freezing the fixture (run once by hand; refuses to overwrite)


def _freeze() -> None:
    if EXPECTED.exists():
        raise SystemExit(f"{EXPECTED} exists: md-legal-v1 is frozen; a change of behaviour needs a new chunker id")
    chunker = MdLegalChunker()
    syn_raw = SYNTHETIC.read_bytes()
    syn = decode_source(syn_raw)
    meta = _real_metadata()
    real = []
    for doc_id in REAL_DOCS:
        raw = (REAL_CORPUS / meta[doc_id]["path"]).read_bytes()
        src = decode_source(raw)
        real.append(
            {
                "doc_id": doc_id,
                "path": meta[doc_id]["path"],
                "collection": meta[doc_id]["collection"],
                "sha256": hashlib.sha256(raw).hexdigest(),
                "source_nfc_length": len(src),
                "chunks": _rows(chunker.chunk(doc_id, src)),
            }
        )
    doc = {
        "chunker_id": chunker.chunker_id,
        "params": chunker.params,
        "synthetic": {
            "doc_id": "sintetico",
            "sha256": hashlib.sha256(syn_raw).hexdigest(),
            "source_nfc_length": len(syn),
            "chunks": _rows(chunker.chunk("sintetico", syn)),
        },
        "real": real,
    }

    def dump(obj, indent=0):  # one chunk per line keeps the fixture diffable
        pad = " " * indent
        if isinstance(obj, dict) and "chunk_id" not in obj:
            items = [f"{pad}  {json.dumps(k)}: {dump(v, indent + 2).lstrip()}" for k, v in obj.items()]
            return pad + "{\n" + ",\n".join(items) + "\n" + pad + "}"
        if isinstance(obj, list) and obj and isinstance(obj[0], dict):
            return pad + "[\n" + ",\n".join(dump(x, indent + 2) for x in obj) + "\n" + pad + "]"
        return pad + json.dumps(obj, ensure_ascii=False)

    EXPECTED.write_text(dump(doc) + "\n", encoding="utf-8")


if __name__ == "__main__" and sys.argv[1:] == ["--freeze"]:
    _freeze()
