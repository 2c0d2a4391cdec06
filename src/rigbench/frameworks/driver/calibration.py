"""`rigbench calibrate`, written once for every framework: the measured ceilings of one device,
driven through the small `CalibrationKernels` a framework supplies (each adapter's
`calibration_kernels(device)`; frameworks/<name>/calibrate.py). The rules (sizes, stopping,
buffers, repetitions, medians, rows) live here and in analysis/matmul_peak.py only, so every
framework measures a device the same way; the kernels know only how to allocate, run and time.

- Peak matmul FLOP/s per precision: square n x n matmuls up a ladder of sizes, 2*n^3 FLOPs
  each (analysis/matmul_peak.py: the sizes, the stopping rule and the peak rule). Per size:
  one untimed first call (kernel choice, compilation, allocations), one timed call (over the
  time budget: `TooSlow`, the climb stops), then one untimed warm-up repeat and `repeats`
  timed repeats of back-to-back matmuls lasting at least `repeat_s` each; the size's rate is
  the median repeat's. The reported peak is the median at the largest size that fits, never
  the best of the sizes.
- Memory bandwidth: a large on-device copy (or scaling), bytes read + bytes written (2 x the
  buffer) over the median time; the buffer is COPY_BYTES for --quick and the full run alike.
- Host<->device copy bandwidth (accelerators only), pageable and pinned host memory, both
  directions: buffer bytes over the median copy time; `unsupported` with the framework's
  reason where it has no pinned host buffers, `n/a` on a CPU (host memory needs no copy).

Device work is timed by the kernels with the device's own synchronisation (CUDA events on
torch's CUDA, a host clock stopped after a device sync, JAX's block_until_ready or
TensorFlow's host copy elsewhere). docs/METHODOLOGY.md describes the method.
"""

from __future__ import annotations

import itertools
import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from rigbench.analysis import matmul_peak
from rigbench.analysis.matmul_peak import RULE, MatmulPlan, TooSlow, climb, copy_repeats, peak_size
from rigbench.frameworks.base import Calibration, CalibrationKernels, CalibrationRow

Progress = Callable[[str], None]
#: The two transfer directions: host to device, device to host.
DIRECTIONS = ("h2d", "d2h")
#: Untimed calls before each copy measurement (first touch, compilation, clocks ramping up).
COPY_WARMUPS = 2
#: A timed call is never taken as shorter than this (a coarse clock could read 0).
MIN_SECONDS = 1e-7


def _first_line(exc: BaseException) -> str:
    text = str(exc)
    return text.splitlines()[0] if text.strip() else type(exc).__name__


def host_timed(fn: Callable[[], object], iterations: int, wait: Callable[[object], object]) -> float:
    """Seconds of `iterations` back-to-back calls of `fn` by the host clock, stopped once
    `wait` has waited for the last call's result: the device clock of a framework that has no
    device timer (JAX's block_until_ready, TensorFlow's host copy of one element)."""
    t0 = time.perf_counter()
    out = None
    for _ in range(iterations):
        out = fn()
    wait(out)
    return time.perf_counter() - t0


