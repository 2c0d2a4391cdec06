"""Summarise tracker samples over the timed window of a trial."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rigbench.analysis.stats import mean, median, percentile
from rigbench.trackers.energy import CPU_KEY, DRAM_KEY, GPU_KEY

MIB = 1024 * 1024

Statistic = Literal["mean", "p95", "peak", "peak_mib", "delta", "rate_mean", "rate_peak"]


@dataclass(frozen=True)
class TrackerField:
    """One metric a tracker produces: a statistic of one sample key over the measured window.
    `peak` is the maximum as sampled; `peak_mib` the maximum of a byte count, in MiB; `delta`
    the increase of a cumulative counter across the window (interpolated at its edges);
    `rate_mean` that increase per second, `rate_peak` the highest rate between two consecutive
    samples inside the window (a counter of joules gives watts)."""

    metric: str  # a name in rigbench.metrics.METRICS
    sample_key: str  # a key of the tracker's samples (trackers/sampler.py's docstring)
    statistic: Statistic


#: The fields each tracker produces: `cpu` is the psutil sampler (trackers/sampler.py), `nvml`
#: the NVIDIA GPU readings it adds when the trial runs on a GPU (nvml.gpu_sample), `energy` the
#: cumulative energy counters (trackers/energy.py). The runner
#: copies exactly these (ALL_FIELDS) into Metrics; a test checks each is a defined metric with one source.
TRACKER_FIELDS: dict[str, tuple[TrackerField, ...]] = {
    "cpu": (
        TrackerField("cpu_util_pct_mean", "proc_cpu_pct", "mean"),
        TrackerField("cpu_util_pct_p95", "proc_cpu_pct", "p95"),
        TrackerField("system_cpu_pct_mean", "sys_cpu_pct", "mean"),
        TrackerField("system_cpu_pct_p95", "sys_cpu_pct", "p95"),
        TrackerField("others_cpu_pct_mean", "others_cpu_pct", "mean"),
        TrackerField("rss_peak_mib", "rss_bytes", "peak_mib"),
    ),
    "nvml": (
        TrackerField("gpu_util_pct_mean", "gpu_util_pct", "mean"),
        TrackerField("gpu_util_pct_p95", "gpu_util_pct", "p95"),
        TrackerField("gpu_mem_peak_mib", "gpu_mem_bytes", "peak_mib"),
        TrackerField("gpu_power_w_mean", "gpu_power_w", "mean"),
        TrackerField("gpu_power_w_peak", "gpu_power_w", "peak"),
        TrackerField("gpu_other_processes_max", "gpu_other_procs", "peak"),
        TrackerField("gpu_others_sm_pct_mean", "gpu_others_sm_pct", "mean"),
    ),
    "energy": (
        TrackerField("gpu_energy_j", GPU_KEY, "delta"),
        TrackerField("cpu_energy_j", CPU_KEY, "delta"),
        TrackerField("dram_energy_j", DRAM_KEY, "delta"),
        TrackerField("cpu_power_w_mean", CPU_KEY, "rate_mean"),
        TrackerField("cpu_power_w_peak", CPU_KEY, "rate_peak"),
        TrackerField("dram_power_w_mean", DRAM_KEY, "rate_mean"),
        TrackerField("dram_power_w_peak", DRAM_KEY, "rate_peak"),
    ),
}

#: Every tracker field, in declaration order.
ALL_FIELDS: tuple[TrackerField, ...] = tuple(f for fields in TRACKER_FIELDS.values() for f in fields)


def summarize(samples: Sequence[dict], start: float, end: float,
              interval_slack: float | None = None) -> dict[str, float | int | None]:
    """Utilisation, peak memory and GPU power over the wall-clock window [start, end].

    Window rule: a sample taken at time t describes the interval since the previous
    sample, so it is kept when that interval overlaps the window, i.e. when

        start < t <= end + interval_slack

    (exclusive at start: a sample taken at `start` describes only time before it;
    inclusive at end + slack). `interval_slack` defaults to the median spacing of the
    samples' times (0 with fewer than two samples); the runner should pass its sampling
    interval. With the default, at most one sample at each edge reaches outside the window.

    Means and p95 (linear interpolation, rigbench.analysis.stats) are unweighted over the
    kept samples; peaks (`rss_peak_mib`, `gpu_mem_peak_mib`, `gpu_power_w_peak`) are the
    maxima over them. The keys are the metric names of ALL_FIELDS, plus `samples_in_window`.

    Empty window (a window shorter than the sampling interval, or a tracker that lagged):
    the first sample taken after `end` stands in for the window, for the percentages and
    the peaks alike, and `samples_in_window` is 0 to say so. With no such sample either,
    every value is None. A key is None when no kept sample has a value for it (e.g. all
    GPU keys without a GPU). Counter fields (`delta`, `rate_mean`, `rate_peak`: energy) do
    not use the kept samples: see counter_delta.
    """
    slack = _default_slack(samples) if interval_slack is None else interval_slack
    kept = [s for s in samples if start < s["t"] <= end + slack]
    count = len(kept)
    if not kept:
        after = sorted((s for s in samples if s["t"] > end), key=lambda s: s["t"])
        kept = after[:1]
    result: dict[str, float | int | None] = {
        f.metric: (_counter_statistic(samples, f.sample_key, start, end, f.statistic)
                   if f.statistic in ("delta", "rate_mean", "rate_peak")
                   else _statistic([s.get(f.sample_key) for s in kept], f.statistic))
        for f in ALL_FIELDS
    }
    result["samples_in_window"] = count
    return result


def _default_slack(samples: Sequence[dict]) -> float:
    times = sorted(s["t"] for s in samples)
    gaps = [b - a for a, b in zip(times, times[1:])]
    return median(gaps) if gaps else 0.0


def _statistic(values: list, stat: Statistic) -> float | None:
    present = [float(v) for v in values if v is not None]
    if not present:
        return None
    if stat == "mean":
        return mean(present)
    if stat == "p95":
        return percentile(present, 95)
    if stat == "peak":
        return max(present)
    return max(present) / MIB


def _counter_statistic(samples: Sequence[dict], key: str, start: float, end: float,
                       stat: Statistic) -> float | None:
    delta = counter_delta(samples, key, start, end)
    if delta is None or stat == "delta":
        return delta
    if stat == "rate_mean":
        return delta / (end - start) if end > start else None
    points = sorted((float(s["t"]), float(s[key])) for s in samples
                    if s.get(key) is not None and start <= s["t"] <= end)
    rates = [(v1 - v0) / (t1 - t0) for (t0, v0), (t1, v1) in zip(points, points[1:]) if t1 > t0]
    return max(rates) if rates else delta / (end - start) if end > start else None


def counter_delta(samples: Sequence[dict], key: str, start: float, end: float) -> float | None:
    """How much the cumulative series `key` grew between `start` and `end`.

    The series is linearly interpolated at both times between the samples around them, so the
    window need not fall on a sample (at 10 Hz an edge lands within 50 ms of one; linear
    interpolation assumes steady power across that gap). None when the series does not reach
    from at or before `start` to at or after `end` (a source that was not read, or sampling
    that ended early): an energy figure is measured or absent, never extrapolated.
    """
    points = sorted((float(s["t"]), float(s[key])) for s in samples if s.get(key) is not None)
    if not points or points[0][0] > start or points[-1][0] < end or end < start:
        return None
    return _interpolate(points, end) - _interpolate(points, start)


def _interpolate(points: list[tuple[float, float]], t: float) -> float:
    """The series' value at `t` (points sorted by time; t within their range)."""
    for (t0, v0), (t1, v1) in zip(points, points[1:]):
        if t0 <= t <= t1:
            return v0 if t1 == t0 else v0 + (v1 - v0) * (t - t0) / (t1 - t0)
    return points[-1][1]  # t is the last point's time (a single point: start == end)
