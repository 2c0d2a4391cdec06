"""The report's headline: per workload the best measured configuration with its speed, epoch
time, speed-up over the CPU, MFU and peak memory (and the recommendation when `recommend` has
run), and the machines behind the results, each described once. Pure functions over stored
results; framework-neutral (reports/ renders them).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rigbench.analysis.recommend_model import Line
from rigbench.analysis.roofline import result_roofline
from rigbench.analysis.trials import RunSpeed, config_key, network_label, newest_run_speeds, run_order, speed_figures
from rigbench.fingerprint import machine_key
from rigbench.spec import Result
from rigbench.workloads import WORKLOADS, epoch_samples


def peak_memory_mib(r: Result) -> tuple[float | None, str]:
    """(peak MiB, what it is): GPU memory on an accelerator (NVML's per-process figure, else the
    allocator's peak), the process's peak RSS on the CPU."""
    m = r.metrics
    if r.spec.device != "cpu":
        gpu = m.gpu_mem_peak_mib if m.gpu_mem_peak_mib is not None else m.allocator_peak_mib
        if gpu is not None:
            return gpu, "device"
    return m.rss_peak_mib, "RSS"


@dataclass
class SummaryRow:
    """One workload's headline: its fastest configuration and what that means."""

    workload: str
    configuration: RunSpeed  # the fastest configuration's trials from its newest run
    epoch_seconds: float | None  # the workload's training-set size / samples/s
    dataset: str | None
    cpu_base: RunSpeed | None  # the fastest CPU configuration of the workload (the speed-up's base)
    speedup_over_cpu: float | None
    mfu: float | None
    mfu_source: str | None  # "spec" | "calibrated"
    peak_memory_mib: float | None  # the highest of the configuration's trials
    memory_kind: str  # "device" | "RSS"
    trials: int  # speed trials of the workload considered
    recommendation: str | None = None

    @property
    def best(self) -> Result:
        """The configuration's newest trial: what it ran (device, framework, batch, ...)."""
        return self.configuration.newest

    @property
    def samples_per_s(self) -> float:
        """The configuration's figure: the mean of its newest run's trials."""
        return self.configuration.samples_per_s


def _mfu(figure: RunSpeed, calibration: dict[str, Any] | None) -> tuple[float | None, str | None]:
    """The configuration's MFU at its mean samples/s against the spec sheet's peak, else the
    calibrated one, and which (None when neither peak is known)."""
    roof = result_roofline(figure.newest, calibration, samples_per_s=figure.samples_per_s).headline_mfu
    return (roof.mfu, roof.source) if roof is not None else (None, None)


def _peak_memory(figure: RunSpeed) -> tuple[float | None, str]:
    """The highest peak memory among the configuration's trials, and what it is."""
    peaks = [peak_memory_mib(r) for r in figure.trials]
    known = [peak for peak in peaks if peak[0] is not None]
    return max(known, key=lambda peak: peak[0] or 0.0) if known else peaks[-1]


def summary_rows(results: Sequence[Result], calibrations: Mapping[str, dict[str, Any]] | None = None,
                 recommendations: Mapping[str, str] | None = None,
                 machines: Mapping[str, dict[str, Any] | None] | None = None) -> list[SummaryRow]:
    """One row per workload with a speed figure, in workload order. Each configuration
    (`trials.config_key`: device and its model, framework, precision, batch, ...; on one machine where
    `machines`, run id -> fingerprint, tells machines apart) counts as the mean samples/s of
    its newest run's trials (`newest_run_speeds`): the repeats of `run --repeat` together, so
    the luckiest of them is never the headline. The row is the fastest configuration's: its
    epoch time, its speed over the fastest CPU configuration of the workload (1.0 when that
    is itself; None without one), its MFU (`calibrations`: device name -> latest calibration)
    and peak memory. `recommendations`: workload -> one line (`recommendation_text`), where
    `recommend` ran. With `machines`, the CPU base is the fastest CPU configuration of the best
    one's own machine where it has one (a GPU over its own host's CPU), else of any machine."""
    def machine(r: Result) -> tuple[Any, ...] | None:
        return machine_identity(machines.get(r.run_id)) if machines is not None else None

    by_workload: dict[str, list[Result]] = defaultdict(list)
    for r in speed_figures(results):
        by_workload[network_label(r)].append(r)
    rows = []
    for workload in sorted(by_workload):
        members = by_workload[workload]
        configurations = sorted(newest_run_speeds(members, lambda r: (machine(r), config_key(r))).values(),
                                key=lambda c: run_order(c.trials[0]))
        best = max(configurations, key=lambda c: c.samples_per_s)  # the first of equals: the oldest
        cpus = [c for c in configurations if c.newest.spec.device == "cpu"]
        cpus = [c for c in cpus if machine(c.newest) == machine(best.newest)] or cpus
        base = max(cpus, key=lambda c: c.samples_per_s) if cpus else None
        ref = WORKLOADS.get(best.newest.spec.workload)
        mfu, source = _mfu(best, (calibrations or {}).get(best.newest.device_name or ""))
        memory, kind = _peak_memory(best)
        rows.append(SummaryRow(
            workload=workload, configuration=best,
            epoch_seconds=(epoch_samples(ref, best.newest.spec.workload_options) / best.samples_per_s
                           if ref else None),
            dataset=ref.dataset.name if ref else None, cpu_base=base,
            speedup_over_cpu=best.samples_per_s / base.samples_per_s if base else None,
            mfu=mfu, mfu_source=source, peak_memory_mib=memory, memory_kind=kind,
            trials=len(members), recommendation=(recommendations or {}).get(workload)))
    return rows


def recommendation_text(lines: Sequence[Line]) -> str | None:
    """`rigbench recommend`'s decisions in one line: device, batch (and precision when decided),
    with the reason from the numbers behind them; None when no device was decided."""
    by = {line.decision: line for line in lines}
    device = by.get("device")
    if device is None or device.value is None:
        return None
    batch = by.get("batch_size")
    text = f"{device.value}"
    if batch is not None and batch.value is not None:
        text += f", batch {batch.value}"
    precision = by.get("precision")
    if precision is not None and precision.value is not None:
        text += f", {precision.value}"
    if batch is None or batch.value is None:
        return text + ": the fastest device measured in fp32"
    n = batch.numbers
    chosen, best = n.get("chosen_samples_per_s"), n.get("best_samples_per_s")
    if batch.value == n.get("best_batch") or not chosen or not best:
        why = "the fastest batch measured"
    else:
        why = f"the throughput knee, {chosen / best:.0%} of b{n['best_batch']}'s samples/s"
    return f"{text}: fastest device in fp32; {why}"


@dataclass
class MachineEntry:
    """One machine and the runs measured on it."""

    fingerprint: dict[str, Any] | None  # None: the runs' machine was not recorded
    run_ids: list[str] = field(default_factory=list)
    trials: int = 0


def machine_identity(machine: Mapping[str, Any] | None) -> tuple[Any, ...]:
    """What makes two runs' fingerprints the same machine on the report's page: the host, CPU
    and instruction sets of `machine_key`, cores, RAM and GPU models; not software versions, the
    kernel or GPU serial numbers, which change between sessions of one cloud machine type
    (three H100 sessions are one machine to a reader)."""
    if not machine:
        return ("not recorded",)
    gpus = tuple(sorted(str(g.get("name")) for g in machine.get("gpus") or []))
    return (*machine_key(machine), machine.get("cpu_cores_logical"), machine.get("ram_bytes"), gpus)


def machines_once(results: Sequence[Result], machines: Mapping[str, dict[str, Any] | None]) -> list[MachineEntry]:
    """The machines of `machines` (run id -> fingerprint) each once, with its runs in the given
    order and its trial count; the newest run's fingerprint describes it."""
    entries: dict[tuple[Any, ...], MachineEntry] = {}
    counts: dict[str, int] = defaultdict(int)
    for r in results:
        counts[r.run_id] += 1
    for run_id, machine in machines.items():
        entry = entries.setdefault(machine_identity(machine), MachineEntry(machine))
        entry.run_ids.append(run_id)
        entry.trials += counts[run_id]
        if machine:
            entry.fingerprint = machine
    return list(entries.values())
