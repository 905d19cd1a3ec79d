"""Coverage for a gold set's own design (``harness coverage --run RUN --population KI_DIR...``).

A gold-set run's design is its cluster-size vector ``m = (m_1, ..., m_G)`` (questions per cluster) and how its
documents were drawn (:class:`harness.stats.design_evidence.RunDesign`). One replicate of the design on a known-item
population (per-chunk outcomes of :mod:`harness.studies.coverage.population`):

* ``srs``: G documents drawn at random without replacement; the sizes ``m`` assigned to them in random order; in each
  document ``m_g`` of its chunk-queries drawn at random without replacement (with replacement in the rare document
  with fewer than ``m_g`` queries, so that every question is an unbiased draw from its document). The question mean
  then estimates ``theta_macro = mean_d(Ybar_d)``, the mean over documents (each once): the target of every method.
* ``pps``: G independent draws, document d with probability ``n_d / sum(n)`` (with replacement), ``m_g`` questions
  drawn in draw g as above. The Hansen-Hurwitz mean (mean of the draws' question means) estimates the corpus's
  chunk-weighted mean ``theta_micro = sum(s) / sum(n)``: the target of the PPS methods (:mod:`harness.stats.pps`).

* ``independent``: G chunk-queries (rows) drawn uniformly without replacement from the whole population (not whole
  documents), each its own cluster of one question. The question mean estimates the population's row mean
  ``theta_micro`` (for a population of one row per query, e.g. CISI's 76 judged queries, the mean over all its
  queries); no finite-population correction is applied. SRS-design methods (those a run computes) are measured.

Rows are the questions, clusters the drawn documents, as in a gold-set run (the CR2 Satterthwaite df depends on the
cluster sizes alone, so it equals the run's). Every method of the registry that applies (SRS-design methods under
``srs``, PPS-design methods under ``pps``; no frame methods) computes its interval from the per-cluster sums through
its batched kernel (:mod:`harness.stats.batched`), on the same samples. Coverage counts ``lower <= target <= upper``
(Monte Carlo margin ``1.96 sqrt(p (1 - p) / R)``); widths are clipped to [0, 1] for outcomes in [0, 1].

The default per outcome class is chosen by the rule of :mod:`harness.studies.coverage.choice` applied at the run's own
K: among the candidates (methods a run computes under this design that estimate the reported mean) whose mean width
is at most 1.15x the reference's (CR2 under ``srs``, Hansen-Hurwitz t under ``pps``) on every population of the
class, those whose coverage is >= 93 % on every population; of these the one with the highest minimum coverage, ties
to the narrower, then the registry's display order. When none reaches 93 % the class has no default (``None``):
"no interval method holds for this design", and renderings show the reference (CR2) labelled below 93 %.

Randomness: replicate block j of population p uses ``SeedSequence([seed, 7, p, j])``; results do not depend on
``threads``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

import harness.stats.batched as batched
from harness.errors import HarnessInputError
from harness.stats.design_evidence import RunDesign, estimand_note
from harness.stats.methods import INTERVALS, display_order
from harness.studies.coverage.population import Population

THRESHOLD = 0.93
WIDTH_LIMIT = 1.15
REFERENCE = {"srs": "cr2", "independent": "cr2", "pps": "hansen_hurwitz"}
CLASSES = ("binary", "unit", "continuous", "paired")
RULE = (
    "the rule of issue 21 at the run's own K: candidates within 1.15 x the reference's mean width (CR2; "
    "Hansen-Hurwitz t for PPS) on every population; among those covering >= 93 % on every population, the "
    "highest minimum coverage; none when no method reaches 93 %"
)


def _short(method: str) -> str:
    """``CR2`` for ``cr2`` (:func:`harness.stats.shown.short_label`)."""
    from harness.stats.shown import short_label

    return short_label(method)


def _pick_within(rng: np.random.Generator, n: np.ndarray, m: int) -> np.ndarray:
    """``m`` positions in ``[0, n_i)`` per row i of ``n`` (shape (r,)): without replacement where ``n_i >= m``,
    with replacement elsewhere. Returns shape (r, m)."""
    r = n.size
    out = np.empty((r, m), dtype=np.int64)
    small = n < m
    for i in range(m):
        u = rng.random(r)
        x = np.floor(u * np.where(small, n, n - i)).astype(np.int64)
        if i and not small.all():
            for c in np.sort(out[:, :i], axis=1).T:  # rank among the unchosen -> position (ascending skip)
                x = np.where(small, x, x + (x >= c))
        out[:, i] = x
    return out


def _questions(
    rng: np.random.Generator, pop: Population, docs: np.ndarray, sizes: np.ndarray
) -> tuple[np.ndarray, np.ndarray | None]:
    """Per-cluster sums (and sums of squares) of ``sizes[i, g]`` questions drawn in document ``docs[i, g]``."""
    s = np.zeros(docs.shape, dtype=np.float64)
    sq = None if pop.ss is None else np.zeros(docs.shape, dtype=np.float64)
    for m in np.unique(sizes):
        where = sizes == m
        d = docs[where]
        n = pop.n[d]
        if pop.ss is None:  # binary: hypergeometric count of hits (binomial when a document is too small)
            hits = pop.s[d]
            ok = n >= m
            got = np.empty(d.size, dtype=np.float64)
            got[ok] = rng.hypergeometric(hits[ok], n[ok] - hits[ok], int(m))
            got[~ok] = rng.binomial(int(m), hits[~ok] / n[~ok])
            s[where] = got
            continue
        if pop.rows is None:
            raise HarnessInputError(f"population {pop.system}: a non-binary outcome needs its per-query rows")
        start = np.concatenate([[0], np.cumsum(pop.n)[:-1]])
        y = pop.rows.y[start[d][:, None] + _pick_within(rng, n, int(m))]
        s[where] = y.sum(1)
        sq[where] = (y * y).sum(1)
    return s, sq


def _independent_rows(
    rng: np.random.Generator, pop: Population, cum: np.ndarray, r: int, g: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``r`` samples of ``g`` rows drawn uniformly without replacement from the population's rows, each its own
    cluster: sizes (ones), sums and sums of squares (None for a binary outcome), each of shape (r, g)."""
    total = int(cum[-1])
    idx = np.stack([rng.choice(total, g, replace=False) for _ in range(r)])
    if pop.ss is None:  # binary: a document's first s_d rows are its hits
        doc = np.searchsorted(cum, idx, side="right")
        y = ((idx - (cum - pop.n)[doc]) < pop.s[doc]).astype(np.float64)
        sq = None
    else:
        if pop.rows is None:
            raise HarnessInputError(f"population {pop.system}: a non-binary outcome needs its per-query rows")
        y = np.asarray(pop.rows.y, dtype=np.float64)[idx]
        sq = y * y
    return np.ones((r, g), dtype=np.int64), y, sq


