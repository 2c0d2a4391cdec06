"""Which devices a request means: this machine's devices, normalised ids, checked choices."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

from rigbench.devices import host_devices
from rigbench.errors import UsageError
from rigbench.frameworks import check_framework, installed_frameworks
from rigbench.runner.probe import child_groups, probe, probe_group


def devices_info(on_probing: Callable[[list[str]], None] | None = None,
                 on_probed: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Devices of this machine: what the hardware shows (CPU, NVML/amdsmi GPUs) merged with
    what each installed framework can use, by device id. `on_probing` gets the frameworks
    about to be asked, `on_probed` each one's name as its answer arrives (progress)."""
    merged: dict[str, dict[str, Any]] = {}
    for dev in host_devices():
        merged[dev["id"]] = {**dev, "frameworks": []}
    names = installed_frameworks()
    if on_probing:
        on_probing(names)
    # Each child process starts its frameworks (seconds each, TensorFlow's most): started
    # together, the listing takes about as long as the slowest.
    groups = child_groups(names)
    with ThreadPoolExecutor(max_workers=max(1, len(groups))) as pool:
        futures = {pool.submit(probe_group, group): group for group in groups}
        for done in as_completed(futures):
            done.result()
            if on_probed:
                for name in futures[done]:
                    on_probed(name)
    for name in names:
        answer = probe(name)  # this process's answer now; UsageError for a framework that failed
        for dev in answer["devices"]:
            entry = merged.setdefault(dev["id"], {**dev, "frameworks": []})
            for key in ("kind", "name", "memory_bytes"):
                if entry.get(key) in (None, "") and dev.get(key) is not None:
                    entry[key] = dev[key]
            entry["frameworks"].append(name)
    return list(merged.values())


def framework_devices(framework: str) -> list[str]:
    """Device ids the framework can use here."""
    check_framework(framework)
    return [d["id"] for d in probe(framework)["devices"]]


def normalise_device(device: str) -> str:
    """A device id as the frameworks list it: lower case, `cuda` -> `cuda:0` (also xpu, dml)."""
    device = device.strip().lower()
    return f"{device}:0" if device in ("cuda", "xpu", "dml") else device


def chosen_devices(framework: str, devices: Sequence[str], default: list[str] | None) -> list[str]:
    """The requested devices, normalised and checked against what the framework can use;
    none requested gives `default` (None: every available device). The CPU alone is taken
    without asking the framework: every adapter trains on it (base.FrameworkAdapter), and
    asking starts the framework in a child process (2-3 s for torch, more for TensorFlow).
    An unknown or missing framework is refused first, the CPU's shortcut included."""
    check_framework(framework)
    chosen = [normalise_device(d) for d in devices] or default or []
    if chosen and all(device == "cpu" for device in chosen):
        return chosen
    available = framework_devices(framework)
    chosen = chosen or available
    for device in chosen:
        if device not in available:
            raise UsageError(f"device {device!r} is not available to {framework} here: "
                             f"choose from {', '.join(available)}")
    return chosen
