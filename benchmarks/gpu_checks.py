"""Hand checks of rigbench's GPU measurements against things rigbench does not compute itself.

Run on a machine with an NVIDIA GPU (issue 15); each check prints one line and a ratio:

  timer      the sum of the CUDA-event step times rigbench records against one host
             perf_counter pair around the same steps, bracketed by torch.cuda.synchronize().
             Target: within 2%.
  memory     the allocator's peak (torch.cuda.max_memory_allocated, what rigbench stores as
             allocator_peak_mib) and reserved bytes against NVML's per-process figure (what
             rigbench stores as gpu_mem_peak_mib): NVML should exceed reserved by the CUDA
             context alone (a few hundred MiB).
  util       NVML utilisation sampled while the steps run: near 100% on a large workload,
             low on a tiny one (launch-bound).
  precision  bf16 against fp32 samples/s (event-timed median), on the large workloads.
  energy     how often NVML's total-energy counter changes (polled every ~1 ms while catsdogs
             trains), and the counter's joules over a window against mean board power x time.

Usage: python benchmarks/gpu_checks.py [--steps 50] [--cases cnn:128,resnet:128,catsdogs:32,mlp:64]
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time

import torch

from rigbench.frameworks import torch as adapter
from rigbench.hw.nvml import load_nvml
from rigbench.spec import TrialSpec
from rigbench.trackers.nvml import gpu_sample
from rigbench.workloads import WORKLOADS

MIB = 1024 * 1024


def build(workload: str, batch: int, precision: str = "fp32"):
    spec = TrialSpec(workload=workload, batch_size=batch, device="cuda:0", precision=precision)
    return adapter.build(spec, WORKLOADS[workload])


def timed_steps(trainer, steps: int) -> tuple[list[float], float]:
    """(per-step CUDA-event seconds, host seconds around all steps with syncs at both ends)."""
    for _ in range(5):  # warm-up: cuDNN autotuning, allocator growth
        trainer.step()
    trainer.synchronize()
    timer = trainer.step_timer()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        timer.start()
        trainer.step()
        timer.stop()
    torch.cuda.synchronize()
    host = time.perf_counter() - t0
    return timer.elapsed_s(), host


class UtilSampler:
    """NVML utilisation and per-process memory every 50 ms in a thread (as rigbench's tracker)."""

    def __init__(self) -> None:
        self.nvml = load_nvml()
        self.handle = self.nvml.nvmlDeviceGetHandleByIndex(0) if self.nvml else None
        self.samples: list[dict] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.samples.append(gpu_sample(self.nvml, self.handle, os.getpid()))

    def __enter__(self) -> UtilSampler:
        if self.handle is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def stat(self, key: str, fn=statistics.mean) -> float | None:
        values = [s[key] for s in self.samples if s.get(key) is not None]
        return fn(values) if values else None


def check(workload: str, batch: int, steps: int) -> None:
    trainer = build(workload, batch)
    trainer.reset_peak_memory()
    with UtilSampler() as nvml:
        events, host = timed_steps(trainer, steps)
    event_sum = sum(events)
    peak = torch.cuda.max_memory_allocated() / MIB
    reserved = torch.cuda.max_memory_reserved() / MIB
    nvml_mem = (nvml.stat("gpu_mem_bytes", max) or 0) / MIB
    util = nvml.stat("gpu_util_pct")
    per_process = nvml.stat("gpu_mem_is_process", min)
    print(f"{workload:9s} b{batch:<4d} timer: events {event_sum * 1e3:9.2f} ms, host {host * 1e3:9.2f} ms, "
          f"events/host {event_sum / host:.4f}; median step {statistics.median(events) * 1e3:.3f} ms")
    print(f"{'':15s} memory: allocator peak {peak:8.1f} MiB, reserved {reserved:8.1f} MiB, "
          f"NVML {nvml_mem:8.1f} MiB ({'per-process' if per_process == 1.0 else 'device-wide'}), "
          f"NVML - reserved {nvml_mem - reserved:7.1f} MiB")
    print(f"{'':15s} util: NVML mean {util if util is None else round(util, 1)}% over {len(nvml.samples)} samples")
    del trainer
    torch.cuda.empty_cache()


def precision_check(workload: str, batch: int, steps: int) -> None:
    rates = {}
    for precision in ("fp32", "tf32", "bf16"):
        trainer = build(workload, batch, precision)
        events, _ = timed_steps(trainer, steps)
        rates[precision] = batch / statistics.median(events)
        del trainer
        torch.cuda.empty_cache()
    print(f"{workload:9s} b{batch:<4d} precision: fp32 {rates['fp32']:9.1f}, tf32 {rates['tf32']:9.1f}, "
          f"bf16 {rates['bf16']:9.1f} samples/s; bf16/fp32 {rates['bf16'] / rates['fp32']:.2f}")


def energy_check(seconds: float = 3.0) -> None:
    nvml = load_nvml()
    if nvml is None:
        print("energy: NVML unavailable")
        return
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    trainer = build("catsdogs", 32)
    stop = threading.Event()

    def train() -> None:
        while not stop.is_set():
            trainer.step()
        trainer.synchronize()

    worker = threading.Thread(target=train)
    trainer.step()
    trainer.synchronize()
    worker.start()
    time.sleep(0.5)  # reach steady power
    changes, powers = [], []
    last = nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
    t0 = time.perf_counter()
    e0, next_power = last, t0
    while (now := time.perf_counter()) - t0 < seconds:
        value = nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        if value != last:
            changes.append(now)
            last = value
        if now >= next_power:
            powers.append(nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0)
            next_power += 0.1
        time.sleep(0.001)
    elapsed = time.perf_counter() - t0
    counter_j = (last - e0) / 1000.0
    stop.set()
    worker.join()
    gaps = [b - a for a, b in zip(changes, changes[1:])]
    gap = f"{statistics.median(gaps) * 1e3:.1f} ms" if gaps else "n/a"
    power_j = statistics.mean(powers) * elapsed
    print(f"energy: counter changed {len(changes)} times in {elapsed:.2f} s (median gap {gap}); "
          f"counter {counter_j:.1f} J, mean power x time {power_j:.1f} J "
          f"({statistics.mean(powers):.1f} W over {len(powers)} samples), counter/power-time {counter_j / power_j:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--cases", default="cnn:128,resnet:128,catsdogs:32,mlp:64,lstm:64")
    parser.add_argument("--precision-cases", default="resnet:128,catsdogs:32,cnn:128")
    parser.add_argument("--energy-only", action="store_true", help="only the energy counter check")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("gpu_checks: no CUDA device")
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}")
    energy_check()
    if args.energy_only:
        return
    for case in args.cases.split(","):
        name, batch = case.split(":")
        check(name, int(batch), args.steps)
    for case in args.precision_cases.split(","):
        name, batch = case.split(":")
        precision_check(name, int(batch), args.steps)


if __name__ == "__main__":
    main()
