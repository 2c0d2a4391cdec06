"""The steps every launcher is made of, so that a multi-process launcher (torchrun's agent,
one process per rank for jax.distributed) composes them instead of copying them:

- `trial_folder()`: the trial's temporary folder (pid-prefixed, so the next run can remove a
  killed driver's folders; SIGTERM and SIGHUP unwind through it);
- `write_spec`, `child_command`, `child_env`, `rank_report_path`: what a child is given;
- `start_process`: one process in a session of its own, stderr to a file, a Tracker on it
  (a trial's child forked warm from a server that imported its framework, where it can be:
  launchers/warm_start.py);
- `ending_on_error`: every started process group killed and every tracker stopped when the
  launch is interrupted (Ctrl-C, SIGTERM, a bug);
- `wait_all`: the processes waited for under one timeout, every group killed when it passes;
- `read_report`: a rank's report (its file, else `timeout`, else `describe_exit` on the tail of
  its stderr: launchers/crash_output.py).

The parent never imports a framework: the adapter module named by the spec is loaded only for
its environment (frameworks/base.py), which does not import the framework.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Protocol

import psutil

from rigbench.child_report import ChildReport
from rigbench.frameworks import load_adapter
from rigbench.runner import rank_files
from rigbench.runner.launchers import warm_start
from rigbench.runner.launchers.base import TrackerSettings
from rigbench.runner.signal_names import TERMINATIONS, exit_code_text, signal_name
from rigbench.spec import TrialSpec
from rigbench.trackers.sampler import Tracker

#: Seconds a kill waits for a trial's descendant processes to end.
KILL_WAIT_S = 10.0
#: A trial's temporary folder is `<tmp>/rigbench-trial-<driver pid>-<random>`: the pid lets a
#: later run tell the folders of a driver that was killed (SIGKILL: no handler runs) and
#: remove them (remove_stale_trial_dirs).
TRIAL_DIR_PREFIX = "rigbench-trial-"


# --- the trial's folder -------------------------------------------------------------------

def _pid_alive(pid: int) -> bool:
    # psutil, not os.kill(pid, 0): on Windows signal 0 is CTRL_C_EVENT, a Ctrl-C sent to the console
    try:
        return psutil.Process(pid).is_running()
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:
        return True  # exists but is not ours, or the OS cannot say: leave its folders alone


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
    """SIGTERM or SIGHUP reached the driver during a trial: unwind (killing the children and
    removing the trial's folder on the way), then exit with 128 + the signal number."""


@contextlib.contextmanager
def _terminate_unwinds() -> Iterator[None]:
    """While a trial runs, SIGTERM and SIGHUP raise _Terminated instead of ending the process
    on the spot, so the children are killed and the temporary folder removed. Only where no
    one else handles the signal (the default action) and only in the main thread."""

    def unwind(signum: int, _frame: FrameType | None) -> None:
        raise _Terminated(128 + signum)

    installed = {}
    if threading.current_thread() is threading.main_thread():
        for sig in TERMINATIONS:
            if signal.getsignal(sig) is signal.SIG_DFL:
                installed[sig] = signal.signal(sig, unwind)
    try:
        yield
    finally:
        for sig, previous in installed.items():
            signal.signal(sig, previous)


@contextlib.contextmanager
def trial_folder() -> Iterator[Path]:
    """The trial's temporary folder, removed when the block ends, however it ends. Removes
    the folders of drivers killed earlier first, and lets SIGTERM/SIGHUP unwind through the
    block (processes started inside must be ended by `ending_on_error`)."""
    remove_stale_trial_dirs()
    with _terminate_unwinds(), tempfile.TemporaryDirectory(prefix=f"{TRIAL_DIR_PREFIX}{os.getpid()}-") as tmp:
        yield Path(tmp)


# --- what a child is given ----------------------------------------------------------------

def write_spec(folder: Path, spec: TrialSpec) -> Path:
    """Write the spec every rank reads into the trial's folder; returns its path."""
    path = folder / "spec.json"
    path.write_text(spec.model_dump_json(), encoding="utf-8")
    return path


def rank_report_path(folder: Path, rank: int) -> Path:
    """Where rank `rank` writes its report: a file of its own, so a dead rank cannot take the
    others' reports with it (runner/rank_files.py names every rank's files)."""
    return rank_files.report_path(folder, rank)


def child_command(spec_path: Path, report_path: Path) -> list[str]:
    """The command of one trial child (one rank): `python -m rigbench.runner.child SPEC REPORT`."""
    return [*CHILD_MODULE, str(spec_path), str(report_path)]


#: How a trial child is started cold: its arguments follow.
CHILD_MODULE = (sys.executable, "-m", "rigbench.runner.child")


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


# --- processes ----------------------------------------------------------------------------

def new_session_args() -> dict:
    """Popen arguments that keep Ctrl-C away from the child (the parent ends it itself)."""
    if sys.platform == "win32":  # (not os.name: type checkers understand sys.platform)
        return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
    return {"start_new_session": True}


class ChildProcess(Protocol):
    """What the launchers use of a started process: a subprocess.Popen, or a trial forked by
    the warm-start server (warm_start.ForkedTrial)."""

    pid: int
    returncode: int | None

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


def kill_group(proc: ChildProcess) -> None:
    """Kill the child and everything it started and reap it: its process group (POSIX), and
    every descendant that left the group (torch's elastic agent starts each rank in a
    session of its own), listed before anything is killed so none is missed re-parented."""
    try:
        descendants = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:  # already gone
        descendants = []
    for pid in [proc.pid, *(d.pid for d in descendants)]:
        with contextlib.suppress(ProcessLookupError, PermissionError, psutil.Error):
            if hasattr(os, "killpg"):
                os.killpg(pid, signal.SIGKILL) if os.getpgid(pid) == pid else os.kill(pid, signal.SIGKILL)
            else:  # Windows: no process groups to signal
                psutil.Process(pid).kill()
    proc.wait()
    # Descendants are not ours to reap (their parent is), but a launch that returns must not
    # leave one running: wait until each has ended (a zombie counts as ended).
    psutil.wait_procs(descendants, timeout=KILL_WAIT_S)


@dataclass
class Started:
    """One process a launcher started: the process, the file its stderr goes to, and the
    Tracker sampling its process tree (one per started process)."""

    proc: ChildProcess
    stderr_path: Path
    tracker: Tracker

    @property
    def pid(self) -> int:
        return self.proc.pid


def start_process(argv: Sequence[str], env: Mapping[str, str], stderr_path: Path,
                  tracking: TrackerSettings, warm_framework: str | None = None,
                  on_progress: Callable[[str], None] | None = None) -> Started:
    """Start `argv` in a new session with stdin and stdout on the null device and stderr in
    `stderr_path`, and a Tracker on its process tree. A new session: Ctrl-C reaches only the
    parent, which then ends the child itself, and a timeout can kill the child's whole
    process group. A trial child (`argv` = child_command) of `warm_framework` is forked by
    the warm-start server where it can be (launchers/warm_start.py), else started cold;
    `on_progress` hears when a server must first import the framework (seconds)."""
    proc: ChildProcess | None = None
    if warm_framework is not None and tuple(argv[:len(CHILD_MODULE)]) == CHILD_MODULE:
        proc = warm_start.start_trial(argv[len(CHILD_MODULE):], env, str(stderr_path), warm_framework, on_progress)
    if proc is None:
        with open(stderr_path, "wb") as err:  # the child holds its own descriptor once started
            proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=err, env=dict(env), **new_session_args())
    try:
        tracker = Tracker(proc.pid, interval=tracking.interval_s, gpu_index=tracking.gpu_index)
        tracker.start()
    except BaseException:  # no process may outlive a launch that failed to watch it
        kill_group(proc)
        raise
    return Started(proc, stderr_path, tracker)


