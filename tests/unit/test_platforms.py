"""macOS and Windows, checked on Linux: the code a user there runs, with the platform faked
(sys.platform, the POSIX-only functions and signals taken away). Nothing here runs on the
real platforms; README.md ("Platforms") says what that leaves unchecked."""

import subprocess
import sys
import time
from pathlib import Path

import psutil

from rigbench.runner.launchers import steps

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
