"""trackers/proc_reading: one read of /proc/PID/stat gives what psutil's three calls give."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from rigbench.trackers import proc_reading

#: Busy for a while, under a command name with spaces and parentheses (which /proc/PID/stat
#: prints inside its own parentheses), holding about 100 MiB.
ODD_NAME = r"""
import time
block = b"\x01" * (100 * 2**20)  # written, so resident
open("/proc/self/comm", "w").write("a) b (c")  # the name says: ready
end = time.monotonic() + 30
while time.monotonic() < end:
    pass
"""


@pytest.fixture
def busy():
    child = subprocess.Popen([sys.executable, "-c", ODD_NAME])
    proc = psutil.Process(child.pid)
    deadline = time.monotonic() + 10
    while (proc.name() != "a) b (c" or sum(proc.cpu_times()[:2]) < 0.3) and time.monotonic() < deadline:
        time.sleep(0.02)  # named, and enough CPU time that a wrong field would show
    yield proc
    child.kill()
    child.wait()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the /proc reading is Linux's")
@pytest.mark.parametrize("linux", [True, False], ids=["proc-stat", "psutil"])
def test_the_reading_agrees_with_psutil(busy, linux, monkeypatch):
    monkeypatch.setattr(proc_reading, "_LINUX", linux)
    reading = proc_reading.read(busy)
    with busy.oneshot():
        times, rss = busy.cpu_times(), busy.memory_info().rss
    assert busy.name() == "a) b (c"
    assert reading.cpu_s == pytest.approx(times.user + times.system, abs=0.05)  # read a moment apart
    assert reading.rss_bytes == pytest.approx(rss, rel=0.05) and reading.rss_bytes > 100 * 2**20
    assert not reading.zombie


@pytest.mark.parametrize("reap", [True, False], ids=["reaped", "zombie"])
def test_an_ended_process_is_gone_or_a_zombie(reap):
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    proc = psutil.Process(child.pid)
    if reap:
        child.wait()
        with pytest.raises(proc_reading.ProcessGone):
            proc_reading.read(proc)
        return
    deadline = time.monotonic() + 10
    while proc.status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc_reading.read(proc).zombie
    child.wait()
