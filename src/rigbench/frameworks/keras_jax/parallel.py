"""Data parallelism for Keras on JAX through Keras' own distribution API (keras.distribution).

The ranks join `jax.distributed` exactly as the native JAX adapter's do (frameworks/jax/
parallel.JaxCollective: gloo between CPU processes, one GPU per rank); `keras.distribution.
initialize` would make the same call, without the collective implementation and timeouts a
trial needs. Then `keras.distribution.DataParallel` over every process's device is set for the
process (`distribute`): Keras creates every variable replicated on that mesh, and
`train_on_batch` turns each rank's rows into its shard of one global batch
(`jax.make_array_from_process_local_data`) before its jitted step, whose loss is the mean over
the global batch, so XLA all-reduces the gradients and every replica applies the same update,
as one process on the global batch would. The GAN's stateless step (step.py) is jitted on the
same devices with its state replicated and its batch sharded (frameworks/jax/parallel.py).

No sync (base.DataParallelTrainer.without_gradient_sync): Keras has no switch for it, so the
steps run on an undistributed copy of the model on the rank's own device (`LocalCopy`): the
same `train_on_batch` on the rank's rows, with no collective at all. The copies drift apart
from the replicas; they serve the communication share only.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import jax
import keras
import numpy as np

from rigbench.frameworks.jax import parallel as jax_parallel
from rigbench.frameworks.keras import models
from rigbench.frameworks.keras import step as keras_step
from rigbench.spec import TrialSpec
from rigbench.workloads import Workload, resolved_options


def world() -> tuple[int, int]:
    """(rank, world size) of this process: (0, 1) unless it joined a data-parallel trial."""
    return (jax.process_index(), jax.process_count()) if jax_parallel.joined() else (0, 1)


def device_id(device: jax.Device) -> str:
    """Keras' name of `device` ("cpu:0", "gpu:1"): the platform and jax's global id, which
    differ from 0 on every rank but the first (keras.device looks the id up in jax.devices())."""
    return f"{device.platform}:{device.id}"


def distribute(device: jax.Device) -> None:
    """Keras' DataParallel over every process's device of `device`'s platform, set for the
    process: Keras reads it when it creates variables and at every train_on_batch."""
    if keras.distribution.distribution() is None:
        devices = keras.distribution.list_devices(device.platform)
        keras.distribution.set_distribution(keras.distribution.DataParallel(devices=devices))


def local_values(variables: list[Any]) -> list[np.ndarray]:
    """This process's copy of each (replicated) variable's value, on the host."""
    return [np.asarray(v.value.addressable_data(0)) for v in variables]


class LocalCopy:
    """A one-part workload's model and optimiser copied, without distribution, onto the
    rank's own device, stepping with Keras' own train_on_batch (the no-sync steps)."""

    def __init__(self, spec: TrialSpec, workload: Workload, lr: float, model: keras.Model, optimizer: Any,
                 device: str):
        self.device = device
        with _undistributed(), keras.device(device):
            (self.model,) = models.build_parts(workload, resolved_options(workload, spec.workload_options)).values()
            self.optimizer = keras_step.make_optimizer(workload, lr, spec.precision)
            self.optimizer.build(self.model.trainable_variables)
            self.model.compile(optimizer=self.optimizer, loss=keras_step.keras_loss(workload), jit_compile=True)
        self.replica, self.replica_optimizer = model, optimizer

    def refresh(self) -> None:
        """Take the replica's current values (the copy's own drifted on the last no-sync)."""
        with keras.device(self.device):
            for ours, theirs in ((self.model.weights, self.replica.weights),
                                 (self.optimizer.variables, self.replica_optimizer.variables)):
                for variable, value in zip(ours, local_values(theirs)):
                    variable.assign(value)

    def train_on_batch(self, x: Any, y: Any) -> Any:
        with _undistributed(), keras.device(self.device):
            return self.model.train_on_batch(x, y)


@contextmanager
def _undistributed() -> Iterator[None]:
    """Keras without a distribution inside (its DataParallel again after)."""
    saved = keras.distribution.distribution()
    keras.distribution.set_distribution(None)
    try:
        yield
    finally:
        keras.distribution.set_distribution(saved)
