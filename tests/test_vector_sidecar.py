"""The vector index's sidecar (issue 43, item 3): ids, ranks and packed bits as arrays in the work directory,
written after a build, memory-mapped on the next open, rebuilt with one notice when it does not match the table."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from test_vector import FakeEmbedder, _check_against_reference, make_db, random_docs

import harness.io as hio
import harness.retrieve.vector.sidecar as sidecar_mod
from harness.corpus.store import Corpus
from harness.retrieve.vector import VectorIndex
from harness.retrieve.vector.sidecar import SIDECAR_FILES, sidecar_dir

BACKENDS = ("sqlite-vec", "numpy", "faiss")
QUERIES = [[0, 1, 1, 0, 1, 0, 0, 1], [1, 1, 1, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 0]]


@pytest.fixture
def setup(tmp_path):
    db = make_db(tmp_path, random_docs(7))
    corpus = Corpus(db)
    yield tmp_path, corpus, FakeEmbedder(dim=8)
    corpus.close()


def _rows_of_table(corpus: Corpus, table: str) -> tuple[np.ndarray, np.ndarray]:
    """(rowids, bits) of the vec0 table, read row by row (the reference)."""
    rows = sorted((rid, bytes(blob)) for rid, blob in corpus.conn.execute(f'SELECT rowid, embedding FROM "{table}"'))
    return np.array([r[0] for r in rows], dtype=np.int64), np.array([list(r[1]) for r in rows], dtype=np.uint8)


def _check_all(ix, corpus, emb):
    """Every engine's rankings equal the brute-force reference at several depths (ties included)."""
    for qbits in QUERIES:
        for backend in BACKENDS:
            for doc_depth, chunk_depth in ((0, 0), (3, 7), (5, 200)):
                _check_against_reference(ix, corpus, emb, qbits, doc_depth, chunk_depth, backend)


def test_sidecar_written_after_build_then_reused_memory_mapped(setup, capsys):
    tmp, corpus, emb = setup
    work = tmp / "work"
    ix = VectorIndex.build(corpus, work, emb)
    assert ix.sidecar == "written"
    folder = sidecar_dir(work, corpus, ix.table)
    assert sorted(p.name for p in folder.iterdir()) == sorted([*SIDECAR_FILES, "manifest.json"])
    rowids, bits = _rows_of_table(corpus, ix.table)
    assert np.array_equal(np.load(folder / "rowids.npy"), rowids)
    assert np.array_equal(np.load(folder / "bits.npy"), bits)
    _check_all(ix, corpus, emb)

    again = VectorIndex.build(corpus, work, emb)
    assert again.sidecar == "sidecar"
    loaded = again._load_bits()
    assert isinstance(loaded.base, np.memmap) and not loaded.flags.writeable  # the sidecar, memory-mapped
    assert again.chunk_ids == ix.chunk_ids and np.array_equal(again.packed_bits()[1], ix.packed_bits()[1])
    _check_all(again, corpus, emb)
    assert "sidecar" not in capsys.readouterr().err  # written and reused quietly


def test_partial_slice_and_its_extension_use_the_table_sidecar(setup, capsys):
    tmp, corpus, emb = setup
    work = tmp / "work"
    half = VectorIndex.build(corpus, work, emb, index_fraction=0.5)
    assert half.sidecar == "written"
    _check_all(half, corpus, emb)
    full = VectorIndex.build(corpus, work, emb)  # extends the table: the sidecar is written anew, quietly
    assert full.sidecar == "written" and full.build_stats["n_inserted"] > 0
    _check_all(full, corpus, emb)
    half2 = VectorIndex.build(corpus, work, emb, index_fraction=0.5)  # a slice of the bigger table: reused
    assert half2.sidecar == "sidecar"
    assert half2.chunk_ids == half.chunk_ids
    _check_all(half2, corpus, emb)
    assert "sidecar" not in capsys.readouterr().err


def test_a_stale_sidecar_is_rebuilt_with_one_notice(setup, capsys):
    tmp, corpus, emb = setup
    work = tmp / "work"
    half = VectorIndex.build(corpus, work, emb, index_fraction=0.5)
    folder = sidecar_dir(work, corpus, half.table)
    shutil.copytree(folder, tmp / "old-sidecar")  # the sidecar of the half table
    VectorIndex.build(corpus, work, emb)
    shutil.rmtree(folder)
    shutil.copytree(tmp / "old-sidecar", folder)  # put back: it no longer matches the table's rows
    capsys.readouterr()
    ix = VectorIndex.build(corpus, work, emb)
    notes = [x for x in capsys.readouterr().err.splitlines() if "vector sidecar" in x]
    assert ix.sidecar == "rebuilt" and len(notes) == 1, notes
    assert "rows" in notes[0] and "rebuilding it" in notes[0]
    _check_all(ix, corpus, emb)
    assert VectorIndex.build(corpus, work, emb).sidecar == "sidecar"


