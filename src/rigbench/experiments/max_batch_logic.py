"""max-batch's pure logic (`rigbench max-batch`, experiments/max_batch.py has the search and its
module docstring the rules): the next batch to probe, the least-squares memory model, the
recommendation, a crash read as out of memory, and a stored search replayed from its probes.
Plain functions over numbers and stored Results, tested in tests/unit/test_max_batch_logic.py.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from rigbench.errors import BELOW_FRAMEWORK, UsageError
from rigbench.hw.memory import memory_limit_refusal
from rigbench.spec import MaxBatchSearch, Result
from rigbench.textlimits import error_line
from rigbench.units import format_bytes


def check_memory_limit(limit: int | None, devices: Sequence[str]) -> None:
    """--memory-limit caps host memory, so the CPU's probes: refused where no CPU is among
    `devices` (max-batch and recommend alike), and on an OS that cannot cap memory."""
    if limit is not None and (refusal := memory_limit_refusal()):
        raise UsageError(refusal)
    if limit is not None and devices and "cpu" not in devices:
        raise UsageError(f"--memory-limit caps host memory and applies to the CPU only; on {', '.join(devices)} "
                         "the limit is the device's memory")

MIB = 2**20

#: The search's defaults, `rigbench max-batch`'s and the library's alike (here, not in max_batch.py:
#: the command's --help reads them without importing the search's runner and database).
DEFAULT_START = 8
DEFAULT_MAX_BATCH = 65536
#: Bisect until the gap is within 5% of the largest batch that ran, not down to one sample:
#: the boundary itself moves by a few percent between runs (docs/STRATEGY.md: under one cap
#: batch 1776 ran 2 times of 5, 1777 4 of 5), and the recommendation keeps DEFAULT_MARGIN
#: below it anyway. One sample cost about log2(batch) probes more (mlp under a 2 GiB cap on
#: the dev VM, doubling from 1: 32 probes to 36,366 ok / 36,367 oom, where 5% takes 22).
DEFAULT_TOLERANCE = 0.05
DEFAULT_MARGIN = 0.1


#: The most a search multiplies the batch by in one step before an out-of-memory (next_probe).
LEAP = 8


def next_probe(ok: Iterable[int], oom: Iterable[int], start: int, max_batch: int,
               tolerance: float, room: int | None = None, leap: int = 2) -> int | None:
    """The next batch to try given the batches that ran (`ok`) and ran out of memory
    (`oom`), or None when the search is over. Batch 0 stands for "nothing fits" below
    the smallest oom, so an oom at `start` bisects down towards 1.

    Growing, the batch doubles, or multiplies by 4 up to `leap` where `room` (the batch the
    memory line fitted so far puts at the limit: limit_batch) is at least twice the batch it
    would probe: a line off by half still lands under the limit, and a leap that overshoots costs
    at most log2(leap) - 1 bisection probes, where it saves as many growth probes each time
    (cnn from 8 under 1 GiB on the dev VM: 8, 16, 128, 512, 1024, 2048 oom, where doubling took
    nine probes to 2048: benchmarks/max_batch_leap.py)."""
    ok, oom = set(ok), set(oom)
    lo = max(ok, default=0)
    hi = min(oom, default=None)
    if hi is None:  # growing
        if lo == 0:
            return start
        factor = 2
        while room is not None and factor < leap and lo * factor * 2 * 2 <= room:
            factor *= 2
        return None if lo >= max_batch else min(lo * factor, max_batch)
    if hi - lo <= max(1, tolerance * lo):
        return None
    return (lo + hi) // 2


def fit_memory_model(points: Sequence[tuple[int, float]]) -> tuple[float, float] | None:
    """Least-squares line `peak = fixed + per_sample * batch` through (batch, peak) points;
    None with fewer than two distinct batches."""
    if len({b for b, _ in points}) < 2:
        return None
    n = len(points)
    mean_x = sum(b for b, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    sxx = sum((b - mean_x) ** 2 for b, _ in points)
    sxy = sum((b - mean_x) * (y - mean_y) for b, y in points)
    per_sample = sxy / sxx
    return mean_y - per_sample * mean_x, per_sample


def round_batch(batch: int) -> int:
    """Down to a multiple of 8 when 8 or more (e.g. 203 -> 200, 7 -> 7)."""
    return batch // 8 * 8 if batch >= 8 else batch


def recommend(limit_bytes: int | None, model: tuple[float, float] | None, margin: float,
              largest_ok: int | None, tried: Sequence[tuple[int, str]] = (),
              unfit: str | None = None) -> tuple[int | None, str]:
    """The recommended batch and the reason, in words; `tried`: (batch, status) of every
    probe, in order, which the reason names when none ran; `unfit`: why no line was fitted
    though two batch sizes ran (`fitted`)."""
    if largest_ok is None:
        return None, nothing_ran(tried)
    if model is None or limit_bytes is None or model[1] <= 0:
        why = (unfit or "fewer than two batch sizes ran" if model is None else
               "the limit is unknown" if limit_bytes is None else
               "memory did not grow with the batch")
        batch, ran = _largest_that_ran(largest_ok)
        return batch, f"no usable memory model ({why}), so no safety margin could be worked out: {ran}"
    fixed, per_sample = model
    budget = limit_bytes * (1 - margin)
    fits = math.floor((budget - fixed) / per_sample)
    if fits < 1:  # TensorFlow's mlp under 1.5 GiB: ~0.9 GiB imported, batches to 5,974 ran
        batch, ran = _largest_that_ran(largest_ok)
        return batch, (f"the model's fixed part ({format_bytes(fixed)}) leaves no room for a batch within "
                       f"{1 - margin:.0%} of the limit, so no margin could be kept: {ran}, with nothing to "
                       "spare; raise --memory-limit for a margin")
    text = (f"the model puts batch {fits} at {1 - margin:.0%} of the limit "
            f"({format_bytes(budget)}), leaving {margin:.0%} free")
    batch = fits
    if fits > largest_ok:
        batch = largest_ok
        text += f"; capped at the largest batch that ran ({largest_ok})"
    if round_batch(batch) != batch:
        text += f"; rounded down from {batch} to a multiple of 8"
    return round_batch(batch), text


def _largest_that_ran(largest_ok: int) -> tuple[int, str]:
    """The batch recommended where no margin can be worked out, and its words."""
    batch = round_batch(largest_ok)
    rounded = ", rounded down to a multiple of 8" if batch != largest_ok else ""
    return batch, f"the largest batch that ran ({largest_ok}){rounded}"


def nothing_ran(tried: Sequence[tuple[int, str]]) -> str:
    """Why there is no batch to recommend, true to the probes that were made."""
    if not tried:
        return "no probe ran"
    listed = ", ".join(f"batch {b} {status}" for b, status in tried)
    text = f"{len(tried)} probe{'s' if len(tried) > 1 else ''} ran and none succeeded ({listed})"
    if all(status == "oom" for _, status in tried):
        smallest = min(b for b, _ in tried)
        text += f": not even batch {smallest} fits under the limit"
        if smallest == 1:  # JAX under 1 GiB: its compiler and threads, not the batch, ran out
            text += ", so the framework's own needs (its runtime, compiler and threads) are over it: raise --memory-limit"
    return text


def crash_over_limit(batch: int, model: tuple[float, float] | None, limit_bytes: int | None) -> float | None:
    """The bytes the memory model puts a crashed probe's `batch` at, when that counts it as out
    of memory: the model exists, grows with the batch and puts it over the limit. None when the
    crash says nothing about memory."""
    if model is None or limit_bytes is None or model[1] <= 0:
        return None
    need = model[0] + model[1] * batch
    return need if need > limit_bytes else None


def replay(probes: Sequence[Result], limit_bytes: int | None,
           search: MaxBatchSearch | None = None) -> tuple[list[int], list[int], str | None]:
    """A stored search's probes, in the order they ran, read as the search read them: the batches
    that ran, those out of memory (crashes counted as oom, `counted_crash`, included), and why it
    ended before its own stopping rule, in words (None when it ended by it). A probe neither ok
    nor oom (nor a counted crash) stopped it. `search`, else the one stored with the probes, is
    what it was asked: its rule (next_probe) then says whether a batch was still to be probed
    (Ctrl-C, whose probe in flight is not stored; a killed process). Probes stored without one
    (before 2026-11-27) prove less: an out-of-memory with no batch tried between it and the
    largest that ran, where their gap is at least that batch (no --tolerance, which is below 1,
    ends a search there), means it was stopped before bisecting; a stop mid-bisection reads as a
    coarse --tolerance (MemoryLimit.text says so). A search that met no out-of-memory caps nothing."""
    search = search if search is not None else stored_search(probes)
    ok: list[int] = []
    oom: list[int] = []
    for i, r in enumerate(probes):
        batch = r.spec.batch_size
        if r.status == "ok":
            ok.append(batch)
        elif r.status == "oom":
            oom.append(batch)
            if BELOW_FRAMEWORK in (r.error or ""):
                return ok, oom, None  # no batch can fit: the search stops there
        elif r.spec.device == "cpu" and counted_crash(r, probes[:i], limit_bytes) is not None:
            oom.append(batch)
        else:
            return ok, oom, f"it stopped at batch {batch}, which ended {r.status}"
    lo, hi = max(ok, default=0), min(oom, default=None)
    if search is not None:
        batch_left = next_probe(ok, oom, search.start, search.max_batch, search.tolerance,
                                limit_batch(probes, limit_bytes), search.leap)
        if batch_left is None:
            return ok, oom, None
        if hi is None:
            return ok, oom, f"it was stopped before probing batch {batch_left} (its --max was {search.max_batch})"
        return ok, oom, (f"it was stopped with the batches {f'between {lo} and {hi}' if lo else f'below {hi}'} "
                         f"untried (its --tolerance {search.tolerance:g} would have probed {batch_left} next)")
    if hi is not None and hi - lo > 1 and hi - lo >= lo:
        return ok, oom, f"it stopped before trying the batches {f'between {lo} and {hi}' if lo else f'below {hi}'}"
    return ok, oom, None


def stored_search(probes: Sequence[Result]) -> MaxBatchSearch | None:
    """What the search of these probes was asked, as stored with them; None for old probes."""
    return next((r.spec.search for r in probes if r.spec.search is not None), None)


def memory_metric(device: str, probes: Sequence[Result]) -> str:
    """The Metrics field that the model is fitted to: on the CPU the capped peak (the resident
    peak for probes stored before it was measured); on a GPU
    NVML's peak when the probes have it (NVIDIA), else the framework allocator's peak."""
    if device == "cpu":  # what the cap counts, where the probes measured it (module docstring)
        capped = any(r.metrics.capped_peak_mib is not None for r in probes if r.status == "ok")
        return "capped_peak_mib" if capped else "rss_peak_mib"
    if any(r.metrics.gpu_mem_peak_mib is not None for r in probes if r.status == "ok"):
        return "gpu_mem_peak_mib"
    return "allocator_peak_mib"


#: How far a larger batch's peak may fall below a smaller batch's on a GPU before no line is
#: fitted: NVML and the allocators count to the MiB, so 1% of a peak is far above their noise.
FALL_TOLERANCE = 0.01


def falling_peak(points: Sequence[tuple[int, float]]) -> str | None:
    """Where a larger batch's peak is lower than a smaller one's by over FALL_TOLERANCE, the
    pair in words; else None. torch's cuDNN convolutions size their workspace to the memory
    free (Conv_v8.cpp: the largest plan whose workspace fits), so on an H200 catsdogs peaked
    at 133,794 MiB at batch 1024 and 130,532 at 2048: the line through such peaks read 128.5
    GiB fixed, which the model never holds (docs/results/gpu-h200-lease4.md)."""
    ordered = sorted(points)
    for i, (small, small_peak) in enumerate(ordered):
        for large, large_peak in ordered[i + 1:]:
            if large > small and large_peak < small_peak * (1 - FALL_TOLERANCE):
                return (f"the peak fell as the batch grew, from {small_peak / MIB:,.0f} MiB at batch {small} to "
                        f"{large_peak / MIB:,.0f} MiB at {large}: the framework sized something to the memory free, "
                        "as torch's cuDNN convolutions size their workspace, so a peak says what was free, not "
                        "what a batch needs")
    return None


def fitted(device: str, probes: Sequence[Result]) -> tuple[str, tuple[float, float] | None, str | None]:
    """The memory metric for `probes`, the line fitted to their ok probes' figures of it, and
    why there is no line though two batch sizes ran: on a GPU, a peak that falls as the
    batch grows (`falling_peak`); else None."""
    metric = memory_metric(device, probes)
    points = [(r.spec.batch_size, getattr(r.metrics, metric) * MIB) for r in probes
              if r.status == "ok" and getattr(r.metrics, metric) is not None]
    unfit = falling_peak(points) if device != "cpu" else None
    return metric, None if unfit else fit_memory_model(points), unfit


def limit_batch(probes: Sequence[Result], limit_bytes: int | None) -> int | None:
    """The batch the memory line through the ok `probes` (fitted) puts at `limit_bytes`; None
    without a limit or a line, or where the line does not grow with the batch."""
    if limit_bytes is None or not probes:
        return None
    line = fitted(probes[0].spec.device, probes)[1]
    if line is None or line[1] <= 0:
        return None
    return max(0, math.floor((limit_bytes - line[0]) / line[1]))


def counted_crash(result: Result, probes: Sequence[Result], limit: int | None) -> tuple[int, str, float] | None:
    """(batch, headline, the model's bytes) when the CPU probe `result` crashed over the limit
    by the line fitted to `probes` (crash_over_limit); None otherwise."""
    if result.status != "crash":
        return None
    need = crash_over_limit(result.spec.batch_size, fitted("cpu", probes)[1], limit)
    return None if need is None else (result.spec.batch_size, error_line(result.error, 160), need)
