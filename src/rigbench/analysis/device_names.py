"""How tables and charts name the device that measured each trial, among the results in scope.

A device is named by its model (`device_name`, e.g. "NVIDIA H200"; its id where none was
recorded). Where that leaves two devices of the results in scope one name, the name says more:
the id where one machine has two of the model (`cuda:0`, `cuda:1`), the machine where two
machines have it (two lent VMs' CPUs are both "Intel(R) Xeon(R) Processor": "... (host with
NVIDIA H100 80GB HBM3)"). So a name stays as short as before wherever it was unambiguous.
Which devices are one is `trials.device_key`'s rule; this module only names them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from rigbench.analysis.trials import Machines, device_key
from rigbench.fingerprint import instruction_sets
from rigbench.spec import Result


def id_labels(pairs: Iterable[tuple[str, str | None]]) -> Callable[[str, str | None], str]:
    """(device id, name) of each device in scope -> `label(id, name)`: the id, with the name after
    it where the id names two devices in scope (an H100's and an H200's are both `cuda:0`:
    "cuda:0 (NVIDIA H200)"). A table of one machine's devices reads as ids alone."""
    names: dict[str, set[str]] = defaultdict(set)
    for device, name in pairs:
        if name:
            names[device].add(name)

    def label(device: str, name: str | None) -> str:
        return f"{device} ({name})" if name and len(names[device]) > 1 else device

    return label


def _model(r: Result) -> str:
    return r.device_name or r.spec.device


def _machine_parts(machine: Mapping[str, Any] | None) -> dict[str, str]:
    """What a machine_key is made of, as text: host name, CPU model, instruction sets, GPUs."""
    m = machine or {}
    gpus = sorted(str(g.get("name")) for g in m.get("gpus") or [] if isinstance(g, Mapping))
    return {"host": str(m.get("hostname") or "not recorded"), "cpu": str(m.get("cpu_model") or "unknown CPU"),
            "sets": instruction_sets(m) or "", "gpus": ", ".join(gpus) or "no GPU"}


def machine_texts(machines: Mapping[tuple, Mapping[str, Any] | None]) -> dict[tuple, str]:
    """machine key -> what tells it apart from the others given: "host NAME" where the host
    names differ, then "with" the CPU model, instruction sets or GPUs that differ ("host with
    NVIDIA H200" for two lent VMs alike but for their GPUs)."""
    parts = {key: _machine_parts(machine) for key, machine in machines.items()}
    differ = [p for p in ("host", "cpu", "sets", "gpus") if len({part[p] for part in parts.values()}) > 1]
    out = {}
    for key, part in parts.items():
        host = f"host {part['host']}" if "host" in differ else "host"
        rest = "; ".join(part[p] for p in differ if p != "host")
        out[key] = f"{host} with {rest}" if rest else host
    return out


class DeviceNames:
    """Names the device of each of `results` (`names(r)`), told apart as the module docstring
    says; `machines` (run id -> fingerprint) where the results' machines are known."""

    def __init__(self, results: Iterable[Result], machines: Machines | None = None):
        self._machines = machines
        ids: dict[str, set[str]] = defaultdict(set)
        hosts: dict[str, dict[tuple, Mapping[str, Any] | None]] = defaultdict(dict)
        for r in results:
            device, _, machine = device_key(r, machines)
            ids[_model(r)].add(device)
            if machine is not None and machines is not None:
                hosts[_model(r)][machine] = machines.get(r.run_id)
        self._two_ids = {model for model, seen in ids.items() if len(seen) > 1}
        self._hosts = {model: machine_texts(seen) for model, seen in hosts.items() if len(seen) > 1}

    def machine(self, r: Result) -> str | None:
        """The machine text of `r`'s device where another machine in scope has a device of that
        name, else None."""
        texts = self._hosts.get(_model(r))
        return texts.get(device_key(r, self._machines)[2]) if texts else None

    def __call__(self, r: Result) -> str:
        model = _model(r)
        extra = [r.spec.device] if model in self._two_ids and r.device_name else []
        machine = self.machine(r)
        if machine:
            extra.append(machine)
        return f"{model} ({', '.join(extra)})" if extra else model
