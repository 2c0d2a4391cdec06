"""NVIDIA GPUs through NVML (the `nvidia-ml-py` package, imported as `pynvml`): loading the
library once per process, listing the GPUs, and mapping `cuda:N` to NVML indices.

NVML is optional: every function here degrades to "no GPU information" (None, {} or [])
when the package is missing, the driver library cannot be loaded, or a query is not
supported by the device. Nothing here imports a framework. Sampling a GPU while a trial
runs is the trackers' business (trackers/nvml.py).

Functions take the NVML module as an argument so tests can pass a fake object with the
same function names as `pynvml` (nvmlInit, nvmlDeviceGetHandleByIndex, ..., NVMLError).
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Mapping
from typing import Any

#: What installs pynvml (pyproject.toml's `nvidia` extra): a user with an NVIDIA GPU who
#: installed `rigbench[torch]` alone gets no utilisation, memory, power or energy.
INSTALL = "pip install 'rigbench[nvidia]'"

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


def installed() -> bool:
    """True if pynvml can be imported (says nothing of a driver); does not import it."""
    try:
        return importlib.util.find_spec("pynvml") is not None
    except (ImportError, ValueError):  # a broken or blocked install counts as absent
        return False


def _init(nvml: Any) -> Any | None:
    try:
        nvml.nvmlInit()
    except Exception:  # NVMLError (no driver / library not found) or OSError from dlopen
        return None
    return nvml


def nvml_error(nvml: Any) -> type[BaseException]:
    """The module's NVMLError class (Exception if the module lacks one)."""
    err = getattr(nvml, "NVMLError", Exception)
    return err if isinstance(err, type) and issubclass(err, BaseException) else Exception


def query(err: type[BaseException], fn: Any) -> Any:
    """`fn()`, or None when the query is not supported (NVML error or an unexpected shape)."""
    try:
        return fn()
    except (err, AttributeError, TypeError, ValueError):
        return None


def text(value: Any) -> str:
    """NVML strings are bytes in old pynvml releases and str in new ones."""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def list_gpus(nvml: Any) -> list[dict[str, Any]]:
    """NVIDIA GPUs in NVML index order (PCI bus order), [] when `nvml` is None or fails.

    Each entry: index, name, memory_bytes (total), uuid (None if unreadable), driver
    (driver version string) and cuda_driver (the highest CUDA version the driver
    supports, e.g. "12.4"; None if unreadable).
    """
    if nvml is None:
        return []
    err = nvml_error(nvml)
    try:
        count = int(nvml.nvmlDeviceGetCount())
    except (err, AttributeError):
        return []
    versions = driver_versions(nvml)
    gpus = []
    for index in range(count):
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            name = text(nvml.nvmlDeviceGetName(handle))
        except (err, AttributeError):
            continue  # e.g. a GPU that fell off the bus: report the others
        memory = query(err, lambda h=handle: int(nvml.nvmlDeviceGetMemoryInfo(h).total))
        uuid = query(err, lambda h=handle: text(nvml.nvmlDeviceGetUUID(h)))
        gpus.append({"index": index, "name": name, "memory_bytes": memory, "uuid": uuid, **versions})
    return gpus


def driver_versions(nvml: Any) -> dict[str, str | None]:
    """{"driver": "550.54.15", "cuda_driver": "12.4"}; values None when unreadable."""
    err = nvml_error(nvml)
    driver = query(err, lambda: text(nvml.nvmlSystemGetDriverVersion()))
    cuda = query(err, lambda: _cuda_version_text(int(nvml.nvmlSystemGetCudaDriverVersion())))
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
