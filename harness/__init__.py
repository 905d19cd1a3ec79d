"""harness: a retrieval benchmark harness for RAG systems.

The public verbs (the command line is a thin layer over them):

* :func:`load_goldset` — load an eval v4 gold set (folder or JSONL) with located errors;
* ``harness.validate.validate`` — deterministic gold-set validation (a typed report; exit codes 0/1/2; it lives
  in the subpackage ``harness.validate``, so it is not re-exported here under the same name);
* :func:`run` — retrieve for every gold question, score, add clustered intervals, write a run record;
* :func:`evaluate` — score rankings produced by any other system the same way;
* :func:`compare` — paired differences between systems with clustered intervals and randomisation tests;
* :func:`gate` — the non-inferiority gate for CI.

Imports are lazy so that ``import harness`` stays cheap.
"""

from __future__ import annotations

from importlib import import_module

__version__ = "0.1.0"

_VERBS = {
    "load_goldset": ("harness.goldset.io", "load_goldset"),
    "run": ("harness.evaluation.pipeline", "run"),
    "evaluate": ("harness.evaluation.pipeline", "evaluate_rankings"),
    "compare": ("harness.evaluation.compare", "compare_runs"),
    "gate": ("harness.evaluation.gate", "gate"),
    "load_run": ("harness.evaluation.runs", "load_run"),
}

__all__ = ["__version__", *_VERBS]


def __getattr__(name: str):
    try:
        module, attr = _VERBS[name]
    except KeyError:
        raise AttributeError(f"module 'harness' has no attribute {name!r}") from None
    return getattr(import_module(module), attr)
