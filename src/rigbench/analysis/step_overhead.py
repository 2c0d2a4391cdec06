"""The part of a training step that does not grow with the batch: pure arithmetic, no I/O.

A step's time at batch b is modelled as a line, fixed + per_sample x b, fitted by least
squares through the measured step times (b / samples/s of the fp32 eager trials at three
batches or more). The fixed part is what a step costs whatever the batch:
  - moving the parameters: the forward and backward passes read the weights, the backward
    writes their gradients, and the optimiser update reads and writes the weights and its
    state (roofline.OPTIMIZER_TRAFFIC); at the device's memory bandwidth that is a floor;
  - the rest, called overhead here: kernel launches, the framework's and Python's time per
    operation, and parameter traffic slower than the bandwidth floor.
Where the overhead is most of the step at the recommended batch, the step is overhead-bound:
a larger batch costs little more per step, and what removes per-operation costs (torch.compile
fusing small operations; on a GPU its reduce-overhead mode, which replays the step's kernel
launches as one CUDA graph) is what can pay (docs/STRATEGY.md, "Where a step's time goes").

On a GPU a step's launches overlap its kernels, so step time is nearer max(launches, kernels)
than their sum: flat while launch-bound, then rising. A line through such points still puts
most of a flat region's time in the fixed part; the worst residual says how well it fits.
Where the step times do not fit a line at all (`misfit`: they fall as the batch grows, the
line's fixed part is more than a whole measured step, or a point is off by more than
MAX_MISFIT), there is no verdict, and the line says why: a split of the step read off such a
line is the noise's, not the step's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rigbench.analysis.recommend_model import Line
from rigbench.analysis.roofline import PARAM_BYTES, optimizer_bytes
from rigbench.analysis.specs import spec_sheet
from rigbench.spec import Result

#: Fewest batches to fit: two points always lie on a line, so a third is the first check.
MIN_BATCHES = 3
#: Overhead above this share of the step at the recommended batch: overhead-bound.
OVERHEAD_BOUND = 0.5
#: The most a line may miss a measured step by (|measured - fitted| / measured) and still split
#: the step. The verdict splits the step at OVERHEAD_BOUND (half of it); a line off by more than
#: a quarter of a step could move the fixed part across that split. The flat-then-rising steps
#: of a GPU (module docstring) stay within it: the H100's resnet line is off by 20% at worst.
#: The misfits seen were off by 39% (a falling line) and 654%.
MAX_MISFIT = 0.25
#: Parameter passes outside the optimiser per step: the forward and backward passes each read
#: the weights, and the backward writes their gradients.
PARAMETER_PASSES = 3


@dataclass(frozen=True)
class StepFit:
    """Step time = fixed_s + per_sample_s x batch, fitted through `batches`."""

    fixed_s: float
    per_sample_s: float
    batches: tuple[int, ...]
    worst_residual: float  # the largest |measured - fitted| / measured over the batches

    def step_s(self, batch: int) -> float:
        return self.fixed_s + self.per_sample_s * batch


def fit_step_time(samples_per_s: Mapping[int, float]) -> StepFit | None:
    """The least-squares line through the step times b / samples/s; None under MIN_BATCHES."""
    points = sorted((b, b / s) for b, s in samples_per_s.items() if s > 0)
    if len(points) < MIN_BATCHES:
        return None
    mean_b = sum(b for b, _ in points) / len(points)
    mean_t = sum(t for _, t in points) / len(points)
    spread = sum((b - mean_b) ** 2 for b, _ in points)
    slope = sum((b - mean_b) * (t - mean_t) for b, t in points) / spread
    fixed = mean_t - slope * mean_b
    worst = max(abs(t - (fixed + slope * b)) / t for b, t in points)
    return StepFit(fixed, slope, tuple(b for b, _ in points), worst)


def misfit(fit: StepFit, samples_per_s: Mapping[int, float]) -> str | None:
    """Why the step times do not fit `fit`'s line, or None when they do (within MAX_MISFIT, the
    noise a line may leave; a flat step's line can lean a little either way)."""
    steps = {b: b / samples_per_s[b] for b in fit.batches}
    first, last = fit.batches[0], fit.batches[-1]
    if fit.per_sample_s < 0 and fit.step_s(last) < (1 - MAX_MISFIT) * fit.step_s(first):
        return (f"the line falls as the batch grows, from {duration(fit.step_s(first))} at b{first} to "
                f"{duration(fit.step_s(last))} at b{last}, and a step does not cost less for more samples")
    smallest = min(steps, key=lambda b: steps[b])
    if fit.fixed_s > (1 + MAX_MISFIT) * steps[smallest]:
        return (f"its fixed part, {duration(fit.fixed_s)}, is more than the whole b{smallest} step "
                f"({duration(steps[smallest])})")
    if fit.worst_residual > MAX_MISFIT:
        return f"a point off it by more than {MAX_MISFIT:.0%} of its step leaves no split of the step to read"
    return None


def parameter_bytes(params: int | None, optimizer: str) -> float | None:
    """Bytes a step moves for its parameters whatever the batch: PARAMETER_PASSES over the fp32
    weights plus the optimiser update's traffic (roofline.optimizer_bytes)."""
    update = optimizer_bytes(params, optimizer)
    if params is None or update is None:
        return None
    return params * PARAM_BYTES * PARAMETER_PASSES + update