@pytest.mark.parametrize("damage", ["flip", "truncate", "missing", "manifest"])
def test_a_damaged_sidecar_is_rebuilt_with_one_notice_never_trusted(setup, capsys, damage):
    tmp, corpus, emb = setup
    work = tmp / "work"
    ix = VectorIndex.build(corpus, work, emb)
    folder = sidecar_dir(work, corpus, ix.table)
    bits = folder / "bits.npy"
    if damage == "flip":  # same size, other bytes, new mtime: caught by the content hash
        data = bytearray(bits.read_bytes())
        data[-1] ^= 0xFF
        bits.write_bytes(bytes(data))
        os.utime(bits, ns=(bits.stat().st_atime_ns, bits.stat().st_mtime_ns + 10**9))
    elif damage == "truncate":
        bits.write_bytes(bits.read_bytes()[:-3])
    elif damage == "missing":
        (folder / "chunk_rank.npy").unlink()
    else:
        (folder / "manifest.json").write_text("{not json", encoding="utf-8")
    capsys.readouterr()
    again = VectorIndex.build(corpus, work, emb)
    notes = [x for x in capsys.readouterr().err.splitlines() if "vector sidecar" in x]
    assert again.sidecar == "rebuilt" and len(notes) == 1 and str(folder) in notes[0], notes
    _check_all(again, corpus, emb)
    _, want = _rows_of_table(corpus, ix.table)
    assert np.array_equal(np.load(bits), want)
    assert VectorIndex.build(corpus, work, emb).sidecar == "sidecar"


def test_a_read_only_work_directory_searches_from_memory_and_writes_nothing(setup, capsys, monkeypatch):
    tmp, corpus, emb = setup
    work = tmp / "work"
    ix = VectorIndex.build(corpus, work, emb)
    shutil.rmtree(sidecar_dir(work, corpus, ix.table))
    real = hio.temporary_path

    def read_only(final, **kw):  # every write under the work directory fails as on a read-only file system
        if "work" in Path(final).parts:
            raise OSError(errno.EROFS, "Read-only file system", str(final))
        return real(final, **kw)

    monkeypatch.setattr(hio, "temporary_path", read_only)
    monkeypatch.setattr(sidecar_mod, "temporary_path", read_only)
    capsys.readouterr()
    ro = VectorIndex.build(corpus, work, emb)
    notes = [x for x in capsys.readouterr().err.splitlines() if "vector sidecar" in x]
    assert ro.sidecar == "memory" and len(notes) == 1 and "Read-only file system" in notes[0], notes
    assert not sidecar_dir(work, corpus, ix.table).exists()  # nothing half written
    _check_all(ro, corpus, emb)


def test_no_workdir_computes_in_memory(setup):
    tmp, corpus, emb = setup
    ix = VectorIndex.build(corpus, tmp / "work", emb)
    bare = VectorIndex(corpus, emb, ix.table, ix.slice, backend="numpy", stats={})
    assert bare.sidecar == "memory"
    _check_all(bare, corpus, emb)


def test_a_warm_open_reads_no_chunk_or_vector_row_by_row(setup):
    """Opening an index whose table is complete and whose sidecar matches reads neither the chunk table nor the
    vec0 table row by row (before: both, in build_table and in the constructor, and the bits at the first search)."""
    tmp, corpus, emb = setup
    work = tmp / "work"
    first = VectorIndex.build(corpus, work, emb)
    seen: list[str] = []

    def trace(_cursor, sql, _bindings):
        seen.append(" ".join(sql.split()))
        return True

    corpus.conn.exec_trace = trace
    try:
        ix = VectorIndex.build(corpus, work, emb)
        res = ix.search_packed(np.zeros((1, 1), dtype=np.uint8), doc_depth=3, chunk_depth=5, backend="numpy")
    finally:
        corpus.conn.exec_trace = None
    assert ix.sidecar == "sidecar" and ix.build_stats["n_inserted"] == 0
    assert ix.build_stats["n_already_indexed"] == first.slice.n_chunks
    row_reads = [s for s in seen if "FROM chunks ORDER BY rowid" in s or f'FROM "{first.table}"' in s]
    assert row_reads == [], row_reads
    assert len(res[0].chunks) == 5 and len(res[0].docs) == 3


def test_a_table_stamped_for_the_first_time_rewrites_the_sidecar_quietly(setup, capsys):
    """A table without its manifest (built before manifests) is stamped by the next build: its digest is new, and the
    sidecar is written again without a damage notice."""
    tmp, corpus, emb = setup
    work = tmp / "work"
    ix = VectorIndex.build(corpus, work, emb)
    table_manifest = corpus.path.with_name(f"{corpus.path.name}.{ix.table}.manifest.json")
    assert table_manifest.is_file()
    table_manifest.unlink()
    capsys.readouterr()
    again = VectorIndex.build(corpus, work, emb)
    assert table_manifest.is_file() and again.sidecar == "written"
    assert "vector sidecar" not in capsys.readouterr().err
    assert VectorIndex.build(corpus, work, emb).sidecar == "sidecar"
    _check_all(again, corpus, emb)
