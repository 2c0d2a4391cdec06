"""Statistics against numbers computed by hand (linear-interpolation percentiles)."""

import math

import pytest

from rigbench.analysis import stats


def test_median_iqr_p95_by_hand():
    values = [5, 1, 4, 2, 3]  # sorted: 1 2 3 4 5
    assert stats.median(values) == 3
    # p25 sits at index 0.25*4 = 1 -> 2; p75 at index 3 -> 4
    assert stats.iqr(values) == 2
    # p95 at index 0.95*4 = 3.8 -> 4 + 0.8*(5-4) = 4.8
    assert stats.percentile(values, 95) == pytest.approx(4.8)


def test_even_count_interpolates():
    # [10, 20]: p25 at index 0.25 -> 12.5, p75 -> 17.5
    assert stats.median([10, 20]) == 15
    assert stats.iqr([10, 20]) == pytest.approx(5)


def test_coefficient_of_variation_by_hand():
    # mean 3, sample variance (4+1+0+1+4)/4 = 2.5
    assert stats.coefficient_of_variation([1, 2, 3, 4, 5]) == pytest.approx(math.sqrt(2.5) / 3)
    assert stats.coefficient_of_variation([7.0]) == 0.0


def test_throughput_summary_constant_steps():
    s = stats.throughput_summary([0.1] * 5, batch_size=32)
    assert s["samples_per_s"] == pytest.approx(320)
    assert s["samples_per_s_ci_low"] == pytest.approx(320)
    assert s["samples_per_s_ci_high"] == pytest.approx(320)
    assert s["step_time_ms_median"] == pytest.approx(100)
    assert s["step_time_ms_iqr"] == pytest.approx(0)
    assert s["noisy"] is False
    assert s["steps_measured"] == 5


def test_throughput_summary_flags_noise_and_orders_ci():
    times = [0.10, 0.10, 0.10, 0.20, 0.05, 0.10, 0.15, 0.10]
    s = stats.throughput_summary(times, batch_size=10)
    assert s["noisy"] is True  # CV of these is about 0.38
    assert s["samples_per_s"] == pytest.approx(100)  # median step 0.1 s
    assert s["samples_per_s_ci_low"] <= s["samples_per_s"] <= s["samples_per_s_ci_high"]


def test_bootstrap_is_deterministic_and_brackets_the_median():
    values = [0.9, 1.0, 1.1, 1.05, 0.95, 1.2, 0.85, 1.0, 1.02, 0.98]
    a = stats.bootstrap_ci(values)
    assert a == stats.bootstrap_ci(values)
    assert a[0] <= stats.median(values) <= a[1]
    assert stats.bootstrap_ci([2.5]) == (2.5, 2.5)


def test_empty_inputs_raise():
    for fn in (stats.median, stats.mean, stats.bootstrap_ci):
        with pytest.raises(ValueError):
            fn([])
    with pytest.raises(ValueError):
        stats.throughput_summary([], 8)


def test_t_two_sided_p_by_hand_and_against_scipy():
    # df 1 is the Cauchy: P(|T| >= 1) = 1/2; df 2: P(|T| >= t) = 1 - t / sqrt(2 + t^2) exactly
    assert stats.t_two_sided_p(1.0, 1) == pytest.approx(0.5, rel=1e-9)
    assert stats.t_two_sided_p(2.0, 2) == pytest.approx(1 - 2 / math.sqrt(6), rel=1e-9)
    assert stats.t_two_sided_p(0.0, 5) == 1.0 and stats.t_two_sided_p(-2.0, 2) == stats.t_two_sided_p(2.0, 2)
    # at the table's quantiles the p is 0.05, as far as their three decimals allow
    assert [stats.t_two_sided_p(stats.t_975(df), df) for df in range(1, 31)] == [pytest.approx(0.05, abs=6e-5)] * 30
    # beyond the table the series: the normal's 1.96 there made intervals narrower than 95% (at 31:
    # 1.96 against 2.040), and a score of the suite with 3 trials a side reaches 32
    beyond = (31, 32.7, 40, 64, 120, 1000)
    assert [stats.t_two_sided_p(stats.t_975(df), math.floor(df)) for df in beyond] == [
        pytest.approx(0.05, abs=1e-6)] * len(beyond)
    assert stats.t_975(31) == pytest.approx(2.0395, abs=1e-4) and stats.t_975(10**6) == pytest.approx(1.95996, abs=1e-5)
    with pytest.raises(ValueError, match="at least 1 degree of freedom"):
        stats.t_two_sided_p(2.0, 0.5)
    scipy_stats = pytest.importorskip("scipy.stats")
    for df in (1, 2.9, 7, 30, 31.5, 200):  # Welch's degrees of freedom are seldom whole
        for t in (0.3, 1.0, 2.5, 12.0, 300.0):  # a tiny tail keeps its digits
            assert stats.t_two_sided_p(t, df) == pytest.approx(2 * float(scipy_stats.t.sf(t, df)), rel=1e-6)


def test_mean_difference_interval_by_hand():
    # two groups: (a [0, 2], b [1, 3]) differ by 1 and (a [1, 3], b [4, 6]) by 3: mean 2. Each side's
    # variance of its mean is 2 / 2 = 1, over 2^2 groups: se^2 = 4 x 1/4 = 1; df = 1 / (4 x (1/4)^2 / 1) = 4
    diff, low, high = stats.mean_difference_interval([([0, 2], [1, 3]), ([1, 3], [4, 6])])
    assert (diff, low, high) == (pytest.approx(2.0), pytest.approx(2.0 - 2.776), pytest.approx(2.0 + 2.776))
    # one group is Welch's two-sample interval
    assert stats.mean_difference_interval([([1, 2, 4], [3, 5, 6, 9])]) == stats.welch_interval([1, 2, 4], [3, 5, 6, 9])
    # every value equal on every side: a point, at the values less one a side (df 4: no division by 0)
    assert stats.mean_difference_interval([([1, 1], [2, 2]), ([3, 3], [3, 3])]) == (0.5, 0.5, 0.5)
    with pytest.raises(ValueError, match="at least two values a side"):
        stats.mean_difference_interval([([1, 2], [3])])


def test_benjamini_hochberg_by_hand_and_against_scipy():
    # sorted 0.005, 0.01, 0.03, 0.04 times 4/1, 4/2, 4/3, 4/4 = 0.02, 0.02, 0.04, 0.04 (then the least
    # of each and those above it), back in the given order
    assert stats.benjamini_hochberg([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert stats.benjamini_hochberg([0.5]) == [0.5] and stats.benjamini_hochberg([]) == []
    assert stats.benjamini_hochberg([0.3, 0.9]) == pytest.approx([0.6, 0.9])  # 0.3 x 2 = 0.6, under 0.9
    scipy_stats = pytest.importorskip("scipy.stats")
    ps = [0.001, 0.2, 0.04, 0.04, 0.8, 0.012, 0.3]
    assert stats.benjamini_hochberg(ps) == pytest.approx(list(scipy_stats.false_discovery_control(ps)))
