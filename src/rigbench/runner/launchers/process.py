"""The "process" launcher: one trial in one fresh child process, with trackers, a timeout
and a memory cap; the child is forked from a server that imported the framework once where
that is safe (launchers/warm_start.py), else started as a new interpreter.

The parent never imports a framework: it starts `python -m rigbench.runner.child`, samples
the child's CPU, memory and GPU from outside while it runs, and classifies exits the child
could not report itself (signals, the kernel's OOM killer, a hang past the timeout). Each of
those is a step in launchers/steps.py; this launcher is their composition for world size 1.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rigbench.runner.launchers.base import Launcher, Outcome, TrackerSettings, TrialInterrupted
from rigbench.runner.launchers.crash_output import STDERR_TAIL_CHARS, stderr_tail
from rigbench.runner.launchers.progress_watch import wait_telling
from rigbench.runner.launchers.steps import (
    TRIAL_DIR_PREFIX,
    Started,
    child_command,
    child_env,
    describe_exit,
    ending_on_error,
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

# The steps were defined here before launchers/steps.py; their old import path still works.
__all__ = ["STDERR_TAIL_CHARS", "TRIAL_DIR_PREFIX", "ProcessLauncher", "child_env", "describe_exit",
           "kill_group", "new_session_args", "remove_stale_trial_dirs"]


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
                child = started[0]
                try:
                    if (spec.train or on_progress) and not wait_telling(spec, child, lambda: child.stderr_path, on_progress):
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
    def _timed_out_with_epochs(spec: TrialSpec, kept: Outcome) -> Outcome:
        """A training run stopped at its timeout, with the epochs it finished: status `timeout`
        (what happened), its finished epochs and their figures kept, as Ctrl-C keeps them."""
        report = kept.report
        if report.status == "ok":  # its last epoch ended as its time ran out: a finished run
            return kept
        done = len(report.epochs)
        report.status = "timeout"
        finished = f"the {done} epochs it finished are" if done != 1 else "the 1 epoch it finished is"
        report.error = f"the trial did not finish within {spec.measure.timeout_s:g} s; {finished} kept (raise --timeout for more)"
        return kept

    def _finished_epochs(self, spec: TrialSpec, child: Started, report_path: Path) -> Outcome | None:
        """A training child stopped with SIGINT reports the epochs it finished (status
        `interrupted`), or its whole run (`ok`) where its last epoch ended as the SIGINT came:
        that outcome, or None when it kept none (or did not answer in time). An `ok` report was
        dropped: Ctrl-C at the end of a run lost all its epochs and said none had finished."""
        if not interrupt_for_report(child):
            return None
        outcome = self._outcome(spec, child, report_path, timed_out=False)
        kept = outcome.report.status in ("interrupted", "ok") and outcome.report.epochs
        return outcome if kept else None
