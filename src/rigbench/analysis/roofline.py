"""Roofline and model-FLOPs utilisation (MFU) of a trial: pure arithmetic, no I/O.

    achieved FLOP/s  = flops_per_sample x samples/s          (counted training FLOPs)
    MFU              = achieved FLOP/s / peak FLOP/s of the trial's precision
                       (above 100%: a warning, the peak is too low; never clipped)
    step FLOPs       = flops_per_sample x batch
    step bytes       = bytes_per_sample x batch + optimiser bytes      (an ESTIMATE)
    intensity        = step FLOPs / step bytes                        (FLOP per byte)
    ceiling          = min(peak, intensity x bandwidth)
    bound            = "compute-bound" if peak <= intensity x bandwidth, else "memory-bound"
    above the roof   = achieved > intensity x bandwidth: no trial outruns a true memory roof,
                       so the bytes estimate is too high for this trial (or the bandwidth too
                       low); it gets no ceiling and no bound, and a note says so

Peaks and bandwidths come from two places, kept apart: the spec sheet (analysis/specs.py)
and this machine's calibration (`rigbench calibrate`). A figure that is not known stays None,
with a note saying why; nothing is guessed. docs/COMPARING.md shows worked examples.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from rigbench.analysis.specs import peak_flops, spec_sheet
from rigbench.spec import Result
from rigbench.textlimits import NAME_CHARS, clip
from rigbench.workloads import WORKLOADS

#: Bytes per parameter the optimiser reads or writes: fp32 master weights, whatever the
#: trial's precision (autocast keeps parameters and optimiser state in fp32).
PARAM_BYTES = 4
#: The optimiser update's memory traffic per step, in multiples of the parameter bytes
#: (one pass over each tensor, unfused). SGD with momentum reads the weight, its gradient
#: and the momentum buffer and writes the buffer and the weight: 5. Adam reads the weight,
#: the gradient and both moments and writes both moments and the weight: 7.
OPTIMIZER_TRAFFIC: dict[str, int] = {"sgd": 5, "adam": 7}

#: The frameworks whose adapters estimate memory traffic (the optional `count_traffic` of
#: frameworks/base.py; tests/unit/test_roofline.py checks the adapters against this). A trial
#: of another framework has no FLOP/byte, and its note says so rather than calling it old.
#: JAX and TensorFlow have none yet: XLA's cost_analysis() "bytes accessed" counts the compiled
#: (fused) program with the optimiser update in it, not torch's per-operation, unfused count
#: without the update (frameworks/torch/traffic.py); it would need its own cross-check first.
TRAFFIC_ESTIMATED: tuple[str, ...] = ("torch",)

COMPUTE_BOUND = "compute-bound"
MEMORY_BOUND = "memory-bound"


def achieved_flops(flops_per_sample: float | None, samples_per_s: float | None) -> float | None:
    """Counted training FLOPs per second the trial sustained."""
    if flops_per_sample is None or samples_per_s is None:
        return None
    return flops_per_sample * samples_per_s


def optimizer_bytes(params: int | None, optimizer: str) -> float | None:
    """Bytes the optimiser update reads and writes per step."""
    if params is None or optimizer not in OPTIMIZER_TRAFFIC:
        return None
    return params * PARAM_BYTES * OPTIMIZER_TRAFFIC[optimizer]


def step_bytes(bytes_per_sample: float | None, batch_size: int, params: int | None,
               optimizer: str) -> float | None:
    """Estimated bytes moved per training step: forward and backward traffic (which
    `bytes_per_sample` gives per sample at this batch size) plus the optimiser update."""
    update = optimizer_bytes(params, optimizer)
    if bytes_per_sample is None or update is None:
        return None
    return bytes_per_sample * batch_size + update


def intensity(step_flops: float | None, bytes_moved: float | None) -> float | None:
    """Arithmetic intensity, FLOP per byte."""
    if step_flops is None or not bytes_moved:
        return None
    return step_flops / bytes_moved


def bound(intensity_: float | None, peak: float | None, bandwidth: float | None) -> tuple[float | None, str | None]:
    """(ceiling FLOP/s, which limit binds) of the roofline; (None, None) unless all are known.
    At the ridge point (peak == intensity x bandwidth) it counts as compute-bound."""
    if intensity_ is None or peak is None or bandwidth is None:
        return None, None
    memory_roof = intensity_ * bandwidth
    if peak <= memory_roof:
        return peak, COMPUTE_BOUND
    return memory_roof, MEMORY_BOUND


def ratio(value: float | None, of: float | None) -> float | None:
    """value / of, or None when either is unknown (MFU, fraction of the ceiling)."""
    if value is None or not of:
        return None
    return value / of


@dataclass(frozen=True)
class Roof:
    """One set of ceilings for a trial: from the spec sheet or from the calibration."""

    source: str  # "spec" | "calibrated"
    name: str  # what the figures describe, e.g. the spec sheet's device name
    peak_flops: float | None  # of the trial's precision, FLOP/s
    bandwidth_bytes_s: float | None
    ceiling_flops: float | None = None
    bound: str | None = None
    mfu: float | None = None  # achieved / peak
    of_ceiling: float | None = None  # achieved / ceiling
    #: what the bound lacks when it is None: "peak", "bandwidth", "FLOP/byte" (the trial's intensity)
    missing: tuple[str, ...] = ()
    memory_roof: float | None = None  # intensity x bandwidth, FLOP/s
    of_memory_roof: float | None = None  # achieved / memory_roof
    #: achieved > memory_roof: the estimate contradicted by the measurement, so bound and ceiling are None
    above_memory_roof: bool = False


@dataclass
class TrialRoofline:
    """Everything `rigbench roofline` shows for one trial."""

    achieved_flops: float | None
    step_flops: float | None
    step_bytes: float | None
    intensity: float | None
    spec: Roof | None
    calibrated: Roof | None
    notes: list[str] = field(default_factory=list)
    #: MFU above 100%: a peak below what the trial sustained (see `mfu_warning`)
    warnings: list[str] = field(default_factory=list)
    #: either roof's `above_memory_roof` (`above_roof_note` says what it means)
    above_memory_roof: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def headline_mfu(self) -> Roof | None:
        """The roof a one-figure MFU is read against: the spec sheet's, else the calibrated
        one (None when neither gives an MFU)."""
        return next((src for src in (self.spec, self.calibrated) if src is not None and src.mfu is not None), None)


def _roof(source: str, name: str, peak: float | None, bandwidth: float | None,
          achieved: float | None, intensity_: float | None) -> Roof:
    ceiling, which = bound(intensity_, peak, bandwidth)
    missing = tuple(what for what, value in (("peak", peak), ("bandwidth", bandwidth), ("FLOP/byte", intensity_))
                    if value is None)
    memory_roof = None if intensity_ is None or bandwidth is None else intensity_ * bandwidth
    above = achieved is not None and memory_roof is not None and 0 < memory_roof < achieved
    if above:  # the bound rests on the bytes estimate, which this trial just disproved
        ceiling, which = None, None
    return Roof(source, name, peak, bandwidth, ceiling, which, ratio(achieved, peak), ratio(achieved, ceiling),
                missing, memory_roof, ratio(achieved, memory_roof), above)


def above_roof_note(trial: str, spec: Roof | None, calibrated: Roof | None, intensity_: float | None,
                    achieved: float | None) -> str | None:
    """The note for a trial that ran above its estimated memory roof, or None. Bandwidth x
    FLOP/byte caps what any trial can sustain, so the bytes estimate (an unfused count) is too
    high for it: its true intensity is above the one shown, at least achieved / bandwidth, and
    whether it is memory- or compute-bound is not known."""
    above = [src for src in (spec, calibrated) if src is not None and src.above_memory_roof]
    if not above or intensity_ is None or achieved is None:
        return None
    names = {"spec": "spec sheet's", "calibrated": "calibrated"}
    shares = ", ".join(f"{src.of_memory_roof or 0.0:.0%} of the {names[src.source]} "
                       f"{(src.memory_roof or 0.0) / 1e12:.3g} TFLOP/s" for src in above)
    # The spec sheet's bandwidth is a true maximum, so achieved / it bounds the real intensity
    # from below; a calibrated one may itself be low, which the note then names as a cause.
    by = above[0]
    text = (f"{trial} ran above its estimated memory roof ({shares}): the bytes estimate is too high for it, "
            f"so its real FLOP/byte is above {intensity_:.3g} (at least {achieved / (by.bandwidth_bytes_s or 1.0):.3g} "
            f"by the {names[by.source]} bandwidth) and its bound is unknown")
    if by.source == "calibrated":
        text += " (or the calibrated bandwidth is too low: rerun `rigbench calibrate` without --quick)"
    return text


def traffic_note(framework: str) -> str:
    """Why a trial has no memory-traffic estimate: its framework has none, or (torch) it was
    stored before rigbench estimated traffic."""
    if framework in TRAFFIC_ESTIMATED:
        return "no memory-traffic estimate (a result from before rigbench estimated it)"
    return (f"no memory-traffic estimate for {framework} (rigbench estimates it for "
            f"{', '.join(TRAFFIC_ESTIMATED)} only), so no FLOP/byte and no roofline bound")


def mfu_warning(roof: Roof | None, precision: str) -> str | None:
    """The warning for an MFU above 100%, or None. A trial cannot beat its device's peak, so
    the peak it is measured against is too low: a calibration taken on a busy machine or with
    --quick, or a spec-sheet figure (or a FLOP count) that is wrong."""
    if roof is None or roof.mfu is None or roof.mfu <= 1.0:
        return None
    if roof.source == "calibrated":
        why = ("the calibrated peak is too low (rerun `rigbench calibrate` without --quick "
               "on an idle machine)")
    else:
        why = f"the spec sheet's peak ({roof.name}) or the trial's FLOP count is wrong"
    return f"MFU {roof.mfu:.0%} > 100% of the {roof.source} {precision} peak: {why}"


def calibrated_name(calibration: dict[str, Any], precision: str) -> str:
    """What the calibrated roof is: `torch's fp32 matmul, calibrated 2026-11-27` (the framework
    that measured the peak, store/calibrations.latest_calibration's `measured_by`)."""
    when = f"calibrated {str(calibration.get('created_at') or '')[:10]}".strip()
    framework = calibration.get("measured_by", {}).get(f"matmul_flops:{precision}")
    return f"{framework}'s {precision} matmul, {when}" if framework else when


def peak_choice_note(calibration: dict[str, Any], precision: str) -> str | None:
    """Where several frameworks calibrated the `precision` peak: which one it is and what the
    others reached (the highest is used: store/calibrations.latest_calibration); else None."""
    by = calibration.get("measured_by_all", {}).get(f"matmul_flops:{precision}", {})
    if len(by) < 2:
        return None
    ranked = sorted(by.items(), key=lambda item: -item[1])
    listed = ", ".join(f"{name} {value / 1e12:.3g}" for name, value in ranked)
    return (f"calibrated {precision} peak: {ranked[0][0]}'s, the highest of the frameworks that measured it "
            f"({listed} TFLOP/s)")


def trial_roofline(*, framework: str, precision: str, batch_size: int, samples_per_s: float | None,
                   flops_per_sample: float | None, bytes_per_sample: float | None,
                   params: int | None, optimizer: str,
                   spec_name: str | None = None, spec_peak: float | None = None,
                   spec_bandwidth: float | None = None,
                   calibration: dict[str, Any] | None = None, trial: str = "the trial") -> TrialRoofline:
    """The roofline of one trial.

    `spec_*`: the spec sheet's name, peak FLOP/s for `precision` and bandwidth (B/s), None
    for hardware not in the sheet. `calibration`: `store.calibrations.latest_calibration`'s
    dict for the trial's device, or None. `trial`: how a note names it ("trial 7").
    """
    notes: list[str] = []
    achieved = achieved_flops(flops_per_sample, samples_per_s)
    flops = None if flops_per_sample is None else flops_per_sample * batch_size
    moved = step_bytes(bytes_per_sample, batch_size, params, optimizer)
    if flops_per_sample is None:
        notes.append("no FLOP count for this trial")
    if bytes_per_sample is None:
        notes.append(traffic_note(framework))
    ai = intensity(flops, moved)
    spec = None
    if spec_name is None:
        notes.append("device not in the spec sheets")
    else:
        spec = _roof("spec", spec_name, spec_peak, spec_bandwidth, achieved, ai)
        if spec_peak is None:
            notes.append(f"the spec sheet has no {precision} peak")
    calibrated = None
    if calibration is None:
        notes.append("device not calibrated: run `rigbench calibrate`")
    else:
        peak = calibration.get("matmul_flops", {}).get(precision)
        calibrated = _roof("calibrated", calibrated_name(calibration, precision),
                           peak, calibration.get("memory_bandwidth_bytes_s"), achieved, ai)
        if peak is None:
            why = calibration.get("unsupported", {}).get(precision)
            notes.append(f"no calibrated {precision} peak" + (f" ({why})" if why else ""))
        choice = peak_choice_note(calibration, precision)
        if choice:
            notes.append(choice)
    above = above_roof_note(trial, spec, calibrated, ai, achieved)
    if above:
        notes.append(above)
    warnings = [w for w in (mfu_warning(spec, precision), mfu_warning(calibrated, precision)) if w]
    return TrialRoofline(achieved, flops, moved, ai, spec, calibrated, notes, warnings, above is not None)


#: The precisions whose traffic the first estimate counted at fp32 bytes, and the workloads whose
#: attention it counted unfused (Metrics.bytes_estimate_revision: none stored).
REDUCED_PRECISIONS = ("bf16", "fp16")
ATTENTION_WORKLOADS = ("gpt", "vit")


def result_roofline(result: Result, calibration: dict[str, Any] | None,
                    samples_per_s: float | None = None) -> TrialRoofline:
    """The TrialRoofline of one stored result, against its device's spec sheet and
    `calibration` (its device's latest, store/calibrations.device_calibrations, or None).
    `samples_per_s`: its configuration's figure (the mean of repeats) in place of the trial's own."""
    sheet = spec_sheet(result)
    m, precision = result.metrics, result.spec.precision
    # A workload this rigbench does not define (a bundle from a newer one): its optimiser,
    # hence its bytes per step, is unknown, so it gets no intensity and no roof; its
    # counted FLOPs (stored with the trial) still give achieved FLOP/s and MFU.
    workload = WORKLOADS.get(result.spec.workload)
    roof = trial_roofline(
        framework=result.spec.framework, precision=precision, batch_size=result.spec.batch_size,
        samples_per_s=m.samples_per_s if samples_per_s is None else samples_per_s,
        flops_per_sample=m.flops_per_sample, bytes_per_sample=m.bytes_per_sample, params=m.params,
        optimizer=workload.optimizer if workload else "",
        spec_name=sheet.name if sheet else None,
        spec_peak=peak_flops(sheet, precision) if sheet else None,
        spec_bandwidth=sheet.memory_bandwidth_gbs * 1e9 if sheet and sheet.memory_bandwidth_gbs else None,
        calibration=calibration, trial="the trial" if result.id is None else f"trial {result.id}",
    )
    if workload is None:
        roof.notes.insert(0, f"workload {clip(result.spec.workload, NAME_CHARS)!r} is unknown to this rigbench: "
                             "no memory-traffic estimate, so no roofline")
    if (m.bytes_per_sample is not None and m.bytes_estimate_revision is None
            and (precision in REDUCED_PRECISIONS or result.spec.workload in ATTENTION_WORKLOADS)):
        roof.notes.append("bytes estimated before rigbench counted a trial's precision and fused attention "
                          "(fp32 bytes, attention unfused; no bytes_estimate_revision stored): such a bf16, fp16 "
                          "or attention trial's FLOP/byte reads low, its memory roof too low")
    return roof
