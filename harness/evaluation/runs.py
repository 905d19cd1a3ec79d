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

The three JSON files are typed (:mod:`harness.evaluation.record`: pydantic models with declared value ranges and a
schema version); :func:`load_run` checks every value on read and upgrades older schemas. Everything that reports,
compares or gates reads these files only, through :class:`RunRecord`, so any past run can be reported again.

Content hashes: the manifest, written last, records the sha256 of every other file (``content_sha256``,
:func:`record_hashes`); :func:`load_run` verifies them after the value ranges, so a record edited after harness wrote
it (a hand-edited ``summary.json``, every MRR in ``per_question.jsonl`` set to 1.0, a changed or added TREC file) is
refused with one line naming the file (exit 2). A record written before hashing (no ``content_sha256``) is read
unverified with one notice line on stderr; ``gate`` and ``compare`` refuse it unless ``--allow-unhashed``
(:func:`check_hashed`). The hashes detect edits and damage, not an adversary who also rewrites the manifest.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import platform
import subprocess
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata as importlib_metadata
from pathlib import Path

from harness.errors import HarnessInputError, IncomparableError
from harness.evaluation.record import (
    READABLE_SCHEMA_VERSIONS,
    RUN_SCHEMA_VERSION,
    Manifest,
    QuestionRow,
    SliceSummary,
    Summary,
    portable_manifest,
    upgrade,
    validated,
)
from harness.io import (
    OUTPUT_MARKER,
    LockBusy,
    atomic_directory,
    claim_file,
    is_harness_output,
    read_jsonl,
    sha256_file,
    stderr_notice,
    write_error,
)

__all__ = [
    "RUN_SCHEMA_VERSION",
    "RunRecord",
    "check_comparable",
    "check_run_id",
    "check_run_id_text",
    "check_runs_dir",
    "check_hashed",
    "default_run_id",
    "holding_run_id",
    "git_commit",
    "library_versions",
    "load_run",
    "record_hashes",
    "run_id_lock",
    "write_run_record",
]

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


def _dump(model, *, strict: bool = False) -> str:
    """JSON of a record model (``Infinity`` kept for infinite bounds; pydantic's JSON mode would write null).
    ``strict``: refuse NaN and infinities (``manifest.json``, issue 26 item 6: strict JSON that every reader takes).

    Raises:
        HarnessInputError: ``strict`` and a NaN or infinite value.
    """
    try:
        return json.dumps(model.model_dump(mode="python"), indent=2, ensure_ascii=False, allow_nan=not strict) + "\n"
    except ValueError as exc:
        raise HarnessInputError(f"manifest.json: {exc} (a manifest must be strict JSON)") from None