@contextlib.contextmanager
def ending_on_error(started: list[Started]) -> Iterator[list[Started]]:
    """Guard a launch: if the block raises (KeyboardInterrupt, SIGTERM's unwinding, a bug),
    every process in `started` (the list may grow inside the block) has its group killed and
    its tracker stopped before the exception goes on."""
    try:
        yield started
    except BaseException:
        for one in started:
            kill_group(one.proc)
        for one in started:
            one.tracker.stop()
        raise


#: Seconds a training child gets, after the SIGINT that stops it, to write its finished epochs.
INTERRUPT_GRACE_S = 10.0


def interrupt_for_report(one: Started, grace_s: float = INTERRUPT_GRACE_S) -> bool:
    """Stop a child with SIGINT to its process group (as Ctrl-C would, had it not its own
    session), so that a training run reports the epochs it finished; True if it exited within
    `grace_s`. POSIX only (elsewhere the caller kills it as before)."""
    if os.name != "posix":
        return False
    try:
        os.killpg(one.proc.pid, signal.SIGINT)
        one.proc.wait(timeout=grace_s)
    except (ProcessLookupError, PermissionError):
        return one.proc.poll() is not None
    except subprocess.TimeoutExpired:
        return False
    return True


def exited_within(one: Started, timeout_s: float) -> bool:
    """Wait up to `timeout_s` for one process to exit; True if it did (it is left running if
    not, for the caller to ask for a report first)."""
    try:
        one.proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return False
    return True


