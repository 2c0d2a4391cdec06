"""Telling how far a running trial has got: the newest phase line and each finished epoch its
child (or, in a data-parallel trial, its first rank on this machine) writes to its stderr file
(runner/epoch_lines.py), read once a second while the launcher waits for the process."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from rigbench.runner.epoch_lines import EpochPace, finished_epochs, newest_phase
from rigbench.runner.launchers.steps import Started, exited_within
from rigbench.spec import TrialSpec
from rigbench.units import clock

#: How often a child's stderr file is read for its newest phase and a training child's for its
#: finished epochs.
PROGRESS_POLL_S = 1.0
#: A phase this long without a newer one is said again with the time spent in it: a log is never
#: silent for long, though the timed steps themselves say nothing (an lstm's took 55 s here).
QUIET_S = 15.0


def wait_telling(spec: TrialSpec, process: Started, stderr_path: Callable[[], Path | None],
                 on_progress: Callable[[str], None] | None, stop: Callable[[], bool] | None = None) -> bool:
    """Wait for `process` up to the trial's timeout, telling `on_progress` of each phase the file
    `stderr_path()` names enters (and again, with the time in it, every QUIET_S it stays there)
    and each epoch a training run finishes (the file once a second, and once more when the
    process exits: every epoch is told, a fast one late); True if it exited in time, False past
    the timeout or once `stop()` (asked once a second) says the trial cannot finish. The file is
    asked for anew each time: a rank's appears only once the rank has started."""
    started = time.monotonic()
    deadline = started + spec.measure.timeout_s
    pace = EpochPace(spec.train.epochs if spec.train else 0, started)
    said, phase, phase_at, told_at = 0, None, started, started
    while (left := deadline - time.monotonic()) > 0:
        ended = exited_within(process, min(PROGRESS_POLL_S, left))
        path = stderr_path() if on_progress is not None else None
        if on_progress is not None and path is not None:
            now = time.monotonic()
            newest = None if ended else newest_phase(path)  # an ended one's result tells
            if newest is not None and newest != phase:
                phase, phase_at, told_at = newest, now, now
                on_progress(newest)
            elif newest is not None and now - told_at >= QUIET_S:  # still in it: said again, with its time
                told_at = now
                on_progress(f"{newest}; {clock(now - phase_at)} so far")
            for epoch, figures in finished_epochs(path, said):
                said = epoch
                on_progress(pace.text(epoch, figures, now))
        if ended:
            return True
        if stop is not None and stop():
            return False
    return process.proc.poll() is not None
