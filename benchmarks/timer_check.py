"""Each framework's step timer against host clocks it does not own (issue 26, point 1: the JAX
and Keras timers had no independent check on a GPU; torch's CUDA events had, in gpu_checks.py).

Per case, in a fresh process with the adapter's environment, on one rigbench trainer:
  recorded  the sum of the step times the trainer's own timer records over N steps, bracketed as
            runner/protocol.py brackets them (torch on CUDA: events, no host wait; JAX, Keras and
            TensorFlow: the host clock, with a wait for the device once per window of about
            0.1 s of steps, the first window sized from the warm-up's mean step:
            frameworks/host_timer.py; before 2026-11-28, after every step);
  bracket   one perf_counter pair around those same N steps, the device waited for at both ends:
            recorded / bracket near 1 says the timer neither loses nor adds time between steps;
  windowed  N more steps on the host timer with its windows, whatever the trainer's own timer
            is (for torch on CUDA: what the host timer would record in place of its events);
  waited    N more steps on the host clock with a wait for the device after every step (the
            host timer before 2026-11-28, and what a hand-written loop that reads its clock
            after each step measures);
  free      N more steps queued back to back with one wait at the end (each framework's
            documented loop): recorded / free above 1 is the share by which the recorded speed
            understates a loop that never waits; waited / free, what a wait per step costs.
The four loops run in `--rounds` rounds, their order rotating (the first loop after the
warm-up can still be warming up), and each figure sums its rounds.

Usage: python benchmarks/timer_check.py [--device cuda:0] [--steps 50] [--rounds 3]
                                        [--cases torch:cnn:128,jax:cnn:128,keras-jax:cnn:128]
One JSON line per case: framework, workload, batch, steps, recorded_s, bracket_s, windowed_s, waited_s,
free_s and the four ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

DEFAULT_CASES = "torch:cnn:128,jax:cnn:128,keras-jax:cnn:128,keras-torch:cnn:128,torch:mlp:64,jax:mlp:64"


def _spec(framework: str, workload: str, batch: int, device: str) -> Any:
    from rigbench.spec import TrialSpec

    return TrialSpec(workload=workload, framework=framework, device=device, batch_size=batch)


def _timed(trainer: Any, steps: int, timer: Any) -> tuple[float, float]:
    """(the sum of what `timer` records over `steps` steps bracketed as the protocol brackets
    them, one host clock around them with a wait for the device at both ends)."""
    trainer.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        timer.start()
        trainer.step()
        timer.stop()
    trainer.synchronize()
    bracket = time.perf_counter() - t0
    return sum(timer.elapsed_s()), bracket


def _free(trainer: Any, steps: int) -> float:
    trainer.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        trainer.step()
    trainer.synchronize()
    return time.perf_counter() - t0


def measure(framework: str, workload: str, batch: int, device: str, steps: int, rounds: int) -> dict[str, Any]:
    """The clocks over one trainer (the module doc), in `rounds` rounds whose order rotates (the
    first loop after the warm-up may still be warming up); each figure sums its rounds. Runs in
    the adapter's environment."""
    from rigbench.frameworks import load_adapter
    from rigbench.frameworks.host_timer import HostTimer, expect_step
    from rigbench.workloads import get_workload

    adapter = load_adapter(framework)
    adapter.prepare(None)
    trainer = adapter.build(_spec(framework, workload, batch, device), get_workload(workload))
    for _ in range(5):  # warm-up: compilation, autotuning, the allocator's growth
        trainer.step()
    warm_step_s = _free(trainer, 10) / 10  # as the protocol's warm-up tells the timer (expect_step)
    totals = dict.fromkeys(("recorded", "bracket", "windowed", "waited", "free"), 0.0)

    def recorded() -> None:
        timer = trainer.step_timer()
        expect_step(timer, warm_step_s)
        got = _timed(trainer, steps, timer)
        totals["recorded"] += got[0]
        totals["bracket"] += got[1]

    def windowed() -> None:
        timer = HostTimer(trainer.synchronize)
        timer.expect(warm_step_s)
        totals["windowed"] += _timed(trainer, steps, timer)[0]

    def waited() -> None:
        totals["waited"] += _timed(trainer, steps, HostTimer(trainer.synchronize, window_s=0.0))[0]

    def free() -> None:
        totals["free"] += _free(trainer, steps)

    loops = [recorded, windowed, waited, free]
    for r in range(rounds):
        for loop in loops[r % len(loops):] + loops[:r % len(loops)]:
            loop()
    return {"framework": framework, "workload": workload, "batch": batch, "device": trainer.device_name,
            "steps": steps * rounds, **{f"{k}_s": v for k, v in totals.items()},
            "recorded_over_bracket": totals["recorded"] / totals["bracket"],
            "recorded_over_free": totals["recorded"] / totals["free"],
            "windowed_over_free": totals["windowed"] / totals["free"],
            "waited_over_free": totals["waited"] / totals["free"]}


def run_case(case: str, device: str, steps: int, rounds: int) -> dict[str, Any]:
    """`measure` for FRAMEWORK:WORKLOAD:BATCH in a child process (the environment is read once,
    when the framework loads)."""
    from rigbench.frameworks import load_adapter

    framework, workload, batch = case.split(":")
    env = {**os.environ, **load_adapter(framework).environment(_spec(framework, workload, int(batch), device))}
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", case, "--device", device,
                           "--steps", str(steps), "--rounds", str(rounds)], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        return {"case": case, "error": done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--steps", type=int, default=50, help="steps per loop and round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the three loops, their order rotating")
    parser.add_argument("--cases", default=DEFAULT_CASES, help="FRAMEWORK:WORKLOAD:BATCH, comma-separated")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        framework, workload, batch = args.one.split(":")
        print(json.dumps(measure(framework, workload, int(batch), args.device, args.steps, args.rounds)))
        return
    for case in args.cases.split(","):
        print(json.dumps(run_case(case, args.device, args.steps, args.rounds)), flush=True)


if __name__ == "__main__":
    main()
