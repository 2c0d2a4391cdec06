"""What another process's load does to a trial, and whether rigbench flags it: the figures of
docs/METHODOLOGY.md "A busy machine", side by side in one run.

For each thread setting (torch's own choice, then `--threads 1`), `rigbench run WORKLOAD --quick
-d cpu` runs quiet, then beside SPINNERS processes that spin at normal priority (`python -c
"while True: pass"`), alternating, ROUNDS times. Printed per trial: samples/s, the step-time CV,
other processes' share of the CPU (`others_cpu_pct_mean`) and whether the trial was flagged
`busy` (analysis/contention.BUSY_OTHERS_PCT); then per thread setting the median quiet / busy
speed ratio. Every quiet trial should be unflagged and every loaded one flagged: the script says
when one is not (the machine was not quiet to begin with, or the threshold is wrong).

Usage: python benchmarks/busy_machine.py [--workload gpt] [--spinners 1] [--rounds 1]
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

from rigbench.analysis.contention import BUSY_OTHERS_PCT

SPIN = "while True: pass"


def one_trial(workload: str, threads: int | None, spinners: int) -> dict:
    """The trial's exported row, measured beside `spinners` spinning processes."""
    procs = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(spinners)]
    try:
        if procs:
            time.sleep(0.5)  # the spinners are running
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [sys.executable, "-m", "rigbench", "run", workload, "--quick", "-d", "cpu",
                   "--db", os.path.join(tmp, "busy.db"), "--json"]
            cmd += ["--threads", str(threads)] if threads else []
            proc = subprocess.run(cmd, capture_output=True, text=True)
    finally:
        for p in procs:
            p.kill()
            p.wait()
    if proc.returncode != 0:
        raise SystemExit(f"rigbench run failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    [row] = json.loads(proc.stdout)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", default="gpt")
    parser.add_argument("--spinners", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    wrong = 0
    for threads in (None, 1):
        label = "torch's own threads" if threads is None else f"--threads {threads}"
        speeds: dict[str, list[float]] = {"quiet": [], "busy": []}
        for _ in range(args.rounds):
            for mode in ("quiet", "busy"):
                row = one_trial(args.workload, threads, args.spinners if mode == "busy" else 0)
                others = row["others_cpu_pct_mean"]
                flagged = others is not None and others >= BUSY_OTHERS_PCT
                wrong += flagged != (mode == "busy")
                speeds[mode].append(row["samples_per_s"])
                print(f"{label}, {mode:5}: {row['samples_per_s']:9.1f} samples/s, step CV {row['step_time_cv']:.3f}, "
                      f"threads {row['threads']}, others {others:.1f}% of the CPU, "
                      f"{'flagged busy' if flagged else 'not flagged'}", flush=True)
        quiet, busy = statistics.median(speeds["quiet"]), statistics.median(speeds["busy"])
        print(f"{label}: quiet / beside {args.spinners} spinning process(es) = {quiet / busy:.2f}x")
    print("every trial flagged as expected" if not wrong else
          f"{wrong} trial(s) flagged otherwise than expected (busy from {BUSY_OTHERS_PCT:g}%)")


if __name__ == "__main__":
    main()
