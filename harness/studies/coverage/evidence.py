"""Write the committed evidence file ``harness/stats/coverage_evidence.json`` from a coverage suite.

The file's schema and its reader are :mod:`harness.stats.evidence` (renderers call
:func:`harness.stats.methods.coverage_evidence`). For every registered method and outcome class it stores the
coverage range the suite measured over K = 10-80 (:class:`harness.stats.evidence.MethodEvidence`, from
:mod:`harness.studies.coverage.choice`'s summaries: SRS designs, PPS draws for the PPS methods) and the defaults the
rule picked. Written by ``harness coverage ... --write-evidence`` and ``benchmarks/coverage_table.py``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from harness.io import atomic_write_json
from harness.stats.evidence import EVIDENCE_PATH, EvidenceFile, MethodEvidence, read_evidence
from harness.studies.coverage.choice import K_RANGE, RULE
from harness.studies.coverage.suite import SuiteResult


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, cwd=Path(__file__).parent
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def build_evidence(suite: SuiteResult, *, description: str, corpus: str, generated_by: str) -> EvidenceFile:
    """The evidence of ``suite`` (module docstring).

    Args:
        suite: a :class:`~harness.studies.coverage.suite.SuiteResult`.
        description: what the populations are, as printed after "on" (``"mx-leyes-dof known-item populations"``).
        corpus: the corpus name.
        generated_by: the command that produced it.

    Returns:
        A validated :class:`harness.stats.evidence.EvidenceFile`.
    """
    from harness import __version__

    methods: dict[str, dict[str, MethodEvidence]] = {}
    for cls, choice in suite.choice.items():
        for m in choice.methods:
            methods.setdefault(m.method, {})[cls] = MethodEvidence(
                min=m.min_coverage,
                max=m.max_coverage,
                min_k20=m.min_coverage_k20,
                where_min=m.where,
                populations=m.populations,
                max_width_ratio=m.max_width_ratio,
                design=m.design,
            )
    cfg = suite.config
    return EvidenceFile(
        description=description,
        corpus=corpus,
        populations=[r.label for r in suite.results],
        k_min=K_RANGE[0],
        k_max=K_RANGE[1],
        level=float(cfg["level"]),
        reps=int(cfg["reps"]),
        B=int(cfg["B"]),
        seed=int(cfg["seed"]),
        generated_by=generated_by,
        harness_version=__version__,
        git_commit=_git_commit(),
        seconds=round(suite.computed_seconds, 1),
        defaults={cls: c.chosen for cls, c in suite.choice.items()},
        rule=RULE,
        methods=methods,
    )


def write_evidence(evidence: EvidenceFile, path: str | Path = EVIDENCE_PATH) -> Path:
    """Write ``evidence`` atomically to ``path`` (default: the package's committed file); return the path.

    The design entries (``designs``, written by ``harness coverage --run ... --write-evidence``) of the file already
    at ``path`` are kept when ``evidence`` has none: the whole-document study does not measure them.

    Raises:
        HarnessInputError: the file at ``path`` exists but is not an evidence file (its designs cannot be kept).
    """
    if not evidence.designs and Path(path).is_file():
        evidence = evidence.model_copy(update={"designs": read_evidence(path).designs})
    atomic_write_json(path, evidence.model_dump(mode="json"))
    return Path(path)
