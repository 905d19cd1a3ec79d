"""The documentation of every metric family of :data:`harness.metrics.METRICS`, and ``docs/metrics.md`` written from
it (:func:`render`; ``python -m harness.metrics.catalog docs/metrics.md`` rewrites the file).

Each registry key has one :class:`MetricDoc` in :data:`DOCS`; ``tests/test_metrics_doc.py`` fails when a family has
none, or when ``docs/metrics.md`` differs from :func:`render` (so a new metric cannot be undocumented, and the page
cannot go stale).
"""

from __future__ import annotations

import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from harness.metrics import METRICS, summary_metric_ids
from harness.metrics.family import MetricFamily

__all__ = ["DOCS", "MetricDoc", "missing", "render", "write"]


@dataclass(frozen=True)
class MetricDoc:
    """What ``docs/metrics.md`` says about one family.

    Attributes:
        formula: the definition, with rank r counted from 1 in the canonical ranking cut at the depth (Markdown).
        alternatives: how gold grades and ``alternatives`` enter it.
        no_gold: its value for a question without gold (at its level).
        trec_eval, ir_measures, ranx: the name of the same measure in each tool (``-`` when none).
        difference: any documented difference from those tools (``none``: the same value on the exports).
    """

    formula: str
    alternatives: str
    no_gold: str
    trec_eval: str
    ir_measures: str
    ranx: str
    difference: str = "none: equal per question on the run record's exports (tests/test_standard_metrics.py)"


_ALT_OWN = (
    "a gold document is satisfied at the best rank of itself and its alternatives; grade 2 (required) only counts"
)
_FLAT = (
    "the record's qrels: every gold document with its grade and every alternative with the grade of the gold "
    "document it stands in for (each alternative one more relevant document); relevant = rel >= 1"
)
_FLAT_CHUNK = (
    "the record's chunk qrels: every evidence chunk, rel 1; alternatives do not apply (their chunks are not evidence)"
)
_NO_REL = "0, listed as undefined (trec_eval and ir_measures leave a query without relevant documents out)"

_STANDARD = {
    "RR": ("`1 / min{r <= k : rel(d_r) >= 1}`, else 0; without `@k`, k = the depth", "recip_rank (of the run cut at k)",
           "RR, RR@k", "mrr, mrr@k"),
    "AP": ("`(1/R) * sum_{i} i / r_i` over the ranks `r_1 < r_2 < ...` <= k of relevant ids; R = relevant ids in the "
           "qrels (not min(R, k)); without `@k`, k = the depth", "map_cut_k (map)", "AP@k (AP)", "map@k (map)"),
    "nDCG": ("`DCG@k / IDCG@k`, `DCG@k = sum_{r <= k} rel(d_r) / log2(r + 1)` (gain = rel, not 2^rel - 1), the "
             "ideal = every qrels rel in descending order cut at k; without `@k`, the whole ranking and every rel",
             "ndcg_cut_k (ndcg)", "nDCG@k (nDCG)", "ndcg@k (ndcg)"),
    "P": ("`|{r <= k : rel(d_r) >= 1}| / k` (k also when fewer are ranked; never clamped)", "P_k", "P@k",
          "precision@k"),
    "R": ("`|{r <= k : rel(d_r) >= 1}| / R`", "recall_k", "R@k", "recall@k"),
    "Success": ("1 if some `r <= k` has `rel(d_r) >= 1`, else 0", "success_k", "Success@k", "hit_rate@k"),
    "Judged": ("ids of the top k present in the qrels over `min(k, ranked)`; 0 for an empty ranking (the qrels "
               "hold relevant ids only)", "-", "Judged@k", "-"),
}  # fmt: skip


def _standard(name: str, chunk: bool) -> MetricDoc:
    formula, te, im, rx = _STANDARD[name]
    judged = name == "Judged"
    return MetricDoc(
        formula=formula,
        alternatives=_FLAT_CHUNK if chunk else _FLAT,
        no_gold="0 (empty ranking)" if judged else _NO_REL,
        trec_eval=te,
        ir_measures=im,
        ranx=rx,
        difference=(
            "none: equal per question to ir_measures' judged provider on the exports"
            if judged
            else MetricDoc.difference
        ),
    )


