"""Summarise tracker samples over the timed window of a trial."""

from __future__ import annotations

from collections.abc import Sequence

from rigbench.analysis.stats import mean, median, percentile

MIB = 1024 * 1024

#: summary key -> (sample key, statistic); "peak" values are divided into MiB.
_FIELDS: dict[str, tuple[str, str]] = {
    "cpu_util_pct_mean": ("proc_cpu_pct", "mean"),
    "cpu_util_pct_p95": ("proc_cpu_pct", "p95"),
    "system_cpu_pct_mean": ("sys_cpu_pct", "mean"),
    "system_cpu_pct_p95": ("sys_cpu_pct", "p95"),
    "rss_peak_mib": ("rss_bytes", "peak"),
    "gpu_util_pct_mean": ("gpu_util_pct", "mean"),
    "gpu_util_pct_p95": ("gpu_util_pct", "p95"),
    "gpu_mem_peak_mib": ("gpu_mem_bytes", "peak"),
    "gpu_power_w_mean": ("gpu_power_w", "mean"),
}


def summarize(samples: Sequence[dict], start: float, end: float,
              interval_slack: float | None = None) -> dict[str, float | int | None]:
    """Utilisation and peak memory over the wall-clock window [start, end].

    Window rule: a sample taken at time t describes the interval since the previous
    sample, so it is kept when that interval overlaps the window, i.e. when

        start < t <= end + interval_slack

    (exclusive at start: a sample taken at `start` describes only time before it;
    inclusive at end + slack). `interval_slack` defaults to the median spacing of the
    samples' times (0 with fewer than two samples); the runner should pass its sampling
    interval. With the default, at most one sample at each edge reaches outside the window.

    Means and p95 (linear interpolation, rigbench.analysis.stats) are unweighted over the
    kept samples; `rss_peak_mib` and `gpu_mem_peak_mib` are the maxima over them.

    Empty window (a window shorter than the sampling interval, or a tracker that lagged):
    the first sample taken after `end` stands in for the window, for the percentages and
    the peaks alike, and `samples_in_window` is 0 to say so. With no such sample either,
    every value is None. A key is None when no kept sample has a value for it (e.g. all
    GPU keys without a GPU).
    """
    slack = _default_slack(samples) if interval_slack is None else interval_slack
    kept = [s for s in samples if start < s["t"] <= end + slack]
    count = len(kept)
    if not kept:
        after = sorted((s for s in samples if s["t"] > end), key=lambda s: s["t"])
        kept = after[:1]
    result: dict[str, float | int | None] = {
        key: _statistic([s.get(field) for s in kept], stat) for key, (field, stat) in _FIELDS.items()
    }
    result["samples_in_window"] = count
    return result


def _default_slack(samples: Sequence[dict]) -> float:
    times = sorted(s["t"] for s in samples)
    gaps = [b - a for a, b in zip(times, times[1:])]
    return median(gaps) if gaps else 0.0


def _statistic(values: list, stat: str) -> float | None:
    present = [float(v) for v in values if v is not None]
    if not present:
        return None
    if stat == "mean":
        return mean(present)
    if stat == "p95":
        return percentile(present, 95)
    return max(present) / MIB
