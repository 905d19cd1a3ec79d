"""A stat-keyed record of a corpus scan, so that finding an existing ingest does not re-read every document.

Every command that opens a corpus (``harness ingest``, ``run``, ``embed``, ``known-item``) scans it first to learn
its hash (:func:`harness.corpus.source.scan_corpus`: ``metadata.jsonl`` parsed, every path checked, every document
read and hashed). At DOF scale (657,867 documents, 4.6 GB) that scan is minutes, paid by every warm run. Like git's
index, this module records after a full scan each file's ``os.stat`` key (device, inode, size, mtime_ns,
ctime_ns; taken before the file was read) and the documents' metadata and hashes; a later scan whose
``metadata.jsonl`` and every document still have the same keys reuses them, reading no document. Any difference
(a file edited, replaced, renamed, touched; ``metadata.jsonl`` changed; the corpus folder moved) makes the scan a
full one again. ``ctime`` cannot be set from user space, so a file rewritten with its old size and mtime is still
noticed.

The record lives in the work directory (``<workdir>/scans/scan-<hash of the corpus folder's real path>.json``),
is written atomically, and a record that cannot be read or parsed is ignored (rebuilt by the next full scan).
Corpora without ``metadata.jsonl`` (documents found by walking the folder) are not recorded: a new file would not
change any recorded key.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from harness.io import atomic_write_text

__all__ = ["VERSION", "cache_path", "lookup", "stat_key", "store"]

VERSION = 1

_LAST: dict[str, tuple[list[int], dict]] = {}
"""The last record read in this process, by path, with its own stat key (a run scans twice: ingest, then evidence)."""


def cache_path(workdir: str | Path, corpus_dir: str | Path) -> Path:
    """Where the scan record of ``corpus_dir`` lives under ``workdir``."""
    real = os.path.realpath(corpus_dir)
    return Path(workdir) / "scans" / f"scan-{hashlib.sha256(real.encode()).hexdigest()[:16]}.json"


def stat_key(path: str | Path) -> list[int] | None:
    """``[st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns]`` of ``path`` (links followed); None if unreadable."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def lookup(record: Path, root: Path) -> tuple[list[dict], str] | None:
    """``(documents, corpus_hash)`` from ``record`` when ``root``'s ``metadata.jsonl`` and every document still have
    the recorded keys (``documents``: the :class:`~harness.corpus.source.DocMeta` fields of each, as stored); None
    otherwise (no record, unreadable, another folder, anything changed)."""
    record_key = stat_key(record)
    memo = _LAST.get(str(record))
    if record_key is not None and memo is not None and memo[0] == record_key:
        data = memo[1]  # the same record read earlier in this process: only the stat keys are checked again
    else:
        try:
            data = json.loads(Path(record).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        _LAST.clear()
        if record_key is not None:
            _LAST[str(record)] = (record_key, data)
    if not isinstance(data, dict) or data.get("version") != VERSION or data.get("root") != os.path.realpath(root):
        return None
    meta_key = stat_key(root / "metadata.jsonl")
    if meta_key is None or data.get("metadata") != meta_key:
        return None
    docs = []
    try:
        for rec, key in zip(data["docs"], data["stats"], strict=True):
            if stat_key(root / rec["path"]) != key:
                return None
            docs.append(dict(rec))
        return docs, str(data["corpus_hash"])
    except (KeyError, TypeError, ValueError):
        return None


def store(record: Path, root: Path, meta_key: list[int] | None, docs: list[dict], keys: list, corpus_hash: str):
    """Write the record of a full scan: ``docs`` (each document's fields), ``meta_key`` and ``keys`` (one per
    document) taken before the files were read. Nothing is written when a key is missing (a file vanished) or the
    folder cannot be written."""
    if meta_key is None or any(k is None for k in keys):
        return
    data = {
        "version": VERSION,
        "root": os.path.realpath(root),
        "metadata": meta_key,
        "corpus_hash": corpus_hash,
        "docs": docs,
        "stats": keys,
    }
    try:
        Path(record).parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(record, json.dumps(data, ensure_ascii=False, separators=(",", ":")))
    except Exception:  # noqa: BLE001 - a record is an optimisation: failing to write it changes nothing else
        return
