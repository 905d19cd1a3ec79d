"""The finite population the coverage study samples from: per-document sufficient statistics of one outcome.

Sources:

* a known-item output folder (``harness known-item``): its ``per_document.jsonl`` holds, per system and document,
  ``n`` queries and ``s`` hits (a binary outcome);
* a CSV file with a header and one row per query (or chunk): ``doc_id,hit[,doc_type]`` (``hit`` 0 or 1) or
  ``doc_id,y[,doc_type]`` (``y`` any finite number, e.g. each query's reciprocal rank).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.errors import HarnessInputError
from harness.io import read_jsonl


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
    """

    system: str
    doc_ids: list[str]
    doc_types: list[str]
    n: np.ndarray
    s: np.ndarray
    source: str = ""
    ss: np.ndarray | None = None
    unit: bool = False

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
        cls, n, s, doc_types: Sequence[str] | None = None, *, system: str = "sim", ss=None, unit: bool = False
    ) -> Population:
        """A population from arrays (tests, simulations).

        Args: ``n`` (D,) integers >= 1; ``s`` (D,) integers in [0, n] (binary) or any finite sums when ``ss`` is
            given; ``ss`` (D,) sums of squares (non-binary outcome) or None; ``unit``: the row values lie in [0, 1].
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
        return cls(system, [f"d{i}" for i in range(n.size)], types, n, s, "arrays", ss, bool(unit and ss is not None))


def load_population(source: str | Path, *, system: str | None = None) -> Population:
    """Read a population from a known-item output folder or from a CSV file (module docstring).

    Args:
        source: the folder ``harness known-item`` wrote, or a ``.csv`` file.
        system: which system's outcomes in a known-item folder (default: the first in the file); for a CSV, only
            its name in the result (default: the file's stem).

    Raises:
        HarnessInputError: missing file or field, unknown system, a record with ``n < 1`` or ``s`` outside
            ``[0, n]``, a CSV row with a bad value (each message names the file, line, record and field).
    """
    path = Path(source)
    if path.suffix.lower() == ".csv":
        return _load_csv(path, system)
    return _load_known_item(path / "per_document.jsonl", system)


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


def _load_csv(path: Path, system: str | None) -> Population:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise HarnessInputError(f"{path}: file not found") from None
    except UnicodeDecodeError as exc:
        raise HarnessInputError(f"{path}: not valid UTF-8 at byte {exc.start}") from None
    except OSError as exc:
        raise HarnessInputError(f"{path}: cannot read ({exc.strerror or exc})") from None
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
    return Population(name, list(index), types, ns, np.asarray(s), str(path), np.asarray(ss), unit)