def wait_all(started: Sequence[Started], timeout_s: float) -> list[bool]:
    """Wait until every process has exited, `timeout_s` for all of them together. Returns,
    per process, whether it was still running when the time was up. If any was, every
    process group is killed: the trial is over, and a rank that finished may have left
    descendants (a data loader's workers) behind."""
    deadline = time.monotonic() + timeout_s
    for one in started:
        try:
            one.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            break
    running = [one.proc.poll() is None for one in started]
    if any(running):
        for one in started:
            kill_group(one.proc)
    return running


# --- reports ------------------------------------------------------------------------------

#: What a native runtime prints when it cannot start a thread or get memory. Under
#: --memory-limit (an address-space cap) that means the cap was reached: thread stacks and
#: malloc arenas reserve address space. Seen on a 16-core GPU machine with CUDA torch:
#: "libgomp: Thread creation failed: Resource temporarily unavailable", exit code 1. And on the
#: dev VM, JAX's cnn under a 1 GiB cap, from glibc starting a thread: "cannot allocate memory for
#: thread-local data: ABORT", exit code 127. Matched whatever the case.
_CAP_EXHAUSTED = ("thread creation failed", "resource temporarily unavailable", "std::bad_alloc",
                  "cannot allocate memory")


#: Signals of native code that used a failed allocation: JAX's cnn under a 1 GiB cap on the dev
#: VM ended as oom, by SIGSEGV in XLA's compiler or by glibc's message, from run to run.
#: (getattr: Windows' signal module has no SIGBUS, and this module is imported by every command.)
_UNCHECKED_ALLOCATION = tuple(getattr(signal, name) for name in ("SIGSEGV", "SIGABRT", "SIGBUS") if hasattr(signal, name))


def describe_exit(returncode: int, stderr_tail: str, spec: TrialSpec) -> ChildReport:
    """The report of a child that ended without writing one: a crash, named by its signal;
    `oom` when it ran under --memory-limit and the native runtime said it ran out. The error is
    the tail of stderr, then the headline: its last line, as for a traceback, which is the line
    the short displays show (textlimits.error_line)."""
    if spec.measure.memory_limit_bytes and any(text in stderr_tail.lower() for text in _CAP_EXHAUSTED):
        limit = spec.measure.memory_limit_bytes / 2**20
        return ChildReport(status="oom", error=with_stderr(stderr_tail, (
            f"the trial's process exited with {exit_code_text(returncode)}: the memory limit ({limit:.0f} MiB, an "
            f"address-space cap that thread stacks also count against) left too little")))
    if returncode < 0:
        hint = ""
        if -returncode == signal.SIGKILL:  # a negative code: POSIX, which has SIGKILL
            hint = " (if no one killed it, likely the kernel's out-of-memory killer"
            hint += "; try --memory-limit" if not spec.measure.memory_limit_bytes else ""
            hint += ")"
        elif spec.measure.memory_limit_bytes and -returncode in _UNCHECKED_ALLOCATION:
            hint = (" (under --memory-limit, native code that uses an allocation without checking it "
                    "crashes this way when the cap is reached: try a larger limit)")
        message = f"the trial's process was killed by {signal_name(-returncode)}{hint}"
    else:
        message = f"the trial's process exited with {exit_code_text(returncode)} without a report"
    return ChildReport(status="crash", error=with_stderr(stderr_tail, message))


def with_stderr(stderr_tail: str, headline: str) -> str:
    """A failure's error text: what the process printed last, then the headline."""
    return f"{stderr_tail.strip()}\n{headline}" if stderr_tail.strip() else headline


def read_report(report_path: Path, spec: TrialSpec, *, timed_out: bool, returncode: int | None,
                stderr: str = "", rank: int = 0) -> ChildReport:
    """Rank `rank`'s report: `timeout` if its process was still running at the deadline
    (even one that wrote its report but did not exit: the trial did not end in time), else
    the report it wrote, else `describe_exit` from its exit code and `stderr` (its tail),
    else (no exit code: a rank under an agent) a crash saying it wrote no report. Reports
    the launcher writes carry `rank` and `spec.world_size`."""
    if not timed_out and report_path.exists():
        return ChildReport.model_validate_json(report_path.read_text(encoding="utf-8"))
    if timed_out:
        report = ChildReport(status="timeout",
                             error=f"the trial did not finish within {spec.measure.timeout_s:g} s (--timeout)")
    elif returncode is not None:
        report = describe_exit(returncode, stderr, spec)
    else:
        report = ChildReport(status="crash", error="the trial's process ended without a report"
                             + (f"\n{stderr.strip()}" if stderr.strip() else ""))
    return report.model_copy(update={"rank": rank, "world_size": spec.world_size})
