"""The known-item check of the gate (``harness gate --known-item KI_DIR``): a label-free, corpus-wide guard.

KI_DIR is the output folder of ``harness known-item --systems A,B ...`` (:mod:`harness.studies.known_item`): for
every chunk-query of the corpus (the first ``query_words`` words of a chunk), each system's ``hit`` (the top chunk
belongs to the query's document: hit@1) and ``rank`` of the first same-document chunk (reciprocal rank ``1 / rank``
when ``rank <= 200``, else 0, as :mod:`harness.studies.coverage.population` reads it). The check pairs the two
systems' outcomes chunk-query by chunk-query (``d = candidate - baseline``) and states two numbers, named as such:

(a) **census difference on this corpus**: the mean of ``d`` over every chunk-query (a census: no sampling error for
    this corpus);
(b) **interval for documents like these**: the corpus taken as a sample of documents of its kind, the two-sided
    ``1 - 2 alpha`` CR2 interval of the mean of ``d`` with documents as clusters (Bell & McCaffrey 2002, Satterthwaite
    df; :func:`harness.stats.paired`), whose point estimate is (a). The verdict comes from (b), with the gate's
    three-way rule (:func:`harness.evaluation.gate.judge`: PASS ``L > -margin``, FAIL ``U < -margin``, else
    INCONCLUSIVE, the minimum detectable difference at 80 % power printed).

**Measured coverage.** Beside the interval the check prints its coverage measured on this very pair: the corpus is
the population, ``reps`` samples draw as many documents as it holds, uniformly with replacement (the design the
interval assumes: documents of this kind drawn independently), CR2 is computed on each, and the share covering the
census difference is counted (Monte Carlo margin ``1.96 sqrt(p (1 - p) / reps)``). The same measurement with PPS
draws and the Hansen-Hurwitz interval (:mod:`harness.stats.pps`) is available as ``design="pps"``; the choice of CR2
for this check rests on the study of ``benchmarks/known_item_gate_coverage.py`` (docs/measurements.md, block
"Known-item gate").

The check is a **proxy for source attribution** (does the system put a chunk of the right document first for a
passage of that document?), not answer quality: it belongs beside the gold-set checks as a guard.

Errors (exit 2, :class:`harness.errors.HarnessInputError`): a KI_DIR that is not a known-item output, one written
by ``known-item --sample`` (its chunk-queries are a PPS or SRS sample of documents, not the corpus's census), one
that fails its verification (:mod:`harness.evaluation.known_item_folder`: recorded sha256s, every value's type and
range, the summary's means), a system it does not hold, a candidate without an outcome for a chunk-query of the
baseline (naming the system and the chunk), and, with run records, a KI_DIR whose corpus hash, chunking or system
configurations differ from the runs'.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from harness.defaults import DEFAULT_CHUNK_DEPTH
from harness.errors import HarnessInputError
from harness.evaluation.gate import EXIT_CODES, ON_INCONCLUSIVE, GateCheck, GateVerdict, combine, judge
from harness.evaluation.known_item_folder import verify_folder
from harness.evaluation.pairing import PairedValues
from harness.io import read_json
from harness.stats.batched import ClusterBatch, t_crit

__all__ = [
    "KI_METRICS",
    "PROXY",
    "KnownItemCheck",
    "KnownItemPair",
    "add_known_item",
    "check_matches_runs",
    "known_item_check",
    "known_item_evidence_json",
    "known_item_gate",
    "known_item_only",
    "load_pair",
    "measured_coverage",
]

KI_METRICS = ("hit@1", "rr")
"""The outcomes the check judges: ``hit@1`` (0/1) and ``rr`` (reciprocal rank of the first same-document chunk)."""
RR_DEPTH = DEFAULT_CHUNK_DEPTH
"""Reciprocal ranks count ranks up to this depth, 200 (the coverage study's populations,
:data:`harness.studies.coverage.population.RR_DEPTH`, read the same constant)."""
PROXY = (
    "proxy for source attribution (the top chunk for a passage's opening words comes from that passage's "
    "document), not for answer quality"
)
INTERVAL_METHOD = "cr2"
"""The interval of (b): CR2, documents as clusters (chosen by the measurement of docs/measurements.md)."""
COVERAGE_REPS = 2000
"""Samples of the coverage measured per check."""
DESIGN_LABELS = {
    "srswr": "documents drawn uniformly with replacement, as many as the corpus holds",
    "pps": "documents drawn with probability proportional to their chunk-queries, with replacement, as many as the "
    "corpus holds",
}


@dataclass
class KnownItemPair:
    """The paired known-item outcomes of two systems of one KI_DIR.

    Attributes:
        ki_dir: the folder; summary: its ``summary.json``.
        baseline, candidate: the system names; metric: ``hit@1`` or ``rr``.
        chunks: Q chunk ids (``doc_id#index``), in (document, chunk) order; docs: (Q,) their document ids.
        a, b: (Q,) float64 outcomes of the baseline and the candidate.
    """

    ki_dir: Path
    summary: dict
    baseline: str
    candidate: str
    metric: str
    chunks: list[str]
    docs: np.ndarray
    a: np.ndarray
    b: np.ndarray

    def values(self) -> PairedValues:
        """As the gate's :class:`~harness.evaluation.pairing.PairedValues` (chunk-queries as questions, documents as
        clusters)."""
        return PairedValues(self.chunks, self.a, self.b, self.docs, [""] * len(self.chunks), 0, 0)

    def per_document(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(n, s, ss)`` per document (D,): chunk-queries, sum and sum of squares of ``d = b - a``."""
        _, codes = np.unique(self.docs, return_inverse=True)
        d = self.b - self.a
        n = np.bincount(codes).astype(np.float64)
        return n, np.bincount(codes, weights=d), np.bincount(codes, weights=d * d)


