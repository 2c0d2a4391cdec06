"""The paired method of benchmarks/self_check.py (analysis/paired.py) against hand numbers."""

import math

import pytest

from rigbench.analysis.paired import PairedRatio, paired_ratio


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
