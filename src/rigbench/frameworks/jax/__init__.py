"""The JAX adapter, Flax NNX models with optax optimisers (the contract:
rigbench.frameworks.base.FrameworkAdapter).

`jax` is imported inside the functions, not at module level, so that `installed()` and
`environment()` answer without importing it (environment must run before jax starts); the
submodules that import jax (models, step, trainer, training, lr_range, calibrate, flops) load
on first use, in the child processes that run trials, probes and counts.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rigbench.frameworks.jax.devices import NAME, environment, list_devices, pin_threads, software
from rigbench.frameworks.jax.oom import is_oom

if TYPE_CHECKING:
    from rigbench.data import LoadedData
    from rigbench.frameworks.base import Calibration
    from rigbench.frameworks.jax.lr_range import LrFindRun
    from rigbench.frameworks.jax.trainer import JaxTrainer
    from rigbench.frameworks.jax.training import TrainRun
    from rigbench.spec import EpochRecord, TrialSpec
    from rigbench.workloads import Workload

__all__ = ["NAME", "build", "calibrate_device", "count", "environment", "installed", "is_oom", "list_devices",
           "lr_find", "software", "train"]


def installed() -> bool:
    """True if jax, flax and optax can be imported (checked without importing them)."""
    return all(importlib.util.find_spec(name) is not None for name in ("jax", "flax", "optax"))


def build(spec: TrialSpec, workload: Workload) -> JaxTrainer:
    """Pin the threads, then build the trainer (see base.FrameworkAdapter)."""
    pin_threads(spec.threads)  # first: XLA's CPU client sizes its pool when it starts
    from rigbench.frameworks.jax.trainer import JaxTrainer

    return JaxTrainer(spec, workload)


def train(spec: TrialSpec, workload: Workload, data: LoadedData,
          on_epoch: Callable[[EpochRecord], None] | None = None) -> TrainRun:
    """Pin the threads, then train on `data` (see training.train)."""
    pin_threads(spec.threads)
    from rigbench.frameworks.jax import training

    return training.train(spec, workload, data, on_epoch)


def lr_find(spec: TrialSpec, workload: Workload, data: LoadedData) -> LrFindRun:
    """Pin the threads, then run a learning-rate range test on `data` (see lr_range.lr_find)."""
    pin_threads(spec.threads)
    from rigbench.frameworks.jax import lr_range

    return lr_range.lr_find(spec, workload, data)


def count(workload: Workload, options: dict[str, Any]) -> tuple[int, float]:
    """(trainable parameters, training FLOPs per sample of the step's jaxpr); see flops.py."""
    from rigbench.frameworks.jax import flops

    return flops.count(workload, options)


def calibrate_device(device: str, precisions: list[str], quick: bool = False, threads: int | None = None,
                     on_progress: Callable[[str], None] | None = None) -> Calibration:
    """Measured ceilings of `device` (see calibrate.calibrate)."""
    from rigbench.frameworks.jax import calibrate

    return calibrate.calibrate(device, precisions, quick=quick, threads=threads, on_progress=on_progress)
