"""PyTorch's calibration kernels (`rigbench calibrate`): the primitives that
frameworks/driver/calibration.py drives to measure one device; the sizes, repeats, buffers and
statistics are the driver's and analysis/matmul_peak.py's, not these.

- Matmul: `torch.mm(a, b, out=c)` on preallocated n x n tensors (no allocation per call).
  fp32 is strict fp32 (TF32 switched off on NVIDIA GPUs), tf32 allows TensorFloat-32 (NVIDIA
  GPUs of compute capability 8.0+), bf16/fp16 inputs of that type; elsewhere bf16/fp16 are
  tried and reported `unsupported` if no kernel runs.
- Memory bandwidth: `dst.copy_(src)` of a float32 buffer (read once, written once).
- Host<->device copies: pageable or pinned (page-locked) host tensors, copied with
  `non_blocking` when pinned; on CUDA the buffer is capped at a quarter of the free memory.

Timing uses the device's own synchronisation: CUDA events on CUDA/ROCm (no host-side jitter),
synchronize-then-host-clock elsewhere. Thread pools are sized before this runs, by the
adapter's `prepare(threads)`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

from rigbench.frameworks.torch.devices import check_device, software
from rigbench.frameworks.torch.oom import is_oom
from rigbench.frameworks.torch.trainer import device_name, resolve_device, synchronize

_DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


class TorchKernels:
    """base.CalibrationKernels for one torch device; UsageError for a device torch lacks."""

    errors: tuple[type[Exception], ...] = (RuntimeError, NotImplementedError)

    def __init__(self, device: str) -> None:
        check_device(device)
        self.device = resolve_device(device)
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
        self.device_name = device_name(self.device)
        self.device_type = self.device.type
        self.accelerator = self.device.type != "cpu"
        self._nvidia = self.device.type == "cuda" and not torch.version.hip

    def is_oom(self, exc: BaseException) -> bool:
        return is_oom(exc)

    def software(self) -> dict[str, Any]:
        return software()

    def precision_problem(self, precision: str) -> str | None:
        """tf32 off an NVIDIA GPU of compute capability 8.0+, bf16 on an older NVIDIA GPU (which
        would emulate it); bf16/fp16 elsewhere are tried."""
        if precision == "tf32":
            if not self._nvidia:
                return f"tf32 is an NVIDIA GPU format (Ampere and later); not on {self.device.type}"
            major, minor = torch.cuda.get_device_capability(self.device)
            if major < 8:
                return f"tf32 needs compute capability 8.0 or later; {self.device_name} is {major}.{minor}"
        if precision == "bf16" and self._nvidia and not torch.cuda.is_bf16_supported(including_emulation=False):
            return f"{self.device_name} has no native bf16 (compute capability below 8.0)"
        return None

    def dtype_name(self, precision: str) -> str:
        return str(_DTYPES[precision])

    def matmul(self, precision: str, n: int) -> Callable[[], object]:
        if self._nvidia:  # fp32 means strict fp32; tf32 allows TensorFloat-32
            torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        dtype = _DTYPES[precision]
        a = torch.randn(n, n, device=self.device, dtype=dtype)
        b = torch.randn(n, n, device=self.device, dtype=dtype)
        c = torch.empty(n, n, device=self.device, dtype=dtype)

        def fn() -> torch.Tensor:
            return torch.mm(a, b, out=c)
        return fn

    def copy(self, nbytes: int) -> Callable[[], object]:
        src = torch.ones(nbytes // 4, dtype=torch.float32, device=self.device)  # touched: pages are mapped
        dst = torch.zeros_like(src)

        def fn() -> torch.Tensor:
            return dst.copy_(src)
        return fn

    def timed(self, fn: Callable[[], object], iterations: int) -> float:
        if self.device.type == "cuda":  # CUDA and ROCm: events on the stream
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(iterations):
                fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1000.0  # ms -> s
        synchronize(self.device)
        t0 = time.perf_counter()
        for _ in range(iterations):
            fn()
        synchronize(self.device)
        return time.perf_counter() - t0

    def copy_budget(self, nbytes: int) -> int:
        if self.device.type == "cuda":  # leave room for the two buffers of the copy
            free, _ = torch.cuda.mem_get_info(self.device)
            return min(nbytes, free // 4)
        return nbytes

    def transfer(self, nbytes: int, direction: str, pinned: bool) -> Callable[[], float] | str:
        try:
            host = torch.ones(nbytes // 4, dtype=torch.float32, pin_memory=pinned)
        except RuntimeError as exc:
            if not pinned:
                raise  # the driver reports it (out of memory: failed)
            return f"pinned host memory: {exc}"  # e.g. no CUDA driver to page-lock with
        on_device = torch.ones(nbytes // 4, dtype=torch.float32, device=self.device)
        if direction == "h2d":
            def fn() -> torch.Tensor:
                return on_device.copy_(host, non_blocking=pinned)
        else:
            def fn() -> torch.Tensor:
                return host.copy_(on_device, non_blocking=pinned)
        return lambda: self.timed(fn, 1)
