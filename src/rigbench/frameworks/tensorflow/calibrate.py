"""TensorFlow's calibration kernels (`rigbench calibrate`): the primitives that
frameworks/driver/calibration.py drives to measure one device; the sizes, repeats, buffers and
statistics are the driver's and analysis/matmul_peak.py's, not these (the buffers used to be
this module's own, and --quick copied 64 MiB, which read 23% low on a busy 2-core VM).

- Matmul: an XLA-compiled square `a @ b` (tf.function with jit_compile). fp32 is true fp32
  (TF32 switched off), tf32 TF32 (NVIDIA GPUs; `unsupported` on the CPU), bf16/fp16 inputs
  of that type.
- Memory bandwidth: a compiled scaling of a float32 buffer (read once, written once).
- Host<->device copies (GPUs): pageable host memory only (a tensor made from a numpy array on
  the device, and the .numpy() of a fresh device tensor made outside the timed part);
  TensorFlow has no public API for pinned host buffers, so those rows say so.

Everything runs under `tf.device` of the calibrated device. Timing is the host clock around
the calls, stopped after a host copy of one element of the last result (TensorFlow runs GPU
work asynchronously). The thread pools are sized before this runs, by the adapter's
`prepare(threads)`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import tensorflow as tf

from rigbench.frameworks.driver.calibration import host_timed, pageable_copy
from rigbench.frameworks.tensorflow.devices import resolve_device, software
from rigbench.frameworks.tensorflow.oom import is_oom

_DTYPES = {"fp32": tf.float32, "tf32": tf.float32, "bf16": tf.bfloat16, "fp16": tf.float16}


class TfKernels:
    """base.CalibrationKernels for one TensorFlow device; UsageError for a device
    TensorFlow lacks."""

    errors: tuple[type[Exception], ...] = (tf.errors.OpError, MemoryError)

    def __init__(self, device: str) -> None:
        self.tf_device, self.device_name, self.accelerator = resolve_device(device)
        self.device_type = "cuda" if self.accelerator else "cpu"

    def is_oom(self, exc: BaseException) -> bool:
        return is_oom(exc)

    def software(self) -> dict[str, Any]:
        return software()

    def precision_problem(self, precision: str) -> str | None:
        if precision == "tf32" and not self.accelerator:
            return f"tf32 is an NVIDIA GPU format (Ampere and later); not on {self.device_name}"
        return None

    def dtype_name(self, precision: str) -> str:
        return str(_DTYPES[precision].name)

    def matmul(self, precision: str, n: int) -> Callable[[], object]:
        tf.config.experimental.enable_tensor_float_32_execution(precision == "tf32")
        with tf.device(self.tf_device):
            a, b = (tf.cast(tf.random.normal((n, n), seed=s), _DTYPES[precision]) for s in (1, 2))
        mm = tf.function(lambda x, y: tf.matmul(x, y), jit_compile=True)
        return lambda: mm(a, b)

    def copy(self, nbytes: int) -> Callable[[], object]:
        with tf.device(self.tf_device):
            src = tf.ones(nbytes // 4, tf.float32)
        scale = tf.function(lambda x: x * 2.0, jit_compile=True)
        return lambda: scale(src)

    def timed(self, fn: Callable[[], object], iterations: int) -> float:
        with tf.device(self.tf_device):
            return host_timed(fn, iterations, lambda out: tf.reshape(out, [-1])[0].numpy())

    def copy_budget(self, nbytes: int) -> int:
        return nbytes

    def transfer(self, nbytes: int, direction: str, pinned: bool) -> Callable[[], float] | str:
        if pinned:
            return "TensorFlow offers no pinned host buffers"
        return pageable_copy(nbytes, direction, to_device=self._to_device, fresh=self._fresh, to_host=np.asarray)

    def _to_device(self, host: np.ndarray) -> object:
        with tf.device(self.tf_device):
            return tf.identity(tf.constant(host))[0].numpy()  # one element back: the copy is done

    def _fresh(self, host: np.ndarray, value: int) -> object:
        with tf.device(self.tf_device):
            fresh = tf.constant(host) + float(value)
            fresh[0].numpy()  # computed before the timed copy starts
            return fresh
