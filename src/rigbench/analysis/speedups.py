"""Speed-ups over the CPU: each other device's samples/s divided by the CPU's, pairing
configurations that differ in the device alone, on one machine."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rigbench.analysis.device_names import DeviceNames
from rigbench.analysis.trials import Machines, config_key, newest_run_speeds, workload_label
from rigbench.spec import Result


def speedups_over_cpu(results: Sequence[Result], machines: Machines | None = None) -> list[dict[str, Any]]:
    """For each configuration measured (ok) on the CPU and on another device: the other
    device's samples/s divided by the CPU's. Configurations pair when everything but the
    device is the same (`trials.config_key(ignore=("device",))`: workload and options,
    framework, batch, precision, threads, compile, ..., and the machine where `machines`, run
    id -> fingerprint, are known: each GPU over the CPU of its own machine, never over another
    machine's CPU of the same name; without them, over the CPU trial of its configuration). Each
    device model is a side of its own (an H100 and an H200 are both `cuda:0`). Each side is its
    newest run's trials (`newest_run_speeds`): with `run --repeat`, the mean of the repeats,
    never one of them against another; `trials` and `base_trials` name them; `device_label`
    names the device as DeviceNames does."""
    def key(r: Result) -> Any:
        return config_key(r, machines, ignore=("device",))

    names = DeviceNames(results, machines)
    cpu = newest_run_speeds([r for r in results if r.spec.device == "cpu"], key)
    others = newest_run_speeds([r for r in results if r.spec.device != "cpu"], lambda r: config_key(r, machines))
    rows = []
    for side in others.values():
        r = side.newest
        base = cpu.get(key(r))
        if base is None:
            continue
        rows.append({"workload": r.spec.workload, "workload_label": workload_label(r),
                     "device": r.spec.device, "device_name": r.device_name, "device_label": names(r),
                     "framework": r.spec.framework,
                     "trial": r.id, "base_trial": base.newest.id, "trials": side.ids, "base_trials": base.ids,
                     "batch_size": r.spec.batch_size, "precision": r.spec.precision,
                     "speedup": side.samples_per_s / base.samples_per_s})
    return rows
