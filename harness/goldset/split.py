"""Cluster-aware, seeded dev/test assignment of a gold set's questions (``harness goldset split``).

Questions that share a gold document are one cluster (:func:`harness.goldset.clusters.question_clusters`,
``components``), and a whole cluster goes to one side, so a weight or reranker tuned on ``dev`` never sees a ``test``
document as gold. Among the assignments that keep clusters whole, the one chosen minimises the imbalance

    cost = sum over categories c of |dev_c - f * n_c|  +  0.001 * |dev - f * n|

(``n_c`` questions of category ``c``, ``dev_c`` of them on dev, ``f`` the dev fraction, default 0.5; both sides must
be non-empty). A gold set whose questions form a single cluster cannot be split so (one side would be empty): it is
refused with :class:`SplitRefusedError`, exit 1. Categories therefore split as evenly as whole clusters allow, and
the total only breaks ties. The search is a seeded local search (:func:`assign_split`): a random start from
``random.Random(seed)``, then single-cluster moves and dev/test cluster swaps while one lowers the cost, restarted
:data:`RESTARTS` times; the lowest cost wins, the first found among equals. The same records and seed give the same
assignment on every platform (Python's ``random`` is stable for an integer seed); different seeds give different valid
assignments.

The committed split of ``mx-leyes-dof-eval-v1`` is not a seeded one: ``datasets/tools/build_goldset_report.py``'s
``assign_splits`` (a deterministic backtracking search, largest clusters first, 3 + 3 questions per category) made it
on the 1.0.0 records, whose 28 clusters it reproduces exactly (checked 2026-12-01 from the 1.0.0 file in git). The
1.1.0 corrections merged two clusters (28 -> 27: the Constitution is now cited by six questions) and kept the split,
which still keeps every cluster on one side; the same search on the 1.1.0 records would move 18 questions. A seeded
assignment meets the same constraints at cost 0 (3 + 3 per category, 27 clusters whole) and differs in which
clusters went where, which is what a seed chooses.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from harness.errors import HarnessError, HarnessInputError
from harness.goldset.clusters import question_clusters
from harness.goldset.schema import GoldRecord

__all__ = ["RESTARTS", "SplitPlan", "SplitRefusedError", "assign_split", "split_cost"]

RESTARTS = 32
"""Seeded restarts of the local search; the lowest cost over all of them is kept."""

_TOTAL_WEIGHT = 0.001


class SplitRefusedError(HarnessError):
    """No dev/test split keeps whole clusters and both sides non-empty (every question in one cluster); exit 1, like
    a split set that fails its contract: the input is readable, the split it asks for cannot exist."""

    exit_code = 1


@dataclass
class SplitPlan:
    """A dev/test assignment.

    Attributes:
        split: ``{qid: "dev" | "test"}`` for every record.
        seed: the seed; dev_fraction: the target share of dev questions (0-1).
        cost: the imbalance (module docstring; 0 is perfect balance).
        per_category: ``{category: {"dev": n, "test": n}}``.
        clusters: ``{"dev": n, "test": n}`` clusters per side; n_clusters: all clusters.
        replaced: questions whose previous split label differed from the new one (0 for an unsplit set).
    """

    split: dict[str, str]
    seed: int
    dev_fraction: float
    cost: float
    per_category: dict[str, dict[str, int]]
    clusters: dict[str, int]
    n_clusters: int
    replaced: int = 0
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """A JSON-ready dict."""
        return {
            "seed": self.seed,
            "dev_fraction": self.dev_fraction,
            "cost": self.cost,
            "n_clusters": self.n_clusters,
            "clusters": dict(self.clusters),
            "per_category": {c: dict(v) for c, v in self.per_category.items()},
            "questions": dict(Counter(self.split.values())),
            "replaced": self.replaced,
        }


def split_cost(dev_counts: Sequence[float], totals: Sequence[float], fraction: float) -> float:
    """Imbalance of a dev assignment (module docstring).

    Args:
        dev_counts: questions of each category on dev; totals: questions of each category; fraction: dev share.
    """
    cat = sum(abs(d - fraction * t) for d, t in zip(dev_counts, totals, strict=True))
    return cat + _TOTAL_WEIGHT * abs(sum(dev_counts) - fraction * sum(totals))


def assign_split(
    records: Sequence[GoldRecord], *, seed: int, dev_fraction: float = 0.5, where: str = "gold set"
) -> SplitPlan:
    """Assign every question to dev or test, whole clusters together, categories balanced (module docstring).

    Args:
        records: the gold records (at least two, in at least two clusters).
        seed: any integer; the same records and seed give the same plan.
        dev_fraction: share of questions to put on dev, in (0, 1).
        where: what the error messages name (the records file).

    Returns:
        The :class:`SplitPlan` of lowest cost found.

    Raises:
        HarnessInputError: fewer than two questions, or a fraction outside (0, 1) (exit 2).
        SplitRefusedError: every question in one cluster (exit 1).
    """
    if not 0.0 < dev_fraction < 1.0:
        raise HarnessInputError(f"--dev-fraction {dev_fraction!r}: must lie strictly between 0 and 1")
    if len(records) < 2:
        raise HarnessInputError(f"{where}: {len(records)} question(s); a dev/test split needs at least two")
    labels = question_clusters(records)
    members: dict[str, list[GoldRecord]] = {}
    for r in records:
        members.setdefault(labels[r.qid], []).append(r)
    names = list(members)
    if len(names) < 2:
        raise SplitRefusedError(
            f"{where}: field gold_documents: all {len(records)} questions are one cluster (each shares a gold "
            "document with another, directly or through others); a split keeps a cluster on one side, so the other "
            "side would be empty: nothing written"
        )
    cats = list(dict.fromkeys(r.category for r in records))
    col = {c: i for i, c in enumerate(cats)}
    vec = [[0] * len(cats) for _ in names]
    for i, name in enumerate(names):
        for r in members[name]:
            vec[i][col[r.category]] += 1
    totals = [sum(v[j] for v in vec) for j in range(len(cats))]
    n = len(names)

    def cost_of(dev: list[int], on_dev: int) -> float:
        if on_dev == 0 or on_dev == n:  # both sides non-empty (n >= 2 clusters here)
            return float("inf")
        return split_cost(dev, totals, dev_fraction)

    rng = random.Random(seed)
    best: tuple[float, list[bool]] | None = None
    for _ in range(RESTARTS):
        side = [rng.random() < dev_fraction for _ in range(n)]
        dev = [sum(vec[i][j] for i in range(n) if side[i]) for j in range(len(cats))]
        on_dev = sum(side)
        cur = cost_of(dev, on_dev)
        improved = True
        while improved:
            improved = False
            order = list(range(n))
            rng.shuffle(order)
            for i in order:  # single-cluster moves
                sign = -1 if side[i] else 1
                cand = [d + sign * x for d, x in zip(dev, vec[i], strict=True)]
                c = cost_of(cand, on_dev + sign)
                if c < cur - 1e-12:
                    side[i], dev, on_dev, cur, improved = not side[i], cand, on_dev + sign, c, True
            if improved:
                continue
            for i in order:  # swaps: one dev cluster for one test cluster
                if not side[i]:
                    continue
                for k in order:
                    if side[k]:
                        continue
                    cand = [d - a + b for d, a, b in zip(dev, vec[i], vec[k], strict=True)]
                    c = cost_of(cand, on_dev)
                    if c < cur - 1e-12:
                        side[i], side[k], dev, cur, improved = False, True, cand, c, True
                        break
                if improved:
                    break
        if best is None or cur < best[0] - 1e-12:
            best = (cur, list(side))
    assert best is not None
    cost, side = best
    split = {}
    for i, name in enumerate(names):
        for r in members[name]:
            split[r.qid] = "dev" if side[i] else "test"
    per_cat = {c: {"dev": 0, "test": 0} for c in cats}
    for r in records:
        per_cat[r.category][split[r.qid]] += 1
    return SplitPlan(
        split=split,
        seed=seed,
        dev_fraction=dev_fraction,
        cost=round(cost, 9),
        per_category=per_cat,
        clusters={"dev": sum(side), "test": n - sum(side)},
        n_clusters=n,
        replaced=sum(1 for r in records if r.split is not None and r.split != split[r.qid]),
    )
