"""From open to first result (issue 43, item 3): opening an existing vector index, loading its packed bits and the
first numpy query, the old path (as of ff97a45) beside the new one (the sidecar of arrays,
:mod:`harness.retrieve.vector.sidecar`), in one run.

A synthetic corpus database is written directly (not ingested, not embedded): ``--chunks`` chunks in documents of
``--chunks-per-doc``, chunk ids ``dNNNNNNN#i`` (so ``#10`` sorts before ``#2``, as in real ids), and a sqlite-vec
``vec0(embedding bit[--dim], doc_pos integer)`` table of uniform random bits, built the way the harness builds it.
Every figure is measured on the same warm files (the page cache holds them after the build), one repetition each
(they are one-off costs):

* **open**: old = the chunk table read into Python lists, ids ranked by a Python sort (``id_rank``), document
  indices by dict (``VectorIndex.__init__`` before the sidecar); new = ``VectorIndex(...)`` with the sidecar already
  written (ids and ranks as arrays, bits memory-mapped); also new with no sidecar yet (computes and writes it: the
  one-off cost after a build).
* **bit load**: old = the vec0 table row by row into a ``uint8`` matrix (``_load_bits`` before); new = the slice's
  bits from the sidecar (a memory map for a whole-table slice) plus one pass that touches every page.
* **VectorIndex.build on the existing index**: old = ``build_table``'s reads as of ff97a45 (the chunk table and the
  vec0 rowids into Python, the pending rows, the slice's row count by ``rowid IN``) plus the old constructor's;
  new = the whole ``VectorIndex.build`` call (record and manifest checks, the slice's row count on the rowid
  shadow table, the sidecar).
* **first numpy query**: one query at ``--depth`` on a freshly opened index, old (bit load inside it, as before) and
  new, then a second query on each (steady state). The new index's rankings must equal the old's; a mismatch exits 1.

Usage::

    .venv/bin/python benchmarks/bench_vector_open.py [--chunks 1000000] [--dim 256] [--chunks-per-doc 70]
        [--depth 100] [--seed 0] [--json out.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import header, peak_rss_mb, write_json  # noqa: E402
from harness.corpus.ingest import ingest  # noqa: E402
from harness.corpus.store import Corpus  # noqa: E402
from harness.ranking import id_rank  # noqa: E402
from harness.retrieve.binary import BIT_ORDER, binarisation_rule  # noqa: E402
from harness.retrieve.vector import VectorIndex, select_slice  # noqa: E402
from harness.retrieve.vector.sidecar import sidecar_dir  # noqa: E402
from harness.retrieve.vector.store import _doc_order_sha, _prepare_table, _stamp_table, table_name  # noqa: E402


class OldBitsIndex(VectorIndex):
    """The index with the old bit load: the vec0 table row by row (``_load_bits`` as of ff97a45)."""

    def _load_bits(self) -> np.ndarray:
        if self._bits is None:
            bits = np.zeros((self._rowids.shape[0], self.nbytes), dtype=np.uint8)
            seen = np.zeros(self._rowids.shape[0], dtype=bool)
            for rid, blob in self.corpus.conn.execute(f'SELECT rowid, embedding FROM "{self.table}"'):
                if rid < self._slot.shape[0] and (s := self._slot[rid]) >= 0:
                    bits[s] = np.frombuffer(blob, dtype=np.uint8)
                    seen[s] = True
            if not seen.all():
                raise RuntimeError(f"{self.table}: {int((~seen).sum())} slice chunks have no vector")
            self._bits = bits
        return self._bits


def old_open(corpus: Corpus, doc_set: frozenset) -> dict:
    """The id work of ``VectorIndex.__init__`` as of ff97a45 (Python lists, a Python sort)."""
    rows = corpus.conn.execute("SELECT rowid, chunk_id, doc_id, text_sha256 FROM chunks ORDER BY rowid").fetchall()
    rows = [r for r in rows if r[2] in doc_set]
    rowids = np.array([r[0] for r in rows], dtype=np.int64)
    chunk_ids = [r[1] for r in rows]
    chunk_rank = id_rank(chunk_ids)
    doc_ids = sorted(doc_set)
    doc_index = {d: i for i, d in enumerate(doc_ids)}
    doc_idx = np.array([doc_index[r[2]] for r in rows], dtype=np.int64)
    max_rowid = int(corpus.conn.execute("SELECT coalesce(max(rowid), 0) FROM chunks").fetchone()[0])
    slot = np.full(max_rowid + 1, -1, dtype=np.int64)
    slot[rowids] = np.arange(len(rows), dtype=np.int64)
    return {"rowids": rowids, "chunk_rank": chunk_rank, "doc_idx": doc_idx, "shas": [r[3] for r in rows]}


def build_table_reads(corpus: Corpus, table: str, sl) -> int:
    """The reads ``build_table`` still makes on an existing sign-bit index (not changed by the sidecar): the chunk
    table into Python tuples, the vec0 rowids into a set, the pending rows, and the slice's row count."""
    conn = corpus.conn
    pos = {d: i for i, d in enumerate(sl.doc_order)}
    in_slice = set(sl.doc_ids)
    chunks = conn.execute("SELECT rowid, doc_id, text_sha256 FROM chunks ORDER BY rowid").fetchall()
    members = [(pos[d], rid, h) for rid, d, h in chunks if d in in_slice]
    have = {r[0] for r in conn.execute(f'SELECT rowid FROM "{table}"').fetchall()}
    todo = sorted(b for b in members if b[1] not in have)
    n_have = conn.execute(
        f'SELECT count(*) FROM "{table}" WHERE rowid IN (SELECT rowid FROM chunks WHERE doc_id IN '
        "(SELECT value FROM json_each(?)))",
        (json.dumps(list(sl.doc_ids)),),
    ).fetchone()[0]
    return len(todo) + int(n_have)