def pageable_copy(nbytes: int, direction: str, to_device: Callable[[np.ndarray], object],
                  fresh: Callable[[np.ndarray, int], object],
                  to_host: Callable[[object], object]) -> Callable[[], float]:
    """One copy of a pageable float32 host buffer of `nbytes`, timed by the host clock, for a
    framework without pinned buffers or device timers: "h2d" times `to_device(host)`, which
    returns once the copy is done; "d2h" first makes a fresh device array from the host
    buffer plus a new value each call (untimed; no cached host copy can be reused) and times
    `to_host` of it."""
    host = np.ones(nbytes // 4, np.float32)
    values = itertools.count()

    def h2d() -> float:
        t0 = time.perf_counter()
        to_device(host)
        return time.perf_counter() - t0

    def d2h() -> float:
        on_device = fresh(host, next(values))
        t0 = time.perf_counter()
        to_host(on_device)
        return time.perf_counter() - t0

    return h2d if direction == "h2d" else d2h


def _failure(kernels: CalibrationKernels, exc: BaseException) -> str:
    """The status of a measurement that raised: out of memory is a failure of this run, any
    other kernel error means the device or framework cannot do it."""
    return "failed" if kernels.is_oom(exc) else "unsupported"


def matmul_at_size(kernels: CalibrationKernels, precision: str, n: int, plan: MatmulPlan,
                   limit_s: float | None = None) -> dict[str, Any]:
    """The median sustained rate of n x n matmuls: {"n", "iterations", "single_s",
    "seconds_per_matmul" (one per repeat), "flops_per_s"}; TooSlow if one matmul takes over
    `limit_s` (None: no limit, the first size)."""
    fn = kernels.matmul(precision, n)
    kernels.timed(fn, 1)  # first call: kernel choice, compilation, allocations
    single = kernels.timed(fn, 1)
    if limit_s is not None and single > limit_s:
        raise TooSlow(n, single, limit_s)
    iterations = max(1, math.ceil(plan.repeat_s / max(single, MIN_SECONDS)))
    kernels.timed(fn, iterations)  # warm-up repeat (clocks ramp up; not kept)
    per_matmul = [kernels.timed(fn, iterations) / iterations for _ in range(plan.repeats)]
    return {"n": n, "iterations": iterations, "single_s": single, "seconds_per_matmul": per_matmul,
            "flops_per_s": 2 * n**3 / statistics.median(per_matmul)}


def matmul_row(kernels: CalibrationKernels, precision: str, plan: MatmulPlan,
               on_progress: Progress | None = None) -> dict[str, Any]:
    """Peak matmul FLOP/s of `precision`: a measurement row whose value is the median at the
    largest of the plan's sizes that fits; detail["sizes"] keeps the size curve."""
    row: dict[str, Any] = {"kind": "matmul", "precision": precision, "unit": "FLOP/s", "value": None}
    problem = kernels.precision_problem(precision)
    if problem:
        return {**row, "status": "unsupported", "detail": {"reason": problem}}

    def measure(n: int, limit_s: float | None) -> dict[str, Any]:
        found = matmul_at_size(kernels, precision, n, plan, limit_s)
        if on_progress:
            on_progress(f"matmul {precision} n={n}: {found['flops_per_s'] / 1e12:.3g} TFLOP/s")
        return found

    try:
        per_size, stopped = climb(plan.sizes, measure, plan.max_single_s, errors=kernels.errors)
    except kernels.errors as exc:  # not even the first size ran: out of memory, or no kernel
        return {**row, "status": _failure(kernels, exc),
                "detail": {"reason": f"{precision} matmul on {kernels.device_type}: {_first_line(exc)}"}}
    peak = peak_size(per_size)
    detail: dict[str, Any] = {"peak_n": peak["n"], "sizes": per_size, "repeats": plan.repeats,
                              "repeat_s": plan.repeat_s, "max_single_s": plan.max_single_s, "rule": RULE,
                              "dtype": kernels.dtype_name(precision)}
    if stopped:
        detail["stopped"] = stopped
    return {**row, "status": "ok", "value": peak["flops_per_s"], "detail": detail}


def bandwidth_row(kernels: CalibrationKernels, nbytes: int, repeats: int) -> dict[str, Any]:
    """On-device memory bandwidth: (bytes read + bytes written) / the median of `repeats` timed
    copies of an `nbytes` buffer, after COPY_WARMUPS untimed ones."""
    row: dict[str, Any] = {"kind": "memory_bandwidth", "precision": None, "unit": "B/s", "value": None}
    nbytes -= nbytes % 4
    try:
        fn = kernels.copy(nbytes)
        kernels.timed(fn, COPY_WARMUPS)
        times = [kernels.timed(fn, 1) for _ in range(repeats)]
    except kernels.errors as exc:
        return {**row, "status": _failure(kernels, exc), "detail": {"reason": _first_line(exc)}}
    moved = 2 * nbytes
    return {**row, "status": "ok", "value": moved / max(statistics.median(times), MIN_SECONDS),
            "detail": {"buffer_bytes": nbytes, "bytes_per_copy": moved, "counted": "bytes read + bytes written",
                       "seconds": times, "repeats": repeats, "rule": "median of repeats"}}


def transfer_row(kernels: CalibrationKernels, nbytes: int, direction: str, pinned: bool,
                 repeats: int) -> dict[str, Any]:
    """Host->device ("h2d") or device->host ("d2h") copy bandwidth of pageable or pinned host
    memory: `nbytes` over the median of `repeats` timed copies, after COPY_WARMUPS untimed ones."""
    row: dict[str, Any] = {"kind": f"{direction}_{'pinned' if pinned else 'pageable'}", "precision": None,
                           "unit": "B/s", "value": None}
    if not kernels.accelerator:
        return {**row, "status": "n/a", "detail": {"reason": "host memory: the CPU needs no copy"}}
    nbytes -= nbytes % 4
    try:
        copy_once = kernels.transfer(nbytes, direction, pinned)
        if isinstance(copy_once, str):
            return {**row, "status": "unsupported", "detail": {"reason": copy_once}}
        for _ in range(COPY_WARMUPS):
            copy_once()
        times = [copy_once() for _ in range(repeats)]
    except kernels.errors as exc:
        return {**row, "status": _failure(kernels, exc), "detail": {"reason": _first_line(exc)}}
    return {**row, "status": "ok", "value": nbytes / max(statistics.median(times), MIN_SECONDS),
            "detail": {"buffer_bytes": nbytes, "counted": "bytes copied (one direction)", "seconds": times,
                       "repeats": repeats, "rule": "median of repeats", "pinned": pinned}}


def calibrate(kernels: CalibrationKernels, device: str, precisions: Sequence[str], quick: bool = False,
              on_progress: Progress | None = None) -> Calibration:
    """Every ceiling of `device` (base.Calibration): {"device", "device_name", "device_type",
    "threads", "quick", "software", "measurements": [{"kind", "precision", "status", "value",
    "unit", "detail"}]}.

    kind: matmul (per precision, FLOP/s), memory_bandwidth, h2d_pageable, h2d_pinned,
    d2h_pageable, d2h_pinned (B/s); status: ok, unsupported, n/a (host copies on a CPU),
    failed. The plans and buffers are read from analysis/matmul_peak.py at each call.
    """
    say = on_progress or (lambda text: None)
    kind = "accelerator" if kernels.accelerator else "cpu"
    plan = matmul_peak.matmul_plan(kind, quick)
    repeats = copy_repeats(quick)
    copy_bytes = kernels.copy_budget(matmul_peak.COPY_BYTES[kind])
    rows = [matmul_row(kernels, p, plan, on_progress=say) for p in precisions]
    rows.append(bandwidth_row(kernels, copy_bytes, repeats))
    if rows[-1]["status"] == "ok":
        say(f"memory bandwidth: {rows[-1]['value'] / 1e9:.3g} GB/s")
    for direction in DIRECTIONS:
        for pinned in (False, True):
            rows.append(transfer_row(kernels, copy_bytes, direction, pinned, repeats))
            if rows[-1]["status"] == "ok":
                say(f"{rows[-1]['kind']}: {rows[-1]['value'] / 1e9:.3g} GB/s")
    info = kernels.software()
    return {"device": device, "device_name": kernels.device_name, "device_type": kernels.device_type,
            "threads": info.get("num_threads"), "quick": quick, "software": info,
            "measurements": cast("list[CalibrationRow]", rows)}
