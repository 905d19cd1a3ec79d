"""Issue 44 items 4-6: the known-item caches and study folders are verified derived files.

Item 5: the outcome and token caches (``<workdir>/known-item/``) carry a manifest like the BM25, vector, evidence and
embedding caches: an entry rewritten (every hit 1), truncated, overwritten in place (size and mtime kept), or written
before the stamp is never used; it is rebuilt with one ``harness: known-item ... cache`` notice and the study's
numbers equal the undamaged ones.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from test_known_item import KW, write_corpus

import harness.studies.known_item.study as study
from harness.derived import file_facts
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