def _outcome(rec: dict, metric: str) -> float:
    if metric == "hit@1":
        return float(rec.get("hit") or 0)
    r = rec.get("rank")
    return 1.0 / r if isinstance(r, int) and 0 < r <= RR_DEPTH else 0.0


def load_pair(ki_dir: str | Path, baseline: str, candidate: str, metric: str = "hit@1") -> KnownItemPair:
    """Read and pair two systems' outcomes from a known-item output folder.

    The folder is verified first (:func:`harness.evaluation.known_item_folder.verify_folder`: the sha256 its summary
    records, every outcome's type and range, the summary's means against the outcomes).

    Raises:
        HarnessInputError: no ``summary.json`` / ``outcomes.jsonl.gz``; a folder written by ``known-item --sample``
            (a sample, not the census the check's interval assumes); a folder that fails its verification (naming
            the file, record and field); an unknown metric; a system the folder does not hold (naming those it
            holds); a chunk-query of the baseline the candidate has no outcome for, or one outcome given twice
            (naming the system and the chunk).
    """
    if metric not in KI_METRICS:
        raise HarnessInputError(f"--known-item-metric: {metric!r} is not one of {', '.join(KI_METRICS)}")
    folder = Path(ki_dir)
    summary_path = folder / "summary.json"
    if not summary_path.is_file() or not (folder / "outcomes.jsonl.gz").is_file():
        raise HarnessInputError(
            f"--known-item {folder}: not a known-item output folder (summary.json and outcomes.jsonl.gz expected; "
            "write it with harness known-item --systems A,B --out DIR)"
        )
    summary = read_json(summary_path)
    if isinstance(summary, dict) and "sample" in summary:
        raise HarnessInputError(
            f"--known-item {summary_path}: field sample: a sampled known-item study (harness known-item --sample) "
            "holds a sample of documents, not this corpus's census, and the check's interval assumes the census; "
            "gate on a known-item folder written without --sample"
        )
    ki = verify_folder(folder)  # hashes, every value's type and range, the summary's means (issue 44 item 4)
    summary = ki.summary
    held = list((summary.get("systems") or {}).keys())
    for flag, name in (("--baseline-system", baseline), ("--candidate-system", candidate)):
        if not name:
            raise HarnessInputError(f"{flag}: name the system of {summary_path} to judge (it holds {', '.join(held)})")
        if name not in held:
            raise HarnessInputError(f"{flag}: {summary_path} holds no system {name!r} (it holds {', '.join(held)})")
    values: dict[str, dict[str, float]] = {baseline: {}, candidate: {}}
    docs: dict[str, str] = {}
    path = folder / "outcomes.jsonl.gz"
    for _line_no, rec in ki.records:  # each checked by verify_folder: types, ranges, no chunk-query twice
        sys_name = rec.get("system")
        if sys_name not in values:
            continue
        chunk = f"{rec['doc_id']}#{rec['chunk_index']}"
        values[sys_name][chunk] = _outcome(rec, metric)
        docs[chunk] = str(rec["doc_id"])
    base, cand = values[baseline], values[candidate]
    if not base:
        raise HarnessInputError(f"{path}: no outcome of system {baseline!r}")
    for name, have, other in ((candidate, cand, base), (baseline, base, cand)):
        missing = [c for c in other if c not in have]
        if missing:
            raise HarnessInputError(
                f"{path}: system {name} has no outcome for chunk-query {missing[0]} ({len(missing)} of "
                f"{len(other)} missing): the check cannot score it as 0; re-run harness known-item"
            )
    chunks = list(base)
    return KnownItemPair(
        ki_dir=folder,
        summary=summary,
        baseline=baseline,
        candidate=candidate,
        metric=metric,
        chunks=chunks,
        docs=np.asarray([docs[c] for c in chunks]),
        a=np.fromiter((base[c] for c in chunks), dtype=np.float64, count=len(chunks)),
        b=np.fromiter((cand[c] for c in chunks), dtype=np.float64, count=len(chunks)),
    )


