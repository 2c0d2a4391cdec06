"""rigbench measuring itself: is `rigbench run` as fast as a bare hand-written loop?

For each case, the same model, batch and thread count is trained (a) by a bare loop in a
fresh Python process -- build, warm up, then time N steps with one perf_counter pair -- and
(b) through `rigbench.api.run` (its own fresh child process, trackers on). Runs alternate
bare/rigbench for several rounds so drift in machine speed hits both alike.

Printed per case: median throughput of each over the rounds, and the ratio rigbench/bare
of each round (paired: the two ran back to back) as median [min-max] over rounds:
  mean-based   rigbench's batch / mean step time over the bare loop's total-time throughput.
               Like for like: both average over all timed steps. Target: 0.98 <= ratio <= ~1.00
               (faster than the bare loop would mean rigbench leaves work untimed).
  best/best    the fastest rigbench round over the fastest bare round (mean-based): on a
               shared, noisy machine the best of N is the steadiest estimate of overhead.
  median-based rigbench's headline number (batch / median step time) over the bare loop.
               Can sit slightly above 1 when step times are skewed by rare slow steps.

It first measures the harness's own costs directly, which noise on a shared machine hides in
the end-to-end ratios: the protocol's time per timed step around a step that does nothing,
and the CPU the tracker thread takes while sampling a process at 10 Hz.

Usage: python benchmarks/self_check.py [--rounds 3] [--steps 30] [--cases mlp:64,cnn:64]
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

from rigbench import api
from rigbench.spec import MeasureOptions, TrialSpec

BARE_LOOP = r"""
import json, sys, time
import torch
from rigbench.frameworks.torch import models, step
from rigbench.workloads import get_workload, resolved_options
name, batch, steps, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
torch.set_num_threads(threads)
torch.manual_seed(0)
w = get_workload(name)
model = models.build_model(name, resolved_options(w, {})).train()
x, y = step.synthetic_batch(w, batch)
opt = torch.optim.SGD(model.parameters(), lr=w.default_lr, momentum=0.9)
loss_fn = torch.nn.CrossEntropyLoss()
def step():
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    return loss.detach()
for _ in range(3):
    step()
t0 = time.perf_counter()
for _ in range(steps):
    step()
elapsed = time.perf_counter() - t0
print(json.dumps({"samples_per_s": steps * batch / elapsed}))
"""


def bare(workload: str, batch: int, steps: int, threads: int) -> float:
    # Same thread environment as a rigbench trial, so only the harness differs.
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    out = subprocess.run([sys.executable, "-c", BARE_LOOP, workload, str(batch), str(steps), str(threads)],
                         check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out)["samples_per_s"]


def harness(workload: str, batch: int, steps: int, threads: int, db: str) -> tuple[float, float]:
    spec = TrialSpec(workload=workload, device="cpu", batch_size=batch, threads=threads,
                     measure=MeasureOptions(warmup_steps=3, warmup_seconds=0, min_steps=steps,
                                            min_seconds=0, max_steps=steps))
    result = api.run([spec], db=db, command="benchmarks/self_check.py").results[0]
    if result.status != "ok":
        raise SystemExit(f"rigbench trial failed: {result.status}: {result.error}")
    m = result.metrics
    return batch / (m.step_time_ms_mean / 1e3), m.samples_per_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cases", default="mlp:64,cnn:64", help="workload:batch,... (classifiers)")
    args = parser.parse_args()
    db = tempfile.mktemp(suffix=".db")
    per_step_us, tracker_pct = harness_costs()
    print(f"harness costs: protocol {per_step_us:.2f} us per timed step (no-op step); "
          f"tracker thread {tracker_pct:.2f}% of one core at 10 samples/s")
    print(f"threads={args.threads} rounds={args.rounds} steps={args.steps}")
    print(f"{'case':<10} {'bare s/s':>9} {'rigbench s/s':>12} {'best/best':>10} {'paired ratio (mean-based)':>26} "
          f"{'paired ratio (median-based)':>28}")
    for case in args.cases.split(","):
        workload, batch = case.split(":")
        bare_runs, mean_ratios, median_ratios, harness_runs = [], [], [], []
        for _ in range(args.rounds):
            b = bare(workload, int(batch), args.steps, args.threads)
            mean_s, median_s = harness(workload, int(batch), args.steps, args.threads, db)
            bare_runs.append(b)
            harness_runs.append(mean_s)
            mean_ratios.append(mean_s / b)
            median_ratios.append(median_s / b)
        best = max(harness_runs) / max(bare_runs)
        print(f"{case:<10} {statistics.median(bare_runs):>9.1f} {statistics.median(harness_runs):>12.1f} "
              f"{best:>10.3f} {_spread(mean_ratios):>26} {_spread(median_ratios):>28}")


class _NoOpTrainer:
    """A trainer whose step does nothing: what remains is the protocol's own cost per step."""
    params, device_name = 0, "none"

    def step(self):
        return 0.0

    def synchronize(self):
        pass

    def step_timer(self):
        from rigbench.frameworks.host_timer import HostTimer  # the CPU timer trials use
        return HostTimer()

    def loss_values(self, handles):
        return [0.0] * len(handles)

    def allocator_peak_bytes(self):
        return None

    def reset_peak_memory(self):
        pass


def harness_costs(sample_interval: float = 0.1, seconds: float = 3.0) -> tuple[float, float]:
    """(protocol overhead per timed step in microseconds, tracker CPU in % of one core)."""
    from rigbench.runner.protocol import measure
    from rigbench.trackers.sampler import Tracker

    steps = 200_000
    opts = MeasureOptions(warmup_steps=1, warmup_seconds=0, min_steps=steps, min_seconds=0, max_steps=steps)
    measure(_NoOpTrainer(), opts)  # once untimed: imports and first-call costs
    t0 = time.perf_counter()
    measure(_NoOpTrainer(), opts)
    per_step_us = (time.perf_counter() - t0) / steps * 1e6
    sleeper = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds + 2})"])
    tracker = Tracker(sleeper.pid, interval=sample_interval)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    tracker.start()
    time.sleep(seconds)
    tracker.stop()
    cpu_pct = (time.process_time() - cpu0) / (time.perf_counter() - wall0) * 100
    sleeper.kill()
    return per_step_us, cpu_pct


def _spread(ratios: list[float]) -> str:
    """median [min-max] of the per-round ratios."""
    return f"{statistics.median(ratios):.3f} [{min(ratios):.3f}-{max(ratios):.3f}]"

if __name__ == "__main__":
    main()
