"""AMD GPU discovery through `amdsmi` (optional; ships with ROCm, not on PyPI by default).

`import amdsmi` raises KeyError, OSError or others (not only ImportError) when the ROCm
libraries are missing, so every access is guarded with a broad except: no AMD GPU
information is the answer, never an error.
"""

from __future__ import annotations

from typing import Any

MB = 1024 * 1024


def load_amdsmi(amdsmi: Any = None) -> Any | None:
    """An initialised amdsmi module, or None when it cannot be imported or initialised."""
    if amdsmi is None:
        try:
            import amdsmi  # type: ignore[no-redef]  # rebinds the `amdsmi` parameter on purpose
        except Exception:  # KeyError when ROCm is missing, not ImportError
            return None
    try:
        amdsmi.amdsmi_init()
    except Exception:
        return None
    return amdsmi


def list_amd_gpus(amdsmi: Any = None) -> list[dict[str, Any]]:
    """AMD GPUs in amdsmi order: index, name, memory_bytes, driver; [] when unavailable."""
    smi = load_amdsmi(amdsmi)
    if smi is None:
        return []
    try:
        handles = list(smi.amdsmi_get_processor_handles())
    except Exception:
        return []
    gpus = [_gpu(smi, index, handle) for index, handle in enumerate(handles)]
    try:
        smi.amdsmi_shut_down()
    except Exception:
        pass  # shutting down is a courtesy; a failure changes nothing we report
    return gpus


def _gpu(smi: Any, index: int, handle: Any) -> dict[str, Any]:
    return {
        "index": index,
        "name": _safe(lambda: smi.amdsmi_get_gpu_asic_info(handle)["market_name"]),
        "memory_bytes": _memory_bytes(smi, handle),
        "driver": _safe(lambda: smi.amdsmi_get_gpu_driver_info(handle)["driver_version"]),
    }


def _memory_bytes(smi: Any, handle: Any) -> int | None:
    total = _safe(lambda: int(smi.amdsmi_get_gpu_memory_total(handle, smi.AmdSmiMemoryType.VRAM)))
    if total:
        return total
    info = _safe(lambda: smi.amdsmi_get_gpu_vram_info(handle)) or {}
    size_mb = info.get("vram_size") or info.get("vram_total")  # MB; key renamed in ROCm 6
    return int(size_mb) * MB if isinstance(size_mb, (int, float)) and size_mb else None


def gpu_handle(smi: Any, index: int) -> Any | None:
    """The amdsmi handle of the `index`-th AMD GPU (ROCm builds of torch call it cuda:index,
    in the same order), or None."""
    try:
        handles = list(smi.amdsmi_get_processor_handles())
    except Exception:
        return None
    return handles[index] if 0 <= index < len(handles) else None


def energy_uj(smi: Any, handle: Any) -> float:
    """The GPU's cumulative energy counter in microjoules: the accumulator times its resolution
    (amdsmi_get_energy_count; the accumulator's key is `power` before ROCm 6.1 and
    `energy_accumulator` after). Raises whatever amdsmi raises when the query is not supported
    (e.g. in a virtual machine guest, which amdsmi documents as unsupported)."""
    reading = smi.amdsmi_get_energy_count(handle)
    ticks = reading.get("energy_accumulator", reading.get("power"))
    return float(ticks) * float(reading["counter_resolution"])


def _safe(fn: Any) -> Any:
    try:
        return fn()
    except Exception:
        return None
