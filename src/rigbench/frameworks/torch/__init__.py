"""The PyTorch adapter (the contract: rigbench.frameworks.base.FrameworkAdapter).

`torch` is imported inside the functions, not at module level, so that `installed()` can
answer without importing it; the heavy submodules (models, trainer, training, flops) import it
and are loaded on first use, in the child processes that run trials, probes and counts.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rigbench.errors import UsageError

if TYPE_CHECKING:
    from rigbench.data import LoadedData
    from rigbench.frameworks.base import Calibration, DeviceInfo
    from rigbench.frameworks.torch.lr_range import LrFindRun
    from rigbench.frameworks.torch.trainer import TorchTrainer
    from rigbench.frameworks.torch.training import TrainRun
    from rigbench.spec import EpochRecord, TrialSpec
    from rigbench.workloads import Workload

NAME = "torch"

#: Substrings of RuntimeError messages that mean the allocator ran out of memory. The CPU
#: allocator under RLIMIT_AS says e.g. "[enforce fail at alloc_cpu.cpp:127] err == 0.
#: DefaultCPUAllocator: can't allocate memory: you tried to allocate 2147483648 bytes."
_OOM_TEXTS = ("out of memory", "can't allocate memory", "defaultcpuallocator")


def installed() -> bool:
    """True if torch can be imported (checked without importing it)."""
    return importlib.util.find_spec("torch") is not None


def environment(spec: TrialSpec) -> dict[str, str]:
    """Thread pools sized before torch starts: OpenMP (torch's intra-op pool), MKL and
    OpenBLAS read these once, at import; `build` also calls torch.set_num_threads."""
    if spec.threads is None:
        return {}
    return {var: str(spec.threads) for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}


def software() -> dict[str, Any]:
    """Versions that decide whether two torch results are comparable."""
    import torch

    cudnn = torch.backends.cudnn
    return {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "hip": torch.version.hip,
        "cudnn": cudnn.version() if cudnn.is_available() else None,
        "mkldnn": torch.backends.mkldnn.is_available(),
        "num_threads": torch.get_num_threads(),
    }


def _device(id_: str, kind: str, name: str, memory_bytes: int | None) -> DeviceInfo:
    return {"id": id_, "kind": kind, "name": name, "memory_bytes": memory_bytes, "framework": NAME}


def _cpu_devices() -> list[DeviceInfo]:
    import psutil

    from rigbench.frameworks.torch.trainer import _cpu_name

    return [_device("cpu", "cpu", _cpu_name(), psutil.virtual_memory().total)]


def _cuda_devices() -> list[DeviceInfo]:
    """CUDA devices, or ROCm devices on a HIP build (torch names both "cuda")."""
    import torch

    if not torch.cuda.is_available():
        return []
    kind = "rocm" if torch.version.hip else "cuda"
    found = []
    for i in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(i)
        found.append(_device(f"cuda:{i}", kind, props.name, props.total_memory))
    return found


def _mps_devices() -> list[DeviceInfo]:
    import torch

    if not torch.backends.mps.is_available():
        return []
    from rigbench.frameworks.torch.trainer import device_name

    memory = getattr(torch.mps, "recommended_max_memory", lambda: None)()  # unified memory
    return [_device("mps", "mps", device_name(torch.device("mps")), memory)]


def _xpu_devices() -> list[DeviceInfo]:
    import torch

    if not (hasattr(torch, "xpu") and torch.xpu.is_available()):
        return []
    found = []
    for i in range(torch.xpu.device_count()):
        props = torch.xpu.get_device_properties(i)
        found.append(_device(f"xpu:{i}", "xpu", props.name, props.total_memory))
    return found


def _dml_devices() -> list[DeviceInfo]:
    try:
        import torch_directml
    except ImportError:
        return []
    count = torch_directml.device_count()
    return [_device(f"dml:{i}", "dml", torch_directml.device_name(i), None) for i in range(count)]


def list_devices() -> list[DeviceInfo]:
    """Devices torch can use here: the CPU, then CUDA/ROCm, MPS, XPU and DirectML devices."""
    return _cpu_devices() + _cuda_devices() + _mps_devices() + _xpu_devices() + _dml_devices()


def _check_device(device: str) -> None:
    """UsageError listing the available device ids when `device` is not one of them."""
    known = [d["id"] for d in list_devices()]
    kind, _, index = device.partition(":")
    # A bare "cuda"/"xpu"/"dml" means device 0, as it does in torch.
    if device in known or (not index and f"{kind}:0" in known):
        return
    raise UsageError(f"device {device!r} is not available to torch here: choose from {', '.join(known)}")


def build(spec: TrialSpec, workload: Workload) -> TorchTrainer:
    """Set the thread count, check the device, and build the trainer (see base.FrameworkAdapter)."""
    import torch

    if spec.threads is not None:
        torch.set_num_threads(spec.threads)  # first: later ops size their pools from it
    _check_device(spec.device)
    from rigbench.frameworks.torch.trainer import TorchTrainer

    return TorchTrainer(spec, workload)


def train(spec: TrialSpec, workload: Workload, data: LoadedData,
          on_epoch: Callable[[EpochRecord], None] | None = None) -> TrainRun:
    """Set the thread count, check the device, and train on `data` (see training.train)."""
    import torch

    if spec.threads is not None:
        torch.set_num_threads(spec.threads)  # first: later ops size their pools from it
    _check_device(spec.device)
    from rigbench.frameworks.torch import training

    return training.train(spec, workload, data, on_epoch)


def lr_find(spec: TrialSpec, workload: Workload, data: LoadedData) -> LrFindRun:
    """Set the thread count, check the device, and run a learning-rate range test on `data`
    (see lr_range.lr_find; the module is not named lr_find, which would shadow this function)."""
    import torch

    if spec.threads is not None:
        torch.set_num_threads(spec.threads)  # first: later ops size their pools from it
    _check_device(spec.device)
    from rigbench.frameworks.torch import lr_range

    return lr_range.lr_find(spec, workload, data)


def is_oom(exc: BaseException) -> bool:
    """True for torch's out-of-memory errors, MemoryError and allocator-failure RuntimeErrors."""
    import torch

    oom_types: tuple[type[BaseException], ...] = (MemoryError,)
    for owner, attr in ((torch, "OutOfMemoryError"), (torch.cuda, "OutOfMemoryError")):
        if hasattr(owner, attr):
            oom_types += (getattr(owner, attr),)
    if isinstance(exc, oom_types):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and any(t in text for t in _OOM_TEXTS)


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
