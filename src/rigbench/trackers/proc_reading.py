"""One process's CPU time, resident memory and liveness, read once per sample.

Why not psutil's per-figure calls: the tracker samples the trial from the parent ten times a
second, and its CPU comes out of the cores the trial is measured on. On the 2-core dev VM every
read of a /proc file costs about 0.15 ms of CPU, and psutil's status(), cpu_percent() and
memory_info() are three reads (stat twice, statm once). On Linux /proc/PID/stat alone holds
the state, user and system time and the resident pages, so one read gives all three figures.
Elsewhere psutil reads them (in its oneshot mode, which shares what one read can).

Measured at 10 Hz on the dev VM (benchmarks/tracker_cost.py, 3 rounds of 8 s, quiet): a thread
that only wakes, 0.12% of one core; psutil's three calls plus the machine-wide CPU line, 0.55%;
the whole Tracker sample with this reading, 0.53%. The wake-up and each /proc read are most of
it, so the saving is one read per process.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import psutil

#: /proc/PID/stat's fields after the command name "(...)": 0 state, 11 utime, 12 stime, 21 rss
#: (proc(5): fields 3, 14, 15 and 24, counted from 1 with the pid and the name).
_STATE, _UTIME, _STIME, _RSS = 0, 11, 12, 21
_LINUX = sys.platform.startswith("linux")
_TICKS = os.sysconf("SC_CLK_TCK") if _LINUX else 100
_PAGE = os.sysconf("SC_PAGE_SIZE") if _LINUX else 4096


class ProcessGone(Exception):
    """The process exited or cannot be read."""


@dataclass(frozen=True)
class Reading:
    cpu_s: float  # user + system seconds since the process started (its threads, not its children)
    rss_bytes: int
    zombie: bool  # exited, not yet reaped by its parent


def read(proc: psutil.Process) -> Reading:
    """`proc`'s figures now; ProcessGone when it has ended or cannot be read."""
    if _LINUX:
        return _read_stat(proc.pid)
    try:
        with proc.oneshot():
            times = proc.cpu_times()
            return Reading(times.user + times.system, proc.memory_info().rss, proc.status() == psutil.STATUS_ZOMBIE)
    except (psutil.NoSuchProcess, psutil.AccessDenied) as exc:
        raise ProcessGone from exc


def _read_stat(pid: int) -> Reading:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError as exc:  # gone (ENOENT, ESRCH) or not ours to read
        raise ProcessGone from exc
    # The command name may hold spaces and parentheses: the fields start after its last ')'.
    fields = data[data.rindex(b")") + 2:].split()
    return Reading(cpu_s=(int(fields[_UTIME]) + int(fields[_STIME])) / _TICKS,
                   rss_bytes=int(fields[_RSS]) * _PAGE, zombie=fields[_STATE] == b"Z")