def write_run_record(
    runs_dir: str | Path,
    run_id: str,
    *,
    manifest: Manifest | dict,
    per_question: Sequence[QuestionRow | dict],
    summary: Summary | dict,
    trec_runs: dict[tuple[str, str], list[str]],
    qrels: dict[str, list[str]],
    overwrite: bool = False,
) -> Path:
    """Write a run record atomically (schema :data:`RUN_SCHEMA_VERSION`).

    Args:
        runs_dir: parent folder (``runs/``).
        run_id: folder name; must not exist yet, unless ``overwrite``.
        manifest, per_question, summary: the record's contents, as models or as dicts of the same shape (validated
            here, so a value outside its declared range is never written); the manifest's paths are made relative
            to the working directory (:func:`~harness.evaluation.record.portable_manifest`).
        trec_runs: ``{(system, level): lines}`` (see :mod:`harness.evaluation.trec`).
        qrels: ``{level: lines}``.
        overwrite: replace an existing record, only one harness wrote (it carries the output marker;
            :func:`harness.io.atomic_directory`).

    Returns:
        The record's folder; its manifest, written last, lists the sha256 of every other file
        (``content_sha256``, :func:`record_hashes`).

    Raises:
        HarnessInputError: the run id exists already (without ``overwrite``, or not written by harness), or is
            not a plain folder name; a content out of its declared
            range (naming the file and field).
    """
    check_run_id_text(run_id)
    final = Path(runs_dir) / run_id
    if isinstance(manifest, dict):
        manifest = validated(Manifest, portable_manifest(manifest), final / "manifest.json")
    if isinstance(summary, dict):
        summary = validated(Summary, summary, final / "summary.json")
    rows = [
        r if isinstance(r, QuestionRow) else validated(QuestionRow, r, final / "per_question.jsonl", line=i)
        for i, r in enumerate(per_question, start=1)
    ]
    with atomic_directory(final, overwrite=overwrite, kind="run record", field="--run-id") as tmp:
        with open(tmp / "per_question.jsonl", "w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row.model_dump(mode="python"), ensure_ascii=False) + "\n")
        (tmp / "summary.json").write_text(_dump(summary), "utf-8")
        trec = tmp / "trec"
        trec.mkdir()
        for (system, level), lines in trec_runs.items():
            safe = system.replace(":", "_").replace("/", "_")
            (trec / f"{safe}.{level}.run").write_text("\n".join(lines) + ("\n" if lines else ""), "utf-8")
        for level, lines in qrels.items():
            (trec / f"qrels.{level}.txt").write_text("\n".join(lines) + ("\n" if lines else ""), "utf-8")
        hashed = manifest.model_copy(update={"content_sha256": record_hashes(tmp)})
        (tmp / "manifest.json").write_text(_dump(hashed, strict=True), "utf-8")
    return final


def record_hashes(folder: str | Path) -> dict[str, str]:
    """``{file: hex sha256 of its bytes}`` for every file of a record folder but ``manifest.json``: ``summary.json``,
    ``per_question.jsonl`` and each file under ``trec/`` (keys relative to the folder, ``/``-separated, sorted)."""
    root = Path(folder)
    files = [root / "per_question.jsonl", root / "summary.json"]
    if (root / "trec").is_dir():
        files += sorted(p for p in (root / "trec").iterdir())
    return {p.relative_to(root).as_posix(): sha256_file(p) for p in files if p.is_file()}


_UNHASHED = "no content_sha256 (a record written before run records were hashed)"


def _verify_hashes(path: Path, manifest: Manifest, log) -> None:
    """Check every file of the record against ``manifest.content_sha256`` (see the module docstring)."""
    where = path / "manifest.json"
    listed = manifest.content_sha256
    if listed is None:
        if log is not None:
            log(f"{where}: {_UNHASHED}: summary.json, per_question.jsonl and trec/ are read unverified")
        return
    for required in ("summary.json", "per_question.jsonl"):
        if required not in listed:
            raise HarnessInputError(f"{where}: field content_sha256: does not list {required}")
    trec = path / "trec"
    present = {p.relative_to(path).as_posix() for p in trec.iterdir()} if trec.is_dir() else set()
    extra = sorted(present - set(listed))
    if extra:
        raise HarnessInputError(
            f"{path / extra[0]}: not part of the record (not in {where} field content_sha256); refusing the record"
        )
    for name, want in listed.items():
        f = path / name
        if not f.is_file():
            raise HarnessInputError(f"{f}: listed in {where} field content_sha256 but missing")
        got = sha256_file(f)
        if got != want:
            raise HarnessInputError(
                f"{f}: sha256 {got[:12]}… differs from {want[:12]}… recorded in {where}: the file was changed after "
                "harness wrote the record; refusing it"
            )


def check_hashed(path: str | Path, *, allow_unhashed: bool, field: str) -> None:
    """Refuse, before any work, a record written before run records were hashed, unless ``allow_unhashed``
    (``gate`` and ``compare``: ``--allow-unhashed``). Reads ``manifest.json`` only; every other problem of the
    record is left to :func:`load_run`, which also verifies the hashes.

    Raises:
        HarnessInputError: ``<field> <path>/manifest.json: field content_sha256: missing ...`` (exit 2).
    """
    man = Path(path) / "manifest.json"
    try:
        raw = json.loads(man.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return
    if isinstance(raw, dict) and raw.get("content_sha256") is None and not allow_unhashed:
        raise HarnessInputError(
            f"{field} {man}: field content_sha256: missing (a record written before run records were hashed, so "
            "its files cannot be verified); run it again, or pass --allow-unhashed to accept it unverified"
        )


@dataclass
class RunRecord:
    """A run record loaded from disk, typed (:mod:`harness.evaluation.record`).

    Attributes:
        path: the folder.
        manifest: ``manifest.json`` as a :class:`~harness.evaluation.record.Manifest`.
        summary: ``summary.json`` as a :class:`~harness.evaluation.record.Summary`.
        per_question: the rows of ``per_question.jsonl`` (:class:`~harness.evaluation.record.QuestionRow`).
        upgraded_from: the schema version on disk when it was older than :data:`RUN_SCHEMA_VERSION` (else ``None``).
    """

    path: Path
    manifest: Manifest
    summary: Summary
    per_question: list[QuestionRow]
    upgraded_from: int | None = None

    @property
    def run_id(self) -> str:
        """The recorded run id."""
        return self.manifest.run_id

    @property
    def systems(self) -> list[str]:
        """Systems in the order they were run."""
        return list(self.manifest.systems)

    def system_summary(self, system: str) -> dict[str, SliceSummary]:
        """``summary.systems[system]`` (``{slice: SliceSummary}``; empty when the summary does not hold it)."""
        return self.summary.systems.get(system, {})

    def rows(self, system: str) -> list[QuestionRow]:
        """The rows of one system, in file order."""
        return [r for r in self.per_question if r.system == system]

    def metric_vector(self, system: str, metric: str) -> dict[str, float]:
        """``{qid: value}`` of one metric for one system (every question of the gold set, less those the metric is
        omitted for: ``flags["omitted"]``, e.g. a question without a located quote for ``evidence_recall@1000w``).

        Raises:
            HarnessInputError: the system or the metric is not in the run.
        """
        out = {}
        for row in self.per_question:
            if row.system == system:
                if metric not in row.metrics:
                    if metric in (row.flags.get("omitted") or {}):
                        continue
                    raise HarnessInputError(f"{self.path}: metric {metric!r} not in run (system {system})")
                out[row.qid] = float(row.metrics[metric])
        if not out:
            raise HarnessInputError(f"{self.path}: system {system!r} not in run (has {', '.join(self.systems)})")
        return out

    def clusters(self) -> dict[str, str]:
        """``{qid: cluster label}`` recorded with the run."""
        return dict(self.manifest.clusters.labels)

    def categories(self) -> dict[str, str]:
        """``{qid: category}``."""
        return {row.qid: row.category for row in self.per_question}


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise HarnessInputError(f"{path}: file not found (not a complete run record)") from None
    except UnicodeDecodeError as exc:
        raise HarnessInputError(f"{path}: not valid UTF-8 at byte {exc.start}") from None


def _parse_json(path: Path, text: str) -> dict:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HarnessInputError(f"{path}:{exc.lineno}: malformed JSON ({exc.msg})") from None
    if not isinstance(obj, dict):
        raise HarnessInputError(f"{path}: expected a JSON object, got {type(obj).__name__}")
    return obj


def load_run(path: str | Path, *, log: Callable[[str], None] | None = stderr_notice) -> RunRecord:
    """Load a run record folder, upgrading older schemas in memory (:func:`~harness.evaluation.record.upgrade`;
    files are never rewritten), every value checked against its declared range, then every file against the sha256
    its manifest records (``content_sha256``); the shown interval of each metric entry filled or, when the evidence
    file changed, chosen again (:func:`harness.evaluation.choice.refresh`).

    Args:
        path: the record folder.
        log: called with one notice line when the record carries no hashes (written before records were hashed;
            read unverified); default a line on stderr, ``None`` silent.

    Raises:
        HarnessInputError: missing folder or files, the temporary folder of an interrupted write (``.<id>.*.tmp``),
            malformed JSON, an unknown schema version, a value outside its declared range (``<file>:<line>: field
            <path>: <message>``), a file whose sha256 differs from the recorded one, a listed file missing, a file
            under ``trec/`` the manifest does not list (exit 2).
    """
    path = Path(path)
    if not path.is_dir():
        raise HarnessInputError(f"{path}: run record not found")
    if path.name.startswith(".") and path.name.endswith(".tmp"):
        raise HarnessInputError(
            f"{path}: the temporary folder of an unfinished write, not a run record (run ids never start with '.')"
        )
    files = {name: path / name for name in ("manifest.json", "summary.json", "per_question.jsonl")}
    texts = {name: _read_text(p) for name, p in files.items()}
    raw_manifest = _parse_json(files["manifest.json"], texts["manifest.json"])
    version = raw_manifest.get("schema_version")
    if version not in READABLE_SCHEMA_VERSIONS:
        raise HarnessInputError(
            f"{files['manifest.json']}: field schema_version: {version!r} is not a run-record schema this harness "
            f"reads ({', '.join(map(str, READABLE_SCHEMA_VERSIONS))})"
        )
    raw_summary = _parse_json(files["summary.json"], texts["summary.json"])
    numbered = read_jsonl(files["per_question.jsonl"])
    raw_rows = [obj for _, obj in numbered]
    raw_manifest, raw_summary, raw_rows = upgrade(version, raw_manifest, raw_summary, raw_rows)
    manifest = validated(Manifest, raw_manifest, files["manifest.json"], text=texts["manifest.json"])
    summary = validated(Summary, raw_summary, files["summary.json"], text=texts["summary.json"])
    rows = [
        validated(QuestionRow, obj, files["per_question.jsonl"], line=line)
        for (line, _), obj in zip(numbered, raw_rows, strict=True)
    ]
    _verify_hashes(path, manifest, log)
    from harness.evaluation.choice import refresh  # the registry and the evidence: only when a record is read

    return refresh(
        RunRecord(
            path=path,
            manifest=manifest,
            summary=summary,
            per_question=rows,
            upgraded_from=version if version != RUN_SCHEMA_VERSION else None,
        )
    )


COMPARABILITY_KEYS = (
    ("goldset", "sha256"),
    ("corpus", "corpus_hash"),
    ("corpus", "chunker_id"),
    ("depths", "document"),
    ("depths", "chunk"),
)


def check_comparable(a: RunRecord, b: RunRecord, *, chunkers_may_differ: bool = False) -> None:
    """Refuse runs that cannot be compared question by question.

    ``chunkers_may_differ``: the chunker id is not checked (a comparison across chunkers, whose metric list
    :func:`harness.evaluation.chunkers.metrics_across_chunkers` restricts).

    Raises:
        IncomparableError: one line naming the first differing field (gold-set sha256, corpus hash, chunker id or
            depths) and both values.
    """
    for section, key in COMPARABILITY_KEYS:
        if chunkers_may_differ and (section, key) == ("corpus", "chunker_id"):
            continue
        va = getattr(getattr(a.manifest, section), key)
        vb = getattr(getattr(b.manifest, section), key)
        if va != vb:
            fix = ""
            if section == "depths":  # a run whose depth grew (run --metrics AP@100): re-run the other at that depth
                shallow = a if va < vb else b
                flag = "--doc-depth" if key == "document" else "--chunk-depth"
                fix = f"; re-run {shallow.path.name} with {flag} {max(va, vb)}"
            raise IncomparableError(
                f"runs not comparable: {section}.{key} differs ({a.path.name}: {va!r}; {b.path.name}: {vb!r}){fix}"
            )


def check_run_id(runs_dir: str | Path, run_id: str, *, overwrite: bool = False) -> None:
    """Refuse, before any work, a run id whose record cannot be written: one that is not a plain folder name
    (:func:`check_run_id_text`), a ``runs_dir`` that is not a folder (:func:`check_runs_dir`), a record that exists
    (without ``overwrite``), or that exists and is not a folder harness wrote (no output marker;
    :func:`harness.io.is_harness_output`).

    Raises:
        HarnessInputError: one line naming the folder and what to do (exit 2).
    """
    check_run_id_text(run_id)
    check_runs_dir(runs_dir)
    final = Path(runs_dir) / run_id
    if not (final.exists() or final.is_symlink()):
        return
    if not overwrite:
        raise HarnessInputError(
            f"--run-id {final}: run id exists already; refusing to overwrite (give --overwrite to replace a run "
            "record harness wrote, or choose another --run-id)"
        )
    if not is_harness_output(final):
        raise HarnessInputError(
            f"--run-id {final}: not a run record harness wrote (no {OUTPUT_MARKER}); refusing to overwrite it"
        )


@contextlib.contextmanager
def run_id_lock(runs_dir: str | Path, run_id: str) -> Iterator[None]:
    """Hold the run id ``run_id`` of ``runs_dir`` for the ``with`` block: an exclusive claim on the hidden file
    ``<runs_dir>/.<run id>.lock`` (:func:`harness.io.claim_file`: ``fcntl.flock``, removed on exit), taken before
    the record is computed and its temporary folder made, held through the rename.

    A second writer of the same id (``run``/``evaluate --run-id X``, with or without ``--overwrite``) started while
    the first holds it does not wait and never replaces the first's record: it stops at once with one line (exit
    2). Writers started one after the other are unaffected (``--overwrite`` then replaces, as asked). The claim's
    file goes with the claim, and a ``runs_dir`` made for it is removed again when the block leaves it empty: a
    run that wrote nothing leaves ``runs_dir`` as it found it.

    Raises:
        HarnessInputError: the id is not a plain folder name or ``runs_dir`` is not a folder
            (:func:`check_run_id_text`, :func:`check_runs_dir`); the id is held by another writer
            (``--run-id runs/X: another harness process (pid N) is writing this run record now; ...``).
        HarnessError: the lock file cannot be made (a read-only runs folder: its cause).
    """
    check_run_id_text(run_id)
    check_runs_dir(runs_dir)
    folder, final = Path(runs_dir), Path(runs_dir) / run_id
    made = [q for q in (folder, *folder.parents) if not q.exists()]  # the folders mkdir will make, deepest first
    try:
        with contextlib.ExitStack() as held:
            for tries_left in range(4, -1, -1):
                try:
                    folder.mkdir(parents=True, exist_ok=True)
                    held.enter_context(claim_file(folder / f".{run_id}.lock"))
                    break
                except LockBusy as exc:
                    who = f"another harness process (pid {exc.holder})" if exc.holder else "another harness process"
                    raise HarnessInputError(
                        f"--run-id {final}: {who} is writing this run record now; nothing written (run again when it "
                        "has finished, or choose another --run-id)"
                    ) from None
                except FileNotFoundError:  # the folder made a moment ago, removed by a writer that found it empty
                    if not tries_left:
                        raise
                except OSError as exc:
                    raise write_error(exc, final, field="--run-id") from None
            yield
    finally:
        with contextlib.suppress(OSError):
            for q in made:
                q.rmdir()  # only when empty: a run that wrote nothing leaves no runs folder behind


def holding_run_id(prefix: str) -> Callable:
    """Decorator of a function that writes a run record, with keyword arguments ``runs_dir`` (default ``"runs"``)
    and ``run_id`` (default: :func:`default_run_id` with ``prefix``): the call runs inside :func:`run_id_lock` of
    that id, and gets the id filled in."""

    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def inner(*args, runs_dir: str | Path = "runs", run_id: str | None = None, **kwargs):
            run_id = default_run_id(prefix) if run_id is None else run_id
            with run_id_lock(runs_dir, run_id):
                return fn(*args, runs_dir=runs_dir, run_id=run_id, **kwargs)

        return inner

    return wrap


#: The longest run id, in UTF-8 bytes: a folder name has at most 255 (NAME_MAX of Linux and macOS file systems) and
#: the record is first written to a temporary sibling named ``.<id>.<pid>-<8 random>.tmp`` (up to 22 bytes more;
#: :func:`harness.io.temporary_path`).
RUN_ID_MAX_BYTES = 200


def check_run_id_text(run_id: str) -> None:
    """Refuse a run id that is not a plain folder name: empty or blank, longer than :data:`RUN_ID_MAX_BYTES` bytes
    in UTF-8, with a ``/``, a control character (newline, tab, ESC, any of Unicode category Cc) or leading or
    trailing white space, or starting with ``.`` (hidden, and ``..``).

    Raises:
        HarnessInputError: one line naming ``--run-id`` and what is wrong (the id shown escaped and cut), exit 2.
    """
    shown = ascii(run_id if len(run_id) <= 60 else run_id[:60] + "...")
    size = len(run_id.encode("utf-8", "surrogatepass"))
    bad = next((ch for ch in run_id if unicodedata.category(ch) in ("Cc", "Cs")), None)
    why = (
        "is empty or blank" if not run_id.strip()
        else f"is {size} bytes long in UTF-8, over the {RUN_ID_MAX_BYTES} a run id may have" if size > RUN_ID_MAX_BYTES
        else f"contains the control character U+{ord(bad):04X}" if bad is not None
        else "contains '/'" if "/" in run_id
        else "starts with '.'" if run_id.startswith(".")
        else "starts or ends with white space" if run_id != run_id.strip()
        else None
    )  # fmt: skip
    if why is not None:
        raise HarnessInputError(f"--run-id {shown}: {why}; give a plain folder name")


def check_runs_dir(runs_dir: str | Path) -> None:
    """Refuse a runs folder that exists and is not a folder, or lies under a file.

    Raises:
        HarnessInputError: one line naming ``--runs-dir`` (exit 2).
    """
    p = Path(runs_dir)
    for q in (p, *p.parents):
        if q.exists() or q.is_symlink():
            if not q.is_dir():
                where = "" if q == p else f" (its parent {q} is not a folder)"
                raise HarnessInputError(f"--runs-dir {runs_dir}: not a folder{where}; give a folder for run records")
            return
