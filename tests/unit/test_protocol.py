"""The timing protocol's rules, on a trainer whose steps we control (the real adapters are
exercised end to end in tests/integration)."""

import math
import time

import pytest

from rigbench.errors import DivergedError
from rigbench.runner.protocol import measure, steps_for, timing_phase, warmup_step_s
from rigbench.spec import MeasureOptions
from tests.unit.fake_trainer import ScriptedTrainer


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


class CompilingTrainer(ScriptedTrainer):
    """The first step takes `first_s` (a compilation), the rest `step_s`."""

    def __init__(self, first_s, step_s):
        super().__init__(step_s=step_s)
        self.first_s = first_s

    def step(self):
        if self.calls == 0:
            time.sleep(self.first_s)
        return super().step()


def test_warmup_seconds_count_from_the_end_of_the_first_step():
    """A compiled first step (JAX's took 4.6-24 s on an H200) is no warm-up of the device:
    counted in, the timing began two steps after it."""
    m = measure(CompilingTrainer(first_s=0.3, step_s=0.01), opts(warmup_steps=1, warmup_seconds=0.2))
    assert m.first_step_s >= 0.3
    assert m.warmup_s - m.first_step_s >= 0.2 and m.warmup_steps >= 10, (m.warmup_s, m.warmup_steps)


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


# --- agreed steps: every loop runs a number of steps the processes agree on -----------------


