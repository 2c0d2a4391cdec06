"""Measured ceilings of one device (`rigbench calibrate`) with JAX, by the method of
frameworks/torch/calibrate.py (see its docstring; analysis/matmul_peak.py states the sizes,
the stopping rule and the peak rule):

- Peak matmul FLOP/s per precision: a jitted square `a @ b`, 2*n^3 FLOPs each; per size one
  untimed warm-up repeat, then `repeats` timed repeats of back-to-back matmuls of at least
  `repeat_s` each; the size's rate is the median repeat's, the peak the largest size's.
  fp32 is XLA's "highest" precision (true fp32), tf32 its "tensorfloat32" (NVIDIA GPUs of
  compute capability 8.0+), bf16/fp16 inputs of that type.
- Memory bandwidth: a jitted on-device copy; bytes read + bytes written over the median time.
- Host<->device copies (accelerators): pageable host memory only (jax.device_put and a host
  copy of a fresh array); JAX has no API for pinned host buffers, so those rows say so.

Timing is the host clock around the calls, stopped after block_until_ready (JAX dispatches
asynchronously on every device).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np

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
from rigbench.frameworks.jax.devices import device_name, pin_threads, resolve_device, software
from rigbench.frameworks.jax.oom import is_oom

_DTYPES = {"fp32": jnp.float32, "tf32": jnp.float32, "bf16": jnp.bfloat16, "fp16": jnp.float16}
_PRECISION = {"fp32": jax.lax.Precision.HIGHEST, "tf32": jax.lax.Precision.DEFAULT,
              "bf16": jax.lax.Precision.DEFAULT, "fp16": jax.lax.Precision.DEFAULT}


Progress = Callable[[str], None]


def timed(fn: Callable[[], Any], iterations: int) -> float:
    """Seconds taken by `iterations` back-to-back calls of `fn`, the last result awaited."""
    t0 = time.perf_counter()
    out = None
    for _ in range(iterations):
        out = fn()
    jax.block_until_ready(out)
    return time.perf_counter() - t0


def _precision_problem(device: jax.Device, precision: str) -> str | None:
    if precision == "tf32" and (device.platform != "gpu" or float(getattr(device, "compute_capability", 0) or 0) < 8):
        return f"tf32 is an NVIDIA GPU format (Ampere and later); not on {device_name(device)}"
    return None


def matmul_at_size(device: jax.Device, precision: str, n: int, repeats: int, repeat_s: float,
                   limit_s: float | None = None) -> dict[str, Any]:
    """The median sustained rate of n x n matmuls (as torch's matmul_at_size)."""
    key_a, key_b = jax.random.split(jax.random.key(0))
    a, b = (jax.device_put(jax.random.normal(k, (n, n), _DTYPES[precision]), device) for k in (key_a, key_b))
    mm = jax.jit(lambda x, y: jnp.matmul(x, y, precision=_PRECISION[precision]))

    def fn() -> jax.Array:
        return mm(a, b)

    timed(fn, 1)  # first call: compilation
    single = timed(fn, 1)
    if limit_s is not None and single > limit_s:
        raise TooSlow(n, single, limit_s)
    iterations = max(1, math.ceil(repeat_s / max(single, 1e-7)))
    timed(fn, iterations)  # warm-up repeat (not kept)
    per_matmul = [timed(fn, iterations) / iterations for _ in range(repeats)]
    return {"n": n, "iterations": iterations, "single_s": single, "seconds_per_matmul": per_matmul,
            "flops_per_s": 2 * n**3 / statistics.median(per_matmul)}


def measure_matmul(device: jax.Device, precision: str, sizes: Sequence[int], repeats: int = 5,
                   repeat_s: float = 0.2, max_single_s: float = MAX_SINGLE_S,
                   on_progress: Progress | None = None) -> dict[str, Any]:
    """Peak matmul FLOP/s of `precision` on `device`: a measurement row (see torch's)."""
    row: dict[str, Any] = {"kind": "matmul", "precision": precision, "unit": "FLOP/s", "value": None}
    problem = _precision_problem(device, precision)
    if problem:
        return {**row, "status": "unsupported", "detail": {"reason": problem}}

    def measure(n: int, limit_s: float | None) -> dict[str, Any]:
        found = matmul_at_size(device, precision, n, repeats, repeat_s, limit_s)
        if on_progress:
            on_progress(f"matmul {precision} n={n}: {found['flops_per_s'] / 1e12:.3g} TFLOP/s")
        return found

    errors = (jax.errors.JaxRuntimeError, MemoryError, NotImplementedError)
    try:
        per_size, stopped = climb(sizes, measure, max_single_s, errors=errors)
    except errors as exc:
        status = "failed" if is_oom(exc) else "unsupported"
        return {**row, "status": status, "detail": {"reason": f"{precision} matmul: {str(exc).splitlines()[0]}"}}
    peak = peak_size(per_size)
    detail = {"peak_n": peak["n"], "sizes": per_size, "repeats": repeats, "repeat_s": repeat_s,
              "max_single_s": max_single_s, "rule": RULE, "dtype": jnp.dtype(_DTYPES[precision]).name}
    if stopped:
        detail["stopped"] = stopped
    return {**row, "status": "ok", "value": peak["flops_per_s"], "detail": detail}


def measure_memory_bandwidth(device: jax.Device, nbytes: int, repeats: int = 10) -> dict[str, Any]:
    """On-device copy bandwidth: (bytes read + bytes written) / median copy time."""
    src = jax.device_put(jnp.ones(nbytes // 4, jnp.float32), device)
    copy = jax.jit(lambda x: x.copy())

    def fn() -> jax.Array:
        return copy(src)

    timed(fn, 2)  # warm-up and compilation
    times = [timed(fn, 1) for _ in range(repeats)]
    moved = 2 * src.size * 4
    return {"kind": "memory_bandwidth", "precision": None, "unit": "B/s", "status": "ok",
            "value": moved / statistics.median(times),
            "detail": {"buffer_bytes": src.size * 4, "bytes_per_copy": moved,
                       "counted": "bytes read + bytes written", "seconds": times,
                       "repeats": repeats, "rule": "median of repeats"}}


def measure_transfer(device: jax.Device, nbytes: int, direction: str, pinned: bool,
                     repeats: int = 10) -> dict[str, Any]:
    """Host->device ("h2d") or device->host ("d2h") copy bandwidth of pageable host memory."""
    row: dict[str, Any] = {"kind": f"{direction}_{'pinned' if pinned else 'pageable'}", "precision": None,
                           "unit": "B/s", "value": None}
    if device.platform == "cpu":
        return {**row, "status": "n/a", "detail": {"reason": "host memory: the CPU needs no copy"}}
    if pinned:
        return {**row, "status": "unsupported", "detail": {"reason": "JAX offers no pinned host buffers"}}
    host = np.ones(nbytes // 4, np.float32)
    times = []
    for i in range(repeats + 2):  # two warm-up copies
        if direction == "h2d":
            t0 = time.perf_counter()
            jax.block_until_ready(jax.device_put(host, device))
        else:
            fresh = jax.block_until_ready(jax.device_put(host, device) + i)  # no cached host copy
            t0 = time.perf_counter()
            np.asarray(fresh)
        if i >= 2:
            times.append(time.perf_counter() - t0)
    return {**row, "status": "ok", "value": host.nbytes / statistics.median(times),
            "detail": {"buffer_bytes": host.nbytes, "counted": "bytes copied (one direction)",
                       "seconds": times, "repeats": repeats, "rule": "median of repeats", "pinned": False}}


def calibrate(device: str, precisions: Sequence[str], quick: bool = False, threads: int | None = None,
              on_progress: Progress | None = None) -> Calibration:
    """Every ceiling of `device`, in the shape of torch's calibrate (base.Calibration)."""
    pin_threads(threads)
    dev = resolve_device(device)
    say = on_progress or (lambda text: None)
    kind = "cpu" if dev.platform == "cpu" else "accelerator"
    plan = matmul_plan(kind, quick)
    copy_bytes = COPY_BYTES[kind]
    rows = [measure_matmul(dev, p, plan.sizes, plan.repeats, plan.repeat_s, plan.max_single_s, on_progress=say)
            for p in precisions]
    try:
        rows.append(measure_memory_bandwidth(dev, copy_bytes, repeats=copy_repeats(quick)))
        say(f"memory bandwidth: {rows[-1]['value'] / 1e9:.3g} GB/s")
    except (jax.errors.JaxRuntimeError, MemoryError) as exc:
        rows.append({"kind": "memory_bandwidth", "precision": None, "unit": "B/s", "value": None,
                     "status": "failed" if is_oom(exc) else "unsupported",
                     "detail": {"reason": str(exc).splitlines()[0]}})
    for direction in ("h2d", "d2h"):
        for pinned in (False, True):
            row = measure_transfer(dev, copy_bytes, direction, pinned, repeats=copy_repeats(quick))
            rows.append(row)
            if row["status"] == "ok":
                say(f"{row['kind']}: {row['value'] / 1e9:.3g} GB/s")
    info = software()
    return {"device": device, "device_name": device_name(dev), "device_type": "cpu" if kind == "cpu" else "cuda",
            "threads": info.get("num_threads"), "quick": quick, "software": info,
            "measurements": cast("list[CalibrationRow]", rows)}
