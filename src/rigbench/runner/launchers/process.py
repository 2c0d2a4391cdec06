"""The "process" launcher: one trial in one fresh child process, with trackers, a timeout
and a memory cap.

The parent never imports a framework: it starts `python -m rigbench.runner.child`, samples
the child's CPU, memory and GPU from outside while it runs, and classifies exits the child
could not report itself (signals, the kernel's OOM killer, a hang past the timeout).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

from rigbench.frameworks import load_adapter
from rigbench.runner.launchers.base import Launcher, Outcome, TrackerSettings
from rigbench.spec import ChildReport, TrialSpec
from rigbench.trackers.sampler import Tracker

#: Characters of the child's stderr kept when it dies without a report.
STDERR_TAIL_CHARS = 2000
#: A trial's temporary folder is `<tmp>/rigbench-trial-<driver pid>-<random>`: the pid lets a
#: later run tell the folders of a driver that was killed (SIGKILL: no handler runs) and
#: remove them (remove_stale_trial_dirs).
TRIAL_DIR_PREFIX = "rigbench-trial-"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists but is not ours, or the OS cannot say: leave its folders alone
    return True


def remove_stale_trial_dirs(tmp: str | Path | None = None) -> list[Path]:
    """Remove trial folders left in `tmp` (default: the system's temporary folder) by this
    user's drivers that are no longer running; returns what was removed."""
    removed = []
    root = Path(tmp or tempfile.gettempdir())
    for path in root.glob(f"{TRIAL_DIR_PREFIX}*-*"):
        pid_text = path.name.removeprefix(TRIAL_DIR_PREFIX).split("-", 1)[0]
        if not pid_text.isdigit() or int(pid_text) == os.getpid() or _pid_alive(int(pid_text)):
            continue
        with contextlib.suppress(OSError):
            if path.is_dir() and (not hasattr(os, "getuid") or path.stat().st_uid == os.getuid()):
                shutil.rmtree(path)
                removed.append(path)
    return removed


class _Terminated(SystemExit):
    """SIGTERM or SIGHUP reached the driver during a trial: unwind (killing the child and
    removing the trial's folder on the way), then exit with 128 + the signal number."""


@contextlib.contextmanager
def _terminate_unwinds() -> Iterator[None]:
    """While a trial runs, SIGTERM and SIGHUP raise _Terminated instead of ending the process
    on the spot, so the child is killed and the temporary folder removed. Only where no one
    else handles the signal (the default action) and only in the main thread."""
    import threading

    def unwind(signum: int, _frame: FrameType | None) -> None:
        raise _Terminated(128 + signum)

    installed = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)):
            if sig is not None and signal.getsignal(sig) is signal.SIG_DFL:
                installed[sig] = signal.signal(sig, unwind)
    try:
        yield
    finally:
        for sig, previous in installed.items():
            signal.signal(sig, previous)


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


#: What a native runtime prints when it cannot start a thread or get memory. Under
#: --memory-limit (an address-space cap) that means the cap was reached: thread stacks and
#: malloc arenas reserve address space. Seen on a 16-core GPU machine with CUDA torch:
#: "libgomp: Thread creation failed: Resource temporarily unavailable", exit code 1.
_CAP_EXHAUSTED = ("Thread creation failed", "Resource temporarily unavailable", "std::bad_alloc",
                  "Cannot allocate memory")


def describe_exit(returncode: int, stderr_tail: str, spec: TrialSpec) -> ChildReport:
    """The report of a child that ended without writing one: a crash, named by its signal;
    `oom` when it ran under --memory-limit and the native runtime said it ran out."""
    if spec.measure.memory_limit_bytes and any(text in stderr_tail for text in _CAP_EXHAUSTED):
        limit = spec.measure.memory_limit_bytes / 2**20
        return ChildReport(status="oom", error=(
            f"the trial's process exited with code {returncode}: the memory limit ({limit:.0f} MiB, an "
            f"address-space cap that thread stacks also count against) left too little\n{stderr_tail.strip()}"))
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
        remove_stale_trial_dirs()
        with _terminate_unwinds(), tempfile.TemporaryDirectory(prefix=f"{TRIAL_DIR_PREFIX}{os.getpid()}-") as tmp:
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
            method, note = tracker.energy_description()
            return Outcome(report=report, samples=samples, returncode=proc.returncode,
                           energy_method=method, energy_note=note)
