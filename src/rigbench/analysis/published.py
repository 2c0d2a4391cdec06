"""Published results beside this machine's own.

The tables, in one unit (training steps per second at a batch size), and the mapping of each
published network to its closest rigbench workload are in analysis/published_tables.py
`compare_published()` pairs each published row with the newest stored
configuration of that workload at the same batch (the mean of its newest run's trials, so
`run --repeat` counts as one figure) and works out, for every pair:

- measured speed-up: the published device's steps/s over ours (same batch);
- the paper's own ratio: its accelerator over its own CPU (same framework, network, batch);
- predicted speed-up: the ratio of FP32 peaks (spec sheets; this machine's device falls
  back to its calibrated matmul peak when the spec file lacks it; analysis/peaks.py). A CPU's
  spec-sheet peak depends on the clock assumed, so where a CPU with published clocks is
  involved the prediction is a range, one ratio per clock (max turbo on every core .. base clock);
  a published CPU column run on fewer threads than the CPU has cores (Shi et al.'s) is set
  against the peak of that many cores (Peak.on_threads);
- normalised speed-up (seed 000, "performance ratios should be normalized relative to the
  CPU utilization percentile of the specific library used"): every throughput measured on a
  CPU is divided by the fraction of the CPU it kept busy, i.e. scaled to what it would be at
  100% utilisation if it scaled linearly (ours: the mean use of the trials its speed is the
  mean of); an accelerator's throughput is left as it is.
  So a GPU over a CPU that was u% busy: measured x u/100.
- a few sentences explaining the gap between predicted and measured, computed from the numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rigbench.analysis.contention import is_busy
from rigbench.analysis.device_names import DeviceNames
from rigbench.analysis.peaks import Peak, PeakOf, clock_assumption, prediction_text, ratio_by_clock, times
from rigbench.analysis.published_tables import (
    MAPPINGS,
    Mapping,
    PublishedRow,
    framework_family,
    published_rows,
)
from rigbench.analysis.roofline import result_roofline
from rigbench.analysis.trials import (
    Machines,
    RunSpeed,
    config_key,
    device_key,
    global_batch,
    is_full_protocol,
    newest_run_speeds,
    run_order,
)
from rigbench.spec import Result
from rigbench.workloads import WORKLOADS

# ---------------------------------------------------------------------------------------------
# Comparison


@dataclass
class PublishedMatch:
    """A published row beside one of our results, with the ratios and the explanation."""

    row: PublishedRow
    mapping: Mapping
    ours: Result                          # our configuration's newest trial
    ours_steps_per_s: float               # the mean of its newest run's trials
    measured: float                       # published steps/s / ours
    ours_trials: list[int] = field(default_factory=list)  # the trials ours_steps_per_s is the mean of
    ours_cpu_pct: float | None = None     # their mean CPU use (100 = every logical core busy)
    paper_cpu: PublishedRow | None = None
    paper_ratio: float | None = None      # published accelerator / the paper's own CPU
    predicted: float | None = None        # FP32 peak of the published device / ours (CPUs at max turbo)
    paper_predicted: float | None = None  # FP32 peak of the published device / the paper's CPU
    predicted_by_clock: dict[str, float] = field(default_factory=dict)        # {} = no CPU clock involved
    paper_predicted_by_clock: dict[str, float] = field(default_factory=dict)
    normalised: float | None = None       # measured, CPU throughputs scaled to 100% utilisation
    paper_normalised: float | None = None
    peak_published: Peak | None = None
    peak_ours: Peak | None = None
    notes: list[str] = field(default_factory=list)
    #: our device as tables name it: its model, with its id or machine where another device of
    #: the compared results has that name (analysis/device_names.py)
    ours_device: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (`rigbench compare --published --json`)."""
        return {
            "source": self.row.source, "table": self.row.table, "network": self.row.network,
            "framework": self.row.framework, "device": self.row.device, "threads": self.row.threads,
            "batch_size": self.row.batch_size, "published": self.row.figure,
            "published_steps_per_s": self.row.steps_per_s,
            "published_cpu_usage_pct": self.row.cpu_usage_pct,
            "mapping": {"workload": self.mapping.ref, "closeness": self.mapping.closeness,
                        "why": self.mapping.why},
            "ours": {"id": self.ours.id, "trials": self.ours_trials, "run_id": self.ours.run_id,
                     "device": self.ours.spec.device,
                     "device_name": self.ours.device_name, "device_label": self.ours_device,
                     "framework": self.ours.spec.framework,
                     "workload_options": self.ours.spec.workload_options,
                     "steps_per_s": self.ours_steps_per_s,
                     "samples_per_s": self.ours_steps_per_s * global_batch(self.ours),
                     "cpu_util_pct_mean": self.ours_cpu_pct, "threads": self.ours.threads},
            "measured_speedup": self.measured,
            "paper_cpu": self.paper_cpu.label() if self.paper_cpu else None,
            "paper_speedup": self.paper_ratio,
            "predicted_speedup": self.predicted,
            **_prediction_dict("predicted", self.predicted_by_clock),
            "paper_predicted_speedup": self.paper_predicted,
            **_prediction_dict("paper_predicted", self.paper_predicted_by_clock),
            "normalised_speedup": self.normalised,
            "paper_normalised_speedup": self.paper_normalised,
            "peak_published": _peak_dict(self.peak_published),
            "peak_ours": _peak_dict(self.peak_ours),
            "explanation": self.notes,
        }


