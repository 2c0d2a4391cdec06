"""rigbench's training step against the documented bare step, interleaved step by step in one
process: a paired figure that resolves 1% on a shared, noisy machine.

Why: two processes timed one after the other (self_check.py's rounds) see different machine
conditions, and on the 2-core dev VM their per-round ratio swung by several percent. Here both
steps live in one process and alternate (ours, bare, bare, ours, ...), each timed with a wait for
the device, so whatever slows the machine for a few milliseconds slows both members of a pair.
The ratio of a pair is ours / bare; over N pairs, the geometric mean and a 95% bootstrap
interval (analysis/paired.py). Pairs are added until the interval is narrower than
`--resolve` or the time budget ends.

What the pairs cannot see is measured directly and added as fixed costs per step:
  sync      the wait rigbench's timer adds once per window of about 0.1 s of steps (the bare
            loop waits once at the end; frameworks/host_timer.py): `trainer.synchronize()` on a
            step already finished, which self_check.py shares among a window's steps;
  protocol  the protocol's own bookkeeping per timed step (self_check.harness_costs);
  tracker   the CPU the parent's sampling thread takes, as a share of the trial's threads.

ours  = adapter.build(spec, workload).step(), timed by trainer.step_timer() as the protocol does;
bare  = benchmarks/bare_loops.py's loop for the framework, executed here with its `timed` call
        replaced by one that hands back the step and its wait, on the trainer's own network and
        batch where the framework updates weights in place (torch, TensorFlow, Keras): two
        copies of one network differ by several percent by where they sit in memory
        (twin_trainers.py), which no number of pairs in one process averages away.

Usage (self_check.py calls it): python benchmarks/step_pairs.py FRAMEWORK WORKLOAD BATCH THREADS
                                [--budget-s 60] [--resolve 0.01]
It prints one JSON line: {"ours": [...], "bare": [...], "sync_s": x, "pairs": n}.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from bare_loops import LOOPS, trains_shared


def bare_step(framework: str, workload: str, batch: int, threads: int,
              shared: Any = None) -> tuple[Callable[[], Any], Callable[[Any], Any]]:
    """(step, wait) of the documented loop in bare_loops.py, built in this process; it trains
    `shared`'s network (a rigbench trainer) where the loop can (bare_loops.py says where)."""
    from rigbench.workloads import get_workload, resolved_options

    w = get_workload(workload)
    captured: dict[str, Any] = {}
    scope: dict[str, Any] = {
        "name": workload, "batch": batch, "threads": threads, "framework": framework, "w": w,
        "options": resolved_options(w, {}), "momentum": w.optimizer_args.get("momentum", 0.0),
        "timed": lambda step, wait: captured.update(step=step, wait=wait), "shared": shared,
    }
    exec(LOOPS[framework], scope)  # noqa: S102 - our own loop source, as the bare process runs it
    return captured["step"], captured["wait"]


def cpu_spec(framework: str, workload: str, batch: int, threads: int, world_size: int = 1) -> Any:
    """The TrialSpec of a CPU trial of `workload` (`batch` per rank, `world_size` ranks)."""
    from rigbench.spec import TrialSpec

    return TrialSpec(workload=workload, framework=framework, device="cpu", batch_size=batch, threads=threads,
                     world_size=world_size)


def cpu_trainer(framework: str, workload: str, batch: int, threads: int, world_size: int = 1) -> Any:
    """A rigbench trainer of `workload` on the CPU, built as a trial builds it (inside its
    process group when `world_size` > 1: join it first). The adapter's `prepare(threads)` must
    have run once in this process before (it sizes the thread pools)."""
    from rigbench.frameworks import load_adapter
    from rigbench.workloads import get_workload

    spec = cpu_spec(framework, workload, batch, threads, world_size)
    return load_adapter(framework).build(spec, get_workload(workload))


def timed_step(trainer: Any) -> Callable[[], float]:
    """One of `trainer`'s steps, timed by its own step timer as the protocol times it."""
    def run() -> float:
        timer = trainer.step_timer()
        timer.start()
        trainer.step()
        timer.stop()
        return timer.elapsed_s()[0]
    return run


