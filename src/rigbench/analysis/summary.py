"""The report's headline: per workload the best measured configuration with its speed, epoch
time, speed-up over the CPU of its own machine, MFU and peak memory (and the recommendation when
`recommend` has run), its device set against the others only at the configurations both ran,
and the machines behind the results, each described once. Pure functions over stored results;
framework-neutral (reports/ renders them).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from rigbench.analysis.device_names import DeviceNames
from rigbench.analysis.recommend_model import Line
from rigbench.analysis.roofline import result_roofline
from rigbench.analysis.trials import (
    RunSpeed,
    config_key,
    device_key,
    network_label,
    newest_run_speeds,
    run_order,
    speed_figures,
)
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


@dataclass(frozen=True)
class DeviceComparison:
    """The fastest configuration's device against another device of its kind (GPU or CPU) that
    measured the workload, at the configurations both ran (everything but the device the same):
    the fastest configuration may be one the other never ran (bf16 with torch.compile, JAX), so
    its device is not thereby the faster one."""

    device: str  # the fastest configuration's device, named (DeviceNames)
    other: str
    shared: int  # configurations both ran
    ratio: float | None  # median over them of device's samples/s / other's; None when none shared
    low: float | None = None  # the lowest and highest of those ratios
    high: float | None = None


@dataclass
class SummaryRow:
    """One workload's headline: its fastest configuration and what that means."""

    workload: str
    configuration: RunSpeed  # the fastest configuration's trials from its newest run
    epoch_seconds: float | None  # the workload's training-set size / samples/s
    dataset: str | None
    cpu_base: RunSpeed | None  # the fastest CPU configuration of its machine (the speed-up's base)
    speedup_over_cpu: float | None
    mfu: float | None
    mfu_source: str | None  # "spec" | "calibrated"
    peak_memory_mib: float | None  # the highest of the configuration's trials
    memory_kind: str  # "device" | "RSS"
    trials: int  # speed trials of the workload considered
    recommendation: str | None = None
    devices: list[DeviceComparison] = field(default_factory=list)  # against each other device of its kind
    cpu_elsewhere: bool = False  # no CPU trial on its machine, but another machine's: not its base

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


def device_comparisons(members: Sequence[Result], best: Result, machines: Mapping[str, Any] | None,
                       names: DeviceNames) -> list[DeviceComparison]:
    """`best`'s device against each other device of its kind among `members` (one workload's
    speed trials) at the configurations both ran (`TrialSpec.config_key` without the device; each
    side its newest run's mean, `newest_run_speeds`), in the order the devices first ran."""
    def key(r: Result) -> tuple[Any, ...]:
        return device_key(r, machines), r.spec.config_key(("device",))

    speeds: dict[tuple[Any, ...], dict[tuple[Any, ...], float]] = defaultdict(dict)
    shown: dict[tuple[Any, ...], Result] = {}
    for (device, config), figure in sorted(newest_run_speeds(members, key).items(),
                                           key=lambda item: run_order(item[1].trials[0])):
        speeds[device][config] = figure.samples_per_s
        shown.setdefault(device, figure.newest)
    mine, cpu = device_key(best, machines), best.spec.device == "cpu"
    out = []
    for device, theirs in speeds.items():
        if device == mine or (shown[device].spec.device == "cpu") != cpu:
            continue
        ratios = [speeds[mine][c] / theirs[c] for c in speeds[mine] if c in theirs]
        out.append(DeviceComparison(names(best), names(shown[device]), len(ratios),
                                    median(ratios) if ratios else None,
                                    min(ratios, default=None), max(ratios, default=None)))
    return out