def _peak_dict(peak: Peak | None) -> dict[str, Any] | None:
    return None if peak is None else {"fp32_flops": peak.flops, "basis": peak.basis,
                                      "bandwidth_bytes_s": peak.bandwidth_bytes_s,
                                      "fp32_flops_by_clock": dict(peak.by_clock) or None,
                                      "cores": peak.cores, "cores_used": peak.threads or peak.cores}


def _prediction_dict(name: str, by_clock: dict[str, float]) -> dict[str, Any]:
    """The clock assumption and range of a prediction (all None for a one-figure ratio)."""
    ranged = len(by_clock) > 1
    return {f"{name}_clocks": clock_assumption(by_clock),
            f"{name}_speedup_by_clock": by_clock if ranged else None,
            f"{name}_speedup_range": [min(by_clock.values()), max(by_clock.values())] if ranged else None}


@dataclass
class Missing:
    """A mapping with published rows but no comparable stored result: what to run."""

    mapping: Mapping
    batches: list[int]
    command: str


@dataclass
class PublishedComparison:
    matches: list[PublishedMatch]
    missing: list[Missing]


def one_process_speed_trial(r: Result) -> bool:
    """Full-protocol speed trials of one process at any precision and compile setting
    (analysis/trials.py), in the default memory layout. A data-parallel trial (several ranks, or
    one under the wrapper: TrialSpec.is_data_parallel) is another configuration, its samples/s
    counting every rank's batch, so it is left out (`rigbench scaling` and `compare` read it)."""
    s = r.spec
    return (r.status == "ok" and bool(r.metrics.samples_per_s) and is_full_protocol(r)
            and not s.channels_last and not s.is_data_parallel)


def usable_speed_trial(r: Result) -> bool:
    """Plain fp32 eager speed trials of one process (one_process_speed_trial): what the
    published tables measured."""
    return one_process_speed_trial(r) and r.spec.precision == "fp32" and not r.spec.compiled


def _matches_mapping(r: Result, m: Mapping) -> bool:
    """A result of the mapped workload and options, measured on the network the mapping
    describes: the workload's current revision (an older one is another network)."""
    workload = WORKLOADS.get(m.workload)
    return (r.spec.workload == m.workload and workload is not None
            and r.spec.workload_revision == workload.revision
            and all(r.spec.workload_options.get(k) == v for k, v in m.options))


