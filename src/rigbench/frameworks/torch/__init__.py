"""The PyTorch adapter (the contract: rigbench.frameworks.base.FrameworkAdapter).

`torch` is imported inside the functions, not at module level, so that `installed()` can
answer without importing it; the heavy submodules (models, trainer, training, flops) import it
and are loaded on first use, in the child processes that run trials, probes and counts.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rigbench.frameworks.torch.devices import NAME, check_device, list_devices, software
from rigbench.frameworks.torch.oom import is_oom

if TYPE_CHECKING:
    from rigbench.data import LoadedData
    from rigbench.frameworks.base import Calibration
    from rigbench.frameworks.torch.lr_range import LrFindRun
    from rigbench.frameworks.torch.trainer import TorchTrainer
    from rigbench.frameworks.torch.training import TrainRun
    from rigbench.spec import EpochRecord, TrialSpec
    from rigbench.workloads import Workload

__all__ = ["NAME", "build", "calibrate_device", "count", "count_traffic", "environment", "installed",
           "is_oom", "list_devices", "lr_find", "software", "train"]


def installed() -> bool:
    """True if torch can be imported (checked without importing it)."""
    return importlib.util.find_spec("torch") is not None


def environment(spec: TrialSpec) -> dict[str, str]:
    """Thread pools sized before torch starts: OpenMP (torch's intra-op pool), MKL and
    OpenBLAS read these once, at import; `build` also calls torch.set_num_threads."""
    if spec.threads is None:
        return {}
    return {var: str(spec.threads) for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}


def build(spec: TrialSpec, workload: Workload) -> TorchTrainer:
    """Set the thread count, check the device, and build the trainer (see base.FrameworkAdapter)."""
    import torch

    if spec.threads is not None:
        torch.set_num_threads(spec.threads)  # first: later ops size their pools from it
    check_device(spec.device)
    from rigbench.frameworks.torch.trainer import TorchTrainer

    return TorchTrainer(spec, workload)


def train(spec: TrialSpec, workload: Workload, data: LoadedData,
          on_epoch: Callable[[EpochRecord], None] | None = None) -> TrainRun:
    """Set the thread count, check the device, and train on `data` (see training.train)."""
    import torch

    if spec.threads is not None:
        torch.set_num_threads(spec.threads)  # first: later ops size their pools from it
    check_device(spec.device)
    from rigbench.frameworks.torch import training

    return training.train(spec, workload, data, on_epoch)


def lr_find(spec: TrialSpec, workload: Workload, data: LoadedData) -> LrFindRun:
    """Set the thread count, check the device, and run a learning-rate range test on `data`
    (see lr_range.lr_find; the module is not named lr_find, which would shadow this function)."""
    import torch

    if spec.threads is not None:
        torch.set_num_threads(spec.threads)  # first: later ops size their pools from it
    check_device(spec.device)
    from rigbench.frameworks.torch import lr_range

    return lr_range.lr_find(spec, workload, data)


def count(workload: Workload, options: dict[str, Any]) -> tuple[int, float]:
    """(trainable parameters, training FLOPs per sample by FlopCounterMode), counted on the
    meta device; the FLOPs cross-check the workload's analytic figure (see flops.py)."""
    from rigbench.frameworks.torch import flops

    return flops.count(workload, options)


def count_traffic(workload: Workload, options: dict[str, Any]) -> tuple[float, float]:
    """Estimated (bytes per step, bytes per sample) read and written by a training step's
    forward and backward passes, counted on the meta device (see traffic.py)."""
    from rigbench.frameworks.torch import traffic

    return traffic.count_traffic(workload, options)


def calibrate_device(device: str, precisions: list[str], quick: bool = False, threads: int | None = None,
                     on_progress: Callable[[str], None] | None = None) -> Calibration:
    """Measured ceilings of `device` (see calibrate.calibrate). Not named `calibrate`: importing
    the submodule of that name would replace this function on the package."""
    from rigbench.frameworks.torch import calibrate

    return calibrate.calibrate(device, precisions, quick=quick, threads=threads, on_progress=on_progress)
