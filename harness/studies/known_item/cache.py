"""Per-system known-item outcomes cached by content, so an unchanged system is never searched twice.

A system's outcomes on a corpus are a function of: the corpus (its hash), the chunking (chunker id and parameters),
the query words, the analyzer, the system's identity in the registry (:meth:`harness.retrieve.registry.SystemPlan.key`:
kind, options, inputs and, for ``py:`` retrievers and rerankers, the sha256 of their source file), the per-query
depth (fusions and ``py:`` retrievers only), the libraries that score (bm25s, scikit-learn, numpy) and this file's
:data:`OUTCOMES_VERSION`. Their sha256 (:func:`outcome_key`) names one file
``<workdir>/known-item/outcomes/<key>.npz`` holding the outcome arrays and ``<key>.json`` holding the system's
config and timings; both are written atomically (temporary file, then rename), so a killed run leaves either a whole
entry or none. The analysed tokens of the chunks and queries are cached beside them (``<workdir>/known-item/tokens``,
keyed by corpus hash, chunking, query words and analyzer). ``$HARNESS_KI_CACHE`` moves both (outcomes in it, tokens
in its ``tokens`` folder). A ``py:`` retriever whose answers depend on more than its source file (a model it
downloads, a service it calls) must be re-run with ``--no-cache``.

Both caches are derived files verified like the BM25 index and the evidence cache (:mod:`harness.derived`, issue 44
item 5): each entry is stamped, after its files are written, by ``<key>.manifest.json`` (sizes, mtimes, sha256,
the number of queries); a load checks the stamp (re-hashing only a file whose size or mtime changed), then reads the
arrays and checks their shapes, dtypes and values (``hit``, ``tie``, ``tie_decided_hit``, ``empty_query`` in
{0, 1}, ``hit = 1`` exactly when ``rank = 1``, ``rank >= 0``, ``top_chunk >= -1``; token ids inside the vocabulary,
offsets non-decreasing). An entry that fails (edited, truncated, not a zip, written before the stamp) is never used:
one ``harness: known-item ... cache <path>: <problem>; rebuilding it`` line, the entry removed, the system searched
(the tokens analysed) again and the entry written anew.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from harness.derived import check_manifest, damaged_notice, write_manifest
from harness.errors import HarnessError
from harness.io import atomic_write_json, canonical_json, temporary_path
from harness.studies.known_item.search import KnownItemOutcomes

__all__ = ["OUTCOMES_VERSION", "cache_folder", "load_outcomes", "outcome_key", "save_outcomes"]

OUTCOMES_VERSION = 1
"""Bumped whenever the outcome rules (package docstring, rules 4-5) or a face's scoring change."""
_ARRAYS = ("hit", "rank", "tie", "tie_decided_hit", "empty_query", "top_chunk")
OUTCOMES_KIND, TOKENS_KIND = "known-item-outcomes", "known-item-tokens"
"""The ``kind`` of the two caches' manifests (:mod:`harness.derived`)."""
_READ_ERRORS = (OSError, ValueError, KeyError, IndexError, TypeError, EOFError, zipfile.BadZipFile, zlib.error)
"""What reading a damaged ``.npz`` raises (a truncated, overwritten or foreign file): the entry is rebuilt."""


class _Damaged(Exception):
    """A cache entry that fails its check (the message: one phrase naming what)."""


def _manifest_path(path: Path) -> Path:
    return path.with_name(f"{path.name.removesuffix('.npz')}.manifest.json")


def _discard(what: str, path: Path, problem: str, files: list[Path]) -> None:
    """One notice line for a damaged entry and its removal (best effort: a read-only cache is left, never used)."""
    damaged_notice(what, path, problem)
    for f in files:
        with contextlib.suppress(OSError):
            os.unlink(f)


def _stamp(path: Path, kind: str, files: list[Path], facts: dict) -> None:
    """Write the entry's manifest (last: an entry without one is not trusted); a read-only cache is left unstamped."""
    with contextlib.suppress(OSError, HarnessError):
        write_manifest(_manifest_path(path), kind, {f.name: f for f in files}, facts=facts)


def _flags(name: str, a: np.ndarray) -> np.ndarray:
    if a.dtype.kind not in "biu" or not np.isin(a, (0, 1)).all():
        raise _Damaged(f"field {name}: values outside {{0, 1}} (dtype {a.dtype})")
    return a