def compare_published(results: Sequence[Result], sources: Sequence[str] = (),
                      peak_of: PeakOf | None = None,
                      all_frameworks: bool = False, machines: Machines | None = None) -> PublishedComparison:
    """Pair every published row of `sources` with the newest usable configuration among
    `results` (this machine's, or the runs asked for) of the mapped workload at the same batch,
    one per device and framework of ours; a configuration's figure is the mean of its newest
    run's trials. A device is its id, model and, with `machines` (run id -> fingerprint), machine
    (trials.device_key): an H100's and an H200's `cuda:0` are two devices, each beside the rows.

    `peak_of(device_name, kind, machine)` gives a device's FP32 peak (None when unknown); it is
    called with the published spec names and our device names, ours with the machine key of the
    trial's run (from `machines`; None without), whose calibration counts for it. Published rows
    of other frameworks are left out when the source has rows of our result's framework family
    for that network, unless `all_frameworks`. Of Shi et al.'s desktop-CPU columns, the thread count closest to
    our trial's is used.
    """
    peak_of = peak_of or (lambda name, kind, machine: None)
    rows = published_rows(sources)
    usable = [r for r in results if usable_speed_trial(r)]
    names = DeviceNames(usable, machines)
    matches: list[PublishedMatch] = []
    missing: list[Missing] = []
    for mapping in MAPPINGS:
        mrows = [r for r in rows if r.source == mapping.source and r.network == mapping.network]
        if not mrows:
            continue
        figures = newest_run_speeds([r for r in usable if _matches_mapping(r, mapping)],
                                    lambda r: config_key(r, machines))
        ours_by_key: dict[tuple[int, tuple, str], RunSpeed] = {}
        for figure in sorted(figures.values(), key=lambda f: run_order(f.newest)):
            r = figure.newest
            # the newest configuration of a device and framework wins (another lr, threads...)
            ours_by_key[(r.spec.batch_size, device_key(r, machines), r.spec.framework)] = figure
        found = False
        for (batch, _, _), ours in sorted(ours_by_key.items(), key=lambda item: (
                item[0][0], item[1].newest.spec.device, names(item[1].newest), item[0][2])):
            candidates = [p for p in mrows if p.batch_size == batch]
            for prow in _shown_rows(candidates, ours.newest, all_frameworks):
                matches.append(_match(prow, mapping, ours, candidates, peak_of, names(ours.newest),
                                      device_key(ours.newest, machines)[2]))
                found = True
        if not found:
            batches = sorted({p.batch_size for p in mrows})
            missing.append(Missing(mapping, batches,
                                   f"rigbench run {mapping.ref} -b {','.join(map(str, batches))}"))
    return PublishedComparison(matches, missing)


def _closest_threads(rows: list[PublishedRow], threads: int | None) -> list[PublishedRow]:
    """Of CPU rows differing only in thread count, keep the one closest to `threads`."""
    cpu_threads = sorted({r.threads for r in rows if r.threads})
    if not cpu_threads:
        return rows
    target = threads or cpu_threads[-1]
    best = min(cpu_threads, key=lambda t: (abs(t - target), t))
    return [r for r in rows if r.threads in (None, best)]


def _shown_rows(candidates: list[PublishedRow], ours: Result, all_frameworks: bool) -> list[PublishedRow]:
    family = framework_family(ours.spec.framework)
    same = [p for p in candidates if framework_family(p.framework) == family]
    chosen = candidates if all_frameworks or not same else same
    return _closest_threads(chosen, ours.threads)


def _utilisation_fraction(kind: str, pct: float | None) -> float | None:
    """1 for an accelerator's throughput; the busy fraction for a CPU's (None if unknown)."""
    if kind != "cpu":
        return 1.0
    return pct / 100 if pct else None


def _on_threads(peak: Peak | None, threads: int | None) -> Peak | None:
    return None if peak is None else peak.on_threads(threads)


def _ours_kind(r: Result) -> str:
    return "cpu" if r.spec.device == "cpu" else "gpu"


def _match(prow: PublishedRow, mapping: Mapping, figure: RunSpeed, candidates: list[PublishedRow],
           peak_of: PeakOf, device: str, machine: tuple[Any, ...] | None) -> PublishedMatch:
    ours = figure.newest
    match = PublishedMatch(prow, mapping, ours, figure.steps_per_s, prow.steps_per_s / figure.steps_per_s,
                           figure.ids, figure.mean_of("cpu_util_pct_mean"), ours_device=device)
    # the paper's own CPU for the same framework, network and batch (Shi: closest thread count)
    if prow.device_kind == "gpu":
        cpus = _closest_threads([p for p in candidates if p.device_kind == "cpu"
                                 and p.framework == prow.framework], ours.threads)
        match.paper_cpu = cpus[0] if cpus else None
    if match.paper_cpu:
        match.paper_ratio = prow.steps_per_s / match.paper_cpu.steps_per_s
    # a published CPU column's peak is of the cores its threads used (Shi et al.'s 1-8 thread columns
    # on a 4-core i7-3820): a 2-thread time set against all 4 cores would read half as busy. Ours
    # stays the device's whole peak, as `rigbench roofline`'s MFU takes it.
    match.peak_published = _on_threads(peak_of(prow.spec_name, prow.device_kind, None) if prow.spec_name else None,
                                       prow.threads)
    match.peak_ours = peak_of(ours.device_name, _ours_kind(ours), machine)
    if match.peak_published and match.peak_ours:
        match.predicted = match.peak_published.flops / match.peak_ours.flops
        match.predicted_by_clock = ratio_by_clock(match.peak_published, match.peak_ours)
    if match.paper_cpu and match.paper_cpu.spec_name and match.peak_published:
        paper_cpu_peak = _on_threads(peak_of(match.paper_cpu.spec_name, "cpu", None), match.paper_cpu.threads)
        if paper_cpu_peak:
            match.paper_predicted = match.peak_published.flops / paper_cpu_peak.flops
            match.paper_predicted_by_clock = ratio_by_clock(match.peak_published, paper_cpu_peak)
    pub_u = _utilisation_fraction(prow.device_kind, prow.cpu_usage_pct)
    ours_u = _utilisation_fraction(_ours_kind(ours), match.ours_cpu_pct)
    if pub_u and ours_u:
        match.normalised = match.measured * ours_u / pub_u
    if match.paper_ratio and match.paper_cpu and match.paper_cpu.cpu_usage_pct:
        match.paper_normalised = match.paper_ratio * match.paper_cpu.cpu_usage_pct / 100
    match.notes = explain(match)
    return match


