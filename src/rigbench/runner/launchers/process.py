"""The "process" launcher: one trial in one fresh child process, with trackers, a timeout
and a memory cap.

The parent never imports a framework: it starts `python -m rigbench.runner.child`, samples
the child's CPU, memory and GPU from outside while it runs, and classifies exits the child
could not report itself (signals, the kernel's OOM killer, a hang past the timeout).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from rigbench.frameworks import load_adapter
from rigbench.runner.launchers.base import Launcher, Outcome, TrackerSettings
from rigbench.spec import ChildReport, TrialSpec
from rigbench.trackers.sampler import Tracker

#: Characters of the child's stderr kept when it dies without a report.
STDERR_TAIL_CHARS = 2000


def child_env(spec: TrialSpec) -> dict[str, str]:
    """Environment of a trial's child: thread counts must be set before a framework starts."""
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    # The child watches this pid (runner/child.exit_with_parent): read from the environment,
    # a parent that died while the child was still importing is noticed too.
    env["RIGBENCH_PARENT_PID"] = str(os.getpid())
    # Make torch's cuda:N the same GPU as NVML's index N (both then order by PCI bus id).
    env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    # What the framework reads once, at start (thread pools, allocator settings): the adapter
    # says (frameworks/base.py); loading the adapter module does not import the framework.
    env.update(load_adapter(spec.framework).environment(spec))
    return env


def describe_exit(returncode: int, stderr_tail: str, spec: TrialSpec) -> ChildReport:
    """The report of a child that ended without writing one: a crash, named by its signal."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        hint = ""
        if -returncode == signal.SIGKILL:
            hint = " (if no one killed it, likely the kernel's out-of-memory killer"
            hint += "; try --memory-limit" if not spec.measure.memory_limit_bytes else ""
            hint += ")"
        message = f"the trial's process was killed by {name}{hint}"
    else:
        message = f"the trial's process exited with code {returncode} without a report"
    if stderr_tail.strip():
        message += "\n" + stderr_tail.strip()
    return ChildReport(status="crash", error=message)


def kill_group(proc: subprocess.Popen) -> None:
    """Kill the child and everything it started (POSIX: its process group)."""
    try:
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # Windows: no process groups to signal
            proc.kill()
    except ProcessLookupError:
        pass
    proc.wait()


def new_session_args() -> dict:
    """Popen arguments that keep Ctrl-C away from the child (the parent ends it itself)."""
    if sys.platform == "win32":  # (not os.name: type checkers understand sys.platform)
        return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
    return {"start_new_session": True}


class ProcessLauncher(Launcher):
    """One child process per trial (world size 1); the tracker follows its process tree."""

    name = "process"

    def launch(self, spec: TrialSpec, tracking: TrackerSettings,
               on_start: Callable[[int], None] | None = None) -> Outcome:
        """Run `spec` in a fresh child process and return its outcome; never raises for a
        failing trial. KeyboardInterrupt kills the child and propagates."""
        with tempfile.TemporaryDirectory(prefix="rigbench-trial-") as tmp:
            spec_path, report_path = Path(tmp, "spec.json"), Path(tmp, "report.json")
            spec_path.write_text(spec.model_dump_json(), encoding="utf-8")
            with open(Path(tmp, "stderr.txt"), "w+", encoding="utf-8", errors="replace") as err:
                # A new session: Ctrl-C reaches only the parent, which then ends the child
                # itself, and a timeout can kill the child's whole process group.
                proc = subprocess.Popen(
                    [sys.executable, "-m", "rigbench.runner.child", str(spec_path), str(report_path)],
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                    env=child_env(spec), **new_session_args(),
                )
                tracker = Tracker(proc.pid, interval=tracking.interval_s, gpu_index=tracking.gpu_index)
                tracker.start()
                timed_out = False
                try:
                    if on_start:
                        on_start(proc.pid)
                    proc.wait(timeout=spec.measure.timeout_s)
                except subprocess.TimeoutExpired:
                    timed_out = True
                    kill_group(proc)
                except BaseException:
                    kill_group(proc)
                    tracker.stop()
                    raise
                samples = tracker.stop()
                err.seek(0)
                stderr_tail = err.read()[-STDERR_TAIL_CHARS:]
            if timed_out:
                report = ChildReport(
                    status="timeout",
                    error=f"the trial did not finish within {spec.measure.timeout_s:g} s (--timeout)",
                )
            elif report_path.exists():
                report = ChildReport.model_validate_json(report_path.read_text(encoding="utf-8"))
            else:
                report = describe_exit(proc.returncode, stderr_tail, spec)
            return Outcome(report=report, samples=samples, returncode=proc.returncode)
