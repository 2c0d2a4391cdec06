"""A trial's temporary folder never outlives its driver: SIGTERM unwinds and removes it, and
the folder of a driver killed outright (SIGKILL) is removed by the next launch."""

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from rigbench.runner.launchers.process import TRIAL_DIR_PREFIX, remove_stale_trial_dirs

ROOT = Path(__file__).parents[2]
DRIVER = """
from rigbench.runner.launchers import TrackerSettings
from rigbench.runner.launchers.process import ProcessLauncher
from tests.conftest import quick_spec

spec = quick_spec("mlp", batch_size=16, min_seconds=300, timeout_s=300)
ProcessLauncher().launch(spec, TrackerSettings.for_spec(spec), on_start=lambda pid: print(pid, flush=True))
"""


def start_driver(tmp_path: Path) -> tuple[subprocess.Popen, int, Path]:
    """A driver process in the middle of a trial; returns it, its child's pid and the folder."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    driver = subprocess.Popen([sys.executable, "-c", DRIVER], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert driver.stdout is not None
    child_pid = int(driver.stdout.readline())  # printed once the child has started
    [folder] = tmp_path.glob(f"{TRIAL_DIR_PREFIX}{driver.pid}-*")
    assert (folder / "spec.json").exists()
    return driver, child_pid, folder


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.timeout(120)
def test_sigterm_of_the_driver_kills_the_child_and_removes_the_folder(tmp_path):
    driver, child_pid, folder = start_driver(tmp_path)
    driver.send_signal(signal.SIGTERM)
    assert driver.wait(timeout=60) == 128 + signal.SIGTERM
    assert "Traceback" not in driver.stderr.read()
    assert not folder.exists()
    assert gone(child_pid)  # kill_group waited for it


@pytest.mark.timeout(120)
def test_folder_of_a_killed_driver_is_removed_by_the_next_launch(tmp_path):
    driver, child_pid, folder = start_driver(tmp_path)
    driver.kill()  # SIGKILL: no handler runs, the folder stays
    driver.wait(timeout=60)
    with contextlib.suppress(ProcessLookupError):  # the orphan notices its parent's death itself
        os.killpg(child_pid, signal.SIGKILL)
    assert folder.exists()
    live = tmp_path / f"{TRIAL_DIR_PREFIX}{os.getpid()}-abc"  # a running driver's: kept
    live.mkdir()
    other = tmp_path / "rigbench-trial-notapid-x"
    other.mkdir()
    assert remove_stale_trial_dirs(tmp_path) == [folder]
    assert not folder.exists() and live.exists() and other.exists()
