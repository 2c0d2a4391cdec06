"""Measured ceilings of one device (`rigbench calibrate`) with TensorFlow, by the method of
frameworks/jax/calibrate.py (analysis/matmul_peak.py states the sizes, the stopping rule and
the peak rule):

- Peak matmul FLOP/s per precision: an XLA-compiled square `a @ b` (tf.function with
  jit_compile), 2*n^3 FLOPs each; per size one untimed warm-up repeat, then `repeats` timed
  repeats of back-to-back matmuls of at least `repeat_s` each; the size's rate is the median
  repeat's, the peak the largest size's. fp32 is true fp32 (TF32 switched off), tf32 TF32
  (NVIDIA GPUs of compute capability 8.0+), bf16/fp16 inputs of that type.
- Memory bandwidth: a compiled scaling of a large buffer (read once, written once) over the
  median time.
- Host<->device copies (GPUs): pageable host memory only (a tensor made from a numpy array on
  the device, and its .numpy()); TensorFlow has no public API for pinned host buffers.

Timing is the host clock around the calls, stopped after a host copy of one element of the
last result (TensorFlow runs GPU work asynchronously).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np
import tensorflow as tf

from rigbench.analysis.matmul_peak import MAX_SINGLE_S, RULE, TooSlow, climb, matmul_plan, peak_size
from rigbench.frameworks.base import Calibration, CalibrationRow
from rigbench.frameworks.tensorflow.devices import resolve_device, set_threads, software
from rigbench.frameworks.tensorflow.oom import is_oom

_DTYPES = {"fp32": tf.float32, "tf32": tf.float32, "bf16": tf.bfloat16, "fp16": tf.float16}
COPY_BYTES = {"cpu": 256 * 2**20, "accelerator": 1024 * 2**20}
QUICK_COPY_BYTES = {"cpu": 64 * 2**20, "accelerator": 256 * 2**20}
_ERRORS = (tf.errors.OpError, MemoryError)

Progress = Callable[[str], None]


def timed(fn: Callable[[], Any], iterations: int) -> float:
    """Seconds taken by `iterations` back-to-back calls of `fn`, the last result awaited."""
    t0 = time.perf_counter()
    out = None
    for _ in range(iterations):
        out = fn()
    tf.reshape(out, [-1])[0].numpy()
    return time.perf_counter() - t0


def matmul_at_size(dev: str, precision: str, n: int, repeats: int, repeat_s: float,
                   limit_s: float | None = None) -> dict[str, Any]:
    """The median sustained rate of n x n matmuls (as torch's matmul_at_size)."""
    tf.config.experimental.enable_tensor_float_32_execution(precision == "tf32")
    with tf.device(dev):
        a, b = (tf.cast(tf.random.normal((n, n), seed=s), _DTYPES[precision]) for s in (1, 2))
        mm = tf.function(lambda x, y: tf.matmul(x, y), jit_compile=True)
        fn: Callable[[], Any] = lambda: mm(a, b)  # noqa: E731
        timed(fn, 1)  # first call: compilation
        single = timed(fn, 1)
        if limit_s is not None and single > limit_s:
            raise TooSlow(n, single, limit_s)
        iterations = max(1, math.ceil(repeat_s / max(single, 1e-7)))
        timed(fn, iterations)  # warm-up repeat (not kept)
        per_matmul = [timed(fn, iterations) / iterations for _ in range(repeats)]
    return {"n": n, "iterations": iterations, "single_s": single, "seconds_per_matmul": per_matmul,
            "flops_per_s": 2 * n**3 / statistics.median(per_matmul)}


def measure_matmul(dev: str, accelerator: bool, name: str, precision: str, sizes: Sequence[int], repeats: int,
                   repeat_s: float, max_single_s: float = MAX_SINGLE_S,
                   on_progress: Progress | None = None) -> dict[str, Any]:
    """Peak matmul FLOP/s of `precision` on the device: a measurement row (see torch's)."""
    row: dict[str, Any] = {"kind": "matmul", "precision": precision, "unit": "FLOP/s", "value": None}
    if precision == "tf32" and not accelerator:
        return {**row, "status": "unsupported",
                "detail": {"reason": f"tf32 is an NVIDIA GPU format (Ampere and later); not on {name}"}}

    def measure(n: int, limit_s: float | None) -> dict[str, Any]:
        found = matmul_at_size(dev, precision, n, repeats, repeat_s, limit_s)
        if on_progress:
            on_progress(f"matmul {precision} n={n}: {found['flops_per_s'] / 1e12:.3g} TFLOP/s")
        return found

    try:
        per_size, stopped = climb(sizes, measure, max_single_s, errors=_ERRORS)
    except _ERRORS as exc:
        status = "failed" if is_oom(exc) else "unsupported"
        return {**row, "status": status, "detail": {"reason": f"{precision} matmul: {str(exc).splitlines()[0]}"}}
    peak = peak_size(per_size)
    detail = {"peak_n": peak["n"], "sizes": per_size, "repeats": repeats, "repeat_s": repeat_s,
              "max_single_s": max_single_s, "rule": RULE, "dtype": _DTYPES[precision].name}
    if stopped:
        detail["stopped"] = stopped
    return {**row, "status": "ok", "value": peak["flops_per_s"], "detail": detail}


def measure_memory_bandwidth(dev: str, nbytes: int, repeats: int = 10) -> dict[str, Any]:
    """On-device bandwidth: (bytes read + bytes written) of a compiled scaling / median time."""
    with tf.device(dev):
        src = tf.ones(nbytes // 4, tf.float32)
        scale = tf.function(lambda x: x * 2.0, jit_compile=True)
        timed(lambda: scale(src), 2)  # warm-up and compilation
        times = [timed(lambda: scale(src), 1) for _ in range(repeats)]
    moved = 2 * (nbytes // 4) * 4
    return {"kind": "memory_bandwidth", "precision": None, "unit": "B/s", "status": "ok",
            "value": moved / statistics.median(times),
            "detail": {"buffer_bytes": moved // 2, "bytes_per_copy": moved,
                       "counted": "bytes read + bytes written", "seconds": times,
                       "repeats": repeats, "rule": "median of repeats"}}


def measure_transfer(dev: str, accelerator: bool, nbytes: int, direction: str, pinned: bool,
                     repeats: int = 10) -> dict[str, Any]:
    """Host->device ("h2d") or device->host ("d2h") copy bandwidth of pageable host memory."""
    row: dict[str, Any] = {"kind": f"{direction}_{'pinned' if pinned else 'pageable'}", "precision": None,
                           "unit": "B/s", "value": None}
    if not accelerator:
        return {**row, "status": "n/a", "detail": {"reason": "host memory: the CPU needs no copy"}}
    if pinned:
        return {**row, "status": "unsupported", "detail": {"reason": "TensorFlow offers no pinned host buffers"}}
    host = np.ones(nbytes // 4, np.float32)
    times = []
    with tf.device(dev):
        for i in range(repeats + 2):  # two warm-up copies
            if direction == "h2d":
                t0 = time.perf_counter()
                tf.identity(tf.constant(host))[0].numpy()
            else:
                fresh = tf.constant(host) + float(i)  # no cached host copy
                fresh[0].numpy()
                t0 = time.perf_counter()
                fresh.numpy()
            if i >= 2:
                times.append(time.perf_counter() - t0)
    return {**row, "status": "ok", "value": host.nbytes / statistics.median(times),
            "detail": {"buffer_bytes": host.nbytes, "counted": "bytes copied (one direction)",
                       "seconds": times, "repeats": repeats, "rule": "median of repeats", "pinned": False}}


def calibrate(device: str, precisions: Sequence[str], quick: bool = False, threads: int | None = None,
              on_progress: Progress | None = None) -> Calibration:
    """Every ceiling of `device`, in the shape of torch's calibrate (base.Calibration)."""
    set_threads(threads)
    dev, name, accelerator = resolve_device(device)
    say = on_progress or (lambda text: None)
    kind = "accelerator" if accelerator else "cpu"
    plan = matmul_plan(kind, quick)
    copy_bytes = (QUICK_COPY_BYTES if quick else COPY_BYTES)[kind]
    rows = [measure_matmul(dev, accelerator, name, p, plan.sizes, plan.repeats, plan.repeat_s, plan.max_single_s,
                           on_progress=say) for p in precisions]
    try:
        rows.append(measure_memory_bandwidth(dev, copy_bytes, repeats=5 if quick else 10))
        say(f"memory bandwidth: {rows[-1]['value'] / 1e9:.3g} GB/s")
    except _ERRORS as exc:
        rows.append({"kind": "memory_bandwidth", "precision": None, "unit": "B/s", "value": None,
                     "status": "failed" if is_oom(exc) else "unsupported",
                     "detail": {"reason": str(exc).splitlines()[0]}})
    for direction in ("h2d", "d2h"):
        for pinned in (False, True):
            row = measure_transfer(dev, accelerator, copy_bytes, direction, pinned, repeats=5 if quick else 10)
            rows.append(row)
            if row["status"] == "ok":
                say(f"{row['kind']}: {row['value'] / 1e9:.3g} GB/s")
    info = software()
    return {"device": device, "device_name": name, "device_type": "cuda" if accelerator else "cpu",
            "threads": info.get("num_threads"), "quick": quick, "software": info,
            "measurements": cast("list[CalibrationRow]", rows)}
