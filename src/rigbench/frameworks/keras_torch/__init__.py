"""The keras-torch adapter: the shared Keras 3 models (frameworks/keras/) on Keras' torch
backend, trained with Keras' own step (`train_on_batch`; --compile is Keras' jit_compile,
torch.compile on this backend) or, for the GAN, a torch-autograd step (the contract:
rigbench.frameworks.base.FrameworkAdapter). Beside the native torch adapter it shows what Keras
costs on the same backend.

Devices, threads and out-of-memory errors are the torch adapter's (frameworks/torch/devices.py,
oom.py); calibration is the torch adapter's, since it measures the device, not Keras. keras and
torch are imported inside the functions: the environment selects Keras' backend
(KERAS_BACKEND), fixed when keras is first imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rigbench.frameworks import torch as native
from rigbench.frameworks.keras import backend_adapter
from rigbench.frameworks.torch import prepare
from rigbench.frameworks.torch.oom import is_oom

if TYPE_CHECKING:
    from rigbench.frameworks.base import CalibrationKernels, DeviceInfo
    from rigbench.frameworks.keras_torch.trainer import KerasTorchTrainer
    from rigbench.spec import TrialSpec
    from rigbench.workloads import Workload

NAME = "keras-torch"
#: Why this adapter has no `join` (runner/launchers stores it as the `unsupported` reason):
#: keras 3.15 ships a distribution backend for JAX alone (keras/src/backend/jax/distribution_lib.py).
NO_DATA_PARALLEL = ("Keras' distribution API (keras.distribution.DataParallel) runs on the JAX backend only: "
                    "use keras-jax, or torch")

__all__ = ["NAME", "attention", "build", "calibration_kernels", "count", "environment", "is_oom", "list_devices", "prepare",
           "software"]


def environment(spec: TrialSpec) -> dict[str, str]:
    return backend_adapter.environment(native.environment, "torch", spec)


def software() -> dict[str, Any]:
    return backend_adapter.software(native.software, NAME, "torch")


def list_devices() -> list[DeviceInfo]:
    return backend_adapter.list_devices(native.list_devices, NAME)


def build(spec: TrialSpec, workload: Workload) -> KerasTorchTrainer:
    """Build the trainer (see base.FrameworkAdapter); `prepare` has sized torch's thread pool."""
    from rigbench.frameworks.keras_torch.trainer import KerasTorchTrainer

    return KerasTorchTrainer(spec, workload)


def attention(spec: TrialSpec, workload: Workload) -> str | None:
    return backend_adapter.attention("torch", spec, workload)


def count(workload: Workload, options: dict[str, Any]) -> tuple[int, float]:
    """(trainable parameters, training FLOPs per sample by FlopCounterMode); see flops.py."""
    from rigbench.frameworks.keras_torch import flops

    return flops.count(workload, options)


def calibration_kernels(device: str) -> CalibrationKernels:
    """The torch adapter's calibration kernels for `device` (it measures the device, not Keras)."""
    return native.calibration_kernels(device)
