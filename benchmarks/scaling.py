"""Data-parallel scaling on this machine, checked against things rigbench did not compute:

1. Measured against predicted efficiency at N processes (`rigbench scaling --processes 1,N`):
   the prediction is one process's step plus the all-reduce time the trial measured for the
   model's gradients, without overlap (analysis/process_scaling.py).
2. rigbench's N-process throughput against a bare torchrun + DDP loop written from PyTorch's
   DDP tutorial (init_process_group, DistributedDataParallel, SGD; launched with the real
   `torchrun --standalone`), paired as benchmarks/self_check.py pairs them: the two run back to
   back each round, same workload, per-rank batch, thread count and step count; the ratio is
   rigbench's global batch / mean step (per-step max over ranks) over the bare loop's
   world x batch x steps / the slowest rank's elapsed time. Target: within 1% (0.99-1.00).

Usage: python benchmarks/scaling.py [--workload mlp] [--batch 64] [--processes 2] [--rounds 3] [--steps 30]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from rigbench import api
from rigbench.analysis.process_scaling import process_scaling_rows
from rigbench.spec import MeasureOptions

BARE_DDP = r"""
import json, os, sys, time
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from rigbench.frameworks.torch import models, step
from rigbench.workloads import get_workload, resolved_options
name, batch, steps, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
torch.set_num_threads(threads)
dist.init_process_group("gloo")
torch.manual_seed(0)
w = get_workload(name)
model = DDP(models.build_model(name, resolved_options(w, {})).train())
x, y = step.synthetic_batch(w, batch)
opt = torch.optim.SGD(model.parameters(), lr=w.default_lr, momentum=0.9)
loss_fn = torch.nn.CrossEntropyLoss()
def train_step():
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
for _ in range(3):
    train_step()
dist.barrier()
t0 = time.perf_counter()
for _ in range(steps):
    train_step()
elapsed = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)  # the slowest rank's time: a synchronous job's
if dist.get_rank() == 0:
    print(json.dumps({"samples_per_s": dist.get_world_size() * batch * steps / elapsed.item()}))
dist.destroy_process_group()
"""


def bare(workload: str, batch: int, steps: int, threads: int, processes: int) -> float:
    """samples/s of the bare DDP loop under `torchrun --standalone`."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as script:
        script.write(BARE_DDP)
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    try:
        proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                               f"--nproc_per_node={processes}", script.name, workload, str(batch), str(steps),
                               str(threads)], capture_output=True, text=True, env=env)
    finally:
        os.unlink(script.name)
    if proc.returncode != 0:  # say why, not only that it failed
        raise SystemExit(f"the bare torchrun loop failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])["samples_per_s"]


def harness(workload: str, batch: int, steps: int, threads: int, processes: int, db: str) -> float:
    """rigbench's samples/s of the same job, mean-based (like for like with the bare loop)."""
    spec = api.TrialSpec(workload=workload, device="cpu", batch_size=batch, threads=threads, world_size=processes,
                         measure=MeasureOptions(warmup_steps=3, warmup_seconds=0, min_steps=steps, min_seconds=0,
                                                max_steps=steps))
    result = api.run([spec], db=db, command="benchmarks/scaling.py").results[0]
    if result.status != "ok":
        raise SystemExit(f"rigbench trial failed: {result.status}: {result.error}")
    return batch * processes / (result.metrics.step_time_ms_mean / 1e3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", default="mlp")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    db = tempfile.mktemp(suffix=".db")
    threads = max(1, (os.cpu_count() or 1) // args.processes)

    specs = api.plan_process_scaling(args.workload, [args.processes], "cpu", args.batch)
    rows = process_scaling_rows(api.run(specs, db=db, command="benchmarks/scaling.py").results)
    print(f"1. {args.workload} b{args.batch} per rank, weak scaling on the CPU:")
    for row in rows:
        print(f"   {row.processes} process(es): {row.samples_per_s or 0:,.1f} samples/s, efficiency "
              f"{_num(row.efficiency)} (95% CI {_ci(row.efficiency_ci)}), predicted {_num(row.predicted_efficiency)}, "
              f"comm share {_num(row.comm_share)}, gradient all-reduce {_num(row.allreduce_grad_ms)} ms")

    print(f"2. rigbench against a bare torchrun + DDP loop: {args.processes} ranks x {threads} thread(s), "
          f"{args.steps} steps, {args.rounds} paired rounds")
    ratios, bares, ours = [], [], []
    for _ in range(args.rounds):
        b = bare(args.workload, args.batch, args.steps, threads, args.processes)
        h = harness(args.workload, args.batch, args.steps, threads, args.processes, db)
        bares.append(b)
        ours.append(h)
        ratios.append(h / b)
    print(f"   bare {statistics.median(bares):,.1f} samples/s, rigbench {statistics.median(ours):,.1f} samples/s, "
          f"paired ratio {statistics.median(ratios):.3f} [{min(ratios):.3f}-{max(ratios):.3f}], "
          f"best/best {max(ours) / max(bares):.3f}")


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _ci(ci: tuple[float, float] | None) -> str:
    return "-" if ci is None else f"{ci[0]:.3f}-{ci[1]:.3f}"


if __name__ == "__main__":
    main()
