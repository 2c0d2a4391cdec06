"""The framework adapter protocol.

Everything a framework-specific module must provide so that the runner can train and time
a workload without knowing which framework it is. All imports of a framework live inside
its own subpackage (rigbench/frameworks/<name>/), and those subpackages are imported only
in child processes (trials, device probes, counting), never by the CLI's own process.
"""

from __future__ import annotations

from typing import Any, Protocol

from rigbench.spec import TrialSpec
from rigbench.workloads import Workload


class StepTimer(Protocol):
    """Times individual steps with the device's own synchronisation.

    `start()`/`stop()` bracket one step and must not block on the device (on CUDA they record
    events); `elapsed_s()` is called once after `Trainer.synchronize()` and returns one
    duration per bracketed step, in seconds.
    """

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def elapsed_s(self) -> list[float]: ...


class Trainer(Protocol):
    """One workload, built on one device, with its data resident there."""

    params: int
    device_name: str

    def step(self) -> Any:
        """One full training step (forward, loss, backward, optimiser update).

        Returns the detached loss as a device value *without* synchronising, so that steps
        can be queued back to back on asynchronous devices.
        """

    def synchronize(self) -> None:
        """Block until all queued device work is done."""

    def step_timer(self) -> StepTimer:
        """A fresh timer for this device."""

    def loss_values(self, handles: list[Any]) -> list[float]:
        """Turn loss handles returned by `step()` into floats (one host copy, after a sync)."""

    def allocator_peak_bytes(self) -> int | None:
        """Peak bytes held by the framework's allocator on the device since the last reset."""

    def reset_peak_memory(self) -> None:
        """Start a new window for `allocator_peak_bytes`."""


class FrameworkAdapter(Protocol):
    """Module-level API of rigbench/frameworks/<name>/__init__.py."""

    NAME: str

    def installed(self) -> bool:
        """True if the framework can be imported (checked without importing it)."""

    def software(self) -> dict[str, Any]:
        """Versions that decide comparability: framework, CUDA/ROCm, cuDNN, ..."""

    def list_devices(self) -> list[dict[str, Any]]:
        """Devices this framework can use: dicts with id, kind, name, memory_bytes."""

    def build(self, spec: TrialSpec, workload: Workload) -> Trainer:
        """Build the model, optimiser and a resident synthetic batch on `spec.device`.

        Sets the thread count first. Raises UnsupportedError for combinations that
        cannot run (e.g. a precision the device lacks) and UsageError for a bad device.
        """

    def train(self, spec: TrialSpec, workload: Workload, data: Any, on_epoch: Any = None) -> Any:
        """Train `spec.train.epochs` epochs on `data` (rigbench.data.LoadedData) with a held-out
        evaluation after each; returns an object with `epochs` (list of spec.EpochRecord),
        `loss_curve`, `params`, `device_name`, `train_samples`, `test_samples`. A non-finite
        loss raises DivergedError with `step` = the epoch and the finished `epochs` attached."""

    def lr_find(self, spec: TrialSpec, workload: Workload, data: Any) -> Any:
        """A learning-rate range test (`spec.lr_find`) on `data`'s training split: the rate grows
        exponentially, the loss is smoothed, the test stops on divergence. Returns an object
        with `lr_curve` ([lr, loss, smoothed loss] per step), `device_name`, `train_samples`."""

    def is_oom(self, exc: BaseException) -> bool:
        """True if `exc` is this framework's out-of-memory error."""

    def count(self, workload: Workload, options: dict[str, Any]) -> tuple[int, float]:
        """(trainable parameters, training FLOPs per sample), counted without real memory."""

    def count_traffic(self, workload: Workload, options: dict[str, Any]) -> tuple[float, float]:
        """Estimated (bytes per step, bytes per sample) that a step's forward and backward
        passes read and write in device memory: traffic(batch) = per_step + per_sample * batch.
        Optional: the runner leaves `bytes_per_sample` empty for adapters without it."""

    def calibrate_device(self, device: str, precisions: list[str], quick: bool = False,
                         threads: int | None = None, on_progress: Any = None) -> dict[str, Any]:
        """Measured ceilings of `device`: peak matmul FLOP/s per precision, memory bandwidth,
        host<->device copy bandwidth (`rigbench calibrate`; see frameworks/torch/calibrate.py
        for the returned dict)."""
