"""Speed-ups over the CPU: each other device's samples/s divided by the CPU's, pairing
configurations that differ in the device alone."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rigbench.analysis.trials import newest_run_speeds, workload_label
from rigbench.spec import Result


def speedups_over_cpu(results: Sequence[Result]) -> list[dict[str, Any]]:
    """For each configuration measured (ok) on the CPU and on another device: the other
    device's samples/s divided by the CPU's. Configurations pair when everything but the
    device is the same (`TrialSpec.config_key(ignore=("device",))`: workload and options,
    framework, batch, precision, threads, compile, ...). Each side is its newest run's trials
    (`newest_run_speeds`): with `run --repeat`, the mean of the repeats, never one of them
    against another; `trials` and `base_trials` name them."""
    def key(r: Result) -> Any:
        return r.spec.config_key(ignore=("device",))

    cpu = newest_run_speeds([r for r in results if r.spec.device == "cpu"], key)
    others = newest_run_speeds([r for r in results if r.spec.device != "cpu"],
                               lambda r: (r.spec.device, key(r)))
    rows = []
    for (device, config), side in others.items():
        base = cpu.get(config)
        if base is None:
            continue
        r = side.newest
        rows.append({"workload": r.spec.workload, "workload_label": workload_label(r),
                     "device": device, "device_name": r.device_name, "framework": r.spec.framework,
                     "trial": r.id, "base_trial": base.newest.id, "trials": side.ids, "base_trials": base.ids,
                     "batch_size": r.spec.batch_size, "precision": r.spec.precision,
                     "speedup": side.samples_per_s / base.samples_per_s})
    return rows
