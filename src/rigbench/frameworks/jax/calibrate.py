"""JAX's calibration kernels (`rigbench calibrate`): the primitives that
frameworks/driver/calibration.py drives to measure one device; the sizes, repeats, buffers and
statistics are the driver's and analysis/matmul_peak.py's, not these.

- Matmul: a jitted square `a @ b`. fp32 is XLA's "highest" precision (true fp32), tf32 its
  default, which is TensorFloat-32 on NVIDIA GPUs of compute capability 8.0+ (elsewhere tf32
  is `unsupported`), bf16/fp16 inputs of that type.
- Memory bandwidth: a jitted on-device copy of a float32 buffer (read once, written once).
- Host<->device copies (accelerators): pageable host memory only (jax.device_put of a numpy
  array, and a host copy of a fresh device array made outside the timed part, so no cached
  host copy is read); JAX has no API for pinned host buffers, so those rows say so.

Timing is the host clock around the calls, stopped after block_until_ready of the last result
(JAX dispatches asynchronously on every device). The CPU threads are pinned before this runs,
by the adapter's `prepare(threads)`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rigbench.frameworks.driver.calibration import host_timed, pageable_copy
from rigbench.frameworks.jax.devices import device_name, resolve_device, software
from rigbench.frameworks.jax.oom import is_oom

_DTYPES = {"fp32": jnp.float32, "tf32": jnp.float32, "bf16": jnp.bfloat16, "fp16": jnp.float16}
_PRECISION = {"fp32": jax.lax.Precision.HIGHEST, "tf32": jax.lax.Precision.DEFAULT,
              "bf16": jax.lax.Precision.DEFAULT, "fp16": jax.lax.Precision.DEFAULT}


class JaxKernels:
    """base.CalibrationKernels for one JAX device; UsageError for a device jax lacks."""

    errors: tuple[type[Exception], ...] = (jax.errors.JaxRuntimeError, MemoryError, NotImplementedError)

    def __init__(self, device: str) -> None:
        self.device = resolve_device(device)
        self.device_name = device_name(self.device)
        self.accelerator = self.device.platform != "cpu"
        self.device_type = "cuda" if self.accelerator else "cpu"

    def is_oom(self, exc: BaseException) -> bool:
        return is_oom(exc)

    def software(self) -> dict[str, Any]:
        return software()

    def precision_problem(self, precision: str) -> str | None:
        capability = float(getattr(self.device, "compute_capability", 0) or 0)
        if precision == "tf32" and (self.device.platform != "gpu" or capability < 8):
            return f"tf32 is an NVIDIA GPU format (Ampere and later); not on {self.device_name}"
        return None

    def dtype_name(self, precision: str) -> str:
        return jnp.dtype(_DTYPES[precision]).name

    def matmul(self, precision: str, n: int) -> Callable[[], object]:
        key_a, key_b = jax.random.split(jax.random.key(0))
        a, b = (jax.device_put(jax.random.normal(k, (n, n), _DTYPES[precision]), self.device)
                for k in (key_a, key_b))
        mm = jax.jit(lambda x, y: jnp.matmul(x, y, precision=_PRECISION[precision]))
        return lambda: mm(a, b)

    def copy(self, nbytes: int) -> Callable[[], object]:
        src = jax.device_put(jnp.ones(nbytes // 4, jnp.float32), self.device)
        copy = jax.jit(lambda x: x.copy())
        return lambda: copy(src)

    def timed(self, fn: Callable[[], object], iterations: int) -> float:
        return host_timed(fn, iterations, jax.block_until_ready)

    def copy_budget(self, nbytes: int) -> int:
        return nbytes

    def transfer(self, nbytes: int, direction: str, pinned: bool) -> Callable[[], float] | str:
        if pinned:
            return "JAX offers no pinned host buffers"
        return pageable_copy(
            nbytes, direction,
            to_device=lambda host: jax.block_until_ready(jax.device_put(host, self.device)),
            fresh=lambda host, value: jax.block_until_ready(jax.device_put(host, self.device) + value),
            to_host=np.asarray)