def measured_coverage(
    n: np.ndarray,
    s: np.ndarray,
    ss: np.ndarray,
    *,
    level: float = 0.95,
    design: str = "srswr",
    reps: int = COVERAGE_REPS,
    seed: int = 0,
    block: int = 250,
) -> dict:
    """Coverage of the check's interval with the corpus as the population (module docstring).

    Args:
        n, s, ss: per document (D,): rows, sum and sum of squares of the paired difference.
        level: two-sided level of the interval measured.
        design: ``"srswr"`` (D documents uniformly with replacement; CR2 interval) or ``"pps"`` (D draws with
            probability ``n_i / sum n``; Hansen-Hurwitz t interval, :func:`harness.stats.pps.hansen_hurwitz`).
        reps: samples (>= 10); seed: ``SeedSequence([seed, D, code])`` with code 0 srswr, 1 pps.
        block: samples per batch (memory ``block * D`` floats).

    Returns:
        ``{"design", "design_label", "method", "level", "reps", "documents", "value", "coverage", "mc_margin",
        "lower_miss", "upper_miss", "mean_width", "seed"}``: ``lower_miss`` is the share of samples whose lower bound
        lies above the census value (a PASS-side error of the gate), ``upper_miss`` below it (a FAIL-side error).

    Raises:
        ValueError: an unknown design, ``reps < 10`` or fewer than 2 documents.
    """
    if design not in DESIGN_LABELS:
        raise ValueError(f"design must be one of {', '.join(DESIGN_LABELS)}, got {design!r}")
    n, s, ss = (np.asarray(x, dtype=np.float64) for x in (n, s, ss))
    d = n.size
    if reps < 10 or d < 2:
        raise ValueError(f"need reps >= 10 and >= 2 documents, got reps={reps}, D={d}")
    theta = float(s.sum() / n.sum())
    rng = np.random.default_rng(np.random.SeedSequence([seed, d, list(DESIGN_LABELS).index(design)]))
    cum = np.cumsum(n)
    cover = lo_miss = hi_miss = 0
    widths: list[float] = []
    for a in range(0, reps, block):
        r = min(block, reps - a)
        if design == "srswr":
            idx = rng.integers(0, d, size=(r, d))
            batch = ClusterBatch(n[idx], s[idx], ss[idx])
            est, se, df = batch.cr2()
        else:
            idx = np.minimum(np.searchsorted(cum, rng.random((r, d)) * cum[-1], side="right"), d - 1)
            rates = s[idx] / n[idx]
            est, se, df = rates.mean(1), rates.std(1, ddof=1) / math.sqrt(d), np.full(r, d - 1.0)
        half = t_crit(level, df) * se
        lo, hi = est - half, est + half
        ok = np.isfinite(lo) & np.isfinite(hi)
        cover += int(np.count_nonzero(ok & (lo <= theta) & (theta <= hi)))
        lo_miss += int(np.count_nonzero(ok & (lo > theta)))
        hi_miss += int(np.count_nonzero(ok & (hi < theta)))
        widths += (hi - lo)[ok].tolist()
    p = cover / reps
    return {
        "design": design,
        "design_label": DESIGN_LABELS[design],
        "method": "cr2" if design == "srswr" else "hansen_hurwitz",
        "level": level,
        "reps": reps,
        "documents": d,
        "value": theta,
        "coverage": p,
        "mc_margin": 1.96 * math.sqrt(p * (1 - p) / reps),
        "lower_miss": lo_miss / reps,
        "upper_miss": hi_miss / reps,
        "mean_width": float(np.mean(widths)) if widths else None,
        "seed": seed,
    }


