"""Issue 44 items 4-6: the known-item caches and study folders are verified derived files.

Item 4: ``gate --known-item`` trusted ``outcomes.jsonl.gz`` as it was (every candidate hit set to 1 gave PASS; hits of
5, -7 or ``true`` were averaged in; a damaged gzip gave tracebacks). The folder now records the sha256 of its files in
``summary.json`` and is verified on read (:mod:`harness.evaluation.known_item_folder`): one line naming the file,
record and field, exit 2; ``coverage`` checks the recorded sha256 of the file it reads. Item 6: a ``known-item
--sample`` folder is refused by the gate, as ``coverage`` refuses it.

Item 5: the outcome and token caches (``<workdir>/known-item/``) carry a manifest like the BM25, vector, evidence and
embedding caches: an entry rewritten (every hit 1), truncated, overwritten in place (size and mtime kept), or written
before the stamp is never used; it is rebuilt with one ``harness: known-item ... cache`` notice and the study's
numbers equal the undamaged ones.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from test_known_item import KW, write_corpus
from typer.testing import CliRunner

import harness.evaluation.known_item_folder as known_item_folder
import harness.studies.known_item.study as study
from harness.cli import app
from harness.derived import file_facts
from harness.errors import HarnessInputError
from harness.studies.coverage.population import load_population
from harness.studies.known_item.cache import cache_folder

FIELDS = ("hit", "rank", "tie", "tie_decided_hit", "empty_query", "top_chunk")


@pytest.fixture
def counted(monkeypatch) -> list[str]:
    """The systems :func:`study._run_system` searched (not taken from the cache)."""
    calls: list[str] = []
    real = study._run_system

    def counting(name, *a, **k):
        calls.append(name)
        return real(name, *a, **k)

    monkeypatch.setattr(study, "_run_system", counting)
    return calls


def _run(corpus: Path, wd: Path, systems: str = "bm25"):
    return study.run_known_item(corpus, None, systems=systems, workers=1, workdir=wd, **KW)


def _same(a, b, name: str) -> None:
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(a.outcomes[name], f), getattr(b.outcomes[name], f))
    assert a.summary["systems"][name]["micro_hit1"] == b.summary["systems"][name]["micro_hit1"]


def _keep_stat(path: Path, write) -> None:
    """Change ``path``'s bytes with ``write(path)``, then restore its mtime (the size must stay)."""
    st = path.stat()
    write(path)
    assert path.stat().st_size == st.st_size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _all_hits(path: Path) -> None:
    with np.load(path) as z:
        data = {k: z[k] for k in z.files}
    data["hit"][:] = 1
    data["rank"][:] = 1
    with open(path, "wb") as f:
        np.savez(f, **data)