class FakeClock:
    """Stands in for time.perf_counter: only the trainer's steps move it."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class ClockedTrainer(ScriptedTrainer):
    """Each step moves `clock` on by its duration (from `durations`, then the last repeats)."""

    def __init__(self, clock, durations):
        super().__init__()
        self.clock, self.durations = clock, list(durations)

    def step(self):
        handle = super().step()
        self.clock.now += self.durations[min(self.calls, len(self.durations)) - 1]
        return handle


class Agreement:
    """Records each estimate and answers from `answers` (or with the estimate itself)."""

    def __init__(self, answers=None):
        self.estimates, self.answers = [], list(answers) if answers is not None else None

    def __call__(self, estimate):
        self.estimates.append(estimate)
        return self.answers.pop(0) if self.answers is not None else estimate


def test_steps_for_meets_both_minimums_within_the_cap():
    assert steps_for(2.0, 0.125, at_least=5, at_most=1000) == 16
    assert steps_for(2.0, 1.0, at_least=5, at_most=1000) == 5  # min steps dominate
    assert steps_for(2.0, 0.001, at_least=5, at_most=100) == 100  # capped
    assert steps_for(0.0, 0.5, at_least=5, at_most=100) == 5  # no seconds asked for
    assert steps_for(2.0, 0.0, at_least=5, at_most=100) == 100  # unmeasurably fast steps
    assert steps_for(-0.5, 0.1, at_least=0, at_most=100) == 0  # already warm long enough


def test_warmup_step_time_leaves_out_the_first_step():
    assert warmup_step_s(first_step_s=1.0, warmup_s=1.25, warmup_steps=3) == 0.125
    assert warmup_step_s(first_step_s=1.0, warmup_s=1.0, warmup_steps=1) == 1.0


def test_agreed_mode_runs_what_the_clock_would_when_alone(monkeypatch):
    # First step 1 s (start-up), then 0.125 s: warm-up needs 1 + 12 steps for 1.5 s after the
    # first, timing 16 steps for 2 s. One process agreeing with itself must reproduce the
    # clock's counts.
    o = opts(warmup_steps=3, warmup_seconds=1.5, min_steps=5, min_seconds=2.0)
    counts = []
    for agree in (None, Agreement()):
        clock = FakeClock()
        monkeypatch.setattr(time, "perf_counter", clock)
        m = measure(ClockedTrainer(clock, [1.0, 0.125]), o, agree=agree)
        counts.append((m.warmup_steps, len(m.step_times_s)))
    assert counts == [(13, 16), (13, 16)]
    assert agree.estimates == [10, 16]  # 10 more warm-up steps after the first three, then 16 timed


def test_agreed_counts_replace_the_clock():
    # min_seconds and warmup_seconds of a minute would keep the clock loops going; the
    # agreed counts end them.
    agree = Agreement(answers=[3, 7])
    t = ScriptedTrainer()
    m = measure(t, opts(warmup_steps=2, warmup_seconds=60, min_steps=5, min_seconds=60,
                        max_steps=50), agree=agree)
    assert agree.estimates == [50, 50]  # instant steps: both estimates hit max_steps
    assert m.warmup_steps == 2 + 3
    assert len(m.step_times_s) == 7 == len(m.losses)
    assert t.calls == 12 and t.resets == 1


def test_agreed_mode_takes_a_second_warmup_step_for_its_estimate():
    agree = Agreement()
    m = measure(ScriptedTrainer(), opts(warmup_steps=1, min_steps=4), agree=agree)
    assert m.warmup_steps == 2
    assert agree.estimates == [0, 4]
    assert len(m.step_times_s) == 4


def test_agreeing_on_no_timed_steps_is_an_error():
    with pytest.raises(ValueError, match="agreed on 0 steps"):
        measure(ScriptedTrainer(), opts(), agree=Agreement(answers=[0, 0]))


def test_divergence_in_agreed_mode_counts_steps_from_one():
    t = ScriptedTrainer(losses=[3.0, 2.0, 1.0, math.nan])
    with pytest.raises(DivergedError) as info:
        measure(t, opts(warmup_steps=2, min_steps=5), agree=Agreement())
    assert info.value.step == 4


class BusyTrainer(ScriptedTrainer):
    """Steps that compute (spin the CPU) for `step_s` instead of sleeping."""

    def step(self):
        self.calls += 1
        end = time.perf_counter() + self.step_s
        while time.perf_counter() < end:
            pass
        return 1.0


def test_cpu_time_of_the_timed_steps_tells_computing_from_waiting():
    # A sleeping step takes wall time and almost no CPU; a spinning one takes both, less only
    # the time other processes hold its core (two suite workers, and whatever else runs, on two cores).
    sleeping = measure(ScriptedTrainer(step_s=0.01), opts(min_steps=10))
    computing = measure(BusyTrainer(step_s=0.01), opts(min_steps=10))
    asleep = sleeping.cpu_s / sum(sleeping.step_times_s)
    busy = computing.cpu_s / sum(computing.step_times_s)
    assert 0 <= asleep < 0.1 and busy > 0.15 and busy > 5 * asleep, (asleep, busy)


class AsynchronousTrainer(ScriptedTrainer):
    """A trainer of an asynchronous device: its timer is the host timer JAX, TensorFlow and
    Keras use, waiting through `synchronize`."""

    def step_timer(self):
        from rigbench.frameworks.host_timer import HostTimer

        return HostTimer(self.synchronize)


def test_an_asynchronous_device_is_waited_for_once_a_window_not_after_every_step():
    """A wait after every step keeps the host from queueing the next one while the device runs
    (JAX's mlp step took 2.2 times as long so on an H200): 300 quick steps fill one window."""
    t = AsynchronousTrainer()
    m = measure(t, opts(warmup_steps=1, min_steps=300))
    assert len(m.step_times_s) == 300 == len(m.losses)
    # after the first step, after warm-up, the final wait and the last window's close (a few
    # more where a loaded machine stretches the steps past 0.1 s)
    assert t.syncs <= 8, t.syncs
    assert all(s > 0 for s in m.step_times_s)
    assert m.timer == "host clock, a wait for the device per 0.1 s window of steps"
    # the warm-up's mean step after the first (microseconds) sized the first window: no lone
    # first step, whose dispatch and drain read as noise; for it a one-step warm-up (--quick)
    # takes a second step where the timer windows, and only there
    assert sum(m.step_windows) == 300 and m.step_windows[0] > 1, m.step_windows
    assert m.warmup_steps == 2 and measure(ScriptedTrainer(), opts(warmup_steps=1)).warmup_steps == 1
    assert measure(ScriptedTrainer(), opts()).timer is None, "a timer that does not say"


def test_each_phase_is_said_as_it_begins_and_none_inside_the_timed_steps():
    """A slow trial said nothing between its start and its result (`rigbench run lstm` into a log:
    101 s); the child now says each part as it begins, never between two timed steps."""
    t = ScriptedTrainer()
    heard: list[tuple[int, str]] = []
    m = measure(t, opts(warmup_steps=3, min_steps=4), on_phase=lambda text: heard.append((t.calls, text)))
    assert [calls for calls, _ in heard] == [0, 1, 3]  # before the first step, after it, after the warm-up
    assert heard[0][1].startswith("first step") and heard[1][1].startswith("warm-up (the first step took ")
    assert heard[2][1].startswith("timing: at least 4 steps and 0 s, about ")
    assert len(m.step_times_s) == 4 and t.calls == 7  # every timed step after the last phase


def test_the_timing_phase_says_how_long_at_the_warm_ups_pace():
    assert timing_phase(MeasureOptions(min_steps=10, min_seconds=2.0), step_s=7.0) == \
        "timing: at least 10 steps and 2 s, about 0:01:10 at the warm-up's pace"
    # fast steps: the seconds decide; a capped count: the cap; agreed steps: their count
    assert timing_phase(MeasureOptions(min_steps=10, min_seconds=30.0), step_s=0.01).endswith("about 0:00:30 at the warm-up's pace")
    assert "about 0:00:20" in timing_phase(MeasureOptions(min_steps=10, min_seconds=60.0, max_steps=20), step_s=1.0)
    assert timing_phase(MeasureOptions(), step_s=0.5, agreed=240) == "timing: 240 steps, about 0:02:00 at the warm-up's pace"
    assert "about 0:00:01" in timing_phase(MeasureOptions(min_steps=3, min_seconds=0.2), step_s=0.001)  # never 0:00:00
