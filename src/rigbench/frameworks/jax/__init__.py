"""The JAX adapter, Flax NNX models with optax optimisers (the contract:
rigbench.frameworks.base.FrameworkAdapter).

`jax` is imported inside the functions, not at module level, so that the registry and
`environment()` answer without importing it (environment must run before jax starts); the
submodules that import jax (models, step, trainer, calibrate, flops) load on first use, in the
child processes that run trials, probes and counts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rigbench.frameworks.jax.devices import NAME, environment, list_devices, software
from rigbench.frameworks.jax.devices import pin_threads as prepare
from rigbench.frameworks.jax.oom import is_oom

if TYPE_CHECKING:
    from rigbench.frameworks.base import Calibration
    from rigbench.frameworks.jax.trainer import JaxTrainer
    from rigbench.spec import TrialSpec
    from rigbench.workloads import Workload

__all__ = ["NAME", "build", "calibrate_device", "count", "environment", "is_oom", "list_devices", "prepare",
           "software"]


def build(spec: TrialSpec, workload: Workload) -> JaxTrainer:
    """Build the trainer (see base.FrameworkAdapter); `prepare` has pinned the threads."""
    from rigbench.frameworks.jax.trainer import JaxTrainer

    return JaxTrainer(spec, workload)


def count(workload: Workload, options: dict[str, Any]) -> tuple[int, float]:
    """(trainable parameters, training FLOPs per sample of the step's jaxpr); see flops.py."""
    from rigbench.frameworks.jax import flops

    return flops.count(workload, options)


def calibrate_device(device: str, precisions: list[str], quick: bool = False, threads: int | None = None,
                     on_progress: Callable[[str], None] | None = None) -> Calibration:
    """Measured ceilings of `device` (see calibrate.calibrate)."""
    from rigbench.frameworks.jax import calibrate

    return calibrate.calibrate(device, precisions, quick=quick, threads=threads, on_progress=on_progress)
