"""`rigbench scaling`: the fp32 eager default and one trial per variant that changes exactly
one knob from it (threads, precision, torch.compile, channels-last); analysis/scaling.py
turns the results into the table.

Why the baseline runs first and last, and rounds alternate their order: trials run one after
another, and a machine's speed drifts between them by more than a trial's own CI (on the
2-core dev VM, identical cnn trials of one run read 1,667 to 1,997 samples/s, each +-3%).
The closing baseline measures that drift, so the table can mark what it cannot tell apart;
reversing every other round (baseline, A, B | B, A, baseline) gives every variant the same mean
position in the run as the baseline, so a steady drift cancels out of the speed-ups."""

from __future__ import annotations

import os
from collections.abc import Sequence

from rigbench.compile_modes import COMPILE_MODES, CompileMode
from rigbench.errors import UsageError
from rigbench.experiments.plan import check_rounds, check_threads, in_rounds, plan_run
from rigbench.spec import PRECISIONS, EnergyMode, TrialSpec


def default_thread_counts(cores: int | None = None) -> list[int]:
    """1, 2, 4, ... up to the logical cores, and the core count itself (e.g. 6 -> 1, 2, 4, 6)."""
    cores = cores or os.cpu_count() or 1
    counts = [1 << i for i in range(cores.bit_length()) if 1 << i <= cores]
    return counts + ([cores] if counts[-1] != cores else [])


def default_precisions(device: str) -> list[str]:
    """The reduced precisions worth trying on a device kind: tf32 (NVIDIA Ampere+) on CUDA,
    then bf16 and fp16. A device without one gives an `unsupported` trial that says why."""
    return (["tf32"] if device.startswith("cuda") else []) + ["bf16", "fp16"]


def default_compile_modes(device: str, framework: str) -> list[CompileMode]:
    """The compile modes worth trying: torch.compile's default mode (XLA in TensorFlow and Keras)
    and, for torch on CUDA, reduce-overhead's CUDA graphs, which a CPU has no use for."""
    return ["default", "reduce-overhead"] if framework == "torch" and device.startswith("cuda") else ["default"]


def plan_scaling(
    workload: str,
    device: str = "cpu",
    batch_size: int | None = None,
    threads: Sequence[int] | None = None,
    precisions: Sequence[str] | None = None,
    compile: bool | Sequence[CompileMode] = True,
    channels_last: bool = True,
    quick: bool = False,
    framework: str = "torch",
    energy: EnergyMode = "measure",
    rounds: int = 1,
) -> list[TrialSpec]:
    """The trials of `rigbench scaling`: the fp32 eager default (framework's own thread count)
    and one trial per variant that changes exactly one knob from it: each thread count
    (default on the CPU: `default_thread_counts()`; none elsewhere), each precision (default:
    `default_precisions(device)`), each compile mode (True: `default_compile_modes`), channels-last. `rounds` times, in order then
    reversed (module docstring), and the baseline again at the end if the last round did not
    end with it: one round is baseline, variants, baseline."""
    check_rounds(rounds, "--rounds")
    for p in precisions or []:
        if p not in PRECISIONS or p == "fp32":
            raise UsageError(f"--precision takes {', '.join(PRECISIONS[1:])} (fp32 is the baseline), got {p!r}")
    base = plan_run([workload], [device], [batch_size] if batch_size else [], quick=quick,
                    frameworks=framework, energy=energy)[0]
    if threads is None:
        threads = default_thread_counts() if base.device == "cpu" else []
    if precisions is None:
        precisions = default_precisions(base.device)
    variants = [base.model_copy(update={"threads": t}) for t in dict.fromkeys(threads)]
    check_threads(variants)
    variants += [base.model_copy(update={"precision": p}) for p in dict.fromkeys(precisions)]
    modes = default_compile_modes(base.device, base.framework) if compile is True else compile or []
    for mode in modes:
        if mode not in COMPILE_MODES[1:]:  # "off" is the baseline
            raise UsageError(f"--compile-mode takes {', '.join(COMPILE_MODES[1:])}, got {mode!r}")
    variants += [base.model_copy(update={"compile": mode}) for mode in dict.fromkeys(modes)]
    if channels_last:
        variants.append(base.model_copy(update={"channels_last": True}))
    return alternating_rounds(base, variants, rounds)


def alternating_rounds(base: TrialSpec, variants: list[TrialSpec], rounds: int) -> list[TrialSpec]:
    """[base, *variants] in `rounds` alternating rounds (plan.in_rounds), and a closing base
    where the last round ends with a variant (an odd count). Without variants, the base alone."""
    if not variants:
        return [base]
    return in_rounds([base, *variants], rounds, "--rounds") + ([base.model_copy()] if rounds % 2 else [])


def plan_process_scaling(
    workload: str,
    processes: Sequence[int],
    device: str = "cpu",
    batch_size: int | None = None,
    mode: str = "weak",
    quick: bool = False,
    framework: str = "torch",
    energy: EnergyMode = "measure",
) -> list[TrialSpec]:
    """The trials of `rigbench scaling --processes`: one per process count, one process
    (world size 1, no data parallelism) always first as the baseline. Weak scaling gives every
    rank `batch_size` (default: the workload's); strong scaling keeps `batch_size` as the
    global batch, each rank taking batch_size / N (which must divide)."""
    if mode not in ("weak", "strong"):
        raise UsageError(f"scaling mode is weak or strong, not {mode!r}")
    if any(n < 1 for n in processes):
        raise UsageError("--processes takes counts of at least 1, e.g. 1,2,4")
    if all(n == 1 for n in processes):  # one process alone is only the baseline: no speed-up to show
        raise UsageError("--processes needs a count above 1 to set against one process, e.g. --processes 1,2")
    base = plan_run([workload], [device], [batch_size] if batch_size else [], quick=quick,
                    frameworks=framework, energy=energy)[0]
    counts = list(dict.fromkeys([1, *sorted(processes)]))
    if mode == "strong":
        uneven = [n for n in counts if base.batch_size % n]
        if uneven:
            raise UsageError(f"strong scaling splits the global batch {base.batch_size} over the ranks: "
                             f"it does not divide by {', '.join(map(str, uneven))}; pick -b a multiple of them")
    return [base.model_copy(update={"world_size": n,
                                    "batch_size": base.batch_size // n if mode == "strong" else base.batch_size})
            for n in counts]
