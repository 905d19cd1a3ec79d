"""Evaluation: the run and evaluate verbs, run records, rankings in and out, comparisons, gate, sweep."""
