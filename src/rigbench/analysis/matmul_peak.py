"""The calibration's peak-matmul rule, framework-free: which sizes `rigbench calibrate` tries,
when it stops, and which measured size gives the peak. Every framework adapter measures with
these, so `--quick` and the full run, and torch and the next adapter, follow one rule.

The rule: go up a ladder of square sizes n (2*n^3 FLOPs per matmul); a size is measured
(median of `repeats` timed repeats) while it fits: its buffers allocate, and one matmul of it
takes at most `max_single_s`. The peak is the median at the LARGEST size measured, never the
best of the sizes: small sizes are dominated by per-call costs (on a busy CPU a thread
hand-off can cost more than the matmul) or sit in cache, and the maximum over several noisy
medians is biased upward. The smaller sizes stay in the stored detail as the size curve.

Whether a size fits in time is found in two steps. Predicted from the last size's median by
the n^3 law, it is not even tried past PROBE_SLACK x the budget (a CPU doing bf16 without
hardware support: minutes). Otherwise its first timed call decides (`TooSlow`): the n^3 law
over-predicts when the last size was dominated by per-call stalls, which would stop the
climb at a small size and read low.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

RULE = "median of repeats at the largest size that fits (memory and max_single_s)"
#: A size predicted to take up to this many times the budget is still timed once.
PROBE_SLACK = 4.0


@dataclass(frozen=True)
class MatmulPlan:
    """How one calibration measures the matmul peak of one kind of device."""

    sizes: tuple[int, ...]  # smallest first; the ladder stops at the first that does not fit
    repeats: int  # timed repeats per size (after one untimed warm-up repeat)
    repeat_s: float  # each repeat runs back-to-back matmuls for at least this long
    max_single_s: float  # a size is not tried when one matmul of it would take longer


#: The time budget, the same for --quick and the full run so that both stop at the same
#: size: a size is not tried when one matmul of it would take longer than this.
MAX_SINGLE_S = 1.0
#: Full: the whole size curve, 5 repeats of 0.2 s. A small CPU reaches its plateau by
#: n=1024-2048 (4096 is then over the time budget), a many-core one needs 4096 to fill its
#: cores, GPUs 4096-8192. A CPU without bf16/fp16 hardware runs those 100x slower: the time
#: budget stops its ladder early.
FULL = {"cpu": MatmulPlan((256, 512, 1024, 2048, 4096), 5, 0.2, MAX_SINGLE_S),
        "accelerator": MatmulPlan((1024, 2048, 4096, 8192), 5, 0.2, MAX_SINGLE_S)}
#: Quick: the same rule, budget and largest sizes; fewer sizes below them, fewer and shorter
#: repeats. Its first size (512 on a CPU) is cheap even for a slow precision and predicts the
#: next. (Before, --quick stopped at n=512 on a CPU: on a busy 2-core machine a small matmul
#: waits on a thread hand-off longer than it computes, and it read 6x low.)
QUICK = {"cpu": MatmulPlan((512, 1024, 2048, 4096), 3, 0.05, MAX_SINGLE_S),
         "accelerator": MatmulPlan((2048, 4096, 8192), 3, 0.05, MAX_SINGLE_S)}


#: Bytes of each copy buffer (memory bandwidth, host<->device copies): far beyond any
#: last-level cache, so the copy streams memory. The same for --quick and the full run, which
#: differ only in repeats: a smaller quick buffer read 23% low on a busy 2-core VM, where a
#: copy split over both cores waits a scheduler tick (about 5 ms) for its second half, and a
#: fixed wait weighs more on a shorter copy (benchmarks/calibrate_quick.py).
COPY_BYTES = {"cpu": 256 * 2**20, "accelerator": 1024 * 2**20}


def copy_repeats(quick: bool) -> int:
    """Timed repeats of each copy measurement (the median is kept)."""
    return 5 if quick else 10


def matmul_plan(kind: str, quick: bool) -> MatmulPlan:
    """The plan for a device kind ("cpu" or "accelerator")."""
    return (QUICK if quick else FULL)[kind]


class TooSlow(Exception):
    """Raised by a size's measurement when its first timed matmul took over the budget."""

    def __init__(self, n: int, seconds: float, max_single_s: float) -> None:
        super().__init__(f"n={n} skipped: one matmul took {seconds:.2g} s (limit {max_single_s:g} s)")


def too_slow(last: Mapping[str, Any], n: int, max_single_s: float) -> str | None:
    """Why size `n` is not even tried after the measured entry `last` ({"n", "flops_per_s"}),
    or None: one n x n matmul (2*n^3 FLOPs) at `last`'s median rate would take longer than
    PROBE_SLACK x `max_single_s`."""
    seconds = 2 * n**3 / last["flops_per_s"]
    if seconds <= PROBE_SLACK * max_single_s:
        return None
    return f"n={n} skipped: one matmul would take about {seconds:.2g} s (limit {max_single_s:g} s)"


def peak_size(per_size: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The entry the peak is taken from: the largest n measured (each entry has "n" and
    "flops_per_s", the median of its repeats). Not the fastest entry: see the module doc."""
    if not per_size:
        raise ValueError("no size was measured")
    return max(per_size, key=lambda s: s["n"])


def climb(sizes: Sequence[int], measure: Callable[[int, float | None], Mapping[str, Any]], max_single_s: float,
          errors: tuple[type[Exception], ...] = (RuntimeError,)) -> tuple[list[Mapping[str, Any]], str | None]:
    """Measure up the ladder: (the entries measured, smallest first; why it stopped early or
    None). `measure(n, limit_s)` returns one size's entry ({"n", "flops_per_s", ...}), or
    raises TooSlow when its first timed matmul takes over `limit_s` (None: no limit, for the
    first size, which is always measured). A size over the time budget, or one whose measure
    raises one of `errors` (out of memory), ends the climb; an error at the first size is
    raised: nothing fits, the caller says why."""
    per_size: list[Mapping[str, Any]] = []
    for n in sizes:
        if per_size and (why := too_slow(per_size[-1], n, max_single_s)):
            return per_size, why
        try:
            per_size.append(measure(n, max_single_s if per_size else None))
        except TooSlow as exc:
            return per_size, str(exc)
        except errors as exc:
            if not per_size:
                raise
            return per_size, f"n={n}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
    return per_size, None