def explain(m: PublishedMatch) -> list[str]:
    """Sentences on why measured and predicted differ, each computed from the match's numbers."""
    notes: list[str] = []
    row, ours = m.row, m.ours
    # the machine is named where two of the compared machines have a device of this name
    ours_dev = f"our {ours.spec.device} ({m.ours_device or ours.device_name or 'unnamed'})"
    flops = ours.metrics.flops_per_sample
    if m.predicted is not None and m.peak_published and m.peak_ours:
        share = "-".join(f"{m.measured / p:.2g}" for p in (m.predicted_by_clock or {"": m.predicted}).values())
        said = clock_assumption(m.predicted_by_clock)
        notes.append(f"The {row.device} ran {times(m.measured)} as fast as {ours_dev}; the FP32 peaks "
                     f"predict {prediction_text(m.predicted, m.predicted_by_clock, assumption=False)} "
                     f"({said + '; ' if said else ''}{share} of the prediction).")
        if flops:
            step = flops * row.batch_size
            achieved_pub = row.steps_per_s * step
            achieved_ours = m.ours_steps_per_s * step
            mfu_pub, mfu_ours = achieved_pub / m.peak_published.flops, achieved_ours / m.peak_ours.flops
            same = "" if m.mapping.closeness == "same network" else " if its network costs what ours does"
            turbo = " at max turbo" if m.predicted_by_clock else ""
            notes.append(
                f"At our {ours.spec.workload}'s {flops / 1e6:,.1f} MFLOP per sample{same}, the "
                f"{row.device} ran at {achieved_pub / 1e9:,.1f} GFLOP/s = {mfu_pub:.1%} of its peak"
                f"{m.peak_published.cores_text}{_at_base(m.peak_published, achieved_pub)}, ours at "
                f"{achieved_ours / 1e9:,.1f} GFLOP/s = {mfu_ours:.1%} of its peak"
                f"{_at_base(m.peak_ours, achieved_ours)}; measured = predicted"
                f"{turbo} x {mfu_pub / mfu_ours:.3g}, the ratio of the two utilisations.")
            if mfu_ours > 1:
                notes.append(f"Our trial beat our peak ({m.peak_ours.basis}), so that peak is too low: "
                             f"calibrate again on an idle machine (`rigbench calibrate`, not --quick).")
            if mfu_pub < 0.05:
                at_peak_us = step / m.peak_published.flops * 1e6
                notes.append(
                    f"A step of {row.batch_size} samples is {step / 1e9:,.2f} GFLOP: {at_peak_us:,.0f} µs "
                    f"of work at the {row.device}'s peak, but it took {1e6 / row.steps_per_s:,.0f} µs. "
                    f"Time that does not scale with FLOP/s (framework and kernel-launch overhead, "
                    f"feeding input, small layers that cannot fill the device) dominates.")
        _memory_note(m, notes, flops)
        fp16 = m.peak_published.fp16_flops
        if row.device_kind == "gpu" and fp16 and fp16 >= 4 * m.peak_published.flops:
            notes.append(f"These are fp32 figures: the {row.device}'s tensor cores (fp16 peak "
                         f"{fp16 / m.peak_published.flops:.0f}x its FP32 peak) sit idle.")
    elif m.peak_published is None:
        notes.append(f"No spec-sheet peak for the {row.device}, so no predicted ratio.")
    elif m.peak_ours is None:
        notes.append(f"No peak known for {ours_dev}: neither in the spec file nor calibrated "
                     f"(run `rigbench calibrate`), so no predicted ratio.")
    ours_u = m.ours_cpu_pct
    if _ours_kind(ours) == "cpu" and ours_u and m.normalised is not None:
        closer = ""
        if m.predicted is not None:
            nearer = abs(math.log(m.normalised / m.predicted)) < abs(math.log(m.measured / m.predicted))
            closer = " (nearer the spec-sheet prediction)" if nearer else " (no nearer the prediction)"
        notes.append(f"Our run kept {ours_u:.0f}% of the machine's logical cores busy; with every CPU "
                     f"throughput scaled to 100% busy the ratio is {times(m.normalised)}{closer}.")
    if m.paper_ratio is not None and m.paper_cpu is not None:
        text = f"The source's own {row.device} : {m.paper_cpu.device_label()} ratio is {times(m.paper_ratio)}"
        if m.paper_predicted is not None:
            text += f" against {prediction_text(m.paper_predicted, m.paper_predicted_by_clock)} from the spec sheets"
        if m.paper_normalised is not None:
            text += (f"; its CPU run was {m.paper_cpu.cpu_usage_pct:.0f}% busy, normalised "
                     f"{times(m.paper_normalised)}")
            if m.paper_predicted is not None:
                nearer = (abs(math.log(m.paper_normalised / m.paper_predicted))
                          < abs(math.log(m.paper_ratio / m.paper_predicted)))
                text += " (nearer the spec sheets)" if nearer else " (no nearer the spec sheets)"
        notes.append(text + ".")
    if framework_family(row.framework) != framework_family(ours.spec.framework):
        notes.append(f"Different frameworks ({row.framework} there, {ours.spec.framework} "
                     f"{ours.software.get(ours.spec.framework, '')} here): part of any gap is software.")
    elif ours.software.get(ours.spec.framework):
        notes.append(f"Same framework family, but {row.framework} there and {ours.spec.framework} "
                     f"{ours.software[ours.spec.framework]} here.")
    if m.mapping.closeness != "same network":
        alike = "of the same family, not identical" if m.mapping.closeness == "same family" else "loosely alike"
        notes.append(f"The networks are {alike} ({m.mapping.why}): read the ratios as rough.")
    others = ours.metrics.others_cpu_pct_mean
    if ours.metrics.noisy:
        # noisy says the steps vary (a few stalled steps are enough), not that the median is
        # uncertain: its interval says that (docs/METHODOLOGY.md, "noisy")
        why = ("the machine was busy, or a few steps stalled" if others is None or is_busy(ours.metrics) else
               f"the machine was quiet (others used {others:.0f}% of the CPU), so some steps stalled or the "
               "work itself varies")
        notes.append(f"Our steps vary (step-time CV {ours.metrics.step_time_cv:.0%}, noisy): {why}; its interval "
                     "says how well the figure is known.")
    if is_busy(ours.metrics):
        notes.append(f"Our figure is busy: other processes used {ours.metrics.others_cpu_pct_mean:.0f}% of the "
                     "CPU while it was timed, so it is this machine under that load.")
    return notes