def summary_rows(results: Sequence[Result], calibrations: Mapping[str, dict[str, Any]] | None = None,
                 recommendations: Mapping[str, str] | None = None,
                 machines: Mapping[str, dict[str, Any] | None] | None = None) -> list[SummaryRow]:
    """One row per workload with a speed figure, in workload order. Each configuration
    (`trials.config_key`: device and its model, framework, precision, batch, ...; on one machine where
    `machines`, run id -> fingerprint, tells machines apart) counts as the mean samples/s of
    its newest run's trials (`newest_run_speeds`): the repeats of `run --repeat` together, so
    the luckiest of them is never the headline. The row is the fastest configuration's: its
    epoch time, its speed over the fastest CPU configuration of its own machine (`device_key`'s
    machine: the rule of the report's "Speed-up over the CPU" chart, `speedups.speedups_over_cpu`;
    1.0 when that is itself; None without one, and `cpu_elsewhere` where only other machines
    measured the CPU: a GPU over another machine's CPU is no speed-up of either), its MFU
    (`calibrations`: device name -> latest calibration) and peak memory, and its device against
    each other device of its kind at the configurations both ran (`device_comparisons`).
    `recommendations`: workload -> one line (`recommendation_text`), where `recommend` ran.
    Without `machines` every CPU trial is one machine's."""
    def machine(r: Result) -> tuple[Any, ...] | None:
        return machine_identity(machines.get(r.run_id)) if machines is not None else None

    by_workload: dict[str, list[Result]] = defaultdict(list)
    for r in speed_figures(results):
        by_workload[network_label(r)].append(r)
    names = DeviceNames([r for members in by_workload.values() for r in members], machines)
    rows = []
    for workload in sorted(by_workload):
        members = by_workload[workload]
        configurations = sorted(newest_run_speeds(members, lambda r: (machine(r), config_key(r))).values(),
                                key=lambda c: run_order(c.trials[0]))
        best = max(configurations, key=lambda c: c.samples_per_s)  # the first of equals: the oldest
        home = device_key(best.newest, machines)[2]
        cpus = [c for c in configurations if c.newest.spec.device == "cpu"]
        own = [c for c in cpus if device_key(c.newest, machines)[2] == home]
        base = max(own, key=lambda c: c.samples_per_s) if own else None
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
            trials=len(members), recommendation=(recommendations or {}).get(workload),
            devices=device_comparisons(members, best.newest, machines, names),
            cpu_elsewhere=bool(cpus) and not own))
    return rows


def recommendation_text(lines: Sequence[Line]) -> str | None:
    """`rigbench recommend`'s decisions in one line: device, batch (and precision when decided),
    with the reason from the numbers behind them, and a clearly faster framework where the
    framework line names one; None when no device was decided."""
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
    framework = by.get("framework")
    if framework is not None and (faster := framework.numbers.get("faster")):  # analysis/recommend_framework.py
        ratio = max(c["ratio"] for c in framework.numbers["compared"] if c["framework"] == faster)
        why += f"; {faster} trains it {ratio:.2f}x as fast here (`--framework {faster}`)"
    return f"{text}: fastest device in fp32; {why}"


def device_names_once(results: Sequence[Result], machines: Mapping[str, Any] | None = None) -> list[str]:
    """The devices of `results` as the page names them (DeviceNames: by model, with the id or
    machine where two share it), each once, sorted. A trial that recorded no device name (a
    training run that diverged early) is left out where a named trial has its id on its machine:
    it is that device, not another one called `cuda:0`."""
    names = DeviceNames(results, machines)
    named = {(r.spec.device, device_key(r, machines)[2]) for r in results if r.device_name}
    return sorted({names(r) for r in results
                   if r.device_name or (r.spec.device, device_key(r, machines)[2]) not in named})


@dataclass
class MachineEntry:
    """One machine and the runs measured on it."""

    fingerprint: dict[str, Any] | None  # None: the runs' machine was not recorded
    run_ids: list[str] = field(default_factory=list)
    trials: int = 0
    #: the GPUs' serials (NVML's uuid) over all its runs: sessions of one cloud machine type are
    #: one machine (machine_identity), on another card each time
    gpu_serials: set[str] = field(default_factory=set)


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
        entry.gpu_serials.update(str(g["uuid"]) for g in (machine or {}).get("gpus") or []
                                 if isinstance(g, Mapping) and g.get("uuid"))
        if machine:
            entry.fingerprint = machine
    return list(entries.values())
