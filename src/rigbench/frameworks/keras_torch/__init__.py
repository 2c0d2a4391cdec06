"""The keras-torch adapter: the shared Keras 3 models (frameworks/keras/) on Keras' torch
backend, trained with Keras' own step (`train_on_batch`; --compile is Keras' jit_compile,
torch.compile on this backend) or, for the GAN, a torch-autograd step (the contract:
rigbench.frameworks.base.FrameworkAdapter). Beside the native torch adapter it shows what Keras
costs on the same backend.

Devices, threads and out-of-memory errors are the torch adapter's (frameworks/torch/devices.py,
oom.py); `calibrate_device` is the torch adapter's calibration, since it measures the device,
not Keras. keras and torch are imported inside the functions: the environment selects Keras'
backend (KERAS_BACKEND), fixed when keras is first imported.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rigbench.frameworks import torch as torch_adapter
from rigbench.frameworks.torch import devices as torch_devices
from rigbench.frameworks.torch.oom import is_oom

if TYPE_CHECKING:
    from rigbench.data import LoadedData
    from rigbench.frameworks.base import Calibration, DeviceInfo
    from rigbench.frameworks.keras.lr_range import LrFindRun
    from rigbench.frameworks.keras.training import TrainRun
    from rigbench.frameworks.keras_torch.trainer import KerasTorchTrainer
    from rigbench.spec import EpochRecord, TrialSpec
    from rigbench.workloads import Workload

NAME = "keras-torch"

__all__ = ["NAME", "build", "calibrate_device", "count", "environment", "installed", "is_oom", "list_devices",
           "lr_find", "software", "train"]


def installed() -> bool:
    """True if keras and torch can be imported (checked without importing them)."""
    return all(importlib.util.find_spec(name) is not None for name in ("keras", "torch"))


def environment(spec: TrialSpec) -> dict[str, str]:
    """The torch adapter's thread pools, and Keras on its torch backend."""
    return {**torch_adapter.environment(spec), "KERAS_BACKEND": "torch"}


def software() -> dict[str, Any]:
    """The torch adapter's versions, Keras' version, and NAME naming both (the count cache's key)."""
    import keras

    info = torch_devices.software()
    return {**info, NAME: f"keras {keras.__version__} on torch {info['torch']}", "keras": keras.__version__}


def list_devices() -> list[DeviceInfo]:
    """The devices torch sees (the CPU first), as this adapter's."""
    return [{**row, "framework": NAME} for row in torch_devices.list_devices()]


def _trainer(spec: TrialSpec, workload: Workload) -> KerasTorchTrainer:
    import torch

    if spec.threads is not None:
        torch.set_num_threads(spec.threads)  # first: later ops size their pools from it
    from rigbench.frameworks.keras_torch.trainer import KerasTorchTrainer

    return KerasTorchTrainer(spec, workload)


def build(spec: TrialSpec, workload: Workload) -> KerasTorchTrainer:
    """Set torch's thread count, then build the trainer (see base.FrameworkAdapter)."""
    return _trainer(spec, workload)


def train(spec: TrialSpec, workload: Workload, data: LoadedData,
          on_epoch: Callable[[EpochRecord], None] | None = None) -> TrainRun:
    """Train on `data` (see frameworks/keras/training.train)."""
    from rigbench.frameworks.keras import training

    return training.train(_trainer, spec, workload, data, on_epoch)


def lr_find(spec: TrialSpec, workload: Workload, data: LoadedData) -> LrFindRun:
    """A learning-rate range test on `data` (see frameworks/keras/lr_range)."""
    from rigbench.frameworks.keras import lr_range

    return lr_range.lr_find(_trainer, spec, workload, data)


def count(workload: Workload, options: dict[str, Any]) -> tuple[int, float]:
    """(trainable parameters, training FLOPs per sample by FlopCounterMode); see flops.py."""
    from rigbench.frameworks.keras_torch import flops

    return flops.count(workload, options)


def calibrate_device(device: str, precisions: list[str], quick: bool = False, threads: int | None = None,
                     on_progress: Callable[[str], None] | None = None) -> Calibration:
    """The torch adapter's calibration of `device` (it measures the device, not Keras)."""
    return torch_adapter.calibrate_device(device, precisions, quick=quick, threads=threads, on_progress=on_progress)
