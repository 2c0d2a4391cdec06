"""Data-parallel scaling on this machine, checked against things rigbench did not compute:

1. Measured against predicted efficiency at N processes (`rigbench scaling --processes 1,N`):
   the prediction is one process's step plus the all-reduce time the trial measured for the
   model's gradients, without overlap (analysis/process_scaling.py).
2. rigbench's data-parallel step against the DDP tutorial's step (zero_grad, loss, backward,
   SGD step on a DistributedDataParallel model), interleaved step by step in each of `--jobs`
   fresh `torchrun --standalone` jobs (benchmarks/ddp_pairs.py): the ratio is ours / bare of a
   step's time (each side's slowest rank), the geometric mean over a job's pairs, with a 95% t
   interval over the jobs (each job carries an offset of its own, as self_check.py's processes
   do). Target: within 1%. The step only: the parent's sampling thread, which self_check.py
   charges as a fixed cost, is not in it.

Usage: python benchmarks/scaling.py [--workload mlp] [--batch 64] [--processes 2] [--jobs 8] [--pairs 100]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile

from ddp_pairs import run_job

from rigbench import api
from rigbench.analysis.paired import paired_ratio, ratio_over_processes
from rigbench.analysis.process_scaling import process_scaling_rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", default="mlp")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=8, help="torchrun jobs of step pairs (the interval is over them)")
    parser.add_argument("--pairs", type=int, default=100, help="step pairs per job (a multiple of 100)")
    args = parser.parse_args()
    if args.jobs < 2 or args.pairs < 100 or args.pairs % 100:
        parser.error("--jobs must be at least 2 (the interval is over them) and --pairs a multiple of 100")
    db = tempfile.mktemp(suffix=".db")
    threads = max(1, (os.cpu_count() or 1) // args.processes)

    specs = api.plan_process_scaling(args.workload, [args.processes], "cpu", args.batch)
    rows = process_scaling_rows(api.run(specs, db=db, command="benchmarks/scaling.py").results)
    print(f"1. {args.workload} b{args.batch} per rank, weak scaling on the CPU:")
    for row in rows:
        print(f"   {row.processes} process(es): {row.samples_per_s or 0:,.1f} samples/s, efficiency "
              f"{_num(row.efficiency)} (95% CI {_ci(row.efficiency_ci)}), predicted {_num(row.predicted_efficiency)}, "
              f"comm share {_num(row.comm_share)}, gradient all-reduce {_num(row.allreduce_grad_ms)} ms")

    print(f"2. rigbench's data-parallel step against the DDP tutorial's: {args.processes} ranks x {threads} "
          f"thread(s), {args.jobs} torchrun jobs of {args.pairs} interleaved step pairs")
    per_job = []
    for i in range(args.jobs):
        found = run_job(args.workload, args.batch, threads, args.processes, args.pairs)
        if not found["replicas_identical"]:
            raise SystemExit("the ranks' replicas differ after the pairs: a side's step skipped the all-reduce")
        per_job.append(paired_ratio(found["ours"], found["bare"]).ratio)
        print(f"   job {i + 1}: ours/bare {per_job[-1]:.4f}, median bare step "
              f"{1e3 * statistics.median(found['bare']):.2f} ms", flush=True)
    step = ratio_over_processes(per_job)
    print(f"   ours/bare {step.ratio:.4f} [{step.low:.4f}-{step.high:.4f}] over {args.jobs} jobs; "
          f"verdict: {step.verdict()}")


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _ci(ci: tuple[float, float] | None) -> str:
    return "-" if ci is None else f"{ci[0]:.3f}-{ci[1]:.3f}"


if __name__ == "__main__":
    main()
