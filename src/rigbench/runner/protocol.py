"""The measurement protocol, run inside the trial's child process.

1. Warm-up: at least `warmup_steps` steps and `warmup_seconds`, untimed per step; the first
   step's time (allocation, kernel selection, compilation) is reported on its own.
2. Timing: each step bracketed by the device's own timer (CUDA events on NVIDIA/ROCm, a
   host clock plus device synchronisation elsewhere) until both `min_steps` and
   `min_seconds` are reached (or `max_steps`). Steps are queued without a host sync, and
   losses are read back once at the end, so the measurement does not add syncs to the loop.
3. Non-finite losses (warm-up or timed) end the trial as `diverged`.

The wall-clock window of step 2 is reported so the parent can summarise its trackers over
exactly that window.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from rigbench.errors import DivergedError
from rigbench.frameworks.base import Trainer
from rigbench.spec import MeasureOptions


@dataclass
class Measurement:
    first_step_s: float
    warmup_s: float
    warmup_steps: int
    measure_start: float
    measure_end: float
    step_times_s: list[float] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)


def _check_finite(losses: list[float], first_step: int) -> None:
    for i, value in enumerate(losses):
        if not math.isfinite(value):
            step = first_step + i
            raise DivergedError(f"loss became {value} at step {step}", step=step)


def measure(trainer: Trainer, opts: MeasureOptions) -> Measurement:
    """Warm up, then time steps per the protocol above. Raises DivergedError."""
    clock = time.perf_counter
    start = clock()
    handles = [trainer.step()]
    trainer.synchronize()
    first_step_s = clock() - start
    while len(handles) < opts.warmup_steps or clock() - start < opts.warmup_seconds:
        handles.append(trainer.step())
    trainer.synchronize()
    warmup_s = clock() - start
    warmup_steps = len(handles)
    _check_finite(trainer.loss_values(handles), first_step=1)

    trainer.reset_peak_memory()
    timer = trainer.step_timer()
    handles = []
    measure_start = time.time()
    t0 = clock()
    # The loop condition reads a host clock only; on asynchronous devices the host runs at
    # most a launch queue ahead, which decides only when to stop, not what is measured.
    while len(handles) < opts.max_steps and (
        len(handles) < opts.min_steps or clock() - t0 < opts.min_seconds
    ):
        timer.start()
        handles.append(trainer.step())
        timer.stop()
    trainer.synchronize()
    measure_end = time.time()
    losses = trainer.loss_values(handles)
    _check_finite(losses, first_step=warmup_steps + 1)
    return Measurement(first_step_s, warmup_s, warmup_steps, measure_start, measure_end,
                       timer.elapsed_s(), losses)
