"""The host-clock step timer every adapter uses where the device has no timer of its own
(the CPU; JAX, TensorFlow and Keras on every device): framework-free, so no adapter imports
another's."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

#: How long a window of steps between two waits for an asynchronous device lasts, in the
#: device's time (the previous window's mean step sets the next one's step count).
WINDOW_S = 0.1


def steps_per_window(step_s: float, window_s: float = WINDOW_S) -> int:
    """How many steps of `step_s` seconds fill a window of `window_s` (at least one)."""
    return max(1, math.ceil(window_s / step_s)) if step_s > 0 else 1


def windowed(timer: object) -> bool:
    """Whether `timer` times steps in windows, sized by the step time it is told (expect_step):
    a host timer of an asynchronous device. Others (torch's CUDA events, a synchronous device's
    clock) time every step alone."""
    return isinstance(timer, HostTimer) and timer.windowed


def expect_step(timer: object, step_s: float) -> None:
    """Tell `timer` the step time expected (HostTimer.expect) where it takes one (`windowed`)."""
    if isinstance(timer, HostTimer):
        timer.expect(step_s)


class HostTimer:
    """Steps timed with time.perf_counter().

    A synchronous device (`sync` None: the CPU under torch) is timed step by step. An
    asynchronous one (JAX and TensorFlow on every device, torch on GPUs without events) needs a
    wait for the device before the clock is read, but a wait after every step would stop the
    host from queueing the next step while the device runs this one: on an H200 that made JAX's
    mlp step 2.2 times and its resnet step 1.7 times as long as in a loop that never waits
    (docs/results/gpu-h200-timers.md). So the timer waits once per window of steps lasting about
    WINDOW_S, and gives every step of a window the window's mean. The first window is sized by
    `expect` (the warm-up's mean step), else it is one step; a partial window at the end closes
    in `elapsed_s`, which the caller runs after its own final wait for the device.
    """

    def __init__(self, sync: Callable[[], None] | None = None, window_s: float = WINDOW_S):
        self._sync = sync
        self._window_s = window_s
        self._window_steps = 1
        self._times: list[float] = []
        self._t0 = 0.0
        self._open = 0  # steps stopped in the window not yet closed
        self._windows: list[int] = []  # steps per closed window, in order

    @property
    def windowed(self) -> bool:
        """Whether steps are timed in windows (an asynchronous device, a window over 0)."""
        return self._sync is not None and self._window_s > 0

    @property
    def description(self) -> str | None:
        """How the steps were timed, stored with the trial (software "timer") where the device is
        asynchronous: a trial timed otherwise, such as one from before the windows, then differs
        in software when compared. None on a synchronous device (timed as it always was)."""
        if self._sync is None:
            return None
        if self._window_s <= 0:
            return "host clock, a wait for the device after every step"
        return f"host clock, a wait for the device per {self._window_s:g} s window of steps"

    def expect(self, step_s: float) -> None:
        """Size the first window from a step time known beforehand. A one-step window carries
        a whole dispatch and drain that the steps queued after it hide: on an H200 JAX's cnn
        step read 1.8 ms alone against 0.83 ms in windows, one window in twenty that flagged
        every such trial noisy (docs/results/gpu-h200-lease4.md)."""
        if not self._windows and self._open == 0:
            self._window_steps = steps_per_window(step_s, self._window_s)

    def start(self) -> None:
        if self._open == 0:
            self._t0 = time.perf_counter()

    def stop(self) -> None:
        self._open += 1
        if self._sync is None or self._open >= self._window_steps:
            self._close()

    def _close(self) -> None:
        if self._open == 0:
            return
        if self._sync is not None:
            self._sync()
        mean = (time.perf_counter() - self._t0) / self._open
        self._times.extend([mean] * self._open)
        self._windows.append(self._open)
        self._open = 0
        self._window_steps = steps_per_window(mean, self._window_s)

    def elapsed_s(self) -> list[float]:
        self._close()
        return list(self._times)

    @property
    def windows(self) -> list[int]:
        """Steps per window, in order, after `elapsed_s` (rigbench/step_windows.py); empty where
        every step was timed alone."""
        return [] if all(n == 1 for n in self._windows) else list(self._windows)
