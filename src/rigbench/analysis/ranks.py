"""A data-parallel trial's per-rank figures and what they add up to (pure; the rules are
DESIGN.md's "Data parallel: one set of rules for every framework"):

- step time: the per-step maximum over ranks (launchers/merge.py makes the trial's steps);
- straggler ratio = the slowest rank's mean step / the fastest rank's (1.0 = even);
- communication share = 1 - median(step without gradient sync) / median(step), both per-step
  maxima over the ranks: the share of a synchronous step spent in the gradient all-reduce
  (noise can put it slightly below 0 when there is almost nothing to synchronise);
- memory per rank, max and sum, each labelled as such: never a silent sum;
- replicas identical: every rank that finished holds the same parameters (sha256).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from rigbench.rank_record import RankRecord
from rigbench.spec import ChildReport

MIB = 2**20


def _ms_median(times: Sequence[float]) -> float | None:
    return statistics.median(times) * 1e3 if times else None


def comm_share(step_times_s: Sequence[float], nosync_times_s: Sequence[float]) -> float | None:
    """1 - median(no-sync steps) / median(steps); None without both."""
    if not step_times_s or not nosync_times_s:
        return None
    return 1.0 - statistics.median(nosync_times_s) / statistics.median(step_times_s)


def rank_record(report: ChildReport) -> RankRecord:
    """The rank's record from its own report."""
    times = report.step_times_s
    return RankRecord(
        rank=report.rank, host=report.host, status=report.status,
        error=report.error.strip().splitlines()[0] if report.error and report.error.strip() else None,
        collateral=report.collateral, device_name=report.device_name, steps=len(times),
        step_time_ms_mean=statistics.fmean(times) * 1e3 if times else None,
        step_time_ms_median=_ms_median(times),
        nosync_step_time_ms_median=_ms_median(report.nosync_step_times_s),
        comm_share=comm_share(times, report.nosync_step_times_s),
        allocator_peak_mib=None if report.allocator_peak_bytes is None else report.allocator_peak_bytes / MIB,
        rss_peak_mib=None if report.rss_peak_bytes is None else report.rss_peak_bytes / MIB,
        cpu_util_pct=report.cpu_util_pct, param_digest=report.param_digest)


def per_step_max(series: Sequence[Sequence[float]]) -> list[float]:
    """Step i as its slowest rank took it (zip: as many steps as the shortest series)."""
    return [max(times) for times in zip(*series)]


def rank_metrics(reports: Sequence[ChildReport]) -> dict[str, Any]:
    """The trial's data-parallel metrics (metrics.py, source "ranks") from its ranks' reports,
    in rank order; {} for a single-process trial."""
    if len(reports) < 2:
        return {}
    means = [statistics.fmean(r.step_times_s) for r in reports if r.step_times_s]
    rss = [r.rss_peak_bytes for r in reports if r.rss_peak_bytes is not None]
    allocated = [r.allocator_peak_bytes for r in reports if r.allocator_peak_bytes is not None]
    digests = {r.param_digest for r in reports if r.status == "ok"}
    steps = per_step_max([r.step_times_s for r in reports])
    nosync = per_step_max([r.nosync_step_times_s for r in reports])
    return {
        "straggler_ratio": max(means) / min(means) if len(means) == len(reports) and min(means) > 0 else None,
        "comm_share": comm_share(steps, nosync),
        "nosync_step_time_ms_median": _ms_median(nosync),
        "rank_rss_peak_mib_max": max(rss) / MIB if rss else None,
        "rank_rss_peak_mib_sum": sum(rss) / MIB if len(rss) == len(reports) else None,
        "rank_allocator_peak_mib_sum": sum(allocated) / MIB if len(allocated) == len(reports) else None,
        "replicas_identical": (len(digests) == 1 and None not in digests) if digests else None,
    }