def _flip_middle(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    mid = len(raw) // 2
    raw[mid : mid + 64] = bytes(b ^ 0xFF for b in raw[mid : mid + 64])
    path.write_bytes(bytes(raw))


def _deflate_damage(path: Path) -> None:
    """A compressed zip of the same arrays whose deflate stream is damaged (zlib.error when read)."""
    with np.load(path) as z:
        data = {k: z[k] for k in z.files}
    buf = io.BytesIO()
    np.savez_compressed(buf, **data)
    raw = bytearray(buf.getvalue())
    with zipfile.ZipFile(io.BytesIO(bytes(raw))) as zf:
        info = zf.getinfo(zf.namelist()[0])
    h = info.header_offset  # the local header's own name and extra lengths (bytes 26-29) give the data's start
    start = h + 30 + int.from_bytes(raw[h + 26 : h + 28], "little") + int.from_bytes(raw[h + 28 : h + 30], "little")
    raw[start : start + 8] = b"\xff" * 8
    path.write_bytes(bytes(raw))
    manifest = path.with_name(path.stem + ".manifest.json")  # stamped again: only the read itself can tell
    man = json.loads(manifest.read_text("utf-8"))
    man["files"][path.name] = file_facts(path).model_dump(mode="json")
    manifest.write_text(json.dumps(man), "utf-8")
    with pytest.raises(zlib.error), np.load(path) as z:
        [z[k] for k in z.files]


OUTCOME_DAMAGE = {
    "every hit set to 1": _all_hits,
    "truncated": lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
    "zero bytes": lambda p: p.write_bytes(b""),
    "bytes flipped in place, size and mtime kept": lambda p: _keep_stat(p, _flip_middle),
    "a damaged deflate stream": _deflate_damage,
    "written before the stamp (no manifest)": lambda p: p.with_name(p.stem + ".manifest.json").unlink(),
}


@pytest.mark.parametrize("damage", list(OUTCOME_DAMAGE))
def test_a_damaged_outcome_cache_entry_is_rebuilt_with_one_notice(tmp_path, capsys, counted, damage):
    corpus, wd = write_corpus(tmp_path / "corpus"), tmp_path / "wd"
    clean = _run(corpus, wd)
    (entry,) = cache_folder(wd).glob("*.npz")
    OUTCOME_DAMAGE[damage](entry)
    capsys.readouterr()
    after = _run(corpus, wd)
    err = capsys.readouterr().err.splitlines()
    notices = [x for x in err if "known-item outcomes cache" in x]
    assert len(notices) == 1 and notices[0].startswith("harness: ") and "rebuilding it" in notices[0], err
    assert counted == ["bm25", "bm25"]  # searched again, not read from the damaged entry
    _same(clean, after, "bm25")
    again = _run(corpus, wd)  # the rebuilt entry is stamped: used, silently
    assert counted == ["bm25", "bm25"] and "cache" not in capsys.readouterr().err
    _same(clean, again, "bm25")


def _token_entry(wd: Path) -> Path:
    (entry,) = (wd / "known-item" / "tokens").glob("*.npz")
    return entry


def _tokens_out_of_vocabulary(path: Path) -> None:
    with np.load(path) as z:
        data = {k: z[k] for k in z.files}
    data["c_ids"] = data["c_ids"] + 10**6
    with open(path, "wb") as f:
        np.savez(f, **data)


TOKEN_DAMAGE = {
    "truncated": lambda p: p.write_bytes(p.read_bytes()[:100]),
    "token ids outside the vocabulary": _tokens_out_of_vocabulary,
    "bytes flipped in place, size and mtime kept": lambda p: _keep_stat(p, _flip_middle),
    "a damaged deflate stream": _deflate_damage,
}


@pytest.mark.parametrize("damage", list(TOKEN_DAMAGE))
def test_a_damaged_token_cache_entry_is_rebuilt_with_one_notice(tmp_path, capsys, counted, damage):
    corpus, wd = write_corpus(tmp_path / "corpus"), tmp_path / "wd"
    _run(corpus, wd)
    TOKEN_DAMAGE[damage](_token_entry(wd))
    capsys.readouterr()
    after = _run(corpus, wd, "bm25:b=0.5")  # a system not cached yet: the tokens are read
    err = capsys.readouterr().err.splitlines()
    notices = [x for x in err if "known-item tokens cache" in x]
    assert len(notices) == 1 and "rebuilding it" in notices[0], err
    fresh = study.run_known_item(corpus, None, systems="bm25:b=0.5", workers=1, **KW)  # no cache at all
    _same(fresh, after, "bm25:b=0.5")
    _run(corpus, wd, "tfidf")  # the rebuilt token entry is stamped: read silently
    assert "cache" not in capsys.readouterr().err and counted[-1] == "tfidf"


def test_the_cache_entries_carry_manifests(tmp_path):
    corpus, wd = write_corpus(tmp_path / "corpus"), tmp_path / "wd"
    res = _run(corpus, wd)
    (entry,) = cache_folder(wd).glob("*.npz")
    man = json.loads(entry.with_name(entry.stem + ".manifest.json").read_text("utf-8"))
    assert man["kind"] == "known-item-outcomes" and man["facts"] == {"queries": res.summary["counts"]["queries"]}
    assert sorted(man["files"]) == sorted([entry.name, entry.stem + ".json"])
    tok = _token_entry(wd)
    man = json.loads(tok.with_name(tok.stem + ".manifest.json").read_text("utf-8"))
    assert man["kind"] == "known-item-tokens" and len(man["files"][tok.name]["sha256"]) == 64


# ---------------------------------------------------------------------------------------------------------------
# Items 4 and 6: `gate --known-item` verifies the folder (recorded sha256s, every value's type and range, the
# summary's means) and refuses a `known-item --sample` folder.


def _gate(ki: Path, *more: str):
    args = ["gate", "--known-item", str(ki), "--baseline-system", "bm25", "--candidate-system", "tfidf"]
    return CliRunner().invoke(app, [*args, "--known-item-margin", "0.01", *more])


def _error_line(r) -> str:
    assert r.exit_code == 2, r.output
    lines = [x for x in r.output.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), r.output
    return " ".join(lines[0].split())


@pytest.fixture
def ki(tmp_path) -> Path:
    corpus = write_corpus(tmp_path / "corpus")
    study.run_known_item(corpus, tmp_path / "ki", systems="bm25,tfidf", workers=1, **KW)
    return tmp_path / "ki"


def _edit(ki: Path, change, *, system: str = "tfidf", first_only: bool = False) -> int:
    """Apply ``change(record)`` to the records of ``system`` in outcomes.jsonl.gz; the first changed line number."""
    path = ki / "outcomes.jsonl.gz"
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    first = 0
    for i, line in enumerate(lines):
        rec = json.loads(line)
        if rec["system"] == system and not (first_only and first):
            change(rec)
            lines[i] = json.dumps(rec)
            first = first or i + 1
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0))
    return first


