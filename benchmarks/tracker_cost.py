"""What the tracker thread costs in CPU, in steady state: the share of a core it takes from the
machine a trial is measured on (self_check.py adds it to the harness's cost).

Each figure is this process's CPU time over a window in which only one sampling thread runs,
minus the same window with none, after a second of warm-up (so a tracker's start-up, paid
before a trial's timed steps, is left out). The thread samples a sleeping child process.
Rows, side by side in one run, repeated `--rounds` times in alternation:
  wake-only   a thread that wakes at the interval and does nothing
  psutil      psutil's status(), cpu_percent() and memory_info() plus the machine's CPU line
              (what each sample of the tracker read before trackers/proc_reading.py)
  tracker     rigbench's Tracker at the interval, descendants listed as it lists them

Usage: python benchmarks/tracker_cost.py [--interval 0.1] [--seconds 8] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import psutil

from rigbench.trackers.sampler import Tracker


def _cpu_pct(seconds: float) -> float:
    """This process's CPU over the next `seconds`, in % of one core."""
    cpu0, wall0 = time.process_time(), time.perf_counter()
    time.sleep(seconds)
    return (time.process_time() - cpu0) / (time.perf_counter() - wall0) * 100


def _steady_cost(start: Callable[[], object], stop: Callable[[], object], seconds: float) -> float:
    """CPU in % of one core while a sampler runs, a second after `start`, less the same without."""
    start()
    time.sleep(1.0)
    on = _cpu_pct(seconds)
    stop()
    return on - _cpu_pct(1.0)


def _thread_cost(sample: Callable[[], object], interval: float, seconds: float) -> float:
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(interval):
            sample()

    thread = threading.Thread(target=run, daemon=True)
    return _steady_cost(thread.start, lambda: (stop.set(), thread.join()), seconds)


def _tracker_cost(pid: int, interval: float, seconds: float) -> float:
    tracker = Tracker(pid, interval=interval)
    return _steady_cost(tracker.start, tracker.stop, seconds)


def tracker_cost(interval: float = 0.1, seconds: float = 8.0) -> float:
    """The Tracker's steady-state CPU in % of one core, sampling a sleeping child."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(100000)"])
    try:
        return _tracker_cost(child.pid, interval, seconds)
    finally:
        child.kill()
        child.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--interval", type=float, default=0.1)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(100000)"])
    proc = psutil.Process(child.pid)

    def psutil_sample() -> None:
        proc.status(), proc.cpu_percent(None), proc.memory_info(), psutil.cpu_percent(None)

    rows: dict[str, Callable[[], float]] = {
        "wake-only": lambda: _thread_cost(lambda: None, args.interval, args.seconds),
        "psutil": lambda: _thread_cost(psutil_sample, args.interval, args.seconds),
        "tracker": lambda: _tracker_cost(child.pid, args.interval, args.seconds),
    }
    found: dict[str, list[float]] = {name: [] for name in rows}
    try:
        for _ in range(args.rounds):
            for name, measure in rows.items():
                found[name].append(measure())
    finally:
        child.kill()
    print(f"sampling every {args.interval:g} s; CPU in % of one core, {args.rounds} rounds of {args.seconds:g} s")
    for name, values in found.items():
        print(f"  {name:10s} median {statistics.median(values):.3f}%  ({', '.join(f'{v:.3f}' for v in values)})")


if __name__ == "__main__":
    main()
