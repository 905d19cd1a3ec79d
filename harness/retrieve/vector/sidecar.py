"""The vector index's sidecar (issue 43, item 3): the vec0 table's rows as numpy arrays in the work directory, so
that opening an index and its first search read a few memory-mapped arrays instead of the chunk table and the
vec0 table row by row.

Layout: ``<workdir>/vectors/<table>.<corpus_hash[:16]>/`` holds, for every row of the vec0 table in rowid order:

* ``rowids.npy``: ``int64 (n,)``, the chunk's rowid in ``chunks`` (ascending);
* ``bits.npy``: ``uint8 (n, dim/8)``, the packed bits as stored (memory-mapped on open, ``mmap_mode='r'``);
* ``chunk_rank.npy``: ``int64 (n,)``, each chunk id's position among the table's chunk ids in ascending string
  order (:func:`harness.ranking.id_rank`; order-preserving on any subset, which is all a tie rule compares);
* ``doc_code.npy``: ``int64 (n,)``, the index of the chunk's document in ``docs.json``;
* ``docs.json``: the table's document ids, sorted ascending (string order);
* ``manifest.json``: the derived-file manifest (:mod:`harness.derived`, kind ``vector-sidecar``): each file's size,
  mtime, sha256 and ``.npy`` shape/dtype, and the facts that key it to the table: the table name, the corpus hash,
  the vec0 row count, the content digest of the table's own manifest (``table_sha256``, ``None`` for a table without
  one) and the bytes per vector.

Every file is written to a temporary beside it and renamed; the manifest is written last, so an interrupted write
never passes the check. On open the sidecar is used only when :func:`harness.derived.check_manifest` passes with the
facts of the table as it is now; otherwise it is rebuilt from the tables with one notice line (never trusted). A
work directory that cannot be written gets the arrays in memory (one notice line), with the same rankings.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import apsw
import numpy as np

from harness.corpus.store import Corpus
from harness.derived import check_manifest, damaged_notice, remove_derived, write_manifest
from harness.errors import HarnessError, HarnessInputError
from harness.io import atomic_write_json, stderr_notice, temporary_path
from harness.ranking import id_rank

__all__ = [
    "KIND",
    "SIDECAR_FILES",
    "TableArrays",
    "compute_arrays",
    "discard",
    "load_or_build",
    "sidecar_dir",
    "table_facts",
]

KIND = "vector-sidecar"
"""The ``kind`` of a sidecar's manifest."""

LAYOUT = 1
"""Layout version of the sidecar (a fact of its manifest: another layout is rebuilt)."""

SIDECAR_FILES = ("rowids.npy", "bits.npy", "chunk_rank.npy", "doc_code.npy", "docs.json")
"""The files of a sidecar folder besides ``manifest.json``."""


@dataclass(frozen=True)
class TableArrays:
    """A vec0 table's rows as arrays (see the module docstring): ``rowids``, ``bits``, ``chunk_rank``, ``doc_code``
    (each over the table's ``n`` rows, in rowid order) and ``docs`` (sorted document ids)."""

    rowids: np.ndarray
    bits: np.ndarray
    chunk_rank: np.ndarray
    doc_code: np.ndarray
    docs: list[str]


def sidecar_dir(workdir: str | Path, corpus: Corpus, table: str) -> Path:
    """The sidecar folder of ``table`` in ``corpus``: ``<workdir>/vectors/<table>.<corpus_hash[:16]>``."""
    return Path(workdir) / "vectors" / f"{table}.{corpus.manifest.corpus_hash[:16]}"


def table_facts(corpus: Corpus, table: str, nbytes: int) -> dict:
    """The facts a sidecar must match: ``table``, ``corpus_hash``, ``rows`` (the vec0 row count, from its rowid
    shadow table), ``table_sha256`` (the content digest the table's manifest records; ``None`` without one),
    ``nbytes`` and ``layout``."""
    from harness.retrieve.vector.store import _manifest_path  # the table's own manifest (store imports us not)

    try:  # the vec0 rowid shadow table: a b-tree count, not a scan of the vectors
        rows = int(corpus.conn.execute(f'SELECT count(*) FROM "{table}_rowids"').fetchone()[0])
    except apsw.SQLError:  # another sqlite-vec layout: count the table itself
        rows = int(corpus.conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0])
    digest = None
    with contextlib.suppress(OSError, ValueError, AttributeError):
        digest = json.loads(_manifest_path(corpus.path, table).read_text("utf-8")).get("facts", {}).get("sha256")
    return {
        "table": table,
        "corpus_hash": corpus.manifest.corpus_hash,
        "rows": rows,
        "table_sha256": digest,
        "nbytes": int(nbytes),
        "layout": LAYOUT,
    }


