"""The interval of a trial's median step time (analysis/stats.median_ci) and compare's one-trial
rule, against the truth of simulated step times (benchmarks/stats_calibration.py's models):
fixed seeds, so every rate below is one number, with bounds wide of it."""

import math
import sys
from pathlib import Path

import pytest

from rigbench.analysis.compare import compare_results
from rigbench.analysis.significance import significance
from rigbench.analysis.stats import MEDIAN_CI_MIN, lag1_autocorrelation, median_ci
from rigbench.spec import Result, TrialSpec

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import stats_calibration as calibration  # noqa: E402


def _binomial_rank(n: int) -> int:
    """The exact distribution-free 95% interval's rank: the largest k with P(Bin(n, 1/2) < k)
    at most 0.025 (at least 1: the range)."""
    k = 1
    while sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n <= 0.025:
        k += 1
    return k


@pytest.mark.parametrize("n", [*range(1, 41), 60, 100, 500])
def test_uncorrelated_values_get_the_binomial_order_statistics_or_one_rank_wider(n):
    values = [float(v) for pair in zip(range(1, n + 1), range(n, 0, -1)) for v in pair][:n]  # low, high, ...
    assert lag1_autocorrelation(values) <= 0 or n < 3
    low, high = median_ci(values)
    k = _binomial_rank(n)
    assert (low, high) in ((k, n + 1 - k), (k - 1, n + 2 - k)) if k > 1 else (low, high) == (1, n)


def test_correlated_steps_widen_the_interval_and_equal_steps_collapse_it():
    values = [1.0 + 0.01 * i for i in range(30)]  # each step like the one before: a slow drift
    shuffled = [v for pair in zip(values[:15], values[:14:-1]) for v in pair]
    assert lag1_autocorrelation(values) > 0.8 > 0 > lag1_autocorrelation(shuffled)
    (low, high), (s_low, s_high) = median_ci(values), median_ci(shuffled)
    assert low < s_low and high > s_high
    assert median_ci([0.25] * 7) == (0.25, 0.25)
    with pytest.raises(ValueError):
        median_ci([])


def _coverage(model: str, n: int, sims: int = 2000) -> float:
    gen, truth = calibration.MODELS[model]
    return calibration.coverage(gen, truth, n, sims, median_ci)


def test_the_interval_holds_the_true_median_at_least_95_percent_of_the_time_for_independent_steps():
    """The percentile bootstrap that it replaced held it 93-95% of the time at 10 to 60 steps."""
    for n in (10, 20, 60):
        assert _coverage("lognormal CV 20%", n) >= 0.95
        assert _coverage("5% stalls x1.5-3", n) >= 0.95


def test_the_interval_holds_the_true_median_about_95_percent_of_the_time_for_correlated_steps():
    """AR(1) step times with a lag-1 correlation of 0.5 (the shipped references' are 0.36 to 0.61
    in the median): the bootstrap held the median 79% of the time."""
    for n in (10, 20, 60):
        assert _coverage(f"AR(1) phi {calibration.AR_PHI}", n) >= 0.90


def test_below_six_values_the_interval_is_their_range():
    assert MEDIAN_CI_MIN == 6
    assert median_ci([3.0, 1.0, 2.0, 5.0, 4.0]) == (1.0, 5.0)
    assert _coverage("lognormal CV 5%", 3) == pytest.approx(0.75, abs=0.03)  # 1 - 2^(1 - 3)


def _make(times: list[float], run_id: str) -> Result:
    return Result(run_id=run_id, created_at="2026-11-28T00:00:00+00:00", status="ok", device_name="cpu",
                  spec=TrialSpec(workload="mlp", batch_size=64), step_times_s=times)


def test_five_steps_a_side_are_never_a_change_however_far_apart():
    """p = 0.008 for 5 against 5 fully apart, but the range of 5 correlated steps holds the median
    well under 95% of the time: 10% of simulated A/A pairs were called different."""
    a, b = [0.30, 0.31, 0.32, 0.33, 0.34], [0.10, 0.11, 0.12, 0.13, 0.14]
    assert significance(a, b)["p_value"] < 0.01
    (pair,) = compare_results([_make(a, "a")], [_make(b, "b")], same_machine=True).pairs
    assert pair.verdict == "no change"
    assert pair.reason == ("too few steps (5 and 5) for a 95% interval of each median (it takes 6 a side); "
                           "time more steps (e.g. --steps 10)")
    (pair,) = compare_results([_make(a + [0.35], "a")], [_make(b + [0.15], "b")], same_machine=True).pairs
    assert pair.verdict == "faster"


@pytest.mark.slow
def test_identical_correlated_trials_are_called_different_under_5_percent_of_the_time(monkeypatch):
    """1,000 simulated A/A pairs of 20 AR(1) steps a side (fixed seed): the bootstrap intervals
    called 9% of them different; a real 20% speed-up is still found in most pairs."""
    from rigbench.analysis import significance

    # the verdict rests on U and median_ci alone: the printed ratio's bootstrap (2,000 resamples
    # a pair, most of this test's time) is left out
    monkeypatch.setattr(significance, "ratio_ci", lambda a, b: (math.nan, math.nan))
    gen = calibration.MODELS[f"AR(1) phi {calibration.AR_PHI}"][0]
    assert calibration.called(gen, 20, 1000) < 0.05
    assert calibration.called(gen, 60, 200, speedup=0.20) > 0.8
    assert calibration.called(calibration.MODELS["lognormal CV 5%"][0], 20, 200, speedup=0.10) > 0.7
