"""The recommendation's compile line: whether the framework's graph compiler (torch.compile) pays
on this device, from stored trials only (`rigbench scaling` measures it; nothing is run for it).

The rule: compile where its samples/s beat eager's with the two 95% CIs apart (analysis/
scaling's within_noise), at the recommended batch or, if it was measured only at other batches,
the nearest of them. The line also says after how many samples the compilation pays for
itself: the extra first-step time of the compiled trial (its compilation: first_step_s is not
in the timed steps) divided by the time saved per sample, 1/eager - 1/compiled samples/s.
Where several torch.compile modes were measured at that batch, the line names the fastest that
pays: reduce-overhead's CUDA graphs, which replace a step's kernel launches by one, are what
launch-bound small networks on a GPU are expected to gain from (docs/STRATEGY.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rigbench.analysis.recommend_model import Line
from rigbench.analysis.scaling import ScalingRow, scaling_table
from rigbench.spec import Result
from rigbench.textlimits import error_line


def _payback_samples(compiled: ScalingRow, eager: ScalingRow, first_step_s: dict[int, float | None]) -> float | None:
    """Samples after which the compiled trial's extra first step is paid back (asked only where
    it is the faster), at the rows' mean speeds; None if its first step is unknown."""
    first = first_step_s.get(compiled.trial_id or -1)
    if first is None or not compiled.samples_per_s or not eager.samples_per_s:
        return None
    extra = max(first - (first_step_s.get(eager.trial_id or -1) or 0.0), 0.0)
    return extra / (1.0 / eager.samples_per_s - 1.0 / compiled.samples_per_s)


def _compiled_with_baselines(results: Sequence[Result], device: str) -> list[tuple[ScalingRow, ScalingRow]]:
    """(compile row, its group's baseline row) pairs of `device`: scaling_table puts each
    group's baseline first, then its variants."""
    pairs, base = [], None
    for row in scaling_table(results):
        if row.knob == "baseline":
            base = row
        elif row.knob == "compile" and row.device == device and base is not None:
            pairs.append((row, base))
    return pairs


def decide_compile(results: Sequence[Result], device: str, batch: int, dataset_size: int) -> Line | None:
    """The compile line for `device` at the recommended `batch`; None where no compiled trial of
    the device is stored (a line appears only where compile was studied, as for processes).
    Where several modes were measured (reduce-overhead beside the default), the line takes the
    fastest that pays, else the fastest measured, else the first that failed, and names its mode."""
    pairs = _compiled_with_baselines(results, device)
    if not pairs:
        return None
    nearest = min(pairs, key=lambda pair: (abs(pair[0].batch_size - batch), -pair[0].batch_size))[0].batch_size
    row, base = _best_mode([pair for pair in pairs if pair[0].batch_size == nearest])
    at = f"b{row.batch_size}" + ("" if row.batch_size == batch else f" (the measured batch nearest to b{batch})")
    numbers: dict[str, Any] = {"batch_size": row.batch_size, "mode": row.value, "status": row.status,
                               "speedup": row.speedup, "within_noise": row.within_noise, "trial": row.trial_id,
                               "eager_trial": base.trial_id}
    if row.status != "ok" or row.speedup is None:
        error = error_line(row.error)
        named = "torch.compile" if row.value == "default" else f"torch.compile {row.value}"
        return Line("compile", False, f"compile: off, {named} {row.status} at {at}"
                    + (f" ({error})" if error else ""), numbers)
    pays = _pays(row)
    if row.value == "default":  # the mode that needs no name
        text = f"compile: {'on' if pays else 'off'}, "
    else:
        text = f"compile: on ({row.value}), " if pays else f"compile: off, {row.value} "
    text += f"{_against_eager(row.speedup, row.within_noise)} at {at}"
    first_step_s = {r.id: r.metrics.first_step_s for r in results if r.id is not None}
    payback = _payback_samples(row, base, first_step_s) if pays else None
    if payback is not None:
        numbers["payback_samples"] = payback
        text += (f"; its compilation is paid back after {payback:,.0f} samples "
                 f"({payback / dataset_size:.2g} epochs of {dataset_size:,})")
    return Line("compile", pays, text, numbers)


def _pays(row: ScalingRow) -> bool:
    """Faster than eager with the two intervals apart."""
    return row.status == "ok" and row.speedup is not None and row.speedup > 1 and row.within_noise is False


def _best_mode(pairs: list[tuple[ScalingRow, ScalingRow]]) -> tuple[ScalingRow, ScalingRow]:
    """Of one batch's compile modes: the fastest that pays, else the fastest measured, else the
    first (all failed: its status is the answer)."""
    for chosen in ([p for p in pairs if _pays(p[0])], [p for p in pairs if p[0].speedup is not None]):
        if chosen:
            return max(chosen, key=lambda pair: pair[0].speedup or 0.0)
    return pairs[0]


def _against_eager(speedup: float, within_noise: bool | None) -> str:
    text = f"{speedup:.2f}x eager"
    if within_noise is None:
        return f"{text} (no confidence intervals to tell it from noise)"
    if within_noise:
        return f"{text}, within noise"
    return text + ("" if speedup > 1 else ", slower")