def _set(field, value):
    return lambda rec: rec.__setitem__(field, value)


def _every_hit(rec):
    rec["hit"], rec["rank"] = 1, 1


def test_a_known_item_folder_records_its_hashes_and_passes_its_checks(ki):
    summary = json.loads((ki / "summary.json").read_text("utf-8"))
    assert sorted(summary["content_sha256"]) == ["outcomes.jsonl.gz", "per_document.jsonl"]
    assert study.HASHED_FILES == known_item_folder.HASHED_FILES
    got = known_item_folder.verify_folder(ki, log=pytest.fail)  # no notice for a hashed folder
    assert got.hashed and len(got.records) == 2 * summary["counts"]["queries"]
    r = _gate(ki)
    assert r.exit_code in (0, 1, 3) and "error" not in r.output and "content_sha256" not in r.output, r.output


@pytest.mark.parametrize(
    ("change", "first_only", "words"),
    [
        (_set("hit", 5), True, "field hit: must be the integer 0 or 1, got 5"),
        (_set("hit", -7), True, "field hit: must be the integer 0 or 1, got -7"),
        (_set("hit", True), True, "field hit: must be the integer 0 or 1, got True"),
        (_set("hit", 0.5), True, "field hit: must be the integer 0 or 1, got 0.5"),
        (_set("rank", 0), True, "field rank: must be null or an integer >= 1, got 0"),
        (_set("chunk_index", "1"), True, "field chunk_index: must be an integer >= 0"),
        (_set("tie", 3), True, "field tie: must be true or false, got 3"),
        (_set("system", "nope"), True, "field system: 'nope' is not a system the summary lists"),
    ],
    ids=["hit 5", "hit -7", "hit true", "hit 0.5", "rank 0", "chunk_index a string", "tie 3", "unknown system"],
)
def test_a_value_out_of_type_or_range_is_one_line_naming_file_record_and_field(ki, change, first_only, words):
    line = _edit(ki, change, first_only=first_only)
    msg = _error_line(_gate(ki))
    assert f"{ki / 'outcomes.jsonl.gz'}:{line}: record " in msg and words in msg, msg


def test_every_candidate_hit_set_to_1_is_refused(ki):
    _edit(ki, _every_hit)
    msg = _error_line(_gate(ki))
    assert f"{ki / 'summary.json'}: field systems.tfidf.hits:" in msg and "changed after harness wrote it" in msg


