"""Deterministic gold-set validation: rules with stable codes, per-version contracts, a typed report.

Entry points (the CLI is a thin layer over these):

* :func:`validate` ``(dataset_dir, corpus_dir=None, correction=None, contract=None) -> ValidationReport``
  (exit code 0/1 on the report; unusable input raises :class:`harness.errors.HarnessInputError`, exit code 2);
* :func:`harness.report.validation.render` ``(report, console)`` prints it with rich; ``report.to_json()`` gives
  the JSON form;
* :func:`harness.curation.apply.apply_correction` writes a corrected set as a new minor version, only when it validates
  (:mod:`harness.curation.apply`; the correction itself is applied in memory by :mod:`harness.goldset.corrections`).

Rules and their codes: :mod:`harness.validate.rules`. Contract format and file naming:
:mod:`harness.validate.contract`.
"""

from harness.validate.contract import (
    DEFAULT_CONTRACTS_DIR,
    Contract,
    contract_search_dirs,
    contract_slug,
    find_contract,
    load_contract,
)
from harness.validate.core import resolve_contract, validate, validate_correction, validate_goldset
from harness.validate.report import (
    CorrectionInfo,
    Counts,
    Finding,
    RecordResult,
    RuleInfo,
    RuleResult,
    ValidationReport,
)
from harness.validate.rules import RULE_INFO, RULES

__all__ = [
    "DEFAULT_CONTRACTS_DIR",
    "contract_search_dirs",
    "RULES",
    "RULE_INFO",
    "Contract",
    "CorrectionInfo",
    "Counts",
    "Finding",
    "RecordResult",
    "RuleInfo",
    "RuleResult",
    "ValidationReport",
    "contract_slug",
    "find_contract",
    "load_contract",
    "resolve_contract",
    "validate",
    "validate_correction",
    "validate_goldset",
]
