"""The paired method of benchmarks/self_check.py (analysis/paired.py) against hand numbers."""

import math

import pytest

from rigbench.analysis.paired import PairedRatio, paired_ratio, ratio_over_processes
from rigbench.analysis.stats import T_975, t_interval


def test_the_ratio_is_the_geometric_mean_of_each_rounds_ratio():
    # rounds: 1.1/1.0 and 0.9/1.0 -> sqrt(1.1 x 0.9) = 0.99499
    result = paired_ratio([1.1, 0.9], [1.0, 1.0])
    assert result.ratio == pytest.approx(math.sqrt(0.99))
    assert result.low <= result.ratio <= result.high and result.rounds == 2


def test_identical_ratios_have_no_spread():
    result = paired_ratio([2.02, 4.04, 1.01], [2.0, 4.0, 1.0])  # 1.01 every round
    assert result.ratio == pytest.approx(1.01) and result.low == pytest.approx(1.01) == result.high


@pytest.mark.parametrize(("ratio", "low", "high", "starts"), [
    (1.004, 0.995, 1.008, "within 1%"),
    (1.05, 1.03, 1.07, "slower by +5.0%"),
    (0.95, 0.93, 0.97, "faster than the bare loop by -5.0%"),
    (0.996, 0.992, 0.999, "faster than the bare loop"),  # significantly faster is never a pass
    (1.00, 0.90, 1.10, "unresolved (interval 20.0% wide"),
    (1.02, 1.005, 1.04, "unresolved"),  # slower, but not resolved against the 1% goal
])
def test_the_verdict_says_what_the_interval_allows(ratio, low, high, starts):
    assert PairedRatio(ratio, low, high, 4).verdict().startswith(starts)


def test_too_few_rounds_give_no_verdict():
    assert PairedRatio(0.97, 0.967, 0.971, 2).verdict().startswith("unresolved (2 rounds: a verdict takes at least 4")


def test_unpaired_or_empty_rounds_are_refused():
    with pytest.raises(ValueError, match="equal, non-zero"):
        paired_ratio([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="positive"):
        paired_ratio([0.0], [1.0])


def test_the_t_table_is_students():
    stats = pytest.importorskip("scipy.stats")  # scikit-learn's dependency: a table we did not write
    for df, t in enumerate(T_975, start=1):
        assert t == pytest.approx(stats.t.ppf(0.975, df), abs=6e-4), df


def test_the_t_interval_by_hand():
    # mean 2, sample sd 1 (values 1, 2, 3), t(2) = 4.303: 2 +- 4.303 / sqrt(3)
    low, high = t_interval([1.0, 2.0, 3.0])
    assert (low, high) == pytest.approx((2 - 4.303 / math.sqrt(3), 2 + 4.303 / math.sqrt(3)))
    with pytest.raises(ValueError):
        t_interval([1.0])


def test_processes_combine_as_the_geometric_mean_with_a_t_interval():
    ratios = [0.996, 1.000, 1.010, 1.018, 1.026]
    r = ratio_over_processes(ratios)
    logs = [math.log(x) for x in ratios]
    mean = sum(logs) / 5
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / 4)
    assert r.ratio == pytest.approx(math.exp(mean)) and r.rounds == 5
    assert (r.low, r.high) == pytest.approx((math.exp(mean - 2.776 * sd / math.sqrt(5)),
                                             math.exp(mean + 2.776 * sd / math.sqrt(5))))
    assert r.verdict().startswith("unresolved")  # 1.010 [0.996, 1.025]: wider than the 1% allows
    with pytest.raises(ValueError):
        ratio_over_processes([1.0])