def test_outcomes_and_summary_edited_together_fail_the_recorded_hash(ki):
    _edit(ki, _every_hit)
    path = ki / "summary.json"
    summary = json.loads(path.read_text("utf-8"))
    s = summary["systems"]["tfidf"]
    s["hits"] = s["queries"]
    s["micro_hit1"] = s["mrr_first_same_doc"] = 1.0
    path.write_text(json.dumps(summary), "utf-8")
    msg = _error_line(_gate(ki))
    assert msg.startswith(f"error: {ki / 'outcomes.jsonl.gz'}: sha256 ") and "field content_sha256" in msg, msg


def test_an_edited_per_document_file_fails_the_recorded_hash(ki):
    path = ki / "per_document.jsonl"
    path.write_text(path.read_text("utf-8").replace('"s": 0', '"s": 1', 1), "utf-8")
    msg = _error_line(_gate(ki))
    assert f"{path}: sha256 " in msg and "field content_sha256" in msg, msg


def _flip_deflate(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    raw[12:20] = b"\xff" * 8  # the deflate stream starts after the 10-byte gzip header
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),  # truncated: EOFError
        lambda p: p.write_bytes(b"not gzip at all"),  # BadGzipFile
        _flip_deflate,  # zlib.error
    ],
    ids=["truncated", "not gzip", "damaged deflate stream"],
)
def test_a_damaged_gzip_is_one_line(ki, damage):
    damage(ki / "outcomes.jsonl.gz")
    msg = _error_line(_gate(ki))
    assert f"{ki / 'outcomes.jsonl.gz'}: cannot read" in msg, msg


def test_a_folder_written_before_the_hashes_is_checked_and_noted(ki):
    path = ki / "summary.json"
    summary = json.loads(path.read_text("utf-8"))
    del summary["content_sha256"]
    path.write_text(json.dumps(summary), "utf-8")
    r = _gate(ki)
    notes = [x for x in r.output.splitlines() if "no content_sha256" in x]
    assert r.exit_code in (0, 1, 3) and len(notes) == 1 and notes[0].startswith("harness: "), r.output
    line = _edit(ki, _set("hit", 5), first_only=True)  # ranges are still checked
    assert f"outcomes.jsonl.gz:{line}: record " in _error_line_after_note(_gate(ki))
    _edit(ki, lambda rec: rec.update(hit=0, rank=None))  # valid values, but not the summary's means
    assert "field systems.tfidf." in _error_line_after_note(_gate(ki))


def _error_line_after_note(r) -> str:
    assert r.exit_code == 2, r.output
    lines = [x for x in r.output.splitlines() if x.strip() and "no content_sha256" not in x]
    assert len(lines) == 1 and lines[0].startswith("error: "), r.output
    return " ".join(lines[0].split())


def test_a_sampled_known_item_folder_is_refused_by_the_gate(tmp_path):
    corpus = write_corpus(tmp_path / "corpus")
    out = tmp_path / "ki"
    study.run_known_item(corpus, out, systems="bm25,tfidf", workers=1, sample=3, design="pps", seed=1, **KW)
    msg = _error_line(_gate(out))
    assert f"{out / 'summary.json'}: field sample:" in msg and "without --sample" in msg, msg


@pytest.mark.parametrize(("outcome", "name"), [("hit", "per_document.jsonl"), ("rr", "outcomes.jsonl.gz")])
def test_coverage_refuses_a_known_item_file_that_fails_its_recorded_hash(ki, outcome, name):
    assert load_population(ki, system="bm25", outcome=outcome).n.sum() > 0
    path = ki / name
    if name.endswith(".gz"):
        _edit(ki, _every_hit, system="bm25")
    else:
        path.write_text(path.read_text("utf-8").replace('"s": 0', '"s": 1', 1), "utf-8")
    with pytest.raises(HarnessInputError, match="recorded in .*summary.json field content_sha256") as err:
        load_population(ki, system="bm25", outcome=outcome)
    assert str(err.value).startswith(f"{path}: sha256 ")
