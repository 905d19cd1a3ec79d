"""Gold sets anyone can grow: the alternatives-consistency rule (V035) and ``harness show`` (a chunk's text and
heading path, looked up by id)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REAL_CORPUS
from typer.testing import CliRunner

from harness.cli import app
from harness.corpus.chunker import normalize_text
from harness.corpus.lookup import lookup_chunk
from harness.errors import HarnessInputError
from harness.goldset.io import load_goldset
from harness.validate import validate

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "datasets" / "mx-leyes-dof-eval-v1"
runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def write_correction(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------------------ V035


def test_v035_flags_an_alternative_that_another_record_requires_as_a_second_hop(tmp_path: Path):
    """The new-user trial's correction: TE-004 gets ley-hist-320-lgn-2019 (the 2019 law, which the 2025 law
    abrogates) as an alternative of ley-073-lgn, while MD-001 requires both laws as two distinct hops."""
    ok = validate(REAL)
    # the committed set is consistent
    assert ok.rule_summary()["V035"]["fail"] == 0 and ok.rule_summary()["V035"]["pass"] == 2
    corr = write_correction(
        tmp_path / "good.jsonl",
        [
            {
                "id": "TE-004",
                "patch": [
                    {
                        "op": "add",
                        "path": "/gold_documents/0/alternatives/-",
                        "value": {"document_id": "ley-hist-320-lgn-2019"},
                    }
                ],
            }
        ],
    )
    bad = validate(REAL, correction=corr)
    fails = [(qid, f) for qid, code, f in bad.failures() if code == "V035"]
    assert len(fails) == 1
    ((qid, f),) = fails
    assert qid == "TE-004" and f.where.startswith("gold_documents[0].alternatives[")
    assert "ley-hist-320-lgn-2019 is an alternative of ley-073-lgn here, but MD-001 (line " in f.message
    assert "two distinct required gold documents (hops)" in f.message
    # NE-005 lists ley-262-loefam (an alternative of ley-073-lgn in TE-004) only as a useful (grade 1) document:
    # that is not a contradiction, and is not flagged
    ne5 = load_goldset(REAL).by_id()["NE-005"]
    assert {str(g.document_id): g.effective_grade for g in ne5.gold_documents}["ley-262-loefam"] == 1


# ------------------------------------------------------------------------------------------------ harness show


@pytest.mark.realcorpus
def test_show_prints_the_chunk_of_a_gold_quote():
    if not REAL_CORPUS.exists():
        pytest.skip(f"real corpus not found at {REAL_CORPUS}")
    rec = load_goldset(REAL).by_id()["SP-001"]
    g = rec.gold_documents[0]
    ev = g.evidence[0]
    r = invoke("show", ev.chunk_id, "--corpus", REAL_CORPUS, "--around", "1")
    assert r.exit_code == 0, r.output
    out = r.output
    assert f"▶ {ev.chunk_id}  [" in out
    assert normalize_text(ev.quote) in normalize_text(out)
    # the heading path the gold set records for the document is the chunk's (a prefix of it: V004's rule)
    assert " > ".join(g.heading_path) in out
    doc, idx = str(ev.chunk_id).rsplit("#", 1)
    n = int(out.split(" chunks under md-words-v1")[0].rsplit("; ", 1)[1])
    shown = [i for i in (int(idx) - 1, int(idx), int(idx) + 1) if 0 <= i < n]
    assert [c for c in range(n) if f"{doc}#{c}  [" in out] == shown  # the neighbours that exist, no others
    js = invoke("show", ev.chunk_id, "--corpus", REAL_CORPUS, "--json")
    data = json.loads(js.output)
    assert [c["chunk_id"] for c in data["chunks"]] == [ev.chunk_id]
    assert normalize_text(ev.quote) in normalize_text(data["chunks"][0]["text"])


def test_show_escapes_control_characters_and_refuses_bad_ids(tmp_path: Path):
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "d.md").write_text("# T\x1b[31m\n\nuno dos \x1b[2J tres\u202e cuatro\x07\n", encoding="utf-8")
    (corpus / "metadata.jsonl").write_text(json.dumps({"doc_id": "d", "path": "d.md"}) + "\n", encoding="utf-8")
    r = invoke("show", "d#0", "--corpus", corpus)
    assert r.exit_code == 0, r.output
    assert "\x1b" not in r.output and "\u202e" not in r.output and "\x07" not in r.output
    assert "uno dos \\x1b[2J tres\\u202e cuatro\\x07" in r.output and "[T\\x1b[31m]" in r.output
    assert lookup_chunk(corpus, "d#0").chunks[0].text == "uno dos \x1b[2J tres\u202e cuatro\x07"
    for bad, needle in [
        ("d", "expected <document id>#<index>"),
        ("d#x", "expected <document id>#<index>"),
        ("zz#0", "document 'zz' is not in the corpus"),
        ("d#3", "d has 1 chunk(s) under md-words-v1 (indexes 0-0)"),
    ]:
        res = invoke("show", bad, "--corpus", corpus)
        assert res.exit_code == 2 and needle in res.output, (bad, res.output)
    with pytest.raises(HarnessInputError, match="unknown chunker"):
        lookup_chunk(corpus, "d#0", chunker="nope")
