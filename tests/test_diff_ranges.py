"""A paired difference of two unit metrics lies in [-1, 1], and so does its interval: a bound past it is clipped and
marked, as a single mean's bound past [0, 1] is (the trial saw [-2.154, +2.273] for a per-category MRR difference)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.evaluation.bounds import bounds
from harness.report.format import CLIP_MARK, diff_iv, legend
from harness.stats import paired
from harness.stats.methods import INTERVALS


def test_a_three_question_difference_is_clipped_to_minus_one_one_and_marked():
    # 3 clusters, differences +1, +1, -1: CR2 mean 1/3, se = sd/sqrt(3) = 2/3 (sd 1.1547 ddof 1), t_2 0.975 = 4.3027
    a = [0.0, 0.0, 1.0]
    b = [1.0, 1.0, 0.0]
    raw = INTERVALS["cr2"].compute(np.subtract(b, a), [1, 2, 3], level=0.95, clip=False)
    assert raw.lower == pytest.approx(1 / 3 - 4.302653 * 2 / 3, abs=1e-5)  # -2.535: past -1
    assert raw.upper == pytest.approx(1 / 3 + 4.302653 * 2 / 3, abs=1e-5)  # +3.202: past +1
    iv = paired(a, b, [1, 2, 3], method="cr2")
    assert (iv.lower, iv.upper) == (-1.0, 1.0)
    assert iv.extras["clipped"] is True and iv.extras["range"] == [-1.0, 1.0]
    assert iv.estimate == pytest.approx(1 / 3)
    b_ = bounds(iv.to_dict())
    assert b_.lower_clipped and b_.upper_clipped
    assert str(diff_iv(iv.estimate, iv.to_dict())) == f"+0.333 [-1.000{CLIP_MARK}, +1.000{CLIP_MARK}]"
    assert "[-1, 1] for a difference" in legend([iv.to_dict()])


def test_an_interval_inside_the_range_is_unchanged_and_unmarked():
    rng = np.random.default_rng(0)
    cl = np.repeat(np.arange(30), 2)
    a = rng.random(cl.size)
    b = np.clip(a + 0.05, 0, 1)
    iv = paired(a, b, cl)
    raw = INTERVALS["cr2"].compute(b - a, cl, level=0.95, clip=False)
    assert (iv.lower, iv.upper) == (raw.lower, raw.upper)
    assert "clipped" not in iv.extras and not bounds(iv.to_dict()).marks()


def test_values_outside_unit_range_are_not_clipped():
    iv = paired([0.0, 0.0, 5.0], [5.0, 5.0, 0.0], [1, 2, 3], method="cr2")
    assert iv.lower < -1 and iv.upper > 1 and "clipped" not in iv.extras


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1), st.integers(0, 5)), min_size=2, max_size=20),
    st.sampled_from(["cr2", "cluster_t", "iid_wald", "bootstrap_percentile"]),
)
def test_property_unit_differences_stay_in_range_and_clipping_is_marked(rows, method):
    a, b, cl = (list(x) for x in zip(*rows, strict=True))
    if len(set(cl)) < 2:
        cl[0] = 99
    iv = paired(a, b, cl, method=method, B=200)
    raw = INTERVALS[method].compute(np.subtract(b, a), cl, level=0.95, clip=False, B=200, seed=0)
    lo_ok = iv.lower == -np.inf if raw.lower == -np.inf else -1.0 <= iv.lower
    hi_ok = iv.upper == np.inf if raw.upper == np.inf else iv.upper <= 1.0
    assert lo_ok and hi_ok and iv.lower <= iv.estimate <= iv.upper
    reached = -np.inf < raw.lower < -1.0 or np.inf > raw.upper > 1.0
    assert bool(iv.extras.get("clipped")) == reached
    if not reached:
        assert (iv.lower, iv.upper) == (raw.lower, raw.upper)


@pytest.mark.slow
def test_category_differences_of_the_committed_baseline_stay_in_range_and_are_marked():
    """The trial's case: per-category MRR differences over 3 test questions ran to [-2.154, +2.273]."""
    import json
    from pathlib import Path

    from typer.testing import CliRunner

    from harness.cli import app

    run = Path(__file__).resolve().parents[1] / "runs" / "baselines" / "mx-leyes-dof-eval-v1-six-systems"
    if not run.exists():
        pytest.skip(f"no committed baseline at {run}")
    cli = CliRunner()
    args = ["compare", str(run), str(run), "--split", "test", "--metrics", "mrr"]
    data = json.loads(cli.invoke(app, [*args, "--format", "json"]).stdout)["data"]
    assert data["clustering"]["n_clusters"] == 14
    clipped = 0
    for c in data["comparisons"]:
        for e in c["per_category"].values():
            iv = e.get("interval")
            if iv is None:
                continue
            assert -1.0 <= iv["lower"] <= iv["upper"] <= 1.0
            at_end = iv["lower"] == -1.0, iv["upper"] == 1.0
            assert (iv["flags"]["clipped"]["lower"], iv["flags"]["clipped"]["upper"]) == at_end
            clipped += any(at_end)
    assert clipped > 0
    text = " ".join(cli.invoke(app, args).stdout.split())  # the header wraps at the runner's width
    assert f"-1.000{CLIP_MARK}" in text and "14 clusters; test split only" in text
