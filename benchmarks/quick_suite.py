"""`rigbench run --quick` timed with every trial started cold and warm, side by side.

Cold: each trial's process is a new interpreter that imports its framework (RIGBENCH_COLD_START=1).
Warm: each trial's process is forked from a server that imported it once per run
(runner/forkserver.py). Rounds alternate cold and warm, so drift in the machine's speed hits
both alike; each round is the whole command as a user runs it (`python -m rigbench run --quick
-d DEVICE` in a fresh process, its own database), timed from outside. Printed: every round's
wall time, the median of each, their ratio, and the peak RSS each trial stored, cold against
warm (a warm trial must measure as a cold one does: runner/forkserver.py).

The goal (issue 25): the warm median at most 30 s on the 2-core dev VM.

Usage: python benchmarks/quick_suite.py [--rounds 2] [--device cpu]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def one_round(cold: bool, device: str) -> tuple[float, dict[str, float]]:
    """(wall seconds of `rigbench run --quick -d DEVICE`, {workload: peak RSS MiB})."""
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "quick.db")
        env = dict(os.environ, RIGBENCH_COLD_START="1" if cold else "0")
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "rigbench", "run", "--quick", "-d", device, "--db", db, "--json"],
                              capture_output=True, text=True, env=env)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"rigbench run failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
        rows = json.loads(proc.stdout)
    return wall, {row["workload"]: row["rss_peak_mib"] for row in rows if row["status"] == "ok"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    walls: dict[str, list[float]] = {"cold": [], "warm": []}
    rss: dict[str, list[dict[str, float]]] = {"cold": [], "warm": []}
    for i in range(args.rounds):
        for mode in ("cold", "warm"):
            wall, peaks = one_round(mode == "cold", args.device)
            walls[mode].append(wall)
            rss[mode].append(peaks)
            print(f"round {i + 1} {mode}: {wall:.1f} s", flush=True)
    cold, warm = statistics.median(walls["cold"]), statistics.median(walls["warm"])
    print(f"rigbench run --quick -d {args.device}: cold median {cold:.1f} s, warm median {warm:.1f} s, "
          f"warm/cold {warm / cold:.2f}")
    print("peak RSS MiB per workload, cold rounds | warm rounds:")
    for workload in rss["cold"][0]:
        cold_rss, warm_rss = (" ".join(mib(r.get(workload)) for r in rss[mode]) for mode in ("cold", "warm"))
        print(f"  {workload:12s} {cold_rss} | {warm_rss}")


def mib(value: float | None) -> str:
    """A peak as printed; `-` where the trial stored none (no tracker sample fell in its window)."""
    return "-" if value is None else f"{value:.0f}"


if __name__ == "__main__":
    main()
