"""Chunkers on the real corpus: legal-structure units, md-words-v1 vs md-legal-v1 chunks, chunking time.

Three parts, all on ``mx-leyes-dof`` (NFC text as ingest decodes it):

* **units**: how ``md-legal-v1``'s start lines (rule 2 of ``harness/corpus/legal.py``) are spelled per collection
  (digits -> ``N``, Roman numerals -> ``R``, ordinal words -> ``ORD``), the lines that look like a start but match
  no pattern (near misses), and the unit lengths in words (rule 3) per kind, with the share of units and words over
  or under candidate limits; these figures chose ``max_words`` 250 and ``min_words`` 40;
* **chunks**: per chunker (``md-words-v1``, ``md-legal-v1`` and, with ``--limits MAX:MIN,...``, ``md-legal-v1``'s
  rules under other limits), the number of chunks, words per chunk (mean, p5, p25, p50, p75, p95, max), the share
  under 20 and 40 words, and where chunks start: exactly at a start line of each kind (the chunk's first word is the
  first word of a line that ``classify_line`` classifies), at another line start, or inside a line;
* **time**: chunking the whole corpus, interleaved rounds, best of ``--repeats`` (ratio legal / words).

Reproduce: ``.venv/bin/python benchmarks/bench_chunkers.py`` (about 2 minutes on 2 cores; ``--limits
250:20,250:30,250:60,300:40,200:40`` for the comparison of limits).
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from common import DEFAULT_CORPUS, header, interleaved_best, write_json

from harness.corpus.chunker import _HEADING_RE, _WORD_RE, MdWordsChunker, decode_source
from harness.corpus.legal import ARTICLE_LEVEL, START_PATTERNS, MdLegalChunker, classify_line

_ROMAN = re.compile(r"(?<![A-Za-z])[IVXL]+(?![A-Za-z])")
_ORDW = re.compile(
    r"(?i)(?<![a-záéíóú])(?:primer|segund|tercer|cuart|quint|sext|s[eé]ptim|octav|noven|d[eé]cim|vig[eé]sim|"
    r"trig[eé]sim|cuadrag[eé]sim|[uú]nic|und[eé]cim|duod[eé]cim)[a-záéíóú]*"
)
_NEAR = re.compile(
    r"(?:>\s*)*\s*[*_]{0,2}\s*(?:ART[ÍI]CULO|Art[íi]culo|[IVXLl]+\s*[.)-]|(?i:primer|segund|tercer|cuart|quint|"
    r"sext|s[eé]ptim|octav|noven|d[eé]cim|vig[eé]sim|[uú]nic)\w*\s*[.:-])"
)
_Q = (5, 25, 50, 75, 95)
_PATTERN = dict(START_PATTERNS)


def _load(corpus: Path) -> list[tuple[str, str, str]]:
    meta = [json.loads(x) for x in (corpus / "metadata.jsonl").read_text("utf-8").splitlines() if x.strip()]
    return [(m["doc_id"], m["collection"], decode_source((corpus / m["path"]).read_bytes())) for m in meta]


def _shape(matched: str) -> str:
    return _ROMAN.sub("R", _ORDW.sub("ORD", re.sub(r"\d+", "N", matched.strip())))


def units(docs) -> dict:
    """Spellings of start lines, near misses and unit lengths (words) per collection and kind."""
    spell: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    near: collections.Counter = collections.Counter()
    lengths: dict[str, list[int]] = collections.defaultdict(list)
    articles: list[int] = []  # an article-level start to the next one or to the next heading, fracciones included
    for _doc_id, col, text in docs:
        cur: list = []  # [kind, words] of the open unit
        art: list = []  # [words] of the open article span

        def close(cur=cur, col=col):
            if cur:
                lengths[f"{col}/{cur[0]}"].append(cur[1])
                cur.clear()

        for line in text.split("\n"):
            if _HEADING_RE.match(line):
                close()
                articles.extend(art)
                art.clear()
                continue
            n = len(_WORD_RE.findall(line))
            if not n:
                continue
            kind = classify_line(line)
            if kind is not None:
                close()
                if kind in ARTICLE_LEVEL:
                    articles.extend(art)
                    art[:] = [0]
                spell[f"{col}/{kind}"][_shape(_PATTERN[kind].match(line).group(0))] += 1
                cur.extend([kind, 0])
            else:
                if _NEAR.match(line):
                    near[re.sub(r"\d+", "N", line.strip()[:24])] += 1
                if not cur:
                    cur.extend(["lead", 0])
            cur[1] += n
            if art:
                art[0] += n
        close()
        articles.extend(art)
    all_units = np.asarray([w for v in lengths.values() for w in v])
    art = np.asarray(articles)
    out = {
        "n_units": int(all_units.size),
        "per_kind": {k: _quantiles(v) for k, v in sorted(lengths.items())},
        "over": {
            m: [float(np.mean(all_units > m)), float(all_units[all_units > m].sum() / all_units.sum())]
            for m in (150, 200, 250, 300, 400)
        },
        "under": {
            m: [float(np.mean(all_units < m)), float(all_units[all_units < m].sum() / all_units.sum())]
            for m in (20, 30, 40, 50, 60)
        },
        "articles": _quantiles(art),
        "articles_over": {m: float(np.mean(art > m)) for m in (200, 250, 300, 400)},
        "spellings": {k: c.most_common(6) for k, c in sorted(spell.items())},
        "near_misses": near.most_common(12),
    }
    return out


def _quantiles(v) -> dict:
    a = np.asarray(v)
    return {
        "n": int(a.size),
        "mean": float(a.mean()),
        **{f"p{q}": float(np.percentile(a, q)) for q in _Q},
        "max": int(a.max()),
    }


def chunks(docs, chunker) -> dict:
    """Chunk counts, words per chunk and where chunks start (kind of start line / line start / mid-line)."""
    words, starts = [], collections.Counter()
    for doc_id, _col, text in docs:
        for c in chunker.chunk(doc_id, text):
            words.append(c.n_words)
            ls = text.rfind("\n", 0, c.char_start) + 1
            le = text.find("\n", c.char_start)
            if text[ls : c.char_start].strip():
                starts["mid-line"] += 1
            else:
                starts[classify_line(text[ls : len(text) if le == -1 else le]) or "other line start"] += 1
    w = np.asarray(words)
    return {
        **_quantiles(w),
        "n_words": int(w.sum()),
        "under_20": float(np.mean(w < 20)),
        "under_40": float(np.mean(w < 40)),
        "starts": dict(starts.most_common()),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--limits", default="", help="extra MAX:MIN pairs for md-legal-v1's rules, comma-separated")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    figures = {"machine": header("chunkers on the real corpus")}
    t0 = time.perf_counter()
    docs = _load(args.corpus)
    print(f"   {len(docs)} documents read and decoded in {time.perf_counter() - t0:.1f} s")

    u = figures["units"] = units(docs)
    print(f"\n-- units (rule 3): {u['n_units']} units")
    for k, q in u["per_kind"].items():
        print(
            f"   {k:36s} n={q['n']:6d} p25={q['p25']:.0f} p50={q['p50']:.0f} p75={q['p75']:.0f} "
            f"p95={q['p95']:.0f} max={q['max']}"
        )
    for m, (su, sw) in u["over"].items():
        print(f"   units over {m} words: {su:.2%} of units, {sw:.1%} of words")
    for m, (su, sw) in u["under"].items():
        print(f"   units under {m} words: {su:.1%} of units, {sw:.1%} of words")
    a = u["articles"]
    print(
        f"   articles (an article-level start to the next one or to the next heading, fracciones included): "
        f"n={a['n']} p50={a['p50']:.0f} p95={a['p95']:.0f} max={a['max']}; over 200/250/300/400 words: "
        + ", ".join(f"{v:.1%}" for v in u["articles_over"].values())
    )
    print("-- spellings of start lines (top 6 per collection/kind)")
    for k, top in u["spellings"].items():
        print(f"   {k}: " + "; ".join(f"{s!r} {n}" for s, n in top))
    print("-- near misses (look like a start, match no pattern)")
    print("   " + "; ".join(f"{s!r} {n}" for s, n in u["near_misses"]))

    chunkers = {"md-words-v1": MdWordsChunker(), "md-legal-v1": MdLegalChunker()}
    for pair in filter(None, args.limits.split(",")):
        mx, mn = (int(x) for x in pair.split(":"))
        chunkers[f"legal rules {mx}:{mn}"] = replace(MdLegalChunker(), params={"max_words": mx, "min_words": mn})
    figures["chunks"] = {}
    print("\n-- chunks")
    for name, ch in chunkers.items():
        r = figures["chunks"][name] = chunks(docs, ch)
        print(
            f"   {name:20s} {r['n']:6d} chunks, {r['n_words']} words, mean {r['mean']:.1f}, "
            + " ".join(f"p{q}={r[f'p{q}']:.0f}" for q in _Q)
            + f", max {r['max']}; under 20: {r['under_20']:.1%},"
            f" under 40: {r['under_40']:.1%}"
        )
        print(f"   {'':20s} starts: {r['starts']}")

    t = figures["time"] = interleaved_best(
        {n: (lambda ch=chunkers[n]: [ch.chunk(d, x) for d, _c, x in docs]) for n in ("md-words-v1", "md-legal-v1")},
        args.repeats,
    )
    ratio = t["md-legal-v1"]["best"] / t["md-words-v1"]["best"]
    print(
        f"\n-- chunking time, whole corpus (best of {args.repeats}): md-words-v1 {t['md-words-v1']['best']:.2f} s, "
        f"md-legal-v1 {t['md-legal-v1']['best']:.2f} s (ratio {ratio:.2f})"
    )
    write_json(args.json, figures)


if __name__ == "__main__":
    main()
