"""Device ceilings: `calibrate` (experiments/calibrate.py) measures them, `roofline` places
stored trials under them (analysis/roofline.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rigbench.analysis import recommend as rules
from rigbench.analysis.roofline import result_roofline
from rigbench.analysis.step_overhead import memory_bandwidths
from rigbench.analysis.trials import workload_label
from rigbench.api.results import select_results
from rigbench.spec import Result
from rigbench.store import Store
from rigbench.store.calibrations import device_calibrations
from rigbench.textlimits import NAME_CHARS, clip
from rigbench.workloads import WORKLOADS


def roofline(db: str | None = None, run_ids: Sequence[str] = (),
             where: Sequence[str] = ()) -> list[tuple[Result, Any]]:
    """(result, TrialRoofline) for every successful stored trial of `run_ids` matching `where`."""
    store = Store(db, create=False)
    results = [r for r in select_results(store, run_ids, where) if r.status == "ok"]
    calibrations = device_calibrations(store, results)
    return [(r, result_roofline(r, calibrations.get(r.device_name or ""))) for r in results]


def overhead_bound_notes(results: Sequence[Result], db: str | None = None) -> list[str]:
    """One note per workload, framework and device of `results` (those `roofline` placed, from
    the store at `db`) whose fp32 eager steps are overhead-bound at the largest batch measured
    (analysis/step_overhead.py): such a trial sits far below both of its roofs, and the roofline
    alone would call it memory- or compute-bound."""
    calibrations = device_calibrations(Store(db, create=False), results)
    groups: dict[tuple[str, str, str, str], list[Result]] = {}
    for r in results:
        key = (r.spec.workload, repr(sorted(r.spec.workload_options.items())), r.spec.framework,
               r.device_name or r.spec.device)
        groups.setdefault(key, []).append(r)
    notes = []
    for (name, _, framework, device_name), group in groups.items():
        workload = WORKLOADS.get(name)
        device = group[-1].spec.device
        speeds = rules.baseline_by_batch(group, device)
        if workload is None or not speeds:
            continue
        line = rules.step_overhead_line(group, device, max(speeds), workload.optimizer,
                                        memory_bandwidths(group, calibrations).get(device), compile_measured=False)
        if line is not None and line.value == "overhead-bound":
            label = f"{workload_label(group[-1])} {framework} {device}"
            notes.append(f"{clip(label, 3 * NAME_CHARS)} ({clip(device_name, NAME_CHARS)}): {line.text}")
    return notes
