"""The measurement protocol, run inside the trial's child process.

1. Warm-up: at least `warmup_steps` steps and `warmup_seconds` after the first step, untimed
   per step; the first step's time (allocation, kernel selection, compilation) is reported on
   its own.
2. Timing: each step bracketed by the device's own timer (CUDA events on NVIDIA/ROCm, a
   host clock elsewhere, which on an asynchronous device waits for it once per window of
   about 0.1 s of steps: frameworks/host_timer.py; the warm-up's mean step after the first
   sizes the first window, so there the warm-up is at least two steps) until both `min_steps` and `min_seconds`
   are reached (or `max_steps`). Steps are queued without a host sync in between, and
   losses are read back once at the end, so the measurement adds no sync to every step.
3. Non-finite losses (warm-up or timed) end the trial as `diverged`.

Agreed steps (`agree` given): the processes of a data-parallel trial must take the same
number of steps, or a rank that stops early leaves the others waiting in an all-reduce. So
no loop stops on a process's own clock. Each process warms up for max(`warmup_steps`, 2)
steps, estimates from the steps after the first how many more it needs for
`warmup_seconds`, and after warm-up how many timed steps it needs for `min_steps` and
`min_seconds` (at most `max_steps`). `agree` combines each estimate across the processes
(an all-reduce MAX in a launcher) and every process runs exactly the agreed number.
Step counts then hold exactly, the seconds as far as warm-up steps predict later ones.

The wall-clock window of step 2 is reported so the parent can summarise its trackers over
exactly that window.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rigbench.child_report import ChildReport
from rigbench.errors import DivergedError
from rigbench.frameworks.base import Trainer
from rigbench.frameworks.host_timer import expect_step, windowed
from rigbench.spec import MeasureOptions
from rigbench.units import clock as clock_text


@dataclass
class Measurement:
    first_step_s: float
    warmup_s: float
    warmup_steps: int
    measure_start: float
    measure_end: float
    step_times_s: list[float] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    #: CPU seconds (user + system, every thread of the process) over the timed steps: beside
    #: wall time, a figure meant to be less moved by other processes (on the 2-core dev VM it
    #: was not: docs/results/self_check.md).
    cpu_s: float | None = None
    #: How the timer timed the steps, where it says (host_timer.HostTimer.description).
    timer: str | None = None
    #: Steps timed together per window, where the timer waited once per window (step_windows.py).
    step_windows: list[int] = field(default_factory=list)

    def record(self, report: ChildReport) -> None:
        """The measurement's figures into the child's `report` (one process or one rank)."""
        report.first_step_s, report.warmup_s, report.warmup_steps = self.first_step_s, self.warmup_s, self.warmup_steps
        report.measure_start, report.measure_end = self.measure_start, self.measure_end
        report.step_times_s, report.losses, report.measure_cpu_s = self.step_times_s, self.losses, self.cpu_s
        report.step_windows = self.step_windows
        if self.timer:
            report.software["timer"] = self.timer


def _check_finite(losses: list[float], first_step: int) -> None:
    for i, value in enumerate(losses):
        if not math.isfinite(value):
            step = first_step + i
            raise DivergedError(f"loss became {value} at step {step}", step=step)


def steps_for(seconds: float, step_s: float, at_least: int, at_most: int) -> int:
    """How many steps of `step_s` seconds last `seconds`, kept within [at_least, at_most]
    (the agreed-steps mode's estimate)."""
    if seconds <= 0:
        needed = at_least
    elif step_s <= 0:  # steps below the clock's resolution: the clock loop would hit the cap
        needed = at_most
    else:
        needed = max(at_least, math.ceil(seconds / step_s))
    return min(needed, at_most)


def warmup_step_s(first_step_s: float, warmup_s: float, warmup_steps: int) -> float:
    """Mean time of a warm-up step after the first one (the first one includes allocation
    and compilation); the first step's time if it was the only one."""
    if warmup_steps <= 1:
        return first_step_s
    return (warmup_s - first_step_s) / (warmup_steps - 1)


def _agreed(agree: Callable[[int], int], estimate: int, at_least: int) -> int:
    agreed = agree(estimate)
    if agreed < at_least:
        raise ValueError(f"the processes agreed on {agreed} steps; at least {at_least} are needed")
    return agreed


def timing_phase(opts: MeasureOptions, step_s: float, agreed: int | None = None) -> str:
    """The timing phase in words, with how long it should take at the warm-up's pace (`step_s`
    a step): "timing: at least 10 steps and 2 s, about 0:01:10 at the warm-up's pace"."""
    if agreed is not None:
        steps, seconds = f"{agreed} steps", agreed * step_s
    else:
        steps = f"at least {opts.min_steps} steps and {opts.min_seconds:g} s"
        seconds = min(max(opts.min_seconds, opts.min_steps * step_s), opts.max_steps * step_s)
    return f"timing: {steps}, about {clock_text(max(1.0, seconds))} at the warm-up's pace"


def measure(trainer: Trainer, opts: MeasureOptions, agree: Callable[[int], int] | None = None,
            on_phase: Callable[[str], None] | None = None) -> Measurement:
    """Warm up, then time steps per the protocol above. With `agree`, every loop runs a
    number of steps agreed between the processes (see "Agreed steps"), never stops on this
    process's clock. `on_phase` hears each part as it begins (the first step, warm-up,
    timing), never inside the timed steps. Raises DivergedError."""
    say = on_phase or (lambda text: None)
    clock = time.perf_counter
    timer = trainer.step_timer()
    # A windowed timer sizes its first window by the warm-up's mean step after the first
    # (host_timer.py), so its warm-up takes a second step even where one was asked (--quick).
    warmup_least = max(opts.warmup_steps, 2) if windowed(timer) else opts.warmup_steps
    say("first step (allocation, kernel choice, compilation)")
    start = clock()
    handles = [trainer.step()]
    trainer.synchronize()
    first_step_s = clock() - start
    # `warmup_seconds` count from the end of the first step: compilation (JAX's took 4.6-24 s
    # on an H200) leaves the device idle, and counted in, the timing began two steps later.
    warm_from = start + first_step_s
    # Time spent in `agree` waiting for the other processes (which may have started later)
    # is no step's time: the timed-steps estimate leaves it out.
    waited = 0.0
    say(f"warm-up (the first step took {first_step_s:.3g} s)")
    if agree is None:
        while len(handles) < warmup_least or clock() - warm_from < opts.warmup_seconds:
            handles.append(trainer.step())
    else:
        # At least two steps, so that the estimate leaves out the first one's start-up costs.
        handles += [trainer.step() for _ in range(max(opts.warmup_steps, 2) - 1)]
        trainer.synchronize()
        elapsed = clock() - start
        step_s = warmup_step_s(first_step_s, elapsed, len(handles))
        more = steps_for(opts.warmup_seconds - (elapsed - first_step_s), step_s, 0, opts.max_steps)
        asked = clock()
        more = _agreed(agree, more, at_least=0)
        waited = clock() - asked
        handles += [trainer.step() for _ in range(more)]
    trainer.synchronize()
    warmup_s = clock() - start
    warmup_steps = len(handles)
    _check_finite(trainer.loss_values(handles), first_step=1)

    step_s = warmup_step_s(first_step_s, warmup_s - waited, warmup_steps)
    agreed: int | None = None
    if agree is not None:
        estimate = steps_for(opts.min_seconds, step_s, opts.min_steps, opts.max_steps)
        agreed = _agreed(agree, estimate, at_least=1)

    say(timing_phase(opts, step_s, agreed))
    trainer.reset_peak_memory()
    expect_step(timer, step_s)
    handles = []
    measure_start = time.time()
    cpu0 = time.process_time()
    t0 = clock()
    if agreed is None:
        # The loop condition reads a host clock only; on asynchronous devices the host runs
        # at most a launch queue ahead, which decides only when to stop, not what is measured.
        while len(handles) < opts.max_steps and (
            len(handles) < opts.min_steps or clock() - t0 < opts.min_seconds
        ):
            timer.start()
            handles.append(trainer.step())
            timer.stop()
    else:
        for _ in range(agreed):
            timer.start()
            handles.append(trainer.step())
            timer.stop()
    trainer.synchronize()
    step_times = timer.elapsed_s()  # at once: a host timer's last window closes at this wait
    measure_end = time.time()
    cpu_s = time.process_time() - cpu0
    losses = trainer.loss_values(handles)
    _check_finite(losses, first_step=warmup_steps + 1)
    return Measurement(first_step_s, warmup_s, warmup_steps, measure_start, measure_end,
                       step_times, losses, cpu_s, getattr(timer, "description", None),
                       getattr(timer, "windows", []))
