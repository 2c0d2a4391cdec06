"""Steps timed together: where a host timer waits for an asynchronous device once per window of
steps (frameworks/host_timer.py), every step of a window holds the window's mean, and the window,
not the step, is one measurement. Statistics over a trial's steps (its interval, its noise, a
comparison's test) take one figure per window, or they would count each measurement as many.

Framework-free and below spec.py, so that a Result, a ChildReport and the analyses share it."""

from __future__ import annotations

from collections.abc import Sequence


def divides(windows: Sequence[int], steps: int) -> bool:
    """Whether `windows` cut `steps` steps into windows of at least one step each."""
    return all(n >= 1 for n in windows) and sum(windows) == steps


def timing_samples(step_times: Sequence[float], windows: Sequence[int]) -> list[float]:
    """One figure per measurement: each window's mean step time, or each step's time where no
    windows were stored (a timer that times every step alone) or they do not add up to the
    steps (a bad row is read as per step, never refused)."""
    if not windows or not divides(windows, len(step_times)):
        return list(step_times)
    samples, start = [], 0
    for n in windows:
        samples.append(sum(step_times[start:start + n]) / n)
        start += n
    return samples


def common_windows(per_rank: Sequence[Sequence[int]], steps: int) -> list[int]:
    """The windows of a data-parallel trial's merged steps (each the slowest rank's): every
    boundary of every rank, so that each window lies inside one window of each rank and its
    steps still hold one figure. Empty (per step) where a rank timed its steps alone or a
    rank's windows do not cover the `steps`."""
    bounds: set[int] = set()
    for windows in per_rank:
        if not windows or not divides(windows, steps):
            return []
        total = 0
        for n in windows:
            total += n
            bounds.add(total)
    edges = [0, *sorted(bounds)]
    return [b - a for a, b in zip(edges, edges[1:])]
