"""rigbench measuring itself: is `rigbench run` as fast as a bare hand-written loop, in every
framework?

For each framework and case, the same network, batch, optimiser and thread set-up is trained
(a) by a bare loop in a fresh Python process, written the way that framework's documentation
writes one (benchmarks/bare_loops.py), and (b) through `rigbench.api.run` (its own child
process, trackers on). Each round runs both back to back, in alternating order (ABBA...), so
drift in the machine's speed hits both alike. Three figures per side, each a time per step:
  cpu      the process's CPU time (user + system, every thread) over the timed steps: barely
           moved by other processes on a shared machine.
  wall     mean wall time per timed step (the bare loop: N steps, one wait at the end).
  min      the fastest single step (each step waited for).
Per figure: ours / theirs of each round, their geometric mean and a 95% bootstrap interval
(analysis/paired.py).

On a shared 2-core machine those rounds swing by several percent, so the verdict rests on a
second method (benchmarks/step_pairs.py): rigbench's step and the bare step in one process,
interleaved step by step (noise that lasts milliseconds hits both members of a pair), the bare
step training rigbench's own network where the framework allows (bare_loops.py), repeated in
16 fresh processes of about 100 pairs each, since each process carries an offset of its own
(where its buffers sit in memory) that more pairs in it cannot average away; the interval is
Student's t over the processes (analysis/paired.ratio_over_processes). Where the bare loop
builds a network of its own (JAX), every other process builds it first. Plus what the
pairs cannot see, measured directly: the wait rigbench's timer adds per step (one per window
of steps, shared among them), the protocol's bookkeeping per step and the tracker thread's CPU. The verdict: "within 1%", "slower by x%
[ci]", "unresolved (interval y% wide)", or "faster than the bare loop" (never a pass: something
the bare loop does is left out of ours).

It first measures the harness's own costs directly: the protocol's time per timed step around
a step that does nothing, and the CPU the tracker thread takes while sampling at 10 Hz, in
steady state (benchmarks/tracker_cost.py).

Usage: python benchmarks/self_check.py [--rounds 4] [--steps 30] [--threads 2] [--budget-s 120]
                                       [--pair-processes 16]
                                       [--frameworks torch,jax,tensorflow,keras-jax,keras-torch] [--cases mlp:64]
"""

from __future__ import annotations

import argparse
import tempfile
import time

from bare_loops import LOOPS, run_bare
from step_pairs import run_pairs

from rigbench import api
from rigbench.analysis.paired import PairedRatio, paired_ratio, ratio_over_processes
from rigbench.analysis.step_overhead import duration
from rigbench.cli.console import utf8_streams
from rigbench.frameworks import installed_frameworks, load_adapter
from rigbench.frameworks.host_timer import steps_per_window
from rigbench.spec import MeasureOptions, TrialSpec

FIGURES = ("cpu", "wall", "min")


def ours(spec: TrialSpec, db: str) -> dict[str, float]:
    """rigbench's figures for `spec`, in seconds per step."""
    result = api.run([spec], db=db, command="benchmarks/self_check.py").results[0]
    if result.status != "ok":
        raise SystemExit(f"rigbench trial failed: {result.status}: {result.error}")
    m = result.metrics
    if m.step_time_ms_mean is None or m.cpu_ms_per_step is None:
        raise SystemExit("the trial stored no mean step time or CPU time")
    return {"cpu": m.cpu_ms_per_step / 1e3, "wall": m.step_time_ms_mean / 1e3, "min": min(result.step_times_s)}


def theirs(spec: TrialSpec, steps: int) -> dict[str, float]:
    """The bare loop's figures for the same work, in seconds per step."""
    threads = spec.threads or 1
    figures = run_bare(spec.framework, spec.workload, spec.batch_size, steps, threads,
                       load_adapter(spec.framework).environment(spec))
    return {"cpu": figures["cpu_per_step"], "wall": figures["wall_per_step"], "min": figures["min_step"]}


