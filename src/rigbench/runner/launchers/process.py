"""The "process" launcher: one trial in one fresh child process, with trackers, a timeout
and a memory cap; the child is forked from a server that imported the framework once where
that is safe (launchers/warm_start.py), else started as a new interpreter.

The parent never imports a framework: it starts `python -m rigbench.runner.child`, samples
the child's CPU, memory and GPU from outside while it runs, and classifies exits the child
could not report itself (signals, the kernel's OOM killer, a hang past the timeout). Each of
those is a step in launchers/steps.py; this launcher is their composition for world size 1.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from rigbench.runner.epoch_lines import EpochPace, finished_epochs, newest_phase
from rigbench.runner.launchers.base import Launcher, Outcome, TrackerSettings, TrialInterrupted
from rigbench.runner.launchers.crash_output import STDERR_TAIL_CHARS, stderr_tail
from rigbench.runner.launchers.steps import (
    TRIAL_DIR_PREFIX,
    Started,
    child_command,
    child_env,
    describe_exit,
    ending_on_error,
    exited_within,
    interrupt_for_report,
    kill_group,
    new_session_args,
    rank_report_path,
    read_report,
    remove_stale_trial_dirs,
    start_process,
    trial_folder,
    wait_all,
    write_spec,
)
from rigbench.spec import TrialSpec
from rigbench.units import clock

# The steps were defined here before launchers/steps.py; their old import path still works.
__all__ = ["STDERR_TAIL_CHARS", "TRIAL_DIR_PREFIX", "ProcessLauncher", "child_env", "describe_exit",
           "kill_group", "new_session_args", "remove_stale_trial_dirs"]


#: How often a child's stderr file is read for its newest phase and a training child's for its
#: finished epochs.
PROGRESS_POLL_S = 1.0
#: A phase this long without a newer one is said again with the time spent in it: a log is never
#: silent for long, though the timed steps themselves say nothing (an lstm's took 55 s here).
QUIET_S = 15.0


class ProcessLauncher(Launcher):
    """One child process per trial (world size 1); the tracker follows its process tree."""

    name = "process"

    def launch(self, spec: TrialSpec, tracking: TrackerSettings,
               on_start: Callable[[int], None] | None = None,
               on_progress: Callable[[str], None] | None = None) -> Outcome:
        """Run `spec` in a fresh child process and return its outcome; never raises for a
        failing trial. KeyboardInterrupt kills the child and propagates; a training run first
        gets the chance to report its finished epochs, raised as TrialInterrupted."""
        with trial_folder() as folder:
            spec_path, report_path = write_spec(folder, spec), rank_report_path(folder, 0)
            started: list[Started] = []
            with ending_on_error(started):
                started.append(start_process(child_command(spec_path, report_path), child_env(spec),
                                             folder / "stderr.txt", tracking, warm_framework=spec.framework,
                                             on_progress=on_progress))
                if on_start:
                    on_start(started[0].pid)
                try:
                    if (spec.train or on_progress) and not self._ended_telling(spec, started[0], on_progress):
                        kept = self._finished_epochs(spec, started[0], report_path) if spec.train else None
                        if kept is not None:  # a long training run keeps what it finished
                            return self._timed_out_with_epochs(spec, kept)
                        wait_all(started, 0.0)  # killed, if the interrupt did not end it
                        timed_out = True
                    else:
                        [timed_out] = wait_all(started, spec.measure.timeout_s)
                except KeyboardInterrupt:
                    kept = self._finished_epochs(spec, started[0], report_path) if spec.train else None
                    if kept is None:
                        raise
                    raise TrialInterrupted(kept) from None
            return self._outcome(spec, started[0], report_path, timed_out)

    @staticmethod
    def _outcome(spec: TrialSpec, child: Started, report_path: Path, timed_out: bool) -> Outcome:
        samples = child.tracker.stop()
        report = read_report(report_path, spec, timed_out=timed_out, returncode=child.proc.returncode,
                             stderr=stderr_tail(child.stderr_path))
        method, note = child.tracker.energy_description()
        return Outcome(reports=[report], samples=samples, returncode=child.proc.returncode,
                       energy_method=method, energy_note=note)

    @staticmethod
    def _ended_telling(spec: TrialSpec, child: Started, on_progress: Callable[[str], None] | None) -> bool:
        """Wait for the child up to its timeout, telling `on_progress` of each phase it enters (and
        again, with the time in it, every QUIET_S it stays there) and each epoch a training child
        finishes (its stderr file, once a second, and once more when it exits: every epoch is told,
        a fast one late); True if it exited in time."""
        started = time.monotonic()
        deadline = started + spec.measure.timeout_s
        pace = EpochPace(spec.train.epochs if spec.train else 0, started)
        said, phase, phase_at, told_at = 0, None, started, started
        while (left := deadline - time.monotonic()) > 0:
            ended = exited_within(child, min(PROGRESS_POLL_S, left))
            if on_progress is not None:
                now = time.monotonic()
                newest = None if ended else newest_phase(child.stderr_path)  # an ended one's result tells
                if newest is not None and newest != phase:
                    phase, phase_at, told_at = newest, now, now
                    on_progress(newest)
                elif newest is not None and now - told_at >= QUIET_S:  # still in it: said again, with its time
                    told_at = now
                    on_progress(f"{newest}; {clock(now - phase_at)} so far")
                for epoch, figures in finished_epochs(child.stderr_path, said):
                    said = epoch
                    on_progress(pace.text(epoch, figures, now))
            if ended:
                return True
        return child.proc.poll() is not None

    @staticmethod
    def _timed_out_with_epochs(spec: TrialSpec, kept: Outcome) -> Outcome:
        """A training run stopped at its timeout, with the epochs it finished: status `timeout`
        (what happened), its finished epochs and their figures kept, as Ctrl-C keeps them."""
        report = kept.report
        done = len(report.epochs)
        report.status = "timeout"
        finished = f"the {done} epochs it finished are" if done != 1 else "the 1 epoch it finished is"
        report.error = f"the trial did not finish within {spec.measure.timeout_s:g} s; {finished} kept (raise --timeout for more)"
        return kept

    def _finished_epochs(self, spec: TrialSpec, child: Started, report_path: Path) -> Outcome | None:
        """A training child stopped with SIGINT reports the epochs it finished (status
        `interrupted`): that outcome, or None when it kept none (or did not answer in time)."""
        if not interrupt_for_report(child):
            return None
        outcome = self._outcome(spec, child, report_path, timed_out=False)
        return outcome if outcome.report.status == "interrupted" and outcome.report.epochs else None
