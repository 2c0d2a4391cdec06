"""macOS and Windows, checked on Linux: the code a user there runs, with the platform faked
(sys.platform, the POSIX-only functions and signals taken away). Nothing here runs on the
real platforms; README.md ("Platforms") says what that leaves unchecked."""

import contextlib
import os
import resource
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path, PureWindowsPath
from types import SimpleNamespace

import psutil
import pytest
from typer.testing import CliRunner

from rigbench.cli import app, interrupts
from rigbench.errors import UnsupportedError
from rigbench.experiments import calibrate
from rigbench.experiments import devices as experiment_devices
from rigbench.experiments import recommend as experiment
from rigbench.experiments.recommend import recommend
from rigbench.reports.terminal import command_shown
from rigbench.runner import child, memory_cap, probe
from rigbench.runner.launchers import steps
from rigbench.spec import Metrics, Result, TrialSpec
from rigbench.store import Store
from rigbench.store.engine import sqlite_file, sqlite_url

ROOT = Path(__file__).parents[2]

#: A Python process that looks like Windows to rigbench: no POSIX signals beyond Windows' own,
#: no fork/setsid/killpg/getuid/..., no `resource`, sys.platform "win32". Third-party modules
#: are imported first, while the platform is still Linux (psutil, for one, refuses win32).
AS_WINDOWS = """
import importlib, os, signal, sys
import psutil, sqlalchemy, typer, rich.console
WINDOWS_SIGNALS = {"SIGABRT", "SIGFPE", "SIGILL", "SIGINT", "SIGSEGV", "SIGTERM", "SIGBREAK", "SIG_DFL", "SIG_IGN"}
for name in [n for n in vars(signal) if n.startswith("SIG") and n not in WINDOWS_SIGNALS]:
    delattr(signal, name)
for name in ("fork", "setsid", "killpg", "getpgid", "setpgrp", "getuid", "sched_getaffinity", "getloadavg",
             "uname", "sysconf", "WNOHANG"):
    if hasattr(os, name):
        delattr(os, name)
for name in ("resource", "fcntl", "termios", "pwd"):
    sys.modules[name] = None
sys.platform = "win32"
"""


def test_every_command_and_every_child_module_imports_as_on_windows():
    """Windows' signal module has no SIGBUS: naming it at import (launchers/steps.py) made every
    command, `rigbench --help` included, end in an AttributeError there."""
    script = AS_WINDOWS + """
for module in ("rigbench.cli", "rigbench.runner.child", "rigbench.runner.rank", "rigbench.runner.rank_agent",
               "rigbench.runner.torchrun_agent", "rigbench.runner.probe", "rigbench.runner.calibrate"):
    importlib.import_module(module)
sys.argv = ["rigbench", "--help"]
import rigbench.cli
rigbench.cli.main()
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "rigbench run --quick" in done.stdout


def test_stale_trial_folders_are_told_without_os_kill(tmp_path, monkeypatch):
    """On Windows os.kill(pid, 0) is no existence check: signal 0 is CTRL_C_EVENT. A launch
    removing a killed driver's folder must ask psutil instead."""
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        dead_folder = tmp_path / f"{steps.TRIAL_DIR_PREFIX}{ended.pid}-x"
        live_folder = tmp_path / f"{steps.TRIAL_DIR_PREFIX}{running.pid}-x"
        dead_folder.mkdir()
        live_folder.mkdir()

        def no_kill(*args):
            raise AssertionError(f"os.kill{args}")

        with monkeypatch.context() as patch:
            patch.setattr(steps.os, "kill", no_kill)
            assert steps.remove_stale_trial_dirs(tmp_path) == [dead_folder]
        assert live_folder.exists()
    finally:
        running.kill()
        running.wait()


def test_a_trial_is_killed_with_its_descendants_where_there_are_no_process_groups(monkeypatch):
    """Windows has no killpg: kill_group kills the process and what it started through psutil."""
    parent = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                               "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
                               "time.sleep(60)"])
    deadline = time.monotonic() + 30
    while not psutil.Process(parent.pid).children() and time.monotonic() < deadline:
        time.sleep(0.05)
    [child] = psutil.Process(parent.pid).children()
    monkeypatch.delattr(steps.os, "killpg")
    monkeypatch.delattr(steps.os, "getpgid")
    steps.kill_group(parent)
    assert parent.returncode is not None
    assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE


# --- the memory cap: Linux's RLIMIT_AS, which macOS does not enforce and Windows lacks -----------

def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def one_line_error(result) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    [line] = result.stderr.strip().splitlines()
    return line


