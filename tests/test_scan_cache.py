"""The corpus scan at DOF scale (issue 34): a warm scan reuses its stat-keyed record and reads no document, any
change to a document or to metadata.jsonl makes it a full scan again, and path checks resolve each folder once."""

from __future__ import annotations

import json
import os
import time

import pytest

import harness.corpus.source as source_mod
from harness.corpus import scan_cache
from harness.corpus.ingest import ingest
from harness.corpus.source import scan_corpus


def _corpus(root, n=6):
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    lines = []
    for i in range(n):
        rel = f"{'ab'[i % 2]}/doc{i}.md"
        (root / rel).write_text(f"# Doc {i}\n\nTexto del documento {i} con palabras.\n", encoding="utf-8")
        lines.append(
            json.dumps({"doc_id": f"d{i}", "path": rel, "title": f"T{i}", "date": f"2020-01-{i % 28 + 1:02d}"})
        )
    (root / "metadata.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def _no_reads(monkeypatch):
    def refuse(full, doc_id):
        raise AssertionError(f"read {full}")

    monkeypatch.setattr(source_mod, "_read_bytes", refuse)


def test_a_warm_scan_reads_no_document_and_gives_the_same_corpus(tmp_path, monkeypatch):
    root = _corpus(tmp_path / "c")
    rec = tmp_path / "w" / "scan.json"
    cold = scan_corpus(root, stat_cache=rec)
    assert rec.exists()
    plain = scan_corpus(root)
    _no_reads(monkeypatch)
    warm = scan_corpus(root, stat_cache=rec)
    assert warm.corpus_hash == cold.corpus_hash == plain.corpus_hash
    assert [(d.doc_id, d.path, d.title, d.date, d.sha256, d.extra) for d in warm.docs] == [
        (d.doc_id, d.path, d.title, d.date, d.sha256, d.extra) for d in plain.docs
    ]


@pytest.mark.parametrize("change", ["content", "same_size_content", "metadata", "replaced", "removed_record"])
def test_any_change_makes_the_scan_full_again(tmp_path, change):
    root = _corpus(tmp_path / "c")
    rec = tmp_path / "w" / "scan.json"
    before = scan_corpus(root, stat_cache=rec)
    doc = root / "a" / "doc0.md"
    if change == "content":
        doc.write_text("# Doc 0\n\nOtro texto.\n", encoding="utf-8")
    elif change == "same_size_content":  # same size and mtime restored: ctime still moves
        st = doc.stat()
        data = doc.read_bytes()
        time.sleep(0.01)
        doc.write_bytes(data.replace(b"Texto", b"TEXTO"))
        os.utime(doc, ns=(st.st_atime_ns, st.st_mtime_ns))
    elif change == "metadata":
        meta = root / "metadata.jsonl"
        meta.write_text(meta.read_text(encoding="utf-8").replace('"T0"', '"T0 bis"'), encoding="utf-8")
    elif change == "replaced":
        tmp = root / "a" / "new.md"
        tmp.write_bytes(doc.read_bytes().replace(b"Texto", b"TEXTO"))
        os.replace(tmp, doc)
    else:
        rec.write_text("{not json", encoding="utf-8")
    after = scan_corpus(root, stat_cache=rec)
    assert after.corpus_hash == scan_corpus(root).corpus_hash
    if change != "removed_record":
        assert after.corpus_hash != before.corpus_hash


def test_ingest_writes_the_record_in_its_workdir_and_reuses_it(tmp_path, monkeypatch):
    root = _corpus(tmp_path / "c")
    db, man, created = ingest(root, tmp_path / "w", log=lambda _m: None)
    assert created and scan_cache.cache_path(tmp_path / "w", root).exists()
    _no_reads(monkeypatch)
    db2, man2, created2 = ingest(root, tmp_path / "w", log=lambda _m: None)
    assert (db2, man2.corpus_hash, created2) == (db, man.corpus_hash, False)


def test_paths_are_resolved_once_per_folder_not_per_document(tmp_path, monkeypatch):
    """Two realpath walks per document made the warm scan of 657,867 documents take minutes."""
    root = _corpus(tmp_path / "c", n=40)
    calls: list[str] = []
    real = os.path.realpath

    def counted(p, *a, **k):
        calls.append(str(p))
        return real(p, *a, **k)

    monkeypatch.setattr(source_mod.os.path, "realpath", counted)
    scan_corpus(root)
    assert len(calls) <= 2 + 2  # the root (containment, then its name), then each of the two folders; was 80


def test_quick_check_runs_once_per_state_of_the_database(tmp_path, monkeypatch):
    """PRAGMA quick_check reads every page (minutes for the 6.73 M-chunk database) and ran on every command; it now
    runs again only when the file changed since it last passed."""
    import harness.corpus.ingest as ingest_mod

    root = _corpus(tmp_path / "c")
    db, _m, _c = ingest(root, tmp_path / "w", log=lambda _m: None)
    calls: list[int] = []
    real = ingest_mod._quick_check

    def counted(conn):
        calls.append(1)
        return real(conn)

    monkeypatch.setattr(ingest_mod, "_quick_check", counted)
    ingest(root, tmp_path / "w", log=lambda _m: None)
    assert len(calls) == 1 and (db.parent / ingest_mod.CHECKED_NAME).exists()
    ingest(root, tmp_path / "w", log=lambda _m: None)
    assert len(calls) == 1  # same file: not checked again
    os.utime(db)  # any change of the file (here its times; a write moves them too)
    ingest(root, tmp_path / "w", log=lambda _m: None)
    assert len(calls) == 2


def test_a_second_scan_in_the_same_process_does_not_parse_the_record_again(tmp_path, monkeypatch):
    """A run scans twice (ingest, then evidence); at DOF the record is 300 MB of JSON."""
    root = _corpus(tmp_path / "c")
    rec = tmp_path / "w" / "scan.json"
    want = scan_corpus(root, stat_cache=rec).corpus_hash
    parsed: list[int] = []
    real = scan_cache.json.loads

    def counted(text):
        parsed.append(1)
        return real(text)

    monkeypatch.setattr(scan_cache.json, "loads", counted)
    assert scan_corpus(root, stat_cache=rec).corpus_hash == want
    assert scan_corpus(root, stat_cache=rec).corpus_hash == want
    assert len(parsed) <= 1
    (root / "b" / "doc1.md").write_text("# cambiado\n", encoding="utf-8")  # still checked file by file
    assert scan_corpus(root, stat_cache=rec).corpus_hash != want
