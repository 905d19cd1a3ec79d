"""Fill, check and report the real gold set ``datasets/mx-leyes-dof-eval-v1`` (not part of the import package).

Usage (from the repository root)::

    .venv/bin/python datasets/tools/build_goldset_report.py --fill     # fill ids, paths, dates, heading paths, splits
    .venv/bin/python datasets/tools/build_goldset_report.py            # check only; prints the report
    .venv/bin/python datasets/tools/build_goldset_report.py --write    # check, run BM25, write manifest + README

``--fill`` locates every quote with the frozen chunker ``md-words-v1`` (a quote is valid when
``normalize_text(quote)`` is a substring of ``normalize_text(chunk.text)`` of one chunk; the ``chunk_index`` already
in the record disambiguates a quote found in several chunks), copies ``relpath``, ``publication_date`` and
``section`` (metadata ``edition``) from ``metadata.jsonl`` and assigns ``split`` (3 dev + 3 test per category, whole
clusters of questions that share a gold document in one split). Every check failure is printed and exits 1.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import unicodedata
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from harness.corpus.chunker import MdWordsChunker, decode_source, normalize_text  # noqa: E402
from harness.goldset.schema import CATEGORIES, CATEGORY_PREFIX  # noqa: E402
from harness.io import atomic_write_json, atomic_write_text  # noqa: E402

DATASET = REPO / "datasets" / "mx-leyes-dof-eval-v1"
STEM = "mx_leyes_dof_eval_v1"
CORPUS = REPO.parent / "shared" / "corpus" / "mx-leyes-dof"
PER_CATEGORY, PER_SPLIT = 6, 3
DEEP_INDEX, LONG_LAW_WORDS = 100, 10_000
BEGIN, END = "<!-- BEGIN GENERATED: build_goldset_report.py -->", "<!-- END GENERATED -->"
GOLD_KEYS = ("document_id", "relpath", "publication_date", "section", "role", "heading_path", "grade", "alternatives")
RECORD_KEYS = (
    "id", "category", "question", "persona", "difficulty", "as_of", "answerability", "reference_answer",
    "required_hops", "gold_documents", "unanswerable_reason", "split",
)  # fmt: skip


def load_metadata(corpus: Path) -> dict[str, dict]:
    """``{doc_id: metadata record}`` from the corpus ``metadata.jsonl``."""
    rows = (json.loads(line) for line in (corpus / "metadata.jsonl").read_text("utf-8").splitlines() if line.strip())
    return {r["doc_id"]: r for r in rows}


class Chunks:
    """Lazily chunked corpus documents under ``md-words-v1``."""

    def __init__(self, corpus: Path, meta: dict[str, dict]):
        self.corpus, self.meta, self.cache, self.chunker = corpus, meta, {}, MdWordsChunker()

    def __call__(self, doc_id: str) -> list:
        if doc_id not in self.cache:
            path = self.corpus / self.meta[doc_id]["path"]
            self.cache[doc_id] = self.chunker.chunk(doc_id, decode_source(path.read_bytes(), origin=str(path)))
        return self.cache[doc_id]

    def locate(self, doc_id: str, quote: str, hint: int | None) -> tuple[object | None, list[int]]:
        """The chunk holding ``quote`` (the hinted one when several do) and every matching index."""
        nq = normalize_text(quote)
        hits = [c for c in self(doc_id) if nq in normalize_text(c.text)]
        idx = [c.index for c in hits]
        if hint in idx:
            return hits[idx.index(hint)], idx
        return (hits[0] if len(hits) == 1 else None), idx


def common_path(paths: list[list[str]]) -> list[str]:
    """Longest common prefix of heading paths (the validator's V004 rule for several cited chunks)."""
    common = list(paths[0])
    for p in paths[1:]:
        k = 0
        while k < min(len(common), len(p)) and common[k] == p[k]:
            k += 1
        common = common[:k]
    return common


def clusters_of(records: list[dict]) -> list[list[str]]:
    """Connected components of questions that share a gold document (alternatives excluded), sorted."""
    parent = {r["id"]: r["id"] for r in records}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    first: dict[str, str] = {}
    for r in records:
        for g in r["gold_documents"]:
            d = str(g["document_id"])
            if d in first:
                parent[find(r["id"])] = find(first[d])
            else:
                first[d] = r["id"]
    comp = defaultdict(list)
    for r in records:
        comp[find(r["id"])].append(r["id"])
    return sorted((sorted(v) for v in comp.values()), key=lambda c: (-len(c), c[0]))


def assign_splits(records: list[dict]) -> dict[str, str]:
    """Deterministic dev/test assignment: whole clusters, PER_SPLIT questions of each category in each split."""
    cat = {r["id"]: r["category"] for r in records}
    comps = clusters_of(records)
    need = {s: dict.fromkeys(CATEGORIES, PER_SPLIT) for s in ("dev", "test")}
    out: dict[str, str] = {}

    def rec(i: int) -> bool:
        if i == len(comps):
            return all(v == 0 for s in need for v in need[s].values())
        counts = Counter(cat[q] for q in comps[i])
        for s in ("dev", "test") if i % 2 == 0 else ("test", "dev"):
            if all(need[s][c] >= n for c, n in counts.items()):
                for c, n in counts.items():
                    need[s][c] -= n
                if rec(i + 1):
                    out.update({q: s for q in comps[i]})
                    return True
                for c, n in counts.items():
                    need[s][c] += n
        return False

    if not rec(0):
        raise SystemExit("no split assignment satisfies the per-category quota with whole clusters")
    return out


def fill(records: list[dict], meta: dict[str, dict], chunks: Chunks) -> list[str]:
    """Fill derived fields in place; return problems (missing documents, quotes not found or ambiguous)."""
    errs = []
    for r in records:
        for g in r["gold_documents"]:
            d = str(g["document_id"])
            if d not in meta:
                errs.append(f"{r['id']}: document {d} not in metadata")
                continue
            m = meta[d]
            g.update(relpath=m["path"], publication_date=m["date"], section=m.get("edition"))
            for a in g.get("alternatives", []):
                ma = meta[str(a["document_id"])]
                a.update(relpath=ma["path"], publication_date=ma["date"], section=ma.get("edition"))
            paths = []
            for e in g["evidence"]:
                c, idx = chunks.locate(d, e["quote"], e.get("chunk_index"))
                if c is None:
                    errs.append(f"{r['id']}: quote not in one chunk of {d} (matches {idx}): {e['quote'][:70]!r}")
                    continue
                e["chunk_id"], e["chunk_index"] = c.chunk_id, c.index
                paths.append(list(c.heading_path))
            if paths:
                g["heading_path"] = common_path(paths)
            ordered = {k: g[k] for k in GOLD_KEYS if k in g and (k != "alternatives" or g[k])}
            ordered["evidence"] = [{k: e[k] for k in ("chunk_id", "chunk_index", "quote")} for e in g["evidence"]]
            g.clear()
            g.update(ordered)
    if not errs:
        for r in records:
            r["split"] = None
        for qid, s in assign_splits(records).items():
            next(r for r in records if r["id"] == qid)["split"] = s
    for i, r in enumerate(records):
        records[i] = {k: r.get(k) for k in RECORD_KEYS}
    return errs


def check(records: list[dict], meta: dict[str, dict], chunks: Chunks) -> list[str]:
    """Every rule of the issue that can be checked mechanically; returns the failures."""
    errs = []
    by_cat = Counter(r["category"] for r in records)
    if len(records) != PER_CATEGORY * len(CATEGORIES) or any(by_cat[c] != PER_CATEGORY for c in CATEGORIES):
        errs.append(f"category counts {dict(by_cat)}")
    if len({r["id"] for r in records}) != len(records):
        errs.append("duplicate ids")
    for r in records:
        q = r["id"]
        if not re.fullmatch(CATEGORY_PREFIX.get(r["category"], "??") + r"-\d{3}", q):
            errs.append(f"{q}: id does not match category {r['category']}")
        dates = [g["publication_date"] for g in r["gold_documents"]]
        if r["as_of"] < max(dates):
            errs.append(f"{q}: as_of {r['as_of']} before newest gold document {max(dates)}")
        fp = r["answerability"] == "false_premise"
        if fp != (r["category"] == "negative_false_premise") or fp != bool(r["unanswerable_reason"]):
            errs.append(f"{q}: answerability / unanswerable_reason / category disagree")
        if fp and not any(g["role"] == "premise_refutation" and g["evidence"] for g in r["gold_documents"]):
            errs.append(f"{q}: false premise without a premise_refutation document with evidence")
        if r["category"] == "multi_document" and (len(r["gold_documents"]) < 2 or r["required_hops"] < 2):
            errs.append(f"{q}: multi_document needs >= 2 gold documents and required_hops >= 2")
        if r.get("split") not in ("dev", "test"):
            errs.append(f"{q}: split missing")
        for g in r["gold_documents"]:
            d = str(g["document_id"])
            m = meta.get(d)
            if m is None:
                errs.append(f"{q}: unknown document {d}")
                continue
            if (g["relpath"], g["publication_date"], g["section"]) != (m["path"], m["date"], m.get("edition")):
                errs.append(f"{q}: {d}: relpath/publication_date/section differ from metadata")
            if g.get("grade", 2) == 2 and not g["evidence"]:
                errs.append(f"{q}: {d}: required gold document without evidence")
            ch, paths = chunks(d), []
            for e in g["evidence"]:
                i = e["chunk_index"]
                if not (0 <= i < len(ch)) or e["chunk_id"] != ch[i].chunk_id:
                    errs.append(f"{q}: {d}: bad chunk id/index {e['chunk_id']} / {i}")
                elif normalize_text(e["quote"]) not in normalize_text(ch[i].text):
                    errs.append(f"{q}: {e['chunk_id']}: quote not in chunk: {e['quote'][:70]!r}")
                else:
                    paths.append(list(ch[i].heading_path))
            if paths and (g.get("heading_path") is None or g["heading_path"] != common_path(paths)):
                errs.append(f"{q}: {d}: heading_path is not the (common) heading path of the cited chunks")
    split_of = {r["id"]: r.get("split") for r in records}
    for comp in clusters_of(records):
        if len({split_of[q] for q in comp}) > 1:
            errs.append(f"cluster {comp} spans both splits")
    for s in ("dev", "test"):
        c = Counter(r["category"] for r in records if r.get("split") == s)
        if any(c[k] != PER_SPLIT for k in CATEGORIES):
            errs.append(f"split {s}: per-category counts {dict(c)}")
    return errs


try:
    from bm25s.stopwords import STOPWORDS_SPANISH as _SW
except ImportError:  # pragma: no cover
    _SW = ()
_EXTRA_SW = ("cuanto", "cuanta", "cuantos", "cuantas", "segun", "cada", "cuales", "quien", "quienes")
STOP = frozenset(_SW) | frozenset(_EXTRA_SW)
_WORD = re.compile(r"\w+")


def _fold(w: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", w) if not unicodedata.combining(c))


def content_words(text: str) -> set[str]:
    """Lower-cased ``\\w+`` tokens minus one-character tokens and Spanish stop words.

    A token is a stop word when it or its accent-folded form is in the bm25s Spanish list (or a few interrogatives
    that list lacks: cuánto, según...), so "cuál" and "cómo" count as stop words like "cual" and "como".
    """
    return {w for w in _WORD.findall(text.lower()) if len(w) > 1 and w not in STOP and _fold(w) not in STOP}


def overlap(r: dict) -> float:
    """Share of the question's content words that occur in its evidence quotes."""
    qw = content_words(r["question"])
    ev = set().union(*(content_words(e["quote"]) for g in r["gold_documents"] for e in g["evidence"]))
    return len(qw & ev) / len(qw) if qw else 0.0


def bm25_ranks(records: list[dict], depth: int = 100) -> dict[str, int | None]:
    """Document rank (1-based) of the first relevant document (gold or alternative) under the harness BM25."""
    from harness.corpus.store import Corpus
    from harness.retrieve.bm25 import BM25System

    db = next((REPO / ".harness" / "corpora").glob("mx-leyes-dof-*-md-words-v1/corpus.db"))
    with Corpus(db) as corpus:
        system = BM25System(corpus, REPO / ".harness")
        results = system.search([r["question"] for r in records], doc_depth=depth, chunk_depth=10)
    out = {}
    for r, res in zip(records, results, strict=True):
        rel = {str(g["document_id"]) for g in r["gold_documents"]}
        rel |= {str(a["document_id"]) for g in r["gold_documents"] for a in g.get("alternatives", [])}
        out[r["id"]] = next((i + 1 for i, (d, _s) in enumerate(res.docs or []) if d in rel), None)
    return out


def report(records: list[dict], meta: dict[str, dict], ranks: dict | None) -> tuple[str, dict]:
    """Markdown report of the measured quality bar and a dict of the same numbers."""
    gold = sorted({str(g["document_id"]) for r in records for g in r["gold_documents"]})
    comps = clusters_of(records)
    deep = [
        r["id"]
        for r in records
        if any(
            e["chunk_index"] >= DEEP_INDEX
            and meta[str(g["document_id"])]["collection"].startswith("leyes")
            and meta[str(g["document_id"])]["words"] >= LONG_LAW_WORDS
            for g in r["gold_documents"]
            for e in g["evidence"]
        )
    ]
    ov = {r["id"]: overlap(r) for r in records}
    n_ev = sum(len(g["evidence"]) for r in records for g in r["gold_documents"])
    chunks_cited = {e["chunk_id"] for r in records for g in r["gold_documents"] for e in g["evidence"]}

    def bucket(w):
        return "<1k" if w < 1000 else "1k-10k" if w < 10_000 else "10k-50k" if w < 50_000 else ">=50k"

    types = Counter(meta[d]["doc_type"] for d in gold)
    lengths = Counter(bucket(meta[d]["words"]) for d in gold)
    colls = Counter(meta[d]["collection"] for d in gold)
    stats = {
        "questions": len(records),
        "per_category": dict(Counter(r["category"] for r in records)),
        "per_split": dict(Counter(r["split"] for r in records)),
        "false_premise": sum(r["answerability"] == "false_premise" for r in records),
        "distinct_gold_documents": len(gold),
        "documents_with_alternatives": sum(bool(g.get("alternatives")) for r in records for g in r["gold_documents"]),
        "evidence_items": n_ev,
        "distinct_evidence_chunks": len(chunks_cited),
        "clusters": len(comps),
        "largest_cluster": len(comps[0]),
        "deep_evidence_questions": len(deep),
        "overlap_median": statistics.median(ov.values()),
        "overlap_max": max(ov.values()),
    }
    L = [
        f"- Questions: **{stats['questions']}** ({', '.join(f'{c} {n}' for c, n in stats['per_category'].items())}); "
        f"splits: dev {stats['per_split'].get('dev', 0)}, test {stats['per_split'].get('test', 0)}; "
        f"false premise: {stats['false_premise']}.",
        f"- Distinct gold documents: **{len(gold)}** (alternatives listed for "
        f"{stats['documents_with_alternatives']} gold documents); evidence items: {n_ev}; distinct evidence chunks: "
        f"{len(chunks_cited)}.",
        f"- Gold documents by collection: {', '.join(f'{k} {v}' for k, v in sorted(colls.items()))}.",
        f"- Gold documents by type: {', '.join(f'{k} {v}' for k, v in sorted(types.items()))}.",
        f"- Gold documents by length (words): {', '.join(f'{k} {lengths.get(k, 0)}' for k in ('<1k', '1k-10k', '10k-50k', '>=50k'))}.",  # noqa: E501
        f"- Clusters (questions sharing a gold document): **{len(comps)}**; largest {len(comps[0])}; sizes "
        f"{dict(sorted(Counter(len(c) for c in comps).items()))}.",
        f"- Questions with evidence at chunk index >= {DEEP_INDEX} of a law of >= {LONG_LAW_WORDS:,} words: "
        f"**{len(deep)}** ({', '.join(deep)}).",
        f"- Question/evidence content-word overlap: median **{stats['overlap_median']:.1%}**, max "
        f"{stats['overlap_max']:.1%} (per question below).",
    ]
    if ranks is not None:
        rr = {q: (1 / k if k else 0.0) for q, k in ranks.items()}
        miss1 = [q for q, k in ranks.items() if k != 1]
        stats["bm25_mrr"] = statistics.fmean(rr.values())
        stats["bm25_not_rank1_share"] = len(miss1) / len(ranks)
        stats["bm25_mrr_per_category"] = {
            c: statistics.fmean(rr[r["id"]] for r in records if r["category"] == c) for c in CATEGORIES
        }
        L.append(
            f"- BM25 (harness `bm25`, document index, depth 100): MRR **{stats['bm25_mrr']:.3f}**; questions whose "
            f"first document is not relevant: **{len(miss1)}/{len(ranks)} ({stats['bm25_not_rank1_share']:.1%})**."
        )
        L.append("")
        L.append("| category | BM25 MRR | not at rank 1 |")
        L.append("|---|---:|---:|")
        for c in CATEGORIES:
            qs = [r["id"] for r in records if r["category"] == c]
            L.append(f"| {c} | {stats['bm25_mrr_per_category'][c]:.3f} | {sum(ranks[q] != 1 for q in qs)}/{len(qs)} |")
    L += ["", "| id | split | gold documents | overlap | BM25 doc rank |", "|---|---|---|---:|---:|"]
    for r in records:
        docs = ", ".join(f"`{g['document_id']}`" for g in r["gold_documents"])
        k = "-" if ranks is None else (ranks[r["id"]] or ">100")
        L.append(f"| {r['id']} | {r['split']} | {docs} | {ov[r['id']]:.0%} | {k} |")
    return "\n".join(L) + "\n", stats


def write_manifest(records_path: Path, stats: dict) -> None:
    """Write the ``.meta.json`` manifest (published v4 layout plus corpus hash and schema version)."""
    from harness.corpus.ingest import scan_corpus
    from harness.io import sha256_file

    src = scan_corpus(CORPUS)
    lo, hi = src.date_range
    path = DATASET / f"{STEM}.meta.json"
    old = json.loads(path.read_text("utf-8")) if path.exists() else {}
    manifest = {
        "name": "mx-leyes-dof-eval",
        "version": "1.0.0",
        "created": old.get("created", "2026-08-21"),
        "language": "es-MX",
        "total_questions": stats["questions"],
        "corpus_version": src.corpus_id,
        "corpus_hash": src.corpus_hash,
        "corpus_documents": len(src.docs),
        "corpus_date_min": lo,
        "corpus_date_max": hi,
        "chunker_version": "md-words-v1",
        "schema_version": 1,
        "questions_per_category": PER_CATEGORY,
        "categories": list(CATEGORIES),
        "records_file": records_path.name,
        "records_sha256": sha256_file(records_path),
        "splits": {"dev": PER_SPLIT * len(CATEGORIES), "test": PER_SPLIT * len(CATEGORIES)},
        "authoring": old.get("authoring", {}),
        "intended_metrics": old.get("intended_metrics", {}),
        "limitations": old.get("limitations", []),
        "changelog": old.get("changelog", []),
    }
    atomic_write_json(path, manifest)


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fill", action="store_true", help="fill derived fields and splits, rewrite the JSONL")
    ap.add_argument("--write", action="store_true", help="run BM25 and write the manifest and README section")
    ap.add_argument("--no-bm25", action="store_true", help="skip the BM25 run")
    a = ap.parse_args(argv)
    path = DATASET / f"{STEM}.jsonl"
    records = [json.loads(x) for x in path.read_text("utf-8").splitlines() if x.strip()]
    meta = load_metadata(CORPUS)
    chunks = Chunks(CORPUS, meta)
    if a.fill:
        errs = fill(records, meta, chunks)
        if errs:
            print("\n".join(errs))
            return 1
        atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    errs = check(records, meta, chunks)
    if errs:
        print("\n".join(errs))
        return 1
    ranks = None if a.no_bm25 else bm25_ranks(records)
    text, stats = report(records, meta, ranks)
    print(text)
    if a.write:
        write_manifest(path, stats)
        readme = DATASET / "README.md"
        body = readme.read_text("utf-8")
        head, _, rest = body.partition(BEGIN)
        _, _, tail = rest.partition(END)
        atomic_write_text(readme, f"{head}{BEGIN}\n{text}{END}{tail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
