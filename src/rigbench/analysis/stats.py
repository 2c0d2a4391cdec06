"""Statistics of step times and tracker samples. Pure functions, no I/O.

Conventions (docs/METHODOLOGY.md): percentiles use linear interpolation between order
statistics (numpy's default, "type 7" in Hyndman & Fan 1996); the IQR is p75 - p25; a
median's interval is a pair of order statistics (median_ci); the bootstrap resamples with a
fixed seed so the same samples always give the same interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

from rigbench.step_windows import timing_samples

#: Coefficient of variation above which a result is flagged noisy.
NOISY_CV = 0.10


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100), linear interpolation. Raises ValueError on no values."""
    if len(values) == 0:
        raise ValueError("percentile of no values")
    return float(np.percentile(np.asarray(values, dtype=float), q))


def median(values: Sequence[float]) -> float:
    return percentile(values, 50)


def iqr(values: Sequence[float]) -> float:
    """Interquartile range p75 - p25."""
    return percentile(values, 75) - percentile(values, 25)


def mean(values: Sequence[float]) -> float:
    if len(values) == 0:
        raise ValueError("mean of no values")
    return float(np.mean(np.asarray(values, dtype=float)))


def geometric_mean(values: Sequence[float]) -> float:
    """exp(mean(log v)): a configuration's figure from its repeats, and a score from speed-ups
    (a ratio of two geometric means is the geometric mean of the ratios)."""
    if len(values) == 0 or any(v <= 0 for v in values):
        raise ValueError("geometric mean needs positive values")
    if all(v == values[0] for v in values):  # exactly the one value, not exp(log(v)) off by an ulp
        return float(values[0])
    product = math.prod(values)  # exact where it can be (sqrt(160 x 250) = 200.0); logs past overflow
    if math.isfinite(product) and product > 0:
        return float(product ** (1 / len(values)))
    return math.exp(sum(math.log(v) for v in values) / len(values))


def coefficient_of_variation(values: Sequence[float]) -> float:
    """Sample standard deviation (ddof=1) over the mean; 0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    arr = np.asarray(values, dtype=float)
    m = float(arr.mean())
    return float(arr.std(ddof=1) / m) if m else 0.0


#: Student's t, the 97.5th percentile by degrees of freedom (1-30; t_975 computes it beyond): the
#: two-sided 95% interval of a mean from few values, where a bootstrap understates the spread.
T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
         2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
         2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t_interval(values: Sequence[float]) -> tuple[float, float]:
    """The 95% Student-t interval of the mean of `values` (at least two)."""
    arr = np.asarray(values, dtype=float)
    if arr.size < 2:
        raise ValueError("a t interval needs at least two values")
    half = t_975(arr.size - 1) * float(arr.std(ddof=1)) / math.sqrt(arr.size)
    return float(arr.mean()) - half, float(arr.mean()) + half


def t_975(df: float) -> float:
    """Student's t, 97.5th percentile, at `df` degrees of freedom rounded down (a smaller df
    gives a wider interval: the conservative side), at least 1. Beyond the table, the
    Cornish-Fisher series in 1/df (Abramowitz & Stegun 26.7.5), exact to 5 decimals there. It
    was 1.96, the normal's: 4% narrower than t at 31 degrees of freedom, which a score's Welch
    interval over 8 workloads with 3 trials a side reaches (8 x 2 x 2)."""
    whole = max(int(math.floor(df)), 1)
    if whole <= len(T_975):
        return T_975[whole - 1]
    z = NormalDist().inv_cdf(0.975)
    terms = ((z ** 3 + z) / 4, (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96,
             (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384,
             (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / 92160)
    return z + sum(term / whole ** power for power, term in enumerate(terms, 1))


def welch_interval(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float]:
    """mean(b) - mean(a) with its 95% Welch interval (unequal variances, Welch-Satterthwaite
    degrees of freedom), as (difference, low, high); each side needs at least two values."""
    return mean_difference_interval([(a, b)])


def mean_difference_interval(groups: Sequence[tuple[Sequence[float], Sequence[float]]]) -> tuple[float, float, float]:
    """The mean over `groups` of mean(b) - mean(a), with its 95% Welch interval, as (difference,
    low, high): the variances of the side means added (independent sides, unequal variances),
    Welch-Satterthwaite degrees of freedom over every side (t_975 rounds them down). One group
    is Welch's two-sample interval; every side needs at least two values."""
    diff, se, df = _welch(groups)
    half = t_975(df) * se
    return diff, diff - half, diff + half


