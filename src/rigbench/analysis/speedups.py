"""Speed-ups over the CPU: each other device's samples/s divided by the CPU's, pairing
trials of one configuration."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rigbench.analysis.scaling import speed
from rigbench.analysis.trials import workload_label
from rigbench.spec import Result


def speedups_over_cpu(results: Sequence[Result]) -> list[dict[str, Any]]:
    """For each configuration measured on the CPU and on another device (both ok): the
    other device's samples/s divided by the CPU's. Trials pair when everything but the
    device is the same (`TrialSpec.config_key(ignore=("device",))`: workload and options,
    framework, batch, precision, threads, compile, ...); of several CPU trials of one
    configuration the newest (last given) is the base."""
    def key(r: Result) -> Any:
        return r.spec.config_key(ignore=("device",))

    ok = [r for r in results if r.status == "ok" and r.metrics.samples_per_s]
    cpu = {key(r): r for r in ok if r.spec.device == "cpu"}
    rows = []
    for r in ok:
        base = cpu.get(key(r))
        if r.spec.device != "cpu" and base is not None:
            rows.append({"workload": r.spec.workload, "workload_label": workload_label(r),
                         "device": r.spec.device, "device_name": r.device_name, "framework": r.spec.framework,
                         "trial": r.id, "base_trial": base.id,
                         "batch_size": r.spec.batch_size, "precision": r.spec.precision,
                         "speedup": speed(r) / speed(base)})
    return rows