def _at_base(peak: Peak, achieved: float) -> str:
    """' at max turbo (22.0% at base clock)' for a CPU peak with clocks; '' otherwise."""
    base = peak.at("base") if peak.by_clock else None
    return f" at max turbo ({achieved / base:.1%} at base clock)" if base else ""


def _memory_note(m: PublishedMatch, notes: list[str], flops: float | None) -> None:
    """Below the published device's ridge point the bandwidth ratio, not the FLOP ratio, applies.
    The intensity is the roofline's (analysis/roofline.py: the step's FLOPs over its estimated
    bytes, the optimiser update's included), so `rigbench roofline` gives the same figure."""
    intensity = result_roofline(m.ours, None).intensity
    pub, ours = m.peak_published, m.peak_ours
    if not (flops and intensity and pub and ours and pub.bandwidth_bytes_s and ours.bandwidth_bytes_s):
        return
    ridge = pub.flops / pub.bandwidth_bytes_s
    if intensity < ridge:
        notes.append(f"At {intensity:,.1f} FLOP/byte the network is below the {m.row.device}'s ridge "
                     f"point ({ridge:,.0f} FLOP/byte): memory bandwidth bounds it there, and the "
                     f"bandwidth ratio predicts {times(pub.bandwidth_bytes_s / ours.bandwidth_bytes_s)}.")
