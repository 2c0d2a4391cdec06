"""What machine and software a result came from: `machine_fingerprint()`.

The hardware comes from hw/ (the CPU's model and flags are cached there, py-cpuinfo being
slow); package versions are read from installed metadata; no framework is ever imported here.
"""

from __future__ import annotations

import platform
import socket
from collections.abc import Mapping
from importlib import metadata
from typing import Any

import psutil

from rigbench.hw.amd import list_amd_gpus
from rigbench.hw.cpu import KEY_FLAGS, cpu_identity, flags_hash, key_flags, max_mhz, usable_cores
from rigbench.hw.nvml import list_gpus, load_nvml

#: The keys of machine_fingerprint()'s result.
FINGERPRINT_KEYS: tuple[str, ...] = (
    "hostname", "os", "kernel", "python_version", "python_implementation",
    "cpu_model", "cpu_arch", "cpu_flags", "cpu_flags_hash",
    "cpu_cores_physical", "cpu_cores_logical", "cpu_cores_usable", "cpu_max_mhz",
    "ram_bytes", "gpus", "packages",
)

#: package key -> distribution names tried in order (the first installed one wins).
PACKAGES: dict[str, tuple[str, ...]] = {
    "rigbench": ("rigbench",),
    "numpy": ("numpy",),
    "torch": ("torch",),
    "tensorflow": ("tensorflow", "tensorflow-cpu", "tensorflow-macos", "tf-nightly"),
    "jax": ("jax",),
    "jaxlib": ("jaxlib",),
    "flax": ("flax",),
    "nvidia-ml-py": ("nvidia-ml-py",),
}

def machine_fingerprint() -> dict[str, Any]:
    """Hardware, OS and package versions of this machine (keys: FINGERPRINT_KEYS).

    Values that cannot be read are None (cpu_flags values too, when no flags are known).
    `gpus` lists NVIDIA GPUs (NVML) then AMD GPUs (amdsmi), each with a `vendor` key.
    """
    cpu = cpu_identity()
    flags = cpu["flags"]
    return {
        "hostname": socket.gethostname(),
        "os": platform.platform(),
        "kernel": platform.release(),
        "python_version": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "cpu_model": cpu["model"],
        "cpu_arch": platform.machine(),
        "cpu_flags": key_flags(flags),
        "cpu_flags_hash": flags_hash(flags),
        "cpu_cores_physical": psutil.cpu_count(logical=False),
        "cpu_cores_logical": psutil.cpu_count(logical=True),
        "cpu_cores_usable": usable_cores(),
        "cpu_max_mhz": max_mhz(),
        "ram_bytes": psutil.virtual_memory().total,
        "gpus": gpus(),
        "packages": package_versions(),
    }


def machine_key(machine: Mapping[str, Any] | None) -> tuple[Any, ...]:
    """What makes two fingerprints the same computer for "this machine" and "same machine"
    questions: host name, CPU model, the CPU's key instruction sets and the GPUs' names. The sets
    matter because a cloud VM keeps its host name and a masked model name ("AMD EPYC") across CPU
    generations: the dev VM ran on an AVX2-only EPYC on 2026-11-23 and on an AVX-512 one on
    2026-11-26, where mlp trained 3x as fast. Full flag lists (`cpu_flags_hash`) change with the
    kernel; these do not. The GPUs matter because lent GPU VMs share all of that with the dev VM
    (host "vm", "Intel(R) Xeon(R) Processor", the same sets): an imported H200 bundle counted as
    this machine's results."""
    m = machine or {}
    # the sets the CPU has, not those it lacks: a fingerprint from before a key flag was added to
    # KEY_FLAGS (arm_bf16, 2026-11-25) does not list it, and that must not make its machine another
    has = tuple(name for name, value in _key_flags_of(m).items() if value is True)
    return (m.get("hostname"), m.get("cpu_model"), has, _gpu_names(m))


def _gpu_names(machine: Mapping[str, Any]) -> tuple[str, ...]:
    """The names of a fingerprint's GPUs, sorted; () for none or an unreadable list."""
    listed = machine.get("gpus")
    if not isinstance(listed, list):
        return ()
    return tuple(sorted(str(g.get("name")) for g in listed if isinstance(g, Mapping)))


def instruction_sets(machine: Mapping[str, Any] | None) -> str | None:
    """The key instruction sets a fingerprint's CPU has, e.g. "avx2, fma, avx512f" (what tells
    apart two CPUs that share a masked model name); None when its flags were not read."""
    flags = _key_flags_of(machine or {})
    if not any(value is not None for value in flags.values()):
        return None
    return ", ".join(name for name, value in flags.items() if value) or "none of " + ", ".join(flags)


def _key_flags_of(machine: Mapping[str, Any]) -> dict[str, bool | None]:
    """A stored fingerprint's `cpu_flags`, kept to the known key flags (KEY_FLAGS' order) with
    true/false/unknown values: a fingerprint comes from any bundle, and one odd value must not
    break a command over the whole database."""
    flags = machine.get("cpu_flags")
    if not isinstance(flags, Mapping):
        return {}
    return {name: flags[name] for name in KEY_FLAGS if name in flags and flags[name] in (True, False, None)}


def this_machine_identity() -> dict[str, Any]:
    """The fingerprint fields machine_key reads, of this machine, without the slow parts of a
    full fingerprint (packages, RAM, clocks): the GPUs' list costs one NVML call."""
    cpu = cpu_identity()
    return {"hostname": socket.gethostname(), "cpu_model": cpu["model"], "cpu_flags": key_flags(cpu["flags"]),
            "gpus": [{"name": g.get("name")} for g in gpus()]}


def this_machine_key() -> tuple[Any, ...]:
    """machine_key of this machine."""
    return machine_key(this_machine_identity())


def gpus() -> list[dict[str, Any]]:
    """NVIDIA (NVML) and AMD (amdsmi) GPUs with a `vendor` key; [] when neither works."""
    nvidia = [{"vendor": "nvidia", **g} for g in list_gpus(load_nvml())]
    amd = [{"vendor": "amd", **g} for g in list_amd_gpus()]
    return nvidia + amd


def package_versions() -> dict[str, str | None]:
    """Installed versions from package metadata (never imports them); None when absent."""
    return {key: _version(names) for key, names in PACKAGES.items()}


def _version(names: tuple[str, ...]) -> str | None:
    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None
