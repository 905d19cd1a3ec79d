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
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from harness.io import atomic_write_json, canonical_json, temporary_path
from harness.studies.known_item.search import KnownItemOutcomes

__all__ = ["OUTCOMES_VERSION", "cache_folder", "load_outcomes", "outcome_key", "save_outcomes"]

OUTCOMES_VERSION = 1
"""Bumped whenever the outcome rules (package docstring, rules 4-5) or a face's scoring change."""
_ARRAYS = ("hit", "rank", "tie", "tie_decided_hit", "empty_query", "top_chunk")


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
    """The cached outcomes of ``key`` under the system name ``name``, or ``None`` (no entry, an unreadable one, or
    one of another length: such an entry is ignored and later replaced)."""
    folder = cache_folder(workdir)
    arrays, meta = folder / f"{key}.npz", folder / f"{key}.json"
    try:
        info = json.loads(meta.read_text(encoding="utf-8"))
        with np.load(arrays, allow_pickle=False) as z:
            data = {k: z[k] for k in _ARRAYS}
    except (OSError, ValueError, KeyError):
        return None
    if any(v.shape != (n_queries,) for v in data.values()):
        return None
    return KnownItemOutcomes(
        name,
        data["hit"],
        data["rank"],
        data["tie"],
        data["tie_decided_hit"],
        data["empty_query"],
        data["top_chunk"],
        float(info.get("seconds", 0.0)),
        float(info.get("build_seconds", 0.0)),
        {**info.get("config", {}), "outcomes_cache": {"key": key, "hit": True}},
    )


def save_outcomes(workdir: str | Path, key: str, o: KnownItemOutcomes) -> None:
    """Store ``o`` under ``key`` (arrays first, then the JSON that makes the entry visible; both atomic)."""
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
    atomic_write_json(
        folder / f"{key}.json", {"config": config, "seconds": o.seconds, "build_seconds": o.build_seconds}
    )


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


def load_tokens(workdir: str | Path, cc, query_words: int, analyzer: dict):
    """The analysed chunk and query tokens of ``cc`` cached by :func:`save_tokens` (``(tokens, qtokens)``), or
    ``None``; keyed by the corpus hash, chunking, query words and analyzer."""
    path = _tokens_path(workdir, cc, query_words, analyzer)
    try:
        with np.load(path, allow_pickle=False) as z:
            vocab = np.asarray(str(z["vocab"]).split("\n"), dtype=object)
            out = []
            for side in ("c", "q"):
                ids, off = z[f"{side}_ids"], z[f"{side}_off"]
                words = vocab[ids].tolist()
                out.append([words[a:b] for a, b in zip(off[:-1].tolist(), off[1:].tolist(), strict=True)])
    except (OSError, ValueError, KeyError):
        return None
    if len(out[0]) != len(cc.texts) or len(out[1]) != len(cc.query_texts):
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
