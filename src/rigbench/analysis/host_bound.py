"""A GPU trial whose speed is its host's: the GPU waited while the CPU launched the work.

A small network's step on a GPU is a few hundred short kernels; the process that launches them
(Python, the framework's dispatcher, the driver) can take longer than the GPU takes to run
them. The GPU then idles between kernels, and the step's speed is the rate at which the host
issues work: its CPU's single-thread speed, clock and driver, not the GPU's arithmetic or
memory. Two leases of the same NVIDIA H200 kind (docs/results/gpu-h200-frameworks.md), same
software, same CPU model string, ran torch's resnet at 11,733 and 21,523 samples/s: in both,
the trial's CPU time per step was the whole step (10.8 of 10.9 ms; 6.1 of 5.9) and the GPU was
busy 43% and 82% of the time. `rigbench compare` said "faster +83.4%" of two equal GPUs.

A trial is host-bound here when, on a GPU, NVML found the GPU idle at least a tenth of the
window (gpu_util_pct_mean under GPU_BUSY_BELOW) while the trial's process used CPU for at least
CPU_WHOLE_STEP of every step. Both are needed: a CUDA synchronisation spins a core while it
waits, so a GPU-bound step also shows its CPU busy the whole step, with the GPU busy near 100%
(torch's compiled GPT: 99.9%).
"""

from __future__ import annotations

from collections.abc import Sequence

from rigbench.spec import Result

#: NVML utilisation (% of the window with a kernel running) under which the GPU waited for work.
GPU_BUSY_BELOW = 90.0
#: The trial's CPU time per step over its step time from which the host was busy the whole step.
CPU_WHOLE_STEP = 0.9


def host_bound(r: Result) -> bool:
    """True for a GPU trial whose speed is the host's rate of launching work (module docstring)."""
    m = r.metrics
    if r.spec.device == "cpu" or r.spec.world_size > 1:  # ranks sum their CPU time: no per-step figure
        return False
    if m.gpu_util_pct_mean is None or m.cpu_ms_per_step is None or not m.step_time_ms_median:
        return False
    return m.gpu_util_pct_mean < GPU_BUSY_BELOW and m.cpu_ms_per_step >= CPU_WHOLE_STEP * m.step_time_ms_median


def host_bound_state(trials: Sequence[Result]) -> bool | None:
    """One configuration's trials (a run's repeats): True where any is host-bound, None where
    none is and the newest stored no GPU busy or CPU time per step (it cannot say), else False."""
    if any(host_bound(t) for t in trials):
        return True
    return False if trials and _measured(trials[-1]) else None


def host_bound_note(a: Sequence[Result], b: Sequence[Result]) -> str | None:
    """The compare note for a pair where a side's trials are host-bound, with the figures that
    say so; None where neither side is."""
    named = {"A": a, "B": b}
    sides = [name for name, trials in named.items() if host_bound_state(trials)]
    if not sides:
        return None
    figures = "; ".join(
        f"{name}: GPU busy {t.metrics.gpu_util_pct_mean:.0f}%, CPU {t.metrics.cpu_ms_per_step:.2f} ms in a "
        f"{t.metrics.step_time_ms_median:.2f} ms step" for name in sides for t in named[name][-1:])
    # the other side may not say: a result stored before rigbench measured the CPU per step
    unknown = [name for name, trials in named.items() if host_bound_state(trials) is None]
    where = ("on both sides" if len(sides) == 2 else f"in {sides[0]}" + (
        f"; {unknown[0]} cannot say (no GPU busy or CPU time per step stored)" if unknown else " only"))
    return (f"host-bound {where} ({figures}): the GPU waited while the CPU launched the work, so the "
            "speed is the host's (its CPU, clock, driver), not the GPU's")


def _measured(r: Result) -> bool:
    """Whether a GPU trial stored what host_bound reads."""
    m = r.metrics
    return m.gpu_util_pct_mean is not None and m.cpu_ms_per_step is not None and bool(m.step_time_ms_median)