def bench_embedder(n: int, dim: int, seed: int) -> SimpleNamespace:
    """A stand-in embedder (never called: the table is complete): what the index and its record read."""
    return SimpleNamespace(
        dim=dim, model_id="bench", weights_sha256=hashlib.sha256(f"{n}|{dim}|{seed}".encode()).hexdigest()
    )


def make_corpus(root: Path, n: int, per_doc: int, dim: int, seed: int) -> tuple[Path, str]:
    """A corpus database of ``n`` synthetic chunks and its vec0 table (returns the database path and table)."""
    src = root / "src"
    src.mkdir(parents=True)
    (src / "d0.md").write_text("# d0\nx\n", encoding="utf-8")
    (src / "metadata.jsonl").write_text('{"doc_id": "d0", "path": "d0.md", "date": "2000-01-01"}\n', "utf-8")
    db, _, _ = ingest(src, root / "work")
    corpus = Corpus(db)
    conn = corpus.conn
    rng = np.random.default_rng(seed)
    n_docs = -(-n // per_doc)
    with conn:
        conn.execute("DELETE FROM chunks")
        conn.execute("DELETE FROM documents")
        conn.executemany(
            "INSERT INTO documents(doc_id, path, date, n_chunks, sha256) VALUES (?,?,?,?,?)",
            (
                (f"d{d:07d}", f"d{d:07d}.md", f"{2000 + d % 25}-01-01", min(per_doc, n - d * per_doc), "0" * 64)
                for d in range(n_docs)
            ),
        )
        conn.executemany(
            "INSERT INTO chunks(rowid, chunk_id, doc_id, chunk_index, heading_path, char_start, char_end, n_words, "
            "text, text_sha256) VALUES (?,?,?,?,'',0,1,1,'x',?)",
            (
                (r + 1, f"d{r // per_doc:07d}#{r % per_doc}", f"d{r // per_doc:07d}", r % per_doc, f"{r:064x}")
                for r in range(n)
            ),
        )
    emb = bench_embedder(n, dim, seed)
    table = table_name(emb.model_id, emb.weights_sha256)
    want = {  # the table's record, as build_table writes it, so that VectorIndex.build reuses the table
        "model_id": emb.model_id,
        "weights_sha256": emb.weights_sha256,
        "dim": dim,
        "chunker_id": corpus.manifest.chunker_id,
        "corpus_hash": corpus.manifest.corpus_hash,
        "bit_order": BIT_ORDER,
        "binarisation": binarisation_rule("sign"),
        "doc_order_sha256": _doc_order_sha(select_slice(corpus).doc_order),
    }
    _prepare_table(conn, emb, table, want, dim, {"dropped_stale_tables": [], "rebuilt": None})
    bits = rng.integers(0, 256, size=(n, dim // 8), dtype=np.uint8)
    with conn:
        for start in range(0, n, 100_000):
            conn.executemany(
                f'INSERT INTO "{table}"(rowid, embedding, doc_pos) VALUES (?, vec_bit(?), ?)',
                ((r + 1, bits[r].tobytes(), r // per_doc) for r in range(start, min(n, start + 100_000))),
            )
    _stamp_table(conn, db, table)  # the table's manifest, as a build leaves it
    corpus.close()
    return db, table


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chunks", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--chunks-per-doc", type=int, default=70)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    m = header(f"vector open to first result: {args.chunks:,} chunks x {args.dim} bits")
    root = Path(tempfile.mkdtemp(prefix="bench_vector_open_"))
    try:
        t_make, (db, table) = timed(lambda: make_corpus(root, args.chunks, args.chunks_per_doc, args.dim, args.seed))
        print(f"   synthetic corpus + vec0 table written in {t_make:.1f} s ({db.stat().st_size / 1e6:,.0f} MB)")
        corpus = Corpus(db)
        sl = select_slice(corpus)
        emb = bench_embedder(args.chunks, args.dim, args.seed)
        work = root / "wd"
        q = np.random.default_rng(args.seed + 1).integers(0, 256, size=(1, args.dim // 8), dtype=np.uint8)
        d = args.depth

        def new_index(cls=VectorIndex):
            return cls(corpus, emb, table, sl, backend="numpy", stats={}, workdir=work)

        def old_index():  # the old open's cost is old_open (timed apart); the arrays themselves are the same
            return new_index(OldBitsIndex)

        r: dict[str, float] = {}
        r["open_old"], _ = timed(lambda: old_open(corpus, frozenset(sl.doc_ids)))
        r["open_new_first"], ix0 = timed(new_index)  # no sidecar yet: computes and writes it
        assert ix0.sidecar == "written", ix0.sidecar
        side_mb = sum(p.stat().st_size for p in sidecar_dir(work, corpus, table).iterdir()) / 1e6
        r["open_new"], ix = timed(new_index)
        assert ix.sidecar == "sidecar", ix.sidecar
        # bit load apart: old row by row; new = the memory map plus one pass touching every page
        old_ix = old_index()
        r["bits_old"], old_bits = timed(old_ix._load_bits)
        r["bits_new"], new_bits = timed(lambda: (b := ix._load_bits(), int(b[:, 0].sum()))[0])
        if not np.array_equal(old_bits, new_bits):
            print("   MISMATCH: the sidecar's bits differ from the table's")
            return 1
        del old_ix, old_bits
        # first numpy query on freshly opened indexes (old: bit load inside it, as before), then a second one
        old_ix, new_ix = old_index(), new_index()
        r["first_old"], res_old = timed(lambda: old_ix.search_packed(q, doc_depth=d, chunk_depth=d))
        r["first_new"], res_new = timed(lambda: new_ix.search_packed(q, doc_depth=d, chunk_depth=d))
        r["second_old"], _ = timed(lambda: old_ix.search_packed(q, doc_depth=d, chunk_depth=d))
        r["second_new"], _ = timed(lambda: new_ix.search_packed(q, doc_depth=d, chunk_depth=d))
        if (res_old[0].docs, res_old[0].chunks) != (res_new[0].docs, res_new[0].chunks):
            print("   MISMATCH: the rankings differ between the old and the new path")
            return 1
        r["build_table_reads"], _ = timed(lambda: build_table_reads(corpus, table, sl))
        r["build_new"], built = timed(lambda: VectorIndex.build(corpus, work, emb, backend="numpy"))
        assert built.sidecar == "sidecar" and built.build_stats["n_inserted"] == 0, built.build_stats
        r["build_old"] = r["build_table_reads"] + r["open_old"]
        r["total_old"] = r["open_old"] + r["first_old"]
        r["total_new"] = r["open_new"] + r["first_new"]
        print(f"   sidecar: {side_mb:,.1f} MB in {sidecar_dir(work, corpus, table)}")
        print(f"   {'step':<34}{'old (s)':>10}{'new (s)':>10}{'old/new':>10}")
        for label, a, b in (
            ("open (ids, ranks)", "open_old", "open_new"),
            ("bit load", "bits_old", "bits_new"),
            (f"first numpy query (depth {d})", "first_old", "first_new"),
            ("second numpy query", "second_old", "second_new"),
            ("open + first query", "total_old", "total_new"),
        ):
            print(f"   {label:<34}{r[a]:>10.3f}{r[b]:>10.3f}{r[a] / r[b]:>9.1f}x")
        print(f"   open with no sidecar yet (computes and writes it, once after a build): {r['open_new_first']:.3f} s")
        print(
            f"   VectorIndex.build on the existing index: old = build_table's reads {r['build_table_reads']:.3f} s + "
            f"the constructor's {r['open_old']:.3f} s = {r['build_old']:.3f} s; new (whole call) {r['build_new']:.3f} s"
            f" ({r['build_old'] / r['build_new']:.1f}x)"
        )
        print(
            f"   build + first query: old {r['build_old'] + r['first_old']:.3f} s, "
            f"new {r['build_new'] + r['first_new']:.3f} s"
        )
        print(f"   peak RSS {peak_rss_mb():,.0f} MB; rankings identical (old vs new)")
        write_json(args.json, {"machine": m, "args": vars(args), "seconds": r, "sidecar_mb": side_mb})
        corpus.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
