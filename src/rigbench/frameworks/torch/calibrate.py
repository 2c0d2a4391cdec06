"""Measured ceilings of one device (`rigbench calibrate`), in the child process.

- Peak matrix-multiply FLOP/s per precision: square `torch.mm(a, b, out=c)` up a ladder of
  sizes, 2*n^3 FLOPs each (analysis/matmul_peak.py: the sizes, the stopping rule and the peak rule).
  Per size: one untimed warm-up repeat, then `repeats` timed repeats of back-to-back matmuls
  lasting at least `repeat_s` each; the size's rate is the median repeat's. The reported
  peak is the median at the largest size that fits, never the best of the sizes.
- Memory bandwidth: a large on-device copy `dst.copy_(src)`; bytes read + bytes written
  (2 x the buffer) over the median copy time.
- Host<->device copy bandwidth (accelerators only), pageable and pinned host memory, both
  directions: buffer bytes over the median copy time.

Device work is timed with the device's own synchronisation: CUDA events on CUDA/ROCm,
synchronize-then-host-clock elsewhere. docs/METHODOLOGY.md describes the method.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any, cast

import torch

from rigbench.analysis.matmul_peak import (
    COPY_BYTES,
    MAX_SINGLE_S,
    RULE,
    TooSlow,
    climb,
    copy_repeats,
    matmul_plan,
    peak_size,
)
from rigbench.frameworks.base import Calibration, CalibrationRow
from rigbench.frameworks.torch.trainer import device_name, resolve_device, synchronize

_DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


Progress = Callable[[str], None]


def _kind(device: torch.device) -> str:
    return "cpu" if device.type == "cpu" else "accelerator"


def timed(device: torch.device, fn: Callable[[], Any], iterations: int) -> float:
    """Seconds taken by `iterations` back-to-back calls of `fn`, by the device's own clock."""
    if device.type == "cuda":  # CUDA and ROCm: events on the stream, no host-side jitter
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iterations):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1000.0  # ms -> s
    synchronize(device)
    t0 = time.perf_counter()
    for _ in range(iterations):
        fn()
    synchronize(device)
    return time.perf_counter() - t0


def _precision_problem(device: torch.device, precision: str) -> str | None:
    """Why the device cannot do `precision` matmuls, or None. bf16/fp16 elsewhere are tried
    and reported `unsupported` if the kernel refuses."""
    is_nvidia = device.type == "cuda" and not torch.version.hip
    if precision == "tf32":
        if not is_nvidia:
            return f"tf32 is an NVIDIA GPU format (Ampere and later); not on {device.type}"
        major, minor = torch.cuda.get_device_capability(device)
        if major < 8:
            return f"tf32 needs compute capability 8.0 or later; {device_name(device)} is {major}.{minor}"
    if precision == "bf16" and is_nvidia and not torch.cuda.is_bf16_supported(including_emulation=False):
        return f"{device_name(device)} has no native bf16 (compute capability below 8.0)"
    return None


def _set_matmul_precision(device: torch.device, precision: str) -> None:
    """fp32 means strict fp32; tf32 allows TensorFloat-32 (NVIDIA only)."""
    if device.type == "cuda" and not torch.version.hip:
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"


def matmul_at_size(device: torch.device, precision: str, n: int, repeats: int, repeat_s: float,
                   limit_s: float | None = None) -> dict[str, Any]:
    """The median sustained rate of n x n matmuls: {"n", "iterations", "seconds_per_matmul"
    (one per repeat), "single_s", "flops_per_s"}; TooSlow if one matmul takes over `limit_s`."""
    dtype = _DTYPES[precision]
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    c = torch.empty(n, n, device=device, dtype=dtype)

    def fn() -> None:
        torch.mm(a, b, out=c)

    timed(device, fn, 1)  # first call: kernel choice, allocations
    single = timed(device, fn, 1)
    if limit_s is not None and single > limit_s:
        raise TooSlow(n, single, limit_s)
    iterations = max(1, math.ceil(repeat_s / max(single, 1e-7)))
    timed(device, fn, iterations)  # warm-up repeat (clocks ramp up; not kept)
    per_matmul = [timed(device, fn, iterations) / iterations for _ in range(repeats)]
    return {"n": n, "iterations": iterations, "single_s": single, "seconds_per_matmul": per_matmul,
            "flops_per_s": 2 * n**3 / statistics.median(per_matmul)}


def measure_matmul(device: str | torch.device, precision: str, sizes: Sequence[int],
                   repeats: int = 5, repeat_s: float = 0.2, max_single_s: float = MAX_SINGLE_S,
                   on_progress: Progress | None = None) -> dict[str, Any]:
    """Peak matmul FLOP/s of `precision` on `device`: a measurement row (see `calibrate`) whose
    value is the median at the largest of `sizes` that fits; detail["sizes"] keeps the curve."""
    from rigbench.frameworks.torch.oom import is_oom

    dev = resolve_device(device) if isinstance(device, str) else device
    row: dict[str, Any] = {"kind": "matmul", "precision": precision, "unit": "FLOP/s", "value": None}
    problem = _precision_problem(dev, precision)
    if problem:
        return {**row, "status": "unsupported", "detail": {"reason": problem}}
    _set_matmul_precision(dev, precision)

    def measure(n: int, limit_s: float | None) -> dict[str, Any]:
        found = matmul_at_size(dev, precision, n, repeats, repeat_s, limit_s)
        if on_progress:
            on_progress(f"matmul {precision} n={n}: {found['flops_per_s'] / 1e12:.3g} TFLOP/s")
        return found

    try:
        per_size, stopped = climb(sizes, measure, max_single_s, errors=(RuntimeError, NotImplementedError))
    except (RuntimeError, NotImplementedError) as exc:  # not even the first size ran
        kind = "failed" if is_oom(exc) else "unsupported"  # else: no kernel for this dtype here
        return {**row, "status": kind, "detail": {"reason": f"{precision} matmul on {dev.type}: {exc}"}}
    peak = peak_size(per_size)
    detail = {"peak_n": peak["n"], "sizes": per_size, "repeats": repeats, "repeat_s": repeat_s,
              "max_single_s": max_single_s, "rule": RULE, "dtype": str(_DTYPES[precision])}
    if stopped:
        detail["stopped"] = stopped
    return {**row, "status": "ok", "value": peak["flops_per_s"], "detail": detail}


