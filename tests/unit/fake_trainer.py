"""A trainer whose steps we control, for the timing protocol's tests (tests/unit/test_protocol.py,
tests/integration/test_agreed_steps.py)."""

from __future__ import annotations

import time


class HostTimer:
    def __init__(self):
        self.times, self._t = [], None

    def start(self):
        self._t = time.perf_counter()

    def stop(self):
        self.times.append(time.perf_counter() - self._t)

    def elapsed_s(self):
        return self.times


class ScriptedTrainer:
    """Steps sleep `step_s` and return losses from a script (then repeat the last)."""
    params, device_name = 1, "test"

    def __init__(self, step_s=0.0, losses=(1.0,)):
        self.step_s, self.script, self.calls, self.syncs, self.resets = step_s, list(losses), 0, 0, 0

    def step(self):
        self.calls += 1
        if self.step_s:
            time.sleep(self.step_s)
        return self.script[min(self.calls, len(self.script)) - 1]

    def synchronize(self):
        self.syncs += 1

    def step_timer(self):
        return HostTimer()

    def loss_values(self, handles):
        return [float(h) for h in handles]

    def allocator_peak_bytes(self):
        return None

    def reset_peak_memory(self):
        self.resets += 1
