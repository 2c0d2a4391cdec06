"""The TensorFlow adapter: the shared Keras 3 models (frameworks/keras/) on the TensorFlow
backend, trained with a tf.GradientTape step under tf.function (XLA with --compile) (the
contract: rigbench.frameworks.base.FrameworkAdapter).

`tensorflow` and `keras` are imported inside the functions, not at module level, so that
`installed()` and `environment()` answer without them (the environment selects Keras' backend
and sizes TensorFlow's thread pools, which are fixed when each starts).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rigbench.frameworks.tensorflow.devices import NAME, environment, list_devices, set_threads, software
from rigbench.frameworks.tensorflow.oom import is_oom

if TYPE_CHECKING:
    from rigbench.data import LoadedData
    from rigbench.frameworks.base import Calibration
    from rigbench.frameworks.keras.lr_range import LrFindRun
    from rigbench.frameworks.keras.training import TrainRun
    from rigbench.frameworks.tensorflow.trainer import TfTrainer
    from rigbench.spec import EpochRecord, TrialSpec
    from rigbench.workloads import Workload

__all__ = ["NAME", "build", "calibrate_device", "count", "environment", "installed", "is_oom", "list_devices",
           "lr_find", "software", "train"]


def installed() -> bool:
    """True if tensorflow and keras can be imported (checked without importing them)."""
    return all(importlib.util.find_spec(name) is not None for name in ("tensorflow", "keras"))


def build(spec: TrialSpec, workload: Workload) -> TfTrainer:
    """Size the thread pools, then build the trainer (see base.FrameworkAdapter)."""
    set_threads(spec.threads)
    from rigbench.frameworks.tensorflow.trainer import TfTrainer

    return TfTrainer(spec, workload)


def train(spec: TrialSpec, workload: Workload, data: LoadedData,
          on_epoch: Callable[[EpochRecord], None] | None = None) -> TrainRun:
    """Size the thread pools, then train on `data` (see frameworks/keras/training.train)."""
    set_threads(spec.threads)
    from rigbench.frameworks.keras import training
    from rigbench.frameworks.tensorflow.trainer import TfTrainer

    return training.train(TfTrainer, spec, workload, data, on_epoch)


def lr_find(spec: TrialSpec, workload: Workload, data: LoadedData) -> LrFindRun:
    """Size the thread pools, then run a learning-rate range test (see frameworks/keras/lr_range)."""
    set_threads(spec.threads)
    from rigbench.frameworks.keras import lr_range
    from rigbench.frameworks.tensorflow.trainer import TfTrainer

    return lr_range.lr_find(TfTrainer, spec, workload, data)


def count(workload: Workload, options: dict[str, Any]) -> tuple[int, float]:
    """(trainable parameters, training FLOPs per sample of the step's HLO); see flops.py."""
    from rigbench.frameworks.tensorflow import flops

    return flops.count(workload, options)


def calibrate_device(device: str, precisions: list[str], quick: bool = False, threads: int | None = None,
                     on_progress: Callable[[str], None] | None = None) -> Calibration:
    """Measured ceilings of `device` (see calibrate.calibrate)."""
    from rigbench.frameworks.tensorflow import calibrate

    return calibrate.calibrate(device, precisions, quick=quick, threads=threads, on_progress=on_progress)
