"""The host-clock step timer: step by step on a synchronous device; on an asynchronous one a
wait per window of steps (frameworks/host_timer.py), checked on a clock the test moves."""

from __future__ import annotations

import pytest

from rigbench.frameworks import host_timer
from rigbench.frameworks.host_timer import HostTimer


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(host_timer.time, "perf_counter", fake)
    return fake


def test_a_synchronous_device_is_timed_step_by_step_without_the_gaps_between_steps(clock):
    timer = HostTimer()
    for seconds in (0.01, 0.02, 0.03):
        timer.start()
        clock.now += seconds
        timer.stop()
        clock.now += 1.0  # the loop's own work between steps is no step's time
    assert timer.elapsed_s() == pytest.approx([0.01, 0.02, 0.03]) and timer.windows == []


def _queued_steps(clock: Clock, window_s: float, steps: int = 12,
                  expect_s: float | None = None) -> tuple[list[float], int, list[int]]:
    """`steps` steps on a modelled asynchronous device: the host takes 1 ms to queue a step,
    which the device then runs for 4 ms once it is free; a wait lasts until the device is done.
    (step times, waits, the timer's windows)."""
    waits = 0
    device_done = 0.0

    def sync() -> None:
        nonlocal waits
        waits += 1
        clock.now = max(clock.now, device_done)

    timer = HostTimer(sync, window_s=window_s)
    if expect_s is not None:
        timer.expect(expect_s)
    for _ in range(steps):
        timer.start()
        clock.now += 0.001
        device_done = max(device_done, clock.now) + 0.004
        timer.stop()
    return timer.elapsed_s(), waits, timer.windows


def test_a_wait_after_every_step_adds_the_hosts_queueing_to_the_devices_time(clock):
    times, waits, windows = _queued_steps(clock, window_s=0.0)
    assert waits == 12 and times == pytest.approx([0.005] * 12)
    assert windows == [], "every step timed alone: no windows to keep"


def test_an_asynchronous_device_is_waited_for_once_a_window_each_step_getting_the_windows_mean(clock):
    times, waits, windows = _queued_steps(clock, window_s=0.02)
    # windows of 1 step (5 ms: nothing known yet), 4 (ceil(20 / 5)): 1 ms to queue the first,
    # then 4 x 4 ms, and 5 (ceil(20 / 4.25)); the last two steps closed by elapsed_s
    assert waits == 4 and len(times) == 12
    assert times[:5] == pytest.approx([0.005] + [0.017 / 4] * 4)
    assert sum(times) == pytest.approx(clock.now), "every moment from the first start to the last wait"
    assert max(times[1:]) < 0.005, "below a wait per step: the host queued the next steps while the device ran"
    assert windows == [1, 4, 5, 2]


def test_the_first_window_sized_from_the_expected_step_carries_no_lone_dispatch(clock):
    """A one-step first window reads a step as queueing plus device time (5 ms here, 1.8 ms
    against 0.83 ms for JAX's cnn on an H200), an outlier among the window means that the noise
    flag counted; the warm-up's mean step sizes the first window instead."""
    times, waits, windows = _queued_steps(clock, window_s=0.02, expect_s=0.004)
    # windows of 5 (ceil(20 / 4)): 1 ms to queue the first, then 5 x 4 ms; 5 again; the rest
    assert windows == [5, 5, 2] and waits == 3
    assert times[:5] == pytest.approx([0.021 / 5] * 5) and max(times) < 0.005
    assert sum(times) == pytest.approx(clock.now)


def test_an_expected_step_changes_nothing_on_a_synchronous_device(clock):
    timer = HostTimer()
    timer.expect(0.001)
    for _ in range(3):
        timer.start()
        clock.now += 0.01
        timer.stop()
    assert timer.elapsed_s() == pytest.approx([0.01] * 3) and timer.windows == []


def test_a_partial_window_closes_once_with_every_step_counted(clock):
    calls = []
    timer = HostTimer(lambda: calls.append(clock.now), window_s=10.0)
    for _ in range(3):  # the first window closes after one step; the second never fills
        timer.start()
        clock.now += 0.5
        timer.stop()
    assert len(calls) == 1
    assert timer.elapsed_s() == pytest.approx([0.5, 0.5, 0.5]) and len(calls) == 2
    assert timer.elapsed_s() == pytest.approx([0.5, 0.5, 0.5]) and len(calls) == 2, "nothing open: no wait"
