"""Run records: what a run evaluated, with what, and every number it produced.

A run record is a folder ``runs/<run-id>/`` written atomically (temporary folder, then rename; an existing id is
never overwritten)::

    manifest.json        schema version, gold set (name, version, sha256), corpus (id, hash, counts), chunker,
                         systems and their configs, fusion formulas, depths, package and library versions,
                         git commit, time, seed, per-stage wall times, index sizes, vector coverage
    per_question.jsonl   one line per (system, question): category, split, both rankings with scores (cut at the
                         recorded depths), gold ranks, every metric, flags
    summary.json         per system: overall and per-category means, intervals for every method, counts
    trec/<system>.<level>.run   TREC run files (qid Q0 id rank score tag; :mod:`harness.evaluation.trec`)
    trec/qrels.<level>.txt      TREC qrels of the gold set (documents: grade; chunks: 1)

Everything that reports, compares or gates reads these files only, so any past run can be reported again.
"""

from __future__ import annotations

import datetime as dt
import json
import platform
import subprocess
from dataclasses import dataclass
from importlib import metadata as importlib_metadata
from pathlib import Path

from harness.errors import HarnessInputError, IncomparableError
from harness.io import atomic_directory, read_json, read_jsonl

RUN_SCHEMA_VERSION = 1

_LIBS = (
    "numpy",
    "scipy",
    "bm25s",
    "PyStemmer",
    "pydantic",
    "apsw",
    "sqlite-vec",
    "sentence-transformers",
    "torch",
    "wordllama",
)


def library_versions() -> dict[str, str | None]:
    """Installed versions of the libraries that can change a result (``None`` when absent)."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in _LIBS:
        try:
            out[name] = importlib_metadata.version(name)
        except importlib_metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_commit(cwd: str | Path | None = None) -> str | None:
    """The current git commit of the harness source tree (``None`` outside a checkout), with ``+dirty`` when the
    package or ``pyproject.toml`` has uncommitted changes (data folders such as ``runs/`` do not count)."""
    here = Path(cwd) if cwd else Path(__file__).resolve().parent
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
        top = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], cwd=here, capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", "harness", "pyproject.toml"],
            cwd=top,
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.strip()
        return sha + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def default_run_id(prefix: str = "run") -> str:
    """A time-based id, unique to the microsecond (``run-20261130T190812-123456``)."""
    now = dt.datetime.now(dt.UTC)
    return f"{prefix}-{now.strftime('%Y%m%dT%H%M%S-%f')}"


def write_run_record(
    runs_dir: str | Path,
    run_id: str,
    *,
    manifest: dict,
    per_question: list[dict],
    summary: dict,
    trec_runs: dict[tuple[str, str], list[str]],
    qrels: dict[str, list[str]],
) -> Path:
    """Write a run record atomically.

    Args:
        runs_dir: parent folder (``runs/``).
        run_id: folder name; must not exist yet.
        manifest, per_question, summary: JSON-serialisable contents.
        trec_runs: ``{(system, level): lines}``.
        qrels: ``{level: lines}``.

    Returns:
        The record's folder.

    Raises:
        HarnessInputError: the run id exists already, or is not a plain folder name.
    """
    if not run_id or "/" in run_id or run_id.startswith("."):
        raise HarnessInputError(f"run id {run_id!r}: must be a plain folder name")
    final = Path(runs_dir) / run_id
    with atomic_directory(final) as tmp:
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", "utf-8")
        with open(tmp / "per_question.jsonl", "w", encoding="utf-8") as f:
            for row in per_question:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        (tmp / "summary.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", "utf-8")
        trec = tmp / "trec"
        trec.mkdir()
        for (system, level), lines in trec_runs.items():
            safe = system.replace(":", "_").replace("/", "_")
            (trec / f"{safe}.{level}.run").write_text("\n".join(lines) + ("\n" if lines else ""), "utf-8")
        for level, lines in qrels.items():
            (trec / f"qrels.{level}.txt").write_text("\n".join(lines) + ("\n" if lines else ""), "utf-8")
    return final


@dataclass
class RunRecord:
    """A run record loaded from disk.

    Attributes:
        path: the folder.
        manifest: ``manifest.json``.
        summary: ``summary.json``.
        per_question: rows of ``per_question.jsonl``.
    """

    path: Path
    manifest: dict
    summary: dict
    per_question: list[dict]

    @property
    def systems(self) -> list[str]:
        """Systems in the order they were run."""
        return list(self.manifest.get("systems", []))

    def metric_vector(self, system: str, metric: str) -> dict[str, float]:
        """``{qid: value}`` of one metric for one system (every question of the gold set)."""
        out = {}
        for row in self.per_question:
            if row["system"] == system:
                if metric not in row["metrics"]:
                    raise HarnessInputError(f"{self.path}: metric {metric!r} not in run (system {system})")
                out[row["qid"]] = float(row["metrics"][metric])
        if not out:
            raise HarnessInputError(f"{self.path}: system {system!r} not in run (has {', '.join(self.systems)})")
        return out

    def clusters(self) -> dict[str, str]:
        """``{qid: cluster label}`` recorded with the run."""
        return dict(self.manifest.get("clusters", {}).get("labels", {}))

    def categories(self) -> dict[str, str]:
        """``{qid: category}``."""
        return {row["qid"]: row["category"] for row in self.per_question}


def load_run(path: str | Path) -> RunRecord:
    """Load a run record folder.

    Raises:
        HarnessInputError: missing folder or files, malformed JSON, unknown schema version.
    """
    path = Path(path)
    if not path.is_dir():
        raise HarnessInputError(f"{path}: run record not found")
    manifest = read_json(path / "manifest.json")
    if manifest.get("schema_version") != RUN_SCHEMA_VERSION:
        raise HarnessInputError(f"{path / 'manifest.json'}: field schema_version: {manifest.get('schema_version')!r}")
    summary = read_json(path / "summary.json")
    rows = [obj for _, obj in read_jsonl(path / "per_question.jsonl")]
    return RunRecord(path=path, manifest=manifest, summary=summary, per_question=rows)


COMPARABILITY_KEYS = (
    ("goldset", "sha256"),
    ("corpus", "corpus_hash"),
    ("corpus", "chunker_id"),
    ("depths", "documents"),
    ("depths", "chunks"),
)


def check_comparable(a: RunRecord, b: RunRecord) -> None:
    """Refuse runs that cannot be compared question by question.

    Raises:
        IncomparableError: one line naming the first differing field (gold-set sha256, corpus hash, chunker id or
            depths) and both values.
    """
    for section, key in COMPARABILITY_KEYS:
        va = a.manifest.get(section, {}).get(key)
        vb = b.manifest.get(section, {}).get(key)
        if va != vb:
            raise IncomparableError(
                f"runs not comparable: {section}.{key} differs ({a.path.name}: {va!r}; {b.path.name}: {vb!r})"
            )