def memory_bandwidths(results: Sequence[Result], calibrations: Mapping[str, Mapping[str, Any]]) -> dict[str, float | None]:
    """device -> its memory bandwidth in B/s: the calibrated figure of the device's newest trial's
    device name (`calibrations`: store.calibrations.device_calibrations), else its spec sheet's,
    else None."""
    newest: dict[str, Result] = {}
    for r in results:
        newest[r.spec.device] = r
    out: dict[str, float | None] = {}
    for device, r in newest.items():
        calibrated = (calibrations.get(r.device_name or "") or {}).get("memory_bandwidth_bytes_s")
        sheet = spec_sheet(r)
        out[device] = calibrated or (sheet.memory_bandwidth_gbs * 1e9 if sheet and sheet.memory_bandwidth_gbs else None)
    return out


def duration(seconds: float) -> str:
    """A step-sized time: `2.09 ms`, `450 µs`."""
    return f"{seconds * 1e3:.3g} ms" if abs(seconds) >= 1e-3 else f"{seconds * 1e6:.3g} µs"


def decide_overhead(samples_per_s: Mapping[int, float], batch: int, device: str, workload: str,
                    parameter_bytes_: float | None, bandwidth_bytes_s: float | None,
                    compile_measured: bool, framework: str = "torch") -> Line | None:
    """The step-overhead line at the recommended `batch`, from the fp32 eager speeds by batch on
    `device`; None with fewer than MIN_BATCHES batches, a line of value None (no verdict, the text
    says why) where the step times do not fit a line (`misfit`). `workload`: as `rigbench scaling` takes it
    (NAME:key=value). `compile_measured`: a compile line is
    already in the recommendation, so the overhead-bound hint points at it instead of at
    `rigbench scaling`."""
    fit = fit_step_time(samples_per_s)
    if fit is None:
        return None
    batches = ", ".join(f"b{b}" for b in fit.batches)
    # a falling line is written "452 ms - 578 µs per sample", not "+ -578 µs"
    line = (f"{duration(fit.fixed_s)} {'-' if fit.per_sample_s < 0 else '+'} {duration(abs(fit.per_sample_s))} "
            "per sample")
    numbers: dict[str, Any] = {
        "batch_size": batch, "fixed_s": fit.fixed_s, "per_sample_s": fit.per_sample_s,
        "fitted_batches": list(fit.batches), "worst_residual": fit.worst_residual,
    }
    why = misfit(fit, samples_per_s)
    if why is not None:  # no verdict, so recommend measures no compile for it and roofline adds no note
        return Line("step_overhead", None, f"step overhead: no verdict: the step times do not fit a line (the "
                    f"line through {batches} is {line}, worst point off by {fit.worst_residual:.0%}): {why}",
                    {**numbers, "misfit": why})
    step = batch / samples_per_s[batch] if batch in samples_per_s else fit.step_s(batch)
    fixed = min(max(fit.fixed_s, 0.0), step)  # a negative intercept: nothing is fixed
    floor = None
    parameters = "; the parameters' share is unknown (no memory bandwidth: `rigbench calibrate`)"
    if parameter_bytes_ is not None and bandwidth_bytes_s:
        floor = min(parameter_bytes_ / bandwidth_bytes_s, fixed)
        gbs = bandwidth_bytes_s / 1e9
        parameters = (f"; moving the parameters takes at least {duration(floor)} of it "
                      f"({parameter_bytes_ / 1e6:,.0f} MB at {gbs:,.{0 if gbs >= 100 else 1}f} GB/s)")
    overhead = fixed - (floor or 0.0)
    share = overhead / step
    numbers.update({
        "step_s": step, "parameter_bytes": parameter_bytes_, "bandwidth_bytes_s": bandwidth_bytes_s,
        "parameter_floor_s": floor, "overhead_s": overhead, "overhead_share": share,
        "overhead_bound": share >= OVERHEAD_BOUND,
    })
    text = (f"step overhead: {duration(fixed)} of the {duration(step)} step at b{batch} does not grow with the "
            f"batch (a line through the step times at {batches}: {line}")
    text += f"; worst point off by {fit.worst_residual:.0%})" if fit.worst_residual > 0.1 else ")"
    text += parameters
    if share < OVERHEAD_BOUND:
        return Line("step_overhead", "work-bound", text + f"; the rest is {share:.0%} of the step, under "
                    f"{OVERHEAD_BOUND:.0%}: the batch's own work dominates", numbers)
    text += (f"; the rest, {duration(overhead)} ({share:.0%} of the step), is per-step overhead (kernel launches, "
             "framework time): the step is overhead-bound")
    if compile_measured:
        text += "; the compile line says what compiling the step did to it"
    elif framework == "torch":
        graphs = " and its reduce-overhead mode (CUDA graphs)" if device.startswith("cuda") else ""
        text += f"; `rigbench scaling {workload} -d {device}` measures what torch.compile{graphs} does to it"
    return Line("step_overhead", "overhead-bound", text, numbers)
