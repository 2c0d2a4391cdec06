"""The launch steps (runner/launchers/steps.py) on small real processes (plain `python -c`, no
framework): sessions, stderr files, one timeout for many processes, every group killed on
timeout or interruption, and which report a rank gets. The "process" launcher composed of
them runs real trials in tests/integration/test_isolation.py."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import psutil
import pytest

from rigbench.child_report import ChildReport
from rigbench.runner.launchers.base import TrackerSettings
from rigbench.runner.launchers.crash_output import stderr_tail
from rigbench.runner.launchers.steps import (
    TRIAL_DIR_PREFIX,
    Started,
    child_command,
    ending_on_error,
    rank_report_path,
    read_report,
    start_process,
    trial_folder,
    wait_all,
    write_spec,
)
from rigbench.spec import TrialSpec
from rigbench.trackers.sampler import Tracker
from tests.conftest import quick_spec

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="process groups are POSIX")

TRACKING = TrackerSettings(interval_s=0.05)
#: Starts a grandchild in its own process group, writes its pid to argv[1], then sleeps.
PARENT_OF_SLEEPER = (
    "import subprocess, sys, time\n"
    "kid = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
    "open(sys.argv[1], 'w').write(str(kid.pid))\n"
    "time.sleep(120)\n"
)


def python(code: str, *args: str) -> list[str]:
    return [sys.executable, "-c", code, *args]


def start(tmp_path: Path, name: str, code: str, *args: str) -> Started:
    return start_process(python(code, *args), dict(os.environ), tmp_path / f"{name}.err", TRACKING)


def wait_for_file(path: Path, timeout_s: float = 30.0) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists() and path.read_text():
            return path.read_text()
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared")


def ended(pid: int, timeout_s: float = 10.0) -> bool:
    """Gone, or a zombie waiting for a reaper that is not us (a killed grandchild)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def test_a_started_process_has_its_own_session_and_its_stderr_in_a_file(tmp_path):
    one = start(tmp_path, "rank0", "import os, sys; sys.stderr.write(str(os.getsid(0))); sys.exit(3)")
    assert wait_all([one], timeout_s=60) == [False]
    assert one.proc.returncode == 3
    assert stderr_tail(one.stderr_path) == str(one.pid)  # session id == its own pid
    one.tracker.stop()


def test_the_timeout_is_shared_and_kills_every_group(tmp_path):
    quick = start(tmp_path, "quick", "pass")
    slow = start(tmp_path, "slow", PARENT_OF_SLEEPER, str(tmp_path / "kid"))
    grandchild = int(wait_for_file(tmp_path / "kid"))
    began = time.monotonic()
    assert wait_all([quick, slow], timeout_s=1.0) == [False, True]
    assert time.monotonic() - began < 30
    assert quick.proc.returncode == 0 and slow.proc.returncode == -9
    assert ended(grandchild)  # killed with its process group, not orphaned
    for one in (quick, slow):
        one.tracker.stop()


def test_an_interrupted_launch_kills_every_started_process_and_stops_its_tracker(tmp_path, monkeypatch):
    stopped = []
    real_stop = Tracker.stop
    monkeypatch.setattr(Tracker, "stop", lambda self: stopped.append(self.pid) or real_stop(self))
    started: list[Started] = []
    with pytest.raises(KeyboardInterrupt), ending_on_error(started):
        started.append(start(tmp_path, "a", "import time; time.sleep(120)"))
        started.append(start(tmp_path, "b", PARENT_OF_SLEEPER, str(tmp_path / "kid")))
        wait_for_file(tmp_path / "kid")
        raise KeyboardInterrupt
    assert [one.proc.returncode for one in started] == [-9, -9]  # reaped by the kill
    assert ended(int((tmp_path / "kid").read_text()))
    assert stopped == [one.pid for one in started]


def test_the_trial_folder_is_named_for_this_driver_and_removed_however_the_block_ends():
    with trial_folder() as folder:
        assert folder.name.startswith(f"{TRIAL_DIR_PREFIX}{os.getpid()}-")
        spec = quick_spec()
        assert TrialSpec.model_validate_json(write_spec(folder, spec).read_text()) == spec
    assert not folder.exists()
    with pytest.raises(RuntimeError), trial_folder() as failed:
        raise RuntimeError("boom")
    assert not failed.exists()


def test_each_rank_has_a_report_file_of_its_own(tmp_path):
    paths = {rank_report_path(tmp_path, r) for r in range(4)}
    assert len(paths) == 4 and all(p.parent == tmp_path for p in paths)
    assert child_command(tmp_path / "s.json", tmp_path / "r.json")[1:] == [
        "-m", "rigbench.runner.child", str(tmp_path / "s.json"), str(tmp_path / "r.json")]


def test_which_report_a_rank_gets(tmp_path):
    spec = quick_spec(timeout_s=8).model_copy(update={"world_size": 2})
    path = rank_report_path(tmp_path, 1)
    missing = read_report(path, spec, timed_out=False, returncode=-11, stderr="Fatal Python error", rank=1)
    assert missing.status == "crash" and "SIGSEGV" in missing.error and missing.error.startswith("Fatal Python error")
    assert (missing.rank, missing.world_size) == (1, 2)  # the launcher's report says whose it is
    no_code = read_report(path, spec, timed_out=False, returncode=None, rank=1)  # a rank under an agent
    assert no_code.status == "crash" and "without a report" in no_code.error
    path.write_text(ChildReport(status="ok", rank=1, world_size=2, step_times_s=[0.1]).model_dump_json())
    assert read_report(path, spec, timed_out=False, returncode=0, rank=1).step_times_s == [0.1]
    # still running at the deadline: a timeout, whether or not it wrote its report first
    late = read_report(path, spec, timed_out=True, returncode=-9, rank=1)
    assert late.status == "timeout" and "8 s" in late.error and late.rank == 1
