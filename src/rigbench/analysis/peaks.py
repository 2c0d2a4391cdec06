"""Peaks behind `compare --published`'s predicted speed-ups, and how a prediction is printed.

A device's FP32 ceiling comes from its spec sheet (analysis.specs) or, for this machine's
device when the sheet lacks it, from its newest `rigbench calibrate` matmul peak. A CPU's
spec-sheet peak depends on the clock assumed: the sheets give it at the max single-core turbo
(every core at that clock: an upper bound no CPU holds), at the all-core turbo where published,
and at the base clock. A predicted ratio involving such a CPU is therefore a range, one ratio
per clock, printed with its assumption: "x8.14-18 (CPU at max turbo .. base clock)".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from rigbench.analysis.specs import CLOCKS, fp32_flops_by_clock, lookup, peak_flops


def times(value: float) -> str:
    """A ratio as printed: 'x8.14', 'x1,234'."""
    return f"x{value:,.0f}" if value >= 1000 else f"x{value:.3g}"


@dataclass(frozen=True)
class Peak:
    """A device's FP32 ceiling and where it came from."""

    flops: float
    basis: str                               # e.g. "spec sheet: NVIDIA GeForce GTX 1060 6GB"
    bandwidth_bytes_s: float | None = None
    fp16_flops: float | None = None          # spec-sheet fp16/bf16 peak, to spot unused tensor cores
    # A CPU's spec-sheet FP32 peak per clock (analysis.specs.CLOCKS keys, fastest first); `flops`
    # is the max-turbo one. Empty for one-figure peaks (GPUs, calibrated).
    by_clock: tuple[tuple[str, float], ...] = ()
    cores: int | None = None                 # a CPU's physical cores, from its spec sheet
    threads: int | None = None               # set by on_threads: the peak is of this many of the cores

    def on_threads(self, threads: int | None) -> Peak:
        """The peak of the cores `threads` threads can keep busy: x min(threads, cores) / cores.
        A CPU's sheet peak counts every core, but a run on 2 threads of a 4-core CPU has 2 cores'
        FMA units; threads beyond the cores (Hyper-Threading) share them and add none. Unchanged
        without a thread count or a core count (a GPU's or a calibrated peak)."""
        if not threads or not self.cores or threads >= self.cores:
            return self
        share = threads / self.cores
        return replace(self, flops=self.flops * share, threads=threads,
                       by_clock=tuple((clock, flops * share) for clock, flops in self.by_clock))

    @property
    def cores_text(self) -> str:
        """' on 2 of its 4 cores' for a peak on_threads scaled; '' otherwise."""
        return f" on {self.threads} of its {self.cores} cores" if self.threads else ""

    def at(self, clock: str) -> float | None:
        """FLOP/s with CPUs at `clock` ("max_turbo", "all_core", "base"); None if not published."""
        return dict(self.by_clock).get(clock) if self.by_clock else self.flops

    def text(self) -> str:
        """'0.538 TFLOP/s at max turbo, 0.243 at base clock (spec sheet: ...)'."""
        if not self.by_clock:
            return f"{self.flops / 1e12:.3g} TFLOP/s{self.cores_text} ({self.basis})"
        first, *rest = self.by_clock
        parts = [f"{first[1] / 1e12:.3g} TFLOP/s at {CLOCKS[first[0]]}",
                 *(f"{flops / 1e12:.3g} at {CLOCKS[clock]}" for clock, flops in rest)]
        return f"{', '.join(parts)}{self.cores_text} ({self.basis})"


def ratio_by_clock(num: Peak, den: Peak) -> dict[str, float]:
    """num / den at each CPU clock assumption that every CPU of the pair publishes (CLOCKS order);
    {} when neither peak depends on a clock (the ratio is then one figure)."""
    if not (num.by_clock or den.by_clock):
        return {}
    ratios = {}
    for clock in CLOCKS:
        a, b = num.at(clock), den.at(clock)
        if a and b:
            ratios[clock] = a / b
    return ratios


def clock_assumption(by_clock: dict[str, float]) -> str | None:
    """'CPU at max turbo .. base clock' for a ratio by clock; None for a one-figure ratio."""
    return "CPU at " + " .. ".join(CLOCKS[c] for c in by_clock) if len(by_clock) > 1 else None


def prediction_text(single: float | None, by_clock: dict[str, float], *, assumption: bool = True) -> str:
    """A predicted ratio as printed: 'x40', or 'x8.14-18 (CPU at max turbo .. base clock)'
    when it depends on a CPU's clock; '-' when there is none."""
    if single is None:
        return "-"
    said = clock_assumption(by_clock)
    if said is None:
        return times(single)
    values = "x" + "-".join(times(v)[1:] for v in by_clock.values())
    return f"{values} ({said})" if assumption else values


#: `peak_of(device_name, kind, machine)`: a device's FP32 peak, or None where none is known;
#: `machine` (fingerprint.machine_key, or None for the resolver's own) is the machine whose
#: calibration counts for a device the spec sheets lack: the one the trial ran on.
PeakOf = Callable[[str | None, str, tuple[Any, ...] | None], Peak | None]


def peak_resolver(store: Any | None, machine: tuple[Any, ...] | None = None) -> PeakOf:
    """`peak_of` for compare_published: the spec sheet's FP32 peak (analysis.specs), else the
    calibrated fp32 matmul peak of that device name in `store` (store.calibrations) on the
    machine `peak_of` is given, else on `machine` (fingerprint.machine_key; default this
    machine), else None. The Peak says which was used. Per trial, not per command: `compare
    --published --run A --run B` of two machines read both CPUs at A's calibrations, so B's
    CPU, calibrated on its own machine, had no peak and no prediction."""
    from rigbench.fingerprint import this_machine_key
    from rigbench.store.calibrations import latest_calibration

    def peak_of(name: str | None, kind: str, on: tuple[Any, ...] | None = None) -> Peak | None:
        if not name:
            return None
        spec = lookup(name)
        fp32 = peak_flops(spec, "fp32") if spec else None
        if spec and fp32:
            low = [f for f in (peak_flops(spec, "fp16"), peak_flops(spec, "bf16")) if f]
            bandwidth = spec.memory_bandwidth_gbs * 1e9 if spec.memory_bandwidth_gbs else None
            return Peak(fp32, f"spec sheet: {spec.name}", bandwidth, max(low) if low else None,
                        tuple(fp32_flops_by_clock(spec).items()), spec.cores if spec.kind == "cpu" else None)
        calibration = (latest_calibration(store, name, on or machine or this_machine_key())
                       if store is not None else None)
        measured = (calibration or {}).get("matmul_flops", {}).get("fp32")
        if measured:
            bandwidth = calibration.get("memory_bandwidth_bytes_s")  # type: ignore[union-attr]
            when = str(calibration.get("created_at", ""))[:10]  # type: ignore[union-attr]
            by = calibration.get("measured_by", {}).get("matmul_flops:fp32")  # type: ignore[union-attr]
            return Peak(float(measured), f"calibrated matmul peak ({when}{f', {by}' if by else ''}), not in the spec file",
                        bandwidth)
        return None

    return peak_of
