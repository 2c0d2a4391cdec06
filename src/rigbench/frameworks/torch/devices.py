"""What torch offers on this machine: its versions, its devices and the check that a device id
is one of them (the contract's `software`, `list_devices`; `check_device` for build). torch is
imported inside the functions, so the package can load this module without torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rigbench.errors import UsageError
from rigbench.hw.cpu import cpu_name

if TYPE_CHECKING:
    from rigbench.frameworks.base import DeviceInfo

#: The adapter's name (the package re-exports it as the contract's NAME).
NAME = "torch"


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

    return [_device("cpu", "cpu", cpu_name(), psutil.virtual_memory().total)]


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


def check_device(device: str) -> None:
    """UsageError listing the available device ids when `device` is not one of them."""
    known = [d["id"] for d in list_devices()]
    kind, _, index = device.partition(":")
    # A bare "cuda"/"xpu"/"dml" means device 0, as it does in torch.
    if device in known or (not index and f"{kind}:0" in known):
        return
    raise UsageError(f"device {device!r} is not available to torch here: choose from {', '.join(known)}")