def measure_memory_bandwidth(device: str | torch.device, nbytes: int, repeats: int = 10) -> dict[str, Any]:
    """On-device copy bandwidth: (bytes read + bytes written) / median copy time."""
    dev = resolve_device(device) if isinstance(device, str) else device
    src = torch.ones(nbytes // 4, dtype=torch.float32, device=dev)  # touched: pages are mapped
    dst = torch.zeros_like(src)

    def fn() -> None:
        dst.copy_(src)

    timed(dev, fn, 2)  # warm-up
    times = [timed(dev, fn, 1) for _ in range(repeats)]
    moved = 2 * src.numel() * 4
    return {"kind": "memory_bandwidth", "precision": None, "unit": "B/s", "status": "ok",
            "value": moved / statistics.median(times),
            "detail": {"buffer_bytes": src.numel() * 4, "bytes_per_copy": moved,
                       "counted": "bytes read + bytes written", "seconds": times,
                       "repeats": repeats, "rule": "median of repeats"}}


def measure_transfer(device: str | torch.device, nbytes: int, direction: str, pinned: bool,
                     repeats: int = 10) -> dict[str, Any]:
    """Host->device ("h2d") or device->host ("d2h") copy bandwidth, pageable or pinned host memory."""
    dev = resolve_device(device) if isinstance(device, str) else device
    kind = f"{direction}_{'pinned' if pinned else 'pageable'}"
    row: dict[str, Any] = {"kind": kind, "precision": None, "unit": "B/s", "value": None}
    if dev.type == "cpu":
        return {**row, "status": "n/a", "detail": {"reason": "host memory: the CPU needs no copy"}}
    try:
        host = torch.ones(nbytes // 4, dtype=torch.float32, pin_memory=pinned)
    except RuntimeError as exc:
        return {**row, "status": "unsupported", "detail": {"reason": f"pinned host memory: {exc}"}}
    on_device = torch.ones(nbytes // 4, dtype=torch.float32, device=dev)
    if direction == "h2d":
        def fn() -> None:
            on_device.copy_(host, non_blocking=pinned)
    else:
        def fn() -> None:
            host.copy_(on_device, non_blocking=pinned)
    timed(dev, fn, 2)  # warm-up
    times = [timed(dev, fn, 1) for _ in range(repeats)]
    return {**row, "status": "ok", "value": host.numel() * 4 / statistics.median(times),
            "detail": {"buffer_bytes": host.numel() * 4, "counted": "bytes copied (one direction)",
                       "seconds": times, "repeats": repeats, "rule": "median of repeats",
                       "pinned": pinned}}


def calibrate(device: str, precisions: Sequence[str], quick: bool = False, threads: int | None = None,
              on_progress: Progress | None = None) -> Calibration:
    """Every ceiling of `device`: {"device", "device_name", "device_type", "threads", "quick",
    "software", "measurements": [{"kind", "precision", "status", "value", "unit", "detail"}]}.

    kind: matmul (per precision, FLOP/s), memory_bandwidth, h2d_pageable, h2d_pinned,
    d2h_pageable, d2h_pinned (B/s); status: ok, unsupported, n/a (host copies on a CPU), failed.
    """
    from rigbench.frameworks.torch.devices import check_device, software
    from rigbench.frameworks.torch.oom import is_oom

    if threads is not None:
        torch.set_num_threads(threads)  # first: later ops size their pools from it
    check_device(device)
    dev = resolve_device(device)
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    say = on_progress or (lambda text: None)
    kind = _kind(dev)
    plan = matmul_plan(kind, quick)
    copy_bytes = COPY_BYTES[kind]
    if dev.type == "cuda":  # leave room for the two buffers of the copy
        free, _ = torch.cuda.mem_get_info(dev)
        copy_bytes = min(copy_bytes, free // 4)
    rows = [measure_matmul(dev, p, plan.sizes, plan.repeats, plan.repeat_s, plan.max_single_s, on_progress=say)
            for p in precisions]
    try:
        rows.append(measure_memory_bandwidth(dev, copy_bytes, repeats=copy_repeats(quick)))
        say(f"memory bandwidth: {rows[-1]['value'] / 1e9:.3g} GB/s")
    except RuntimeError as exc:
        status = "failed" if is_oom(exc) else "unsupported"
        rows.append({"kind": "memory_bandwidth", "precision": None, "unit": "B/s", "value": None,
                     "status": status, "detail": {"reason": str(exc).splitlines()[0]}})
    for direction in ("h2d", "d2h"):
        for pinned in (False, True):
            row = measure_transfer(dev, copy_bytes, direction, pinned, repeats=copy_repeats(quick))
            rows.append(row)
            if row["status"] == "ok":
                say(f"{row['kind']}: {row['value'] / 1e9:.3g} GB/s")
    info = software()
    return {"device": device, "device_name": device_name(dev), "device_type": dev.type,
            "threads": info.get("num_threads"), "quick": quick, "software": info,
            "measurements": cast("list[CalibrationRow]", rows)}
