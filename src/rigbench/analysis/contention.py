"""A busy machine: other processes' CPU use while a trial was timed, and the `busy` flag.

A trial's speed is this machine's speed only when the trial had the machine to itself. On the
dev VM (2 cores, docs/METHODOLOGY.md "A busy machine") `run gpt --quick` in torch at its own 2
threads gave 9.2 samples/s beside the test suite against 791 quiet (x86), with a step-time CV
of 2.9%: torch's OpenMP threads wait for each other at every barrier, and one of them is always
waiting for a core another process holds. A steady slowdown does not show in the coefficient of
variation, so the `noisy` flag cannot catch it. Beside one spinning process the 2-thread trial
lost x69 and a 1-thread one 5% (`benchmarks/busy_machine.py`).

The CPU tracker samples the whole machine's CPU use and the trial's process tree over the same
intervals (trackers/sampler.py); `others_cpu_pct_mean` is the mean over the timed window of
their difference: the CPU that other processes (and steal time on a VM) took, on the same scale
(100 = every logical core). A trial is `busy` when that is at least BUSY_OTHERS_PCT: on the dev
VM it was 0-5% in every quiet trial (the tracker's own sampling included) and 47-61% in every
trial beside the test suite or one spinning process.
"""

from __future__ import annotations

from collections.abc import Sequence

from rigbench.metrics import Metrics
from rigbench.spec import Result

#: Other processes' mean CPU use over the timed window, in % of the whole machine (100 = every
#: logical core), from which a trial is flagged `busy`.
BUSY_OTHERS_PCT = 10.0


def is_busy(m: Metrics) -> bool:
    """Other processes used at least BUSY_OTHERS_PCT of the machine's CPU while the trial was
    timed. False when not measured (a result stored before the figure existed, no samples)."""
    return m.others_cpu_pct_mean is not None and m.others_cpu_pct_mean >= BUSY_OTHERS_PCT


#: What to do about busy trials, where a new command measures afresh (`run`, `train`, ...).
RUN_AGAIN = "Run again when the machine is quiet."


def busy_note(results: Sequence[Result], then: str = RUN_AGAIN) -> str | None:
    """One sentence naming the busy trials among `results` and how much of the CPU others took,
    for the foot of a table, ending with `then` (what to do about it); None when none was busy."""
    busy = [r for r in results if is_busy(r.metrics)]
    if not busy:
        return None
    share = share_span([r.metrics.others_cpu_pct_mean or 0.0 for r in busy])
    which = _which(busy, results)
    # torch is the framework measured losing x86 (module docstring); the others were not measured
    who = "torch" if all(r.spec.framework == "torch" for r in busy) else "a framework"
    return (f"busy: other processes used {share} of this machine's CPU while {which} "
            f"{'was' if len(busy) == 1 else 'were'} timed: the machine's speed under that load, not its "
            f"own ({who} at its own thread count can lose most of its speed to it). {then}")


def shared_gpu_note(results: Sequence[Result]) -> str | None:
    """One sentence naming the trials whose GPU other processes computed on while they were
    timed, for BUSY_OTHERS_PCT or more of the window (`gpu_others_sm_pct_mean`, NVML's
    per-process utilisation); else the trials whose GPU another process held a context on
    (`gpu_other_processes_max`, NVML's process list: who holds memory, not who computes);
    None when neither. Not the `busy` flag, which reads the CPU."""
    computed = [r for r in results if (r.metrics.gpu_others_sm_pct_mean or 0) >= BUSY_OTHERS_PCT]
    if computed:
        shares = [r.metrics.gpu_others_sm_pct_mean or 0.0 for r in computed]
        which = _which(computed, results)
        return (f"busy GPU: other processes' kernels ran {share_span(shares)} of the time on the GPU of {which} while "
                f"{'it was' if len(computed) == 1 else 'they were'} timed: those speeds are the GPU's share under "
                "that load, not all of it. Run again when the GPU is quiet (`nvidia-smi` lists who).")
    shared = [r for r in results if (r.metrics.gpu_other_processes_max or 0) >= 1]
    if not shared:
        return None
    most = max(int(r.metrics.gpu_other_processes_max or 0) for r in shared)
    which = _which(shared, results)
    idle = all(r.metrics.gpu_others_sm_pct_mean is not None for r in shared)
    then = (f"their kernels ran under {BUSY_OTHERS_PCT:.0f}% of the time, so the speeds stand" if idle else
            "if one computed, those speeds are the GPU's share, not all of it (`nvidia-smi` lists who)")
    return (f"shared GPU: up to {most} other process{'es' if most > 1 else ''} held a context on the GPU of "
            f"{which} while {'it was' if len(shared) == 1 else 'they were'} timed; {then}.")


def share_span(shares: Sequence[float]) -> str:
    """`48%`, or `47-61%` where the shares differ (of the CPU, or of the GPU's time)."""
    low, high = min(shares), max(shares)
    return f"{low:.0f}%" if round(low) == round(high) else f"{low:.0f}-{high:.0f}%"


#: Trial ids a note lists whole; past it, the first five and how many more.
IDS_SHOWN = 6


def _which(subset: Sequence[Result], results: Sequence[Result]) -> str:
    """`trial 3`, `trials 3, 5`, or `all 8 trials` where every trial of the table is meant and
    its ids would be cut: a first run on a shared machine read "trials 1, 2, 3, 4, 5 and 3 more"
    for all eight, which sent the reader looking for the three that were not."""
    if len(subset) == 1:
        return f"trial {_ids(subset)}"
    every = len(subset) == len(results) and len(subset) > IDS_SHOWN
    return f"all {len(subset)} trials" if every else f"trials {_ids(subset)}"


def _ids(results: Sequence[Result]) -> str:
    """`3, 5, 7` or, past six, the first five and how many more; a trial without an id (kept
    in the spool, not stored) by its label, e.g. `mlp torch cpu b64 fp32 t2`."""
    ids = [str(r.id) if r.id is not None else r.spec.label() for r in results]
    return ", ".join(ids) if len(ids) <= IDS_SHOWN else ", ".join(ids[:5]) + f" and {len(ids) - 5} more"


def busy_calibration_note(calibration: dict) -> str | None:
    """The line under a device's calibration when other processes took BUSY_OTHERS_PCT or more
    of the CPU while its child measured (`others_cpu_pct_mean`, experiments/calibrate.py): its
    peaks are then too low, and every MFU against them too high. None otherwise."""
    others = calibration.get("others_cpu_pct_mean")
    if others is None or others < BUSY_OTHERS_PCT:
        return None
    return (f"busy: other processes used {others:.0f}% of this machine's CPU while {calibration.get('device')} "
            "was calibrated, so its peaks are the machine's under that load: too low, and MFU against them "
            "too high. Calibrate again when the machine is quiet (the newest calibration is the one used).")