def welch_p(a: Sequence[float], b: Sequence[float]) -> float:
    """The two-sided p of Welch's t test of mean(b) = mean(a), at the Welch-Satterthwaite degrees
    of freedom as they are (scipy.stats.ttest_ind's): welch_interval rounds them down, a little
    wider, so a p just under 0.05 can come with an interval that reaches 0."""
    diff, se, df = _welch([(a, b)])
    if se == 0:
        return 1.0 if diff == 0 else 0.0
    return t_two_sided_p(diff / se, df)


def _welch(groups: Sequence[tuple[Sequence[float], Sequence[float]]]) -> tuple[float, float, float]:
    """(mean over groups of mean(b) - mean(a), its standard error, Welch-Satterthwaite df); the df
    is the values less one a side, summed, where every side's values are all equal."""
    sides = [np.asarray(side, dtype=float) for group in groups for side in group]
    if not groups or any(side.size < 2 for side in sides):
        raise ValueError("a Welch interval needs at least two values a side")
    diff = sum(float(np.mean(b)) - float(np.mean(a)) for a, b in groups) / len(groups)
    shares = [float(side.var(ddof=1)) / side.size / len(groups) ** 2 for side in sides]  # each side's part of se^2
    se = math.sqrt(sum(shares))
    spread = sum(v * v / (side.size - 1) for v, side in zip(shares, sides))
    df = sum(shares) ** 2 / spread if spread > 0 else float(sum(side.size - 1 for side in sides))
    return diff, se, df


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t at `df` (at least 1, not necessarily whole) degrees of freedom, by
    Simpson's rule over 4,000 intervals: of the density from 0 to |t| up to 1, else of the tail
    itself (x = |t| / s, s in (0, 1]), which keeps a tiny p's digits."""
    if df < 1:
        raise ValueError(f"t_two_sided_p takes at least 1 degree of freedom, got {df}")
    size = abs(t)

    def density(x: np.ndarray) -> np.ndarray:
        return np.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
                      - (df + 1) / 2 * np.log1p(x * x / df))

    s = np.linspace(0.0, 1.0, 4001)
    weights = np.r_[1, np.tile([4, 2], 2000)[:-1], 1] / (3 * 4000)
    if size <= 1:
        return float(1 - 2 * size * (weights * density(size * s)).sum())
    # the tail: f(|t| / s) |t| / s^2, which tends to 0 at s = 0 above df 1 (to 1 / (pi |t|) at df 1)
    tail = np.r_[1 / (math.pi * size) if df == 1 else 0.0, density(size / s[1:]) * size / (s[1:] * s[1:])]
    return float(min(1.0, 2 * (weights * tail).sum()))


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """The p-values of tests made together, adjusted by Benjamini & Hochberg (1995), in their
    order: the k-th smallest times m / k, then each the least of itself and those above it,
    capped at 1. Calling those under alpha keeps the expected share of false calls among the
    calls at most alpha, and where nothing differs the chance of any call at most alpha."""
    m = len(p_values)
    adjusted, running = [1.0] * m, 1.0
    for rank, i in reversed(list(enumerate(sorted(range(m), key=lambda j: p_values[j]), 1))):
        running = min(running, p_values[i] * m / rank)
        adjusted[i] = min(1.0, running)
    return adjusted