@dataclass
class PopulationCoverage:
    """One population's coverage under the design: ``label``, ``classes`` (outcome classes it is evidence for),
    ``target`` (the value covered), ``rows`` ``{method: {"coverage", "mc_margin", "mean_width", "width_ratio",
    "infinite_share"}}``, ``seconds``."""

    label: str
    classes: tuple[str, ...]
    target: float
    rows: dict[str, dict]
    seconds: float

    def to_dict(self) -> dict:
        """JSON form."""
        return dict(self.__dict__, classes=list(self.classes))


def simulate_design(
    pop: Population,
    design: RunDesign,
    *,
    label: str | None = None,
    reps: int = 2000,
    b: int = 199,
    seed: int = 0,
    level: float = 0.95,
    index: int = 0,
    block_elements: int = 1 << 21,
) -> PopulationCoverage:
    """Coverage of every applicable method under ``design`` on ``pop`` (module docstring).

    Args:
        pop: the population (binary populations need ``n``/``s`` only; others their per-query ``rows``).
        design: the run's design (``cluster_sizes`` non-empty, at least 2 clusters).
        label: the population's name in tables.
        reps: R replicates (>= 10); b: bootstrap replicates of resampling methods; seed, index: randomness.
        level: confidence level.
        block_elements: memory bound on ``reps_in_block * b * G``.

    Raises:
        HarnessInputError: fewer than 2 clusters, more SRS clusters than documents, reps < 10.
    """
    sizes = np.asarray(design.cluster_sizes, dtype=np.int64)
    g, d = sizes.size, pop.n.size
    if g < 2 or reps < 10:
        raise HarnessInputError(f"design: need >= 2 clusters and reps >= 10 (got {g} clusters, reps {reps})")
    if design.sampling == "srs" and g > d:
        raise HarnessInputError(f"design: {g} clusters drawn without replacement from {d} documents")
    independent = design.sampling == "independent"
    if independent and (g > int(pop.n.sum()) or any(int(x) != 1 for x in sizes)):
        raise HarnessInputError(f"design: {g} independent questions need one question per cluster, <= the population")
    t0 = time.perf_counter()
    target = pop.macro if design.sampling == "srs" else pop.micro
    outcome = "continuous" if pop.paired else pop.outcome
    want = "srs" if independent else design.sampling
    methods = [
        m
        for m in (INTERVALS[k] for k in display_order())
        if m.design == want and not m.frame and m.applies_to(outcome) and (m.paired or not pop.paired)
    ]
    cum = np.cumsum(pop.n.astype(np.float64))
    per_block = max(1, block_elements // (b * g))
    bounds: dict[str, list] = {m.name: [] for m in methods}
    for j, a in enumerate(range(0, reps, per_block)):
        r = min(per_block, reps - a)
        rng = np.random.default_rng(np.random.SeedSequence([seed, 7, index, j]))
        if independent:
            ns, s, sq = _independent_rows(rng, pop, cum, r, g)
            batch = batched.ClusterBatch(ns, s, sq)
            draws = batched.Resamples(rng, b, (seed, 7, index, j))
            for m in methods:
                bounds[m.name].append(m.kernel(batch, level, (1.0,), draws)[0])
            continue
        if want == "srs":
            docs = np.argpartition(rng.random((r, d)), g - 1, axis=1)[:, :g]
            ns = sizes[np.argsort(rng.random((r, g)), axis=1)]
        else:
            docs = np.minimum(np.searchsorted(cum, rng.random((r, g)) * cum[-1], side="right"), d - 1)
            ns = np.broadcast_to(sizes, (r, g)).copy()
        s, sq = _questions(rng, pop, docs, ns)
        batch = batched.ClusterBatch(ns, s, sq)
        draws = batched.Resamples(rng, b, (seed, 7, index, j))
        for m in methods:
            bounds[m.name].append(m.kernel(batch, level, (1.0,), draws)[0])
    unit = outcome in ("binary", "unit")
    rows: dict[str, dict] = {}
    for name, parts in bounds.items():
        lo = np.concatenate([p[0] for p in parts])
        hi = np.concatenate([p[1] for p in parts])
        p = float(np.mean((lo <= target) & (target <= hi)))
        finite = np.isfinite(lo) & np.isfinite(hi)
        w = (np.clip(hi, 0, 1) - np.clip(lo, 0, 1) if unit else hi - lo)[finite]
        rows[name] = {
            "coverage": p,
            "mc_margin": 1.96 * math.sqrt(p * (1 - p) / reps),
            "mean_width": float(w.mean()) if w.size else math.nan,
            "infinite_share": float(np.mean(~finite)),
        }
    ref = rows.get(REFERENCE[want], {}).get("mean_width", math.nan)
    for row in rows.values():
        ok = math.isfinite(ref) and ref > 0 and math.isfinite(row["mean_width"])
        row["width_ratio"] = row["mean_width"] / ref if ok else None
    classes = ("continuous", "paired") if pop.paired else (pop.outcome,)
    return PopulationCoverage(label or pop.system, classes, target, rows, time.perf_counter() - t0)


def _candidate(name: str, cls: str, sampling: str) -> bool:
    m = INTERVALS[name]
    outcome = "continuous" if cls == "paired" else cls
    runs_it = m.in_runs if sampling in ("srs", "independent") else m.design == "pps" and not m.frame
    ok = runs_it and m.estimand == "micro" and not m.contrast_only and m.applies_to(outcome)
    return ok and (m.paired or cls != "paired")


def choose(pops: Sequence[PopulationCoverage], sampling: str) -> dict[str, dict]:
    """The rule (module docstring) per outcome class: ``{class: {"default", "meets_target", "populations",
    "methods": {method: {"min", "max", "where_min", "mc_margin", "max_width_ratio", "candidate", "meets",
    "populations", "default"}}}}``; classes without populations are left out."""
    order = list(display_order())
    out: dict[str, dict] = {}
    for cls in CLASSES:
        mine = [p for p in pops if cls in p.classes]
        if not mine:
            continue
        summ: dict[str, dict] = {}
        for name in order:
            got = [(p.rows[name], p.label) for p in mine if name in p.rows]
            if len(got) != len(mine):
                continue
            low = min(got, key=lambda x: x[0]["coverage"])
            ratios = [r["width_ratio"] for r, _ in got]
            wmax = None if any(x is None for x in ratios) else max(ratios)
            within = wmax is not None and wmax <= WIDTH_LIMIT
            summ[name] = {
                "min": low[0]["coverage"],
                "max": max(r["coverage"] for r, _ in got),
                "where_min": low[1],
                "mc_margin": low[0]["mc_margin"],
                "max_width_ratio": wmax,
                "candidate": _candidate(name, cls, sampling),
                "meets": within and low[0]["coverage"] >= THRESHOLD,
                "within_width": within,
                "populations": len(got),
                "default": False,
            }
        pool = [n for n, v in summ.items() if v["candidate"] and v["meets"]]
        pool.sort(key=lambda n: (-summ[n]["min"], summ[n]["max_width_ratio"] or 0.0, order.index(n)))
        best = pool[0] if pool else None  # no method reaches the target: no default (issue 42 item 2)
        if best is not None:
            summ[best]["default"] = True
        ref = REFERENCE[sampling]
        out[cls] = {
            "default": best,
            "meets_target": best is not None,
            "reference": ref,
            "reference_min": summ.get(ref, {}).get("min"),
            "populations": [p.label for p in mine],
            "methods": summ,
        }
    return out


@dataclass
class DesignCoverage:
    """What ``harness coverage --run RUN`` produced: the design, every population's coverage, the rule's choice."""

    design: RunDesign
    populations: list[PopulationCoverage]
    choice: dict[str, dict]
    config: dict
    seconds: float
    files: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON form: ``design``, ``config``, ``rule``, ``outcomes`` ``{class: {"default", "coverage",
        "methods": [{"method", "default", "coverage" (min), "max", ...}]}}`` and every population's rows."""
        outcomes = {}
        for cls, c in self.choice.items():
            d = c["methods"].get(c["default"] or "", {})
            outcomes[cls] = {
                "default": c["default"],
                "coverage": d.get("min"),
                "meets_target": c["meets_target"],
                "no_default": self.no_default(cls),
                "populations": c["populations"],
                "methods": [{"method": n, "coverage": v["min"], **v} for n, v in c["methods"].items()],
            }
        return {
            "design": {**self.design.to_dict(), "run": self.design.run, "describe": self.design.describe()},
            "config": self.config,
            "rule": RULE,
            "threshold": THRESHOLD,
            "width_limit": WIDTH_LIMIT,
            "seconds": round(self.seconds, 2),
            "outcomes": outcomes,
            "populations": [p.to_dict() for p in self.populations],
        }

    #: The columns of :meth:`table_rows` (``coverage.csv`` of ``harness coverage --run RUN --out DIR``).
    COLUMNS = ("outcome", "method", "default", "candidate", "meets", "coverage_min", "coverage_max", "where_min",
               "mc_margin", "max_width_ratio", "populations")  # fmt: skip

    def table_rows(self) -> list[dict]:
        """One row per outcome class and method (:data:`COLUMNS`; coverage in [0, 1]), in the rule's order."""
        return [
            {"outcome": cls, "method": name, "default": v["default"], "candidate": v["candidate"],
             "meets": v["meets"], "coverage_min": v["min"], "coverage_max": v["max"], "where_min": v["where_min"],
             "mc_margin": v["mc_margin"], "max_width_ratio": v["max_width_ratio"], "populations": v["populations"]}
            for cls, c in self.choice.items()
            for name, v in c["methods"].items()
        ]  # fmt: skip

    def no_default(self, cls: str) -> str | None:
        """The sentence printed when class ``cls`` has no default (:func:`harness.wording.no_method_holds`),
        None when it has one."""
        from harness.wording import no_method_holds

        c = self.choice[cls]
        if c["default"] is not None:
            return None
        return no_method_holds(_short(c.get("reference", REFERENCE[self.design.sampling])), c.get("reference_min"))

    def default_cell(self, cls: str, name: str) -> str:
        """The ``default`` column of method ``name`` in class ``cls``: ``default``, the reference's "below 93 % for
        this design (min X %)" when the class has no default, else empty."""
        from harness.wording import below_target

        c = self.choice[cls]
        v = c["methods"][name]
        if v["default"]:
            return "default"
        if c["default"] is None and name == c.get("reference"):
            return below_target(_short(name), v["min"])
        return ""

    def __rich__(self):
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        labels = {n: m.label for n, m in INTERVALS.items()}
        t = Table(title=Text(f"Coverage for this design: {self.design.describe()}"), title_justify="left")
        for col in ("outcome", "method", "min coverage (where)", "max", "max width / ref", "default"):
            t.add_column(col, justify="right" if col.startswith(("min", "max")) else "left")
        for cls, c in self.choice.items():
            for name, v in c["methods"].items():
                if not v["candidate"]:
                    continue
                w = v["max_width_ratio"]
                t.add_row(
                    cls,
                    Text(labels.get(name, name)),
                    Text(f"{100 * v['min']:.1f} ± {100 * v['mc_margin']:.1f} % ({v['where_min']})"),
                    f"{100 * v['max']:.1f} %",
                    "-" if w is None else f"{w:.2f}",
                    Text(self.default_cell(cls, name)),
                )
        lines = [Text(f"{cls}: {self.no_default(cls)}") for cls in self.choice if self.no_default(cls)]
        est = Text(f"{estimand_note(self.design)}. R = {self.config['reps']} per population.")
        return Group(t, *lines, est)
