"""A thin, failure-tolerant wrapper over NVML (the `nvidia-ml-py` package, imported as `pynvml`).

NVML is optional: every function here degrades to "no GPU information" (None, {} or [])
when the package is missing, the driver library cannot be loaded, or a query is not
supported by the device. Nothing here imports a framework.

Functions take the NVML module as an argument so tests can pass a fake object with the
same function names as `pynvml` (nvmlInit, nvmlDeviceGetHandleByIndex, ..., NVMLError).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Collection, Mapping
from typing import Any

_lock = threading.Lock()
_UNSET = object()
#: The initialised real pynvml module, None when it failed, _UNSET before the first try.
_real_nvml: Any = _UNSET


def load_nvml(nvml: Any = None) -> Any | None:
    """Return an initialised NVML module, or None when NVML is unavailable.

    With `nvml=None` the real `pynvml` is imported lazily and initialised once per
    process (the result, success or failure, is cached: NVML does not appear mid-run).
    A module passed in (a test fake) is initialised on every call and not cached.
    """
    if nvml is not None:
        return _init(nvml)
    global _real_nvml
    with _lock:
        if _real_nvml is _UNSET:
            try:
                import pynvml  # optional dependency: nvidia-ml-py
            except Exception:  # ImportError, or a broken install raising anything else
                _real_nvml = None
            else:
                _real_nvml = _init(pynvml)
        return _real_nvml


def _init(nvml: Any) -> Any | None:
    try:
        nvml.nvmlInit()
    except Exception:  # NVMLError (no driver / library not found) or OSError from dlopen
        return None
    return nvml


def _nvml_error(nvml: Any) -> type[BaseException]:
    """The module's NVMLError class (Exception if the module lacks one)."""
    err = getattr(nvml, "NVMLError", Exception)
    return err if isinstance(err, type) and issubclass(err, BaseException) else Exception


def _text(value: Any) -> str:
    """NVML strings are bytes in old pynvml releases and str in new ones."""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def gpu_sample(nvml: Any, handle: Any, pid: int | Collection[int]) -> dict[str, float | None]:
    """One reading of a GPU for the process(es) `pid`.

    Keys (all present; a value is None when the device does not support the query):

    - `gpu_util_pct`: percent of the driver's last sample period (1/6 s to 1 s depending
      on the GPU) in which at least one kernel ran, device-wide.
    - `gpu_mem_device_bytes`: memory used on the device by everything.
    - `gpu_mem_bytes`: memory used by `pid` (summed when several pids are given), from
      nvmlDeviceGetComputeRunningProcesses. It falls back to `gpu_mem_device_bytes` when
      per-process information is unavailable: the query raises, the driver reports no
      per-process figure (usedGpuMemory None, e.g. Windows WDDM), or the device runs
      compute processes but none has our pid - which is what happens inside a container,
      where NVML reports host pids. An empty process list means 0 bytes (no context yet).
    - `gpu_mem_is_process`: 1.0 when `gpu_mem_bytes` is per-process, 0.0 when it is the
      device-wide fallback, None when neither was readable.
    - `gpu_power_w`: board power draw in watts.
    """
    pids = {pid} if isinstance(pid, int) else set(pid)
    err = _nvml_error(nvml)
    util = _query(err, lambda: float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu))
    device_used = _query(err, lambda: float(nvml.nvmlDeviceGetMemoryInfo(handle).used))
    power = _query(err, lambda: nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0)
    proc_mem = _process_memory(nvml, handle, pids, err)
    if proc_mem is not None:
        mem, is_process = proc_mem, 1.0
    else:
        mem, is_process = device_used, (None if device_used is None else 0.0)
    return {
        "gpu_util_pct": util,
        "gpu_mem_bytes": mem,
        "gpu_mem_device_bytes": device_used,
        "gpu_mem_is_process": is_process,
        "gpu_power_w": power,
    }


def _query(err: type[BaseException], fn: Any) -> float | None:
    try:
        return fn()
    except (err, AttributeError, TypeError, ValueError):
        return None