def _checked_outcomes(data: dict[str, np.ndarray], n_queries: int) -> dict[str, np.ndarray]:
    """``data`` when every array has shape (n_queries,), an integer or boolean dtype and values in range."""
    for k in _ARRAYS:
        if data[k].shape != (n_queries,):
            raise _Damaged(f"field {k}: shape {list(data[k].shape)}, expected [{n_queries}]")
    for k in ("hit", "tie", "tie_decided_hit", "empty_query"):
        _flags(k, data[k])
    for k, low in (("rank", 0), ("top_chunk", -1)):
        if data[k].dtype.kind not in "iu" or (data[k].size and int(data[k].min()) < low):
            raise _Damaged(f"field {k}: values below {low} or not integers (dtype {data[k].dtype})")
    if not np.array_equal(data["hit"] == 1, data["rank"] == 1):
        bad = int(np.flatnonzero((data["hit"] == 1) != (data["rank"] == 1))[0])
        raise _Damaged(f"query {bad}: field hit {int(data['hit'][bad])} disagrees with rank {int(data['rank'][bad])}")
    return data


def _libraries() -> dict[str, str | None]:
    import bm25s
    import sklearn

    return {"bm25s": bm25s.__version__, "scikit-learn": sklearn.__version__, "numpy": np.__version__}


def outcome_key(cc, query_words: int, analyzer: dict, plan, name: str, depth: int, batched: Mapping) -> str:
    """The sha256 (hex) naming the cached outcomes of system ``name`` of ``plan`` on the chunked corpus ``cc``
    (module docstring); ``depth`` counts only for systems without a batched face (kinds not in ``batched``), whose
    rankings stop at it."""
    payload = {
        "version": OUTCOMES_VERSION,
        "corpus_hash": cc.corpus_hash,
        "chunker_id": cc.chunker_id,
        "chunker_params": cc.chunker_params,
        "query_words": query_words,
        "analyzer": analyzer,
        "system": plan.key(name),
        "depth": None if plan.nodes[name].record.kind in batched else depth,
        "libraries": _libraries(),
    }
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()


def cache_folder(workdir: str | Path) -> Path:
    """``<workdir>/known-item/outcomes``, or ``$HARNESS_KI_CACHE`` when set (a CI cache of its own, or a benchmark's
    empty folder)."""
    env = os.environ.get("HARNESS_KI_CACHE")
    return Path(env) if env else Path(workdir) / "known-item" / "outcomes"


def load_outcomes(workdir: str | Path, key: str, name: str, n_queries: int) -> KnownItemOutcomes | None:
    """The cached outcomes of ``key`` under the system name ``name``, or ``None``: no entry, or one that fails its
    check (module docstring: one notice line, the entry removed; the caller searches and saves it again)."""
    folder = cache_folder(workdir)
    arrays, meta = folder / f"{key}.npz", folder / f"{key}.json"
    man = _manifest_path(arrays)
    if not any(p.exists() or p.is_symlink() for p in (arrays, meta, man)):
        return None
    try:
        problem = check_manifest(
            man, OUTCOMES_KIND, {arrays.name: arrays, meta.name: meta}, facts={"queries": n_queries}
        )
        if problem is not None:
            raise _Damaged(problem)
        info = json.loads(meta.read_text(encoding="utf-8"))
        if not isinstance(info, dict) or not isinstance(info.get("config", {}), dict):
            raise _Damaged(f"{meta.name}: not an object with a config object")
        seconds, build = float(info.get("seconds", 0.0)), float(info.get("build_seconds", 0.0))
        with np.load(arrays, allow_pickle=False) as z:
            data = _checked_outcomes({k: z[k] for k in _ARRAYS}, n_queries)
    except (_Damaged, *_READ_ERRORS) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        _discard("known-item outcomes cache", arrays, why, [arrays, meta, man])
        return None
    return KnownItemOutcomes(
        name,
        data["hit"],
        data["rank"],
        data["tie"],
        data["tie_decided_hit"],
        data["empty_query"],
        data["top_chunk"],
        seconds,
        build,
        {**info.get("config", {}), "outcomes_cache": {"key": key, "hit": True}},
    )


