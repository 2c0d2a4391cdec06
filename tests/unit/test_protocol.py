"""The timing protocol's rules, on a trainer whose steps we control (the real adapters are
exercised end to end in tests/integration)."""

import math
import time

import pytest

from rigbench.errors import DivergedError
from rigbench.runner.protocol import measure
from rigbench.spec import MeasureOptions


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


def opts(**kw):
    base = dict(warmup_steps=2, warmup_seconds=0.0, min_steps=5, min_seconds=0.0)
    base.update(kw)
    return MeasureOptions(**base)


def test_min_steps_bound_and_warmup_excluded():
    t = ScriptedTrainer()
    m = measure(t, opts())
    assert m.warmup_steps == 2
    assert len(m.step_times_s) == 5 == len(m.losses)
    assert t.calls == 7  # warm-up steps are not among the timed ones
    assert t.resets == 1  # allocator peak window starts after warm-up
    assert m.measure_start <= m.measure_end


def test_min_seconds_bound_keeps_timing():
    t = ScriptedTrainer(step_s=0.02)
    m = measure(t, opts(min_steps=2, min_seconds=0.3))
    assert len(m.step_times_s) >= 10  # 0.3 s of 0.02 s steps
    assert sum(m.step_times_s) >= 0.25
    assert all(s >= 0.015 for s in m.step_times_s)
    assert m.measure_end - m.measure_start >= 0.3


def test_max_steps_caps_timing():
    m = measure(ScriptedTrainer(), opts(min_steps=5, min_seconds=60, max_steps=8))
    assert len(m.step_times_s) == 8


def test_warmup_seconds_bound():
    t = ScriptedTrainer(step_s=0.01)
    m = measure(t, opts(warmup_steps=1, warmup_seconds=0.2))
    assert m.warmup_steps >= 10 and m.warmup_s >= 0.2
    assert m.first_step_s < m.warmup_s


def test_nan_in_timed_steps_is_divergence_with_step_number():
    t = ScriptedTrainer(losses=[3.0, 2.0, 1.0, 0.5, math.nan])
    with pytest.raises(DivergedError) as info:
        measure(t, opts(warmup_steps=2, min_steps=5))
    assert info.value.step == 5  # steps counted from 1 including warm-up


def test_inf_in_warmup_stops_before_timing():
    t = ScriptedTrainer(losses=[1.0, math.inf])
    with pytest.raises(DivergedError, match="inf at step 2"):
        measure(t, opts(warmup_steps=3, min_steps=5))
    assert t.calls == 3
