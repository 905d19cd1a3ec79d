"""Cluster labels for gold-set questions, for document-clustered intervals.

Questions that share a gold document are not independent trials. The default clustering joins questions into the
connected components of the bipartite question - gold-document graph (every listed gold document, whatever its
grade; alternatives do not join clusters).
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.errors import HarnessInputError
from harness.goldset.schema import GoldRecord

CLUSTERINGS = ("components", "first-document", "none")


def question_clusters(records: Sequence[GoldRecord], mode: str = "components") -> dict[str, str]:
    """Cluster label per question.

    Args:
        records: gold records.
        mode: ``components`` (connected components of questions sharing gold documents; the default),
            ``first-document`` (the question's first gold document), or ``none`` (each question its own cluster).

    Returns:
        ``{qid: label}``. Component labels are ``c<k>`` numbered by first appearance in ``records``.

    Raises:
        HarnessInputError: unknown mode.
    """
    if mode == "none":
        return {r.qid: r.qid for r in records}
    if mode == "first-document":
        return {r.qid: (str(r.gold_documents[0].document_id) if r.gold_documents else r.qid) for r in records}
    if mode != "components":
        raise HarnessInputError(f"unknown clustering {mode!r} (known: {', '.join(CLUSTERINGS)})")
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[rb] = ra

    for r in records:
        q = "q:" + r.qid
        find(q)
        for g in r.gold_documents:
            union(q, "d:" + str(g.document_id))
    labels: dict[str, str] = {}
    names: dict[str, str] = {}
    for r in records:
        root = find("q:" + r.qid)
        names.setdefault(root, f"c{len(names) + 1}")
        labels[r.qid] = names[root]
    return labels