@dataclass
class KnownItemCheck(GateCheck):
    """The known-item check of a gate verdict: a :class:`~harness.evaluation.gate.GateCheck` (``kind`` =
    ``"known-item"``; ``diff`` = the census difference (a), ``lower``/``upper`` = the interval (b)) plus:

    Attributes:
        census_diff, census_baseline, census_candidate: (a) and the two systems' means over every chunk-query.
        interval_for: what (b) is an interval for, in words.
        coverage: the measured coverage of (b) (:func:`measured_coverage` at the check's level, plus ``coverage_95``,
            the same at 95 %).
        proxy: what the check is a proxy for (:data:`PROXY`).
        ki_dir, query_words, chunker_id, corpus_hash: where the outcomes came from.
        n_documents: documents with chunk-queries (the clusters).
    """

    census_diff: float = 0.0
    census_baseline: float = 0.0
    census_candidate: float = 0.0
    interval_for: str = "documents like these (the corpus as a sample of documents of its kind; documents as clusters)"
    coverage: dict = field(default_factory=dict)
    proxy: str = PROXY
    ki_dir: str = ""
    query_words: int | None = None
    chunker_id: str | None = None
    corpus_hash: str | None = None
    n_documents: int = 0

    def evidence_json(self) -> dict:
        """The ``coverage_evidence`` of a known-item verdict: its own estimand id (``known-item``), design, method,
        nominal and measured coverage (at the check's level and at 95 %) and the line printed
        (:func:`harness.wording.known_item_coverage`)."""
        from harness.wording import KNOWN_ITEM_STUDY, known_item_coverage

        cov = self.coverage or {}
        return {
            "estimand_id": "known-item",
            "design": {"sampling": "census", "clusters": "documents", "n_clusters": self.n_clusters},
            "method": INTERVAL_METHOD,
            "measured": bool(cov),
            "nominal": cov.get("level"),
            "coverage": cov.get("coverage"),
            "mc_margin": cov.get("mc_margin"),
            "nominal_95": 0.95 if cov else None,
            "coverage_95": cov.get("coverage_95"),
            "reps": cov.get("reps"),
            "study": KNOWN_ITEM_STUDY,
            "text": known_item_coverage(cov),
        }

    def describe(self, candidate: str, baseline: str, level: float) -> str:
        """One line: both numbers named, the interval, its measured coverage, the MDD and the verdict's reason."""
        iv = "none" if self.lower is None else f"[{self.lower:+.4f}, {self.upper:+.4f}]"
        mdd = self.minimum_detectable_difference
        cov = self.coverage or {}
        cov_txt = (
            f"measured coverage {100 * cov['coverage']:.1f} % (nominal {100 * cov['level']:g} %, {cov['reps']} samples"
            f" of {cov['documents']} documents drawn with replacement; 95 % interval: "
            f"{100 * cov.get('coverage_95', float('nan')):.1f} %)"
            if cov
            else "coverage not measured"
        )
        return (
            f"{self.decision}: {self.name} {candidate} - {baseline} (known-item check, a {self.proxy}): census "
            f"difference on this corpus {self.census_diff:+.4f} ({self.census_candidate:.4f} - "
            f"{self.census_baseline:.4f} over {self.n_questions} chunk-queries); {100 * level:g} % CR2 interval for "
            f"documents like these {iv} ({self.n_documents} documents as clusters; {cov_txt}) vs -margin "
            f"{-self.margin:+.4f}; minimum detectable difference at 80 % power: "
            f"{'not estimable' if mdd is None else f'{mdd:.4f}'}; {self.reason}"
        )