def timed_bare(step: Callable[[], Any], wait: Callable[[Any], Any]) -> Callable[[], float]:
    """One of the bare loop's steps (`bare_step`'s pair), timed with its wait for the device."""
    def run() -> float:
        t0 = time.perf_counter()
        wait(step())
        return time.perf_counter() - t0
    return run


def interleave(first: Callable[[], float], second: Callable[[], float],
               enough: Callable[[list[float], list[float]], bool]) -> tuple[list[float], list[float]]:
    """Times of `first` and `second` in pairs, first-second then second-first (order effects
    cancel), after 5 untimed warm-up rounds; `enough(firsts, seconds)` is asked every 100 pairs."""
    for _ in range(5):  # warm-up: compilation, allocation, caches
        first(), second()
    firsts: list[float] = []
    seconds: list[float] = []
    while True:
        firsts.append(first())
        seconds.append(second())
        seconds.append(second())
        firsts.append(first())
        n = len(firsts)
        if n % 100 == 0:
            if enough(firsts, seconds):
                return firsts, seconds
            # The check may have churned through tens of MB (a bootstrap): the caches it left
            # cold would slow the next step, always a `first`. One untimed round warms both.
            first(), second(), second(), first()


def pairs(framework: str, workload: str, batch: int, threads: int, budget_s: float,
          resolve: float, bare_first: bool = False) -> dict[str, Any]:
    """Interleaved (ours, bare) step times until the interval is narrower than `resolve` or
    `budget_s` has passed (at least 100 pairs), and the cost of one extra wait. `bare_first`
    builds the bare loop's network before the trainer's, where it has one of its own (JAX):
    which is built first may decide where each sits in memory, so self_check alternates it."""
    from rigbench.analysis.paired import paired_ratio
    from rigbench.frameworks import load_adapter

    load_adapter(framework).prepare(threads)
    if bare_first and not trains_shared(framework):
        step, wait = bare_step(framework, workload, batch, threads)
        trainer = cpu_trainer(framework, workload, batch, threads)
    else:
        trainer = cpu_trainer(framework, workload, batch, threads)
        step, wait = bare_step(framework, workload, batch, threads, shared=trainer)

    start = time.perf_counter()

    def enough(mine: list[float], theirs: list[float]) -> bool:
        r = paired_ratio(mine, theirs)
        return r.high - r.low < resolve or time.perf_counter() - start > budget_s

    mine, theirs = interleave(timed_step(trainer), timed_bare(step, wait), enough)
    loss = trainer.loss_values([trainer.step()])[0]
    if not math.isfinite(loss):  # the two sides' updates, on one network, must still be training
        raise SystemExit(f"the {framework} {workload} network diverged (loss {loss}): its steps are not a training step's")
    trainer.synchronize()
    t0 = time.perf_counter()
    for _ in range(200):  # the wait after a step that has finished: what each timed step adds
        trainer.synchronize()
    sync_s = (time.perf_counter() - t0) / 200
    return {"ours": mine, "bare": theirs, "sync_s": sync_s, "pairs": len(mine)}


def run_pairs(framework: str, workload: str, batch: int, threads: int, env: dict[str, str],
              budget_s: float = 60.0, resolve: float = 0.01, bare_first: bool = False) -> dict[str, Any]:
    """`pairs` in a fresh process with the adapter's environment (set before the framework loads)."""
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), framework, workload, str(batch), str(threads),
                           "--budget-s", str(budget_s), "--resolve", str(resolve),
                           *(["--bare-first"] if bare_first else [])],
                          capture_output=True, text=True, env={**os.environ, **env})
    if proc.returncode != 0:
        raise SystemExit(f"the {framework} step pairs failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("framework")
    parser.add_argument("workload")
    parser.add_argument("batch", type=int)
    parser.add_argument("threads", type=int)
    parser.add_argument("--budget-s", type=float, default=60.0)
    parser.add_argument("--resolve", type=float, default=0.01, help="stop once the interval is narrower than this")
    parser.add_argument("--bare-first", action="store_true",
                        help="build the bare loop's own network before the trainer's (JAX; see pairs)")
    args = parser.parse_args()
    print(json.dumps(pairs(args.framework, args.workload, args.batch, args.threads, args.budget_s, args.resolve,
                           args.bare_first)))


if __name__ == "__main__":
    main()
