"""Statistics of step times and tracker samples. Pure functions, no I/O.

Conventions (docs/METHODOLOGY.md): percentiles use linear interpolation between order
statistics (numpy's default, "type 7" in Hyndman & Fan 1996); the IQR is p75 - p25; the
bootstrap resamples with a fixed seed so the same samples always give the same interval.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

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


def coefficient_of_variation(values: Sequence[float]) -> float:
    """Sample standard deviation (ddof=1) over the mean; 0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    arr = np.asarray(values, dtype=float)
    m = float(arr.mean())
    return float(arr.std(ddof=1) / m) if m else 0.0


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


def throughput_summary(step_times_s: Sequence[float], batch_size: int) -> dict[str, float | bool | int]:
    """Summary of timed steps: median/IQR step time (ms), samples/s with its 95% CI, noise.

    samples/s is batch / median step time; its CI is the bootstrap CI of the median step
    time mapped through the same formula (a slower step gives the lower bound).
    """
    if len(step_times_s) == 0:
        raise ValueError("no step times")
    med = median(step_times_s)
    low, high = bootstrap_ci(step_times_s)
    cv = coefficient_of_variation(step_times_s)
    return {
        "step_time_ms_median": med * 1e3,
        "step_time_ms_iqr": iqr(step_times_s) * 1e3,
        "step_time_ms_mean": mean(step_times_s) * 1e3,
        "step_time_cv": cv,
        "noisy": cv > NOISY_CV,
        "samples_per_s": batch_size / med,
        "samples_per_s_ci_low": batch_size / high,
        "samples_per_s_ci_high": batch_size / low,
        "steps_measured": len(step_times_s),
    }