def known_item_check(
    pair: KnownItemPair, *, margin: float, alpha: float = 0.05, coverage_reps: int = COVERAGE_REPS, seed: int = 0
) -> KnownItemCheck:
    """The known-item check of ``pair`` (module docstring): :func:`~harness.evaluation.gate.judge` on the paired
    chunk-query outcomes clustered by document with CR2, plus the census numbers and the measured coverage."""
    pv = pair.values()
    name = f"known-item {pair.metric}"
    base = judge(pv, margin=margin, alpha=alpha, metric=name, method=INTERVAL_METHOD)
    n, s, ss = pair.per_document()
    level = 1 - 2 * alpha
    coverage: dict = {}
    if n.size >= 2 and np.any(pv.diff != 0):
        coverage = measured_coverage(n, s, ss, level=level, reps=coverage_reps, seed=seed)
        coverage["coverage_95"] = measured_coverage(n, s, ss, level=0.95, reps=coverage_reps, seed=seed)["coverage"]
    cfg = pair.summary.get("config") or {}
    fields = asdict(base)
    fields.update(kind="known-item", name=name, metric=name)
    return KnownItemCheck(
        **fields,
        census_diff=float(np.mean(pv.diff)),
        census_baseline=float(pair.a.mean()),
        census_candidate=float(pair.b.mean()),
        coverage=coverage,
        ki_dir=str(pair.ki_dir),
        query_words=cfg.get("query_words"),
        chunker_id=cfg.get("chunker_id"),
        corpus_hash=pair.summary.get("corpus_hash"),
        n_documents=int(n.size),
    )


def _verdict(checks: list[GateCheck], on_inconclusive: str | None) -> tuple[str, str, int]:
    decision, reason = combine(checks)
    code = EXIT_CODES[decision]
    if decision == "INCONCLUSIVE" and on_inconclusive:
        code = ON_INCONCLUSIVE[on_inconclusive]
    return decision, reason, code


def add_known_item(verdict: GateVerdict, check: KnownItemCheck) -> GateVerdict:
    """``verdict`` with the known-item check appended and the decision, reason and exit code recombined
    (intersection-union, :func:`harness.evaluation.gate.combine`)."""
    verdict.checks.append(check)
    verdict.decision, verdict.reason, verdict.exit_code = _verdict(verdict.checks, verdict.on_inconclusive)
    return verdict


