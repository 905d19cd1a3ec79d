"""The synthetic population (harness.studies.coverage.synthetic) meets its targets within its stated tolerances."""

from __future__ import annotations

import numpy as np

from harness.studies.coverage.synthetic import TARGETS, TOLERANCES, population_statistics, synthetic_population


def test_the_synthetic_population_meets_its_targets():
    stats = population_statistics(synthetic_population())
    assert set(stats) == set(TARGETS) == set(TOLERANCES)
    for key, want in TARGETS.items():
        assert abs(stats[key] - want) <= TOLERANCES[key], (key, stats[key], want)
    assert stats["micro"] > stats["macro"]  # rates grow with size, as on the real corpus


def test_it_is_seeded():
    a, b = synthetic_population(), synthetic_population()
    assert np.array_equal(a.n, b.n) and np.array_equal(a.s, b.s) and np.array_equal(a.rows.y, b.rows.y)
    other = synthetic_population(seed=7)
    assert other.n.sum() == TARGETS["chunks"] and not np.array_equal(other.s, a.s)
    assert int(a.rows.y.sum()) == int(a.s.sum()) and a.rows.y.size == a.n.sum()
