"""The statistics section of a dataset README, written from the records (``harness goldset apply`` regenerates it,
so a new version never carries its predecessor's figures).

The section sits between the lines ``<!-- BEGIN GENERATED`` ... ``-->`` and ``<!-- END GENERATED -->``;
:func:`regenerate_readme` replaces everything between them (a README without the markers gets the section appended
under a ``## Statistics (generated)`` heading). Every figure is counted from the records
(:func:`statistics_lines`): questions per category and per split, false premises, distinct gold documents (required /
other grades, with alternatives), evidence items (quotes), distinct evidence chunks, clusters (connected components of
questions sharing a gold document, :func:`harness.goldset.clusters.question_clusters`) with their sizes, and a table
of the questions. Retrieval figures (MRR and the like) are not written here: they belong to a run record
(``runs/baselines/``), which a correction does not re-run.
"""

from __future__ import annotations

import re
from collections import Counter

from harness.goldset.clusters import question_clusters
from harness.goldset.io import GoldSet

__all__ = ["BEGIN", "END", "regenerate_readme", "statistics_lines"]

BEGIN = "<!-- BEGIN GENERATED: harness goldset statistics -->"
END = "<!-- END GENERATED -->"
_BLOCK = re.compile(r"<!-- BEGIN GENERATED[^\n]*-->\n.*?<!-- END GENERATED -->", re.DOTALL)


def _cell(text: str) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("<", "&lt;")


def statistics_lines(goldset: GoldSet) -> list[str]:
    """The statistics of ``goldset`` as Markdown lines (see the module docstring)."""
    recs = goldset.records
    cats = Counter(r.category for r in recs)
    splits = Counter(r.split or "none" for r in recs)
    premise = sum(1 for r in recs if r.answerability == "false_premise")
    grades: dict[str, int] = {}
    with_alts = set()
    for r in recs:
        for g in r.gold_documents:
            did = str(g.document_id)
            grades[did] = max(grades.get(did, 0), g.effective_grade)
            if g.alternatives:
                with_alts.add(did)
    by_grade = Counter(grades.values())
    quotes = sum(len(g.evidence) for r in recs for g in r.gold_documents)
    chunks = {str(e.chunk_id) for r in recs for g in r.gold_documents for e in g.evidence}
    labels = question_clusters(recs)
    sizes = Counter(Counter(labels.values()).values())
    version = f"{goldset.name} {goldset.version}"
    out = [
        f"Figures of {_cell(version)}, counted from the records by `harness goldset apply`.",
        "",
        f"- Questions: **{len(recs)}** ("
        + ", ".join(f"{_cell(c)} {n}" for c, n in cats.items())
        + "); splits: "
        + ", ".join(f"{_cell(s)} {n}" for s, n in sorted(splits.items()))
        + f"; false premise: {premise}.",
        f"- Distinct gold documents: **{len(grades)}** ("
        + ", ".join(f"grade {g}: {by_grade[g]}" for g in sorted(by_grade, reverse=True))
        + f"; alternatives listed for {len(with_alts)}); evidence items (quotes): {quotes}; distinct evidence "
        f"chunks: {len(chunks)}.",
        f"- Clusters (questions sharing a gold document): **{len(set(labels.values()))}**; largest "
        f"{max(Counter(labels.values()).values(), default=0)}; sizes "
        + "{"
        + ", ".join(f"{k}: {v}" for k, v in sorted(sizes.items()))
        + "}.",
        "",
        "| id | category | split | gold documents (grade) | quotes |",
        "|---|---|---|---|---:|",
    ]
    for r in recs:
        docs = ", ".join(f"`{_cell(g.document_id)}` ({g.effective_grade})" for g in r.gold_documents)
        n = sum(len(g.evidence) for g in r.gold_documents)
        out.append(f"| {_cell(r.qid)} | {_cell(r.category)} | {_cell(r.split or '')} | {docs} | {n} |")
    return out


def regenerate_readme(text: str | None, goldset: GoldSet) -> str:
    """``text`` (a README, or ``None`` for none) with its generated section replaced by :func:`statistics_lines`
    (see the module docstring)."""
    block = "\n".join([BEGIN, *statistics_lines(goldset), END])
    if text is None:
        return f"# {goldset.name} {goldset.version}\n\n## Statistics (generated)\n\n{block}\n"
    if _BLOCK.search(text):
        return _BLOCK.sub(lambda _m: block, text, count=1)
    return text.rstrip("\n") + f"\n\n## Statistics (generated)\n\n{block}\n"