def known_item_gate(
    pair: KnownItemPair,
    *,
    margin: float,
    alpha: float = 0.05,
    on_inconclusive: str | None = None,
    coverage_reps: int = COVERAGE_REPS,
) -> GateVerdict:
    """The whole gate from a KI_DIR alone (no run records): one known-item check, the gate's verdict and exit code.

    Raises:
        HarnessInputError: alpha outside (0, 0.5), an unknown ``on_inconclusive`` policy.
    """
    from harness import __version__
    from harness.stats.methods import get as get_method

    if not 0 < alpha < 0.5:
        raise HarnessInputError(f"--alpha: {alpha} must lie in (0, 0.5)")
    if on_inconclusive is not None and on_inconclusive not in ON_INCONCLUSIVE:
        raise HarnessInputError(f"--on-inconclusive: {on_inconclusive!r} is not one of fail, pass")
    check = known_item_check(pair, margin=margin, alpha=alpha, coverage_reps=coverage_reps)
    decision, reason, code = _verdict([check], on_inconclusive)
    return GateVerdict(
        decision=decision,
        exit_code=code,
        reason=reason,
        on_inconclusive=on_inconclusive,
        alpha=alpha,
        level=1 - 2 * alpha,
        method=INTERVAL_METHOD,
        method_label=get_method(INTERVAL_METHOD).label,
        baseline=str(pair.ki_dir),
        candidate=str(pair.ki_dir),
        system_baseline=pair.baseline,
        system_candidate=pair.candidate,
        split="all",
        goldset={},
        harness_version=__version__,
        missing_questions={"baseline": 0, "candidate": 0},
        n_questions=check.n_questions,
        n_clusters=check.n_clusters,
        checks=[check],
        warnings=list(check.warnings),
    )


def check_matches_runs(pair: KnownItemPair, baseline_run, candidate_run, sa: str, sb: str) -> None:
    """Refuse a KI_DIR that does not describe the runs' corpus, chunking and systems.

    ``sa`` / ``sb`` are the systems the gate pairs in the runs; the KI_DIR must hold them under the same names, with
    the same recorded configuration (kind, method, options, inputs, plugin sha256: the registry's identity), built
    on the same corpus (hash) and chunking (chunker id and parameters) as the baseline run.

    Raises:
        HarnessInputError: the first difference found, naming the KI_DIR's field and both values.
    """
    from harness.retrieve.registry import SystemPlan

    where = pair.ki_dir / "summary.json"
    cfg = pair.summary.get("config") or {}
    if (pair.baseline, pair.candidate) != (sa, sb):
        raise HarnessInputError(
            f"--known-item {pair.ki_dir}: judges {pair.baseline} -> {pair.candidate} but the runs pair {sa} -> {sb}; "
            "name the same systems with --baseline-system and --candidate-system"
        )
    corpus = baseline_run.manifest.corpus
    checks = [
        ("corpus_hash", pair.summary.get("corpus_hash"), corpus.corpus_hash),
        ("config.chunker_id", cfg.get("chunker_id"), corpus.chunker_id),
        ("config.chunker_params", cfg.get("chunker_params") or {}, dict(corpus.chunker_params or {})),
    ]
    for key, ki, run in checks:
        if ki != run:
            raise HarnessInputError(
                f"{where}: field {key}: {ki!r} differs from the baseline run's {run!r} ({baseline_run.path}); "
                "run harness known-item on the runs' corpus and chunking"
            )
    ki_opts = cfg.get("system_options") or {}
    for run, name in ((baseline_run, sa), (candidate_run, sb)):
        run_opts = (run.manifest.model_extra or {}).get("system_options") or {}
        if name not in ki_opts or name not in run_opts:
            raise HarnessInputError(
                f"{where}: field config.system_options.{name}: no recorded configuration to compare with "
                f"{run.path} (both must record it)"
            )
        try:
            k_ki = SystemPlan.from_record(ki_opts, [name], field=f"{where}: system_options").key(name)
            k_run = SystemPlan.from_record(run_opts, [name], field=f"{run.path}: system_options").key(name)
        except HarnessInputError:
            raise
        if k_ki != k_run:
            raise HarnessInputError(
                f"{where}: field config.system_options.{name}: the configuration differs from {run.path}'s "
                f"({k_ki} vs {k_run}); run harness known-item with the runs' systems"
            )


