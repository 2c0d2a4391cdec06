"""A data-parallel trial's per-rank figures and what they add up to (pure; one set of rules for
every framework, also in docs/METHODOLOGY.md, "Data parallel"):

- step time: the per-step maximum over ranks (launchers/merge.py makes the trial's steps);
- straggler ratio = the slowest rank's mean step / the fastest rank's (1.0 = even);
- communication share = 1 - median(step without gradient sync) / median(step), both per-step
  maxima over the ranks: the share of a synchronous step spent in the gradient all-reduce
  (noise can put it slightly below 0 when there is almost nothing to synchronise);
- memory per rank, max and sum, each labelled as such: never a silent sum;
- replicas identical: every rank that finished holds the same parameters (sha256);
- all-reduce check (nccl-tests' method): per message size the slowest rank's median time t;
  algbw = bytes / t, busbw = algbw x 2(n-1)/n (the bytes each link carries in a ring
  all-reduce, comparable across rank counts); latency = the smallest message's time.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from rigbench.child_report import ChildReport
from rigbench.rank_record import RankRecord
from rigbench.textlimits import error_line

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
        error=error_line(report.error) or None,
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


def bus_bandwidth(nbytes: int, seconds: float, world_size: int) -> float:
    """nccl-tests' all-reduce bus bandwidth (B/s): (bytes / seconds) x 2(n-1)/n."""
    return nbytes / seconds * 2 * (world_size - 1) / world_size


def all_reduce_table(reports: Sequence[ChildReport]) -> list[tuple[int, float, float]]:
    """[(bytes, the slowest rank's median seconds, bus bandwidth B/s)] of the pre-run check,
    for the sizes every rank timed."""
    by_size: dict[int, list[float]] = {}
    for report in reports:
        for nbytes, seconds in report.allreduce_s:
            by_size.setdefault(nbytes, []).append(seconds)
    n = len(reports)
    return [(nbytes, max(times), bus_bandwidth(nbytes, max(times), n))
            for nbytes, times in sorted(by_size.items()) if len(times) == n and max(times) > 0]


def _all_reduce_metrics(reports: Sequence[ChildReport]) -> dict[str, Any]:
    table = all_reduce_table(reports)
    gradient_bytes = 4 * (reports[0].params or 0)
    at_gradients = next((row for row in table if row[0] == gradient_bytes), None)
    return {
        "allreduce_table": [list(row) for row in table] or None,
        "allreduce_latency_us": table[0][1] * 1e6 if table else None,
        "allreduce_grad_ms": at_gradients[1] * 1e3 if at_gradients else None,
        "allreduce_busbw_gbs": at_gradients[2] / 1e9 if at_gradients else None,
    }


def rank_metrics(reports: Sequence[ChildReport]) -> dict[str, Any]:
    """The trial's data-parallel metrics (metrics.py, source "ranks") from its ranks' reports,
    in rank order; {} for none. With one rank (--data-parallel), the figures that compare ranks
    are None: its comm share is the wrapper's own cost, and its all-reduce moves no bytes
    between ranks (bus bandwidth 0, as nccl-tests reports for one GPU)."""
    if not reports:
        return {}
    peers = len(reports) > 1
    means = [statistics.fmean(r.step_times_s) for r in reports if r.step_times_s]
    rss = [r.rss_peak_bytes for r in reports if r.rss_peak_bytes is not None]
    allocated = [r.allocator_peak_bytes for r in reports if r.allocator_peak_bytes is not None]
    digests = {r.param_digest for r in reports if r.status == "ok"}
    steps = per_step_max([r.step_times_s for r in reports])
    nosync = per_step_max([r.nosync_step_times_s for r in reports])
    return {
        "straggler_ratio": max(means) / min(means) if peers and len(means) == len(reports) and min(means) > 0 else None,
        "comm_share": comm_share(steps, nosync),
        "nosync_step_time_ms_median": _ms_median(nosync),
        "rank_rss_peak_mib_max": max(rss) / MIB if rss else None,
        "rank_rss_peak_mib_sum": sum(rss) / MIB if len(rss) == len(reports) else None,
        "rank_allocator_peak_mib_sum": sum(allocated) / MIB if len(allocated) == len(reports) else None,
        "replicas_identical": (len(digests) == 1 and None not in digests) if digests and peers else None,
        **_all_reduce_metrics(reports),
    }
