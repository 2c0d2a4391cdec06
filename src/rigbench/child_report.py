"""What a child process writes back about its trial (ChildReport): the boundary between the
trial's process and the parent that assembles its Result (runner/assemble.py). Apart from
spec.py, which holds what a trial is and what it gave."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, model_validator

from rigbench.spec import EpochRecord, Status


class ChildReport(BaseModel):
    """What the child process writes back about its trial (JSON file): one per rank of a
    data-parallel trial, merged into the trial's by runner/launchers/merge.merge_reports.
    `rank` and `world_size` default to a single-process trial, so reports written before
    they existed still validate."""

    status: Status
    error: str | None = None
    rank: int = Field(0, ge=0, description="which process of the trial wrote this report")
    world_size: int = Field(1, ge=1, description="how many processes trained the trial together")
    params: int | None = None
    flops_per_sample: float | None = None
    device_name: str | None = None
    software: dict[str, Any] = Field(default_factory=dict)
    threads: int | None = None
    first_step_s: float | None = None
    warmup_s: float | None = None
    warmup_steps: int | None = None
    measure_start: float | None = None  # wall clock (time.time()) when timing began
    measure_end: float | None = None
    step_times_s: list[float] = Field(default_factory=list)
    step_windows: list[int] = Field(
        default_factory=list, description="steps timed together per window, in order (step_windows.py); "
                                          "empty: each step timed alone")
    losses: list[float] = Field(default_factory=list)
    measure_cpu_s: float | None = None  # the process's CPU seconds over the timed steps
    allocator_peak_bytes: int | None = None
    capped_peak_bytes: int | None = None  # under --memory-limit (runner/memory_cap.capped_peak_bytes)
    diverged_at_step: int | None = None
    # training runs (`rigbench train`)
    epochs: list[EpochRecord] = Field(default_factory=list)
    loss_curve: list[float] = Field(default_factory=list)  # training loss of every step
    train_samples: int | None = None
    test_samples: int | None = None
    diverged_at_epoch: int | None = None
    baseline_loss: float | None = None  # text: the unigram entropy of the training bytes (nats)
    # learning-rate range tests (`rigbench lr-find`): [lr, loss, smoothed loss] per step
    lr_curve: list[tuple[float, float, float]] = Field(default_factory=list)
    # estimated bytes moved to and from device memory per training sample (roofline)
    bytes_per_sample: float | None = None
    bytes_estimate_revision: int | None = None  # the adapter's TRAFFIC_REVISION that counted it
    # a data-parallel rank's own figures (runner/rank.py), None for one process
    host: str | None = Field(None, description="the machine the rank ran on")
    collateral: bool = Field(False, description="stopped by the launcher because another rank failed")
    nosync_step_times_s: list[float] = Field(
        default_factory=list, description="steps timed without gradient synchronisation (DDP no_sync)")
    rss_peak_bytes: int | None = Field(None, description="the rank process's own peak resident memory")
    cpu_util_pct: float | None = Field(
        None, description="the rank process's CPU time over its timed window (100 = every logical core busy)")
    allreduce_s: list[tuple[int, float]] = Field(
        default_factory=list, description="[bytes, median seconds] of the pre-run all-reduce check")
    param_digest: str | None = Field(None, description="sha256 of the parameters after the timed steps")
    param_sums: list[float] = Field(default_factory=list, description="each parameter tensor's sum, same moment")

    @model_validator(mode="after")
    def _rank_within_world(self) -> ChildReport:
        if self.rank >= self.world_size:
            raise ValueError(f"rank must be in [0, {self.world_size}), not {self.rank}")
        return self
