"""The PyTorch adapter (the contract: rigbench.frameworks.base.FrameworkAdapter).

`torch` is imported inside the functions, not at module level, so that the registry and
`environment()` answer without importing it; the heavy submodules (models, trainer, flops)
import it and are loaded on first use, in the child processes that run trials, probes and counts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rigbench.frameworks.torch.devices import NAME, check_device, list_devices, software
from rigbench.frameworks.torch.oom import is_oom

if TYPE_CHECKING:
    from rigbench.frameworks.base import CalibrationKernels, Collective
    from rigbench.frameworks.torch.trainer import TorchTrainer
    from rigbench.ranks import RankInfo
    from rigbench.spec import TrialSpec
    from rigbench.workloads import Workload

#: Imported once by a warm-start server, which forks each trial's process from there
#: (runner/launchers/warm_start.py); importing them starts no thread (the server checks).
#: torch._dynamo because building any torch.optim optimiser imports it (Optimizer.__init__ is
#: wrapped in torch._disable_dynamo): 1.1 s and 73 MiB on the dev VM, which every forked trial
#: paid again before it was preloaded here.
PRELOAD = ("rigbench.frameworks.torch.trainer", "torch._dynamo")
#: The revision of count_traffic's estimate, stored with each trial's (Metrics.bytes_estimate_revision):
#: 2 counts the trial's precision (bf16/fp16 autocast's 2-byte activations and casts) and the fused
#: attention kernel that runs (2026-11-27). Trials stored before it counted fp32 bytes with
#: attention unfused: a bf16 resnet's 17.4 FLOP/byte is 34.4 now. Raise it when the count changes.
TRAFFIC_REVISION = 2

__all__ = ["NAME", "PRELOAD", "TRAFFIC_REVISION", "attention", "build", "calibration_kernels", "compilation", "count", "count_traffic", "environment", "is_oom",
           "join", "list_devices", "prepare", "software"]


def environment(spec: TrialSpec) -> dict[str, str]:
    """Thread pools sized before torch starts: OpenMP (torch's intra-op pool), MKL and
    OpenBLAS read these once, at import; `prepare` also calls torch.set_num_threads."""
    if spec.threads is None:
        return {}
    return {var: str(spec.threads) for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}


def prepare(threads: int | None) -> None:
    """Size torch's intra-op pool once, before anything runs (later ops size their pools from it)."""
    if threads is not None:
        import torch

        torch.set_num_threads(threads)


def build(spec: TrialSpec, workload: Workload) -> TorchTrainer:
    """Check the device and build the trainer (see base.FrameworkAdapter)."""
    check_device(spec.device)
    from rigbench.frameworks.torch.trainer import TorchTrainer

    return TorchTrainer(spec, workload)


def join(spec: TrialSpec, rank: RankInfo) -> Collective:
    """Join the trial's process group (gloo on the CPU, NCCL on CUDA; base.DataParallelAdapter)."""
    check_device(spec.device)
    from rigbench.frameworks.torch.parallel import TorchCollective

    return TorchCollective(spec, rank)


def count(workload: Workload, options: dict[str, Any]) -> tuple[int, float]:
    """(trainable parameters, training FLOPs per sample by FlopCounterMode), counted on the
    meta device; the FLOPs cross-check the workload's analytic figure (see flops.py)."""
    from rigbench.frameworks.torch import flops

    return flops.count(workload, options)


def attention(spec: TrialSpec, workload: Workload) -> str | None:
    """The SDPA kernel a transformer workload runs on the trial's device (see transformers.py)."""
    from rigbench.workloads.flops import transformer_shape

    shape = transformer_shape(workload, spec.workload_options)
    if shape is None:
        return None
    from rigbench.frameworks.torch import transformers

    return transformers.attention(spec.device, spec.precision, shape)


def compilation(spec: TrialSpec) -> str | None:
    """What torch.compile did in this process once the trial's steps have run (graphs, graph
    breaks, CUDA graphs: compile_report.py); None for an eager trial."""
    if not spec.compiled:
        return None
    import torch

    from rigbench.frameworks.torch import compile_report

    on_cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
    return compile_report.describe(spec.compile, torch.cuda.current_device() if on_cuda else None)


def count_traffic(workload: Workload, options: dict[str, Any], precision: str = "fp32") -> tuple[float, float]:
    """Estimated (bytes per step, bytes per sample) read and written by a training step's
    forward and backward passes at `precision`, counted on fake tensors (see traffic.py)."""
    from rigbench.frameworks.torch import traffic

    return traffic.count_traffic(workload, options, precision)


def calibration_kernels(device: str) -> CalibrationKernels:
    """The primitives the shared calibration (frameworks/driver/calibration.py) measures
    `device` with (see calibrate.py); UsageError for a device torch does not have. Not named
    `calibrate`: importing the submodule of that name would replace it on the package."""
    from rigbench.frameworks.torch.calibrate import TorchKernels

    return TorchKernels(device)