def compute_arrays(corpus: Corpus, table: str, nbytes: int) -> TableArrays:
    """The table's arrays read from the vec0 table and ``chunks`` (one pass over each; the slow path the sidecar
    saves).

    Raises:
        HarnessInputError: a vector of another width than ``nbytes``; a vec0 row whose chunk is not in ``chunks``.
    """
    conn = corpus.conn
    rids: list[int] = []
    blobs: list[bytes] = []
    for rid, blob in conn.execute(f'SELECT rowid, embedding FROM "{table}"'):
        rids.append(rid)
        blobs.append(bytes(blob))
    if any(len(b) != nbytes for b in blobs):
        raise HarnessInputError(f"{corpus.path}: {table}: a vector is not {nbytes} bytes wide")
    rowids = np.array(rids, dtype=np.int64)
    bits = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), nbytes)
    order = np.argsort(rowids, kind="stable")
    rowids, bits = rowids[order], np.ascontiguousarray(bits[order])
    chunk_rowids, chunk_ids, doc_ids = [], [], []
    for rid, cid, did in conn.execute("SELECT rowid, chunk_id, doc_id FROM chunks ORDER BY rowid"):
        chunk_rowids.append(rid)
        chunk_ids.append(cid)
        doc_ids.append(did)
    crow = np.array(chunk_rowids, dtype=np.int64)
    at = np.searchsorted(crow, rowids)
    found = crow[np.minimum(at, crow.size - 1)] == rowids if crow.size else np.zeros(rowids.shape[0], dtype=bool)
    if not found.all():
        raise HarnessInputError(f"{corpus.path}: {table}: {int((~found).sum())} vectors have no chunk in chunks")
    ids = [chunk_ids[i] for i in at.tolist()]
    docs_of = [doc_ids[i] for i in at.tolist()]
    docs = sorted(set(docs_of))
    code = {d: i for i, d in enumerate(docs)}
    return TableArrays(
        rowids=rowids,
        bits=bits,
        chunk_rank=id_rank(ids),
        doc_code=np.array([code[d] for d in docs_of], dtype=np.int64),
        docs=docs,
    )


def _save_npy(path: Path, arr: np.ndarray) -> None:
    """``numpy.save`` to a temporary beside ``path``, then an atomic rename (nothing left behind on error)."""
    tmp = temporary_path(path)
    try:
        with open(tmp, "wb") as f:
            np.save(f, arr, allow_pickle=False)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _write(folder: Path, arrays: TableArrays, facts: dict) -> None:
    """Write the sidecar (files first, manifest last; see the module docstring)."""
    folder.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(folder / "manifest.json")  # no manifest while the files change
    _save_npy(folder / "rowids.npy", arrays.rowids)
    _save_npy(folder / "bits.npy", arrays.bits)
    _save_npy(folder / "chunk_rank.npy", arrays.chunk_rank)
    _save_npy(folder / "doc_code.npy", arrays.doc_code)
    atomic_write_json(folder / "docs.json", arrays.docs, indent=0)
    write_manifest(folder / "manifest.json", KIND, {n: folder / n for n in SIDECAR_FILES}, facts=facts)


def _load(folder: Path, facts: dict) -> TableArrays | str:
    """The sidecar's arrays (bits memory-mapped), or the problem that forbids using it."""
    try:
        bits = np.load(folder / "bits.npy", mmap_mode="r", allow_pickle=False).view(np.ndarray)  # no subclass
        rowids = np.load(folder / "rowids.npy", allow_pickle=False)
        rank = np.load(folder / "chunk_rank.npy", allow_pickle=False)
        code = np.load(folder / "doc_code.npy", allow_pickle=False)
        docs = json.loads((folder / "docs.json").read_text("utf-8"))
    except (OSError, ValueError) as exc:
        return f"unreadable ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
    n = facts["rows"]
    if bits.shape != (n, facts["nbytes"]) or any(a.shape != (n,) for a in (rowids, rank, code)):
        return f"arrays of {bits.shape[0]} rows, the table has {n}"
    if not isinstance(docs, list) or (code.size and (code.min() < 0 or code.max() >= len(docs))):
        return "docs.json does not match doc_code.npy"
    return TableArrays(rowids=rowids, bits=bits, chunk_rank=rank, doc_code=code, docs=docs)


def load_or_build(corpus: Corpus, workdir: str | Path | None, table: str, nbytes: int) -> tuple[TableArrays, str]:
    """The arrays of ``table``: from its sidecar when it matches the table now, else computed and written.

    Args:
        corpus: the corpus whose database holds ``table``.
        workdir: the work directory (``None``: compute in memory, write nothing).
        table: the vec0 table.
        nbytes: bytes per vector (``dim / 8``).

    Returns:
        ``(arrays, source)``: ``source`` is ``"sidecar"`` (reused), ``"written"`` (computed and written),
        ``"rebuilt"`` (a sidecar that failed its check, rebuilt with one notice line) or ``"memory"`` (computed,
        not written: no work directory, or it cannot be written: one notice line).

    Raises:
        HarnessInputError: what :func:`compute_arrays` raises.
    """
    if workdir is None:
        return compute_arrays(corpus, table, nbytes), "memory"
    folder = sidecar_dir(workdir, corpus, table)
    facts = table_facts(corpus, table, nbytes)
    source = "written"
    if folder.exists():
        problem = check_manifest(folder / "manifest.json", KIND, {n: folder / n for n in SIDECAR_FILES}, facts=facts)
        if problem is None:
            got = _load(folder, facts)
            if isinstance(got, TableArrays):
                return got, "sidecar"
            problem = got
        damaged_notice("vector sidecar", folder, problem, "rebuilding it from the table")
        source = "rebuilt"
    arrays = compute_arrays(corpus, table, nbytes)
    try:
        if source == "rebuilt":
            remove_derived(folder)
        _write(folder, arrays, facts)
    except (OSError, HarnessError) as exc:
        with contextlib.suppress(OSError):  # nothing half written: no manifest, no files of ours
            remove_derived(folder)
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).splitlines()[0]
        stderr_notice(f"vector sidecar {folder}: cannot write ({why}); searching with the arrays in memory")
        return arrays, "memory"
    return arrays, source


def discard(workdir: str | Path | None, corpus: Corpus, table: str) -> None:
    """Remove the sidecar of ``table`` (after a build changed the table: the next open writes it again without a
    notice); missing or unremovable is fine."""
    if workdir is not None:
        with contextlib.suppress(OSError):
            remove_derived(sidecar_dir(workdir, corpus, table))