def bootstrap_ci(values: Sequence[float], stat=np.median, confidence: float = 0.95,
                 resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval of `stat` over `values`.

    With a single value the interval collapses to that value.
    """
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        raise ValueError("bootstrap of no values")
    if arr.size == 1:
        return float(arr[0]), float(arr[0])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, arr.size, size=(resamples, arr.size))
    stats = stat(arr[idx], axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.percentile(stats, [100 * alpha, 100 * (1 - alpha)])
    return float(low), float(high)


#: The fewest values with a 95% interval of their median: their range holds it with probability
#: 1 - 2^(1 - n), 94% at 5, 97% at 6 (for independent values; correlated ones need more).
MEDIAN_CI_MIN = 6

#: The largest lag-1 autocorrelation median_ci counts (estimates above it are read as it): it
#: keeps the effective sample size at 1/19 of the count, not 0.
MAX_LAG1 = 0.9


def lag1_autocorrelation(values: Sequence[float] | np.ndarray) -> float:
    """The lag-1 autocorrelation of the ranks of `values` (ties at their mean rank): how much a
    measurement resembles the one before it; 0 for fewer than three values or all equal."""
    if len(values) < 3:
        return 0.0
    centred = _average_ranks(np.asarray(values, dtype=float))
    centred -= centred.mean()
    total = float((centred * centred).sum())
    return float((centred[1:] * centred[:-1]).sum() / total) if total else 0.0


def median_ci(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Confidence interval of the median of `values`, measurements in the order taken: a pair of
    their order statistics, free of any assumed distribution (docs/METHODOLOGY.md, Statistics).

    The ranks are the binomial's (normal approximation with a continuity correction: the exact
    ranks, or one rank wider), its variance widened by (1 + r) / (1 - r) for the measurements'
    lag-1 autocorrelation r (lag1_autocorrelation, read as 0 below 0 and at most MAX_LAG1):
    consecutive steps share the machine's state, and correlated measurements tell less than as
    many independent ones. Fewer than MEDIAN_CI_MIN values reach no 95% interval; then it is
    their range, which holds the median with probability 1 - 2^(1 - n) (75% at 3)."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        raise ValueError("interval of no values")
    r = min(max(lag1_autocorrelation(arr), 0.0), MAX_LAG1)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    n = arr.size
    k = math.floor(n / 2 + 0.5 - z * math.sqrt(n * (1 + r) / (1 - r)) / 2)
    k = min(max(k, 1), (n + 1) // 2)  # the k-th smallest and the k-th largest, 1-based
    ordered = np.sort(arr)
    return float(ordered[k - 1]), float(ordered[n - k])


def block_length(values: Sequence[float] | np.ndarray) -> int:
    """The moving-block bootstrap's block for measurements in the order taken: (1 + r) / (1 - r)
    of them, rounded up, for their lag-1 autocorrelation r (read as median_ci reads it: 0 to
    MAX_LAG1); 1 for independent ones, 3 at the 0.43 of the dev VM's reference; at most a
    quarter of them (four blocks at least: fewer drew worse intervals than blocks of 1 at 5-10
    steps, benchmarks/stats_calibration.py --only ratio)."""
    arr = np.asarray(values, dtype=float)
    r = min(max(lag1_autocorrelation(arr), 0.0), MAX_LAG1)
    return max(1, min(math.ceil((1 + r) / (1 - r) - 1e-9), arr.size // 4))


def resampled_medians(values: Sequence[float] | np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """`resamples` bootstrap replicates of the median of `values` (in the order taken), drawn in
    runs of block_length consecutive ones (a moving-block bootstrap): consecutive steps share the
    machine's state, and drawn one by one, correlated steps read as many independent ones
    (docs/METHODOLOGY.md, "Are the intervals right?"). With blocks of 1 the draws are the plain
    bootstrap's, number for number."""
    arr = np.asarray(values, dtype=float)
    length = block_length(arr)
    starts = rng.integers(0, arr.size - length + 1, size=(resamples, -(-arr.size // length), 1))
    return np.median(arr[(starts + np.arange(length)).reshape(resamples, -1)[:, :arr.size]], axis=1)


def throughput_summary(step_times_s: Sequence[float], batch_size: int,
                       windows: Sequence[int] = ()) -> dict[str, float | bool | int]:
    """Summary of timed steps: median/IQR step time (ms), samples/s with its 95% CI, noise.

    samples/s is batch / median step time; its CI is median_ci of the step times mapped
    through the same formula (a slower step gives the lower bound). Where steps
    were timed together in `windows` (rigbench/step_windows.py), the median, interval, spread
    and noise are over the windows' means, one figure per measurement; the mean and the count
    are over steps.
    """
    if len(step_times_s) == 0:
        raise ValueError("no step times")
    samples = timing_samples(step_times_s, windows)
    med = median(samples)
    low, high = median_ci(samples)
    cv = coefficient_of_variation(samples)
    return {
        "step_time_ms_median": med * 1e3,
        "step_time_ms_iqr": iqr(samples) * 1e3,
        "step_time_ms_mean": mean(step_times_s) * 1e3,
        "step_time_cv": cv,
        "noisy": cv > NOISY_CV,
        "samples_per_s": batch_size / med,
        "samples_per_s_ci_low": batch_size / high,
        "samples_per_s_ci_high": batch_size / low,
        "steps_measured": len(step_times_s),
    }


#: Mann-Whitney U: exact null distribution when both samples have at most this many values and
#: no ties; the normal approximation (tie- and continuity-corrected) otherwise.
MWU_EXACT_MAX = 20


def mann_whitney_u(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Two-sided Mann-Whitney U test of `a` against `b`: returns (U of `a`, p-value).

    U of `a` counts the pairs (x in a, y in b) with x > y, ties counting 1/2. The p-value is
    exact (counted over every ranking) for small samples without ties, else the normal
    approximation with tie correction and a continuity correction of 0.5 (Mann & Whitney
    1947; the same conventions as scipy.stats.mannwhitneyu's 'exact' and 'asymptotic').
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n1, n2 = x.size, y.size
    if n1 == 0 or n2 == 0:
        raise ValueError("Mann-Whitney U needs values in both samples")
    both = np.concatenate([x, y])
    ranks = _average_ranks(both)
    u1 = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2)
    _, counts = np.unique(both, return_counts=True)
    has_ties = bool((counts > 1).any())
    if not has_ties and max(n1, n2) <= MWU_EXACT_MAX:
        return u1, _mwu_exact_p(u1, n1, n2)
    n = n1 + n2
    mu = n1 * n2 / 2
    tie_term = float((counts**3 - counts).sum()) / (n * (n - 1))
    var = n1 * n2 / 12 * ((n + 1) - tie_term)
    if var <= 0:  # every value equal: no evidence of any difference
        return u1, 1.0
    z = max(abs(u1 - mu) - 0.5, 0.0) / math.sqrt(var)
    return u1, min(1.0, math.erfc(z / math.sqrt(2)))


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n, tied values sharing the mean of their ranks."""
    order = np.argsort(values, kind="mergesort")
    sorted_vals = values[order]
    first = np.r_[True, sorted_vals[1:] != sorted_vals[:-1]]  # each run of equal values
    starts = np.flatnonzero(first)
    ends = np.r_[starts[1:], values.size] - 1
    ranks = np.empty(values.size, dtype=float)
    ranks[order] = ((starts + ends) / 2 + 1)[np.cumsum(first) - 1]
    return ranks


def _mwu_exact_p(u: float, n1: int, n2: int) -> float:
    """Two-sided exact p of U = u: 2 * P(U <= min(u, n1*n2 - u)) under H0, capped at 1.

    counts[k] is the number of rankings with U = k, built by the recurrence
    f(n1, n2, k) = f(n1 - 1, n2, k - n2) + f(n1, n2 - 1, k) (Mann & Whitney 1947)."""
    # table[j][k]: rankings of i values of `a` among j values of `b` with U = k, for the current i
    table = [[1] + [0] * (n1 * n2) for _ in range(n2 + 1)]  # i = 0: only U = 0
    for i in range(1, n1 + 1):
        new = [[0] * (n1 * n2 + 1) for _ in range(n2 + 1)]
        new[0][0] = 1
        for j in range(1, n2 + 1):
            for k in range(i * j + 1):
                # the largest value is from `a` (it beats all j of b) or from `b`
                new[j][k] = (table[j][k - j] if k >= j else 0) + new[j - 1][k]
        table = new
    counts = table[n2]
    total = math.comb(n1 + n2, n1)
    low = int(math.floor(min(u, n1 * n2 - u) + 1e-9))
    return min(1.0, 2 * sum(counts[:low + 1]) / total)