def check(spec: TrialSpec, rounds: int, steps: int, db: str, fixed_s: float, tracker_share: float,
          budget_s: float, pair_processes: int) -> None:
    """Pair `spec` against its bare loop over `rounds` and print one line per figure, then the
    step pairs with the fixed costs (`fixed_s` per step, `tracker_share` of the trial's CPU)
    added, and the verdict."""
    pairs: dict[str, tuple[list[float], list[float]]] = {f: ([], []) for f in FIGURES}
    for i in range(rounds):
        got = {}
        for side in ("bare", "ours") if i % 2 == 0 else ("ours", "bare"):  # A B, B A, ...
            got[side] = ours(spec, db) if side == "ours" else theirs(spec, steps)
        for f in FIGURES:
            pairs[f][0].append(got["ours"][f])
            pairs[f][1].append(got["bare"][f])
    label = f"  {spec.framework:<12} {spec.workload}:{spec.batch_size:<5}"
    for f in FIGURES:
        r = paired_ratio(*pairs[f])
        mine_ms, bare_ms = 1e3 * min(pairs[f][0]), 1e3 * min(pairs[f][1])
        print(f"{label} {f:<5} ours/bare {r.ratio:.3f} [{r.low:.3f}-{r.high:.3f}]  "
              f"(best {mine_ms:.2f} vs {bare_ms:.2f} ms; processes, {rounds} rounds)", flush=True)
    env = load_adapter(spec.framework).environment(spec)
    per_process, found = [], {}
    for i in range(pair_processes):  # each a fresh process: see analysis/paired.ratio_over_processes
        found = run_pairs(spec.framework, spec.workload, spec.batch_size, spec.threads or 1, env,
                          budget_s=budget_s / pair_processes, bare_first=i % 2 == 1)
        per_process.append(paired_ratio(found["ours"], found["bare"]))
    step = ratio_over_processes([r.ratio for r in per_process])
    bare_step_s = sorted(found["bare"])[len(found["bare"]) // 2]
    # the timer's wait, once per window of steps (frameworks/host_timer.py), shared among them
    wait_s = found["sync_s"] / steps_per_window(bare_step_s)
    extra = (fixed_s + wait_s) / bare_step_s + tracker_share  # fixed costs per step, as a share
    total = PairedRatio(step.ratio * (1 + extra), step.low * (1 + extra), step.high * (1 + extra), step.rounds)
    each = ", ".join(f"{r.ratio:.3f}" for r in per_process)
    print(f"{label} step  ours/bare {step.ratio:.4f} [{step.low:.4f}-{step.high:.4f}]  (interleaved pairs in "
          f"{pair_processes} processes, {sum(r.rounds for r in per_process)} pairs: {each}; median bare step "
          f"{1e3 * bare_step_s:.2f} ms)", flush=True)
    print(f"{label} total {total.ratio:.4f} [{total.low:.4f}-{total.high:.4f}]  (step pairs + {100 * extra:.3f}% "
          f"fixed: wait {duration(wait_s)}, protocol {duration(fixed_s)}, tracker "
          f"{100 * tracker_share:.2f}%)  verdict: {total.verdict()}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--budget-s", type=float, default=120.0,
                        help="seconds of interleaved step pairs per framework and case, shared by the processes "
                             "(each runs at least 100 pairs)")
    parser.add_argument("--pair-processes", type=int, default=16,
                        help="fresh processes the step pairs run in (the interval is over them)")
    parser.add_argument("--frameworks", default=",".join(LOOPS))
    parser.add_argument("--cases", default="mlp:64", help="workload:batch,... (classifiers)")
    args = parser.parse_args()
    if args.pair_processes < 2:
        parser.error("--pair-processes must be at least 2: the interval is over the processes")
    utf8_streams()  # "µs" as the commands write it: UTF-8 into a file or a pipe, "us" on an ASCII terminal
    db = tempfile.mktemp(suffix=".db")
    per_step_us, tracker_pct = harness_costs()
    print(f"harness costs: protocol {duration(per_step_us / 1e6)} per timed step (no-op step); "
          f"tracker thread {tracker_pct:.2f}% of one core at 10 samples/s")
    print(f"threads={args.threads} rounds={args.rounds} steps={args.steps}; ratios are ours/bare of a time per "
          "step (above 1: rigbench slower); the verdict rests on the step pairs plus the fixed costs")
    # The tracker samples from the parent: its CPU, as a share of the trial's threads, is taken
    # from the trial's cores.
    tracker_share = tracker_pct / 100 / args.threads
    frameworks = [f for f in args.frameworks.split(",") if f in installed_frameworks()]
    for case in args.cases.split(","):
        workload, batch = case.split(":")
        for framework in frameworks:
            spec = TrialSpec(workload=workload, framework=framework, device="cpu", batch_size=int(batch),
                             threads=args.threads,
                             measure=MeasureOptions(warmup_steps=3, warmup_seconds=0, min_steps=args.steps,
                                                    min_seconds=0, max_steps=args.steps))
            check(spec, args.rounds, args.steps, db, per_step_us / 1e6, tracker_share, args.budget_s,
                  args.pair_processes)


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


def harness_costs(sample_interval: float = 0.1, seconds: float = 8.0) -> tuple[float, float]:
    """(protocol overhead per timed step in microseconds, tracker CPU in % of one core: its
    steady state, as tracker_cost.py measures it; its start-up comes before the timed steps)."""
    from tracker_cost import tracker_cost

    from rigbench.runner.protocol import measure

    steps = 200_000
    opts = MeasureOptions(warmup_steps=1, warmup_seconds=0, min_steps=steps, min_seconds=0, max_steps=steps)
    measure(_NoOpTrainer(), opts)  # once untimed: imports and first-call costs
    t0 = time.perf_counter()
    measure(_NoOpTrainer(), opts)
    per_step_us = (time.perf_counter() - t0) / steps * 1e6
    return per_step_us, tracker_cost(sample_interval, seconds)


if __name__ == "__main__":
    main()
