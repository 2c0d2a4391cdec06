"""The keras-jax adapter: the shared Keras 3 models (frameworks/keras/) on Keras' JAX backend,
trained with Keras' own step (`train_on_batch`) or, for the GAN, Keras' stateless step (the
contract: rigbench.frameworks.base.FrameworkAdapter). Beside the native JAX adapter it shows
what Keras costs on the same backend.

Devices, threads and out-of-memory errors are the JAX adapter's (frameworks/jax/devices.py,
oom.py); `calibrate_device` is the JAX adapter's calibration, since it measures the device,
not Keras. keras and jax are imported inside the functions: the environment selects Keras'
backend (KERAS_BACKEND), fixed when keras is first imported.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rigbench.frameworks.jax import devices as jax_devices
from rigbench.frameworks.jax.oom import is_oom

if TYPE_CHECKING:
    from rigbench.data import LoadedData
    from rigbench.frameworks.base import Calibration, DeviceInfo
    from rigbench.frameworks.keras.lr_range import LrFindRun
    from rigbench.frameworks.keras.training import TrainRun
    from rigbench.frameworks.keras_jax.trainer import KerasJaxTrainer
    from rigbench.spec import EpochRecord, TrialSpec
    from rigbench.workloads import Workload

NAME = "keras-jax"

__all__ = ["NAME", "build", "calibrate_device", "count", "environment", "installed", "is_oom", "list_devices",
           "lr_find", "software", "train"]


def installed() -> bool:
    """True if keras and jax can be imported (checked without importing them)."""
    return all(importlib.util.find_spec(name) is not None for name in ("keras", "jax"))


def environment(spec: TrialSpec) -> dict[str, str]:
    """The JAX adapter's environment, and Keras on its JAX backend."""
    return {**jax_devices.environment(spec), "KERAS_BACKEND": "jax"}


def software() -> dict[str, Any]:
    """The JAX adapter's versions, Keras' version, and NAME naming both (the count cache's key)."""
    import keras

    info = jax_devices.software()
    return {**info, NAME: f"keras {keras.__version__} on jax {info['jax']}", "keras": keras.__version__}


def list_devices() -> list[DeviceInfo]:
    """The devices jax sees (the CPU first), as this adapter's."""
    return [{**row, "framework": NAME} for row in jax_devices.list_devices()]


def _trainer(spec: TrialSpec, workload: Workload) -> KerasJaxTrainer:
    from rigbench.frameworks.keras_jax.trainer import KerasJaxTrainer

    return KerasJaxTrainer(spec, workload)


def build(spec: TrialSpec, workload: Workload) -> KerasJaxTrainer:
    """Pin the threads (before XLA's CPU client starts), then build the trainer."""
    jax_devices.pin_threads(spec.threads)
    return _trainer(spec, workload)


def train(spec: TrialSpec, workload: Workload, data: LoadedData,
          on_epoch: Callable[[EpochRecord], None] | None = None) -> TrainRun:
    """Pin the threads, then train on `data` (see frameworks/keras/training.train)."""
    jax_devices.pin_threads(spec.threads)
    from rigbench.frameworks.keras import training

    return training.train(_trainer, spec, workload, data, on_epoch)


def lr_find(spec: TrialSpec, workload: Workload, data: LoadedData) -> LrFindRun:
    """Pin the threads, then run a learning-rate range test (see frameworks/keras/lr_range)."""
    jax_devices.pin_threads(spec.threads)
    from rigbench.frameworks.keras import lr_range

    return lr_range.lr_find(_trainer, spec, workload, data)


def count(workload: Workload, options: dict[str, Any]) -> tuple[int, float]:
    """(trainable parameters, training FLOPs per sample of the stateless step's jaxpr); see flops.py."""
    from rigbench.frameworks.keras_jax import flops

    return flops.count(workload, options)


def calibrate_device(device: str, precisions: list[str], quick: bool = False, threads: int | None = None,
                     on_progress: Callable[[str], None] | None = None) -> Calibration:
    """The JAX adapter's calibration of `device` (it measures the device, not Keras)."""
    from rigbench.frameworks.jax import calibrate

    return calibrate.calibrate(device, precisions, quick=quick, threads=threads, on_progress=on_progress)
