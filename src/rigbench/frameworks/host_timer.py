"""The host-clock step timer every adapter uses where the device has no timer of its own
(the CPU; JAX, TensorFlow and Keras on every device): framework-free, so no adapter imports
another's."""

from __future__ import annotations

import time
from collections.abc import Callable


class HostTimer:
    """Steps timed with time.perf_counter(); stop() first waits for the device through `sync`
    when it runs asynchronously (JAX and TensorFlow on every device, torch on GPUs); None for
    a synchronous device."""

    def __init__(self, sync: Callable[[], None] | None = None):
        self._sync = sync
        self._times: list[float] = []
        self._t0 = 0.0

    def start(self) -> None:
        self._t0 = time.perf_counter()

    def stop(self) -> None:
        if self._sync is not None:
            self._sync()
        self._times.append(time.perf_counter() - self._t0)

    def elapsed_s(self) -> list[float]:
        return list(self._times)
