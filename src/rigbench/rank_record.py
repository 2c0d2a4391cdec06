"""One rank's record in a data-parallel trial's Result (`Result.ranks`): what that process
reported of itself, summarised (analysis/ranks.py makes it from the rank's ChildReport).
The trial's own figures combine them (runner/launchers/merge.py, analysis/ranks.py: step time
the per-step maximum over ranks, memory as the largest rank's and the sum, each labelled); these
keep each rank's, so a straggler or a rank's memory can be read after the fact."""

from __future__ import annotations

from pydantic import BaseModel, Field


class RankRecord(BaseModel):
    rank: int = Field(..., ge=0)
    host: str | None = Field(None, description="the machine the rank ran on")
    status: str = Field(..., description="the rank's own status (ok, crash, oom, timeout, ...)")
    error: str | None = Field(None, description="the last line of its error (a traceback's exception, a crash's headline)")
    collateral: bool = Field(False, description="stopped because another rank failed or hung")
    device_name: str | None = None
    steps: int = Field(0, description="timed steps")
    step_time_ms_mean: float | None = None
    step_time_ms_median: float | None = None
    nosync_step_time_ms_median: float | None = Field(
        None, description="median step without gradient synchronisation (DDP no_sync)")
    comm_share: float | None = Field(
        None, description="1 - nosync median / median: the share of its step spent synchronising gradients")
    allocator_peak_mib: float | None = None
    rss_peak_mib: float | None = Field(None, description="the rank process's own peak resident memory")
    cpu_util_pct: float | None = Field(None, description="its CPU time per second (100 = every logical core busy)")
    param_digest: str | None = Field(None, description="sha256 of its parameters after the timed steps")
