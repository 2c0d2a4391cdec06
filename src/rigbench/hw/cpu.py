"""The host CPU: model name and instruction-set flags (py-cpuinfo, cached; the OS as a
fallback), the cores this process may use, the maximum clock."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import socket
import tempfile
from pathlib import Path
from typing import Any

import psutil

from rigbench.paths import cache_dir

#: Reported flag -> spellings that mean it (/proc/cpuinfo and py-cpuinfo differ).
KEY_FLAGS: dict[str, tuple[str, ...]] = {
    "avx2": ("avx2",),
    "fma": ("fma", "fma3"),
    "avx512f": ("avx512f",),
    "avx512_bf16": ("avx512_bf16", "avx512bf16"),
    "amx": ("amx_tile", "amx_bf16", "amx_int8", "amx-tile", "amxtile"),
    "asimd": ("asimd", "neon"),
    "arm_bf16": ("bf16",),  # Arm's BFloat16 extension (/proc/cpuinfo on aarch64)
    "sve": ("sve",),
}

#: The cache file (under `cache_dir()`) of py-cpuinfo's answers.
CPU_CACHE_FILE = "cpu.json"


def cpu_identity() -> dict[str, Any]:
    """{"model": str | None, "flags": list[str]}, from the cache, py-cpuinfo, or the OS.

    A py-cpuinfo answer is cached under `cache_dir()`, keyed by hostname and architecture
    (a shared home directory may serve several machines). OS fallbacks are not cached, so
    a transient py-cpuinfo failure does not stick.
    """
    key = f"{socket.gethostname()}|{platform.machine()}"
    path = cache_dir() / CPU_CACHE_FILE
    cache = _read_json(path)
    entry = cache.get(key)
    if isinstance(entry, dict) and entry.get("model"):
        return {"model": entry["model"], "flags": list(entry.get("flags") or [])}
    found = _cpuinfo_identity()
    if found is None:
        return _os_cpu_identity()
    cache[key] = found
    _write_json(path, cache)
    return found


def cpu_name() -> str:
    """The CPU's model name as every framework adapter reports it for a CPU trial (it is matched
    against spec sheets, so there is one source): cpu_identity's model, else "CPU"."""
    return cpu_identity().get("model") or "CPU"


def _cpuinfo_identity() -> dict[str, Any] | None:
    try:
        import cpuinfo

        info = cpuinfo.get_cpu_info()
    except Exception:  # py-cpuinfo fails on unusual platforms and in some sandboxes
        return None
    model = info.get("brand_raw")
    if not model:
        return None
    return {"model": str(model), "flags": sorted(str(f) for f in info.get("flags") or [])}


def _os_cpu_identity() -> dict[str, Any]:
    """Model name and flags from /proc/cpuinfo (Linux), else platform.processor()."""
    fields: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            name, sep, value = line.partition(":")
            if sep:
                fields.setdefault(name.strip().lower(), value.strip())
    model = fields.get("model name") or fields.get("hardware") or platform.processor() or None
    flags = (fields.get("flags") or fields.get("features") or "").split()
    return {"model": model, "flags": sorted(flags)}


def key_flags(flags: list[str]) -> dict[str, bool | None]:
    """Presence of the instruction sets that matter for training speed (None if unknown)."""
    present = {f.lower() for f in flags}
    return {name: (any(s in present for s in spellings) if present else None)
            for name, spellings in KEY_FLAGS.items()}


#: The flags that mean native bfloat16 arithmetic (x86: AVX512-BF16 or AMX; Arm: BF16).
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx", "arm_bf16")


def native_bf16(flags: list[str]) -> bool | None:
    """Whether the CPU does bfloat16 arithmetic natively (None: its flags are unknown). Without
    it, bf16 autocast is emulated: mlp on the AVX2-only dev VM ran at 8.5 samples/s in bf16
    against 940 in fp32."""
    found = key_flags(flags)
    if all(found[name] is None for name in NATIVE_BF16_FLAGS):
        return None
    return any(found[name] for name in NATIVE_BF16_FLAGS)


def flags_hash(flags: list[str]) -> str | None:
    """Short digest of the full flag list: tells apart CPUs with the same model name."""
    if not flags:
        return None
    joined = " ".join(sorted(f.lower() for f in flags))
    return hashlib.sha256(joined.encode()).hexdigest()[:16]


def usable_cores() -> int | None:
    """Cores this process may run on (affinity / cpuset), which containers often cut."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no sched_getaffinity on macOS / Windows
        return psutil.cpu_count(logical=True)


def max_mhz() -> float | None:
    try:
        freq = psutil.cpu_freq()
    except Exception:  # raises on some VMs and platforms instead of returning None
        return None
    return float(freq.max) if freq is not None and freq.max else None


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_json(path: Path, data: dict[str, Any]) -> None:
    """Atomic write (temp file + rename); a cache that cannot be written is skipped."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".cpu-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
