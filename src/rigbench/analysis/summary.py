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
from rigbench.analysis.trials import has_speed, is_full_protocol, network_label, speed
from rigbench.spec import Result
from rigbench.workloads import WORKLOADS


def speed_figures(results: Sequence[Result]) -> list[Result]:
    """Finished full-protocol speed trials with a throughput: the trials a summary ranks."""
    return [r for r in results if has_speed(r) and is_full_protocol(r)]


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
    """One workload's headline: its fastest trial and what that means."""

    workload: str
    best: Result
    samples_per_s: float
    epoch_seconds: float | None  # the workload's training-set size / samples/s
    dataset: str | None
    cpu_base: Result | None  # the fastest CPU trial of the workload (the speed-up's base)
    speedup_over_cpu: float | None
    mfu: float | None
    mfu_source: str | None  # "spec" | "calibrated"
    peak_memory_mib: float | None
    memory_kind: str  # "device" | "RSS"
    trials: int  # speed trials of the workload considered
    recommendation: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The row as plain values (what the page shows and the tests compare)."""
        return {"workload": self.workload, "trial": self.best.id, "device": self.best.spec.device,
                "device_name": self.best.device_name, "framework": self.best.spec.framework,
                "precision": self.best.spec.precision, "batch_size": self.best.spec.batch_size,
                "samples_per_s": self.samples_per_s, "epoch_seconds": self.epoch_seconds,
                "speedup_over_cpu": self.speedup_over_cpu, "mfu": self.mfu,
                "peak_memory_mib": self.peak_memory_mib, "memory_kind": self.memory_kind,
                "recommendation": self.recommendation}


def _mfu(r: Result, calibration: dict[str, Any] | None) -> tuple[float | None, str | None]:
    """The spec sheet's MFU, else the calibrated one (None when neither peak is known)."""
    roof = result_roofline(r, calibration)
    for src in (roof.spec, roof.calibrated):
        if src is not None and src.mfu is not None:
            return src.mfu, src.source
    return None, None


def summary_rows(results: Sequence[Result], calibrations: Mapping[str, dict[str, Any]] | None = None,
                 recommendations: Mapping[str, str] | None = None,
                 machines: Mapping[str, dict[str, Any] | None] | None = None) -> list[SummaryRow]:
    """One row per workload with a speed figure, in workload order: the trial with the highest
    samples/s (any device, framework, precision, batch), its epoch time, its speed over the
    fastest CPU trial of the workload (1.0 when that is itself; None without a CPU trial), its
    MFU (`calibrations`: device name -> latest calibration) and peak memory.
    `recommendations`: workload -> one line (`recommendation_text`), where `recommend` ran.
    `machines` (run id -> fingerprint): the CPU base is then the fastest CPU trial of the best
    trial's own machine where it has one (a GPU over its own host's CPU), else of any machine."""
    by_workload: dict[str, list[Result]] = defaultdict(list)
    for r in speed_figures(results):
        by_workload[network_label(r)].append(r)
    rows = []
    for workload in sorted(by_workload):
        members = sorted(by_workload[workload], key=lambda r: r.id or 0)
        best = max(members, key=speed)  # the first of equals: the oldest
        cpus = [r for r in members if r.spec.device == "cpu"]
        if machines is not None:
            same = machine_identity(machines.get(best.run_id))
            cpus = [r for r in cpus if machine_identity(machines.get(r.run_id)) == same] or cpus
        base = max(cpus, key=speed) if cpus else None
        ref = WORKLOADS.get(best.spec.workload)
        mfu, source = _mfu(best, (calibrations or {}).get(best.device_name or ""))
        memory, kind = peak_memory_mib(best)
        rows.append(SummaryRow(
            workload=workload, best=best, samples_per_s=speed(best),
            epoch_seconds=ref.dataset.train_size / speed(best) if ref else None,
            dataset=ref.dataset.name if ref else None, cpu_base=base,
            speedup_over_cpu=speed(best) / speed(base) if base else None,
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
    """What makes two runs' fingerprints the same machine: host, CPU, cores, RAM and GPU
    models; not software versions, the kernel or GPU serial numbers, which change between
    sessions of one cloud machine type (three H100 sessions are one machine to a reader)."""
    if not machine:
        return ("not recorded",)
    gpus = tuple(sorted(str(g.get("name")) for g in machine.get("gpus") or []))
    return (machine.get("hostname"), machine.get("cpu_model"), machine.get("cpu_cores_logical"),
            machine.get("ram_bytes"), gpus)


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