DOCS: dict[str, MetricDoc] = {
    "mrr": MetricDoc(
        "`1 / min rank` of a document satisfying any gold document (grade 1 or 2) within the document depth, else 0",
        "grades 1 and 2 both count; " + _ALT_OWN.split(";")[0],
        "0",
        "recip_rank",
        "RR",
        "mrr",
        "none on the exports (an alternative is relevant in the qrels too, so the first relevant rank is the same)",
    ),
    "recall": MetricDoc(
        "`|required gold documents satisfied within the top k| / |required|`",
        _ALT_OWN,
        "0, undefined (no required gold document)",
        "recall_k at -l 2",
        "R(rel=2)@k",
        "recall@k-l2",
        "with alternatives the tools count each alternative as one more relevant document (docs/rankings.md); "
        "`R@k` is the ir_measures measure (rel >= 1, alternatives as documents)",
    ),
    "all_hop": MetricDoc(
        "1 if every required gold document is satisfied within the top k, else 0",
        _ALT_OWN,
        "0, undefined",
        "- (recall_k at -l 2 = 1)",
        "- (R(rel=2)@k = 1)",
        "-",
        "from the tools' recall it would need every alternative too",
    ),
    "hit": MetricDoc(
        "1 if any required gold document is satisfied within the top k, else 0",
        _ALT_OWN,
        "0, undefined",
        "success_k at -l 2",
        "Success(rel=2)@k",
        "hit_rate@k-l2",
        "none on the exports; `Success@k` is the ir_measures measure at rel >= 1",
    ),
    "ndcg": MetricDoc(
        "`DCG@k / IDCG@k`, gain = grade (not 2^grade - 1), discount `log2(r + 1)`; each gold document credited once "
        "at the rank of its best satisfier (one ranked document credits at most one gold document); the ideal from "
        "the gold grades",
        "grades are the gains; an alternative earns its gold document's gain once",
        "0, undefined",
        "ndcg_cut_k",
        "nDCG@k",
        "ndcg@k",
        "with alternatives the tools credit every relevant document found and build the ideal over the alternatives "
        "too; `nDCG@k` is that measure",
    ),
    "precision": MetricDoc(
        "`|credited ranks <= k| / k`: ranked documents satisfying a gold document (grade 1 or 2), each gold document "
        "counted once; k clamped to the corpus size",
        "grades 1 and 2 count; a gold document and its alternative both ranked count once",
        "0, undefined",
        "P_k",
        "P@k",
        "precision@k",
        "with alternatives the tools count both; k above the corpus size: the harness divides by the corpus size; "
        "`P@k` is the tools' measure",
    ),
    "evidence_recall": MetricDoc(
        "`|evidence chunks within the top k of the chunk ranking| / |evidence chunks|`",
        "the record's evidence chunks (`GoldRecord.evidence_chunks()`); grades and alternatives do not apply",
        "0, undefined (a documents-only gold set: mean `None` with a note)",
        "recall_k (chunk qrels)",
        "R@k (chunk qrels) = chunk.R@k",
        "recall@k",
        "none on the chunk exports; counts chunks, so not comparable across chunkers",
    ),
    "evidence_mrr": MetricDoc(
        "`1 / min rank` of an evidence chunk within the chunk depth, else 0",
        "evidence chunks only",
        "0, undefined",
        "recip_rank (chunk qrels)",
        "RR (chunk qrels) = chunk.RR",
        "mrr",
        "none on the chunk exports; counts chunks, so not comparable across chunkers",
    ),
    "evidence_recall@w": MetricDoc(
        "`|E_q ∩ C(P_B)| / |E_q|`: the share of the question's quoted evidence characters covered by the longest "
        "prefix `P_B` of the chunk ranking whose word counts sum to <= B (no skipping, no truncated chunk; "
        "harness.metrics.budget)",
        "quoted characters of the gold documents' quotes; alternatives do not apply",
        "no value (excluded and counted) without a located quote; not applicable (mean `None`) without chunk extents",
        "-",
        "-",
        "-",
        "the project's own definition (issue 20); comparable across chunkers",
    ),
    **{pre + n: _standard(n, bool(pre)) for n in _STANDARD for pre in ("", "chunk.")},
}
"""``{registry key: MetricDoc}``: one entry per family of :data:`harness.metrics.METRICS`."""


def missing() -> list[str]:
    """Registry keys without a :class:`MetricDoc` (must be empty)."""
    return [k for k in METRICS if k not in DOCS]


