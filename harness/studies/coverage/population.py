"""The finite population the coverage study samples from: per-document sufficient statistics of one outcome.

Sources:

* a known-item output folder (``harness known-item``), for one system (or the difference of two):

  - ``outcome="hit"`` (hit@1, binary): ``per_document.jsonl`` (per system and document ``n`` queries, ``s`` hits);
  - ``outcome="rr"`` (each query's reciprocal rank, in [0, 1]): ``outcomes.jsonl.gz``, ``1 / rank`` of the first
    same-document chunk when ``rank <= rr_depth`` (default 200, the run's default chunk depth
    ``harness.evaluation.pipeline.DEFAULT_CHUNK_DEPTH``), else 0 (also when nothing of the document was retrieved);
  - ``minus=B``: the per-query paired difference ``outcome(system) - outcome(B)`` on the same queries (a continuous
    outcome in [-1, 1], the population of ``compare`` and ``gate``), from ``outcomes.jsonl.gz``;

* a CSV file with a header and one row per query (or chunk): ``doc_id,hit[,doc_type]`` (``hit`` 0 or 1) or
  ``doc_id,y[,doc_type]`` (``y`` any finite number, e.g. each query's reciprocal rank);
* :func:`harness.studies.coverage.synthetic.synthetic_population` (a seeded population built like the published
  study's).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.errors import HarnessInputError
from harness.inputs import read_input_text
from harness.io import read_json, read_jsonl, sha256_file
from harness.metrics import DEFAULT_CHUNK_DEPTH

#: Reciprocal ranks count ranks up to this depth (the run's default chunk depth); deeper ranks give 0.
RR_DEPTH = DEFAULT_CHUNK_DEPTH
OUTCOMES = ("hit", "rr")


@dataclass
class RowData:
    """Row-level outcomes of a population, for the lag-1 autocorrelation (:func:`harness.stats.design_diagnostics`).

    Attributes: ``y`` (Q,) outcomes, ``doc`` (Q,) document index into the population, ``position`` (Q,) chunk index.
    """

    y: np.ndarray
    doc: np.ndarray
    position: np.ndarray


@dataclass
class Population:
    """A finite population of documents with per-document outcome sums.

    Attributes:
        system: the system (or source) the outcomes came from.
        doc_ids: D document ids.
        doc_types: D document types (raw ``doc_type``).
        n: shape (D,), rows (queries) per document (>= 1).
        s: shape (D,), outcome sums per document (hits for a binary outcome).
        source: where it was read from.
        ss: shape (D,), sums of squares of a non-binary outcome, or None for a binary one (``ss = s``).
        unit: every row value of a non-binary outcome lies in [0, 1] (e.g. reciprocal ranks).
        paired: the outcome is a paired difference of two systems (its default interval is ``DEFAULTS["paired"]``).
        measure: what the rows measure (``"hit"``, ``"rr"``, ``"y"``), for labels.
        rows: row-level outcomes (lag-1 autocorrelation), or None.
    """

    system: str
    doc_ids: list[str]
    doc_types: list[str]
    n: np.ndarray
    s: np.ndarray
    source: str = ""
    ss: np.ndarray | None = None
    unit: bool = False
    paired: bool = False
    measure: str = "hit"
    rows: RowData | None = None

    @property
    def frame_mean_size(self) -> float:
        """``Xbar``: the mean number of rows (queries) per document over the whole population (Wu's v_g needs it)."""
        return float(self.n.mean())

    @property
    def default_key(self) -> str:
        """The key of :data:`harness.stats.methods.DEFAULTS` whose method ``run``/``gate`` use for this outcome."""
        return "paired" if self.paired else self.outcome

    @property
    def micro(self) -> float:
        """Population micro mean ``sum(s) / sum(n)``."""
        return float(self.s.sum() / self.n.sum())

    @property
    def macro(self) -> float:
        """Population macro mean ``mean(s / n)``."""
        return float(np.mean(self.s / self.n))

    @property
    def outcome(self) -> str:
        """``"binary"``, ``"unit"`` (row values in [0, 1]) or ``"continuous"``, as in :mod:`harness.stats.methods`."""
        if self.ss is None:
            return "binary"
        return "unit" if self.unit else "continuous"

    @classmethod
    def from_arrays(
        cls,
        n,
        s,
        doc_types: Sequence[str] | None = None,
        *,
        system: str = "sim",
        ss=None,
        unit: bool = False,
        paired: bool = False,
        rows: RowData | None = None,
    ) -> Population:
        """A population from arrays (tests, simulations).

        Args: ``n`` (D,) integers >= 1; ``s`` (D,) integers in [0, n] (binary) or any finite sums when ``ss`` is
            given; ``ss`` (D,) sums of squares (non-binary outcome) or None; ``unit``: the row values lie in [0, 1];
            ``paired``: a paired difference; ``rows``: row-level outcomes or None.
        Raises: HarnessInputError on shapes or values out of range.
        """
        n = np.asarray(n, dtype=np.int64)
        if ss is None:
            s = np.asarray(s, dtype=np.int64)
            bad = np.any(s < 0) or np.any(s > n)
        else:
            s = np.asarray(s, dtype=np.float64)
            ss = np.asarray(ss, dtype=np.float64)
            bad = ss.shape != s.shape or not (np.isfinite(s).all() and np.isfinite(ss).all())
        if n.shape != s.shape or n.ndim != 1 or np.any(n < 1) or bad:
            raise HarnessInputError("population: need 1-d n >= 1 and 0 <= s <= n (or finite s, ss) of equal length")
        types = list(doc_types) if doc_types is not None else ["all"] * n.size
        unit = bool(unit and ss is not None)
        return cls(system, [f"d{i}" for i in range(n.size)], types, n, s, "arrays", ss, unit, paired, rows=rows)


def load_population(
    source: str | Path,
    *,
    system: str | None = None,
    outcome: str = "hit",
    minus: str | None = None,
    rr_depth: int = RR_DEPTH,
) -> Population:
    """Read a population from a known-item output folder or from a CSV file (module docstring).

    Args:
        source: the folder ``harness known-item`` wrote, or a ``.csv`` file.
        system: which system's outcomes in a known-item folder (default: the first in the file); for a CSV, only
            its name in the result (default: the file's stem).
        outcome: ``"hit"`` or ``"rr"`` (known-item folders; a CSV's header decides).
        minus: a second system of the known-item folder: the population is ``system - minus`` per query.
        rr_depth: deepest rank counted by ``"rr"`` (>= 1).

    Raises:
        HarnessInputError: missing file or field, unknown system or outcome, a record with ``n < 1`` or ``s`` outside
            ``[0, n]``, a rank that is not a positive integer, queries of ``system`` and ``minus`` that differ, a CSV
            row with a bad value (each message names the file, line, record and field), a folder written by
            ``harness known-item --sample`` (its queries are a sample, not the population), a file whose sha256
            differs from the one ``summary.json`` records.
    """
    path = Path(source)
    if outcome not in OUTCOMES:
        raise HarnessInputError(f"{path}: outcome {outcome!r}: expected one of {', '.join(OUTCOMES)}")
    if path.suffix.lower() == ".csv":
        if minus is not None or outcome != "hit":
            raise HarnessInputError(f"{path}: a CSV population has its own outcome column (no --outcome / --paired)")
        return _load_csv(path, system)
    summary = path / "summary.json"
    if summary.is_file() and '"sample":' in summary.read_text(encoding="utf-8"):
        raise HarnessInputError(f"{summary}: field sample: a sampled known-item study is not a population")
    if outcome == "hit" and minus is None:
        _check_recorded_hash(summary, path / "per_document.jsonl")
        return _load_known_item(path / "per_document.jsonl", system)
    _check_recorded_hash(summary, path / "outcomes.jsonl.gz")
    return _load_outcomes(path / "outcomes.jsonl.gz", system, outcome, minus, int(rr_depth))


def _check_recorded_hash(summary: Path, file: Path) -> None:
    """Refuse ``file`` when the known-item ``summary`` records its sha256 (field ``content_sha256``, written since
    issue 44) and the bytes differ: a file edited after harness wrote the folder (checked in full, with every value's
    type and the summary's means, by ``gate --known-item``: :mod:`harness.evaluation.known_item_folder`)."""
    if not summary.is_file() or not file.is_file():
        return
    listed = read_json(summary)
    want = listed.get("content_sha256", {}) if isinstance(listed, dict) else {}
    want = want.get(file.name) if isinstance(want, dict) else None
    if want is not None and (got := sha256_file(file)) != want:
        raise HarnessInputError(
            f"{file}: sha256 {got[:12]}… differs from {str(want)[:12]}… recorded in {summary} field content_sha256: "
            "the file was changed after harness wrote the folder; refusing it"
        )


def _load_known_item(path: Path, system: str | None) -> Population:
    recs = read_jsonl(path)
    if not recs:
        raise HarnessInputError(f"{path}: no records")
    systems = list(dict.fromkeys(str(o.get("system")) for _, o in recs))
    chosen = system or systems[0]
    if chosen not in systems:
        raise HarnessInputError(f"{path}: system {chosen!r} not found (has: {', '.join(systems)})")
    ids, types, ns, ss = [], [], [], []
    for line, o in recs:
        if str(o.get("system")) != chosen:
            continue
        for k in ("doc_id", "n", "s"):
            if k not in o:
                raise HarnessInputError(f"{path}:{line}: record {o.get('doc_id', '?')}: field {k}: missing")
        n, s = o["n"], o["s"]
        if not isinstance(n, int) or not isinstance(s, int) or n < 1 or not 0 <= s <= n:
            raise HarnessInputError(
                f"{path}:{line}: record {o['doc_id']}: field n/s: need integers n >= 1, 0 <= s <= n"
            )
        ids.append(str(o["doc_id"]))
        types.append(str(o.get("doc_type") or "unknown"))
        ns.append(n)
        ss.append(s)
    return Population(chosen, ids, types, np.asarray(ns, np.int64), np.asarray(ss, np.int64), str(path))


def _query_values(path: Path, recs: list, system: str, outcome: str, depth: int) -> tuple[dict, dict]:
    """``{(doc_id, chunk_index): value}`` of one system's queries and ``{doc_id: doc_type}``."""
    vals: dict[tuple[str, int], float] = {}
    types: dict[str, str] = {}
    for line, o in recs:
        if str(o.get("system")) != system:
            continue
        for k in ("doc_id", "chunk_index", outcome if outcome == "hit" else "rank"):
            if k not in o:
                raise HarnessInputError(f"{path}:{line}: record {o.get('doc_id', '?')}: field {k}: missing")
        doc, ci = str(o["doc_id"]), o["chunk_index"]
        if outcome == "hit":
            v = o["hit"]
            if v not in (0, 1) or isinstance(v, bool):
                raise HarnessInputError(f"{path}:{line}: record {doc}: field hit: must be 0 or 1, got {v!r}")
            val = float(v)
        else:
            r = o["rank"]
            if r is not None and (not isinstance(r, int) or isinstance(r, bool) or r < 1):
                raise HarnessInputError(f"{path}:{line}: record {doc}: field rank: need a positive integer or null")
            val = 0.0 if r is None or r > depth else 1.0 / r
        vals[(doc, ci)] = val
        types.setdefault(doc, str(o.get("doc_type") or "unknown"))
    return vals, types


def _load_outcomes(path: Path, system: str | None, outcome: str, minus: str | None, depth: int) -> Population:
    if depth < 1:
        raise HarnessInputError(f"{path}: rr_depth {depth}: must be >= 1")
    recs = read_jsonl(path)
    if not recs:
        raise HarnessInputError(f"{path}: no records")
    systems = list(dict.fromkeys(str(o.get("system")) for _, o in recs))
    chosen = system or systems[0]
    for name in (chosen, minus):
        if name is not None and name not in systems:
            raise HarnessInputError(f"{path}: system {name!r} not found (has: {', '.join(systems)})")
    vals, types = _query_values(path, recs, chosen, outcome, depth)
    label = chosen
    if minus is not None:
        other, _ = _query_values(path, recs, minus, outcome, depth)
        if other.keys() != vals.keys():
            raise HarnessInputError(f"{path}: systems {chosen!r} and {minus!r} were not run on the same queries")
        vals = {q: v - other[q] for q, v in vals.items()}
        label = f"{chosen}-{minus}"
    keys = sorted(vals)
    doc_ids = list(dict.fromkeys(d for d, _ in keys))
    code = {d: i for i, d in enumerate(doc_ids)}
    doc = np.asarray([code[d] for d, _ in keys], dtype=np.int64)
    pos = np.asarray([c for _, c in keys], dtype=np.int64)
    y = np.asarray([vals[q] for q in keys], dtype=np.float64)
    g = len(doc_ids)
    n = np.bincount(doc, minlength=g).astype(np.int64)
    rows = RowData(y, doc, pos)
    meta = dict(source=str(path), measure=outcome, rows=rows, paired=minus is not None)
    dtypes = [types[d] for d in doc_ids]
    s = np.bincount(doc, weights=y, minlength=g)
    ss = np.bincount(doc, weights=y * y, minlength=g)
    unit = bool(y.min() >= 0.0 and y.max() <= 1.0)
    return Population(label, doc_ids, dtypes, n, s, ss=ss, unit=unit, **meta)


def _load_csv(path: Path, system: str | None) -> Population:
    text = read_input_text(path)  # a regular file or a pipe, never a device
    rows = csv.reader(text.splitlines())
    header = [h.strip() for h in next(rows, [])]
    value = "hit" if "hit" in header else "y" if "y" in header else None
    if "doc_id" not in header or value is None or ("hit" in header and "y" in header):
        raise HarnessInputError(f"{path}:1: header: need doc_id and exactly one of hit / y (optional doc_type)")
    col_id, col_v = header.index("doc_id"), header.index(value)
    col_t = header.index("doc_type") if "doc_type" in header else None
    index: dict[str, int] = {}
    types: list[str] = []
    n: list[int] = []
    s: list[float] = []
    ss: list[float] = []
    unit = True
    for line, row in enumerate(rows, start=2):
        if not row or not any(c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise HarnessInputError(f"{path}:{line}: has {len(row)} fields, the header has {len(header)}")
        doc = row[col_id].strip()
        if not doc:
            raise HarnessInputError(f"{path}:{line}: field doc_id: empty")
        raw = row[col_v].strip()
        try:
            v = float(raw)
        except ValueError:
            v = math.nan
        if value == "hit" and raw not in ("0", "1"):
            raise HarnessInputError(f"{path}:{line}: record {doc}: field hit: must be 0 or 1, got {raw!r}")
        if not math.isfinite(v):
            raise HarnessInputError(f"{path}:{line}: record {doc}: field {value}: not a finite number: {raw!r}")
        dtype = row[col_t].strip() if col_t is not None else ""
        if doc not in index:
            index[doc] = len(n)
            types.append(dtype or "unknown")
            n.append(0)
            s.append(0.0)
            ss.append(0.0)
        elif col_t is not None and (dtype or "unknown") != types[index[doc]]:
            raise HarnessInputError(
                f"{path}:{line}: record {doc}: field doc_type: {dtype!r} differs from this document's earlier "
                f"{types[index[doc]]!r}"
            )
        i = index[doc]
        n[i] += 1
        s[i] += v
        ss[i] += v * v
        unit = unit and 0.0 <= v <= 1.0
    if not n:
        raise HarnessInputError(f"{path}: no data rows")
    name = system or path.stem
    ns = np.asarray(n, np.int64)
    if value == "hit":
        return Population(name, list(index), types, ns, np.asarray(s).astype(np.int64), str(path))
    return Population(name, list(index), types, ns, np.asarray(s), str(path), np.asarray(ss), unit, measure="y")
