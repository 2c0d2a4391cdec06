"""The JAX adapter, Flax NNX models with optax optimisers (the contract:
rigbench.frameworks.base.FrameworkAdapter).

`jax` is imported inside the functions, not at module level, so that the registry and
`environment()` answer without importing it (environment must run before jax starts); the
submodules that import jax (models, step, trainer, calibrate, flops) load on first use, in the
child processes that run trials, probes and counts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rigbench.frameworks.jax.devices import NAME, environment, list_devices, software
from rigbench.frameworks.jax.devices import pin_threads as prepare
from rigbench.frameworks.jax.oom import is_oom

if TYPE_CHECKING:
    from rigbench.frameworks.base import CalibrationKernels, Collective
    from rigbench.frameworks.jax.trainer import JaxTrainer
    from rigbench.ranks import RankInfo
    from rigbench.spec import TrialSpec
    from rigbench.workloads import Workload

#: Imported once by a warm-start server, which forks each trial's process from there
#: (runner/launchers/warm_start.py); importing it starts no thread (the server checks).
PRELOAD = ("rigbench.frameworks.jax.trainer",)

__all__ = ["NAME", "PRELOAD", "attention", "build", "calibration_kernels", "count", "environment", "is_oom", "join", "list_devices",
           "prepare", "software"]


def build(spec: TrialSpec, workload: Workload) -> JaxTrainer:
    """Build the trainer (see base.FrameworkAdapter); `prepare` has pinned the threads."""
    from rigbench.frameworks.jax.trainer import JaxTrainer

    return JaxTrainer(spec, workload)


def join(spec: TrialSpec, rank: RankInfo) -> Collective:
    """Join the trial's jax.distributed group as `rank` (base.DataParallelAdapter): gloo
    collectives between CPU processes, one GPU per rank; `build` then trains data-parallel
    (see parallel.py)."""
    from rigbench.frameworks.jax.parallel import JaxCollective

    return JaxCollective(spec, rank)


def attention(spec: TrialSpec, workload: Workload) -> str | None:
    """The attention kernel a transformer workload runs on the trial's device at its precision
    (see transformers.py; the trainer sets the same one)."""
    from rigbench.workloads.flops import transformer_shape

    shape = transformer_shape(workload, spec.workload_options)
    if shape is None:
        return None
    from rigbench.frameworks.jax import transformers
    from rigbench.frameworks.jax.trainer import trial_device

    return transformers.KERNEL_PREFIX + str(transformers.attention_kernel(trial_device(spec), spec.precision, shape))


def count(workload: Workload, options: dict[str, Any]) -> tuple[int, float]:
    """(trainable parameters, training FLOPs per sample of the step's jaxpr); see flops.py."""
    from rigbench.frameworks.jax import flops

    return flops.count(workload, options)


def calibration_kernels(device: str) -> CalibrationKernels:
    """The primitives the shared calibration (frameworks/driver/calibration.py) measures
    `device` with (see calibrate.py); UsageError for a device jax does not have. Not named
    `calibrate`: importing the submodule of that name would replace it on the package."""
    from rigbench.frameworks.jax.calibrate import JaxKernels

    return JaxKernels(device)
