"""KerasTrainer: one workload's Keras parts, optimisers and resident synthetic batch on one
device, the skeleton the three Keras adapters share (rigbench.frameworks.base.Trainer).

A backend's subclass supplies what differs: the device (`resolve_device`), option checks,
TF32, the compiled training step (`make_step`), synchronisation and the allocator's peak.
The shared loops (frameworks/driver/) drive the real-data primitives below (base.DataTrainer):
images arrive as uint8 and are scaled on the device, a GAN draws fresh latent noise every
step from the seed's generator, and the rate is each optimiser's learning-rate variable, so
one compiled step serves every rate.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import keras
import numpy as np
from keras import ops

from rigbench.errors import UnsupportedError
from rigbench.frameworks.driver.batches import NumpyLoader
from rigbench.frameworks.host_timer import HostTimer
from rigbench.frameworks.keras import inits, models, step
from rigbench.spec import TrainOptions, TrialSpec
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
        rank, world = self.world()
        with self.distribution_scope(), keras.device(self.keras_device):
            inits.set_random_seed(spec.seed)
            self.parts = models.build_parts(workload, resolved_options(workload, spec.workload_options))
            self.optimizers = {name: step.make_optimizer(workload, lr, spec.precision) for name in self.parts}
            for name, model in self.parts.items():
                self.optimizers[name].build(model.trainable_variables)
            # A data-parallel rank's share of the global batch: rows rank::world of one drawn
            # from the seed, as torch's trainer takes it (base.DataParallelTrainer).
            x, y = step.synthetic_batch(workload, spec.batch_size * world, spec.seed)
            self.batch: tuple[Any, Any] | None = (ops.convert_to_tensor(x[rank::world]),
                                                  ops.convert_to_tensor(y[rank::world]))
            self.compiled_step: TrainStep = self.make_step(spec)
        self.params = models.trainable_params(self.parts)
        self.last: Any = None  # the last step's loss, for synchronize()
        self.rng = np.random.default_rng(spec.seed)  # latent noise of real-data steps

    # ------------------------------------------------------------------ backend hooks

    def check_spec(self, spec: TrialSpec) -> None:
        """UnsupportedError for an option the backend cannot honour (default: channels-last, and
        torch.compile's modes: Keras' jit_compile has one)."""
        if spec.channels_last:
            raise UnsupportedError("channels-last is torch's memory format; the Keras models are NHWC inside")
        if spec.compiled and spec.compile != "default":
            raise UnsupportedError(f"compile mode {spec.compile} is torch.compile's; {spec.framework} compiles "
                                   "through jit_compile, which has no modes: use --compile")

    @abstractmethod
    def resolve_device(self, device: str) -> tuple[str, str, bool]:
        """(Keras device name, human name, is an accelerator); UsageError for an unknown id."""

    @abstractmethod
    def set_tf32(self, enabled: bool) -> None:
        """TF32 matmuls on (tf32) or off (true fp32); UnsupportedError where the device lacks it."""

    def world(self) -> tuple[int, int]:
        """(rank, world size) of a data-parallel rank; (0, 1) by default (one process)."""
        return 0, 1

    def distribution_scope(self) -> AbstractContextManager[Any]:
        """Where the parts and optimisers are created (a distribution strategy's scope for
        TensorFlow's data-parallel ranks); nothing by default."""
        return nullcontext()

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
            self.last, parts = self.compiled_step(x, y)
        return self.last, parts

    def step(self) -> Any:
        """One training step on the resident batch; returns the loss without waiting."""
        return self.run_step(*self.synthetic())[0]

    def synthetic(self) -> tuple[Any, Any]:
        """The resident synthetic batch (inputs, targets) the speed protocol and the counters use."""
        assert self.batch is not None, "the synthetic batch was dropped for a training run"
        return self.batch

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

    def to_device(self, array: np.ndarray) -> Any:
        with keras.device(self.keras_device):
            return ops.convert_to_tensor(array)

    # ------------------------------------------------------------------ real data (base.DataTrainer)

    def drop_synthetic_batch(self) -> None:
        self.batch = None

    def put_data(self, x: np.ndarray, y: np.ndarray) -> tuple[Any, Any]:
        return self.to_device(x), self.to_device(y)

    def put_index(self, order: np.ndarray) -> Any:
        return self.to_device(order)

    def take(self, data: tuple[Any, Any], index: Any, start: int, stop: int) -> tuple[Any, Any]:
        idx = index[start:stop]
        return ops.take(data[0], idx, axis=0), ops.take(data[1], idx, axis=0)

    def host_loader(self, x: np.ndarray, y: np.ndarray, options: TrainOptions) -> NumpyLoader:
        return NumpyLoader(x, y, options, f"keras on {self.BACKEND}")

    def put_batch(self, images: Any, labels: Any) -> tuple[Any, Any]:
        on_device = self.to_device(images), self.to_device(labels)
        ops.convert_to_numpy(on_device[1][:1])  # wait for the copy (labels are copied last)
        return on_device

    def model_batch(self, images: Any, labels: Any) -> tuple[Any, Any]:
        """(inputs, targets) as the step expects them, from uint8 images and labels on the device."""
        x = step.scale(self.workload, images)
        return x, step.REAL_TARGETS[self.workload.targets](self.workload, x, labels, self.rng)

    def train_step(self, batch: tuple[Any, Any]) -> tuple[Any, dict[str, Any]]:
        return self.run_step(*self.model_batch(*batch))

    def set_lr(self, lr: float) -> None:
        """Every optimiser's learning rate set to `lr` (a variable: no recompilation)."""
        for optimizer in self.optimizers.values():
            optimizer.learning_rate.assign(lr)

    def evaluation(self) -> AbstractContextManager[None]:
        return nullcontext()  # `predict` runs the model with training=False

    def eval_sums(self, batch: tuple[Any, Any]) -> tuple[Any, Any]:
        workload = self.workload
        inputs, targets = self.model_batch(*batch)
        out = self.predict(inputs)
        loss = ops.cast(step.output_loss(workload, out, targets), "float32") * inputs.shape[0]
        if workload.metric != "accuracy":
            return loss, ops.zeros(())
        predicted = step.PREDICTIONS[workload.loss](out)
        return loss, ops.cast(ops.sum(ops.cast(predicted == ops.cast(targets, "int32"), "int32")), "float32")
