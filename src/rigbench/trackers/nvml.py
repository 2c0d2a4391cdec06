"""GPU readings while a trial runs, through NVML (hw/nvml.py loads the library and finds the
GPUs). Every reading degrades to None when the device does not support the query."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from rigbench.hw.nvml import INSTALL, installed, load_nvml, nvml_error, query

__all__ = ["INSTALL", "OthersCompute", "gpu_sample", "installed", "load_nvml"]  # the sampler opens NVML through this module


def gpu_sample(nvml: Any, handle: Any, pid: int | Collection[int],
               others: OthersCompute | None = None) -> dict[str, float | None]:
    """One reading of a GPU for the process(es) `pid` (`others`: the reader of other
    processes' compute on the device, which keeps the time of its last reading).

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
    - `gpu_other_procs`: how many other processes have a context on the device, from the same
      process list (a tenant sharing the GPU; it may be idle: the list says who holds memory,
      not who computes). None where the list cannot tell ours from theirs: the query raises, or
      our pid is not in a non-empty list (a container's pid namespace).
    - `gpu_others_sm_pct`: the share of the interval since `others` last read in which other
      processes' kernels ran (OthersCompute.read); None without `others`, where the query is
      not supported, or where `gpu_other_procs` is None (in another pid namespace our own
      kernels would count as theirs).
    """
    pids = {pid} if isinstance(pid, int) else set(pid)
    err = nvml_error(nvml)
    util = query(err, lambda: float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu))
    device_used = query(err, lambda: float(nvml.nvmlDeviceGetMemoryInfo(handle).used))
    power = query(err, lambda: nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0)
    procs = _compute_processes(nvml, handle, err)
    proc_mem = _process_memory(procs, pids)
    other_procs = _other_processes(procs, pids)
    others_pct = others.read(pids) if others is not None else None  # read each time: it keeps its place
    mem: float | None
    is_process: float | None
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
        "gpu_other_procs": other_procs,
        "gpu_others_sm_pct": others_pct if other_procs is not None else None,
    }


def _compute_processes(nvml: Any, handle: Any, err: type[BaseException]) -> list[Any] | None:
    """The device's compute processes (each with `pid`, `usedGpuMemory`), None when unreadable."""
    try:
        return list(nvml.nvmlDeviceGetComputeRunningProcesses(handle))
    except (err, AttributeError):
        return None


def _other_processes(procs: list[Any] | None, pids: set[int]) -> float | None:
    """Processes on the device that are not `pids`; None when ours cannot be told apart."""
    if procs is None:
        return None
    listed = {getattr(p, "pid", None) for p in procs}
    if listed and not listed & pids:
        return None  # pid namespace mismatch: every process looks like another's
    return float(len(listed - pids))


def _process_memory(procs: list[Any] | None, pids: set[int]) -> float | None:
    """Bytes used by `pids` on the device, or None when per-process info is unavailable."""
    if procs is None:
        return None
    if not procs:
        return 0.0
    ours = [p for p in procs if getattr(p, "pid", None) in pids]
    if not ours:
        return None  # pid namespace mismatch (container): our pid is invisible to NVML
    used: list[int] = []
    for p in ours:
        u = getattr(p, "usedGpuMemory", None)
        if u is None:
            return None
        used.append(u)
    return float(sum(used))


class OthersCompute:
    """Other processes' compute on one GPU, from NVML's per-process utilisation
    (nvmlDeviceGetProcessUtilization): the driver keeps a buffer of samples, one per process
    that ran kernels in a sample period (1/6 s to 1 s), each with the share of that period its
    kernels ran on the SMs and a CPU timestamp in microseconds. `read` takes the samples newer
    than the last read's, so a reading covers the interval since the previous one; the first
    read (at construction) only moves past what ran before the trial."""

    def __init__(self, nvml: Any, handle: Any) -> None:
        self._nvml, self._handle = nvml, handle
        self._seen_us = 0
        self.read(set())

    def read(self, pids: Collection[int]) -> float | None:
        """Percent of the interval in which processes other than `pids` ran kernels: each other
        process's highest sample, summed (at most 100); 0.0 where no process ran any; None
        where the query is not supported."""
        err = nvml_error(self._nvml)
        not_found = getattr(self._nvml, "NVML_ERROR_NOT_FOUND", None)
        highest: dict[int, float] = {}
        # Never raises for the device's answer: the sampler gives up every GPU reading on an
        # unexpected error, and memory and power matter more than this one.
        try:
            for sample in self._nvml.nvmlDeviceGetProcessUtilization(self._handle, self._seen_us):
                self._seen_us = max(self._seen_us, int(sample.timeStamp))
                if sample.pid not in pids:
                    highest[sample.pid] = max(highest.get(sample.pid, 0.0), float(sample.smUtil))
        except err as exc:  # NOT_FOUND: no sample since the last read: no process ran a kernel
            return 0.0 if not_found is not None and getattr(exc, "value", None) == not_found else None
        except (AttributeError, TypeError, ValueError):  # an older pynvml, an odd shape
            return None
        return min(100.0, sum(highest.values()))
