"""KerasTrainer: one workload's Keras parts, optimisers and resident synthetic batch on one
device, the skeleton the three Keras adapters share (rigbench.frameworks.base.Trainer).

A backend's subclass supplies what differs: the device (`resolve_device`), option checks,
TF32, the compiled training step (`make_step`), synchronisation and the allocator's peak.
The shared loops (training.py, lr_range.py) drive `train_step`, `predict` and `set_lr`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import keras
import numpy as np
from keras import ops

from rigbench.errors import UnsupportedError
from rigbench.frameworks.host_timer import HostTimer
from rigbench.frameworks.keras import models, step
from rigbench.spec import TrialSpec
from rigbench.workloads import Workload, resolved_options

#: (inputs, targets) -> (loss as a device value, {part name: its loss} for multi-part workloads)
TrainStep = Callable[[Any, Any], tuple[Any, dict[str, Any]]]


def require_backend(backend: str) -> None:
    """RuntimeError unless keras runs on `backend`: it is fixed when keras is first imported,
    from KERAS_BACKEND, which the adapter's `environment` sets for the child."""
    if keras.backend.backend() != backend:
        raise RuntimeError(f"keras runs on {keras.backend.backend()!r} in this process, not {backend!r}: "
                           f"set KERAS_BACKEND={backend} before keras is imported (the adapter's environment)")


class KerasTrainer(ABC):
    """A workload's Keras parts and optimiser(s) with a resident batch on one device."""

    #: The Keras backend this trainer's steps are written for.
    BACKEND = ""

    def __init__(self, spec: TrialSpec, workload: Workload):
        require_backend(self.BACKEND)
        self.check_spec(spec)
        self.keras_device, self.device_name, accelerator = self.resolve_device(spec.device)
        self.set_tf32(spec.precision == "tf32")
        step.set_policy(spec.precision, accelerator, spec.device)
        self.spec, self.workload = spec, workload
        lr = workload.default_lr if spec.lr is None else spec.lr
        with keras.device(self.keras_device):
            keras.utils.set_random_seed(spec.seed)
            self.parts = models.build_parts(workload, resolved_options(workload, spec.workload_options))
            self.optimizers = {name: step.make_optimizer(workload, lr, spec.precision) for name in self.parts}
            for name, model in self.parts.items():
                self.optimizers[name].build(model.trainable_variables)
            x, y = step.synthetic_batch(workload, spec.batch_size, spec.seed)
            self.batch = (ops.convert_to_tensor(x), ops.convert_to_tensor(y))
            self.train_step: TrainStep = self.make_step(spec)
        self.params = models.trainable_params(self.parts)
        self.last: Any = None  # the last step's loss, for synchronize()

    # ------------------------------------------------------------------ backend hooks

    def check_spec(self, spec: TrialSpec) -> None:
        """UnsupportedError for an option the backend cannot honour (default: channels-last)."""
        if spec.channels_last:
            raise UnsupportedError("channels-last is torch's memory format; the Keras models are NHWC inside")

    @abstractmethod
    def resolve_device(self, device: str) -> tuple[str, str, bool]:
        """(Keras device name, human name, is an accelerator); UsageError for an unknown id."""

    @abstractmethod
    def set_tf32(self, enabled: bool) -> None:
        """TF32 matmuls on (tf32) or off (true fp32); UnsupportedError where the device lacks it."""

    @abstractmethod
    def make_step(self, spec: TrialSpec) -> TrainStep:
        """The compiled training step of every part."""

    @abstractmethod
    def synchronize(self) -> None:
        """Block until all queued device work is done."""

    def allocator_peak_bytes(self) -> int | None:
        return None

    def reset_peak_memory(self) -> None:  # noqa: B027 - a no-op unless the backend keeps statistics
        """No statistics by default (the CPU, XLA's allocators): a no-op."""

    # ------------------------------------------------------------------ shared

    def run_step(self, x: Any, y: Any) -> tuple[Any, dict[str, Any]]:
        """One training step on (inputs, targets) on the trainer's device (see TrainStep)."""
        with keras.device(self.keras_device):
            self.last, parts = self.train_step(x, y)
        return self.last, parts

    def step(self) -> Any:
        """One training step on the resident batch; returns the loss without waiting."""
        return self.run_step(*self.batch)[0]

    def step_timer(self) -> HostTimer:
        return HostTimer(self.synchronize)

    def loss_values(self, handles: list[Any]) -> list[float]:
        if not handles:
            return []
        return [float(v) for v in ops.convert_to_numpy(ops.stack([ops.cast(h, "float32") for h in handles]))]

    def predict(self, x: Any) -> Any:
        """The first part's output in evaluation mode (moving statistics, no dropout)."""
        with keras.device(self.keras_device):
            return next(iter(self.parts.values()))(x, training=False)

    def set_lr(self, lr: float) -> None:
        """Every optimiser's learning rate set to `lr` (a variable: no recompilation)."""
        for optimizer in self.optimizers.values():
            optimizer.learning_rate.assign(lr)

    def to_device(self, array: np.ndarray) -> Any:
        with keras.device(self.keras_device):
            return ops.convert_to_tensor(array)
