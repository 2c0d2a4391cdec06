"""Steps timed together count once (rigbench/step_windows.py): the figures per window, the
windows of a merged data-parallel trial, and what the statistics and a comparison make of them."""

from __future__ import annotations

import numpy as np
import pytest

from rigbench.analysis.compare import compare_results
from rigbench.analysis.stats import median_ci, throughput_summary
from rigbench.result_rules import result_problems
from rigbench.spec import Result, TrialSpec
from rigbench.step_windows import common_windows, timing_samples
from rigbench.store import Store


def replicated(means: list[float], steps_each: int) -> tuple[list[float], list[int]]:
    """Step times as a windowed host timer records them: each step holds its window's mean."""
    return [m for m in means for _ in range(steps_each)], [steps_each] * len(means)


def test_a_window_is_one_figure_and_no_windows_means_one_per_step():
    times, windows = replicated([0.1, 0.2, 0.3], 4)
    assert timing_samples(times, windows) == pytest.approx([0.1, 0.2, 0.3])
    assert timing_samples([0.1, 0.2], []) == [0.1, 0.2]


@pytest.mark.parametrize("windows", [[2, 2], [3, 0, 2], [5, 1]])
def test_windows_that_do_not_cover_the_steps_are_read_as_steps_never_refused(windows):
    assert timing_samples([0.1, 0.2, 0.3], windows) == [0.1, 0.2, 0.3]


def test_a_merged_trials_windows_are_cut_at_every_ranks_boundary():
    assert common_windows([[1, 3], [2, 2]], 4) == [1, 1, 2]
    assert common_windows([[1, 3], [1, 3]], 4) == [1, 3]
    assert common_windows([[1, 3], []], 4) == [], "a rank that timed steps alone: per step"
    assert common_windows([[1, 3], [1, 2]], 4) == [], "a rank's windows not covering the steps"


def test_the_interval_and_noise_are_over_windows_not_over_their_copies():
    rng = np.random.default_rng(1)
    means = list(0.01 * (1 + 0.05 * rng.standard_normal(6)))
    times, windows = replicated(means, 50)
    summary = throughput_summary(times, 32, windows)
    low, high = median_ci(means)
    assert (summary["samples_per_s_ci_low"], summary["samples_per_s_ci_high"]) == pytest.approx((32 / high, 32 / low))
    assert summary["steps_measured"] == 300
    copies = throughput_summary(times, 32)  # the 300 copies taken for 300 measurements
    assert copies["samples_per_s_ci_high"] - copies["samples_per_s_ci_low"] < \
        summary["samples_per_s_ci_high"] - summary["samples_per_s_ci_low"]


def _result(times: list[float], windows: list[int], run_id: str) -> Result:
    return Result(run_id=run_id, created_at="2026-11-28T00:00:00+00:00", status="ok",
                  spec=TrialSpec(workload="mlp", framework="jax", batch_size=32), step_times_s=times,
                  step_windows=windows, software={"jax": "0.10.2"})


def test_a_comparison_tests_windows_so_three_a_side_can_never_be_significant():
    """3 windows of 50 steps a side, B 10% faster in every one: 150 copies a side would make it
    'faster' at any p; 3 measurements a side never reach p < 0.05 (smallest p 0.1)."""
    a = _result(*replicated([0.100, 0.101, 0.102], 50), run_id="a")
    b = _result(*replicated([0.090, 0.091, 0.092], 50), run_id="b")
    (pair,) = compare_results([a], [b], same_machine=True).pairs
    assert pair.verdict == "no change"
    assert pair.reason.startswith("too few windows of steps (3 and 3; steps timed together count once)")
    a.step_windows, b.step_windows = [], []
    (pair,) = compare_results([a], [b], same_machine=True).pairs
    assert pair.verdict == "faster", "the same copies read as 150 steps a side"


@pytest.mark.parametrize("windows", [[2, 2], [3, 0, 2]])
def test_a_result_whose_windows_do_not_divide_its_steps_is_refused_naming_the_field(windows):
    result = _result([0.1, 0.1, 0.1], windows, run_id="a")
    assert [p for p in result_problems(result) if p.startswith("step_windows:")] == [
        f"step_windows: {len(windows)} windows of {sum(windows)} steps in all do not divide the 3 step times "
        "into windows of at least one step"]
    assert not [p for p in result_problems(_result([0.1, 0.1, 0.1], [1, 2], run_id="a"))
                if p.startswith("step_windows")]


def test_windows_are_stored_with_the_trial(tmp_path):
    store = Store(str(tmp_path / "w.db"))
    store.add_run("a", "t", "test", {})
    result = _result(*replicated([0.1, 0.2], 3), run_id="a")
    stored = store.get(store.add_result(result))
    assert stored.step_windows == [3, 3] and stored.timing_samples() == pytest.approx([0.1, 0.2])