def apply_known_item(
    verdict: GateVerdict | None,
    ki_dir: str | Path,
    *,
    baseline_system: str | None,
    candidate_system: str | None,
    margin: float | None,
    metric: str = "hit@1",
    alpha: float = 0.05,
    on_inconclusive: str | None = None,
    coverage_reps: int = COVERAGE_REPS,
) -> GateVerdict:
    """``harness gate --known-item KI_DIR``: the whole gate when ``verdict`` is ``None``, else ``verdict`` (the gold-set
    gate on two runs) with the known-item check added after checking that KI_DIR matches the runs.

    Raises:
        HarnessInputError: no ``--known-item-margin``, or what :func:`load_pair`, :func:`check_matches_runs` and
            :func:`known_item_gate` raise.
    """
    from harness.evaluation.gate import check_margin
    from harness.evaluation.runs import load_run

    if margin is None:
        raise HarnessInputError("--known-item-margin: required with --known-item (metric units, e.g. 0.01)")
    margin = check_margin(margin, "--known-item-margin")
    if verdict is None:
        pair = load_pair(ki_dir, baseline_system or "", candidate_system or "", metric)
        return known_item_gate(
            pair, margin=margin, alpha=alpha, on_inconclusive=on_inconclusive, coverage_reps=coverage_reps
        )
    sa, sb = verdict.system_baseline, verdict.system_candidate
    pair = load_pair(ki_dir, sa, sb, metric)
    check_matches_runs(pair, load_run(verdict.baseline), load_run(verdict.candidate), sa, sb)
    check = known_item_check(pair, margin=margin, alpha=verdict.alpha, coverage_reps=coverage_reps)
    return add_known_item(verdict, check)


def known_item_only(verdict: GateVerdict) -> bool:
    """Whether ``verdict`` is a known-item verdict alone (``harness gate --known-item KI_DIR`` without run records):
    its checks are known-item checks and it has no gold set (:meth:`GateVerdict.known_item_only`)."""
    return verdict.known_item_only()


def known_item_evidence_json(verdict: GateVerdict) -> dict:
    """The ``coverage_evidence`` of a known-item verdict (:meth:`KnownItemCheck.evidence_json` of its check)."""
    return verdict.checks[0].evidence_json()


def known_item_provenance(verdict: GateVerdict) -> list[str]:
    """One line per known-item check of ``verdict``: the KI_DIR, corpus hash, chunker, query words and the chosen
    interval's measured coverage at 95 % (for every output format); empty without one."""
    out = []
    for c in verdict.checks:
        if isinstance(c, KnownItemCheck):
            out.append(
                f"known-item outcomes from {c.ki_dir} (corpus {str(c.corpus_hash)[:12]}, chunker {c.chunker_id}, "
                f"{c.query_words}-word queries, {c.n_questions} chunk-queries in {c.n_documents} documents); "
                f"interval for {c.interval_for}; {c.proxy}"
            )
    return out


def known_item_properties(verdict: GateVerdict) -> dict[str, str]:
    """JUnit properties of the known-item checks: ``known_item`` (where from) and ``known_item_<metric>`` (the census
    difference, the interval, its measured coverage and the MDD); empty without one."""
    out: dict[str, str] = {}
    for c in verdict.checks:
        if isinstance(c, KnownItemCheck):
            cov = c.coverage.get("coverage")
            mdd = c.minimum_detectable_difference
            out[f"known_item_{c.metric.split()[-1]}"] = (
                f"census difference {c.census_diff:+.4f}; interval [{c.lower}, {c.upper}]; measured coverage "
                f"{'not measured' if cov is None else f'{cov:.3f}'}; MDD {'not estimable' if mdd is None else mdd}"
            )
    lines = known_item_provenance(verdict)
    if lines:
        out["known_item"] = " | ".join(lines)
    return out
