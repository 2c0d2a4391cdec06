"""`rigbench calibrate --quick` against the full calibration, side by side in one run.

Alternates full and quick calibrations of one device (fp32 matmul, plus memory bandwidth),
each a real `rigbench calibrate` command into a scratch database, so that drift in the
machine's load hits both alike. Prints each round's figures and the ratio quick/full per round,
then the median ratio; the target (issue 11) is within 20% on a quiet machine. The load
average before each command is printed too: a busy machine reads both low, and unevenly.

Usage: python benchmarks/calibrate_quick.py [--device cpu] [--rounds 3] [--framework torch]
                                            [--threads N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def calibrate(device: str, quick: bool, db: str, framework: str, threads: int | None) -> dict[str, float]:
    """{kind: value} of one calibration (fp32 matmul FLOP/s, memory bandwidth B/s)."""
    cmd = [sys.executable, "-m", "rigbench", "calibrate", "-d", device, "--precision", "fp32",
           "--framework", framework, "--db", db, "--json"]
    cmd += ["--quick"] if quick else []
    cmd += ["--threads", str(threads)] if threads else []
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    found: dict[str, float] = {}
    for calibration in json.loads(done.stdout)["devices"]:
        for row in calibration["measurements"]:
            if row["status"] == "ok" and row["kind"] in ("matmul", "memory_bandwidth"):
                found[row["kind"]] = row["value"]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--framework", default="torch")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    ratios: dict[str, list[float]] = {"matmul": [], "memory_bandwidth": []}
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "calibrate.db")
        print(f"{'round':>5} {'load':>5} {'full GFLOP/s':>13} {'quick GFLOP/s':>14} {'ratio':>6} "
              f"{'full GB/s':>10} {'quick GB/s':>11} {'ratio':>6}")
        for i in range(1, args.rounds + 1):
            load = os.getloadavg()[0]
            full = calibrate(args.device, False, db, args.framework, args.threads)
            quick = calibrate(args.device, True, db, args.framework, args.threads)
            row = []
            for kind, scale in (("matmul", 1e9), ("memory_bandwidth", 1e9)):
                ratio = quick[kind] / full[kind]
                ratios[kind].append(ratio)
                row += [f"{full[kind] / scale:>13.1f}", f"{quick[kind] / scale:>14.1f}", f"{ratio:>6.3f}"]
            print(f"{i:>5} {load:>5.2f} " + " ".join(row))
    for kind, values in ratios.items():
        worst = max(values, key=lambda r: abs(r - 1))
        print(f"{kind}: quick/full median {statistics.median(values):.3f}, furthest from 1: {worst:.3f} "
              f"({'every round within 20%' if abs(worst - 1) <= 0.2 else 'at least one round outside 20%'})")


if __name__ == "__main__":
    main()
