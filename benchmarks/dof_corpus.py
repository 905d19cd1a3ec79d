"""A DOF-sized synthetic corpus (657,867 Markdown documents, about 6.73 M ``md-words-v1`` chunks) built from the real
``mx-leyes-dof`` corpus, with the real gold set's documents inside it verbatim.

What it writes (``OUT/``, plain Markdown, the harness's input format; nothing compressed):

* ``dof/...``, ``leyes/...``: every document of the real corpus (507), byte for byte under its real relative path,
  with its real ``metadata.jsonl`` record. The 42 gold questions' documents are among them, so the gold set's quotes,
  chunk ids, headings and document metadata validate against this corpus.
* ``../goldset/`` (beside ``OUT``): the real gold set ``datasets/mx-leyes-dof-eval-v1`` re-declared on this corpus:
  the records file unchanged (same sha256), the manifest's corpus fields (``corpus_hash``, ``corpus_version``,
  ``corpus_documents``, date range) set to this corpus's (:func:`write_goldset`).
* ``syn/<date>/<SEC>_<nnn>.md``: ``n_docs - 507`` synthetic documents. Each is a real title (two words replaced)
  under ``#``, then blocks resampled from the real corpus until its word count is reached: real section headings
  (``##``, at the real share of heading blocks) and real paragraphs in which each word is replaced with probability
  ``REPLACE`` (0.12) by a word drawn from the real corpus's unigram distribution (92 %) or, for 8 % of replacements,
  from a Zipf-Mandelbrot vocabulary of 2^20 Spanish-like words (``synthetic.make_vocabulary``: new types, so the
  vocabulary grows with corpus size as Heaps' law says DOF's does). Numbers and legal phrasing stay as in the
  real text.
* Document lengths: log-normal with sigma 1.2 (heavy-tailed, as ``synthetic.py``), the median calibrated on a
  sample of 2,000 generated documents chunked by ``md-words-v1``; then every document is chunked as it is written
  and each next length is scaled by (chunks left / documents left) / the calibrated chunks per document (within
  ``MAX_STEER``), so the whole corpus has ``target_chunks`` (default DOF's 6,730,304) chunks to within a few; the
  real documents' chunks count towards the target. (The calibration alone left the first full-size corpus 3.3 %
  under: 6,509,071 chunks.)
* ``metadata.jsonl``: ``doc_id`` (``syn-YYYYMMDD-sec-nnn``), ``path``, ``title``, ``date`` (uniform 1999-01-04 ..
  2026-04-24, so chronological slices cut through synthetic and real documents), ``institution`` and ``doc_type``
  resampled from the real records, ``collection`` ``dof_synthetic``, ``edition``, ``words``.

Deterministic: the same ``(n_docs, target_chunks, seed)`` and real corpus write the same bytes. ``--scale F``
multiplies both the document and the chunk targets (development sizes: 0.015 is about 10^5 chunks).

Command line: ``python benchmarks/dof_corpus.py OUT --scale 1.0 [--seed 0]`` (about 15 minutes on one core at full
size; the output's size is printed and written to ``OUT/generation.json``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synthetic  # noqa: E402

from harness.corpus.chunker import get_chunker  # noqa: E402

DOF_DOCUMENTS = 657_867
DOF_CHUNKS = 6_730_304
DEFAULT_REAL = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus" / "mx-leyes-dof"
GOLDSET = Path(__file__).resolve().parent.parent / "datasets" / "mx-leyes-dof-eval-v1"
REPLACE = 0.12
NOVEL_SHARE = 0.08
SIGMA = 1.2
MIN_WORDS, MAX_WORDS = 30, 300_000
#: Largest factor by which a document's drawn length is steered towards the chunk target (and 1 / it, the smallest).
MAX_STEER = 2.0
DATE_MIN, DATE_MAX = dt.date(1999, 1, 4), dt.date(2026, 4, 24)
SECTIONS = ("MAT", "VES", "EXT")
CALIBRATION_DOCS = 2000

__all__ = ["DOF_CHUNKS", "DOF_DOCUMENTS", "RealPools", "generate"]


class RealPools:
    """The real corpus cut into what the generator resamples: a word table, paragraphs as int32 word-id arrays,
    heading texts, titles, institutions and document types; plus the real documents' metadata records.

    Args:
        real: the real corpus folder (``metadata.jsonl`` plus the Markdown files it names).
        seed: seed of the novel-word vocabulary.
    """

    def __init__(self, real: Path, seed: int):
        self.real = Path(real)
        self.records = [
            json.loads(line) for line in (self.real / "metadata.jsonl").read_text("utf-8").splitlines() if line.strip()
        ]
        words: dict[str, int] = {}
        paras: list[np.ndarray] = []
        self.headings: list[str] = []
        n_blocks = 0
        for rec in self.records:
            text = (self.real / rec["path"]).read_text("utf-8")
            for block in text.split("\n\n"):
                block = block.strip()
                if not block:
                    continue
                n_blocks += 1
                if block.startswith("#"):
                    if "\n" not in block and not block.startswith("# "):
                        self.headings.append(block.lstrip("#").strip())
                    continue
                toks = block.split()
                if len(toks) < 3:
                    continue
                for i in range(0, len(toks), 150):  # long tables and lists: at most 150 words a piece
                    piece = toks[i : i + 150]
                    paras.append(np.fromiter((words.setdefault(w, len(words)) for w in piece), np.int32, len(piece)))
        self.heading_share = len(self.headings) / max(n_blocks, 1)
        self.n_real_words = len(words)
        novel = [w for w in synthetic.make_vocabulary(1 << 20, seed=seed) if w not in words]
        self.vocab = np.array(list(words) + novel, dtype=object)
        self.novel_cdf = np.cumsum(synthetic.zipf_probabilities(len(novel)))
        self.paragraphs = paras
        self.n_par = len(paras)
        self.par_len = np.array([p.size for p in paras], dtype=np.int64)
        self.stream = np.concatenate(paras)  # the unigram distribution: draw a position
        self.titles = [r.get("title") or "Documento" for r in self.records]
        self.institutions = [r.get("institution") or "" for r in self.records]
        self.doc_types = [r.get("doc_type") or "aviso" for r in self.records]


def _replace(ids: np.ndarray, pools: RealPools, rng: np.random.Generator, share: float) -> np.ndarray:
    """``ids`` with each position replaced with probability ``share`` (unigram or novel word)."""
    ids = ids.copy()
    hit = np.flatnonzero(rng.random(ids.size) < share)
    if hit.size:
        new = pools.stream[rng.integers(0, pools.stream.size, hit.size)]
        novel = rng.random(hit.size) < NOVEL_SHARE
        if novel.any():
            k = np.searchsorted(pools.novel_cdf, rng.random(int(novel.sum())) * pools.novel_cdf[-1], side="right")
            new[novel] = pools.n_real_words + np.minimum(k, len(pools.novel_cdf) - 1)
        ids[hit] = new
    return ids


def render_document(pools: RealPools, rng: np.random.Generator, n_words: int) -> tuple[str, str, int]:
    """One synthetic document of about ``n_words`` words: ``(title, markdown, words)`` (blocks drawn at once, the
    words replaced over the whole document in one vectorised pass)."""
    t = rng.integers(len(pools.titles))
    title_words = pools.titles[t].split()
    if len(title_words) > 3:
        for pos in rng.integers(0, len(title_words), 2):
            title_words[pos] = pools.vocab[pools.stream[rng.integers(pools.stream.size)]]
    title = " ".join(title_words)
    blocks: list[int] = []  # paragraph index, or -1 - heading index
    words = 0
    while words < n_words:
        n_est = max(4, int((n_words - words) / 30) + 4)
        is_head = rng.random(n_est) < pools.heading_share
        picks = np.where(is_head, -1 - rng.integers(0, len(pools.headings), n_est), rng.integers(0, pools.n_par, n_est))
        lens = np.where(is_head, 0, pools.par_len[np.maximum(picks, 0)])
        cum = words + np.cumsum(lens)
        stop = int(np.searchsorted(cum, n_words, side="left")) + 1
        blocks.extend(picks[:stop].tolist())
        words = int(cum[min(stop, n_est) - 1])
    paras = [pools.paragraphs[b] for b in blocks if b >= 0]
    ids = _replace(np.concatenate(paras), pools, rng, REPLACE) if paras else np.zeros(0, np.int32)
    toks = pools.vocab[ids].tolist()
    out = [f"# {title}"]
    pos = 0
    for b in blocks:
        if b < 0:
            out.append(f"## {pools.headings[-1 - b]}")
        else:
            n = pools.paragraphs[b].size
            out.append(" ".join(toks[pos : pos + n]))
            pos += n
    return title, "\n\n".join(out) + "\n", len(toks)


def _lengths(rng: np.random.Generator, n: int, median: float) -> np.ndarray:
    return np.clip(np.round(rng.lognormal(np.log(median), SIGMA, n)), MIN_WORDS, MAX_WORDS).astype(np.int64)


def _calibrate(pools: RealPools, chunks_per_doc: float, seed: int) -> tuple[float, float]:
    """The log-normal median (words) giving ``chunks_per_doc`` chunks per synthetic document under md-words-v1,
    from a sample at a trial median (chunks grow close to linearly with words); returns ``(median, measured)``."""
    chunker = get_chunker("md-words-v1")
    rng = np.random.default_rng([seed, 7])
    trial = 500.0
    n_chunks = 0
    for i, w in enumerate(_lengths(rng, CALIBRATION_DOCS, trial)):
        n_chunks += len(chunker.chunk(f"cal-{i}", render_document(pools, rng, int(w))[1]))
    per_doc = n_chunks / CALIBRATION_DOCS
    return trial * chunks_per_doc / per_doc, per_doc


def _dir_bytes(path: Path) -> tuple[int, int]:
    """(apparent bytes, allocated bytes) of every file under ``path``."""
    apparent = allocated = 0
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            st = os.stat(os.path.join(dirpath, f))
            apparent += st.st_size
            allocated += st.st_blocks * 512
    return apparent, allocated


def generate(
    out: Path, *, n_docs: int = DOF_DOCUMENTS, target_chunks: int = DOF_CHUNKS, seed: int = 0, real: Path = DEFAULT_REAL
) -> dict:
    """Write the corpus to ``out`` (which must not exist or be empty); returns the figures written to
    ``out/generation.json`` (documents, words, calibration, seconds, bytes on disk).

    Raises:
        SystemExit: ``out`` exists and is not empty (never overwritten), or the targets leave no synthetic room.
    """
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"{out}: exists and is not empty; remove it first")
    t0 = time.perf_counter()
    pools = RealPools(real, seed)
    n_real = len(pools.records)
    chunker = get_chunker("md-words-v1")
    real_chunks = 0
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    meta_lines = []
    for rec in pools.records:
        src = pools.real / rec["path"]
        dst = tmp / rec["path"]
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        real_chunks += len(chunker.chunk(rec["doc_id"], src.read_text("utf-8")))
        meta_lines.append(json.dumps(rec, ensure_ascii=False))
    n_syn = n_docs - n_real
    if n_syn <= 0 or target_chunks <= real_chunks:
        raise SystemExit(f"targets {n_docs} documents / {target_chunks} chunks leave no room beside the real corpus")
    per_doc = (target_chunks - real_chunks) / n_syn
    median, trial_per_doc = _calibrate(pools, per_doc, seed)
    t_pools = time.perf_counter() - t0
    rng = np.random.default_rng(seed)
    lengths = _lengths(rng, n_syn, median)
    span = (DATE_MAX - DATE_MIN).days + 1
    days = np.sort(rng.integers(0, span, n_syn))
    secs = rng.integers(0, len(SECTIONS), n_syn)
    meta_idx = rng.integers(0, n_real, n_syn)
    counters: dict[tuple[int, int], int] = {}
    total_words = 0
    syn_target = target_chunks - real_chunks
    made_chunks = 0
    made_dirs: set[int] = set()
    for i in range(n_syn):
        day = DATE_MIN + dt.timedelta(days=int(days[i]))
        sec = SECTIONS[secs[i]]
        key = (int(days[i]), int(secs[i]))
        num = counters[key] = counters.get(key, 0) + 1
        rel = f"syn/{day.isoformat()}/{sec}_{num:03d}.md"
        if days[i] not in made_dirs:
            (tmp / "syn" / day.isoformat()).mkdir(parents=True, exist_ok=True)
            made_dirs.add(int(days[i]))
        # steer the lengths so the documents left make the chunks left (each document is chunked as written): the
        # calibration sample alone left the full corpus 3.3 % under DOF's chunk count
        steer = min(MAX_STEER, max(1 / MAX_STEER, (syn_target - made_chunks) / (n_syn - i) / per_doc))
        n_words = min(MAX_WORDS, max(MIN_WORDS, round(int(lengths[i]) * steer)))
        title, text, words = render_document(pools, rng, n_words)
        made_chunks += len(chunker.chunk(rel, text))
        with open(tmp / rel, "w", encoding="utf-8") as fh:
            fh.write(text)
        total_words += words
        m = int(meta_idx[i])
        meta_lines.append(
            json.dumps(
                {
                    "doc_id": f"syn-{day.strftime('%Y%m%d')}-{sec.lower()}-{num:03d}",
                    "path": rel,
                    "title": title,
                    "date": day.isoformat(),
                    "institution": pools.institutions[m],
                    "doc_type": pools.doc_types[m],
                    "words": words,
                    "collection": "dof_synthetic",
                    "edition": sec,
                },
                ensure_ascii=False,
            )
        )
        if (i + 1) % 50_000 == 0:
            print(f"   {i + 1}/{n_syn} documents, {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    (tmp / "metadata.jsonl").write_text("\n".join(meta_lines) + "\n", encoding="utf-8")
    apparent, allocated = _dir_bytes(tmp)
    stats = {
        "n_documents": n_docs,
        "n_real_documents": n_real,
        "n_synthetic_documents": n_syn,
        "target_chunks": target_chunks,
        "real_chunks": real_chunks,
        "synthetic_chunks": made_chunks,
        "chunks": real_chunks + made_chunks,
        "synthetic_words": total_words,
        "median_words": median,
        "calibration_chunks_per_doc_at_500": trial_per_doc,
        "target_chunks_per_synthetic_doc": per_doc,
        "seed": seed,
        "pools_seconds": t_pools,
        "seconds": time.perf_counter() - t0,
        "apparent_bytes": apparent,
        "allocated_bytes": allocated,
        "real_vocabulary": pools.n_real_words,
        "paragraph_pool": len(pools.paragraphs),
    }
    (tmp / "generation.json").write_text(json.dumps(stats, indent=1), encoding="utf-8")
    tmp.rename(out)
    write_goldset(out, out.parent / "goldset")
    return stats


def write_goldset(corpus_dir: Path, dest: Path, source: Path = GOLDSET) -> Path:
    """Re-declare the gold set ``source`` on the corpus ``corpus_dir`` in ``dest`` (replaced if it exists): the
    records and corrections copied unchanged, the manifest's corpus fields set to this corpus's (hash from
    :func:`harness.corpus.source.scan_corpus`, which reads every document). Returns ``dest``."""
    from harness.corpus.source import scan_corpus

    src = scan_corpus(corpus_dir)
    meta_path = next(Path(source).glob("*.meta.json"))
    meta = json.loads(meta_path.read_text("utf-8"))
    meta.update(src.manifest_fields())
    tmp = dest.with_name(dest.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(source, tmp)
    (tmp / meta_path.name).write_text(json.dumps(meta, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    return dest


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of DOF's documents and chunks")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--real", type=Path, default=DEFAULT_REAL)
    ap.add_argument("--goldset-only", action="store_true", help="only (re)write OUT/../goldset for the corpus OUT")
    args = ap.parse_args(argv)
    if args.goldset_only:
        print(write_goldset(args.out, args.out.parent / "goldset"))
        return {}
    stats = generate(
        args.out,
        n_docs=round(DOF_DOCUMENTS * args.scale),
        target_chunks=round(DOF_CHUNKS * args.scale),
        seed=args.seed,
        real=args.real,
    )
    print(json.dumps(stats, indent=1))
    return stats


if __name__ == "__main__":
    main()
