"""``py:`` retrievers for the known-item gate's benchmark and checks (``py:benchmarks/ki_plugins.py:DropBest10``).

:class:`DropBest10` is a deliberately worse candidate: bm25 (the harness's own index) over the known-item study's
chunks of ``$KI_CORPUS`` (default the shared corpus; 100-word ``md-words-v1`` chunks), answering every query as
``harness run`` would, except that for 10 % of the queries (those whose sha256 ends in a byte below 26) its best chunk
other than the query's own is dropped with every other chunk of its document (the best document goes).
Everything is deterministic.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from harness.retrieve.analyzer import SpanishAnalyzer
from harness.retrieve.base import QueryResult
from harness.retrieve.bm25 import BM25Index
from harness.studies.known_item import chunk_corpus

DEFAULT = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus" / "mx-leyes-dof"


def dropped(query: str) -> bool:
    """Whether ``query`` is one of the 10 % whose best chunk is dropped (26 / 256 of the sha256 last bytes)."""
    return hashlib.sha256(query.encode("utf-8")).digest()[-1] < 26


class DropBest10:
    """bm25 over the study's chunks, the best chunk dropped for 10 % of the queries (module docstring)."""

    def __init__(self) -> None:
        from harness.studies.known_item.cache import load_tokens

        cc = chunk_corpus(os.environ.get("KI_CORPUS", str(DEFAULT)))
        self.an = SpanishAnalyzer()
        # the study's cached tokens of the same chunks when $HARNESS_WORKDIR holds them (same analyzer: same tokens)
        got = load_tokens(os.environ.get("HARNESS_WORKDIR", ".harness"), cc, cc.query_words, self.an.config())
        tokens = got[0] if got else self.an.tokenize_many(cc.texts)
        self.index = BM25Index.build(cc.chunk_ids, tokens, self.an)
        self.own = {q: cc.chunk_ids[c] for q, c in zip(cc.query_texts, cc.query_chunks.tolist(), strict=True)}

    def search(self, queries, *, doc_depth, chunk_depth):
        found = self.index.search_many(list(queries), chunk_depth + 2)
        out = []
        for q, (ranking, flags) in zip(queries, found, strict=True):
            if dropped(q):  # the best document: that of the best chunk other than the query's own, all its chunks
                own = self.own.get(q)
                best = next((cid for cid, _ in ranking if cid != own), None)
                if best is not None:
                    doc = best.rsplit("#", 1)[0]
                    ranking = [(c, v) for c, v in ranking if c == own or c.rsplit("#", 1)[0] != doc]
            out.append(QueryResult(docs=None, chunks=ranking[: chunk_depth + 1], flags=flags))
        return out

    def config(self) -> dict:
        return {"what": "bm25 over the study's chunks, best chunk dropped for 10 % of queries (sha256 rule)"}


def drop_trec(run_dir: str | Path, goldset: str | Path, out: str | Path, *, system: str = "bm25", tag: str = "drop"):
    """The gold-set twin of :class:`DropBest10`: the run's ``system`` TREC export (documents and chunks) with the
    first document and every chunk of it dropped for the questions :func:`dropped` selects (by question text), as
    one TREC file tagged ``tag`` for ``harness evaluate --rankings``. Returns the question ids dropped."""
    from harness.goldset.io import load_goldset

    text = {r.qid: r.question for r in load_goldset(goldset).records}
    chosen = sorted(q for q, t in text.items() if dropped(t))
    lines = []
    top_doc: dict[str, str] = {}
    for line in (Path(run_dir) / "trec" / f"{system}.document.run").read_text("utf-8").splitlines():
        qid, _q0, item, rank, _score, _tag = line.split()
        if rank == "1":
            top_doc[qid] = item
    for level in ("document", "chunk"):
        by: dict[str, list[tuple[int, str, str]]] = {}
        for line in (Path(run_dir) / "trec" / f"{system}.{level}.run").read_text("utf-8").splitlines():
            qid, _q0, item, rank, score, _tag = line.split()
            by.setdefault(qid, []).append((int(rank), item, score))
        for qid, rows in sorted(by.items()):
            rows = sorted(rows)
            if qid in chosen:  # the best document and every chunk of it
                rows = [r for r in rows if r[1].rsplit("#", 1)[0] != top_doc[qid]]
            lines += [f"{qid} Q0 {item} {i} {score} {tag}" for i, (_r, item, score) in enumerate(rows, start=1)]
    Path(out).write_text("\n".join(lines) + "\n", "utf-8")
    return chosen


if __name__ == "__main__":  # python benchmarks/ki_plugins.py RUN_DIR GOLDSET OUT.trec
    import sys

    print(drop_trec(sys.argv[1], sys.argv[2], sys.argv[3]))