def _id_form(f: MetricFamily) -> str:
    if f.unit:
        return f"`{f.name}@<B>{f.unit}`"
    if f.optional_k:
        return f"`{f.name}`, `{f.name}@k`"
    return f"`{f.name}@k`" if f.takes_k else f"`{f.name}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render() -> str:
    """``docs/metrics.md``: one section per registry family, in registry order.

    Raises:
        KeyError: a family without a :class:`MetricDoc` (:func:`missing`).
    """
    gaps = missing()
    if gaps:
        raise KeyError(f"metrics without documentation in harness.metrics.catalog.DOCS: {', '.join(gaps)}")
    out = [
        "# Metrics",
        "",
        "<!-- generated by `python -m harness.metrics.catalog docs/metrics.md` from harness/metrics/catalog.py and the "
        "registry harness.metrics.METRICS; do not edit by hand (tests/test_metrics_doc.py checks it) -->",
        "",
        "Every metric the harness computes, from one canonical ranking per (system, question, level): **score "
        "descending, then id ascending** (the one tie rule, `harness/ranking.py`), cut at the run's depth "
        "(`--doc-depth` 50, `--chunk-depth` 200; a metric at k needs the depth >= k: `--metrics` grows it). Rank r "
        "counts from 1. Every value lies in [0, 1]; a summary's mean runs over every question of the gold set (or "
        "the subset, `--qids`/`--category`), a question without a ranking scoring 0.",
        "",
        "**Ties and the tools.** trec_eval breaks score ties by id *descending*, ir_measures and ranx re-sort too; "
        "the run record's `trec/` exports write scores that strictly decrease in the harness's order "
        "(`harness.evaluation.trec.export_scores`), so every tool reads the same ranking and the measures named "
        "alike agree per question, ties included.",
        "",
        "**Two vocabularies.** The harness's own ids (`mrr`, `recall@k`, `all_hop@k`, `hit@k`, `ndcg@k`, "
        "`precision@k`, `evidence_*`) read the gold set: a gold document may name *alternatives* (any one of "
        "them satisfies it) and grade 2 documents are *required*. The ir_measures names (`RR`, `AP`, `nDCG`, `P`, "
        "`R`, `Success`, `Judged`; `chunk.<name>` at the chunk level) keep ir_measures / trec_eval semantics over "
        "the run record's qrels (`trec/qrels.<level>.txt`): relevant = rel >= 1, an alternative is one more "
        "relevant document. So `R@k` (useful documents and alternatives count) need not equal `recall@k` (required "
        "documents, each once), and `nDCG@k` need not equal `ndcg@k` on questions with alternatives.",
        "",
        "**Other spellings.** trec_eval's measure names are read as the ir_measures ids, never as the harness's own, "
        "with a `note:` line: `ndcg_cut_10` is `nDCG@10`, `P_5` `P@5`, `recall_10` `R@10`, `map_cut_100` `AP@100`, "
        "`map` `AP`, `recip_rank` `RR`, `success_10` `Success@10`. Ids are case-sensitive; another case is read "
        "(with a note) only where it names one family (`MRR` is `mrr`); `NDCG@10` is refused, naming `ndcg@10` and "
        "`nDCG@10`. An unknown id gets the nearest known one (`mrrr`: did you mean `mrr`?).",
        "",
        "Summarised by default (`harness run` without `--metrics`): "
        + ", ".join(f"`{m}`" for m in summary_metric_ids())
        + ". Any other id: `harness run/evaluate --metrics ID,...`, or `--metric ID` on `compare`, `gate`, `power` "
        "(scored from the stored rankings when the run lacks it).",
        "",
        "| id | level | across chunkers | summarised |",
        "| --- | --- | --- | --- |",
    ]
    for f in METRICS.values():
        summ = "yes" if f.summary else "when asked"
        out.append(f"| {_id_form(f)} | {f.level} | {'yes' if f.cross_chunker else 'no'} | {summ} |")
    for key, f in METRICS.items():
        d = DOCS[key]
        out += [
            "",
            f"## {_id_form(f)}",
            "",
            f.description,
            "",
            "| | |",
            "| --- | --- |",
            f"| formula | {_cell(d.formula)} |",
            f"| level | {'documents' if f.level == 'docs' else 'chunks'} |",
            f"| grades and alternatives | {_cell(d.alternatives)} |",
            "| ties | score descending, then id ascending (the exports make the tools read the same order) |",
            f"| questions without gold | {_cell(d.no_gold)} |",
            f"| trec_eval / pytrec_eval | {_cell(d.trec_eval)} |",
            f"| ir_measures | {_cell(d.ir_measures)} |",
            f"| ranx | {_cell(d.ranx)} |",
            f"| difference from the tools | {_cell(d.difference)} |",
            f"| code | `{f.compute.__module__}.{f.compute.__name__}` |",
        ]
    return "\n".join(textwrap.fill(x, 118) if x and x[0] not in "|#<" else x for x in out) + "\n"


def write(path: str | Path) -> Path:
    """Write :func:`render` to ``path`` atomically."""
    from harness.io import atomic_write_text

    atomic_write_text(path, render())
    return Path(path)


if __name__ == "__main__":  # python -m harness.metrics.catalog docs/metrics.md
    print(write(sys.argv[1] if len(sys.argv) > 1 else "docs/metrics.md"))
