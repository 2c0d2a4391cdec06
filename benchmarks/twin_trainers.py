"""An A/A check of benchmarks/step_pairs.py's method: two identical rigbench trainers of one
framework in one process, their steps interleaved as step_pairs interleaves (A B B A ...).
Any ratio away from 1 is what placing two copies of one network in memory does, not a
harness: it is the per-process offset that self_check.py's interval over processes covers.

Usage: python benchmarks/twin_trainers.py [--framework torch] [--case mlp:64] [--threads 2]
                                          [--pairs 150] [--processes 5]
Each process prints one line: the ratio of the first trainer's steps to the second's, with
its 95% bootstrap interval over the pairs (analysis/paired.paired_ratio). step_pairs.interleave
takes the pairs, so --pairs counts in hundreds.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time


def twins(framework: str, workload: str, batch: int, threads: int, pairs: int) -> str:
    from step_pairs import cpu_trainer, interleave, timed_step

    from rigbench.analysis.paired import paired_ratio
    from rigbench.frameworks import load_adapter

    load_adapter(framework).prepare(threads)
    first, second = (cpu_trainer(framework, workload, batch, threads) for _ in range(2))
    a, b = interleave(timed_step(first), timed_step(second), lambda a, b: len(a) >= pairs)
    r = paired_ratio(a, b)
    return f"{r.ratio:.4f} [{r.low:.4f}-{r.high:.4f}] over {r.rounds} pairs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--framework", default="torch")
    parser.add_argument("--case", default="mlp:64")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--pairs", type=int, default=300)
    parser.add_argument("--processes", type=int, default=5)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    workload, batch = args.case.split(":")
    if args.child:
        print(twins(args.framework, workload, int(batch), args.threads, args.pairs))
        return
    from rigbench.frameworks import load_adapter
    from rigbench.spec import TrialSpec

    spec = TrialSpec(workload=workload, framework=args.framework, device="cpu", batch_size=int(batch),
                     threads=args.threads)
    env = {**os.environ, **load_adapter(args.framework).environment(spec)}
    print(f"{args.framework} {args.case}, {args.threads} threads: first / second trainer, one line per process")
    for _ in range(args.processes):
        started = time.perf_counter()
        out = subprocess.run([sys.executable, os.path.abspath(__file__), *sys.argv[1:], "--child"],
                             capture_output=True, text=True, env=env, check=True).stdout.strip().splitlines()[-1]
        print(f"  {out}  ({time.perf_counter() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