@pytest.mark.parametrize("platform, why", [("darwin", "macOS does not enforce it"), ("win32", "Windows has none")])
def test_memory_limit_is_refused_before_anything_runs_off_linux(platform, why, tmp_path, monkeypatch):
    """A capped trial off Linux ended `unsupported` (Windows) or `crash` (macOS: setrlimit's EINVAL),
    each after its child had started, or ran uncapped where macOS took the limit and ignored it."""
    monkeypatch.setattr(experiment_devices, "framework_devices", lambda framework: ["cpu"])
    monkeypatch.setattr(sys, "platform", platform)
    db = tmp_path / "r.db"
    line = one_line_error(invoke("run", "mlp", "-d", "cpu", "--quick", "--memory-limit", "1GiB", "--db", str(db)))
    assert "--memory-limit cannot work here" in line and why in line and "run without it, or on Linux" in line
    assert not db.exists() or Store(str(db)).runs() == []
    line = one_line_error(invoke("max-batch", "mlp", "-d", "cpu", "--db", str(db)))  # its default cap too
    assert "max-batch on the CPU runs each probe under a memory cap" in line and why in line and "-d mps" in line
    assert not db.exists() or Store(str(db)).runs() == []
    monkeypatch.setattr(resource, "setrlimit", lambda *a: pytest.fail("capped the test's own process"))
    with pytest.raises(UnsupportedError, match=why):  # the child's own check, should a trial get there
        memory_cap.apply_memory_limit(2**30)


def test_recommend_leaves_the_cpus_search_out_on_macos_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    db = str(tmp_path / "empty.db")
    Store(db)
    outcome = recommend("mlp", devices=["cpu"], run_missing=False, db=db)
    assert outcome.missing[0] == ("max-batch on cpu (not searched: a trial's memory is capped with Linux's "
                                  "address-space limit (RLIMIT_AS), and macOS does not enforce it)")
    monkeypatch.setattr(experiment.max_batch, "find_max_batch", lambda *a, **k: pytest.fail("searched on macOS"))

    def stop(*_a, **_k):
        raise KeyboardInterrupt  # the search was skipped; the trials after it need not run here

    monkeypatch.setattr("rigbench.experiments.recommend_trials.run_trials", stop)
    with contextlib.suppress(KeyboardInterrupt):
        recommend("mlp", devices=["cpu"], batch_sizes=[64], db=db)


# --- data-parallel ranks ---------------------------------------------------------------------

def test_data_parallel_is_refused_before_anything_runs_on_windows(tmp_path, monkeypatch):
    monkeypatch.setattr(experiment_devices, "framework_devices", lambda framework: ["cpu"])
    monkeypatch.setattr(sys, "platform", "win32")
    db = tmp_path / "r.db"
    line = one_line_error(invoke("run", "mlp", "-d", "cpu", "--quick", "--processes", "2", "--db", str(db)))
    assert "data-parallel trials (--processes, --data-parallel) do not run on Windows" in line and "WSL2" in line
    assert not db.exists() or Store(str(db)).runs() == []


@pytest.mark.parametrize("device", ["mps", "dml:0"])
def test_data_parallel_on_an_apple_gpu_or_directml_is_refused(device, tmp_path, monkeypatch):
    """No collective backend reduces their tensors: every rank would crash at its first all-reduce."""
    monkeypatch.setattr(experiment_devices, "framework_devices", lambda framework: ["cpu", device])
    line = one_line_error(invoke("run", "mlp", "-d", device, "--quick", "--data-parallel",
                                 "--db", str(tmp_path / "r.db")))
    assert f"-d {device} with data-parallel ranks" in line and "run data-parallel on cpu or cuda" in line


# --- a trial's process, its parent and its signals --------------------------------------------

def test_a_trial_ends_with_its_parent_where_nothing_is_re_parented(monkeypatch):
    """Windows re-parents no orphan: getppid() names the dead parent for ever, and a trial of a
    killed `rigbench sweep` ran on beside the resumed one."""
    parent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    exited = threading.Event()
    monkeypatch.setenv("RIGBENCH_PARENT_PID", str(parent.pid))
    monkeypatch.setattr(child.os, "name", "nt")
    monkeypatch.setattr(child.os, "getppid", lambda: parent.pid)
    monkeypatch.setattr(child.os, "_exit", lambda code: exited.set())
    child.exit_with_parent(poll_s=0.01)
    try:
        assert not exited.wait(0.2)  # the parent runs: so does the trial
    finally:
        parent.kill()
        parent.wait()
    assert exited.wait(10)


def test_an_interrupt_a_finaliser_swallowed_is_sent_again_without_os_kill_on_windows(monkeypatch):
    """On Windows os.kill(own pid, SIGINT) is TerminateProcess: the command ended on the spot,
    with no line saying what was kept and its trial's child left running."""
    got = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: got.set())
    try:
        monkeypatch.setattr(interrupts.os, "name", "nt")
        monkeypatch.setattr(interrupts.os, "kill", lambda *a: pytest.fail(f"os.kill{a}"))
        interrupts._redeliver(SimpleNamespace(exc_type=KeyboardInterrupt))
        deadline = time.monotonic() + 10
        while not got.is_set() and time.monotonic() < deadline:
            time.sleep(0.01)  # the handler runs in this, the main thread, between two sleeps
    finally:
        signal.signal(signal.SIGINT, previous)
    assert got.is_set()


