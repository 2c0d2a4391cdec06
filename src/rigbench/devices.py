"""This machine's compute devices as one list (the CPU, NVIDIA and AMD GPUs), built from
the framework-free discovery in hw/.

Used to show GPUs that exist even when no installed framework build can use them (say,
a CPU-only torch on a machine with an NVIDIA card). Which devices a framework can
actually use is the adapters' business, answered in a child process.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import psutil

from rigbench.hw.amd import list_amd_gpus
from rigbench.hw.cpu import cpu_identity
from rigbench.hw.nvml import cuda_visible_order, list_gpus, load_nvml


def host_devices(env: Mapping[str, str] = os.environ) -> list[dict[str, Any]]:
    """The CPU, then NVIDIA GPUs (NVML), then AMD GPUs (amdsmi, when importable).

    Every entry has id, kind, name and memory_bytes:

    - CPU: id "cpu", kind "cpu", memory_bytes = RAM, cores (logical), physical_cores.
    - NVIDIA: kind "cuda", nvml_index, uuid, driver, cuda_driver, visible. `id` is
      "cuda:N" as a framework in this environment numbers it: N is the position in
      CUDA_VISIBLE_DEVICES when that lists integers, else the NVML (PCI bus) index. A
      GPU hidden by CUDA_VISIBLE_DEVICES gets id "nvml:I" and visible False. (UUID
      entries in CUDA_VISIBLE_DEVICES are not resolved: then all GPUs show, NVML-numbered.)
    - AMD: kind "rocm", id "rocm:I" with I the amdsmi index (ROCm builds of torch call
      these cuda:N, in their own order; they are listed for information).
    """
    return [cpu_device()] + nvidia_devices(env) + amd_devices()


def cpu_device() -> dict[str, Any]:
    """The host CPU as one device."""
    return {
        "id": "cpu",
        "kind": "cpu",
        "name": cpu_identity()["model"],
        "memory_bytes": psutil.virtual_memory().total,
        "cores": psutil.cpu_count(logical=True),
        "physical_cores": psutil.cpu_count(logical=False),
    }


def nvidia_devices(env: Mapping[str, str] = os.environ, nvml: Any = None) -> list[dict[str, Any]]:
    """NVIDIA GPUs from NVML; [] without NVML. `nvml` replaces pynvml (tests)."""
    order = cuda_visible_order(env)
    devices = []
    for gpu in list_gpus(load_nvml(nvml)):
        index = gpu["index"]
        visible = order is None or index in order
        ordinal = index if order is None else (order.index(index) if visible else None)
        devices.append({
            "id": f"cuda:{ordinal}" if visible else f"nvml:{index}",
            "kind": "cuda",
            "name": gpu["name"],
            "memory_bytes": gpu["memory_bytes"],
            "nvml_index": index,
            "uuid": gpu.get("uuid"),
            "driver": gpu.get("driver"),
            "cuda_driver": gpu.get("cuda_driver"),
            "visible": visible,
        })
    return devices


def amd_devices(amdsmi: Any = None) -> list[dict[str, Any]]:
    """AMD GPUs from amdsmi; [] when it is not importable or finds none."""
    return [
        {"id": f"rocm:{g['index']}", "kind": "rocm", "name": g["name"],
         "memory_bytes": g["memory_bytes"], "driver": g.get("driver")}
        for g in list_amd_gpus(amdsmi)
    ]
