"""The TensorFlow adapter: the shared Keras 3 models (frameworks/keras/) on the TensorFlow
backend, trained with a tf.GradientTape step under tf.function (XLA with --compile) (the
contract: rigbench.frameworks.base.FrameworkAdapter).

`tensorflow` and `keras` are imported inside the functions, not at module level, so that the
registry and `environment()` answer without them (the environment selects Keras' backend and
sizes TensorFlow's thread pools, which are fixed when each starts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rigbench.frameworks.keras import backend_adapter
from rigbench.frameworks.tensorflow import cluster, devices
from rigbench.frameworks.tensorflow.devices import NAME, list_devices, software
from rigbench.frameworks.tensorflow.oom import is_oom

if TYPE_CHECKING:
    from rigbench.frameworks.base import CalibrationKernels, Collective
    from rigbench.frameworks.tensorflow.trainer import TfTrainer
    from rigbench.ranks import RankInfo
    from rigbench.spec import TrialSpec
    from rigbench.workloads import Workload

__all__ = ["NAME", "attention", "build", "calibration_kernels", "count", "environment", "is_oom", "join", "list_devices",
           "prepare", "software"]


def environment(spec: TrialSpec) -> dict[str, str]:
    """devices.environment, and in a data-parallel rank its one visible device
    (cluster.rank_environment), all read when TensorFlow starts."""
    return {**devices.environment(spec), **cluster.rank_environment(spec.device)}


def prepare(threads: int | None) -> None:
    """Thread pools sized (devices.set_threads)."""
    devices.set_threads(threads)


def join(spec: TrialSpec, rank: RankInfo) -> Collective:
    """This rank's worker in the trial's MultiWorkerMirroredStrategy, created here: the runner
    joins a rank before anything can start TensorFlow's runtime, and the strategy must exist
    before it starts (base.DataParallelAdapter); `build` then trains under it (parallel.py)."""
    from rigbench.frameworks.tensorflow import parallel

    strategy = parallel.start(cluster.tf_config(rank, cluster.meet(rank)))
    if parallel.world() != (rank.rank, rank.world_size):
        raise RuntimeError(f"the strategy's worker {parallel.world()} is not rank {rank.rank} of {rank.world_size}")
    return parallel.TfCollective(strategy)


def build(spec: TrialSpec, workload: Workload) -> TfTrainer:
    """Build the trainer (see base.FrameworkAdapter); `prepare` has sized the thread pools."""
    from rigbench.frameworks.tensorflow.trainer import TfTrainer

    return TfTrainer(spec, workload)


def attention(spec: TrialSpec, workload: Workload) -> str | None:
    return backend_adapter.attention("tensorflow", spec, workload)


def count(workload: Workload, options: dict[str, Any]) -> tuple[int, float]:
    """(trainable parameters, training FLOPs per sample of the step's HLO); see flops.py."""
    from rigbench.frameworks.tensorflow import flops

    return flops.count(workload, options)


def calibration_kernels(device: str) -> CalibrationKernels:
    """The primitives the shared calibration (frameworks/driver/calibration.py) measures
    `device` with (see calibrate.py); UsageError for a device tensorflow does not have. Not named
    `calibrate`: importing the submodule of that name would replace it on the package."""
    from rigbench.frameworks.tensorflow.calibrate import TfKernels

    return TfKernels(device)