# --- text written and read ----------------------------------------------------------------------

def test_stored_text_reaches_a_redirected_stdout_whatever_its_code_page(tmp_path):
    """Windows encodes a redirected stdout in its ANSI code page (PYTHONIOENCODING=cp1252 does
    the same here): `results export` (and `results show`) ended in a UnicodeEncodeError at "→"."""
    db = str(tmp_path / "r.db")
    store = Store(db)
    store.add_run("run1", "2026-01-01T00:00:00+00:00", "test", {"hostname": "h"})
    store.add_result(Result(run_id="run1", created_at="2026-01-01T00:00:00+00:00", status="crash",
                            spec=TrialSpec(workload="mlp", device="cpu", batch_size=16),
                            error="loss 2.3 → nan at step ≥ 5", metrics=Metrics()))
    env = {**os.environ, "PYTHONIOENCODING": "cp1252"}
    done = subprocess.run([sys.executable, "-m", "rigbench", "results", "export", "--format", "csv", "--db", db],
                          capture_output=True, env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert "loss 2.3 → nan at step ≥ 5" in done.stdout.decode("utf-8")


def test_a_childs_undecodable_output_ends_neither_the_device_probe_nor_a_calibration(tmp_path, monkeypatch):
    """A native library may write bytes the parent's locale cannot decode (Windows' cp1252 leaves
    five undefined; here UTF-8 cannot read 0xff): `rigbench devices` and `calibrate` ended in a
    UnicodeDecodeError instead of reading the child's answer."""
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nprintf '\\377\\201 a native warning\\n' >&2\n"
                    "echo '{\"torch\": {\"framework\": \"torch\", \"software\": {}, \"devices\": []}}'\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake))
    monkeypatch.setattr(probe, "_answers", {})  # the fake's answer is not this worker's torch
    assert probe.probe_group(["torch"]) == {"torch": {"framework": "torch", "software": {}, "devices": []}}
    found = calibrate.calibrate_in_child("torch", "cpu", ["fp32"])  # the fake writes no calibration
    assert found["measurements"] == [] and "a native warning" in found["error"]


def test_the_runs_table_shows_the_program_without_its_folder_windows_or_spaced():
    """A stored command is shlex.join(sys.argv): on Windows its program is a quoted backslashed
    path, which `results runs` showed whole; a folder with a space was cut inside the quotes."""
    assert command_shown(shlex.join(["C:\\Users\\Ana\\venv\\Scripts\\rigbench.exe", "run", "-d", "dml:0"])) == \
        "rigbench.exe run -d dml:0"
    assert command_shown(shlex.join(["/home/ana/my venv/bin/rigbench", "run", "mlp"])) == "rigbench run mlp"
    assert command_shown("/opt/venv/bin/rigbench run -d cuda:0 --db 'a b.db'") == "rigbench run -d cuda:0 --db 'a b.db'"
    assert command_shown("rigbench run 'unclosed") == "rigbench run 'unclosed"
    assert command_shown("") == ""


def test_a_database_path_opens_the_file_it_names_whatever_its_characters(tmp_path):
    """SQLAlchemy reads `%XX` in a URL as an escape and ends the path at `?`: --db '100%20/r.db'
    opened '100 /r.db', and a Windows user's folder may hold a '%' as well."""
    folder = tmp_path / "100%20 a?b"
    folder.mkdir()
    Store(str(folder / "r.db")).add_run("run1", "2026-01-01T00:00:00+00:00", "test", {"hostname": "h"})
    assert (folder / "r.db").is_file() and list(tmp_path.iterdir()) == [folder]
    assert Store(str(folder / "r.db"), create=False).runs()[0]["id"] == "run1"
    windows = r"C:\Users\Ana\100%25\rigbench.db"
    assert sqlite_url(PureWindowsPath(windows)).startswith("sqlite:///C:\\Users\\Ana\\")
    assert str(sqlite_file(sqlite_url(PureWindowsPath(windows)))) == windows


def test_a_windows_crash_is_named_by_its_status_not_a_ten_digit_number():
    """A crashed Windows process exits with an NTSTATUS, which Python reads unsigned: 3221225477
    said nothing; 0xC0000005 with its meaning says what happened. POSIX codes stay as they were."""
    spec = TrialSpec(workload="mlp", batch_size=8)
    error = steps.describe_exit(0xC0000005, "", spec).error
    assert error == ("the trial's process exited with code 0xC0000005 (an access violation, a crash in native "
                     "code) without a report")
    assert "code 0xC0000409 (a fail-fast exit" in steps.describe_exit(3221226505, "", spec).error
    assert "code 0xC0DE0001 (a Windows error status)" in steps.describe_exit(0xC0DE0001, "", spec).error
    assert steps.describe_exit(1, "", spec).error == "the trial's process exited with code 1 without a report"
    assert steps.describe_exit(-11, "", spec).error == "the trial's process was killed by SIGSEGV"
