"""Exceptions with the exit codes the command line maps them to.

Exit codes for verbs that judge (validate, gate, compare): 0 pass, 1 fail, 2 unusable input; the gate also has 3,
inconclusive (neither non-inferiority nor a loss beyond the margin shown; :mod:`harness.evaluation.gate`).
"""

from __future__ import annotations


class HarnessError(Exception):
    """Base class. ``exit_code`` is what the CLI returns; the message is one line naming file, record and field."""

    exit_code = 2


class HarnessInputError(HarnessError):
    """Unusable input: a missing or unreadable file, malformed JSON, an unknown chunker (exit code 2)."""

    exit_code = 2


class IncomparableError(HarnessInputError):
    """Two run records cannot be compared (different gold set, corpus, chunker or depths); exit code 2."""


class StaleGoldsetError(HarnessInputError):
    """The gold set was built against another corpus hash or chunker id than the one given (exit code 2)."""


class MetricError(HarnessInputError, ValueError):
    """Unusable metric input: an unknown metric id, a NaN score, results that cannot be aggregated (exit 2).

    Defined here (not in :mod:`harness.metrics`) because the tie rule (:mod:`harness.ranking`) raises it for a NaN
    score, and retrieval must not import the scoring layer; ``harness.metrics.MetricError`` is the same class.
    """
