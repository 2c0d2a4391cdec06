"""The keras-jax adapter: the shared Keras 3 models (frameworks/keras/) on Keras' JAX backend,
trained with Keras' own step (`train_on_batch`) or, for the GAN, Keras' stateless step (the
contract: rigbench.frameworks.base.FrameworkAdapter). Beside the native JAX adapter it shows
what Keras costs on the same backend.

Devices, threads and out-of-memory errors are the JAX adapter's (frameworks/jax/devices.py,
oom.py); calibration is the JAX adapter's, since it measures the device, not Keras. keras and
jax are imported inside the functions: the environment selects Keras' backend (KERAS_BACKEND),
fixed when keras is first imported. Data parallel: Keras' own DataParallel over the processes
of jax.distributed (parallel.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rigbench.frameworks import jax as native
from rigbench.frameworks.jax.devices import pin_threads as prepare
from rigbench.frameworks.jax.oom import is_oom
from rigbench.frameworks.keras import backend_adapter

if TYPE_CHECKING:
    from rigbench.frameworks.base import CalibrationKernels, Collective, DeviceInfo
    from rigbench.frameworks.keras_jax.trainer import KerasJaxTrainer
    from rigbench.ranks import RankInfo
    from rigbench.spec import TrialSpec
    from rigbench.workloads import Workload

NAME = "keras-jax"

__all__ = ["NAME", "attention", "build", "calibration_kernels", "count", "data_parallel_refusal", "environment",
           "is_oom", "join", "list_devices", "prepare", "software"]


def environment(spec: TrialSpec) -> dict[str, str]:
    return backend_adapter.environment(native.environment, "jax", spec)


def software() -> dict[str, Any]:
    return backend_adapter.software(native.software, NAME, "jax")


def list_devices() -> list[DeviceInfo]:
    return backend_adapter.list_devices(native.list_devices, NAME)


def build(spec: TrialSpec, workload: Workload) -> KerasJaxTrainer:
    """Build the trainer (see base.FrameworkAdapter); `prepare` has pinned the threads."""
    from rigbench.frameworks.keras_jax.trainer import KerasJaxTrainer

    return KerasJaxTrainer(spec, workload)


def data_parallel_refusal(spec: TrialSpec) -> str | None:
    """Why keras-jax cannot run `spec` over processes, or None (optional beside `join`):
    runner/launchers.launcher_for asks before it starts any process, and the trial is
    `unsupported` with this reason."""
    if spec.train is not None:
        return ("keras-jax trains data-parallel on the speed protocol's batches (rigbench run, "
                "scaling, sweep); a real-data training run takes one process")
    return None


def join(spec: TrialSpec, rank: RankInfo) -> Collective:
    """Join the trial's jax.distributed group as the native JAX adapter does (base.
    DataParallelAdapter); `build` then trains under Keras' DataParallel (parallel.py). The
    launcher has refused the trials it cannot run (data_parallel_refusal)."""
    return native.join(spec, rank)


def attention(spec: TrialSpec, workload: Workload) -> str | None:
    return backend_adapter.attention("jax", spec, workload)


def count(workload: Workload, options: dict[str, Any]) -> tuple[int, float]:
    """(trainable parameters, training FLOPs per sample of the stateless step's jaxpr); see flops.py."""
    from rigbench.frameworks.keras_jax import flops

    return flops.count(workload, options)


def calibration_kernels(device: str) -> CalibrationKernels:
    """The JAX adapter's calibration kernels for `device` (it measures the device, not Keras)."""
    return native.calibration_kernels(device)