def save_outcomes(workdir: str | Path, key: str, o: KnownItemOutcomes) -> None:
    """Store ``o`` under ``key`` (arrays, then the JSON, both atomic, then the manifest that makes the entry
    trusted)."""
    folder = cache_folder(workdir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{key}.npz"
    tmp = temporary_path(path)
    try:
        with open(tmp, "wb") as f:
            np.savez(f, **{k: np.asarray(getattr(o, k)) for k in _ARRAYS})
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; the usual permissions, as atomic_write_text gives
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    config = {k: v for k, v in o.config.items() if k != "outcomes_cache"}
    meta = folder / f"{key}.json"
    atomic_write_json(meta, {"config": config, "seconds": o.seconds, "build_seconds": o.build_seconds})
    _stamp(path, OUTCOMES_KIND, [path, meta], {"queries": int(np.asarray(o.hit).size)})


def _tokens_path(workdir: str | Path, cc, query_words: int, analyzer: dict) -> Path:
    payload = {"version": OUTCOMES_VERSION, "corpus_hash": cc.corpus_hash, "chunker_id": cc.chunker_id,
               "chunker_params": cc.chunker_params, "query_words": query_words, "analyzer": analyzer}  # fmt: skip
    key = hashlib.sha256(canonical_json(payload).encode()).hexdigest()
    env = os.environ.get("HARNESS_KI_CACHE")
    root = Path(env) / "tokens" if env else Path(workdir) / "known-item" / "tokens"
    return root / f"{key}.npz"


def _pack(lists) -> tuple[list[str], np.ndarray, np.ndarray]:
    vocab: dict[str, int] = {}
    ids = np.fromiter((vocab.setdefault(t, len(vocab)) for toks in lists for t in toks), dtype=np.int32)
    offsets = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in lists], out=offsets[1:])
    return list(vocab), ids, offsets


def _token_lists(vocab: np.ndarray, ids: np.ndarray, off: np.ndarray, n: int, side: str) -> list[list[str]]:
    """The ``n`` token lists of one side, after checking ids and offsets (raises :class:`_Damaged`)."""
    if ids.ndim != 1 or ids.dtype.kind not in "iu" or (ids.size and (ids.min() < 0 or ids.max() >= vocab.size)):
        raise _Damaged(f"field {side}_ids: token ids outside the vocabulary of {vocab.size}")
    if off.shape != (n + 1,) or off.dtype.kind not in "iu":
        raise _Damaged(f"field {side}_off: shape {list(off.shape)}, expected [{n + 1}]")
    if off[0] != 0 or off[-1] != ids.size or np.any(np.diff(off) < 0):
        raise _Damaged(f"field {side}_off: offsets not non-decreasing from 0 to {ids.size}")
    words = vocab[ids].tolist()
    return [words[a:b] for a, b in zip(off[:-1].tolist(), off[1:].tolist(), strict=True)]


def load_tokens(workdir: str | Path, cc, query_words: int, analyzer: dict):
    """The analysed chunk and query tokens of ``cc`` cached by :func:`save_tokens` (``(tokens, qtokens)``), or
    ``None``: no entry, or one that fails its check (module docstring: one notice line, the entry removed; the caller
    analyses the texts and saves them again); keyed by the corpus hash, chunking, query words and analyzer."""
    path = _tokens_path(workdir, cc, query_words, analyzer)
    man = _manifest_path(path)
    if not any(p.exists() or p.is_symlink() for p in (path, man)):
        return None
    sizes = {"chunks": len(cc.texts), "queries": len(cc.query_texts)}
    try:
        problem = check_manifest(man, TOKENS_KIND, {path.name: path}, facts=sizes)
        if problem is not None:
            raise _Damaged(problem)
        with np.load(path, allow_pickle=False) as z:
            vocab = np.asarray(str(z["vocab"]).split("\n"), dtype=object)
            out = [
                _token_lists(vocab, z[f"{side}_ids"], z[f"{side}_off"], sizes[what], side)
                for side, what in (("c", "chunks"), ("q", "queries"))
            ]
    except (_Damaged, *_READ_ERRORS) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        _discard("known-item tokens cache", path, why, [path, man])
        return None
    return out[0], out[1]


def save_tokens(workdir: str | Path, cc, query_words: int, analyzer: dict, tokens, qtokens) -> None:
    """Store the analysed tokens (one vocabulary, int32 ids and offsets per side; written atomically)."""
    path = _tokens_path(workdir, cc, query_words, analyzer)
    path.parent.mkdir(parents=True, exist_ok=True)
    vocab, c_ids, c_off = _pack(tokens)
    index = {t: i for i, t in enumerate(vocab)}
    q_ids = np.fromiter((index.setdefault(t, len(index)) for toks in qtokens for t in toks), dtype=np.int32)
    vocab = list(index)
    q_off = np.zeros(len(qtokens) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in qtokens], out=q_off[1:])
    if any("\n" in t for t in vocab):
        return  # not representable in the joined vocabulary: no cache
    tmp = temporary_path(path)
    try:
        with open(tmp, "wb") as f:
            np.savez(f, vocab=np.asarray("\n".join(vocab)), c_ids=c_ids, c_off=c_off, q_ids=q_ids, q_off=q_off)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _stamp(path, TOKENS_KIND, [path], {"chunks": len(tokens), "queries": len(qtokens)})
