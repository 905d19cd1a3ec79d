"""A synthetic Spanish-like Markdown corpus of a chosen size, for measuring how the harness's costs grow.

Model (calibrated on the real ``mx-leyes-dof`` corpus and on DOF's shape, figures in the README):

* **Vocabulary**: ``vocab_size`` (default 2^20) word types. The 120 most frequent are real Spanish function words
  (bm25s's Spanish stop-word list, shortest first), so the analyzer drops a realistic share of tokens; the others
  are built from Spanish-like syllables (onset + vowel + optional coda, an accent on about 1 vowel in 12, ``ñ``, ``ll``,
  ``ch``, ``rr``). A type's number of syllables grows with the logarithm of its frequency rank (frequent words are
  short), giving about 5.5 characters per running word and about 10 per distinct word, as in the real corpus.
* **Frequencies**: Zipf-Mandelbrot, ``p(r) ∝ 1 / (r + 2.7)^s`` with ``s = 1.13`` (the slope fitted on ranks
  10..10^4 of the real corpus). With a fixed large vocabulary the number of distinct words seen grows with corpus
  size, as Heaps' law says. About 1 token in 100 is a number (1..3,000).
* **Document lengths** (words): log-normal, median 500, sigma 1.2 (mean about 1,030 words, about 10 chunks of
  ``md-words-v1``: DOF's 6,730,304 chunks / 657,867 documents = 10.2), clipped to [30, 300,000]: heavy-tailed.
* **Markdown**: ``# <title>``, then sections under ``## Artículo <n>`` headings (section lengths geometric, mean 400
  words), paragraphs of 20..90 words separated by blank lines.
* **metadata.jsonl**: ``doc_id``, ``path``, ``title``, ``date`` (uniform 1999-01-04 .. 2026-04-24), ``doc_type``,
  ``collection``, ``section``, ``words``.

Deterministic: the same ``(n_chunks, seed, vocab_size)`` writes the same bytes.

Command line: ``python benchmarks/synthetic.py OUT_DIR --chunks 100000 [--seed 0]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import time
from pathlib import Path

import numpy as np

__all__ = ["ZIPF_S", "ZIPF_Q", "make_vocabulary", "zipf_probabilities", "generate_corpus"]

ZIPF_S = 1.13
ZIPF_Q = 2.7
WORDS_PER_CHUNK = 88.0  # md-words-v1 on this generator's sections (100-word windows, short section tails)
DOC_MEDIAN_WORDS = 500
DOC_SIGMA = 1.2
DOC_MIN, DOC_MAX = 30, 300_000
SECTION_MEAN_WORDS = 400
NUMBER_SHARE = 0.01
N_FUNCTION_WORDS = 120

_ONSETS = (
    ["", "", "b", "c", "d", "f", "g", "l", "m", "n", "p", "r", "s", "t", "v", "ll", "ch", "qu", "gu", "j", "z"]
    + ["br", "cr", "dr", "fr", "gr", "pr", "tr", "bl", "cl", "fl", "gl", "pl", "ñ", "rr"]
    + ["c", "d", "l", "m", "n", "p", "r", "s", "t"]  # common onsets weighted up
)
_VOWELS = ["a", "e", "i", "o", "u", "a", "e", "o", "a", "e", "i", "o"]
_ACCENT = {"a": "á", "e": "é", "i": "í", "o": "ó", "u": "ú"}
_CODAS = ["", "", "", "", "n", "s", "r", "l", "d", "z", "c"]
_DOC_TYPES = ["acuerdo", "decreto", "aviso", "norma", "resolucion", "convenio", "lineamientos", "reglamento"]
_SECTIONS = ["MAT", "VES", "EXT"]
_DATE_MIN = dt.date(1999, 1, 4)
_DATE_MAX = dt.date(2026, 4, 24)


def _syllables() -> tuple[list[str], np.ndarray]:
    """Every onset + vowel (accented or not) + coda syllable with its probability (onsets, codas uniform over their
    lists, which repeat the common ones; an accent on 1 vowel in 12)."""
    onsets = {o: _ONSETS.count(o) / len(_ONSETS) for o in dict.fromkeys(_ONSETS)}
    codas = {c: _CODAS.count(c) / len(_CODAS) for c in dict.fromkeys(_CODAS)}
    vowels: dict[str, float] = {}
    for v in dict.fromkeys(_VOWELS):
        pv = _VOWELS.count(v) / len(_VOWELS)
        vowels[v] = pv * 11 / 12
        vowels[_ACCENT[v]] = pv / 12
    syl, prob = [], []
    for o, po in onsets.items():
        for v, pv in vowels.items():
            for c, pc in codas.items():
                syl.append(o + v + c)
                prob.append(po * pv * pc)
    pr = np.array(prob)
    return syl, pr / pr.sum()


def make_vocabulary(vocab_size: int, seed: int = 0) -> list[str]:
    """``vocab_size`` distinct lower-case Spanish-like words, most frequent first.

    The first :data:`N_FUNCTION_WORDS` are real Spanish function words (bm25s's stop-word list, shortest first);
    then words of ``1 + round(0.22 * ln(rank) + N(0, 0.6))`` syllables (1..7); a word already taken gets one more
    syllable.
    """
    from bm25s.stopwords import STOPWORDS_SPANISH

    rng = np.random.default_rng([seed, 1])
    func = sorted(dict.fromkeys(w for w in STOPWORDS_SPANISH if w.isalpha()), key=lambda w: (len(w), w))
    words = func[: min(N_FUNCTION_WORDS, vocab_size)]
    seen = set(words)
    n = vocab_size - len(words)
    if n <= 0:
        return words
    syl, prob = _syllables()
    syl_arr = np.array(syl, dtype=object)
    rank = np.arange(len(words) + 1, vocab_size + 1, dtype=np.float64)
    n_syl = np.clip(np.round(1 + 0.22 * np.log(rank) + rng.normal(0, 0.6, n)), 1, 7).astype(np.int64)
    draws = syl_arr[rng.choice(len(syl), size=(n, 8), p=prob)]
    extra = iter(syl_arr[rng.choice(len(syl), size=4 * n + 64, p=prob)].tolist())
    for row, k in zip(draws.tolist(), n_syl.tolist(), strict=True):
        w = "".join(row[:k])
        while w in seen or len(w) < 2:
            w += next(extra)
        seen.add(w)
        words.append(w)
    return words


def zipf_probabilities(vocab_size: int, s: float = ZIPF_S, q: float = ZIPF_Q) -> np.ndarray:
    """Zipf-Mandelbrot probabilities ``p(r) ∝ (r + q)^-s`` for ranks ``r = 1..vocab_size`` (float64, sums to 1)."""
    r = np.arange(1, vocab_size + 1, dtype=np.float64)
    p = (r + q) ** -s
    return p / p.sum()


def _doc_lengths(rng: np.random.Generator, n_chunks: int) -> np.ndarray:
    """Document lengths (words) until their expected chunk count reaches ``n_chunks``."""
    lengths: list[np.ndarray] = []
    total = 0.0
    target = n_chunks * WORDS_PER_CHUNK
    while total < target:
        draw = rng.lognormal(np.log(DOC_MEDIAN_WORDS), DOC_SIGMA, size=max(64, int((target - total) / 900)))
        draw = np.clip(np.round(draw), DOC_MIN, DOC_MAX).astype(np.int64)
        csum = total + np.cumsum(draw)
        stop = int(np.searchsorted(csum, target)) + 1
        lengths.append(draw[:stop])
        total = float(csum[min(stop, draw.size) - 1])
    return np.concatenate(lengths)


def _render(words: list[str], rng: np.random.Generator, title: str) -> str:
    """Markdown for one document: title, ``## Artículo n`` sections, paragraphs."""
    out = [f"# {title}", ""]
    i = 0
    art = 0
    n = len(words)
    while i < n:
        art += 1
        sec = int(min(n - i, max(1, rng.geometric(1 / SECTION_MEAN_WORDS))))
        out.append(f"## Artículo {art}")
        out.append("")
        j = i
        end = i + sec
        while j < end:
            para = int(min(end - j, rng.integers(20, 91)))
            chunk = words[j : j + para]
            chunk[0] = chunk[0].capitalize()
            out.append(" ".join(chunk) + ".")
            out.append("")
            j += para
        i = end
    return "\n".join(out)


def generate_corpus(
    out_dir: str | Path,
    n_chunks: int,
    *,
    seed: int = 0,
    vocab_size: int = 1 << 20,
    progress: bool = False,
) -> dict:
    """Write a synthetic corpus of about ``n_chunks`` ``md-words-v1`` chunks to ``out_dir``.

    Args:
        out_dir: folder to create (must not hold a ``metadata.jsonl`` already).
        n_chunks: target number of chunks (the chunker decides the exact count; expect +-5 %).
        seed: random seed (the output is a function of ``(n_chunks, seed, vocab_size)``).
        vocab_size: number of word types.
        progress: print a line every 10,000 documents.

    Returns:
        ``{"n_documents", "n_words", "bytes", "seconds", "vocab_size", "seed", "target_chunks"}``.

    Raises:
        FileExistsError: ``out_dir`` already holds a corpus.
    """
    t0 = time.perf_counter()
    out = Path(out_dir)
    if (out / "metadata.jsonl").exists():
        raise FileExistsError(f"{out}: already holds a corpus (metadata.jsonl)")
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    vocab = np.array(make_vocabulary(vocab_size, seed), dtype=object)
    p = zipf_probabilities(vocab_size)
    cdf = np.cumsum(p)
    cdf[-1] = 1.0
    lengths = _doc_lengths(rng, n_chunks)
    span = (_DATE_MAX - _DATE_MIN).days
    n_bytes = 0
    meta_lines = []
    for d, n_words in enumerate(lengths.tolist()):
        tok = np.searchsorted(cdf, rng.random(n_words + 12), side="right")
        words = vocab[np.minimum(tok, vocab_size - 1)].tolist()
        nums = np.flatnonzero(rng.random(n_words + 12) < NUMBER_SHARE)
        for k in nums.tolist():
            words[k] = str(int(rng.integers(1, 3001)))
        title_words = words[n_words:]
        title = " ".join(title_words).capitalize()
        text = _render(words[:n_words], rng, title)
        doc_id = f"syn-{d:07d}"
        rel = f"docs/{d // 1000:04d}/{doc_id}.md"
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode("utf-8")
        path.write_bytes(data)
        n_bytes += len(data)
        date = _DATE_MIN + dt.timedelta(days=int(rng.integers(0, span + 1)))
        meta_lines.append(
            json.dumps(
                {
                    "doc_id": doc_id,
                    "path": rel,
                    "title": title,
                    "date": date.isoformat(),
                    "doc_type": _DOC_TYPES[int(rng.integers(0, len(_DOC_TYPES)))],
                    "collection": "synthetic",
                    "section": _SECTIONS[int(rng.integers(0, len(_SECTIONS)))],
                    "words": n_words,
                },
                ensure_ascii=False,
            )
        )
        if progress and (d + 1) % 10_000 == 0:
            print(f"  {d + 1} documents, {n_bytes / 1e6:.0f} MB", flush=True)
    tmp = out / f".metadata.jsonl.{os.getpid()}.tmp"
    tmp.write_text("\n".join(meta_lines) + "\n", encoding="utf-8")
    os.replace(tmp, out / "metadata.jsonl")
    return {
        "target_chunks": int(n_chunks),
        "n_documents": int(lengths.size),
        "n_words": int(lengths.sum()),
        "bytes": n_bytes,
        "seconds": round(time.perf_counter() - t0, 3),
        "vocab_size": vocab_size,
        "seed": seed,
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Write a synthetic Spanish-like Markdown corpus (metadata.jsonl + .md).")
    ap.add_argument("out_dir")
    ap.add_argument("--chunks", type=float, default=1e4, help="target number of md-words-v1 chunks")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--vocab-size", type=int, default=1 << 20)
    args = ap.parse_args(argv)
    stats = generate_corpus(args.out_dir, int(args.chunks), seed=args.seed, vocab_size=args.vocab_size, progress=True)
    print(json.dumps(stats))


if __name__ == "__main__":
    main()