def _process_memory(nvml: Any, handle: Any, pids: set[int], err: type[BaseException]) -> float | None:
    """Bytes used by `pids` on the device, or None when per-process info is unavailable."""
    try:
        procs = list(nvml.nvmlDeviceGetComputeRunningProcesses(handle))
    except (err, AttributeError):
        return None
    if not procs:
        return 0.0
    ours = [p for p in procs if getattr(p, "pid", None) in pids]
    if not ours:
        return None  # pid namespace mismatch (container): our pid is invisible to NVML
    used = [getattr(p, "usedGpuMemory", None) for p in ours]
    if any(u is None for u in used):
        return None
    return float(sum(used))


def list_gpus(nvml: Any) -> list[dict[str, Any]]:
    """NVIDIA GPUs in NVML index order (PCI bus order), [] when `nvml` is None or fails.

    Each entry: index, name, memory_bytes (total), uuid (None if unreadable), driver
    (driver version string) and cuda_driver (the highest CUDA version the driver
    supports, e.g. "12.4"; None if unreadable).
    """
    if nvml is None:
        return []
    err = _nvml_error(nvml)
    try:
        count = int(nvml.nvmlDeviceGetCount())
    except (err, AttributeError):
        return []
    versions = driver_versions(nvml)
    gpus = []
    for index in range(count):
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            name = _text(nvml.nvmlDeviceGetName(handle))
        except (err, AttributeError):
            continue  # e.g. a GPU that fell off the bus: report the others
        memory = _query(err, lambda: int(nvml.nvmlDeviceGetMemoryInfo(handle).total))
        uuid = _query(err, lambda: _text(nvml.nvmlDeviceGetUUID(handle)))
        gpus.append({"index": index, "name": name, "memory_bytes": memory, "uuid": uuid, **versions})
    return gpus


def driver_versions(nvml: Any) -> dict[str, str | None]:
    """{"driver": "550.54.15", "cuda_driver": "12.4"}; values None when unreadable."""
    err = _nvml_error(nvml)
    driver = _query(err, lambda: _text(nvml.nvmlSystemGetDriverVersion()))
    cuda = _query(err, lambda: _cuda_version_text(int(nvml.nvmlSystemGetCudaDriverVersion())))
    return {"driver": driver, "cuda_driver": cuda}


def _cuda_version_text(version: int) -> str:
    """NVML encodes CUDA versions as 1000 * major + 10 * minor (12040 -> "12.4")."""
    return f"{version // 1000}.{version % 1000 // 10}"


def cuda_visible_order(env: Mapping[str, str] = os.environ) -> list[int] | None:
    """NVML indices in `cuda:N` order as CUDA_VISIBLE_DEVICES lists them.

    None when the variable is unset or names devices by UUID / MIG id (the mapping is then
    unknown here; callers treat every GPU as visible in NVML order). Like CUDA, the list is
    read up to its first invalid entry, so "" and "-1" give [] (no GPU visible).
    """
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return None
    entries = [e.strip() for e in visible.split(",")]
    if entries[0] and not _is_int(entries[0]):
        return None
    order: list[int] = []
    for entry in entries:
        if not _is_int(entry) or int(entry) < 0:
            break
        order.append(int(entry))
    return order


def nvml_index_for_cuda_device(n: int, env: Mapping[str, str] = os.environ) -> int:
    """The NVML index of the GPU a framework calls `cuda:n`.

    Assumes CUDA_DEVICE_ORDER=PCI_BUS_ID (the runner sets it in the trial's process), so
    without CUDA_VISIBLE_DEVICES `cuda:n` is NVML index n. When CUDA_VISIBLE_DEVICES lists
    integers, `cuda:n` is the n-th listed one (see cuda_visible_order). When it names
    devices by UUID or MIG id, n is returned unchanged. ValueError when `cuda:n` does not
    exist under the setting (e.g. CUDA_VISIBLE_DEVICES="" or fewer than n + 1 entries).
    """
    if n < 0:
        raise ValueError(f"negative CUDA device index {n}")
    order = cuda_visible_order(env)
    if order is None:
        return n
    if n >= len(order):
        raise ValueError(f"cuda:{n} is not visible with "
                         f"CUDA_VISIBLE_DEVICES={env.get('CUDA_VISIBLE_DEVICES')!r}")
    return order[n]


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True
